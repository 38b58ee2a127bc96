"""Cortex-M: the MLPerf Tiny models built with arm-none-eabi-gcc for each core, run in
QEMU and compared bit for bit with ORT; integer-only code on cores without an FPU; the
flash/RAM budget; deterministic instruction counts; the generated firmware project.

Needs arm-none-eabi-gcc, newlib and qemu-system-arm (`make test` installs them); without
them these tests are skipped, loudly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from cli_inprocess import run_cli
from firmware_project import c_loop_mismatches, run_project
from modelgen import conv_batch_model, random_conv_config
from zoo import ZOO_CASES, case_id, qdq_model, quantized_model

import codegen
from codegen.api import count_instructions
from codegen.errors import BudgetError
from codegen.options import Options
from codegen.oracle.verify import random_inputs
from codegen.pipeline import generate_sources
from codegen.target.firmware import build_firmware, cross_toolchain_available, soft_float_routines
from codegen.target.qemu import qemu_available

if not (cross_toolchain_available() and qemu_available()):
    print("\n*** tests/targets/test_cortex_m.py SKIPPED: arm-none-eabi-gcc or qemu-system-arm is "
          "missing (apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi "
          "qemu-system-arm) ***\n", file=sys.stderr)
    pytest.skip("no Cortex-M toolchain or QEMU", allow_module_level=True)

CORES = ["cortex-m0plus", "cortex-m3", "cortex-m4f", "cortex-m7", "cortex-m33", "cortex-m55"]
MODELS = ["dscnn", "resnet8", "ad_autoencoder", "mobilenet_v1_025"]
# Boundary conversions (float input and output) may use float; nothing else may.
BOUNDARY = ("q8_quantize_linear", "q8_dequantize_linear")


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("board", CORES)
def test_mlperf_tiny_models_are_bit_exact_in_qemu(board: str, model: str) -> None:
    variant = ("u8-pc", "i8-pc")[(CORES.index(board) + MODELS.index(model)) % 2]
    report = codegen.verify(quantized_model(model, variant), board=board, samples=2)
    assert report.ok, report.outputs
    assert report.board == board
    assert report.requant == ("int" if board in ("cortex-m0plus", "cortex-m3") else "float")


# Every model of the zoo on the Helium core: each architecture in its four variants
# (u8/i8 activations, per-tensor/per-channel weights).
@pytest.mark.parametrize("case", ZOO_CASES, ids=case_id)
def test_every_zoo_model_on_the_helium_core(case: tuple[str, str]) -> None:
    report = codegen.verify(quantized_model(*case), board="cortex-m55", samples=2, seed=4)
    assert report.ok, report.outputs


@pytest.mark.parametrize("board", ["cortex-m0plus", "cortex-m3"])
@pytest.mark.parametrize("model", MODELS)
def test_cores_without_fpu_run_integer_kernels(board: str, model: str) -> None:
    """The disassembly of the linked image: no kernel inside the network reaches a
    soft-float routine; only the float input/output conversions do."""
    gen = generate_sources(quantized_model(model, "i8-pc"), Options(board=board))
    build = build_firmware(gen.files, gen.name, gen.board)
    kernels = sorted({c.function for c in gen.program.calls})
    routines = soft_float_routines(build.elf, kernels)
    inside = {k: v for k, v in routines.items() if v and not k.startswith(BOUNDARY)}
    assert inside == {}
    assert any(routines[k] for k in kernels if k.startswith(BOUNDARY))  # the check sees them


def test_budget_refuses_a_model_too_big_for_the_board(tmp_path: Path) -> None:
    model = quantized_model("mobilenet_v1_025", "i8-pc")
    with pytest.raises(BudgetError) as info:
        codegen.generate(model, tmp_path / "out", board="microbit")
    message = str(info.value)
    assert "does not fit board 'microbit'" in message and "RAM" in message
    assert "board has 16.0 KB" in message and "--no-budget-check" in message
    assert not (tmp_path / "out").exists()
    onnx.save(model, tmp_path / "m.onnx")
    cli = [sys.executable, "-m", "codegen.cli", "generate", str(tmp_path / "m.onnx"), "-o",
           str(tmp_path / "out"), "--board", "microbit"]
    result = subprocess.run(cli, capture_output=True, text=True)
    assert result.returncode == 2 and "needs" in result.stderr and "Traceback" not in result.stderr
    result = run_cli(*cli[3:], "--no-budget-check")  # in this process: the same main()
    assert result.returncode == 0, result.stderr
    fits = codegen.generate(model, tmp_path / "fits", board="nucleo-l4r5zi")
    assert fits.budget is not None and fits.budget.ram_bytes <= 640 * 1024
    assert fits.budget.arena_bytes == fits.arena_bytes and fits.budget.stack_bytes > 0


def test_instruction_counts_are_deterministic_and_add_up() -> None:
    model = quantized_model("dscnn", "i8-pc")
    gen = generate_sources(model, Options(board="cortex-m4f"))
    data = random_inputs(gen.program.inputs, 2, seed=3)
    first = count_instructions(model, data, board="cortex-m4f")
    again = count_instructions(model, data, board="cortex-m4f")
    assert first.counts.per_sample == again.counts.per_sample
    assert first.counts.per_sample[0] > first.macs  # at least one instruction per MAC
    layers = count_instructions(model, data[:1], board="cortex-m4f", per_layer=True)
    assert layers.counts.per_layer is not None
    assert len(layers.counts.per_layer) == len(gen.program.calls)
    assert sum(layers.counts.per_layer) + layers.counts.overhead == first.counts.per_sample[0]


def test_the_firmware_project_builds_and_runs_with_its_makefile(tmp_path: Path) -> None:
    model = quantized_model("ad_autoencoder", "u8-pt")
    out = tmp_path / "fw"
    result = codegen.generate(model, out, board="cortex-m4f")
    for file in ("startup.c", f"{result.name}.ld", f"{result.name}_qemu.ld", "Makefile",
                 "CMakeLists.txt", f"{result.name}_main.c"):
        assert (out / file).is_file(), file
    ours, expected = run_project(model, out, "cortex-m4f", ("all", "qemu", "run"),
                                 "arm-none-eabi.cmake")
    assert np.array_equal(ours, expected)


@pytest.mark.parametrize("board", ["cortex-m3", "cortex-m7"])
def test_float_islands_are_bit_exact_on_the_core(board: str) -> None:
    """Float islands in float32 on a core without an FPU (libgcc's soft float and the
    integer fmaf) and on one with an FPU and hardware FMA."""
    model = qdq_model("misc_ops", "i8-pt")
    report = codegen.verify(model, board=board, requant="float", qdq_rules="x86", samples=2)
    assert report.ok, report.outputs


@pytest.mark.parametrize("board,requant,weights", [
    ("cortex-m4f", "float", "int16"), ("cortex-m4f", "float", "int8"),
    ("cortex-m3", "int", "int8"), ("cortex-m3", "float", "int8"),
    ("cortex-m0plus", "int", "int8"), ("cortex-m55", "float", "int8"),
    ("cortex-m55", "int", "int8")])
def test_random_convolutions_on_the_core(board: str, requant: str, weights: str) -> None:
    """The randomized QLinearConv configurations on the core against ORT: the DSP
    instructions on M4F (compact and wide weights), the unsigned-byte kernels on M3
    (Thumb-2, rows in pairs), M0+ (Thumb-1, one row at a time) and the Helium kernel on
    M55 (rows in fours, 16 bytes a product)."""
    rng = np.random.default_rng(77)
    configs = [random_conv_config(rng, 7700 + i) for i in range(24)]
    report = codegen.verify(conv_batch_model(configs), board=board, requant=requant,
                            samples=2, weights=weights)
    assert report.ok, [(configs[int(o.name[1:])].describe(), o.mismatches)
                       for o in report.outputs if o.mismatches]


@pytest.mark.parametrize(("board", "weights"), [("cortex-m4f", "int8"), ("cortex-m4f", "int16"),
                                                ("cortex-m0plus", "int8"), ("cortex-m55", "int8")])
def test_random_matrix_products_on_the_core(board: str, weights: str) -> None:
    """QGemm and QLinearMatMul with constant weights (the fully connected DSP kernels,
    compact and wide weights, the plain 32-bit path on M0+ and the Helium kernel on M55,
    float outputs included) against ORT."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ops"))
    from test_matrix_ops import combine, matmul_case, qgemm_case

    rng = np.random.default_rng(4343)
    model = combine([qgemm_case(rng, i) for i in range(12)] +
                    [matmul_case(rng, 200 + i, "QLinearMatMul") for i in range(12)])
    report = codegen.verify(model, board=board, samples=2, weights=weights)
    assert report.ok, [o.name for o in report.outputs if o.mismatches]


@pytest.mark.parametrize("weights", ["int8", "int16"])
def test_fused_fully_connected_blocks_on_the_core(weights: str) -> None:
    """The fully connected block loop with its requantization in assembly (M4F): K of
    one to nine passes of 16 taps, odd and even (the loop enters at its second half for
    an odd count), N with and without a last block of fewer rows, int8 and uint8
    outputs, per-tensor and per-column scales, against ORT."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ops"))
    from test_matrix_ops import combine, qgemm_case

    rng = np.random.default_rng(6161)
    sizes = [(1, 16, 4), (2, 20, 5), (1, 33, 8), (1, 64, 13), (3, 100, 16), (1, 130, 7),
             (1, 144, 12), (2, 17, 9)]
    model = combine([qgemm_case(rng, i, s, fully_connected=True) for i, s in enumerate(sizes * 2)])
    gen = generate_sources(model, Options(board="cortex-m4f", weights=weights))
    fc = [c for c in gen.program.calls if c.function.startswith("q8_fc_")]
    assert len(fc) == 2 * len(sizes), [c.function for c in gen.program.calls]
    assert all(dict(c.params.fields)["requant"].fields[-1] == ("bounded", 1) for c in fc)
    report = codegen.verify(model, board="cortex-m4f", samples=2, weights=weights)
    assert report.ok, [o.name for o in report.outputs if o.mismatches]


@pytest.mark.parametrize(("board", "wide"), [("cortex-m0plus", False), ("cortex-m3", False),
                                             ("cortex-m4f", True)])
def test_auto_weights_are_never_wide_without_dsp(board: str, wide: bool) -> None:
    """--weights auto: int16 weights only where the DSP kernels read them faster; on M0+
    and M3 the byte kernels are both smaller and faster."""
    gen = generate_sources(quantized_model("ad_autoencoder", "i8-pc"), Options(board=board))
    assert any("_w16_" in c.function for c in gen.program.calls) == wide


@pytest.mark.parametrize("board,weights", [("cortex-m4f", "int8"), ("cortex-m4f", "int16"),
                                           ("cortex-m0plus", "int8"), ("cortex-m55", "int8")])
def test_the_c_loops_beside_the_hand_scheduled_ones_are_bit_exact(board: str,
                                                                  weights: str) -> None:
    """-DQ8_NO_ASM compiles the convolution (int8 and int16 weights), depthwise and fully
    connected loops from C instead of their Thumb-2 assembly or Helium (and rounds without
    VCVTR):
    the reference of the hand-scheduled path, on the same core, against ORT."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ops"))
    from test_matrix_ops import combine, qgemm_case
    from test_qlinear_conv_random import depthwise_rows_configs

    rng = np.random.default_rng(91)
    configs = [random_conv_config(rng, 9100 + i) for i in range(8)]
    for model in (conv_batch_model(configs), combine([qgemm_case(rng, i) for i in range(6)]),
                  conv_batch_model(depthwise_rows_configs(6, 9200))):
        assert c_loop_mismatches(model, board, weights) == []


def test_thumb1_depthwise_kernel_against_ort_in_qemu() -> None:
    """Cortex-M0+'s depthwise kernel (Thumb-1 assembly at strides 1 and 2, C at 3) from
    its offset planes, padded or not, and the prepared integer requantization, against ORT."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ops"))
    from test_qlinear_conv_random import offset_plane_configs

    configs = offset_plane_configs(16, 5300)
    model = conv_batch_model(configs)
    kernels = {c.function for c in
               generate_sources(model, Options(board="cortex-m0plus")).program.calls}
    assert kernels and all("_3x3_padded_" in k for k in kernels), kernels
    report = codegen.verify(model, board="cortex-m0plus", samples=2, seed=3)
    bad = [(configs[int(o.name[1:])].describe(), o.mismatches) for o in report.outputs
           if o.mismatches]
    assert not bad, bad


@pytest.mark.parametrize("board", ["cortex-m4f", "cortex-m33"])
def test_depthwise_kernels_against_ort_in_qemu(board: str) -> None:
    """The depthwise 3x3 kernels other than the two-row one (strides 1 and 2, padded or
    not) on FPU+DSP cores, whose full-range outputs take the VCVTR/SSAT/USAT forms,
    against ORT."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ops"))
    from test_qlinear_conv_random import depthwise_3x3_configs

    configs = depthwise_3x3_configs(24, 5500)
    model = conv_batch_model(configs)
    kernels = {c.function for c in
               generate_sources(model, Options(board=board)).program.calls}
    assert any("_3x3_padded_" in k for k in kernels), kernels
    report = codegen.verify(model, board=board, samples=2, seed=3)
    bad = [(configs[int(o.name[1:])].describe(), o.mismatches) for o in report.outputs
           if o.mismatches]
    assert not bad, bad


@pytest.mark.parametrize("board,requant", [("cortex-m4f", "float"), ("cortex-m4f", "int"),
                                           ("cortex-m33", "float")])
def test_depthwise_rows_kernel_against_ort_in_qemu(board: str, requant: str) -> None:
    """The two-row depthwise kernel's hand-scheduled loop and the VCVTR/SSAT
    requantization, on stride-1 layers of every size, type and padding, against ORT."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ops"))
    from test_qlinear_conv_random import depthwise_rows_configs

    configs = depthwise_rows_configs(16, 5100)
    model = conv_batch_model(configs)
    kernels = {c.function for c in
               generate_sources(model, Options(board=board, requant=requant)).program.calls}
    assert kernels and all("_3x3_rows_" in k for k in kernels), kernels
    report = codegen.verify(model, board=board, samples=2, seed=3, requant=requant)
    bad = [(configs[int(o.name[1:])].describe(), o.mismatches) for o in report.outputs
           if o.mismatches]
    assert not bad, bad


@pytest.mark.parametrize("board", ["cortex-m4f", "cortex-m0plus", "cortex-m55"])
@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
def test_binary_ops_in_qemu(op: str, board: str) -> None:
    """QLinearAdd's bounded path (VFMA, then VCVTR and SSAT/USAT) on M4F, its integer
    tables (Thumb-1's loop by hand) on M0+ and its Helium lanes on M55, and QLinearMul,
    every broadcasting kind of the host test, against ORT."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ops"))
    from test_elementwise_ops import SHAPE_PAIRS, binary_model

    report = codegen.verify(binary_model(op, 7), board=board, samples=3, seed=7)
    assert report.ok, [(SHAPE_PAIRS[i], o) for i, o in enumerate(report.outputs)
                       if o.mismatches]


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_qlinear_add_halves_on_thumb1(dtype: str) -> None:
    """Both ratios 0.5: half the sums lie exactly on a half, where Thumb-1's loop by hand
    stops and the exact path rounds (to even), then goes on; the other half run through
    the loop, out to both clamps."""
    from modelgen import graph_model
    from onnx import helper

    zp = 0 if dtype == "uint8" else -3
    inits = {"as": np.array(0.01, np.float32), "az": np.array(zp, dtype),
             "bs": np.array(0.01, np.float32), "bz": np.array(zp, dtype),
             "cs": np.array(0.02, np.float32), "cz": np.array(zp + 1, dtype)}
    node = helper.make_node("QLinearAdd", ["a", "as", "az", "b", "bs", "bz", "cs", "cz"],
                            ["y"], name="add", domain="com.microsoft")
    model = graph_model([node], {"a": (dtype, [1, 4, 9, 9]), "b": (dtype, [1, 4, 9, 9])},
                        {"y": dtype}, inits, opset=13, ms_domain=True)
    gen = generate_sources(model, Options(board="cortex-m0plus"))
    assert ".fast_table = " in gen.files[f"{gen.name}.c"].decode()
    report = codegen.verify(model, board="cortex-m0plus", samples=3, seed=1)
    assert report.ok, report.outputs
    # the same ties in Helium's four lanes (VFMA, VCVTN)
    report = codegen.verify(model, board="cortex-m55", samples=3, seed=1)
    assert report.ok, report.outputs


@pytest.mark.parametrize("weights", ["int8", "int16"])
def test_slab_mode_against_ort_in_qemu(weights: str) -> None:
    """The im2col kernels' slab order with the hand-scheduled loops on the core."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ops"))
    from test_qlinear_conv_random import slab_configs

    configs = slab_configs(24, 7100)
    model = conv_batch_model(configs)
    gen = generate_sources(model, Options(board="cortex-m4f", weights=weights))
    assert any(c.function.startswith("q8_conv_") and "im2col" in c.function
               for c in gen.program.calls)
    assert ".slab = 0," not in gen.files[f"{gen.name}.c"].decode()
    report = codegen.verify(model, board="cortex-m4f", samples=2, seed=8, weights=weights)
    bad = [(configs[int(o.name[1:])].describe(), o.mismatches) for o in report.outputs
           if o.mismatches]
    assert not bad, bad


def test_auto_weights_widen_the_layers_with_most_reuse_when_flash_is_tight() -> None:
    """--weights auto on a DSP core whose flash cannot take every layer at int16: the
    layers the cycle model expects to save the most per byte first (convolutions over the
    most pixels), within the budget, the rest int8."""
    from dataclasses import replace

    from codegen.core.boards import load_board
    from codegen.options import WIDE_WEIGHTS_FLASH_SHARE, weight_layers, wide_weight_nodes
    from codegen.pipeline import generate_sources

    gen = generate_sources(quantized_model("resnet8", "i8-pc"), Options(board="cortex-m4f"))
    layers = weight_layers(gen.graph)
    eight_bit = sum(int(v.nbytes) for v in gen.graph.constants.values()
                    if v.dtype in (np.int8, np.uint8))
    roomy = load_board("cortex-m4f")
    assert wide_weight_nodes("auto", gen.graph, roomy) is None  # everything fits
    extra = sum(layer.weight_bytes for layer in layers) // 3
    tight = replace(roomy, flash_bytes=int((eight_bit + extra) / WIDE_WEIGHTS_FLASH_SHARE))
    chosen = wide_weight_nodes("auto", gen.graph, tight)
    assert chosen and len(chosen) < len(layers)
    used = sum(la.weight_bytes for la in layers if la.node in chosen)
    assert used <= extra
    # nothing left out would still fit, and the most reused layer that fits went first
    assert all(la.weight_bytes > extra - used for la in layers if la.node not in chosen)
    first = max((la for la in layers if la.weight_bytes <= extra),
                key=lambda la: la.cycles_saved / la.weight_bytes)
    assert first.node in chosen
    # the first convolution (3 input channels, 27 taps) saves little per MAC
    assert layers[0].kind == "conv_short"
    assert layers[-1].kind in ("fc", "fc_small")
    assert wide_weight_nodes("int8", gen.graph, roomy) == frozenset()
    assert wide_weight_nodes("int16", gen.graph, tight) is None
    m0 = load_board("cortex-m0plus")
    assert wide_weight_nodes("auto", gen.graph, m0) == frozenset()


@pytest.mark.parametrize("board,weights", [("cortex-m4f", "int8"), ("cortex-m4f", "int16"),
                                           ("cortex-m0plus", "int8")])
def test_sources_compile_at_every_optimization_level(board: str, weights: str,
                                                     tmp_path: Path) -> None:
    """A firmware's debug build (-O0, -Og) or a frame pointer takes registers away from
    the hand-scheduled loops: every source with inline assembly (convolutions, depthwise,
    fully connected; Thumb-1 on M0+) compiles with -Werror at each (the loops fall back to
    C at -O0, where GCC cannot allocate them, and on Thumb-1 at -Os, where GCC keeps the
    high registers out of use)."""
    from codegen.target.firmware import cross_tool

    gen = generate_sources(quantized_model("dscnn", "i8-pc"),
                           Options(board=board, weights=weights))
    kernels = {c.function for c in gen.program.calls}
    assert any("q8_fc_" in k for k in kernels)
    assert any("_3x3_rows_" in k for k in kernels) == (board == "cortex-m4f")
    for name, data in gen.files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    # the sources with inline assembly
    sources = sorted(str(p) for p in (tmp_path / "runtime").glob("*.c")
                     if ("_im2col_" in p.name and "_w16p_" not in p.name)
                     or p.name in ("dwconv_3x3_rows.c", "dwconv_3x3_padded.c",
                                   "fully_connected.c", "elementwise.c"))
    assert len(sources) >= 2, sources
    arch = [f for f in gen.board.cflags if f.startswith("-m")]
    levels = [["-O0"], ["-Og"], ["-O2", "-fno-omit-frame-pointer"]]
    if board == "cortex-m0plus":
        levels.append(["-Os"])
    for level in levels:
        for source in sources:
            result = subprocess.run(
                [cross_tool("gcc"), *arch, *level, "-std=c99", "-Wall", "-Wextra", "-Werror",
                 "-pedantic", f"-I{tmp_path}", f"-I{tmp_path / 'runtime'}", "-c", source,
                 "-o", str(tmp_path / "out.o")], capture_output=True, text=True, check=False)
            assert result.returncode == 0, (level, source, result.stderr[-2000:])


@pytest.mark.parametrize("requant", ["float", "int"])
def test_helium_depthwise_kernel_against_ort_in_qemu(requant: str) -> None:
    """Cortex-M55's depthwise kernel (*_3x3_mve_*): the flat stride-1 run by hand and the
    lane rows of other strides, padded or not, int8 and uint8, against ORT; stride-1
    layers of every size, type and padding beside the strided ones."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ops"))
    from test_qlinear_conv_random import depthwise_3x3_configs, depthwise_rows_configs

    configs = [*depthwise_3x3_configs(24, 5600), *depthwise_rows_configs(12, 5700)]
    model = conv_batch_model(configs)
    kernels = {c.function for c in
               generate_sources(model, Options(board="cortex-m55", requant=requant))
               .program.calls}
    assert any("_3x3_mve_" in k for k in kernels), kernels
    report = codegen.verify(model, board="cortex-m55", requant=requant, samples=2, seed=3)
    bad = [(configs[int(o.name[1:])].describe(), o.mismatches) for o in report.outputs
           if o.mismatches]
    assert not bad, bad
