"""`onnx2mcu report`: what the generated C costs, layer by layer, and how the arena is used.

The report only reads the pipeline's results (the Generated program and its arena plan,
plus the firmware budget and instruction counts when the board is a Cortex-M); it never
feeds anything back into the stages. Everything here is pure: the same inputs give
byte-identical text, JSON, SVG and HTML, so reports can be diffed and kept in git.

Model strings (node and tensor names) are the user's and may be hostile: every renderer
escapes them for its format (XML/HTML), and the text and SVG labels drop control
characters so that one name cannot break a table row or an XML document.
"""

from __future__ import annotations

import html
import json
import math
import re
import unicodedata
import zlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from codegen.backend.planner import ALIGNMENT, Placement, scratch_name
from codegen.core.ir import Tensor
from codegen.ops import kernel_family
from codegen.pipeline import Generated
from codegen.target.cycles import ASSUMPTIONS
from codegen.target.firmware import NO_RESERVE, Budget, Reserve
from codegen.target.qemu import InstructionCounts

SCRATCH_PREFIX = scratch_name(0).removesuffix("0")


@dataclass(frozen=True)
class TensorInfo:
    name: str
    dtype: str
    shape: tuple[int, ...]
    # Where it lives: "arena" (planned), "io" (the model's input/output buffers).
    storage: str
    offset: int | None  # in the arena; None outside it
    size: int  # bytes it occupies (the planner's aligned size in the arena)


@dataclass(frozen=True)
class Layer:
    """One kernel call: one row of the table."""

    step: int  # call index: the x axis of the arena picture
    node: str
    op: str
    kernel: str  # the C function
    inputs: tuple[TensorInfo, ...]  # runtime tensors read (weights are counted apart)
    outputs: tuple[TensorInfo, ...]
    macs: int
    weight_bytes: int
    scratch_offset: int | None
    scratch_bytes: int  # aligned, as planned; 0 without scratch
    instructions: int | None  # with --count-instructions
    # estimated cycles / the board's clock; without --count-cycles, instructions at one
    # per cycle (a lower bound)
    time_ms: float | None = None
    cycles: int | None = None  # with --count-cycles: the cycle model's estimate


@dataclass(frozen=True)
class Buffer:
    """One entry of the arena plan: a tensor, or one call's scratch."""

    name: str
    kind: str  # "tensor" or "scratch"
    offset: int
    size: int
    first: int  # the step that writes it
    last: int  # the last step that reads it
    aliases: tuple[str, ...]  # tensors sharing its storage (Reshape, Flatten, ...)
    # The input whose finished bytes this output overwrites (in place, or placed
    # overlapping it: a depthwise or pointwise convolution's sub-tensor lifetimes).
    over: str | None = None


@dataclass(frozen=True)
class Step:
    step: int
    kernel: str
    live: tuple[str, ...]  # buffers in the arena during this call
    live_bytes: int


@dataclass(frozen=True)
class Totals:
    macs: int
    weight_bytes: int
    arena_bytes: int
    arena_lower_bound: int
    io_bytes: int
    # Measured on the Cortex-M size build; None on the host (no budget applies).
    flash_bytes: int | None
    code_bytes: int | None  # flash - weights: code, tables, library, startup
    ram_bytes: int | None
    stack_bytes: int | None
    static_bytes: int | None  # .data + .bss outside the arena: I/O buffers, statics
    flash_budget: int | None
    ram_budget: int | None
    instructions: int | None
    instructions_overhead: int | None  # entry and exit of NAME_run
    note: str  # how the budget was obtained, or why there is none
    clock_hz: int | None = None  # the board's core clock
    time_ms: float | None = None  # estimated cycles (else instructions) at clock_hz
    cycles: int | None = None  # with --count-cycles
    cycles_overhead: int | None = None  # entry and exit of NAME_run, in cycles
    cycle_model: str | None = None  # the core whose table estimated them
    cycle_assumptions: str | None = None  # what the estimate takes for granted
    # Output channels with all-zero weights, filled with their constant instead: the
    # MACs and the model's weight bytes removed (not in macs and weight_bytes above).
    skipped_macs: int = 0
    skipped_weight_bytes: int = 0
    # --reserve-flash/--reserve-ram: kept for the rest of the firmware; the budgets above
    # are the board's memory less them.
    flash_reserved: int = 0
    ram_reserved: int = 0
    # The estimate with the board's flash wait states and caches, beside the zero-wait
    # `cycles` (a board whose file gives its flash timing); time_ms is then of it.
    board_cycles: int | None = None
    flash_timing: str | None = None


@dataclass(frozen=True)
class MemoryMode:
    """The totals of one --memory mode, for the side-by-side of both."""

    memory: str  # "fast" or "min"
    arena_bytes: int
    ram_bytes: int | None  # arena + stack + statics, on a Cortex-M board
    cycles: int | None  # with --count-cycles
    instructions: int | None  # with --count-instructions
    calls: int
    banded: bool  # some layers run in row bands


@dataclass(frozen=True)
class Report:
    model: str
    source: str  # the ONNX file the user gave, or "" for an in-memory model
    board: str
    requant: str
    layers: tuple[Layer, ...]
    buffers: tuple[Buffer, ...]
    steps: tuple[Step, ...]
    alignment: int
    totals: Totals
    notes: tuple[str, ...] = ()  # what the import assumed (a dynamic batch taken as 1)
    memory: str = "fast"  # the --memory mode of the layers above
    modes: tuple[MemoryMode, ...] = ()  # both modes' totals, fast first


# ------------------------------------------------------------------ building


def _tensor_info(t: Tensor, gen: Generated) -> TensorInfo:
    root = gen.program.root(t.name)
    placement = gen.plan.placements.get(root)
    if placement is None:
        return TensorInfo(t.name, t.dtype, t.shape, "io", None, t.nbytes)
    return TensorInfo(t.name, t.dtype, t.shape, "arena", placement.offset, placement.size)


def _node_ops(gen: Generated) -> dict[str, tuple[str, str]]:
    """Kernel calls name their node by describe(); map that to (name, op type)."""
    return {n.describe(): (n.name, n.op_type) for n in gen.graph.nodes}


def build_layers(gen: Generated, instructions: Sequence[int] | None,
                 cycles: Sequence[int] | None = None) -> tuple[Layer, ...]:
    program, plan = gen.program, gen.plan
    nodes = _node_ops(gen)
    constants = set(program.constants) | set(gen.graph.constants)
    weights = program.weight_bytes_per_call()
    layers = []
    for step, call in enumerate(program.calls):
        # The output copies lowering adds have no node: their description names them.
        name, op = nodes.get(call.node, (call.node, "(copy)"))
        scratch = plan.placements.get(scratch_name(step))
        layers.append(Layer(
            step=step, node=name, op=op, kernel=call.function,
            inputs=tuple(_tensor_info(program.tensors[t], gen) for t in call.inputs
                         if program.root(t) not in constants and t in program.tensors),
            outputs=tuple(_tensor_info(program.tensors[t], gen) for t in call.outputs),
            macs=call.macs, weight_bytes=weights[step],
            scratch_offset=scratch.offset if scratch else None,
            scratch_bytes=scratch.size if scratch else 0,
            instructions=instructions[step] if instructions is not None else None,
            time_ms=milliseconds(cycles[step] if cycles is not None else
                                 instructions[step] if instructions is not None else None,
                                 gen.board.clock_hz),
            cycles=cycles[step] if cycles is not None else None))
    return tuple(layers)


def milliseconds(count: int | None, clock_hz: int | None) -> float | None:
    """`count` instructions or cycles at `clock_hz`, in ms, at one per clock."""
    if count is None or clock_hz is None:
        return None
    return count * 1000.0 / clock_hz


def build_buffers(gen: Generated) -> tuple[Buffer, ...]:
    aliases: dict[str, list[str]] = {}
    for alias in gen.program.aliases:
        aliases.setdefault(gen.program.root(alias), []).append(alias)
    # Sorted by place and time, not by the planner's dict order, for a stable output.
    placements = sorted(gen.plan.placements.values(),
                        key=lambda p: (p.offset, p.first, p.tensor))
    return tuple(Buffer(p.tensor, "scratch" if p.tensor.startswith(SCRATCH_PREFIX) else
                        "tensor", p.offset, p.size, p.first, p.last,
                        tuple(sorted(aliases.get(p.tensor, ()))),
                        gen.plan.overlapped.get(p.tensor) or gen.plan.shared.get(p.tensor) or
                        over_read_rows(gen, p))
                 for p in placements)


def over_read_rows(gen: Generated, p: Placement) -> str | None:
    """The tensor dying row by row (--memory min) whose read rows `p` lies over."""
    for name in gen.plan.by_rows:
        whole = gen.plan.placements[name]
        if name != p.tensor and p.offset < whole.offset + whole.size and \
                whole.offset < p.offset + p.size and p.first <= whole.last:
            return name
    return None


def below_bound_note(report: Report) -> str:
    """Why the arena ends below the lower bound (the most bytes of whole tensors live at
    one step), when it does."""
    t = report.totals
    if t.arena_bytes >= t.arena_lower_bound:
        return ""
    over = sum(1 for b in report.buffers if b.over is not None)
    calls = Counter(layer.node for layer in report.layers
                    if kernel_family(layer.kernel) != "rows")
    banded = sum(1 for count in calls.values() if count > 1) \
        if any(kernel_family(layer.kernel) == "rows" for layer in report.layers) else 0
    bands = (f"; {banded} layer(s) run in row bands (--memory min), their tensors kept "
             "only as the rows their readers still need, and later buffers take the rows "
             "of the block's input it has read" if banded else "")
    return (f"arena below the lower bound by {t.arena_lower_bound - t.arena_bytes} bytes: "
            f"the bound counts whole tensors, and {over} output(s) are written over the "
            "bytes of their input that the kernel has finished with (elementwise kernels "
            "in place, depthwise convolutions and max pooling channel by channel, pointwise "
            f"convolutions pixel by pixel, transposes row tile by row tile){bands}")


def build_steps(gen: Generated, buffers: Sequence[Buffer]) -> tuple[Step, ...]:
    steps = []
    for step, call in enumerate(gen.program.calls):
        live = [b for b in buffers if b.first <= step <= b.last]
        steps.append(Step(step, call.function, tuple(b.name for b in live),
                          sum(b.size for b in live)))
    return tuple(steps)


def build_totals(gen: Generated, layers: Sequence[Layer], budget: Budget | None,
                 budget_note: str, counts: InstructionCounts | None,
                 reserve: Reserve = NO_RESERVE) -> Totals:
    weights = sum(layer.weight_bytes for layer in layers)
    cycles = counts.cycles if counts is not None else None
    board = counts.board_cycles if counts is not None else None
    io = gen.program.caller_io_bytes
    memory = gen.board.memory
    flash = code = ram = stack = static = None
    if budget is not None:
        flash, ram = budget.flash_bytes, budget.ram_bytes
        code = max(budget.flash_bytes - weights, 0)
        stack = budget.stack_bytes
        static = budget.static_ram_bytes - budget.arena_bytes
        note = (f"measured on the model alone built with {gen.board.cross.prefix}gcc; stack "
                "from the compiler's call graph")
    elif gen.board.is_mcu:
        note = budget_note or "not measured"
    else:
        note = "host board: no budget applies (weights and arena only)"
    return Totals(
        macs=sum(layer.macs for layer in layers), weight_bytes=weights,
        arena_bytes=gen.plan.size, arena_lower_bound=gen.plan.lower_bound, io_bytes=io,
        flash_bytes=flash, code_bytes=code, ram_bytes=ram, stack_bytes=stack,
        static_bytes=static,
        flash_budget=memory.flash_length - reserve.flash if memory else None,
        ram_budget=memory.ram_length - reserve.ram if memory else None,
        flash_reserved=reserve.flash, ram_reserved=reserve.ram,
        instructions=counts.per_sample[0] if counts else None,
        instructions_overhead=counts.overhead if counts and counts.per_layer else None,
        note=note, clock_hz=gen.board.clock_hz,
        time_ms=milliseconds(board.per_sample[0] if board else
                             cycles.per_sample[0] if cycles else
                             counts.per_sample[0] if counts else None, gen.board.clock_hz),
        board_cycles=board.per_sample[0] if board else None,
        flash_timing=gen.board.flash_timing.describe()
        if board and gen.board.flash_timing else None,
        cycles=cycles.per_sample[0] if cycles else None,
        cycles_overhead=cycles.overhead if cycles and cycles.per_layer else None,
        cycle_model=counts.cycle_model if counts else None,
        cycle_assumptions=ASSUMPTIONS[counts.cycle_model]
        if counts is not None and counts.cycle_model is not None else None,
        skipped_macs=sum(c.skipped_macs for c in gen.program.calls),
        skipped_weight_bytes=sum(c.skipped_weight_bytes for c in gen.program.calls))


def is_banded(gen: Generated) -> bool:
    return any(kernel_family(c.function) == "rows" for c in gen.program.calls)


def memory_mode(gen: Generated, memory: str, budget: Budget | None,
                counts: InstructionCounts | None) -> MemoryMode:
    return MemoryMode(memory, gen.plan.size, budget.ram_bytes if budget else None,
                      counts.cycles.per_sample[0] if counts and counts.cycles else None,
                      counts.per_sample[0] if counts else None, len(gen.program.calls),
                      is_banded(gen))


def build_report(gen: Generated, *, source: str = "", budget: Budget | None = None,
                 budget_note: str = "", counts: InstructionCounts | None = None,
                 memory: str = "fast", modes: tuple[MemoryMode, ...] = (),
                 reserve: Reserve = NO_RESERVE) -> Report:
    """The report of one generated model; budget and counts come from the Cortex-M build
    and QEMU run of the same program (api.report gathers them), modes from both --memory
    modes' programs."""
    per_layer = counts.per_layer if counts is not None else None
    if per_layer is not None and len(per_layer) != len(gen.program.calls):
        raise ValueError(f"{len(per_layer)} per-layer counts for "
                         f"{len(gen.program.calls)} kernel calls")
    cycles = counts.cycles if counts is not None else None
    layers = build_layers(gen, per_layer, cycles.per_layer if cycles is not None else None)
    buffers = build_buffers(gen)
    totals = build_totals(gen, layers, budget, budget_note, counts, reserve)
    return Report(model=gen.name, source=source, board=gen.board.name,
                  requant=gen.program.requant, layers=layers, buffers=buffers,
                  steps=build_steps(gen, buffers), alignment=ALIGNMENT, totals=totals,
                  notes=tuple(gen.graph.notes), memory=memory, modes=modes)


# ------------------------------------------------------------------ strings


def reserved(n: int) -> str:
    return f"; the board's less {n} bytes reserved for the rest of the firmware" if n else ""


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def printable(text: str) -> str:
    """The name with control characters, invisible format characters (the bidirectional
    overrides such as U+202E, which reorder what a terminal or browser shows, zero-width
    characters) and what XML 1.0 cannot hold replaced by '?'."""
    text = _CONTROL.sub("?", text)
    if text.isprintable():
        return text
    return "".join("?" if unicodedata.category(ch) == "Cf" else ch for ch in text)


def xml_escape(text: str) -> str:
    """Safe in XML/HTML text and in double- or single-quoted attribute values."""
    return html.escape(printable(text), quote=True)


def shorten(text: str, width: int) -> str:
    text = printable(text)
    return text if len(text) <= width else text[:max(width - 1, 0)] + "~"


def format_shape(t: TensorInfo) -> str:
    return f"{t.dtype}[{','.join(str(d) for d in t.shape)}]"


def percent(part: int, whole: int | None) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


# ------------------------------------------------------------------ text

NODE_WIDTH = 32
COLUMNS = ("step", "node", "op", "kernel", "inputs", "outputs", "MACs", "weights",
           "out offset", "out bytes", "scratch bytes@offset")


def _row(layer: Layer, with_instructions: bool, with_cycles: bool = False) -> list[str]:
    arena_out = [t for t in layer.outputs if t.offset is not None]
    cells = [str(layer.step), shorten(layer.node, NODE_WIDTH), shorten(layer.op, 20),
             layer.kernel, " ".join(format_shape(t) for t in layer.inputs) or "-",
             " ".join(format_shape(t) for t in layer.outputs),
             str(layer.macs), str(layer.weight_bytes),
             "+".join(str(t.offset) for t in arena_out) or "io",
             "+".join(str(t.size) for t in layer.outputs),
             f"{layer.scratch_bytes}@{layer.scratch_offset}" if layer.scratch_bytes else "-"]
    if with_instructions:
        cells.append(str(layer.instructions))
    if with_cycles:
        cells.append(str(layer.cycles))
    return cells


def format_totals(report: Report) -> list[str]:
    t = report.totals
    lines = [f"total: {len(report.layers)} kernel calls, {t.macs} MACs, {t.weight_bytes} "
             "weight bytes"]
    if t.skipped_macs:
        lines.append(f"skipped: {t.skipped_macs} MACs and {t.skipped_weight_bytes} weight "
                     "bytes of output channels whose weights are all zero, of the "
                     "depthwise channels that read them (each filled with its constant "
                     "plane) and of the pointwise inputs that hold one value (taken into "
                     "the bias)")
    if t.flash_bytes is not None and t.code_bytes is not None:
        lines.append(f"flash: weights {t.weight_bytes} + code {t.code_bytes} = "
                     f"{t.flash_bytes} bytes of {t.flash_budget} "
                     f"({percent(t.flash_bytes, t.flash_budget)}{reserved(t.flash_reserved)})")
    else:
        lines.append(f"flash: weights {t.weight_bytes} bytes (code not measured)")
    if t.ram_bytes is not None:
        lines.append(f"RAM: arena {t.arena_bytes} + stack {t.stack_bytes} + static "
                     f"{t.static_bytes} (inputs/outputs {t.io_bytes}) = {t.ram_bytes} "
                     f"bytes of {t.ram_budget} ({percent(t.ram_bytes, t.ram_budget)}"
                     f"{reserved(t.ram_reserved)})")
    else:
        lines.append(f"RAM: arena {t.arena_bytes} + inputs/outputs {t.io_bytes} bytes "
                     "(stack not measured)")
    lines.append(f"arena: {t.arena_bytes} bytes, lower bound {t.arena_lower_bound} bytes; "
                 f"{len(report.buffers)} buffers over {len(report.steps)} steps")
    below = below_bound_note(report)
    if below:
        lines.append(below)
    if t.instructions is not None:
        per_mac = f", {t.instructions / t.macs:.2f} per MAC" if t.macs else ""
        lines.append(f"instructions: {t.instructions} per inference{per_mac} (entry and "
                     f"exit {t.instructions_overhead})")
        if t.cycles is not None:
            per_mac = f", {t.cycles / t.macs:.2f} per MAC" if t.macs else ""
            lines.append(f"cycles: {t.cycles} per inference{per_mac}, estimated with the "
                         f"{t.cycle_model} table (entry and exit {t.cycles_overhead}); "
                         f"assumes {t.cycle_assumptions}")
        if t.board_cycles is not None and t.cycles is not None:
            per_mac = f", {t.board_cycles / t.macs:.2f} per MAC" if t.macs else ""
            lines.append(f"cycles with the board's flash: {t.board_cycles} per inference"
                         f"{per_mac} ({t.board_cycles - t.cycles} more: {t.flash_timing})")
        if t.time_ms is not None and t.clock_hz is not None:
            how = ("in estimated cycles with the board's flash" if t.board_cycles is not None
                   else "in estimated cycles" if t.cycles is not None else
                   "at one instruction per cycle (a lower bound: loads, multiplies and "
                   "branches take more on a microcontroller)")
            lines.append(f"time: {t.time_ms:.3f} ms per inference at {t.clock_hz / 1e6:g} MHz "
                         f"{how}")
    lines.append(f"budget: {printable(t.note)}")
    lines.extend(format_modes(report))
    return lines


def format_modes(report: Report) -> list[str]:
    """Both --memory modes side by side: RAM (the arena where the stack is not
    measured) and cycles (instructions where cycles are not estimated)."""
    if len(report.modes) < 2:
        return []
    fast = report.modes[0]
    lines = ["memory modes (this report: --memory " + report.memory + "):"]
    for mode in report.modes:
        ram = mode.ram_bytes if mode.ram_bytes is not None else mode.arena_bytes
        base_ram = fast.ram_bytes if fast.ram_bytes is not None else fast.arena_bytes
        what = "RAM" if mode.ram_bytes is not None else "arena"
        work = mode.cycles if mode.cycles is not None else mode.instructions
        base = fast.cycles if fast.cycles is not None else fast.instructions
        unit = "cycles" if mode.cycles is not None else "instructions"
        cost = f", {work} {unit} ({work / base:.2f}x)" if work is not None and base else ""
        how = "layers in row bands" if mode.banded else "every layer whole"
        lines.append(f"  {mode.memory:<4}  {what} {ram} bytes ({ram / base_ram:.2f}x){cost}, "
                     f"{mode.calls} calls: {how}")
    return lines


def format_report_text(report: Report) -> str:
    with_instructions = any(layer.instructions is not None for layer in report.layers)
    with_cycles = any(layer.cycles is not None for layer in report.layers)
    header = [*COLUMNS, *(["instr"] if with_instructions else []),
              *(["cycles"] if with_cycles else [])]
    rows = [_row(layer, with_instructions, with_cycles) for layer in report.layers]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    numeric = {0, *range(6, len(header))}

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.rjust(w) if i in numeric else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    source = f" ({printable(report.source)})" if report.source else ""
    lines = [f"model '{printable(report.model)}'{source}: board {report.board}, "
             f"requant {report.requant}",
             *(f"note: {printable(note)}" for note in report.notes), line(header)]
    lines.extend(line(r) for r in rows)
    lines.extend(format_totals(report))
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ JSON


def report_to_dict(report: Report) -> dict[str, Any]:
    return {"format": "onnx2mcu-report/1", **asdict(report)}


def report_to_json(report: Report) -> str:
    """Every number of the report, machine-readable; keys in a fixed order."""
    return json.dumps(report_to_dict(report), indent=2, ensure_ascii=True) + "\n"


# ------------------------------------------------------------------ SVG

PLOT_LEFT, PLOT_TOP, PLOT_RIGHT, PLOT_BOTTOM = 80, 48, 24, 44
PLOT_HEIGHT = 420
MIN_PLOT_WIDTH, MAX_PLOT_WIDTH, STEP_WIDTH = 480, 1440, 36
# The advance of one character of the picture's monospace font, as a share of its size
# (0.6 in DejaVu Sans Mono and Liberation Mono, a little more to be safe): the picture is
# made wide enough for its header lines.
MONOSPACE_ADVANCE = 0.62


def text_width(text: str, font_size: int) -> float:
    return len(text) * font_size * MONOSPACE_ADVANCE


def arena_legend(report: Report) -> str:
    """The arena against the lower bound of whole tensors, which --memory min's row bands
    and in-place writes take it below."""
    t = report.totals
    arena, bound = t.arena_bytes, t.arena_lower_bound
    if arena > bound:
        where = f"{arena - bound} bytes above the lower bound of {bound}"
    elif arena < bound:
        where = (f"{bound - arena} bytes below the {bound} that whole tensors need at one "
                 "step (row bands, outputs over their inputs)")
    else:
        where = "at the lower bound"
    return (f"arena {arena} bytes, {where}; {len(report.buffers)} buffers over "
            f"{len(report.steps)} steps")
CHAR_WIDTH = 6.1  # of the 10 px monospace labels, to decide whether a label fits
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1",
           "#ff9da7", "#9c755f", "#86bcb6")
SCRATCH_FILL = "#d0d0d0"


def nice_step(span: float, ticks: int) -> int:
    """A 1, 2 or 5 times a power of ten, giving at most about `ticks` ticks over span."""
    if span <= 0:
        return 1
    raw = span / ticks
    base = 1
    while base * 10 <= raw:
        base *= 10
    for m in (1, 2, 5, 10):
        if base * m >= raw:
            return base * m
    return base * 10


def _n(v: float) -> str:
    """Coordinates with two decimals: the same plan always prints the same bytes."""
    text = f"{v:.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def _color(buffer: Buffer) -> str:
    # crc32, not hash(): Python's str hash changes from run to run.
    if buffer.kind == "scratch":
        return SCRATCH_FILL
    return PALETTE[zlib.crc32(buffer.name.encode("utf-8", "replace")) % len(PALETTE)]


def _label(buffer: Buffer, layers: Sequence[Layer]) -> str:
    if buffer.kind == "scratch" and buffer.first < len(layers):
        return f"scratch of step {buffer.first} ({layers[buffer.first].kernel})"
    return buffer.name


def render_arena_svg(report: Report, standalone: bool = True) -> str:
    """The arena over time: x = kernel call index, y = byte offset (0 at the bottom), one
    rectangle per planned buffer over its lifetime and byte range."""
    steps = max(len(report.steps), 1)
    arena = report.totals.arena_bytes
    width = min(max(steps * STEP_WIDTH, MIN_PLOT_WIDTH), MAX_PLOT_WIDTH)
    header = f"{report.model} on {report.board}: {arena_legend(report)}"
    explain = "x: kernel call (step), y: byte offset in the arena; hover a block for its tensor"
    text_w = max(text_width(header, 12), text_width(explain, 10))
    total_w = max(PLOT_LEFT + width + PLOT_RIGHT, math.ceil(PLOT_LEFT + text_w + PLOT_RIGHT))
    total_h = PLOT_TOP + PLOT_HEIGHT + PLOT_BOTTOM
    dx = width / steps
    dy = PLOT_HEIGHT / arena if arena else 0.0

    def x(step: float) -> float:
        return PLOT_LEFT + step * dx

    def y(offset: float) -> float:
        return PLOT_TOP + PLOT_HEIGHT - offset * dy

    bound = report.totals.arena_lower_bound
    out: list[str] = []
    if standalone:
        out.append('<?xml version="1.0" encoding="UTF-8"?>')
    out.append(f'<svg xmlns="http://www.w3.org/2000/svg" width="{total_w}" '
               f'height="{total_h}" viewBox="0 0 {total_w} {total_h}" '
               'font-family="monospace" font-size="10">')
    out.append(f"<title>{xml_escape(report.model)}: arena over time</title>")
    out.append(f'<text class="legend" x="{PLOT_LEFT}" y="18" font-size="12">'
               f"{xml_escape(header)}</text>")
    out.append(f'<text x="{PLOT_LEFT}" y="34">{explain}</text>')
    out.append(f'<rect class="frame" x="{PLOT_LEFT}" y="{PLOT_TOP}" width="{width}" '
               f'height="{PLOT_HEIGHT}" fill="#fafafa" stroke="#888"/>')
    # Axis ticks: every step when there is room, else a round number of steps.
    every = nice_step(steps, width // 28)
    for s in range(0, steps, every):
        cx = _n(x(s + 0.5))
        bottom = PLOT_TOP + PLOT_HEIGHT
        out.append(f'<line x1="{cx}" y1="{bottom}" x2="{cx}" y2="{bottom + 4}" '
                   'stroke="#888"/>')
        out.append(f'<text x="{cx}" y="{bottom + 15}" text-anchor="middle">{s}</text>')
    out.append(f'<text x="{_n(PLOT_LEFT + width / 2)}" y="{total_h - 6}" '
               'text-anchor="middle">step</text>')
    if arena:
        ticks = list(range(0, arena, nice_step(arena, 8)))
        if arena - ticks[-1] < arena / 16:
            ticks.pop()  # too close to the arena's own tick
        for offset in [*ticks, arena]:
            cy = _n(y(offset))
            out.append(f'<line x1="{PLOT_LEFT - 4}" y1="{cy}" x2="{PLOT_LEFT}" y2="{cy}" '
                       'stroke="#888"/>')
            out.append(f'<text x="{PLOT_LEFT - 6}" y="{cy}" text-anchor="end" '
                       f'dominant-baseline="middle">{offset}</text>')
        if 0 < bound < arena:
            cy = _n(y(bound))
            out.append(f'<line class="bound" x1="{PLOT_LEFT}" y1="{cy}" '
                       f'x2="{PLOT_LEFT + width}" y2="{cy}" stroke="#c00" '
                       'stroke-dasharray="4 3"/>')
    else:
        out.append(f'<text x="{_n(PLOT_LEFT + width / 2)}" y="{PLOT_TOP + PLOT_HEIGHT // 2}" '
                   'text-anchor="middle">no intermediate tensors: the arena is empty</text>')
    for b in report.buffers:
        bx, bw = x(b.first), (b.last - b.first + 1) * dx
        by, bh = y(b.offset + b.size), b.size * dy
        life = f"step {b.first}" if b.first == b.last else f"steps {b.first}-{b.last}"
        alias = f"; also {', '.join(b.aliases)}" if b.aliases else ""
        over = f"; written over the finished bytes of {b.over}" if b.over else ""
        tip = (f"{_label(b, report.layers)}: {b.size} bytes at {b.offset}, {life}{alias}"
               f"{over}")
        dash = ' stroke-dasharray="3 2"' if b.kind == "scratch" else ""
        # An output over its input: translucent, so the input shows through it.
        opacity = "0.55" if b.over else "0.85"
        kind = f"{b.kind} overlapped" if b.over else b.kind
        out.append(f'<g class="{kind}"><title>{xml_escape(tip)}</title>'
                   f'<rect class="buffer" x="{_n(bx)}" y="{_n(by)}" width="{_n(bw)}" '
                   f'height="{_n(bh)}" fill="{_color(b)}" fill-opacity="{opacity}" '
                   f'stroke="#333" stroke-width="0.5"{dash} data-offset="{b.offset}" '
                   f'data-size="{b.size}" data-first="{b.first}" data-last="{b.last}"/>')
        chars = int((bw - 4) / CHAR_WIDTH)
        if bh >= 12 and chars >= 3:
            label = shorten(_label(b, report.layers), chars)
            out.append(f'<text x="{_n(bx + 2)}" y="{_n(by + bh / 2)}" '
                       f'dominant-baseline="middle">{xml_escape(label)}</text>')
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------ HTML

# Wide content (the layer table, the picture) scrolls inside its own box, never past the
# page's; a long name in the text breaks anywhere rather than overflow the page.
_STYLE = """body{font-family:sans-serif;margin:1.5em}
h1,p,li{overflow-wrap:anywhere}
div.wide{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;font-size:13px}
th,td{border:1px solid #ccc;padding:2px 6px;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums}"""


def render_report_html(report: Report) -> str:
    """One self-contained page: the table, the totals and the arena picture inline."""
    with_instructions = any(layer.instructions is not None for layer in report.layers)
    with_cycles = any(layer.cycles is not None for layer in report.layers)
    header = [*COLUMNS, *(["instructions"] if with_instructions else []),
              *(["cycles"] if with_cycles else [])]
    numeric = {0, *range(6, len(header))}
    rows = []
    for layer in report.layers:
        cells = _row(layer, with_instructions, with_cycles)
        cells[1] = layer.node  # the full name: a page has room for it
        cells[2] = layer.op
        rows.append("<tr>" + "".join(
            ('<td class="n">' if i in numeric else "<td>") + f"{xml_escape(c)}</td>"
            for i, c in enumerate(cells)) + "</tr>")
    title = f"onnx2mcu report: {report.model}"
    source = f" ({report.source})" if report.source else ""
    lines = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
             f"<title>{xml_escape(title)}</title>", f"<style>{_STYLE}</style>", "</head>",
             "<body>", f"<h1>{xml_escape(title)}</h1>",
             f"<p>{xml_escape(f'model {report.model}{source}: board {report.board}, requant ')}"
             f"{xml_escape(report.requant)}</p>",
             "<h2>Layers</h2>", '<div class="wide">', "<table>",
             "<tr>" + "".join(f"<th>{xml_escape(h)}</th>" for h in header) + "</tr>",
             *rows, "</table>", "</div>", "<h2>Totals</h2>", "<ul>",
             *(f"<li>{xml_escape(t)}</li>" for t in format_totals(report)), "</ul>",
             "<h2>Arena over time</h2>", '<div class="wide">',
             render_arena_svg(report, standalone=False).rstrip(), "</div>",
             "</body>", "</html>"]
    return "\n".join(lines) + "\n"


FORMATS = {"text": format_report_text, "json": report_to_json, "html": render_report_html}
