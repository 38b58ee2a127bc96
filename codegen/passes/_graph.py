"""Pattern-matching helpers shared by the rewrite rules: who produces and who reads a
tensor, the quantization a DequantizeLinear applies, and how to put a rewritten node
in place of a matched subgraph."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .. import ops
from ..errors import Onnx2McuError
from ..ir import Graph, Node


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


def validated(node: Node, graph: Graph) -> bool:
    """Run the operator's own checks on a rewritten node; False if it refuses it (the
    match is then left alone). On success the node's outputs are (re)inferred."""
    opdef = ops.lookup(node)
    if opdef is None:
        return False
    try:
        inferred = opdef.infer(node, graph)
    except Onnx2McuError:
        return False
    for tensor in inferred.outputs:
        old = graph.tensors.get(tensor.name)
        if old is not None and (old.dtype, old.shape) != (tensor.dtype, tensor.shape):
            return False
        graph.tensors[tensor.name] = tensor
    for name, quant in inferred.quant.items():
        if graph.tensors[name].quant is None:
            graph.tensors[name].quant = quant
    return True


def replace_nodes(graph: Graph, replaced: Iterable[Node], new: Node) -> Graph:
    """`new` takes the place of the first of `replaced`; the others are dropped."""
    gone = {id(n) for n in replaced}
    nodes: list[Node] = []
    placed = False
    for node in graph.nodes:
        if id(node) in gone:
            if not placed:
                nodes.append(new)
                placed = True
            continue
        nodes.append(node)
    return replace(graph, nodes=nodes)


def float_node(node: Node, op_type: str) -> bool:
    return node.op_type == op_type and node.domain == ""
