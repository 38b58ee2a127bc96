"""Randomized QLinearConv against ONNX Runtime: 320 configurations, both requantization
modes, every attribute the operator has; generated C under ASan and UBSan."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import pytest
from conftest import SANITIZE
from modelgen import ConvConfig, conv_batch_model, random_conv_config
from onnx import numpy_helper

import codegen
from codegen.api import run_generated
from codegen.backend.interface import DEFAULT_INTERFACE, Interface
from codegen.ops.conv import im2col
from codegen.ops.kernels import field
from codegen.options import Options
from codegen.oracle.verify import random_inputs
from codegen.pipeline import Generated, generate_sources

CONFIGS = 320
PER_MODEL = 16
SEED = 20261130


def all_configs() -> list[ConvConfig]:
    rng = np.random.default_rng(SEED)
    return [random_conv_config(rng, SEED + i) for i in range(CONFIGS)]


def assert_same_outputs(fast: Generated, reference: Generated, seed: int) -> None:
    """Both projects under the sanitizers on the same random inputs, byte for byte."""
    data = random_inputs(fast.program.inputs, 2, seed=seed)
    for ours, theirs in zip(run_generated(fast, data, SANITIZE),
                            run_generated(reference, data, SANITIZE), strict=True):
        for name, value in ours.items():
            assert np.array_equal(value, theirs[name]), name


def test_configs_cover_every_attribute() -> None:
    configs = all_configs()
    assert len(configs) >= 300
    seen = {
        "1-D": any(len(c.spatial) == 1 for c in configs),
        "2-D": any(len(c.spatial) == 2 for c in configs),
        "grouped": any(1 < c.group < c.channels for c in configs),
        "depthwise": any(c.group == c.channels > 1 and c.out_channels == c.channels
                         for c in configs),
        "depthwise multiplier": any(c.group == c.channels and c.out_channels > c.channels
                                    for c in configs),
        "stride": any(max(c.strides) > 1 for c in configs),
        "dilation": any(max(c.dilations) > 1 for c in configs),
        "asymmetric pads": any(c.pads and c.pads[: len(c.spatial)] != c.pads[len(c.spatial):]
                               for c in configs),
        "SAME_UPPER": any(c.auto_pad == "SAME_UPPER" for c in configs),
        "SAME_LOWER": any(c.auto_pad == "SAME_LOWER" for c in configs),
        "VALID": any(c.auto_pad == "VALID" for c in configs),
        "u8 x u8": any(c.x_dtype == c.w_dtype == "uint8" for c in configs),
        "u8 x s8": any(c.x_dtype == "uint8" and c.w_dtype == "int8" for c in configs),
        "s8 x s8": any(c.x_dtype == "int8" for c in configs),
        "per-channel": any(c.per_channel for c in configs),
        "per-tensor": any(not c.per_channel for c in configs),
        "no bias": any(not c.bias for c in configs),
        "bias beyond 2^24": any(c.big_bias and c.bias for c in configs),
        "batch > 1": any(c.batch > 1 for c in configs),
    }
    assert all(seen.values()), [k for k, v in seen.items() if not v]


@pytest.mark.parametrize("requant", ["float", "int"])
@pytest.mark.parametrize("chunk", range(CONFIGS // PER_MODEL))
def test_random_qlinear_conv_bit_exact(chunk: int, requant: str) -> None:
    configs = all_configs()[chunk * PER_MODEL:(chunk + 1) * PER_MODEL]
    model = conv_batch_model(configs)
    report = codegen.verify(model, samples=2, seed=chunk, requant=requant, cflags=SANITIZE)
    bad = [(configs[int(o.name[1:])].describe(), o.mismatches, o.max_abs_diff)
           for o in report.outputs if o.mismatches]
    assert not bad, bad
    assert len(report.outputs) == len(configs)


@pytest.mark.parametrize("weights,dsp,variant", [
    ("int8", None, "im2col_"), ("int16", None, "im2col_w16p_"), ("int16", True, "im2col_w16_")])
@pytest.mark.parametrize("requant", ["float", "int"])
def test_fast_kernels_are_bit_identical_to_the_reference(requant: str, weights: str,
                                                         dsp: bool | None, variant: str) -> None:
    """The optimized convolutions (compact weights, wide weights in blocks, and the DSP
    layout's portable C) against the plain loops, on the same inputs (no ORT)."""
    configs = all_configs()[:64]
    model = conv_batch_model(configs)
    fast = generate_sources(model, Options(requant=requant, weights=weights, dsp=dsp))
    reference = generate_sources(model, Options(requant=requant, kernels="reference"))
    kernels = {c.function for c in fast.program.calls}
    im2col = {k for k in kernels if "im2col" in k}
    assert im2col and all(k.startswith(f"q8_conv_{k[8:10]}_{variant}") for k in im2col), \
        kernels
    if requant == "float":  # both the bounded and the general float requantization
        source = fast.files[f"{fast.name}.c"].decode()
        assert 0 < source.count(".bounded = 1") < source.count(".act_max"), "bounded"
    assert not any("im2col" in c.function for c in reference.program.calls)
    assert_same_outputs(fast, reference, seed=11)


# The host convolution's products per instruction set (q8_im2col_pix.h Q8_PIX_ISA_MAX) and
# the CPU flag each needs.
HOST_PRODUCTS = {"sse2": (1, "sse2"), "avx2": (2, "avx2"), "avx-vnni": (3, "avx_vnni"),
                 "avx512bw": (4, "avx512bw"), "avx512-vnni": (5, "avx512_vnni")}


def host_cpu_has(flag: str) -> bool:
    cpuinfo = Path("/proc/cpuinfo")
    return cpuinfo.exists() and flag in cpuinfo.read_text().split()


@pytest.mark.parametrize("path,requant", [
    *((name, "float") for name in HOST_PRODUCTS), ("dispatched", "int"),
    ("portable", "float"), ("portable", "int")])
def test_host_kernel_paths_are_bit_identical_to_the_reference(
        requant: str, path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The host's convolution (*_w16p_*) and depthwise 3x3 (*_3x3_pix_*) built for each
    of their paths against the plain loops: the products of every x86-64 instruction set
    they dispatch to (capped with Q8_PIX_ISA_MAX; one this CPU lacks is skipped), what the
    machine picks itself, and the plain C of other hosts. The products are integers, so
    one requantization mode per instruction set suffices. The flat bands are held to 600
    bytes here, so that layers run in several bands."""
    flags = {"dispatched": [], "portable": ["-DQ8_PIX_PORTABLE"]}.get(path)
    if flags is None:
        level, cpu_flag = HOST_PRODUCTS[path]
        if not host_cpu_has(cpu_flag):
            pytest.skip(f"this CPU has no {cpu_flag}")
        flags = [f"-DQ8_PIX_ISA_MAX={level}"]
    monkeypatch.setattr(im2col, "FLAT_BAND_BYTES", 600)
    configs = [*all_configs()[:96], *depthwise_3x3_configs(24, 3500)]
    model = conv_batch_model(configs)
    fast = generate_sources(model, Options(requant=requant, weights="int16"))
    assert sum("_3x3_pix_" in c.function for c in fast.program.calls) >= 24, "depthwise"
    calls = [c for c in fast.program.calls if "_im2col_w16p_" in c.function]
    bands = [field(c.params, "band") for c in calls]
    outputs_h = [field(c.params, "output.h") for c in calls]
    assert any(0 < b < h for b, h in zip(bands, outputs_h, strict=True)), "several bands"
    assert 0 in bands, "gathered tiles"
    reference = generate_sources(model, Options(requant=requant, kernels="reference"))
    data = random_inputs(fast.program.inputs, 2, seed=17)
    for ours, theirs in zip(run_generated(fast, data, [*SANITIZE, *flags]),
                            run_generated(reference, data, SANITIZE), strict=True):
        for name, value in ours.items():
            assert np.array_equal(value, theirs[name]), name


def depthwise_3x3_configs(count: int, seed: int) -> list[ConvConfig]:
    """Depthwise 3x3 layers of every stride, padding, type and size that the
    specialized kernel (dwconv_3x3.c) takes, down to planes smaller than the window."""
    rng = np.random.default_rng(seed)
    configs = []
    for i in range(count):
        c = int(rng.integers(2, 6))
        stride = int(rng.integers(1, 3))
        pads = tuple(int(v) for v in rng.integers(0, 3, 4))
        size = (int(rng.integers(1, 10)), int(rng.integers(1, 10)))
        if (size[0] + pads[0] + pads[2] < 3) or (size[1] + pads[1] + pads[3] < 3):
            size = (size[0] + 3, size[1] + 3)
        x_dtype = str(rng.choice(["uint8", "int8"]))
        configs.append(ConvConfig(
            # ORT has no QLinearConv of int8 inputs with uint8 weights
            x_dtype=x_dtype, w_dtype="int8" if x_dtype == "int8" else str(
                rng.choice(["uint8", "int8"])),
            batch=int(rng.integers(1, 3)), channels=c, out_channels=c, spatial=size,
            kernel=(3, 3), group=c, strides=(stride, int(rng.integers(1, 3))),
            dilations=(1, 1), pads=pads, auto_pad=None, per_channel=bool(rng.random() < 0.5),
            bias=bool(rng.random() < 0.8), big_bias=bool(rng.random() < 0.2),
            kernel_shape_attr=True, seed=seed + i))
    return configs


@pytest.mark.parametrize("requant", ["float", "int"])
def test_depthwise_3x3_kernel_against_ort(requant: str) -> None:
    configs = depthwise_3x3_configs(48, 3100)
    model = conv_batch_model(configs)
    kernels = [c.function for c in generate_sources(model, Options(requant=requant)).program.calls]
    assert all("dwconv" in k and "3x3" in k for k in kernels), kernels
    report = codegen.verify(model, samples=3, seed=4, requant=requant, cflags=SANITIZE)
    bad = [(configs[int(o.name[1:])].describe(), o.mismatches) for o in report.outputs
           if o.mismatches]
    assert not bad, bad


@pytest.mark.parametrize("requant", ["float", "int"])
def test_depthwise_offset_planes_against_ort(requant: str) -> None:
    """Thumb-1's depthwise path from its C (Q8_DW_OFFSET_PLANE=1 on the host): int8 copied
    as x + 128, the bias offset by 128 * sum(w), outputs in pairs, under the sanitizers."""
    configs = offset_plane_configs(24, 3300)
    model = conv_batch_model(configs)
    report = codegen.verify(model, samples=2, seed=5, requant=requant,
                            cflags=(*SANITIZE, "-DQ8_DW_OFFSET_PLANE=1"))
    bad = [(configs[int(o.name[1:])].describe(), o.mismatches) for o in report.outputs
           if o.mismatches]
    assert not bad, bad


def offset_plane_configs(count: int, seed: int) -> list[ConvConfig]:
    """Depthwise 3x3 layers for Thumb-1's kernel (q8_dwconv.h's offset planes): strides 1,
    2 (its assembly) and 3 (its C loop), odd and even output widths."""
    configs = depthwise_3x3_configs(count, seed)
    third = replace(configs[0], strides=(3, 3), spatial=(11, 13), pads=(1, 2, 1, 0),
                    seed=seed - 1)
    return [*configs, third]


def depthwise_rows_configs(count: int, seed: int) -> list[ConvConfig]:
    """Stride-1 depthwise 3x3 layers for the two-row kernel (dwconv_3x3_rows.c): odd and
    even heights, narrow and wide planes, one band per pass and several. At least two
    output rows: a single one takes the padded kernel."""
    configs = [replace(c, strides=(1, 1), spatial=(max(c.spatial[0], 4 - c.pads[0] - c.pads[2]),
                                                   c.spatial[1]))
               for c in depthwise_3x3_configs(count, seed)]
    wide = replace(configs[0], spatial=(21, 30), pads=(1, 1, 1, 1), batch=1, seed=seed - 1)
    return [*configs, wide]


@pytest.mark.parametrize("requant", ["float", "int"])
def test_depthwise_rows_kernel_is_bit_identical_to_the_reference(requant: str) -> None:
    """The two-row depthwise kernel of DSP cores, its portable C on the host (the asm and
    the saturating requantization run in QEMU: tests/targets/test_cortex_m.py), against the plain
    loops."""
    model = conv_batch_model(depthwise_rows_configs(24, 4100))
    fast = generate_sources(model, Options(requant=requant, dsp=True))
    reference = generate_sources(model, Options(requant=requant, kernels="reference"))
    kernels = {c.function for c in fast.program.calls}
    assert kernels and all("_3x3_rows_" in k for k in kernels), kernels
    source = fast.files[f"{fast.name}.c"].decode()
    # the wide plane's 11 bands in passes of 4; narrow ones in one pass
    assert ".bands = 4" in source and ".bands = 1" in source
    assert_same_outputs(fast, reference, seed=12)


def slab_configs(count: int, seed: int) -> list[ConvConfig]:
    """Group-1 layers the im2col kernels run in slab mode (q8_im2col.h): C * KH a multiple
    of 4, dilation_w 1, an even output width; every stride, padding, dilation_h, type and
    batch, chunks of one and several fills per row."""
    rng = np.random.default_rng(seed)
    configs = []
    for i in range(count):
        kh, kw = (int(v) for v in rng.choice([(3, 3), (1, 3), (3, 5), (2, 2), (5, 3), (3, 2)]))
        c = int(rng.choice([4, 8, 12])) if kh % 2 else int(rng.choice([2, 4, 6]))
        sh, sw = int(rng.integers(1, 4)), int(rng.integers(1, 3))
        dh = int(rng.integers(1, 3))
        pads = tuple(int(v) for v in rng.integers(0, 3, 4))
        ow = 2 * int(rng.integers(1, 12))
        w = (ow - 1) * sw + kw - pads[1] - pads[3]
        h = int(rng.integers(max(1, dh * (kh - 1) + 1 - pads[0] - pads[2]), 12))
        if w < 1:
            pads, w = (pads[0], 0, pads[2], 0), (ow - 1) * sw + kw
        x_dtype = str(rng.choice(["uint8", "int8"]))
        configs.append(ConvConfig(
            x_dtype=x_dtype, w_dtype="int8" if x_dtype == "int8" else str(
                rng.choice(["uint8", "int8"])),
            batch=int(rng.integers(1, 3)), channels=c, out_channels=int(rng.integers(1, 7)),
            spatial=(h, w), kernel=(kh, kw), group=1, strides=(sh, sw), dilations=(dh, 1),
            pads=pads, auto_pad=None, per_channel=bool(rng.random() < 0.5),
            bias=bool(rng.random() < 0.8), big_bias=bool(rng.random() < 0.2),
            kernel_shape_attr=True, seed=seed + i))
    return configs


@pytest.mark.parametrize("weights,dsp", [("int8", None), ("int16", True)])
@pytest.mark.parametrize("requant", ["float", "int"])
def test_slab_mode_is_bit_identical_to_the_reference(requant: str, weights: str,
                                                     dsp: bool | None) -> None:
    """The slab order of the im2col kernels (int8 weights, the DSP layout's portable C)
    against the plain loops; in QEMU against ORT: tests/targets/test_cortex_m.py. (The
    host's int16 kernel, *_w16p_*, gathers tiles of pixels instead.)"""
    configs = slab_configs(40, 6100)
    model = conv_batch_model(configs)
    fast = generate_sources(model, Options(requant=requant, weights=weights, dsp=dsp))
    source = fast.files[f"{fast.name}.c"].decode()
    slabs = re.findall(r"\.slab = (\d+),\s*\.chunk = (\d+)", source)
    im2col = [c for c in fast.program.calls if "im2col" in c.function]
    # the others have weight zero points: the general kernel
    assert len(im2col) >= 20 and sum(int(s) > 0 for s, _ in slabs) == len(im2col), slabs
    assert {int(c) for _, c in slabs} > {2}, slabs  # several pixels per fill too
    reference = generate_sources(model, Options(requant=requant, kernels="reference"))
    assert_same_outputs(fast, reference, seed=13)


def thumb1_sources_on_the_host(model: onnx.ModelProto,
                               interface: Interface = DEFAULT_INTERFACE) -> Generated:
    """The model's sources as generated for Cortex-M0+ (byte convolutions four pixels per
    pass where their columns allow, every depthwise layer from a padded copy, the integer
    requantization) in the host's project: the Thumb-1 layouts' portable C, runnable
    under the sanitizers."""
    host = generate_sources(model, Options(requant="int", interface=interface))
    m0 = generate_sources(model, Options(board="cortex-m0plus", interface=interface))
    files = dict(host.files)
    files.update({name: data for name, data in m0.files.items()
                  if name in (f"{m0.name}.c", f"{m0.name}.h") or name.startswith("runtime/")})
    return replace(host, files=files, program=m0.program, plan=m0.plan)


def test_thumb1_layouts_are_bit_identical_to_the_reference_on_the_host() -> None:
    """Cortex-M0+'s kernel choices from their C on the host under the sanitizers: the
    four-pixel byte convolution (1 x 4 loop, sixteen taps a pass and an odd block's
    entry, a last pass of one to three pixels, long columns where the layer's tensors are
    as large) and the two-pixel one for long columns beside small tensors,
    the depthwise offset planes (Q8_DW_OFFSET_PLANE=1), the prepared integer
    requantization; against the plain loops."""
    rng = np.random.default_rng(5500)
    configs = [random_conv_config(rng, 5500 + i) for i in range(20)]
    configs += offset_plane_configs(8, 5600)
    # 576 taps within the layer's own tensors' bytes (ResNet-8's last 3 x 3 layers):
    # four pixels per pass
    configs.append(replace(configs[0], channels=64, out_channels=8, group=1, kernel=(3, 3),
                           spatial=(8, 8), seed=5698))
    configs.append(replace(configs[0], channels=40, out_channels=6, group=1, kernel=(3, 3), batch=1,
                           spatial=(5, 7), seed=5699))  # 360 taps: two pixels per pass
    model = conv_batch_model(configs)
    # the last two's weights centred (zero point 0, 128 for uint8): the byte kernel
    inits = {i.name: i for i in model.graph.initializer}
    for node in model.graph.node[-2:]:
        wz = inits[node.input[5]]
        zp = numpy_helper.to_array(wz)
        centred = np.full_like(zp, 128 if zp.dtype == np.uint8 else 0)
        wz.CopyFrom(numpy_helper.from_array(centred, wz.name))
    thumb1 = thumb1_sources_on_the_host(model)
    source = thumb1.files[f"{thumb1.name}.c"].decode()
    columns = re.findall(r"\.k_padded = (\d+),\s+\.columns = (\d)", source)
    assert ("576", "4") in columns and ("360", "2") in columns, str(columns)
    reference = generate_sources(model, Options(requant="int", kernels="reference"))
    data = random_inputs(reference.program.inputs, 2, seed=13)
    ours = run_generated(thumb1, data, (*SANITIZE, "-DQ8_DW_OFFSET_PLANE=1"))
    theirs = run_generated(reference, data, SANITIZE)
    for got, want in zip(ours, theirs, strict=True):
        for name, value in got.items():
            assert np.array_equal(value, want[name]), name


@pytest.mark.parametrize("requant", ["float", "int"])
def test_helium_layouts_on_the_host_are_bit_identical_to_the_reference(
        requant: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Helium kernels' layouts and C loops (the path a Cortex-M55 build takes with
    Q8_NO_MVE, and every host) under the sanitizers: lowering as for an MVE core, the
    convolutions (*_im2col_mve_*: rows in fours, int8 columns, word-wide fills and their
    slack), the depthwise 3x3 (*_3x3_mve_*) and the matrix products (*_fc_*_mve_*), float
    outputs included, against the reference kernels."""
    import sys

    from codegen import pipeline

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from test_matrix_ops import combine, qgemm_case

    lowering = pipeline.lowering_options
    monkeypatch.setattr(pipeline, "lowering_options",
                        lambda target, graph: replace(lowering(target, graph), mve=True))
    rng = np.random.default_rng(5151)
    for model in (conv_batch_model(all_configs()[:64]),
                  conv_batch_model(depthwise_3x3_configs(24, 5800)),
                  combine([qgemm_case(rng, i) for i in range(12)])):
        fast = generate_sources(model, Options(requant=requant, weights="int8"))
        kinds = {c.function for c in fast.program.calls}
        assert any("_mve_" in f for f in kinds), kinds
        assert_same_outputs(fast, generate_sources(model, Options(requant=requant,
                                                                  kernels="reference")), 23)


def pointwise_configs(count: int, seed: int) -> list[ConvConfig]:
    """1x1 convolutions with stride 1, no padding and C a multiple of 4 (the RV32 kernel
    reads them in place), of every size, type and pixel count (tails of 1 to 3 pixels)."""
    rng = np.random.default_rng(seed)
    configs = []
    for i in range(count):
        c = random_conv_config(rng, seed + i)
        side = int(rng.integers(1, 9))
        configs.append(replace(
            c, batch=int(rng.integers(1, 3)), channels=4 * int(rng.integers(1, 9)),
            out_channels=int(rng.integers(1, 11)), spatial=(side, side + i % 4),
            kernel=(1, 1), group=1, strides=(1, 1), dilations=(1, 1), pads=None,
            auto_pad=None, arrays={}))
    return configs


@pytest.mark.parametrize("requant", ["float", "int"])
def test_riscv_layouts_on_the_host_are_bit_identical_to_the_reference(
        requant: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The RV32 kernels' layouts and C loops (the path a RISC-V build takes with
    Q8_NO_ASM, and every host) under the sanitizers: lowering as for an RV32 core, the
    convolutions (*_im2col_rv_*: rows in fours interleaved per tap, four pixels' columns,
    the 1x1 layers read in place), the depthwise rows (Q8_DW_RV, nine weights and a row
    chunk of sums) and the MULHU requantization with the generator's constants, against
    the reference kernels."""
    from codegen import pipeline

    lowering = pipeline.lowering_options
    monkeypatch.setattr(pipeline, "lowering_options", lambda target, graph: replace(
        lowering(target, graph), mcu=True, riscv=True))
    for model in (conv_batch_model(all_configs()[:160]),
                  conv_batch_model(pointwise_configs(16, 6100)),
                  conv_batch_model(depthwise_3x3_configs(24, 6200))):
        fast = generate_sources(model, Options(requant=requant, weights="int8"))
        kinds = {c.function for c in fast.program.calls}
        assert any("_rv_" in f or "_3x3_padded_" in f for f in kinds), kinds
        reference = generate_sources(model, Options(requant=requant, kernels="reference"))
        data = random_inputs(fast.program.inputs, 2, seed=29)
        ours = run_generated(fast, data, (*SANITIZE, "-DQ8_DW_RV=1"))
        for got, want in zip(ours, run_generated(reference, data, SANITIZE), strict=True):
            for name, value in got.items():
                assert np.array_equal(value, want[name]), name
