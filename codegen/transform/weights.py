"""ORT's WeightBiasQuantization (onnxruntime/core/optimizer/qdq_transformer/
weight_bias_quantization.cc, a level-1 rule since ORT 1.21): a Conv, ConvTranspose or
Gemm whose input is dequantized per tensor and whose output reaches one QuantizeLinear
(through Relu or Clip, without branching) gets
- float32 weight initializers quantized to int8 per tensor (GetQuantizationParameter:
  the range widened to include 0, scale (max - min) / 255, zero point
  round-half-even(-128 - min / scale) clamped), as QuantizeLinear -> DequantizeLinear,
  which ORT folds into int8 weights;
- a 1-D bias initializer quantized to int32: Round(bias / (x_scale * w_scale)), then
  DequantizeLinear with that scale (per channel when the weights are).
The unit then fuses as any QDQ unit does. This is how ORT runs NNCF's float biases and
the float weights tf2onnx --dequantize leaves inside a QDQ network."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from codegen import ops
from codegen.arith.numerics import quantize_like_mlas
from codegen.core.ir import Graph, Node
from codegen.core.pattern import Index, dequantized, float_node, fresh_name, new_constant

from ._graph import validated
from .qdq import rewrite_all

F32 = np.float32


def no_branch_path_to_quantize(node: Node, index: Index) -> bool:
    current = node
    while True:
        if len(current.outputs) != 1:
            return False
        readers = index.readers.get(current.outputs[0], [])
        if len(readers) != 1 or current.outputs[0] in index.outputs:
            return False
        reader = readers[0]
        if float_node(reader, "QuantizeLinear"):
            return True
        if not (float_node(reader, "Relu") or float_node(reader, "Clip")):
            return False
        current = reader


def weight_quantization(values: NDArray[Any]) -> tuple[np.float32, int]:
    """ORT's GetQuantizationParameter<int8_t> (asymmetric)."""
    low = min(F32(values.min()), F32(0.0))
    high = max(F32(values.max()), F32(0.0))
    scale = F32(1.0) if high == low else F32(F32(high - low) / F32(255.0))
    initial = F32(F32(-128.0) - F32(low / scale))
    zero_point = int(np.rint(min(max(initial, F32(-128.0)), F32(127.0))))
    return scale, zero_point


def _quantize_weights_and_bias(graph: Graph, index: Index, node: Node) -> Graph | None:
    channel_axis = ops.weight_bias_axis(node)
    if node.domain or channel_axis is None or len(node.inputs) < 2:
        return None
    x = dequantized(node.inputs[0], graph, index)
    if x is None or graph.constants[x.scale].size != 1:
        return None
    if not no_branch_path_to_quantize(node, index):
        return None
    weights = node.inputs[1]
    w = dequantized(weights, graph, index)
    float_weights = graph.constants.get(weights)
    if w is None and (float_weights is None or float_weights.dtype != np.float32):
        return None
    bias_name = node.input(2)
    bias = graph.constants.get(bias_name) if bias_name else None
    if bias_name and (bias is None or bias.ndim != 1):
        return None
    if w is not None and bias is None:
        return None  # nothing to quantize
    if bias is not None and bias.dtype != np.float32:
        return None  # an integer initializer: ORT's Div would not take it either
    inputs = list(node.inputs)
    new_nodes: list[Node] = []
    opset = graph.opsets[""]
    if w is None:
        assert float_weights is not None
        w_scale_value, w_zp = weight_quantization(float_weights)
        w_scale = np.array(w_scale_value, F32)
        q = quantize_like_mlas(float_weights, float(w_scale_value), w_zp, "int8")
        q_name = new_constant(graph, f"{node.name}_weight_q", q.reshape(float_weights.shape))
        scale_name = new_constant(graph, f"{node.name}_weight_scale", w_scale)
        zp_name = new_constant(graph, f"{node.name}_weight_zp", np.array(w_zp, np.int8))
        dq_out = fresh_name(graph, f"{node.name}_weight_dq")
        new_nodes.append(Node(f"{node.name}_weight_dq", "DequantizeLinear", "",
                              (q_name, scale_name, zp_name), (dq_out,), {}, opset))
        inputs[1] = dq_out
        per_channel = False
    else:
        w_scale = graph.constants[w.scale].astype(F32).reshape(-1)
        per_channel = w_scale.size != 1
        if per_channel:
            rank = len(graph.tensors[w.q].shape)
            axis = int(w.node.attrs.get("axis", 1)) % rank
            if bias is None or w_scale.size != bias.size or axis != channel_axis or \
                    int(w.node.attrs.get("block_size", 0)):
                return None
    if bias is not None:
        bias_scale = (F32(graph.constants[x.scale].reshape(-1)[0]) *
                      w_scale.reshape(-1)).astype(F32)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = (bias / np.broadcast_to(bias_scale, bias.shape)).astype(F32)
        quantized = np.rint(ratio).astype(np.int32)
        b_name = new_constant(graph, f"{node.name}_bias_int32", quantized)
        b_scale_name = new_constant(graph, f"{node.name}_bias_scale",
                                    bias_scale if per_channel else bias_scale.reshape(()))
        b_out = fresh_name(graph, f"{node.name}_bias_dq")
        new_nodes.append(Node(f"{node.name}_bias_dq", "DequantizeLinear", "",
                              (b_name, b_scale_name), (b_out,),
                              {"axis": 0} if per_channel else {}, opset))
        inputs[2] = b_out
    for dq in new_nodes:
        if not validated(dq, graph):
            return None
    rewritten = Node(node.name, node.op_type, node.domain, tuple(inputs), node.outputs,
                     dict(node.attrs), node.opset)
    if not validated(rewritten, graph):
        return None
    nodes = []
    for existing in graph.nodes:
        if existing is node:
            nodes += [*new_nodes, rewritten]
        else:
            nodes.append(existing)
    graph.nodes = nodes
    return graph


def quantize_weights_and_biases(graph: Graph) -> tuple[Graph, list[str]]:
    """ORT's WeightBiasQuantization: float weights and biases of QDQ units quantized."""
    return rewrite_all(graph, _quantize_weights_and_bias)
