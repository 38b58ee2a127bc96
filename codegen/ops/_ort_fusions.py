"""ORT's float graph fusions that onnx2mcu does not reproduce yet, recognized so that
the float islands they would change are refused rather than computed otherwise:
LayerNormFusion and SimplifiedLayerNormFusion (a decomposed LayerNorm with its scale, as
TorchScript writes nn.LayerNorm below opset 17 and as hand-written models do, becomes
LayerNormalization or SimplifiedLayerNormalization) and GeluFusion (x / sqrt 2 -> Erf ->
+ 1 -> * x -> * 0.5 becomes com.microsoft Gelu). They only match where the chain is all
float: in QDQ models the Q/DQ pairs between its operators prevent them."""

from __future__ import annotations

from codegen.core.ir import Graph, Node

from ._float import producer


def _readers(graph: Graph, tensor: str) -> list[Node]:
    return [n for n in graph.nodes if tensor in n.inputs]


def _only_reader(graph: Graph, tensor: str, op_type: str) -> Node | None:
    readers = _readers(graph, tensor)
    if len(readers) != 1 or tensor in graph.outputs or readers[0].domain or \
            readers[0].op_type != op_type:
        return None
    return readers[0]


def _reader(graph: Graph, tensor: str, op_type: str) -> Node | None:
    return next((n for n in _readers(graph, tensor)
                 if n.op_type == op_type and not n.domain), None)


def norm_fusion_at(node: Node, graph: Graph) -> bool:
    """node is the Pow of d -> Pow(2) -> ReduceMean -> Add(eps) -> Sqrt -> Div(d, .) ->
    Mul(constant scale), all float: ORT's LayerNormFusion (d = x - mean(x)) or
    SimplifiedLayerNormFusion take it (measured: without the Mul, neither does)."""
    if node.op_type != "Pow" or node.domain:
        return False
    d = node.inputs[0]
    chain = node.outputs[0]
    for op_type in ("ReduceMean", "Add", "Sqrt"):
        step = _only_reader(graph, chain, op_type)
        if step is None:
            return False
        chain = step.outputs[0]
    div = _only_reader(graph, chain, "Div")
    if div is None or div.inputs[0] != d:
        return False
    scale = _only_reader(graph, div.outputs[0], "Mul")
    return scale is not None and any(i in graph.constants for i in scale.inputs)


def gelu_fusion_at(node: Node, graph: Graph) -> bool:
    """node is the Erf of x / c -> Erf -> + 1 -> * x (and * 0.5), all float: ORT's
    GeluFusion."""
    if node.op_type != "Erf" or node.domain:
        return False
    scaled = producer(graph, node.inputs[0])
    if scaled is None or scaled.domain or scaled.op_type not in ("Div", "Mul") or \
            scaled.inputs[1] not in graph.constants:
        return False
    source = producer(graph, scaled.inputs[0])
    if source is not None and source.op_type == "DequantizeLinear" and not source.domain:
        return False  # measured: ORT leaves a GELU of a dequantized tensor alone
    plus_one = _only_reader(graph, node.outputs[0], "Add")
    if plus_one is None:
        return False
    times_x = _only_reader(graph, plus_one.outputs[0], "Mul")
    if times_x is None:
        return False
    x = scaled.inputs[0]
    other = next((i for i in times_x.inputs if i != plus_one.outputs[0]), None)
    if other == x:
        return True  # (x * (erf + 1)) * 0.5
    half = producer(graph, other) if other else None
    return half is not None and not half.domain and half.op_type == "Mul" and \
        x in half.inputs and any(i in graph.constants for i in half.inputs)  # (0.5 x) * ...
