"""The shipped board files and the table `onnx2mcu boards` prints: every file in boards/
loads and passes its checks, the parts' memories and clocks are the datasheets', each
board's flags name its own core (and arm-none-eabi-gcc takes them, where installed), and
the table has a row per board with nothing cut."""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from codegen.core.boards import Board, board_problems, list_boards, load_board
from codegen.core.resources import boards_dir
from codegen.views.boards import (
    HEADER,
    board_row,
    format_board_table,
    format_clock,
    format_size,
)

KB = 1024
MB = 1024 * KB
BOARD_FILES = sorted(boards_dir().glob("*.toml"))
BOARDS = list_boards()
CORTEX_M = [b for b in BOARDS if b.is_cortex_m]

# name: (cpu, FPU, RAM, flash, clock, flash origin, RAM origin), from the vendors' data.
PARTS: dict[str, tuple[str, bool, int, int, int, int, int]] = {
    "nucleo-f401re": ("cortex-m4", True, 96 * KB, 512 * KB, 84_000_000,
                      0x08000000, 0x20000000),
    "nucleo-f411re": ("cortex-m4", True, 128 * KB, 512 * KB, 100_000_000,
                      0x08000000, 0x20000000),
    "nucleo-l432kc": ("cortex-m4", True, 64 * KB, 256 * KB, 80_000_000,
                      0x08000000, 0x20000000),
    "nucleo-g071rb": ("cortex-m0plus", False, 36 * KB, 128 * KB, 64_000_000,
                      0x08000000, 0x20000000),
    "b-u585i-iot02a": ("cortex-m33", True, 768 * KB, 2 * MB, 160_000_000,
                       0x08000000, 0x20000000),
    "nrf52-dk": ("cortex-m4", True, 64 * KB, 512 * KB, 64_000_000, 0x00000000, 0x20000000),
    "nrf5340-dk": ("cortex-m33", True, 512 * KB, 1 * MB, 128_000_000,
                   0x00000000, 0x20000000),
    "arduino-zero": ("cortex-m0plus", False, 32 * KB, 256 * KB, 48_000_000,
                     0x00000000, 0x20000000),
    "teensy41": ("cortex-m7", True, 512 * KB, 7936 * KB, 600_000_000,
                 0x60000000, 0x20000000),
}
# The generic core files whose [qemu] table a real part on that core copies.
GENERIC = {"cortex-m4": "cortex-m4f", "cortex-m0plus": "cortex-m0plus",
           "cortex-m7": "cortex-m7", "cortex-m33": "cortex-m33"}
# The FPUs each core comes with (an M7 has a single- or a double-precision one).
FPUS = {"cortex-m4": {"fpv4-sp-d16"}, "cortex-m7": {"fpv5-sp-d16", "fpv5-d16"},
        "cortex-m33": {"fpv5-sp-d16"},
        # the M55's FPU and MVE come with -mcpu (-mfpu=auto)
        "cortex-m55": {"auto"}}


def flag(board: Board, prefix: str) -> str | None:
    values = [f.removeprefix(prefix) for f in board.cflags if f.startswith(prefix)]
    assert len(values) <= 1, (board.name, prefix, values)
    return values[0] if values else None


@pytest.mark.parametrize("path", BOARD_FILES, ids=lambda p: p.stem)
def test_every_board_file_loads(path: Path) -> None:
    assert board_problems(tomllib.loads(path.read_text())) == []
    board = load_board(path.stem)
    assert board.name == path.stem and board.description
    assert path.stem == path.stem.lower()
    if board.is_cortex_m:
        assert board.memory and board.qemu_memory and board.qemu_machine and board.clock_hz


def test_list_boards_lists_every_file() -> None:
    assert [b.name for b in BOARDS] == [p.stem for p in BOARD_FILES]
    assert set(PARTS) <= {b.name for b in BOARDS}
    assert "rp2040" not in {b.name for b in BOARDS}  # the Pico's part: rpi-pico


@pytest.mark.parametrize("name", PARTS)
def test_a_real_part_has_its_datasheet_memory_and_clock(name: str) -> None:
    cpu, fpu, ram, flash, clock, flash_origin, ram_origin = PARTS[name]
    board = load_board(name)
    assert (board.cpu, board.fpu, board.dsp) == (cpu, fpu, fpu)
    assert (board.ram_bytes, board.flash_bytes, board.clock_hz) == (ram, flash, clock)
    assert board.memory is not None
    assert (board.memory.flash_origin, board.memory.flash_length) == (flash_origin, flash)
    assert (board.memory.ram_origin, board.memory.ram_length) == (ram_origin, ram)
    assert board.requant == ("float" if fpu else "int")
    if fpu:
        assert flag(board, "-mfpu=") == {"cortex-m4": "fpv4-sp-d16", "cortex-m7": "fpv5-d16",
                                         "cortex-m33": "fpv5-sp-d16"}[cpu]
    # The QEMU machine is the generic core file's, memory and all.
    generic = load_board(GENERIC[cpu])
    assert (board.qemu_machine, board.qemu_memory) == (generic.qemu_machine,
                                                       generic.qemu_memory)


@pytest.mark.parametrize("name", PARTS)
def test_a_real_part_is_described_by_the_pattern(name: str) -> None:
    """'Vendor BOARD (PART, Core, N KB RAM, M KB/MB flash)'."""
    description = load_board(name).description
    assert re.fullmatch(r"\S+ [^(]+ \([^,]+, Cortex-M[0-9]+[+F]?, [0-9.]+ [KM]B RAM, "
                        r"[0-9]+ [KM]B flash\)", description), description


@pytest.mark.parametrize("board", CORTEX_M, ids=lambda b: b.name)
def test_the_flags_name_the_boards_core(board: Board) -> None:
    assert flag(board, "-mcpu=") == board.cpu
    assert "-mthumb" in board.cflags
    if board.fpu:
        assert flag(board, "-mfloat-abi=") == "hard"
        assert flag(board, "-mfpu=") in FPUS[board.cpu]
        assert board.requant == "float"
    else:
        assert flag(board, "-mfloat-abi=") == "soft" and flag(board, "-mfpu=") is None
        assert board.requant == "int"


@pytest.mark.skipif(not shutil.which("arm-none-eabi-gcc"), reason="needs arm-none-eabi-gcc")
@pytest.mark.parametrize("board", CORTEX_M, ids=lambda b: b.name)
def test_arm_none_eabi_gcc_takes_the_flags(board: Board, tmp_path: Path) -> None:
    source = tmp_path / "empty.c"
    source.write_text("int board_probe;\n")
    result = subprocess.run(["arm-none-eabi-gcc", *board.cflags, "-Werror", "-c",
                             str(source), "-o", str(tmp_path / "empty.o")],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_the_table_has_a_row_per_board_with_nothing_cut() -> None:
    table = format_board_table(BOARDS)
    assert table.endswith("\n") and not table.endswith("\n\n")
    lines = table.splitlines()
    assert len(lines) == 1 + len(BOARDS)
    assert lines[0].split() == [*HEADER[:7], "QEMU", "description"]
    # Each column starts at the same place on every line, and every cell is whole.
    starts = [m.start() for m in re.finditer(r"(?:^|(?<=  ))\S", lines[0])]
    assert len(starts) == len(HEADER)
    for line, board in zip(lines[1:], BOARDS, strict=True):
        cells = board_row(board)
        assert line.startswith(f"{board.name} ") and line.endswith(board.description)
        assert line == line.rstrip()
        assert line[starts[-1]:] == board.description
        assert re.split(r" {2,}", line, maxsplit=len(HEADER) - 1) == list(cells)


def test_the_table_cells() -> None:
    rows = {b.name: board_row(b) for b in BOARDS}
    assert rows["nucleo-f401re"][:8] == ("nucleo-f401re", "cortex-m4", "yes", "yes",
                                         "96 KB", "512 KB", "84 MHz", "mps2-an386")
    assert rows["b-u585i-iot02a"][4:7] == ("768 KB", "2 MB", "160 MHz")
    assert rows["nucleo-g071rb"][2:4] == ("no", "no")
    assert rows["teensy41"][4:6] == ("512 KB", "7936 KB")
    assert rows["host"][2:8] == ("-", "no", "-", "-", "-", "-")


def test_sizes_and_clocks() -> None:
    assert [format_size(n) for n in (None, 96 * KB, 2 * MB, 7936 * KB, 1000, 0)] == [
        "-", "96 KB", "2 MB", "7936 KB", "1000 B", "0 KB"]
    assert [format_clock(n) for n in (None, 84_000_000, 12_288_000, 32_768)] == [
        "-", "84 MHz", "12.288 MHz", "0.032768 MHz"]


def test_a_description_cannot_break_a_row() -> None:
    board = Board(name="mine", description="line one\nline two\tand\x1b[2J", kind="host",
                  cpu="host", cflags=(), requant="float")
    table = format_board_table([board])
    assert len(table.splitlines()) == 2
    assert table.splitlines()[1].endswith("line one line two and [2J")


def test_flash_timing_is_checked_field_by_field(tmp_path: Path) -> None:
    """[flash_timing]: each bad field named; the real parts with an ART accelerator carry
    theirs (wait states at their clock, cache lines), the generic cores none."""
    from codegen.core.boards import load_board as load
    from codegen.errors import OptionError

    text = (boards_dir() / "cortex-m4f.toml").read_text()
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace("[memory]", "[flash_timing]\nwait_states = 40\nline_bytes = 24\n"
                                            "icache_line = 3\n\n[memory]", 1))
    with pytest.raises(OptionError) as error:
        load(str(bad))
    message = str(error.value)
    assert "unknown field 'flash_timing.icache_line'" in message
    assert "field 'flash_timing.wait_states' must be an integer from 0 to 32 (got 40)" in message
    assert "field 'flash_timing.line_bytes' must be a power of two (got 24)" in message
    assert load("cortex-m4f").flash_timing is None
    timing = load("nucleo-l4r5zi").flash_timing
    assert timing is not None and (timing.wait_states, timing.line_bytes) == (5, 32)


def test_a_vector_table_away_from_flash_gets_its_own_region(tmp_path: Path) -> None:
    """vector_origin (the Corstone-300's M55 reads its vectors from the ITCM at reset):
    checked like the other addresses; both linker scripts place the table alone there,
    and a board without it keeps the table at the start of its flash."""
    from zoo import quantized_model

    from codegen.core.boards import load_board as load
    from codegen.errors import OptionError
    from codegen.options import Options
    from codegen.pipeline import generate_sources

    m55 = load("cortex-m55")
    assert m55.memory is not None and m55.memory.vector_origin == 0x10000000
    assert m55.qemu_memory is not None and m55.qemu_memory.vector_origin == 0x10000000
    text = (boards_dir() / "cortex-m55.toml").read_text()
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace("vector_origin = 0x10000000", "vector_origin = -4", 1))
    with pytest.raises(OptionError, match=re.escape("field 'memory.vector_origin' must be "
                                                    "a non-negative 32-bit integer")):
        load(str(bad))
    gen = generate_sources(quantized_model("ad_autoencoder", "i8-pc"),
                           Options(board="cortex-m55"))
    for script in (f"{gen.name}.ld", f"{gen.name}_qemu.ld"):
        ld = gen.files[script].decode()
        assert "VECTORS (rx) : ORIGIN = 0x10000000, LENGTH = 64" in ld
        assert ".isr_vector : { KEEP(*(.isr_vector)) } > VECTORS" in ld
    plain = generate_sources(quantized_model("ad_autoencoder", "i8-pc"),
                             Options(board="cortex-m4f")).files
    ld = next(v.decode() for k, v in plain.items() if k.endswith("_qemu.ld"))
    assert "VECTORS" not in ld and ".isr_vector : { KEEP(*(.isr_vector)) } > FLASH" in ld
