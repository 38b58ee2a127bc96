"""The stages in order: import -> passes -> lowering -> planning -> emission."""

from __future__ import annotations

from dataclasses import dataclass, replace

import onnx

from codegen.backend.emitter import emit_project, estimate_source_bytes
from codegen.backend.io_boundary import boundary_quantizers, quantized_io
from codegen.backend.lowering import lower_graph
from codegen.backend.planner import ArenaPlan, plan_arena
from codegen.core.boards import Board
from codegen.core.ir import Graph
from codegen.core.limits import Limits, check_limit
from codegen.core.program import Program
from codegen.frontend.importer import ModelSource, import_model, load_model
from codegen.transform.bands import band_candidates
from codegen.transform.schedule import schedule_for_memory

from .options import Options, Target, lowering_options, model_name, resolve_target
from .transform import Recipes, expose_intermediates, run_passes


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


def check_sizes(program: Program, plan: ArenaPlan, limits: Limits) -> None:
    """Refuse a model whose arena or sources would be over the limits, before emitting:
    the generator never writes half a project, nor formats gigabytes of C."""
    check_limit(f"model '{program.name}': the activation arena needs {plan.size} bytes",
                plan.size, limits, "max_arena_bytes")
    estimate = estimate_source_bytes(program)
    check_limit(f"model '{program.name}': the generated C would take about {estimate} bytes",
                estimate, limits, "max_source_bytes")


def prepare_graph(model: onnx.ModelProto, target: Target) -> Recipes:
    """Import the model and apply the QDQ recipes (ORT's, or --integer-only's)."""
    options = target.options
    graph = import_model(model, options.input_shapes, options.limits)
    return run_passes(graph, options.integer_only, options.qdq_rules)


def generate_sources(source: ModelSource, options: Options | Target) -> Generated:
    """Run every stage in memory; nothing is written to disk. (The API reports a refusal
    with what would work: codegen/views/refusal.py.)"""
    target = options if isinstance(options, Target) else resolve_target(options)
    return _generate_sources(source, target)


def memory_candidates(graph: Graph, memory: str, io: str = "float",
                      kernels: str = "fast") -> list[Graph]:
    """The graphs whose arenas --memory chooses from: the graph, and with min, its
    banded rewrites. With quantized I/O the QuantizeLinear of a graph input stays whole
    (the caller writes its output: the quantized input). With the fast kernels a
    depthwise band reads its window's rows from the bands themselves."""
    if memory != "min":
        return [graph]
    return [graph, *band_candidates(graph, keep_whole=boundary_quantizers(graph, io),
                                    gather=kernels == "fast")]


def lower_and_plan(graph: Graph, name: str, target: Target) -> tuple[Program, ArenaPlan]:
    """The program and its arena: of every layer whole, or with --memory min, of the
    banded rewrites too (codegen/transform/bands.py), the one with the smallest arena (the
    fewest calls of equal ones)."""
    lowering = lowering_options(target, graph)
    io = target.options.interface.io
    best: tuple[Program, ArenaPlan] | None = None
    bound = None
    for candidate in memory_candidates(graph, target.options.memory, io,
                                       target.options.kernels):
        program = quantized_io(lower_graph(candidate, name, lowering), io)
        plan = plan_arena(program)
        if candidate is graph:
            bound = plan.lower_bound
        if best is None or (plan.size, len(program.calls)) < \
                (best[1].size, len(best[0].calls)):
            best = (program, plan)
    assert best is not None
    # The lower bound stays the model's: of its whole tensors, bands or not.
    return best[0], replace(best[1], lower_bound=bound if bound is not None else
                            best[1].lower_bound)


def _generate_sources(source: ModelSource, target: Target) -> Generated:
    options = target.options
    name = model_name(source, options.name)
    model = load_model(source, options.limits)
    recipes = prepare_graph(model, target)
    graph = recipes.graph
    if options.expose_intermediates:
        graph = expose_intermediates(graph)
    graph = schedule_for_memory(graph)
    program, plan = lower_and_plan(graph, name, target)
    check_sizes(program, plan, options.limits)
    note = model.graph.name or ""
    files = emit_project(program, plan, target.board, source_note=note,
                         interface=options.interface)
    return Generated(model, graph, program, plan, target.board, files, recipes.rewrites,
                     recipes.qdq_rules)
