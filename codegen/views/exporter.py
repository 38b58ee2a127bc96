"""IR -> ONNX: the graph after the recipes, as a standard QOperator model (QLinearConv,
QLinearMatMul and ONNX Runtime's com.microsoft QLinear* operators) that ORT runs with the
same results as the generated C. This is `onnx2mcu convert`, and the reference `verify
--integer-only` compares against.

ORT implements its integer products (QLinearConv, QLinearMatMul, QGemm) with the output
in the activation's type, and with int8 weights, or uint8 ones for uint8 activations.
The generated C also computes the others: a product whose output type differs from its
input's (--integer-only fuses those) and int8 activations times uint8 weights (ARM rules
fuse those). The exported model writes them in the types ORT implements, with the same
integer arithmetic:

- q and q + 128 with the zero point + 128 are the same real value, and the requantized
  output clamps relative to its zero point (MLAS clamps round(acc * scale) at
  [qmin - zp, qmax - zp] before adding zp), so a product whose output is int8 but
  computed as uint8 with zero point + 128 gives exactly the int8 result + 128, and the
  other way round;
- the type then changes back with DequantizeLinear -> QuantizeLinear of scale 1 and
  zero points z' and z: q' - z' is an integer of magnitude at most 255, so both steps are
  exact in float32 and nothing saturates;
- uint8 weights of an int8 product become int8 constants w - 128 with zero point - 128:
  w - zp does not change.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from codegen import ops
from codegen.core.ir import DTYPES, Graph, Node
from codegen.ops import Writer, export_as_is

# ONNX Runtime 1.32 reads models up to IR version 11.
IR_VERSION = 10
MS = "com.microsoft"
QDQ_RULES_PROPERTY = "onnx2mcu.qdq_rules"


def export_node(node: Node, w: Writer) -> None:
    """The node as ONNX that ORT runs: as its family's OpDef writes it."""
    opdef = ops.lookup(node)
    (opdef.export if opdef is not None and opdef.export is not None else export_as_is)(node, w)


def _value_info(graph: Graph, name: str) -> onnx.ValueInfoProto:
    tensor = graph.tensors[name]
    return helper.make_tensor_value_info(name, DTYPES[tensor.dtype][2], list(tensor.shape))


def export_graph(graph: Graph, doc: str = "") -> onnx.ModelProto:
    writer = Writer(graph)
    for node in graph.nodes:
        export_node(node, writer)
    used = {name for node in writer.nodes for name in node.input if name}
    used |= set(graph.outputs)
    initializers = [numpy_helper.from_array(np.asarray(graph.constants[name]), name)
                    for name in sorted(used & set(graph.constants))]
    initializers += [numpy_helper.from_array(np.asarray(value), name)
                     for name, value in sorted(writer.constants.items()) if name in used]
    proto = helper.make_graph(
        writer.nodes, graph.name,
        [_value_info(graph, name) for name in graph.inputs],
        [_value_info(graph, name) for name in graph.outputs], initializers, doc_string=doc)
    # The domains of the nodes written (an export may write com.microsoft operators the
    # graph does not hold: 16-bit QuantizeLinear below opset 21).
    domains = {n.domain for n in writer.nodes}
    versions = {MS: 1, **graph.opsets}
    opsets = [helper.make_opsetid(domain, version) for domain, version in
              sorted(versions.items()) if domain == "" or domain in domains]
    model = helper.make_model(proto, opset_imports=opsets, producer_name="onnx2mcu")
    model.ir_version = IR_VERSION
    if writer.int64_units:
        helper.set_model_props(model, {ops.INT64_UNITS_PROPERTY: ",".join(writer.int64_units)})
    return model


def converted_model(graph: Graph, qdq_rules: str) -> onnx.ModelProto:
    """What `convert` writes: the graph after the recipes as a QOperator model, marked
    with the platform whose int8 QDQ rules it follows (ORT must run it with the same)."""
    model = export_graph(graph)
    properties = {p.key: p.value for p in model.metadata_props}
    helper.set_model_props(model, {**properties, QDQ_RULES_PROPERTY: qdq_rules})
    return model
