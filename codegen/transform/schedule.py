"""Execution order: a topological order of the graph's nodes that keeps the peak of live
activation bytes low.

On a chain there is one order. On branching graphs (residual blocks, Concat of parallel
branches) the order decides which intermediate tensors are alive together. The ONNX file's
order is kept unless a greedy memory-aware order (run next the ready node that adds the
fewest live bytes, ties by file order) has a lower peak.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from codegen.core.ir import Graph, Node


def tensor_bytes(graph: Graph, name: str) -> int:
    """Bytes an activation takes in the arena (inputs, outputs and constants: none)."""
    if (not name or name in graph.constants or name in graph.inputs or name in graph.outputs
            or name not in graph.tensors):
        return 0
    return graph.tensors[name].nbytes


def consumers(graph: Graph) -> dict[str, int]:
    """How many node inputs read each tensor."""
    count: dict[str, int] = {}
    for node in graph.nodes:
        for name in node.inputs:
            if name:
                count[name] = count.get(name, 0) + 1
    return count


def peak_live_bytes(graph: Graph, order: Sequence[Node]) -> int:
    """The most activation bytes alive while one node runs (its inputs and outputs)."""
    remaining = consumers(graph)
    live = 0
    peak = 0
    for node in order:
        live += sum(tensor_bytes(graph, t) for t in node.outputs)
        peak = max(peak, live)
        for name in node.inputs:
            if name:
                remaining[name] -= 1
                if remaining[name] == 0:
                    live -= tensor_bytes(graph, name)
    return peak


def greedy_memory_order(graph: Graph) -> list[Node]:
    """Topological order choosing, among ready nodes, the one with the smallest growth of
    live bytes (outputs written minus inputs freed); ties keep the file order."""
    producer = {out: i for i, node in enumerate(graph.nodes) for out in node.outputs}
    waiting = [sum(1 for t in set(node.inputs) if t in producer) for node in graph.nodes]
    readers: dict[str, list[int]] = {}
    for i, node in enumerate(graph.nodes):
        for t in set(node.inputs):
            if t in producer:
                readers.setdefault(t, []).append(i)
    remaining = consumers(graph)
    ready = [i for i, w in enumerate(waiting) if w == 0]
    order: list[Node] = []
    while ready:
        def growth(i: int) -> tuple[int, int]:
            node = graph.nodes[i]
            freed = sum(tensor_bytes(graph, t) for t in set(node.inputs)
                        if t and remaining[t] == node.inputs.count(t))
            return sum(tensor_bytes(graph, t) for t in node.outputs) - freed, i

        best = min(ready, key=growth)
        ready.remove(best)
        node = graph.nodes[best]
        order.append(node)
        for t in node.inputs:
            if t:
                remaining[t] -= 1
        for out in node.outputs:
            for reader in readers.get(out, []):
                waiting[reader] -= 1
                if waiting[reader] == 0:
                    ready.append(reader)
    return order


def schedule_for_memory(graph: Graph) -> Graph:
    """The graph with its nodes in the order of lowest peak (the file's order on ties)."""
    if len(graph.nodes) < 3:
        return graph
    greedy = greedy_memory_order(graph)
    if len(greedy) != len(graph.nodes):  # not a DAG the importer let through: keep it
        return graph
    if peak_live_bytes(graph, greedy) < peak_live_bytes(graph, graph.nodes):
        return replace(graph, nodes=greedy)
    return graph
