"""RISC-V RV32IMC: every zoo architecture built with riscv64-unknown-elf-gcc and picolibc,
run in QEMU's virt machine and compared bit for bit with ORT; integer-only code (the
cores have no FPU); the real parts' budgets; deterministic instruction counts; the
generated project's Makefile and CMake files with the RISC-V toolchain; board files.

Needs riscv64-unknown-elf-gcc, picolibc and qemu-system-riscv32 (`make test` installs
them); without them these tests are skipped, loudly."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from firmware_project import c_loop_mismatches, run_project
from zoo import ZOO_CASES, case_id, quantized_model

import codegen
from codegen.api import count_instructions
from codegen.core.boards import board_problems, load_board
from codegen.errors import BudgetError
from codegen.options import Options
from codegen.oracle.verify import random_inputs
from codegen.pipeline import generate_sources
from codegen.target.firmware import build_firmware, cross_toolchain_available, soft_float_routines
from codegen.target.qemu import qemu_available

if not (cross_toolchain_available("riscv") and qemu_available("riscv")):
    print("\n*** tests/targets/test_riscv.py SKIPPED: riscv64-unknown-elf-gcc, picolibc or "
          "qemu-system-riscv32 is missing (apt-get install gcc-riscv64-unknown-elf "
          "picolibc-riscv64-unknown-elf qemu-system-misc) ***\n", file=sys.stderr)
    pytest.skip("no RISC-V toolchain or QEMU", allow_module_level=True)

BOARD = "riscv32"
BOUNDARY = ("q8_quantize_linear", "q8_dequantize_linear")
# Every model of the zoo: each architecture in its four variants (u8/i8 activations,
# per-tensor/per-channel weights). QEMU runs RV32 code fast: about a second each.


@pytest.mark.parametrize("case", ZOO_CASES, ids=case_id)
def test_zoo_models_are_bit_exact_in_qemu(case: tuple[str, str]) -> None:
    report = codegen.verify(quantized_model(*case), board=BOARD, samples=2, seed=4)
    assert report.ok, report.outputs
    assert report.board == BOARD and report.requant == "int"


@pytest.mark.parametrize("requant", ["float", "int"])
def test_both_requantization_modes_on_the_core(requant: str) -> None:
    """Float requantization runs too (soft-float, as on an M0+ asked for it)."""
    report = codegen.verify(quantized_model("dscnn", "i8-pc"), board=BOARD, requant=requant,
                            samples=2, seed=6)
    assert report.ok, report.outputs


@pytest.mark.parametrize("model", ["resnet8", "dscnn", "mobilenet_v1_025", "ad_autoencoder"])
def test_the_kernels_inside_the_network_are_integer_only(model: str) -> None:
    """The disassembly of the linked image: no kernel inside the network reaches a
    soft-float routine; only the float input/output conversions do."""
    gen = generate_sources(quantized_model(model, "u8-pc"), Options(board=BOARD))
    build = build_firmware(gen.files, gen.name, gen.board)
    kernels = sorted({c.function for c in gen.program.calls})
    routines = soft_float_routines(build.elf, kernels)
    inside = {k: v for k, v in routines.items() if v and not k.startswith(BOUNDARY)}
    assert inside == {}
    assert any(routines[k] for k in kernels if k.startswith(BOUNDARY))  # the check sees them


def test_instruction_counts_are_deterministic_and_add_up() -> None:
    model = quantized_model("dscnn", "u8-pc")
    gen = generate_sources(model, Options(board=BOARD))
    data = random_inputs(gen.program.inputs, 2, seed=3)
    first = count_instructions(model, data, board=BOARD)
    again = count_instructions(model, data, board=BOARD)
    assert first.counts.per_sample == again.counts.per_sample
    assert first.counts.per_sample[0] > first.macs
    layers = count_instructions(model, data[:1], board=BOARD, per_layer=True)
    assert layers.counts.per_layer is not None
    assert len(layers.counts.per_layer) == len(gen.program.calls)
    assert sum(layers.counts.per_layer) + layers.counts.overhead == first.counts.per_sample[0]


def test_real_parts_budgets(tmp_path: Path) -> None:
    """ESP32-C3 takes ResNet-8 with room to spare; the GD32VF103's 32 KB of SRAM does
    not hold its arena, and generate says so and writes nothing."""
    model = quantized_model("resnet8", "i8-pc")
    fits = codegen.generate(model, tmp_path / "esp", board="esp32-c3")
    assert fits.budget is not None and fits.budget.ram_bytes <= 400 * 1024
    assert fits.budget.stack_bytes > 0 and fits.budget.flash_bytes > 78_000
    with pytest.raises(BudgetError) as info:
        codegen.generate(model, tmp_path / "gd", board="gd32vf103")
    assert "does not fit board 'gd32vf103'" in str(info.value) and "32.0 KB" in str(info.value)
    assert not (tmp_path / "gd").exists()
    small = codegen.verify(quantized_model("ad_autoencoder", "u8-pt"), board="gd32vf103",
                           samples=1)
    assert small.ok, small.outputs


def test_the_firmware_project_builds_and_runs_with_its_makefile(tmp_path: Path) -> None:
    model = quantized_model("lenet5", "i8-pc")
    out = tmp_path / "fw"
    result = codegen.generate(model, out, board=BOARD)
    for file in ("startup.c", f"{result.name}.ld", f"{result.name}_qemu.ld", "Makefile",
                 "CMakeLists.txt", "riscv64-unknown-elf.cmake", f"{result.name}_main.c"):
        assert (out / file).is_file(), file
    assert not (out / "arm-none-eabi.cmake").exists()
    ours, expected = run_project(model, out, BOARD, ("all", "qemu", "run", "size", "lib"),
                                 "riscv64-unknown-elf.cmake")
    if shutil.which("cmake"):
        assert (out / "cmake-build" / f"{result.name}.elf").is_file()
    assert np.array_equal(ours, expected)


def test_shipped_riscv_boards_are_integer_cores() -> None:
    for name in ("riscv32", "esp32-c3", "gd32vf103"):
        board = load_board(name)
        assert board.is_mcu and not board.is_cortex_m and board.kind == "riscv"
        assert board.requant == "int" and not board.fpu and not board.dsp
        assert f"-march={board.cpu}" in board.cflags and "-mabi=ilp32" in board.cflags


@pytest.mark.parametrize("fields,problem", [
    ({"cpu": "rv64gc"}, "must name an RV32IM core"),
    ({"fpu": True}, "field 'fpu'"),
    ({"requant": "float"}, "has no FPU"),
    ({"cflags": ["-march=rv32im", "-mabi=ilp32"]}, "-march=rv32imc"),
    ({"cflags": ["-march=rv32imc"]}, "-mabi=ilp32"),
])
def test_board_files_of_the_riscv_kind_are_checked(fields: dict[str, object],
                                                   problem: str) -> None:
    base: dict[str, object] = {
        "kind": "riscv", "cpu": "rv32imc", "cflags": ["-march=rv32imc", "-mabi=ilp32"],
        "requant": "int",
        "memory": {"flash_origin": 0, "flash_length": 1024, "ram_origin": 4096,
                   "ram_length": 1024},
        "qemu": {"machine": "virt", "flash_origin": 0x80000000, "flash_length": 1024,
                 "ram_origin": 0x80400000, "ram_length": 1024}}
    assert board_problems(base) == []
    problems = board_problems({**base, **fields})
    assert any(problem in p for p in problems), problems


@pytest.mark.parametrize("requant", ["int", "float"])
def test_random_convolutions_on_the_core(requant: str) -> None:
    """The randomized QLinearConv configurations on the core against ORT, and 1x1 layers
    read in place (four pixels' bytes per tap) with their tails: the RV32 kernel (rows in
    fours, MULHU requantization with the generator's constants)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ops"))
    from modelgen import conv_batch_model, random_conv_config
    from test_qlinear_conv_random import pointwise_configs

    rng = np.random.default_rng(77)
    configs = [random_conv_config(rng, 7700 + i) for i in range(24)] + \
        pointwise_configs(12, 7800)
    model = conv_batch_model(configs)
    kernels = {c.function for c in
               generate_sources(model, Options(board=BOARD, requant=requant)).program.calls}
    assert any("_im2col_rv_" in k for k in kernels), kernels
    report = codegen.verify(model, board=BOARD, requant=requant, samples=2)
    assert report.ok, [(configs[int(o.name[1:])].describe(), o.mismatches)
                       for o in report.outputs if o.mismatches]


@pytest.mark.parametrize("requant", ["int", "float"])
def test_depthwise_kernels_against_ort_in_qemu(requant: str) -> None:
    """The depthwise 3x3 rows of RV32 (nine weights in registers, sums of a chunk of rows,
    then the requantization) at strides 1 and 2, padded or not, against ORT."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ops"))
    from modelgen import conv_batch_model
    from test_qlinear_conv_random import depthwise_3x3_configs, depthwise_rows_configs

    configs = depthwise_3x3_configs(24, 5500) + depthwise_rows_configs(8, 5600)
    model = conv_batch_model(configs)
    report = codegen.verify(model, board=BOARD, samples=2, seed=3, requant=requant)
    bad = [(configs[int(o.name[1:])].describe(), o.mismatches) for o in report.outputs
           if o.mismatches]
    assert not bad, bad


def test_the_c_loops_beside_the_assembly_are_bit_exact() -> None:
    """-DQ8_NO_ASM compiles the convolution's 4 x 4 loop from C instead of its assembly,
    and the depthwise rows generically: the reference of the RV32 paths, on the core,
    against ORT."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ops"))
    from modelgen import conv_batch_model, random_conv_config
    from test_qlinear_conv_random import depthwise_rows_configs, pointwise_configs

    rng = np.random.default_rng(91)
    configs = [random_conv_config(rng, 9100 + i) for i in range(8)] + \
        pointwise_configs(4, 9300)
    for model in (conv_batch_model(configs),
                  conv_batch_model(depthwise_rows_configs(6, 9200))):
        assert c_loop_mismatches(model, BOARD) == []


def test_random_matrix_products_and_binary_ops_on_the_core() -> None:
    """QGemm, QLinearMatMul (float outputs included), QLinearAdd and QLinearMul with
    broadcasting, on the integer core against ORT."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ops"))
    from test_matrix_ops import combine, matmul_case, qgemm_case

    rng = np.random.default_rng(4343)
    model = combine([qgemm_case(rng, i) for i in range(12)] +
                    [matmul_case(rng, 200 + i, "QLinearMatMul") for i in range(12)])
    report = codegen.verify(model, board=BOARD, samples=2)
    assert report.ok, [o.name for o in report.outputs if o.mismatches]
    from test_elementwise_ops import SHAPE_PAIRS, binary_model

    for op in ("QLinearAdd", "QLinearMul"):
        report = codegen.verify(binary_model(op, 7), board=BOARD, samples=3, seed=7)
        assert report.ok, [(SHAPE_PAIRS[i], o) for i, o in enumerate(report.outputs)
                           if o.mismatches]
