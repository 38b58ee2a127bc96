"""`onnx2mcu inspect`: the imported graph as onnx2mcu sees it, one line per node, with
every node it cannot handle listed at once."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from . import ops
from .boards import load_board
from .errors import UnsupportedError
from .importer import ModelSource, load_model, survey_model
from .ir import Graph, Node, QuantParams, Tensor
from .names import visible
from .ops import LoweringOptions
from .passes import check_qdq_rules, run_passes
from .passes.qdq import fusion_refusal
from .pipeline import Options, generate_sources
from .program import ComputedConstant, KernelCall
from .refusal import explain_problems


@dataclass(frozen=True)
class NodeSummary:
    node: Node
    kernels: tuple[str, ...]  # "alias" for layout-only operators
    inputs: tuple[Tensor, ...]  # runtime tensors read
    constants: tuple[Tensor, ...]  # quantized constant tensors read (weights)
    outputs: tuple[Tensor, ...]
    macs: int
    weight_bytes: int


@dataclass(frozen=True)
class Inspection:
    graph: Graph
    nodes: tuple[NodeSummary, ...]
    problems: tuple[str, ...]
    rewrites: Mapping[str, list[str]]
    requant: str
    arena_bytes: int | None  # None when some node could not be imported
    arena_lower_bound: int | None
    float_islands: tuple[str, ...] = ()


def summarize_node(node: Node, graph: Graph, options: LoweringOptions) -> NodeSummary:
    """What a node lowers to; a node that cannot be lowered shows as 'unsupported'
    (lower_problems says why)."""
    opdef = ops.lookup(node)
    assert opdef is not None
    try:
        lowered = opdef.lower(node, graph, options)
    except UnsupportedError:
        lowered = []
        kernels: tuple[str, ...] = ("unsupported",)
    else:
        calls = [c for c in lowered if isinstance(c, KernelCall)]
        kernels = tuple(c.function for c in calls) or (
            ("constant",) if any(isinstance(c, ComputedConstant) for c in lowered)
            else ("alias (no copy)",))
    calls = [c for c in lowered if isinstance(c, KernelCall)]
    read = [n for n in node.inputs if n]
    return NodeSummary(
        node=node, kernels=kernels,
        inputs=tuple(graph.tensors[n] for n in read if n not in graph.constants),
        # Quantized constants are weights; scales and zero points show in their quant.
        constants=tuple(graph.tensors[n] for n in read if n in graph.constants
                        and n in graph.tensors and graph.tensors[n].quant is not None),
        outputs=tuple(graph.tensors[o] for o in node.outputs if o in graph.tensors),
        macs=sum(c.macs for c in calls),
        weight_bytes=sum(call_weight_bytes(c, graph) for c in calls),
    )


def call_weight_bytes(call: KernelCall, graph: Graph) -> int:
    """The const bytes one kernel call reads: its own arrays (packed weights, per-channel
    constants) and the graph constants it takes as inputs."""
    return (sum(int(np.asarray(a.values).nbytes) for a in call.arrays)
            + sum(int(graph.constants[t].nbytes) for t in call.inputs if t in graph.constants))


def lower_problems(graph: Graph, options: LoweringOptions) -> list[UnsupportedError]:
    """Every node the lowering refuses (float islands without an exact kernel), at once."""
    problems = []
    for node in graph.nodes:
        opdef = ops.lookup(node)
        assert opdef is not None
        try:
            opdef.lower(node, graph, options)
        except UnsupportedError as error:
            problems.append(error)
    return problems


def inspect_model(source: ModelSource, options: Options) -> Inspection:
    board = load_board(options.board)
    requant = options.requant or board.requant
    model = load_model(source, options.limits)
    graph, problems = survey_model(model, options.input_shapes, options.limits)
    messages = [str(error) for _, error in problems]
    rewrites: Mapping[str, list[str]] = {}
    rules = "arm"
    if not problems:
        check_qdq_rules(options.qdq_rules)
        recipes = run_passes(graph, options.integer_only, options.qdq_rules)
        graph, rewrites, rules = recipes.graph, recipes.rewrites, recipes.qdq_rules
    lowering = LoweringOptions(requant=requant, kernels=options.kernels, dsp=board.dsp)
    if not problems:
        messages = [str(e) for e in explain_problems(lower_problems(graph, lowering), source,
                                                     options)]
    nodes = tuple(summarize_node(n, graph, lowering) for n in graph.nodes)
    islands = float_islands(graph, rules == "x86") if not problems else []
    arena = lower_bound = None
    if not messages:
        gen = generate_sources(model, options)
        arena, lower_bound = gen.plan.size, gen.plan.lower_bound
    return Inspection(graph, nodes, tuple(messages), rewrites, requant, arena, lower_bound,
                      tuple(islands))


def float_islands(graph: Graph, x86: bool) -> list[str]:
    """Every operator computing in float inside the network (not the QuantizeLinear of a
    graph input nor the DequantizeLinear of a graph output), with the reason."""
    islands = []
    for node in graph.nodes:
        if node.op_type in ("QuantizeLinear", "DequantizeLinear") and not node.domain:
            continue
        floats = [t for t in (*node.inputs, *node.outputs)
                  if t and t in graph.tensors and t not in graph.constants
                  and graph.tensors[t].dtype == "float32"]
        if not floats:
            continue
        opdef = ops.lookup(node)
        why = (fusion_refusal(graph, node, x86) + "; "
               if opdef is not None and opdef.float_island else "")
        islands.append(f"{node.describe()}: {why}computed in float32 in ONNX Runtime's "
                       "x86-64 order of operations")
    return islands


def format_quant(q: QuantParams | None) -> str:
    if q is None:
        return ""
    if q.per_tensor:
        return f"s={q.scale[0]:.6g} zp={q.zero_point[0]}"
    zps = set(q.zero_point)
    zp = f"zp={q.zero_point[0]}" if len(zps) == 1 else "zp=per-channel"
    return f"per-axis({q.axis}) x{len(q.scale)} {zp}"


def format_tensor(t: Tensor) -> str:
    shape = ",".join(str(d) for d in t.shape)
    quant = format_quant(t.quant)
    return f"{t.dtype}[{shape}]" + (f" ({quant})" if quant else "")


def format_inspection(result: Inspection) -> str:
    g = result.graph
    opsets = ", ".join(f"{d or 'ai.onnx'} {v}" for d, v in sorted(g.opsets.items()))
    lines = [f"model '{g.name}' ({opsets}); requant {result.requant}"]
    for kind, names in (("input", g.inputs), ("output", g.outputs)):
        for name in names:
            if name in g.tensors:
                lines.append(f"{kind:<7} '{name}' {format_tensor(g.tensors[name])}")
    for i, s in enumerate(result.nodes, 1):
        ins = " ".join(format_tensor(t) for t in s.inputs) or "-"
        outs = " ".join(format_tensor(t) for t in s.outputs)
        consts = "".join(f" w={format_tensor(t)}" for t in s.constants)
        lines.append(f"{i:>3} '{s.node.name}' {s.node.op_type}"
                     f"{'' if not s.node.domain else ' [' + s.node.domain + ']'} -> "
                     f"{'+'.join(s.kernels)} | in {ins} | out {outs}{consts} | "
                     f"MACs {s.macs} | weights {s.weight_bytes} B")
    for rule, changed in result.rewrites.items():
        lines.append(f"rewrite {rule}: {', '.join(changed)}")
    macs = sum(s.macs for s in result.nodes)
    weights = sum(s.weight_bytes for s in result.nodes)
    total = f"total: {len(result.nodes)} nodes, {macs} MACs, {weights} weight bytes"
    if result.arena_bytes is not None:
        total += (f", arena {result.arena_bytes} bytes (lower bound "
                  f"{result.arena_lower_bound})")
    lines.append(total)
    if result.float_islands:
        lines.append(f"float islands: {len(result.float_islands)} node(s)")
        lines.extend(f"  {p}" for p in result.float_islands)
    if result.problems:
        lines.append(f"unsupported: {len(result.problems)} node(s)")
        lines.extend(f"  {p}" for p in result.problems)
    return "\n".join(visible(line) for line in lines)  # one line per entry, whatever the names
