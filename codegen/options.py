"""The options of every command, declared once (Options), and resolved against the board
into the Target that decides which kernels run (resolve_target, lowering_options): the
one place kernel choices are made, which inspect, report, generate, run and verify all
share. The API's functions take an Options and accept its fields as keywords too."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, TypedDict

import numpy as np

from codegen import ops
from codegen.backend.interface import DEFAULT_INTERFACE, Interface, check_interface
from codegen.core.boards import Board, load_board
from codegen.core.ir import Graph
from codegen.core.limits import DEFAULT_LIMITS, Limits
from codegen.core.names import default_name, name_problem, quoted
from codegen.frontend.importer import ModelSource
from codegen.ops import LoweringOptions
from codegen.transform import check_qdq_rules

from .errors import OptionError

REQUANT_MODES = ("float", "int")


KERNEL_SETS = ("fast", "reference")


# fast: every layer whole, the fewest cycles; min: blocks of layers in row bands where
# that lowers the arena (codegen/transform/bands.py), for more cycles.
MEMORY_MODES = ("fast", "min")


WEIGHT_WIDTHS = ("auto", "int8", "int16")


# With --weights auto, wide (int16) weights are used when they take at most this share of
# the board's flash, leaving the rest for code, tables and the application.
WIDE_WEIGHTS_FLASH_SHARE = 0.5


@dataclass(frozen=True)
class Options:
    board: str = "host"
    name: str | None = None
    requant: str | None = None  # None: the board's default
    input_shapes: Mapping[str, tuple[int, ...]] | None = None
    # Make every intermediate tensor a graph output too (verify --per-layer).
    expose_intermediates: bool = False
    # Fuse into integer operators also where ONNX Runtime keeps QDQ patterns in float.
    integer_only: bool = False
    # Whose int8 QDQ rules to follow: "x86", "arm" or "auto" (the one fusing more).
    qdq_rules: str = "auto"
    # "fast" kernels where a layer allows them, or the "reference" loops everywhere.
    kernels: str = "fast"
    # "fast" or "min" (MEMORY_MODES).
    memory: str = "fast"
    # How the fast kernels store weights: "int8" (compact), "int16" (no widening in the
    # inner loops, twice the bytes) or "auto" (int16 where the board's flash has room).
    weights: str = "auto"
    # Lay kernels out for the DSP extension or not; None: as the board has it. (Tests run
    # the DSP layouts' portable C on the host with True.)
    dsp: bool | None = None
    # Host builds may use every instruction of this machine (-march=native): faster, and
    # not portable to other machines.
    native: bool = False
    # Tensor, arena and generated-source sizes over which a model is refused.
    limits: Limits = DEFAULT_LIMITS
    # Where the arena lives and which runtime the project links (the C interface).
    interface: Interface = DEFAULT_INTERFACE
    # Flash and RAM the rest of the firmware takes (the application, other models): the
    # budget check and --weights auto hold the model to what is left of the board's.
    reserve_flash: int = 0
    reserve_ram: int = 0


def model_name(source: ModelSource, requested: str | None) -> str:
    if requested is not None:
        problem = name_problem(requested)
        if problem is not None:
            raise OptionError(f"--name {quoted(requested)} is not usable as the model's C "
                              f"identifier: {problem}")
        return requested
    if isinstance(source, str | Path):
        return default_name(Path(source).name.removesuffix(".onnx"))
    return "model"


def with_native(board: Board, native: bool) -> Board:
    """The host board with -march=native added when asked for; refused for a cross
    target, whose flags the board defines."""
    if not native:
        return board
    if board.is_mcu:
        raise OptionError(f"--native is for the host board; board '{board.name}' has "
                          "its own -mcpu flags")
    return replace(board, cflags=(*board.cflags, "-march=native"))


def _choice(option: str, value: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise OptionError(f"{option} '{value}': choose one of {', '.join(choices)}")
    return value


@dataclass(frozen=True)
class Target:
    """The options resolved against the board: everything that decides which kernels
    run, checked before any model is read. inspect, report, generate, run and verify
    all lower through one Target, so they cannot disagree about the code."""

    board: Board
    requant: str
    kernels: str
    weights: str  # "auto", "int8" or "int16"; auto is settled per model by wide_weights
    dsp: bool  # lay kernels out for the DSP extension
    options: Options


def resolve_target(options: Options) -> Target:
    """Check every option and settle the board's defaults. Raises OptionError."""
    board = with_native(load_board(options.board), options.native)
    requant = _choice("--requant", options.requant or board.requant, REQUANT_MODES)
    kernels = _choice("--kernels", options.kernels, KERNEL_SETS)
    _choice("--memory", options.memory, MEMORY_MODES)
    weights = _choice("--weights", options.weights, WEIGHT_WIDTHS)
    check_qdq_rules(options.qdq_rules)
    check_interface(options.interface)
    if options.name is not None:
        model_name("", options.name)
    check_reserves(board, options.reserve_flash, options.reserve_ram)
    dsp = board.dsp if options.dsp is None else options.dsp
    # The DSP layouts' portable C runs anywhere on the host (the tests use it); a
    # Cortex-M core without the extension cannot execute their SMLAD/SXTB16.
    if dsp and board.is_mcu and not board.dsp:
        raise OptionError(f"board '{board.name}' ({board.cpu}) has no DSP extension: its "
                          "kernels cannot use the DSP layouts")
    return Target(board, requant, kernels, weights, dsp, options)


def check_reserves(board: Board, flash: int, ram: int) -> None:
    """--reserve-flash/--reserve-ram: for a board with a budget, less than it has."""
    memory = board.memory  # what the budget check holds a model to
    for option, value, total in (
            ("--reserve-flash", flash, memory.flash_length if memory else None),
            ("--reserve-ram", ram, memory.ram_length if memory else None)):
        if value < 0:
            raise OptionError(f"{option} {value}: must not be negative")
        if value and total is None:
            raise OptionError(f"{option}: board '{board.name}' has no memory budget")
        if total is not None and value >= total:
            raise OptionError(f"{option} {value}: board '{board.name}' has {total} bytes in "
                              "all, nothing would be left for the model")


def available_flash(target: Target) -> int | None:
    """The board's flash less what --reserve-flash keeps for the rest of the firmware."""
    total = target.board.flash_bytes
    return None if total is None else total - target.options.reserve_flash


# The estimated cycles int16 weights save per MAC on a DSP core, by layer kind: the least
# of what the cycle model measured layer by layer (cortex-m4f, --weights int8 against
# int16, the four official MLPerf Tiny models; bench/wide_gain.py prints it):
# convolutions 0.13-0.20 per MAC, 0.03-0.05 where a column holds fewer than 32 taps
# (first layers over three channels, whose blocks' bookkeeping outweighs the widening);
# fully connected layers 0.19, 0.08-0.32 below 4096 MACs.
WIDE_GAIN_PER_MAC = {"conv": 0.12, "conv_short": 0.03, "fc": 0.19, "fc_small": 0.08}


@dataclass(frozen=True)
class WeightLayer:
    node: str
    weight_bytes: int  # the 8-bit weights; int16 storage adds as many
    reuse: int  # MACs per weight: output pixels of a convolution, rows of a product
    kind: str  # a key of WIDE_GAIN_PER_MAC

    @property
    def cycles_saved(self) -> float:
        """What the cycle model expects int16 weights to save in this layer (DSP cores)."""
        return WIDE_GAIN_PER_MAC[self.kind] * self.reuse * self.weight_bytes


def weight_layers(graph: Graph) -> list[WeightLayer]:
    """The layers with constant 8-bit weights that int16 storage would widen."""
    layers = []
    for node in graph.nodes:
        kind = ops.wide_weights_kind(node)
        slots = ops.product_slots(node)
        name = node.input(slots.b) if kind is not None and slots is not None else None
        if name is None or name not in graph.constants:
            continue
        weights = graph.constants[name]
        y = graph.tensors.get(node.outputs[0])
        if weights.dtype not in (np.int8, np.uint8) or y is None or not y.shape:
            continue
        conv = kind == "conv"
        features = y.shape[1] if conv else y.shape[-1]
        reuse = max(1, int(np.prod(y.shape, dtype=np.int64)) // max(1, features))
        taps = int(weights.size) // max(1, int(weights.shape[0])) if conv else 0
        macs = reuse * int(weights.size)
        kind = (("conv_short" if taps < 32 else "conv") if conv else
                ("fc_small" if macs < 4096 else "fc"))
        layers.append(WeightLayer(node.name, int(weights.nbytes), reuse, kind))
    return layers


def wide_weight_nodes(choice: str, graph: Graph, board: Board,
                      flash_bytes: int | None = None) -> frozenset[str] | None:
    """The layers whose weights are stored as int16; None: every layer.

    int8 and int16 are the weights choices; auto: int16 for every layer when the 8-bit
    constants, doubled, fit in WIDE_WEIGHTS_FLASH_SHARE of the board's flash (cortex-m4f,
    official ResNet-8, quantized I/O: 19.25 M estimated cycles with int16, 20.83 M with
    int8); otherwise for the layers the cycle model expects to save the most cycles per
    added byte first (WIDE_GAIN_PER_MAC times their MACs per weight: convolutions over
    many pixels before fully connected layers, a first layer over three channels late)
    while they fit, and none it expects no saving from. `flash_bytes` is the flash left to
    the model (default the board's; less with --reserve-flash). Never on a Cortex-M core without
    the DSP extension, whose byte kernels are both smaller and faster (the AD autoencoder
    on M0+: 2.36 M estimated cycles and 287 KB of flash, against 3.01 M and 551 KB with
    int16 weights), nor on a Helium core, whose int8 kernels take 16 bytes a product."""
    if choice != "auto":
        return None if choice == "int16" else frozenset()
    if (board.is_mcu and not board.dsp) or board.has_mve:
        return frozenset()
    flash = board.flash_bytes if flash_bytes is None else flash_bytes
    if flash is None:
        return None
    eight_bit = sum(int(v.nbytes) for v in graph.constants.values()
                    if v.dtype in (np.int8, np.uint8))
    budget = WIDE_WEIGHTS_FLASH_SHARE * flash - eight_bit
    if eight_bit <= budget:
        return None
    chosen = []
    by_gain = sorted(weight_layers(graph),
                     key=lambda w: (-w.cycles_saved / w.weight_bytes, w.node))
    for layer in by_gain:
        if layer.cycles_saved > 0 and layer.weight_bytes <= budget:
            chosen.append(layer.node)
            budget -= layer.weight_bytes
    return frozenset(chosen)


def lowering_options(target: Target, graph: Graph) -> LoweringOptions:
    """How `graph` is lowered for `target`: the one place kernel choices are made."""
    wide = wide_weight_nodes(target.weights, graph, target.board, available_flash(target))
    return LoweringOptions(requant=target.requant, kernels=target.kernels, dsp=target.dsp,
                           wide_weights=wide is None or bool(wide), wide_nodes=wide,
                           mcu=target.board.is_mcu, thumb1=target.board.is_thumb1,
                           mve=target.board.has_mve, riscv=target.board.kind == "riscv")


class OptionKeywords(TypedDict, total=False):
    """Options' fields, as the API's functions take them as keywords (tests hold the two
    equal)."""

    board: str
    name: str | None
    requant: str | None
    input_shapes: Mapping[str, tuple[int, ...]] | None
    expose_intermediates: bool
    integer_only: bool
    qdq_rules: str
    kernels: str
    memory: str
    weights: str
    dsp: bool | None
    native: bool
    limits: Limits
    interface: Interface
    reserve_flash: int
    reserve_ram: int


def with_keywords(options: Options | None, keywords: Mapping[str, Any]) -> Options:
    """`options` (default Options()) with the fields given as keywords replaced."""
    known = {f.name for f in fields(Options)}
    unknown = sorted(set(keywords) - known)
    if unknown:
        raise TypeError(f"unknown option(s) {', '.join(unknown)}; the options are "
                        f"{', '.join(sorted(known))}")
    return replace(options or Options(), **keywords)
