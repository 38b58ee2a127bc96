"""The stages in order: import -> passes -> lowering -> planning -> emission."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import onnx

from .boards import Board, load_board
from .emitter import default_name, emit_project, estimate_source_bytes, is_valid_name
from .errors import UnsupportedError
from .importer import ModelSource, import_model, load_model
from .ir import Graph
from .limits import DEFAULT_LIMITS, Limits, check_limit
from .lowering import lower_graph
from .ops import LoweringOptions
from .passes import check_qdq_rules, expose_intermediates, run_passes
from .planner import ArenaPlan, plan_arena
from .program import Program

REQUANT_MODES = ("float", "int")
KERNEL_SETS = ("fast", "reference")


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
    # Tensor, arena and generated-source sizes over which a model is refused.
    limits: Limits = DEFAULT_LIMITS


@dataclass
class Generated:
    model: onnx.ModelProto
    graph: Graph
    program: Program
    plan: ArenaPlan
    board: Board
    files: dict[str, bytes]
    rewrites: dict[str, list[str]]
    qdq_rules: str  # the platform rules the graph follows: "x86" or "arm"

    @property
    def name(self) -> str:
        return self.program.name


def model_name(source: ModelSource, requested: str | None) -> str:
    if requested is not None:
        if not is_valid_name(requested):
            raise UnsupportedError(f"--name '{requested}' is not usable as a C identifier: use "
                                   "a letter followed by letters, digits or '_' (max 63), "
                                   "not a C keyword")
        return requested
    if isinstance(source, str | Path):
        return default_name(Path(source).name.removesuffix(".onnx"))
    return "model"


def check_sizes(program: Program, plan: ArenaPlan, limits: Limits) -> None:
    """Refuse a model whose arena or sources would be over the limits, before emitting:
    the generator never writes half a project, nor formats gigabytes of C."""
    check_limit(f"model '{program.name}': the activation arena needs {plan.size} bytes",
                plan.size, limits, "max_arena_bytes")
    estimate = estimate_source_bytes(program)
    check_limit(f"model '{program.name}': the generated C would take about {estimate} bytes",
                estimate, limits, "max_source_bytes")


def generate_sources(source: ModelSource, options: Options) -> Generated:
    """Run every stage in memory; nothing is written to disk."""
    board = load_board(options.board)
    requant = options.requant or board.requant
    if requant not in REQUANT_MODES:
        raise UnsupportedError(f"--requant '{requant}': choose one of {', '.join(REQUANT_MODES)}")
    name = model_name(source, options.name)
    model = load_model(source, options.limits)
    graph = import_model(model, options.input_shapes, options.limits)
    check_qdq_rules(options.qdq_rules)
    recipes = run_passes(graph, options.integer_only, options.qdq_rules)
    graph = recipes.graph
    if options.expose_intermediates:
        graph = expose_intermediates(graph)
    if options.kernels not in KERNEL_SETS:
        raise UnsupportedError(f"--kernels '{options.kernels}': choose one of "
                               f"{', '.join(KERNEL_SETS)}")
    program = lower_graph(graph, name, LoweringOptions(requant=requant, kernels=options.kernels,
                                                       dsp=board.dsp))
    plan = plan_arena(program)
    check_sizes(program, plan, options.limits)
    note = model.graph.name or ""
    files = emit_project(program, plan, board, source_note=note)
    return Generated(model, graph, program, plan, board, files, recipes.rewrites,
                     recipes.qdq_rules)
