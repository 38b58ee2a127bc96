"""What the rewrite rules share beyond pattern matching (codegen/core/pattern.py): running an
operator's own checks on a rewritten node, and putting it in place of a matched
subgraph."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from codegen import ops
from codegen.core.ir import Graph, Node
from codegen.errors import Onnx2McuError


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
