"""Graph rewrites over the IR, applied in order. Each rule is a small pure function
Graph -> (Graph, rewritten node names), named so that tools can report what fired."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from .ir import Graph


@dataclass(frozen=True)
class Rewrite:
    name: str
    apply: Callable[[Graph], tuple[Graph, list[str]]]


def remove_dead_nodes(graph: Graph) -> tuple[Graph, list[str]]:
    """Drop nodes none of whose outputs reach a graph output."""
    live = set(graph.outputs)
    kept = []
    removed = []
    for node in reversed(graph.nodes):
        if any(out in live for out in node.outputs):
            kept.append(node)
            live.update(i for i in node.inputs if i)
        else:
            removed.append(node.name)
    if not removed:
        return graph, []
    return replace(graph, nodes=list(reversed(kept))), list(reversed(removed))


PASSES: list[Rewrite] = [
    Rewrite("remove_dead_nodes", remove_dead_nodes),
]


def run_passes(graph: Graph) -> tuple[Graph, dict[str, list[str]]]:
    """Apply every rewrite once, in order; returns the graph and what each rule changed."""
    fired: dict[str, list[str]] = {}
    for rewrite in PASSES:
        graph, changed = rewrite.apply(graph)
        if changed:
            fired[rewrite.name] = changed
    return graph, fired


def expose_intermediates(graph: Graph) -> Graph:
    """The same graph with every node output also a graph output, in execution order
    (for per-layer comparison; this is not an optimization rule)."""
    extra = [o for node in graph.nodes for o in node.outputs
             if o and o not in graph.outputs]
    return replace(graph, outputs=[*graph.outputs, *extra])
