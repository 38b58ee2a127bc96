"""The budget of several models in one firmware (`onnx2mcu report A.onnx B.onnx --board B`):
each model alone, all of them linked together (the kernels they share once), the rest of
the firmware (--reserve-flash, --reserve-ram) and whether it all fits the board."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from codegen.backend.emitter import own_runtime_files
from codegen.core.boards import Board
from codegen.core.names import MAX_NAME_LENGTH, visible
from codegen.errors import OptionError, ToolchainError
from codegen.frontend.importer import ModelSource
from codegen.options import Options, model_name, resolve_target
from codegen.pipeline import Generated
from codegen.target.firmware import (
    Budget,
    Reserve,
    SizeProject,
    build_combined_size,
    cross_toolchain_available,
    measure_combined,
)

from .shipped import WIDE_KERNEL, firmware_entry, generate_for_board, measure_model


@dataclass(frozen=True)
class ModelCost:
    """One model measured alone, as `report --format json` gives it."""

    name: str  # its C name in the firmware
    source: str  # the model file
    budget: Budget
    weight_bytes: int
    notes: tuple[str, ...] = ()  # what its commands say of it (a float model, ...)


@dataclass(frozen=True)
class FirmwareBudget:
    board: Board
    models: tuple[ModelCost, ...]
    together: Budget  # the combined size build
    shared_arena: bool  # the arenas overlaid in one (the models run one after the other)
    reserve: Reserve

    @property
    def flash_bytes(self) -> int:
        return self.together.flash_bytes + self.reserve.flash

    @property
    def ram_bytes(self) -> int:
        return self.together.ram_bytes + self.reserve.ram

    @property
    def flash_budget(self) -> int:
        assert self.board.memory is not None
        return self.board.memory.flash_length

    @property
    def ram_budget(self) -> int:
        assert self.board.memory is not None
        return self.board.memory.ram_length

    @property
    def fits(self) -> bool:
        return self.flash_bytes <= self.flash_budget and self.ram_bytes <= self.ram_budget

    @property
    def shared_flash_bytes(self) -> int:
        """What linking the models together saves against the sum of each alone: the
        kernels, library routines and startup they share, counted once."""
        return sum(m.budget.flash_bytes for m in self.models) - self.together.flash_bytes


# Said when --weights auto's int16 weights do not fit the models together and int8 do.
NARROWED_TOGETHER = ("weights int8 in every model: --weights auto's int16 weights would not "
                     "fit the models together in the flash left; int8 weights do")


def distinct_names(models: Sequence[ModelSource]) -> list[str]:
    """The models' C names from their files; two files of one name: name_2, name_3, ...
    (within the 40 characters a name may have)."""
    names: list[str] = []
    for model in models:
        base = name = model_name(model, None)
        n = 2
        while name in names:
            name = f"{base[:MAX_NAME_LENGTH - len(str(n)) - 1]}_{n}"
            n += 1
        names.append(name)
    return names


def link_together(gens: Sequence[Generated], shared_arena: bool) -> Budget:
    """The combined size build of the models, measured."""
    projects = [SizeProject(gen.name, {**own_runtime_files(gen.name, gen.program.sources),
                                       **gen.files}, firmware_entry(gen)) for gen in gens]
    build = build_combined_size(projects, gens[0].board)
    return measure_combined(build, projects, [gen.plan.size for gen in gens],
                            sum(gen.program.caller_io_bytes for gen in gens), shared_arena)


def measure_firmware(models: Sequence[ModelSource], options: Options,
                     shared_arena: bool) -> FirmwareBudget:
    """Each model alone and all of them linked in one image (the kernels they share
    once). --weights auto weighs the models together: where their int16 weights do not
    fit the flash left and int8 weights do, every model takes int8 weights."""
    target = resolve_target(options)
    board = target.board
    if not board.is_mcu or board.memory is None:
        raise OptionError("a budget across models needs a microcontroller --board (see "
                          "`onnx2mcu boards`)")
    if not cross_toolchain_available(board.kind):
        raise ToolchainError(f"a budget across models links them with {board.cross.prefix}gcc, "
                             "which is not installed")
    names = distinct_names(models)
    gens = [generate_for_board(model, replace(options, name=name), model)
            for model, name in zip(models, names, strict=True)]
    together = link_together(gens, shared_arena)
    left = board.memory.flash_length - options.reserve_flash
    wide = any(WIDE_KERNEL.search(c.function) for gen in gens for c in gen.program.calls)
    if options.weights == "auto" and wide and together.flash_bytes > left:
        narrow = [generate_for_board(model, replace(options, name=name, weights="int8"), model)
                  for model, name in zip(models, names, strict=True)]
        narrow_together = link_together(narrow, shared_arena)
        if narrow_together.flash_bytes <= left:
            gens = [replace(gen, graph=replace(gen.graph, notes=[*gen.graph.notes,
                                                                 NARROWED_TOGETHER]))
                    for gen in narrow]
            together = narrow_together
    costs = tuple(ModelCost(gen.name, str(model) if isinstance(model, str | Path) else "",
                            measure_model(gen), gen.program.weight_bytes,
                            tuple(gen.graph.notes))
                  for model, gen in zip(models, gens, strict=True))
    return FirmwareBudget(board, costs, together, shared_arena,
                          Reserve(options.reserve_flash, options.reserve_ram))


def _row(name: str, b: Budget, weights: int | str) -> list[str]:
    other = b.static_ram_bytes - b.arena_bytes - b.io_bytes
    return [name, str(b.flash_bytes), str(weights), str(b.ram_bytes), str(b.arena_bytes),
            str(b.io_bytes), str(b.stack_bytes), str(other)]


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) if i == 0 else cell.rjust(w)
                      for i, (cell, w) in enumerate(zip(row, widths, strict=True))).rstrip()
            for row in rows]


def _percent(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.1f}%"


def format_budget_text(report: FirmwareBudget) -> str:
    b = report.together
    arenas = ("arenas overlaid in one (--shared-arena: the models run one after the other "
              "in one buffer)" if report.shared_arena else "one arena per model")
    lines = [f"board {report.board.name}: {len(report.models)} models in one firmware, "
             f"their kernels linked once; {arenas}"]
    lines += [f"note: {visible(m.name)}: {visible(note)}" for m in report.models
              for note in m.notes]
    rows = [["model", "flash", "weights", "RAM", "arena", "in/out", "stack", "other"]]
    rows += [_row(visible(m.name), m.budget, m.weight_bytes) for m in report.models]
    rows.append(_row("together", b, sum(m.weight_bytes for m in report.models)))
    lines += _table(rows)
    lines.append(f"shared: {report.shared_flash_bytes} bytes of flash counted once "
                 "(kernels, library routines, startup) against the sum of the models alone")
    lines.append(f"stack: the deepest model's ({b.stack_bytes} bytes), as they run one after "
                 "the other")
    if report.reserve.flash or report.reserve.ram:
        lines.append(f"rest of the firmware (reserved): flash {report.reserve.flash}, RAM "
                     f"{report.reserve.ram} bytes")
    lines.append(f"flash: {report.flash_bytes} of {report.flash_budget} bytes "
                 f"({_percent(report.flash_bytes, report.flash_budget)})")
    lines.append(f"RAM: {report.ram_bytes} of {report.ram_budget} bytes "
                 f"({_percent(report.ram_bytes, report.ram_budget)})")
    if report.fits:
        lines.append(f"result: fits, {report.flash_budget - report.flash_bytes} bytes of "
                     f"flash and {report.ram_budget - report.ram_bytes} bytes of RAM to spare")
    else:
        over = [f"{what} by {used - budget} bytes" for what, used, budget in (
            ("flash", report.flash_bytes, report.flash_budget),
            ("RAM", report.ram_bytes, report.ram_budget)) if used > budget]
        hint = "" if report.shared_arena else "; --shared-arena overlays the arenas"
        lines.append(f"result: does NOT fit: over in {' and '.join(over)}{hint}")
    return "\n".join(lines) + "\n"


def _budget_json(b: Budget) -> dict[str, int]:
    return {"flash_bytes": b.flash_bytes, "ram_bytes": b.ram_bytes,
            "arena_bytes": b.arena_bytes, "io_bytes": b.io_bytes,
            "stack_bytes": b.stack_bytes, "static_ram_bytes": b.static_ram_bytes}


def format_budget_json(report: FirmwareBudget) -> str:
    data = {
        "board": report.board.name,
        "shared_arena": report.shared_arena,
        "models": [{"name": m.name, "source": m.source, "weight_bytes": m.weight_bytes,
                    **_budget_json(m.budget), "notes": list(m.notes)} for m in report.models],
        "together": _budget_json(report.together),
        "shared_flash_bytes": report.shared_flash_bytes,
        # As `report --format json` of one model: the budgets are the board's memory less
        # the reserves, against which the models' bytes (together) are held.
        "flash_reserved": report.reserve.flash, "ram_reserved": report.reserve.ram,
        "flash_budget": report.flash_budget - report.reserve.flash,
        "ram_budget": report.ram_budget - report.reserve.ram,
        "fits": report.fits,
    }
    return json.dumps(data, indent=2) + "\n"


BUDGET_FORMATS: dict[str, Callable[[FirmwareBudget], str]] = {
    "text": format_budget_text, "json": format_budget_json}
