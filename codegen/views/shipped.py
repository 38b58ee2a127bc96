"""The program a command builds for its board, the one `generate` ships: the pipeline's,
with refusals explained (views/refusal.py), and --weights auto settled on what the build
takes of the flash left for the model."""

from __future__ import annotations

import re
from dataclasses import replace

from codegen.backend.emitter import own_runtime_files
from codegen.frontend.importer import ModelSource
from codegen.options import Options, Target, resolve_target
from codegen.pipeline import Generated
from codegen.target.firmware import (
    Budget,
    build_firmware,
    cross_toolchain_available,
    measure_budget,
)

from .refusal import generate_explained

WIDE_KERNEL = re.compile(r"_w16p?_")
NARROWED = ("weights int8: --weights auto's int16 weights (and the kernels of both widths) "
            "would not fit the flash left; int8 weights do")


def firmware_entry(gen: Generated) -> str:
    """The function the application calls: with quantized I/O in the arena, NAME_invoke."""
    return f"{gen.name}_invoke" if gen.program.io == "quantized" else f"{gen.name}_run"


def measure_model(gen: Generated) -> Budget:
    """Flash and RAM of the model alone on its Cortex-M board (the size build; a project
    on a shared runtime measured with the kernels it calls, as it links)."""
    files = {**own_runtime_files(gen.name, gen.program.sources), **gen.files}
    build = build_firmware(files, gen.name, gen.board, harness=False)
    return measure_budget(build, firmware_entry(gen), gen.plan.size,
                          gen.program.caller_io_bytes)


def generate_for_board(model: ModelSource, options: Options | Target,
                       shown: ModelSource | None = None) -> Generated:
    """Every stage in memory, refusals explained, and --weights auto settled on the build:
    int16 weights are chosen from the weights' bytes alone, so where the build with them
    does not fit the flash left (the board's less --reserve-flash) and the build with
    int8 weights does, the model takes int8 weights, said in a note. Measured only where
    that could happen: int16 weights on a Cortex-M board, taking a quarter of that flash
    or more."""
    target = options if isinstance(options, Target) else resolve_target(options)
    gen = generate_explained(model, target, shown)
    board, chosen = target.board, target.options
    left = None if board.memory is None else board.memory.flash_length - chosen.reserve_flash
    if chosen.weights != "auto" or not board.is_mcu or left is None \
            or not cross_toolchain_available(board.kind) \
            or not any(WIDE_KERNEL.search(c.function) for c in gen.program.calls) \
            or gen.program.weight_bytes * 4 < left:
        return gen
    if measure_model(gen).flash_bytes <= left:
        return gen
    narrow = generate_explained(model, resolve_target(replace(chosen, weights="int8")), shown)
    if measure_model(narrow).flash_bytes > left:
        return gen
    return replace(narrow, graph=replace(narrow.graph, notes=[*narrow.graph.notes, NARROWED]))
