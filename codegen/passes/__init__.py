"""Graph rewrites over the IR, applied in order. Each rule is a small pure function
Graph -> (Graph, rewritten node names), named so that tools can report what fired."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from .. import ops
from ..ir import Graph
from .constants import fold_constant_chains
from .qdq import (
    cancel_dequantize_quantize,
    drop_redundant_activations,
    fold_relu_clip,
    fuse_qdq_operators,
    fuse_qdq_operators_integer_only,
    int8_pairs_to_uint8,
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
# removal, x86's S8->U8 conversion, the fusions, the final cleanup), then whatever the
# rules left unused.
PASSES: list[Rewrite] = [
    Rewrite("fold_constant_chains", fold_constant_chains),
    Rewrite("merge_double_qdq", merge_double_qdq),
    Rewrite("propagate_qdq", propagate_qdq),
    Rewrite("drop_redundant_activations", drop_redundant_activations),
    Rewrite("int8_pairs_to_uint8", int8_pairs_to_uint8),
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


def _apply(graph: Graph, rewrites: list[Rewrite]) -> tuple[Graph, dict[str, list[str]]]:
    """Apply each rewrite once, in order, to a private copy of the graph."""
    graph = replace(graph, nodes=list(graph.nodes), constants=dict(graph.constants),
                    opsets=dict(graph.opsets),
                    tensors={k: replace(v) for k, v in graph.tensors.items()})
    fired: dict[str, list[str]] = {}
    for rewrite in rewrites:
        graph, changed = rewrite.apply(graph)
        if changed:
            fired.setdefault(rewrite.name, []).extend(changed)
    return graph, fired


def float_islands(graph: Graph) -> int:
    """Float operators the recipes could not fuse."""
    return sum(1 for node in graph.nodes
               if (opdef := ops.lookup(node)) is not None and opdef.needs_fusion)


def run_passes(graph: Graph, integer_only: bool = False) -> tuple[Graph, dict[str, list[str]]]:
    """Apply the rewrites in order; returns the graph and what each rule changed.

    x86 ORT converts int8 Q/DQ pairs to uint8 (int8_pairs_to_uint8), which lets units of
    mixed types fuse but keeps an int8 constant operand from fusing with a converted
    activation; ARM ORT does not. The conversion changes no value, so both are tried and
    the graph with fewer float operators is kept (without the conversion on a tie)."""
    extra = INTEGER_ONLY_PASSES if integer_only else []
    without = [r for r in PASSES if r.name != "int8_pairs_to_uint8"]
    best = _apply(graph, without + extra)
    if float_islands(best[0]):
        converted = _apply(graph, PASSES + extra)
        if float_islands(converted[0]) < float_islands(best[0]):
            best = converted
    return best


def expose_intermediates(graph: Graph) -> Graph:
    """The same graph with every node output also a graph output, in execution order
    (for per-layer comparison; this is not an optimization rule)."""
    extra = [o for node in graph.nodes for o in node.outputs
             if o and o not in graph.outputs]
    return replace(graph, outputs=[*graph.outputs, *extra])
