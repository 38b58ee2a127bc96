"""`onnx2mcu inspect`: the imported graph as onnx2mcu sees it, one line per node, with
every node it cannot handle listed at once."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from codegen import ops
from codegen.core.ir import Graph, Node, QuantParams, Tensor
from codegen.core.names import visible
from codegen.core.pattern import float_nodes
from codegen.core.program import ComputedConstant, KernelCall
from codegen.errors import UnsupportedError
from codegen.frontend.importer import ModelSource, load_model, survey_model
from codegen.ops import LoweringOptions
from codegen.options import Options, lowering_options, resolve_target
from codegen.pipeline import Generated
from codegen.transform import run_passes
from codegen.transform.qdq import fusion_refusal

from .refusal import explain_problems
from .shipped import generate_for_board

ALIAS = "alias (no copy)"
CONSTANT = "constant"
COPY_OP = "(copy)"  # the op shown for a copy into an output buffer (not an ONNX node)


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
    arena_bytes: int | None  # None when some node could not be imported or lowered
    arena_lower_bound: int | None
    board: str
    float_islands: tuple[str, ...] = ()
    # The const bytes of the generated C (None when it cannot be generated); the nodes'
    # weight bytes add up to it.
    weight_bytes: int | None = None


def _read_tensors(node: Node, graph: Graph) -> tuple[tuple[Tensor, ...], tuple[Tensor, ...]]:
    """The runtime tensors a node reads, and the quantized constants (weights) it reads;
    scales and zero points show in the tensors' quantization instead."""
    read = [n for n in node.inputs if n]
    return (tuple(graph.tensors[n] for n in read if n not in graph.constants),
            tuple(graph.tensors[n] for n in read if n in graph.constants
                  and n in graph.tensors and graph.tensors[n].quant is not None))


def summarize_program(gen: Generated) -> tuple[NodeSummary, ...]:
    """One summary per node of the generated program, read from its kernel calls: the
    functions the C calls, their MACs and the const bytes they bring, in call order.
    The output copies lowering adds show after the nodes."""
    program = gen.program
    weights = program.weight_bytes_per_call()
    calls_of: dict[str, list[int]] = {}
    for index, call in enumerate(program.calls):
        calls_of.setdefault(call.node, []).append(index)
    summaries = []
    for node in gen.graph.nodes:
        indexes = calls_of.pop(node.describe(), [])
        kernels = tuple(program.calls[i].function for i in indexes) or (
            (ALIAS,) if any(o in program.aliases for o in node.outputs) else (CONSTANT,))
        inputs, constants = _read_tensors(node, gen.graph)
        summaries.append(NodeSummary(
            node=node, kernels=kernels, inputs=inputs, constants=constants,
            outputs=tuple(gen.graph.tensors[o] for o in node.outputs if o in gen.graph.tensors),
            macs=sum(program.calls[i].macs for i in indexes),
            weight_bytes=sum(weights[i] for i in indexes)))
    for description, indexes in calls_of.items():  # the copies into output buffers
        call = program.calls[indexes[0]]
        copy = Node(description, COPY_OP, "", call.inputs, call.outputs)
        summaries.append(NodeSummary(
            node=copy, kernels=tuple(program.calls[i].function for i in indexes),
            inputs=tuple(program.tensors[t] for t in call.inputs),
            constants=(), outputs=tuple(program.tensors[t] for t in call.outputs),
            macs=0, weight_bytes=sum(weights[i] for i in indexes)))
    return tuple(summaries)


def summarize_unlowered(graph: Graph, options: LoweringOptions) -> tuple[NodeSummary, ...]:
    """Node summaries of a graph that does not lower whole (some node is refused): each
    node lowered on its own with the options generate would use; a refused node shows
    as 'unsupported' (lower_problems says why)."""
    summaries = []
    for node in graph.nodes:
        try:
            lowered = ops.lower_node(node, graph, options)
        except UnsupportedError:
            lowered = []
            kernels: tuple[str, ...] = ("unsupported",)
        else:
            kernels = tuple(c.function for c in lowered if isinstance(c, KernelCall)) or (
                (CONSTANT,) if any(isinstance(c, ComputedConstant) for c in lowered)
                else (ALIAS,))
        calls = [c for c in lowered if isinstance(c, KernelCall)]
        inputs, constants = _read_tensors(node, graph)
        summaries.append(NodeSummary(
            node=node, kernels=kernels, inputs=inputs, constants=constants,
            outputs=tuple(graph.tensors[o] for o in node.outputs if o in graph.tensors),
            macs=sum(c.macs for c in calls),
            weight_bytes=sum(int(np.asarray(a.values).nbytes) for c in calls for a in c.arrays)
            + sum(int(graph.constants[t].nbytes) for c in calls for t in c.inputs
                  if t in graph.constants)))
    return tuple(summaries)


def lower_problems(graph: Graph, options: LoweringOptions) -> list[UnsupportedError]:
    """Every node the lowering refuses (float islands without an exact kernel), at once."""
    problems = []
    for node in graph.nodes:
        try:
            ops.lower_node(node, graph, options)
        except UnsupportedError as error:
            problems.append(error)
    return problems


def inspect_model(source: ModelSource, options: Options) -> Inspection:
    """What generate would build, with the same options: read from the very program
    generate emits when the model lowers; otherwise every problem at once."""
    target = resolve_target(options)
    model = load_model(source, options.limits)
    graph, problems = survey_model(model, options.input_shapes, options.limits)
    if problems:
        lowering = lowering_options(target, graph)
        return Inspection(graph, summarize_unlowered(graph, lowering),
                          tuple(str(error) for _, error in problems), {}, target.requant,
                          None, None, target.board.name)
    recipes = run_passes(graph, options.integer_only, options.qdq_rules)
    islands = tuple(float_islands(recipes.graph, recipes.qdq_rules == "x86"))
    lowering = lowering_options(target, recipes.graph)
    messages = [str(e) for e in explain_problems(lower_problems(recipes.graph, lowering),
                                                 source, options)]
    if messages:
        return Inspection(recipes.graph, summarize_unlowered(recipes.graph, lowering),
                          tuple(messages), recipes.rewrites, target.requant, None, None,
                          target.board.name, islands)
    gen = generate_for_board(model, target, source)
    return Inspection(gen.graph, summarize_program(gen), (), gen.rewrites, target.requant,
                      gen.plan.size, gen.plan.lower_bound, target.board.name, islands,
                      gen.program.weight_bytes)


def float_islands(graph: Graph, x86: bool) -> list[str]:
    """Every operator computing in float inside the network (core.pattern.float_nodes:
    not the QuantizeLinear of a graph input nor the DequantizeLinear of a graph output),
    with the reason."""
    islands = []
    for node in float_nodes(graph):
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


def kernel_legend(result: Inspection) -> list[str]:
    """What each kernel the model calls is, from the kernel table (codegen/ops/kernels.py):
    its name decoded, its runtime file, parameters, weight layout, scratch and when the
    generator picks it."""
    names = dict.fromkeys(k for s in result.nodes for k in s.kernels if k.startswith("q8_"))
    return ["kernels:", *(f"  {ops.explain_kernel(name)}" for name in names)]


def format_inspection(result: Inspection, explain_kernels: bool = False) -> str:
    g = result.graph
    opsets = ", ".join(f"{d or 'ai.onnx'} {v}" for d, v in sorted(g.opsets.items()))
    lines = [f"model '{g.name}' ({opsets}); board {result.board}, requant {result.requant}",
             *(f"note: {note}" for note in g.notes)]
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
    lines.extend(summary_lines(result))
    if explain_kernels:
        lines.extend(kernel_legend(result))
    return "\n".join(visible(line) for line in lines)  # one line per entry, whatever the names


def summary_lines(result: Inspection) -> list[str]:
    """The totals, the float islands and what cannot be generated."""
    macs = sum(s.macs for s in result.nodes)
    weights = sum(s.weight_bytes for s in result.nodes)
    nodes = sum(1 for s in result.nodes if s.node.op_type != COPY_OP)
    total = f"total: {nodes} nodes, {macs} MACs, {weights} weight bytes"
    if result.arena_bytes is not None:
        calls = sum(len(s.kernels) for s in result.nodes
                    if s.kernels[0] not in (ALIAS, CONSTANT))
        total += f", {calls} kernel calls"
        total += (f", arena {result.arena_bytes} bytes (lower bound "
                  f"{result.arena_lower_bound})")
    lines = [total]
    lines.extend(runtime_quantization_lines(result.graph))
    if result.float_islands:
        lines.append(f"float islands: {len(result.float_islands)} node(s)")
        lines.extend(f"  {p}" for p in result.float_islands)
    if result.problems:
        lines.append(f"unsupported: {len(result.problems)} node(s)")
        lines.extend(f"  {p}" for p in result.problems)
    return lines


def runtime_quantization_lines(graph: Graph) -> list[str]:
    """What dynamic quantization costs on the target: the values quantized at run time,
    each scanned for the range, then divided by the scale it gives (float compares and a
    float division each: soft-float calls on a core without FPU)."""
    counted = [(node, ops.runtime_quantized(node, graph)) for node in graph.nodes]
    counted = [(node, n) for node, n in counted if n]
    if not counted:
        return []
    total = sum(n for _, n in counted)
    lines = [f"run-time quantization: {len(counted)} node(s) find the min/max of {total} "
             f"float values per inference and divide each by the scale it gives "
             f"({2 * total} float compares, {total} divisions)"]
    lines += [f"  {node.describe()}: {n} values" for node, n in counted]
    return lines


def format_inspection_summary(result: Inspection) -> str:
    """inspect's first line and summary, without the node list: what `quantize` ends
    with. It says so when there is no float island, since that is what was asked."""
    g = result.graph
    lines = [f"model '{g.name}': {len(g.inputs)} input(s), {len(g.outputs)} output(s); "
             f"board {result.board}, requant {result.requant}",
             *(f"note: {note}" for note in g.notes), *summary_lines(result)]
    if not result.float_islands and not result.problems:
        lines.append("float islands: none (every operator runs in integer kernels)")
    return "\n".join(visible(line) for line in lines)
