"""Pattern matching on the IR, shared by the rewrite rules and by each operator's QDQ
fusion rule: who produces and who reads a tensor, and the quantization a
DequantizeLinear applies or a QuantizeLinear takes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .ir import DTYPES, Graph, Node, Tensor


@dataclass(frozen=True)
class Index:
    """Producer and readers of every tensor of a graph."""

    producer: dict[str, Node]
    readers: dict[str, list[Node]]
    outputs: frozenset[str]

    @staticmethod
    def of(graph: Graph) -> Index:
        producer: dict[str, Node] = {}
        readers: dict[str, list[Node]] = {}
        for node in graph.nodes:
            for name in node.outputs:
                producer[name] = node
            for name in node.inputs:
                if name:
                    readers.setdefault(name, []).append(node)
        return Index(producer, readers, frozenset(graph.outputs))

    def only_reader(self, tensor: str) -> Node | None:
        """The single node reading `tensor`, when it is not also a graph output."""
        readers = self.readers.get(tensor, [])
        if len(readers) != 1 or tensor in self.outputs:
            return None
        return readers[0]


@dataclass(frozen=True)
class Quantized:
    """A tensor written as DequantizeLinear(q, scale, zero_point) (or read by a
    QuantizeLinear): the integer tensor and the names of its constant parameters."""

    node: Node
    q: str  # the integer tensor: DQ's input, or Q's output
    scale: str
    zero_point: str | None  # None: omitted (0)

    def values(self, graph: Graph) -> tuple[NDArray[Any], NDArray[Any] | None]:
        zp = graph.constants[self.zero_point] if self.zero_point else None
        return graph.constants[self.scale], zp


def _params(node: Node, graph: Graph) -> tuple[str, str | None] | None:
    scale, zp = node.input(1), node.input(2)
    if scale is None or scale not in graph.constants or (zp and zp not in graph.constants):
        return None
    return scale, zp


def dequantized(tensor: str, graph: Graph, index: Index) -> Quantized | None:
    """The DequantizeLinear producing `tensor`, if it has constant parameters."""
    node = index.producer.get(tensor)
    if node is None or node.op_type != "DequantizeLinear" or node.domain:
        return None
    params = _params(node, graph)
    if params is None:
        return None
    return Quantized(node, node.inputs[0], params[0], params[1])


def quantized_by(tensor: str, graph: Graph, index: Index) -> Quantized | None:
    """The QuantizeLinear that alone reads `tensor`, if it has constant parameters."""
    node = index.only_reader(tensor)
    if node is None or node.op_type != "QuantizeLinear" or node.domain:
        return None
    params = _params(node, graph)
    if params is None:
        return None
    return Quantized(node, node.outputs[0], params[0], params[1])


def per_tensor(q: Quantized, graph: Graph) -> bool:
    return graph.constants[q.scale].size == 1


def same_quantization(a: Quantized, b: Quantized, graph: Graph) -> bool:
    """Identical scale and zero point values (dtype included)."""
    sa, za = a.values(graph)
    sb, zb = b.values(graph)
    if sa.shape != sb.shape or not np.array_equal(sa.view(np.uint32), sb.view(np.uint32)):
        return False
    if za is None or zb is None:
        return (za is None or not np.any(za)) and (zb is None or not np.any(zb)) and (
            za is None or zb is None or za.dtype == zb.dtype)
    return za.dtype == zb.dtype and np.array_equal(za, zb)


def zero_point_name(q: Quantized, graph: Graph, dtype: str) -> str:
    """The zero point tensor of q, creating a zero constant when it was omitted."""
    if q.zero_point:
        return q.zero_point
    name = fresh_name(graph, f"{q.scale}_zero_point")
    graph.constants[name] = np.zeros((), dtype=dtype)
    return name


def fresh_name(graph: Graph, base: str) -> str:
    taken = set(graph.tensors) | set(graph.constants) | {o for n in graph.nodes
                                                        for o in n.outputs}
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    return name


def is_op(node: Node, op_type: str, domain: str = "") -> bool:
    """The node is `op_type` of `domain`: what a rewrite matches on. (What an operator
    is and does, its checks, kernels and rules, is its OpDef's, in codegen/ops.)"""
    return node.op_type == op_type and node.domain == domain


def float_node(node: Node, op_type: str) -> bool:
    return is_op(node, op_type)


def is_quantize(node: Node) -> bool:
    """A QuantizeLinear of the standard domain."""
    return float_node(node, "QuantizeLinear")


def is_dequantize(node: Node) -> bool:
    """A DequantizeLinear of the standard domain."""
    return float_node(node, "DequantizeLinear")

def qparams(q: Quantized, graph: Graph) -> list[str]:
    """The scale and zero point names of q, as an integer operator's inputs (an omitted
    zero point becomes a zero constant)."""
    return [q.scale, zero_point_name(q, graph, graph.tensors[q.q].dtype)]


def scalar_params(q: Quantized, graph: Graph) -> tuple[float, int] | None:
    """q's scale and zero point when both are scalars."""
    scale, zp = q.values(graph)
    if scale.size != 1 or (zp is not None and zp.size != 1):
        return None
    return float(scale.reshape(-1)[0]), int(zp.reshape(-1)[0]) if zp is not None else 0


def new_constant(graph: Graph, base: str, value: NDArray[Any]) -> str:
    """A new constant, with its tensor (as the importer gives every initializer)."""
    name = fresh_name(graph, base)
    graph.constants[name] = value
    if str(value.dtype) in DTYPES:
        graph.tensors[name] = Tensor(name, str(value.dtype), tuple(int(d) for d in value.shape))
    return name


def dtype_of(graph: Graph, q: Quantized) -> str:
    """The integer type of q."""
    return graph.tensors[q.q].dtype


def scale_axis(q: Quantized, graph: Graph) -> int | None:
    """The normalized axis of a per-axis DequantizeLinear (None when per tensor)."""
    if graph.constants[q.scale].size == 1:
        return None
    rank = len(graph.tensors[q.q].shape)
    return int(q.node.attrs.get("axis", 1)) % rank


def computes_in_float(node: Node, graph: Graph) -> bool:
    """Does `node` compute in float32 inside the network? Every node reading or writing a
    float32 tensor that is not a constant, except the QuantizeLinear and DequantizeLinear
    at the float side of a quantized value (they convert, they do not compute). The one
    count of float work that inspect, verify and the float-model note give."""
    if is_quantize(node) or is_dequantize(node):
        return False
    return any(t and t in graph.tensors and t not in graph.constants
               and graph.tensors[t].dtype == "float32" for t in (*node.inputs, *node.outputs))


def float_nodes(graph: Graph) -> list[Node]:
    """The nodes that compute in float32 (computes_in_float), in graph order."""
    return [node for node in graph.nodes if computes_in_float(node, graph)]
