"""Graph rewrites over the IR, applied in order. Each rule is a small pure function
Graph -> (Graph, rewritten node names), named so that tools can report what fired."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from ..ir import Graph
from .constants import fold_constant_chains
from .qdq import (
    cancel_dequantize_quantize,
    drop_redundant_activations,
    fold_relu_clip,
    fuse_qdq_operators,
    fuse_qdq_operators_integer_only,
    integer_activations,
    merge_double_qdq,
    pass_quantized_through,
    propagate_qdq,
    propagate_qdq_integer_only,
)


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


# In ORT's order (ConstantFolding, DoubleQDQPairsRemover, QDQPropagation, Relu/Clip
# removal, the fusions, the final cleanup), then whatever the rules left unused.
PASSES: list[Rewrite] = [
    Rewrite("fold_constant_chains", fold_constant_chains),
    Rewrite("merge_double_qdq", merge_double_qdq),
    Rewrite("propagate_qdq", propagate_qdq),
    Rewrite("drop_redundant_activations", drop_redundant_activations),
    Rewrite("fuse_qdq_operators", fuse_qdq_operators),
    Rewrite("pass_quantized_through", pass_quantized_through),
    Rewrite("fold_relu_clip", fold_relu_clip),
    Rewrite("cancel_dequantize_quantize", cancel_dequantize_quantize),
    Rewrite("remove_dead_nodes", remove_dead_nodes),
]

# --integer-only: after ORT's rules, fuse what ORT would leave in float.
INTEGER_ONLY_PASSES: list[Rewrite] = [
    Rewrite("propagate_qdq_integer_only", propagate_qdq_integer_only),
    Rewrite("integer_activations", integer_activations),
    Rewrite("fuse_qdq_operators_integer_only", fuse_qdq_operators_integer_only),
    Rewrite("pass_quantized_through", pass_quantized_through),
    Rewrite("cancel_dequantize_quantize", cancel_dequantize_quantize),
    Rewrite("remove_dead_nodes", remove_dead_nodes),
]


def run_passes(graph: Graph, integer_only: bool = False) -> tuple[Graph, dict[str, list[str]]]:
    """Apply every rewrite once, in order; returns the graph and what each rule changed."""
    fired: dict[str, list[str]] = {}
    for rewrite in PASSES + (INTEGER_ONLY_PASSES if integer_only else []):
        graph, changed = rewrite.apply(graph)
        if changed:
            fired.setdefault(rewrite.name, []).extend(changed)
    return graph, fired


def expose_intermediates(graph: Graph) -> Graph:
    """The same graph with every node output also a graph output, in execution order
    (for per-layer comparison; this is not an optimization rule)."""
    extra = [o for node in graph.nodes for o in node.outputs
             if o and o not in graph.outputs]
    return replace(graph, outputs=[*graph.outputs, *extra])
