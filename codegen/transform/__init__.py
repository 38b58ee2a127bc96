"""Graph rewrites over the IR, applied in order. Each rule is a small pure function
Graph -> (Graph, rewritten node names), named so that tools can report what fired."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from codegen import ops
from codegen.core.ir import Graph
from codegen.errors import OptionError

from .constants import fold_constant_chains
from .float_fusions import (
    fuse_gelu,
    fuse_layer_norm_level1,
    fuse_layer_norm_level2,
    fuse_matmul_add,
    fuse_matmul_scale,
    fuse_nchwc_conv_add,
    fuse_simplified_layer_norm,
    fuse_skip_layer_norm,
)
from .identity import eliminate_identities
from .qdq import (
    cancel_dequantize_quantize,
    drop_redundant_activations,
    fold_relu_clip,
    fuse_qdq_operators,
    fuse_qdq_operators_integer_only,
    fuse_qdq_operators_x86,
    int8_pairs_to_uint8,
    integer_activations,
    merge_double_qdq,
    pass_quantized_through,
    propagate_qdq,
    propagate_qdq_integer_only,
)
from .tabulate import gathers_to_tables, tabulate_elementwise_chains
from .weights import quantize_weights_and_biases


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


QDQ_RULES = ("auto", "x86", "arm")


def check_qdq_rules(rules: str) -> None:
    if rules not in QDQ_RULES:
        raise OptionError(f"--qdq-rules '{rules}': choose one of {', '.join(QDQ_RULES)}")


def ort_passes(rules: str) -> list[Rewrite]:
    """ORT's rules, in ORT's order (IdentityElimination, ConstantFolding, DoubleQDQPairsRemover,
    MatMulAddFusion, LayerNormFusion from opset 17, QDQPropagation, Relu/Clip removal,
    x86's S8->U8 conversion, the QDQ fusions, the level-2 float fusions (GeluFusion,
    LayerNormFusion below opset 17, SimplifiedLayerNormFusion, SkipLayerNormFusion,
    MatMulScaleFusion), the
    final cleanup), then whatever they left unused. `rules` is the
    platform whose int8 QDQ behaviour to follow: x86 converts int8 Q/DQ pairs to uint8
    and fuses no Conv or MatMul left on int8; ARM fuses int8 units as they are."""
    x86 = rules == "x86"
    return [
        Rewrite("eliminate_identities", eliminate_identities),
        Rewrite("fold_constant_chains", fold_constant_chains),
        Rewrite("gathers_to_tables", gathers_to_tables),
        Rewrite("merge_double_qdq", merge_double_qdq),
        Rewrite("fuse_matmul_add", fuse_matmul_add),
        Rewrite("fuse_layer_norm", fuse_layer_norm_level1),
        Rewrite("propagate_qdq", propagate_qdq),
        Rewrite("quantize_weights_and_biases", quantize_weights_and_biases),
        Rewrite("drop_redundant_activations", drop_redundant_activations),
        *([Rewrite("int8_pairs_to_uint8", int8_pairs_to_uint8)] if x86 else []),
        Rewrite("fuse_qdq_operators", fuse_qdq_operators_x86 if x86 else fuse_qdq_operators),
        Rewrite("fuse_gelu", fuse_gelu),
        Rewrite("fuse_layer_norm", fuse_layer_norm_level2),
        Rewrite("fuse_simplified_layer_norm", fuse_simplified_layer_norm),
        Rewrite("fuse_skip_layer_norm", fuse_skip_layer_norm),
        Rewrite("fuse_matmul_scale", fuse_matmul_scale),
        Rewrite("pass_quantized_through", pass_quantized_through),
        Rewrite("fold_relu_clip", fold_relu_clip),
        Rewrite("tabulate_elementwise_chains", tabulate_elementwise_chains),
        Rewrite("cancel_dequantize_quantize", cancel_dequantize_quantize),
        Rewrite("fuse_nchwc_conv_add", fuse_nchwc_conv_add),
        Rewrite("remove_dead_nodes", remove_dead_nodes),
    ]


# --integer-only: after ORT's rules, fuse what ORT would leave in float.
INTEGER_ONLY_PASSES: list[Rewrite] = [
    Rewrite("propagate_qdq_integer_only", propagate_qdq_integer_only),
    Rewrite("integer_activations", integer_activations),
    Rewrite("fuse_qdq_operators_integer_only", fuse_qdq_operators_integer_only),
    Rewrite("pass_quantized_through", pass_quantized_through),
    Rewrite("tabulate_elementwise_chains", tabulate_elementwise_chains),
    Rewrite("cancel_dequantize_quantize", cancel_dequantize_quantize),
    Rewrite("fuse_nchwc_conv_add", fuse_nchwc_conv_add),
    Rewrite("remove_dead_nodes", remove_dead_nodes),
]


@dataclass(frozen=True)
class Recipes:
    """The graph after the rewrites, what each rule changed, and which platform's int8
    QDQ rules it follows ("x86" or "arm"; ORT must run with the same to agree)."""

    graph: Graph
    rewrites: dict[str, list[str]]
    qdq_rules: str


def _apply(graph: Graph, rewrites: list[Rewrite]) -> tuple[Graph, dict[str, list[str]]]:
    """Apply each rewrite once, in order, to a private copy of the graph."""
    graph = replace(graph, nodes=list(graph.nodes), constants=dict(graph.constants),
                    opsets=dict(graph.opsets), notes=list(graph.notes),
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
               if (opdef := ops.lookup(node)) is not None and opdef.float_island)


def run_passes(graph: Graph, integer_only: bool = False, qdq_rules: str = "auto") -> Recipes:
    """Apply the rewrites in order.

    With qdq_rules "auto", both platforms' rules are tried and the graph with fewer
    float operators is kept (ARM's on a tie). They differ only for int8 activations:
    x86's conversion lets units of mixed types fuse but stops at fan-out, ARM's fuses
    int8 units but not mixed ones."""
    extra = INTEGER_ONLY_PASSES if integer_only else []
    if qdq_rules != "auto":
        return Recipes(*_apply(graph, ort_passes(qdq_rules) + extra), qdq_rules)
    best = Recipes(*_apply(graph, ort_passes("arm") + extra), "arm")
    if float_islands(best.graph):
        x86 = Recipes(*_apply(graph, ort_passes("x86") + extra), "x86")
        if float_islands(x86.graph) < float_islands(best.graph):
            best = x86
    return best


def expose_intermediates(graph: Graph) -> Graph:
    """The same graph with every node output also a graph output, in execution order
    (for per-layer comparison; this is not an optimization rule)."""
    extra = [o for node in graph.nodes for o in node.outputs
             if o and o not in graph.outputs]
    return replace(graph, outputs=[*graph.outputs, *extra])
