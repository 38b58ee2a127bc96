"""`onnx2mcu boards`: the targets as one table, a row per board file.

Pure: the same boards give the same text. Columns are as wide as their widest cell, so
no text is cut; a board file's description is the user's and may hold anything, so its
control characters become spaces (one board, one line)."""

from __future__ import annotations

from collections.abc import Sequence

from codegen.core.boards import Board

HEADER = ("board", "core", "FPU", "DSP", "RAM", "flash", "clock", "QEMU", "description")
# Numbers read best right-aligned; the rest is text, left-aligned.
RIGHT_ALIGNED = frozenset({"RAM", "flash", "clock"})
GAP = "  "
KB = 1024
MB = 1024 * KB


def format_size(size: int | None) -> str:
    """`2 MB` for a whole number of MB, else `96 KB`, else bytes; `-` when unknown."""
    if size is None:
        return "-"
    if size and size % MB == 0:
        return f"{size // MB} MB"
    if size % KB == 0:
        return f"{size // KB} KB"
    return f"{size} B"


def format_clock(hz: int | None) -> str:
    """`84 MHz`, `12.288 MHz` (exact, no rounding); `-` when unknown."""
    if hz is None:
        return "-"
    whole, rest = divmod(hz, 1_000_000)
    fraction = f".{rest:06d}".rstrip("0") if rest else ""
    return f"{whole}{fraction} MHz"


def _yes_no(flag: bool) -> str:
    return "yes" if flag else "no"


def _printable(text: str) -> str:
    return "".join(c if c.isprintable() else " " for c in text)


def board_row(board: Board) -> tuple[str, ...]:
    """One board's cells, in HEADER's order. RAM and flash are what the budget holds a
    model to (the linker memory map, the largest contiguous RAM), else the part's."""
    memory = board.memory
    ram = memory.ram_length if memory else board.ram_bytes
    flash = memory.flash_length if memory else board.flash_bytes
    return (
        board.name,
        board.cpu,
        _yes_no(board.fpu) if board.is_mcu else "-",
        _yes_no(board.dsp),
        format_size(ram),
        format_size(flash),
        format_clock(board.clock_hz),
        board.qemu_machine or "-",
        _printable(board.description),
    )


def format_board_table(boards: Sequence[Board]) -> str:
    """The table of `onnx2mcu boards`: a header line, then one line per board, in the
    order given; the text ends in a newline."""
    rows = [HEADER, *(board_row(b) for b in boards)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER))]
    lines = []
    for row in rows:
        cells = [cell.rjust(width) if title in RIGHT_ALIGNED else cell.ljust(width)
                 for cell, width, title in zip(row, widths, HEADER, strict=True)]
        cells[-1] = row[-1]  # the last column: no padding at the end of the line
        lines.append(GAP.join(cells))
    return "\n".join(lines) + "\n"
