"""IR -> ONNX: the graph after the recipes, as a standard QOperator model (QLinearConv,
QLinearMatMul and ONNX Runtime's com.microsoft QLinear* operators) that ORT runs with the
same results as the generated C. This is `onnx2mcu convert`."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from .ir import DTYPES, Graph, Node

# ONNX Runtime 1.32 reads models up to IR version 11.
IR_VERSION = 10


def _attribute(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return numpy_helper.from_array(value)
    return value


def export_node(node: Node) -> list[onnx.NodeProto]:
    if (node.domain, node.op_type) == ("ai.onnx2mcu", "Requantize"):
        # onnx2mcu's own operator: standard ONNX writes it as the pair ORT computes.
        x, x_scale, x_zp, y_scale, y_zp = node.inputs
        real = f"{node.outputs[0]}__dequantized"
        return [helper.make_node("DequantizeLinear", [x, x_scale, x_zp], [real],
                                 name=f"{node.name}_dequantize"),
                helper.make_node("QuantizeLinear", [real, y_scale, y_zp], list(node.outputs),
                                 name=node.name)]
    attrs = {k: _attribute(v) for k, v in sorted(node.attrs.items())}
    return [helper.make_node(node.op_type, list(node.inputs), list(node.outputs),
                             name=node.name, domain=node.domain or None, **attrs)]


def _value_info(graph: Graph, name: str) -> onnx.ValueInfoProto:
    tensor = graph.tensors[name]
    return helper.make_tensor_value_info(name, DTYPES[tensor.dtype][2], list(tensor.shape))


def export_graph(graph: Graph, doc: str = "") -> onnx.ModelProto:
    used = {name for node in graph.nodes for name in node.inputs if name}
    used |= set(graph.outputs)
    initializers = [numpy_helper.from_array(np.asarray(graph.constants[name]), name)
                    for name in sorted(used & set(graph.constants))]
    proto = helper.make_graph(
        [proto for n in graph.nodes for proto in export_node(n)], graph.name,
        [_value_info(graph, name) for name in graph.inputs],
        [_value_info(graph, name) for name in graph.outputs], initializers, doc_string=doc)
    domains = {n.domain for n in graph.nodes} - {"ai.onnx2mcu"}
    opsets = [helper.make_opsetid(domain, version) for domain, version in
              sorted(graph.opsets.items()) if domain == "" or domain in domains]
    model = helper.make_model(proto, opset_imports=opsets, producer_name="onnx2mcu")
    model.ir_version = IR_VERSION
    return model
