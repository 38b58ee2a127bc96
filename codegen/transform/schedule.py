"""Execution order: a topological order of the graph's nodes that keeps the peak of live
activation bytes low.

On a chain there is one order. On branching graphs (residual blocks, Concat of parallel
branches) the order decides which intermediate tensors are alive together. The ONNX file's
order is kept unless a greedy memory-aware order (run next the ready node that adds the
fewest live bytes, ties by file order) has a lower peak.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import replace

from codegen.core.ir import Graph, Node


def activation_bytes(graph: Graph) -> dict[str, int]:
    """The bytes each tensor the nodes read or write takes in the arena (the graph's
    inputs and outputs and the constants: none), computed once (with the input and
    output lists as a set: a model with thousands of outputs made each lookup a scan)."""
    boundary = {*graph.inputs, *graph.outputs}
    sizes: dict[str, int] = {}
    for node in graph.nodes:
        for name in (*node.inputs, *node.outputs):
            if name and name not in sizes:
                tensor = graph.tensors.get(name)
                sizes[name] = 0 if (tensor is None or name in graph.constants
                                    or name in boundary) else tensor.nbytes
    return sizes


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
    sizes = activation_bytes(graph)
    remaining = consumers(graph)
    live = 0
    peak = 0
    for node in order:
        live += sum(sizes.get(t, 0) for t in node.outputs)
        peak = max(peak, live)
        for name in node.inputs:
            if name:
                remaining[name] -= 1
                if remaining[name] == 0:
                    live -= sizes.get(name, 0)
    return peak


def greedy_memory_order(graph: Graph) -> list[Node]:
    """Topological order choosing, among ready nodes, the one with the smallest growth of
    live bytes (outputs written minus inputs freed); ties keep the file order.

    The ready nodes wait in a heap by (growth, index). A node's growth changes only when
    one of its inputs comes down to the reads the node itself makes (the input is then
    freed by it): only then is it computed again; an entry whose growth is no longer the
    node's is skipped. So each step costs a logarithm, not a pass over every ready node
    (a model with thousands of outputs read from one tensor took minutes)."""
    nodes = graph.nodes
    sizes = activation_bytes(graph)
    producer = {out: i for i, node in enumerate(nodes) for out in node.outputs}
    waiting = [sum(1 for t in set(node.inputs) if t in producer) for node in nodes]
    readers: dict[str, list[int]] = {}
    # (tensor, how many times a node reads it) -> the nodes reading it that many times
    reading: dict[tuple[str, int], list[int]] = {}
    for i, node in enumerate(nodes):
        for t in set(node.inputs):
            if t in producer:
                readers.setdefault(t, []).append(i)
            if t:
                reading.setdefault((t, node.inputs.count(t)), []).append(i)
    remaining = consumers(graph)

    def growth(i: int) -> int:
        node = nodes[i]
        freed = sum(sizes.get(t, 0) for t in set(node.inputs)
                    if t and remaining[t] == node.inputs.count(t))
        return sum(sizes.get(t, 0) for t in node.outputs) - freed

    current: dict[int, int] = {}  # ready node -> its growth now
    heap: list[tuple[int, int]] = []

    def make_ready(i: int) -> None:
        current[i] = growth(i)
        heapq.heappush(heap, (current[i], i))

    for i, w in enumerate(waiting):
        if w == 0:
            make_ready(i)
    order: list[Node] = []
    while heap:
        value, best = heapq.heappop(heap)
        if current.get(best) != value:
            continue  # stale: the node ran, or its growth changed since
        del current[best]
        node = nodes[best]
        order.append(node)
        for t in set(node.inputs):
            if t:
                remaining[t] -= node.inputs.count(t)
                for reader in reading.get((t, remaining[t]), ()):
                    if reader in current:
                        make_ready(reader)  # its growth now frees t
        for out in node.outputs:
            for reader in readers.get(out, []):
                waiting[reader] -= 1
                if waiting[reader] == 0:
                    make_ready(reader)
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
