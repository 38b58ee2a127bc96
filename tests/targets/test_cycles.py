"""The cycle model against hand-written sequences whose cycles come from the Cortex-M4
and Cortex-M0+ Technical Reference Manuals (tests/cycles/sequences.S), run in QEMU with
the counting plugin; and its instruction classes on real model images."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import codegen
import codegen.api
from codegen.core.boards import FlashTiming, load_board
from codegen.target.cycles import (
    Instruction,
    base_mnemonic,
    disassemble,
    instruction_costs,
    known_mnemonic,
    parse_disassembly,
)
from codegen.target.qemu import measure_marked_region

CROSS_TOOLS = shutil.which("arm-none-eabi-gcc") and shutil.which("qemu-system-arm")
needs_cross_tools = pytest.mark.skipif(not CROSS_TOOLS,
                                       reason="needs arm-none-eabi-gcc and qemu-system-arm")
SEQUENCES = Path(__file__).resolve().parents[1] / "cycles" / "sequences.S"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tiny_cnn_qop.onnx"

# The call into a sequence and the return from it, beyond what the empty region costs:
# M4: the NOP (1), BLX (1 + 2 refill from a register), the sequence's BX LR (1 + 2);
# M0+: NOP (1), BLX (2), BX LR (2).
OVERHEAD = {"cortex-m4f": 7, "cortex-m0plus": 5}
# Each sequence's own cycles (TRM table 3-1 of each core), its BX LR return excluded.
COMMON = {
    "seq_empty": 0,
    "seq_alu": 10,  # ten ADDS, 1 each
    "seq_loop": 300,  # MOVS 1; 100 x SUBS 1; 99 taken BNE 2 (1 + 1 refill), the last 1
    "seq_multiply": 5,  # MOVS 1, MOVS 1, 3 x MULS 1 (M0+'s fast multiplier)
}
EXPECTED = {
    "cortex-m4f": {
        **COMMON,
        "seq_load_pipelined": 4,  # LDR 2, then LDR 1 and LDR 1 pipelined behind it
        "seq_load_dependent": 4,  # LDR 2; LDR 2: its address is the first one's result
        "seq_address_stall": 4,  # ADDS 1; LDR 2 + 1: its base was written just before
        "seq_load_multiple": 7,  # LDRD 1 + 2; LDM of three 1 + 3
        "seq_stores": 5,  # MOVS 1, NOP 1, STR immediate 1, STR register offset 2
        "seq_dsp": 10,  # SMLAD 1, MUL 1, SMULL 1, SDIV 7 (the model's fixed figure)
        # VMOV S<-R 2, VADD 1, VMLA 3, VDIV 14, VMOV R<-S 2, VLDR.32 2, VLDR.64 3,
        # VPUSH of two 1 + 2, VPOP of two 1 + 2
        "seq_float": 33,
        "seq_branch_aligned": 3,  # B taken 1 + 1, ADD.W 1
        "seq_branch_unaligned": 4,  # B taken 1 + 1, + 1 to a 32-bit halfword target, 1
        "seq_branch_register": 6,  # ADR 1, ADDS 1, BX 1 + 2, NOP 1
        # PUSH of two 1 + 2, BL 1 + 1, the callee's BX LR 1 + 2, POP {r4, pc} 1 + 2 + 3
        # (a load to the PC), instead of the BX LR return (3)
        "seq_call_pop_pc": 11,
        # MOVS 1; per pass LDR 2, LDR 1 (pipelined), SMLAD 1, SUBS 1, BNE 2 (the last 1);
        # the nine taken BNEs land on a 32-bit LDR at a halfword address: + 1 each
        "seq_dot_loop": 79,
        "seq_literal": 3,  # LDR from the literal pool 2, LDR pipelined 1
        # LDR 2 + 2 (a word at an odd address: three bus accesses), LDR pipelined 1 + 1 (at
        # a halfword address: two), LDRH pipelined 1 + 1 (at an odd address: two)
        "seq_unaligned": 8,
    },
    "cortex-m0plus": {
        **COMMON,
        "seq_loads_stores": 6,  # LDR 2, LDR 2, STR 2: no pipelining on M0+
        "seq_push_pop_pc": 12,  # PUSH of five 1 + 5, POP with the PC 3 + 5, less BX LR 2
        "seq_call_pop_pc": 9,  # PUSH 2, BL 3, callee BX LR 2, POP {pc} 4, less BX LR 2
        "seq_load_store_multiple": 8,  # LDM of three 1 + 3, STM of three 1 + 3
        "seq_branch": 3,  # B taken 2, ADDS 1
    },
}
CASES = [(board, name) for board, table in EXPECTED.items() for name in table]


@pytest.fixture(scope="module")
def firmware_parts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Startup code and QEMU linker script of a generated project, per board."""
    parts = {}
    for board in EXPECTED:
        out = tmp_path_factory.mktemp(board)
        codegen.generate(str(EXAMPLE), out / "project", board=board)
        parts[board] = out / "project"
    return parts


def build_sequence_image(project: Path, board: str, sequence: str, out: Path) -> Path:
    """An image whose main measures one sequence, on the project's startup code."""
    main = out / "main.c"
    main.write_text(
        "#include <stdint.h>\n"
        "void measure(void *buffer, void (*sequence)(void));\n"
        f"void {sequence}(void);\n"
        "static uint32_t buffer[64] __attribute__((aligned(8)));\n"
        "int main(void)\n{\n"
        "    buffer[0] = (uint32_t)(uintptr_t)buffer;\n"
        f"    measure(buffer, {sequence});\n"
        "    return 0;\n}\n")
    cflags = list(load_board(board).cflags)
    script = next(project.glob("*_qemu.ld"))
    elf = out / f"{sequence}.elf"
    subprocess.run(["arm-none-eabi-gcc", *cflags, "-nostartfiles", "--specs=nano.specs",
                    "--specs=rdimon.specs", "-T", str(script), "-o", str(elf),
                    str(project / "startup.c"), str(main), str(SEQUENCES)],
                   check=True, capture_output=True, text=True)
    return elf


@needs_cross_tools
@pytest.mark.parametrize(("board", "sequence"), CASES)
def test_sequence_cycles_match_the_manuals(board: str, sequence: str,
                                           firmware_parts: dict[str, Path],
                                           tmp_path: Path) -> None:
    elf = build_sequence_image(firmware_parts[board], board, sequence, tmp_path)
    model = "cortex-m4" if board == "cortex-m4f" else "cortex-m0plus"
    _, cycles, _ = measure_marked_region(elf, load_board(board), model)
    assert cycles - OVERHEAD[board] == EXPECTED[board][sequence]


@needs_cross_tools
@pytest.mark.parametrize("board", ["cortex-m4f", "cortex-m0plus"])
def test_every_instruction_of_a_model_image_has_a_class(board: str, tmp_path: Path) -> None:
    """The classifier knows every mnemonic the compiler emits for a model, the C library
    included (an unknown one would silently cost 1)."""
    from zoo import quantized_model

    from codegen.options import Options
    from codegen.pipeline import generate_sources
    from codegen.target.firmware import build_firmware

    for name in ("dscnn", "mobilenet_v1_025"):
        gen = generate_sources(quantized_model(name, "i8-pc"), Options(board=board))
        build = build_firmware(gen.files, gen.name, gen.board)
        unknown = {i.mnemonic for i in disassemble(build.elf) if not known_mnemonic(i)}
        assert not unknown, unknown


@needs_cross_tools
@pytest.mark.parametrize("timing", [None, FlashTiming(3, 16, 64, 0)])
def test_flash_resident_loads_stall_per_missed_line(timing: FlashTiming | None,
                                                    firmware_parts: dict[str, Path],
                                                    tmp_path: Path) -> None:
    """Eight word loads of a 32-byte table in flash against the same loads from RAM, by
    the same code at the same line offsets: the board figure differs by the wait states
    of each data line that misses. NUCLEO-L4R5ZI: 32-byte lines behind an 8-line data
    cache, one miss of 5; without a data cache and with 16-byte lines, all eight miss."""
    board = load_board("nucleo-l4r5zi")
    if timing is not None:
        board = replace(board, flash_timing=timing)
    assert board.flash_timing is not None
    waits = {}
    for sequence in ("seq_flash_loads", "seq_ram_loads"):
        (tmp_path / sequence).mkdir()
        elf = build_sequence_image(firmware_parts["cortex-m4f"], "cortex-m4f", sequence,
                                   tmp_path / sequence)
        _, cycles, waited = measure_marked_region(elf, board, "cortex-m4")
        waits[sequence] = waited - cycles
    misses = 1 if timing is None else 8
    assert waits["seq_flash_loads"] - waits["seq_ram_loads"] == \
        misses * board.flash_timing.wait_states
    assert waits["seq_ram_loads"] > 0  # the cold instruction lines of the code measured


@needs_cross_tools
def test_a_board_without_wait_states_has_no_board_figure() -> None:
    report = codegen.api.count_instructions(str(EXAMPLE), {"input": np.zeros(
        (1, 3, 32, 32), np.float32)}, board="cortex-m4f", cycles=True)
    assert report.counts.cycles is not None and report.counts.board_cycles is None
    waited = codegen.api.count_instructions(str(EXAMPLE), {"input": np.zeros(
        (1, 3, 32, 32), np.float32)}, board="nucleo-l4r5zi", cycles=True)
    assert waited.counts.cycles is not None and waited.counts.board_cycles is not None
    assert waited.counts.board_cycles.per_sample[0] > waited.counts.cycles.per_sample[0]
    from cli_inprocess import run_cli

    text = run_cli("report", EXAMPLE, "--board", "nucleo-l432kc", "--count-cycles").stdout
    lines = {line.split(":")[0]: line for line in text.splitlines()}
    assert lines["cycles with the board's flash"].endswith(
        "more: flash 4 wait states, 32 instruction lines, 8 data lines of 32 bytes; each miss "
        "stalls the wait states)")
    assert lines["time"].endswith("MHz in estimated cycles with the board's flash")


def test_mnemonics_lose_width_flags_and_conditions() -> None:
    assert [base_mnemonic(m) for m in ("adds", "bls", "lsls", "muls", "vmovpl", "ldrbne",
                                       "smlals", "teq", "bics", "itete", "vnmls")] == [
        "add", "b", "lsl", "mul", "vmov", "ldrb", "smlal", "teq", "bic", "itete", "vnmls"]


def test_disassembly_lines_are_parsed() -> None:
    text = ("     23c:\te92d 4ff0 \tstmdb\tsp!, {r4, r5, r6, r7, r8, r9, sl, fp, lr}\n"
            "     240:\ted2d 8b02 \tvpush\t{d8}\n"
            "     244:\t4b01      \tldr\tr3, [pc, #4]\t@ (24c <x+0x10>)\n"
            "     246:\tf000 f83b \tbl\tbc <ad_invoke>\n"
            "     24c:\t2000 0000 \t.word\t0x20000000\n")
    insns = parse_disassembly(text)
    assert [(i.address, i.size, i.mnemonic) for i in insns] == [
        (0x23C, 4, "stmdb"), (0x240, 4, "vpush"), (0x244, 2, "ldr"), (0x246, 4, "bl")]
    costs = instruction_costs(insns, "cortex-m4")
    assert [c.alone for c in costs] == [10, 3, 2, 1]
    assert costs[3].taken_penalty == 1 and costs[3].unaligned_target == 1
    assert insns[2].operands == "r3, [pc, #4]"


def test_load_pipelining_needs_adjacent_instructions() -> None:
    first = Instruction(0x100, 2, "ldr", "r2, [r0]")
    apart = Instruction(0x104, 2, "ldr", "r3, [r0, #4]")
    costs = instruction_costs([first, apart], "cortex-m4")
    assert costs[1].after_previous == 2  # a gap (literal pool): no pairing


@needs_cross_tools
def test_report_estimates_cycles_per_layer(tmp_path: Path) -> None:
    """report --count-cycles: per-layer cycles that add up to the total, time at the
    board's clock from the cycles, the same figures on every run."""
    from zoo import quantized_model

    from codegen.api import report

    model = quantized_model("dscnn", "i8-pc")
    first = report(model, board="cortex-m4f", cycles=True)
    again = report(model, board="cortex-m4f", cycles=True)
    t = first.totals
    assert t.cycles is not None and t.instructions is not None and t.clock_hz is not None
    assert t.cycles == again.totals.cycles
    assert [layer.cycles for layer in first.layers] == [layer.cycles for layer in again.layers]
    assert t.cycles == sum(layer.cycles or 0 for layer in first.layers) + (t.cycles_overhead or 0)
    # Loads, multiplies and taken branches cost more than a cycle: more cycles than
    # instructions, though not absurdly many.
    assert t.instructions < t.cycles < 2 * t.instructions
    assert t.time_ms == pytest.approx(t.cycles * 1000.0 / t.clock_hz)
    assert t.cycle_model == "cortex-m4" and t.cycle_assumptions
    assert all((layer.cycles or 0) >= (layer.instructions or 0) for layer in first.layers)


@needs_cross_tools
def test_run_count_cycles_on_the_command_line(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    import numpy as np
    from zoo import INPUT_NAME, quantized_model, sample_inputs

    from codegen.cli import main

    model = tmp_path / "lenet.onnx"
    model.write_bytes(quantized_model("lenet5", "u8-pc").SerializeToString())
    inputs = tmp_path / "in.npz"
    np.savez(inputs, **{INPUT_NAME: sample_inputs("lenet5")[0]})
    assert main(["run", str(model), "--board", "cortex-m0plus", "--inputs", str(inputs),
                 "--count-cycles", "--per-layer"]) == 0
    out = capsys.readouterr().out
    assert "estimated with the cortex-m0plus table" in out
    assert "ms per inference at 48 MHz in estimated cycles" in out
    assert main(["run", str(model), "--board", "cortex-m7", "--inputs", str(inputs),
                 "--count-cycles"]) == 2
    assert "no cycle model for cortex-m7" in capsys.readouterr().err
