"""The budget of several models in one firmware (`onnx2mcu report A.onnx B.onnx --board B`):
each model alone, all of them linked together (the kernels they share once), the rest of
the firmware (--reserve-flash, --reserve-ram) and whether it all fits the board."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from codegen.core.boards import Board
from codegen.core.names import visible
from codegen.target.firmware import Budget, Reserve


@dataclass(frozen=True)
class ModelCost:
    """One model measured alone, as `report --format json` gives it."""

    name: str  # its C name in the firmware
    source: str  # the model file
    budget: Budget
    weight_bytes: int


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
                    **_budget_json(m.budget)} for m in report.models],
        "together": _budget_json(report.together),
        "shared_flash_bytes": report.shared_flash_bytes,
        "reserve": {"flash_bytes": report.reserve.flash, "ram_bytes": report.reserve.ram},
        "flash_bytes": report.flash_bytes, "flash_budget": report.flash_budget,
        "ram_bytes": report.ram_bytes, "ram_budget": report.ram_budget,
        "fits": report.fits,
    }
    return json.dumps(data, indent=2) + "\n"


BUDGET_FORMATS: dict[str, Callable[[FirmwareBudget], str]] = {
    "text": format_budget_text, "json": format_budget_json}
