"""No undefined behaviour for any int8/uint8 input: every kernel family runs under ASan and
UBSan (and -fsanitize=float-cast-overflow where cc has it; where it has not, the summary
says so: test_float_to_int_overflow_is_checked is skipped with the reason) on constants
and inputs at their limits.

Weights all at the type's minimum or maximum or alternating between them, zero points at
the limits (0, 255, -128, 127), biases near INT32_MIN and INT32_MAX, large K (a 1x1
convolution over 4096 channels, matrix products with K = 8192), requantization scales
tiny (subnormal) and huge; inputs all at the minimum, all at the maximum, all zero (the
middle for uint8) and alternating both ways. Results are compared with ONNX Runtime bit
for bit; the DSP weight layout (host C with Options(dsp=True)) with the reference loops.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from conftest import (
    FLOAT_CAST_OVERFLOW,
    HAS_FLOAT_CAST_OVERFLOW,
    SANITIZE,
    compiler_accepts,
)
from modelgen import RANGE, Case, combine
from numpy.typing import NDArray
from onnx import helper

import codegen
from codegen.api import run_generated
from codegen.errors import UnsupportedError
from codegen.ops.conv.im2col import W16_MAX_TAPS
from codegen.options import Options
from codegen.pipeline import generate_sources

F32 = np.float32
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
PATTERNS = ("min", "max", "zero", "alternating", "alternating_reversed")


NO_FLOAT_CAST_OVERFLOW = (f"cc lacks {FLOAT_CAST_OVERFLOW}: float-to-int overflow is "
                          "unchecked in the tests")


def test_float_to_int_overflow_is_checked(tmp_path: Path) -> None:
    """The tests' sanitizer flags (SANITIZE) catch a float-to-int conversion out of range (and
    without the sanitizer the run says so, instead of losing the check silently)."""
    if not HAS_FLOAT_CAST_OVERFLOW:
        pytest.skip(NO_FLOAT_CAST_OVERFLOW)
    source, exe = tmp_path / "cast.c", tmp_path / "cast"
    source.write_text("int main(int argc, char **argv) {\n"
                      "    volatile float big = 3e9f * (float)argc;\n"
                      "    (void)argv;\n"
                      "    return (int)big == 0;\n"
                      "}\n")
    subprocess.run(["cc", *SANITIZE, "-o", str(exe), str(source)], check=True)
    run = subprocess.run([str(exe)], capture_output=True, text=True, check=False)
    assert run.returncode != 0 and "outside the range" in run.stderr, run.stderr


def test_the_sanitizer_probe_sees_a_missing_check() -> None:
    assert not compiler_accepts("-fsanitize=no-such-check")
    assert compiler_accepts("-fsanitize=undefined")


def fill(dtype: str, shape: tuple[int, ...] | list[int], pattern: str) -> NDArray[Any]:
    """A tensor of `dtype` at one of the extreme patterns."""
    if dtype == "float32":
        lo, hi, mid = -3.4028235e38, 3.4028235e38, 0.0
        low_alt, high_alt = -np.inf, np.inf
    else:
        lo, hi = RANGE.get(dtype, (INT32_MIN, INT32_MAX))
        mid = 128 if dtype == "uint8" else 0
        low_alt, high_alt = lo, hi
    size = int(np.prod(shape, dtype=np.int64))
    values: NDArray[Any]
    if pattern in ("min", "max", "zero"):
        values = np.full(size, {"min": lo, "max": hi, "zero": mid}[pattern])
    else:
        first, second = (low_alt, high_alt) if pattern == "alternating" else (high_alt, low_alt)
        values = np.resize(np.array([first, second]), size)
    return values.astype(dtype).reshape(shape)


def extreme_samples(model: onnx.ModelProto) -> list[dict[str, NDArray[Any]]]:
    dtypes = {onnx.TensorProto.UINT8: "uint8", onnx.TensorProto.INT8: "int8",
              onnx.TensorProto.FLOAT: "float32", onnx.TensorProto.INT32: "int32"}
    specs = {i.name: (dtypes[i.type.tensor_type.elem_type],
                      [d.dim_value for d in i.type.tensor_type.shape.dim])
             for i in model.graph.input}
    return [{name: fill(dtype, shape, p) for name, (dtype, shape) in specs.items()}
            for p in PATTERNS]


def const(dtype: str, shape: tuple[int, ...], pattern: str) -> NDArray[Any]:
    return fill(dtype, shape, pattern)


def scalar(value: Any, dtype: str) -> NDArray[Any]:
    return np.array(value, dtype=dtype)


# Requantization scales: (x_scale, w_scale, y_scale) whose f32(f32(x * w) / y) is ordinary,
# subnormal (about 1e-40) or huge (about 1e35), all finite.
SCALES = {"normal": (0.02, 0.01, 0.5), "tiny": (1e-20, 1e-20, 1.0),
          "huge": (1e15, 1e15, 1e-5)}


def conv_case(p: str, x_dtype: str, w_dtype: str, c: int, m: int, spatial: tuple[int, int],
              kernel: tuple[int, int], w_pattern: str, w_zp: int | list[int], x_zp: int,
              y_zp: int, bias: int | None, scales: str | tuple[Any, ...] = "normal",
              group: int = 1,
              pads: tuple[int, ...] = (0, 0, 0, 0), strides: tuple[int, int] = (1, 1),
              op: str = "QLinearConv") -> Case:
    """One QLinearConv (or ConvInteger) with constant weights at an extreme pattern."""
    w = const(w_dtype, (m, c // group, *kernel), w_pattern)
    xs, ws, ys = SCALES[scales] if isinstance(scales, str) else scales
    attrs: dict[str, Any] = {"group": group, "pads": list(pads), "strides": list(strides)}
    y_dtype = x_dtype
    if op == "QLinearConv":
        inits: dict[str, NDArray[Any]] = {
            f"{p}xs": scalar(xs, "float32"), f"{p}xz": scalar(x_zp, x_dtype), f"{p}w": w,
            f"{p}ws": np.array(ws, F32), f"{p}wz": np.array(w_zp, w_dtype),
            f"{p}ys": scalar(ys, "float32"), f"{p}yz": scalar(y_zp, x_dtype)}
        names = [f"{p}x", f"{p}xs", f"{p}xz", f"{p}w", f"{p}ws", f"{p}wz", f"{p}ys", f"{p}yz"]
        if bias is not None:
            inits[f"{p}b"] = np.full(m, bias, np.int32)
            names.append(f"{p}b")
    else:
        inits = {f"{p}w": w, f"{p}xz": scalar(x_zp, x_dtype), f"{p}wz": scalar(w_zp, w_dtype)}
        names = [f"{p}x", f"{p}w", f"{p}xz", f"{p}wz"]
        y_dtype = "int32"
    node = helper.make_node(op, names, [f"{p}y"], name=f"{p}conv", kernel_shape=list(kernel),
                            **attrs)
    return node, {f"{p}x": (x_dtype, [1, c, *spatial])}, inits, {f"{p}y": y_dtype}


def conv_cases() -> list[Case]:
    """Every convolution kernel variant at its limits: the reference loops (non-zero weight
    zero point or groups), im2col (group 1, zero point 0 after the uint8 shift), the
    depthwise 3x3 kernels with and without padding."""
    cases: list[Case] = []

    def add(*args: Any, **kwargs: Any) -> None:
        cases.append(conv_case(f"c{len(cases)}_", *args, **kwargs))

    for scales in SCALES:
        # reference: weight zero points at the limits
        add("uint8", "uint8", 8, 3, (4, 4), (3, 3), "max", 0, 255, 0, INT32_MAX, scales,
            pads=(1, 1, 1, 1))
        add("int8", "int8", 6, 4, (3, 5), (3, 3), "min", 127, -128, 127, INT32_MIN, scales,
            group=2, pads=(2, 0, 1, 2))
        add("uint8", "int8", 4, 3, (5, 5), (2, 3), "alternating", -128, 0, 255, -(2**30),
            scales, strides=(2, 1))
        # im2col (int8 weights, or int16 with weights="int16"): group 1, zero point 0
        add("uint8", "int8", 4096, 3, (2, 2), (1, 1), "min", 0, 0, 128, INT32_MIN + 1, scales)
        add("int8", "int8", 4096, 2, (1, 3), (1, 1), "max", 0, -128, 0, INT32_MAX, scales)
        add("int8", "int8", 16, 5, (4, 4), (3, 3), "alternating", 0, 127, -128, None, scales,
            pads=(1, 1, 1, 1))
        add("uint8", "uint8", 3, 2, (5, 4), (3, 3), "min", 128, 255, 255, INT32_MAX, scales,
            pads=(0, 2, 1, 0))
        # depthwise 3x3: padded and not
        add("uint8", "uint8", 4, 4, (4, 5), (3, 3), "max", 0, 255, 0, INT32_MAX, scales,
            group=4, pads=(1, 1, 1, 1))
        add("int8", "int8", 3, 3, (5, 5), (3, 3), "min", 127, -128, 127, INT32_MIN, scales,
            group=3)
        add("int8", "int8", 2, 2, (6, 5), (3, 3), "alternating", -128, 127, 0, None, scales,
            group=2, strides=(2, 2), pads=(1, 0, 2, 1))
    # per-channel: scales subnormal, huge and ordinary side by side; zero points at both
    # limits (reference) or 0 (im2col)
    per_channel = (0.02, [1e-38, 1e30, 0.01], 0.5)
    add("int8", "int8", 5, 3, (3, 3), (3, 3), "alternating", [-128, 127, 0], 127, -128,
        INT32_MAX, per_channel, pads=(1, 1, 1, 1))
    add("uint8", "uint8", 300, 3, (2, 2), (1, 1), "max", [128, 128, 128], 255, 0, INT32_MIN,
        per_channel)
    add("uint8", "uint8", 3, 3, (4, 4), (3, 3), "min", [255, 0, 128], 0, 255, None,
        per_channel, group=3, pads=(1, 1, 1, 1))
    return cases


@pytest.mark.parametrize("weights", ["int8", "int16"])
@pytest.mark.parametrize("requant", ["float", "int"])
def test_convolutions_at_the_limits(requant: str, weights: str) -> None:
    cases = conv_cases()
    model = combine(cases)
    gen = generate_sources(model, Options(requant=requant, weights=weights))
    kernels = {c.function for c in gen.program.calls}
    wide = "im2col_w16p_" if weights == "int16" else "im2col_"
    for family in ("q8_conv_u8_", "q8_conv_s8_", wide, "dwconv_u8_3x3_pix",
                   "dwconv_s8_3x3_"):
        assert any(family in k for k in kernels), (family, kernels)
    if requant == "float":  # the bounded requantization is among them
        source = gen.files[f"{gen.name}.c"].decode()
        assert ".bounded = 1" in source
    report = codegen.verify(model, inputs=extreme_samples(model), requant=requant,
                            weights=weights, cflags=SANITIZE)
    assert report.ok, [(c[0].name, o) for c, o in zip(cases, report.outputs, strict=True)
                       if o.mismatches]


def run_both(model: onnx.ModelProto, fast: Options, requant: str) -> None:
    """The fast kernels of `fast` against the reference loops, under the sanitizers."""
    ours = generate_sources(model, fast)
    reference = generate_sources(model, Options(requant=requant, kernels="reference"))
    data = extreme_samples(model)
    flags = SANITIZE
    for got, want in zip(run_generated(ours, data, flags), run_generated(reference, data, flags),
                         strict=True):
        for name, value in got.items():
            assert np.array_equal(value.view(np.uint8), want[name].view(np.uint8)), name


@pytest.mark.parametrize("requant", ["float", "int"])
def test_dsp_weight_layout_at_the_limits(requant: str) -> None:
    """The *_w16_* layout's portable C (SMLAD emulated modulo 2^32) on the host."""
    model = combine([c for c in conv_cases() if "conv" in c[0].name] + matrix_cases(fast=True))
    options = Options(requant=requant, weights="int16", dsp=True)
    kernels = {c.function for c in generate_sources(model, options).program.calls}
    assert any("im2col_w16_" in k for k in kernels) and any("fc_" in k and "_w16_" in k
                                                             for k in kernels), kernels
    run_both(model, options, requant)


def wide_conv_k(k: int) -> str:
    """The kernel the generator picks for a 1x1 uint8 convolution over k channels."""
    model = combine([conv_case("c_", "uint8", "int8", k, 2, (1, 1), (1, 1), "min", 0, 255, 0,
                               INT32_MAX)])
    calls = generate_sources(model, Options(weights="int16")).program.calls
    return calls[0].function


def test_block_sums_stay_inside_int32() -> None:
    """*_w16p_* sums a layer's products in int32 from zero: |w * x| <= 128 * 255, so K must
    stay below 2^16 (65536 * 32640 < 2^31); from there on the int8 im2col kernel (modulo
    2^32) takes over."""
    assert W16_MAX_TAPS == 2**16 and (W16_MAX_TAPS - 1) * 128 * 255 < 2**31
    assert "im2col_w16p_" in wide_conv_k(W16_MAX_TAPS - 1)
    assert "im2col_w16p_" not in wide_conv_k(W16_MAX_TAPS)
    assert "im2col_" in wide_conv_k(W16_MAX_TAPS)


def test_large_k_convolution_that_wraps() -> None:
    """K = 2^16 + 8 taps of 255 * -128 sum past INT32_MIN: the accumulation wraps modulo
    2^32 as ORT's does, without signed overflow."""
    model = combine([conv_case("c_", "uint8", "int8", 2**16 + 8, 2, (1, 1), (1, 1), "min", 0,
                               0, 128, INT32_MIN)])
    report = codegen.verify(model, inputs=extreme_samples(model), weights="int16",
                            cflags=SANITIZE)
    assert report.ok, report.outputs


def matmul_case(p: str, a_dtype: str, b_dtype: str, m: int, k: int, n: int, b_pattern: str,
                a_zp: int, b_zp: int, y_zp: int, scales: str, b_const: bool = True) -> Case:
    xs, ws, ys = SCALES[scales]
    inputs = {f"{p}a": (a_dtype, [m, k])}
    inits = {f"{p}as": scalar(xs, "float32"), f"{p}az": scalar(a_zp, a_dtype),
             f"{p}bs": scalar(ws, "float32"), f"{p}bz": scalar(b_zp, b_dtype),
             f"{p}ys": scalar(ys, "float32"), f"{p}yz": scalar(y_zp, a_dtype)}
    if b_const:
        inits[f"{p}b"] = const(b_dtype, (k, n), b_pattern)
    else:
        inputs[f"{p}b"] = (b_dtype, [k, n])
    names = [f"{p}a", f"{p}as", f"{p}az", f"{p}b", f"{p}bs", f"{p}bz", f"{p}ys", f"{p}yz"]
    node = helper.make_node("QLinearMatMul", names, [f"{p}y"], name=f"{p}matmul")
    return node, inputs, inits, {f"{p}y": a_dtype}


def qgemm_case(p: str, a_dtype: str, b_dtype: str, m: int, k: int, n: int, b_pattern: str,
               a_zp: int, b_zp: int, c: int | None, output: str, scales: str,
               trans_a: int = 0, trans_b: int = 0, alpha: float = 1.0) -> Case:
    xs, ws, ys = SCALES[scales]
    inits = {f"{p}as": scalar(xs, "float32"), f"{p}az": scalar(a_zp, a_dtype),
             f"{p}b": const(b_dtype, (n, k) if trans_b else (k, n), b_pattern),
             f"{p}bs": scalar(ws, "float32"), f"{p}bz": scalar(b_zp, b_dtype)}
    names = [f"{p}a", f"{p}as", f"{p}az", f"{p}b", f"{p}bs", f"{p}bz"]
    if c is not None or output == "quantized":
        names.append(f"{p}c" if c is not None else "")
        if c is not None:
            inits[f"{p}c"] = np.full(n, c, np.int32)
    out_dtype = "float32"
    if output == "quantized":
        inits[f"{p}ys"] = scalar(ys, "float32")
        inits[f"{p}yz"] = scalar(RANGE[a_dtype][1], a_dtype)
        names += [f"{p}ys", f"{p}yz"]
        out_dtype = a_dtype
    node = helper.make_node("QGemm", names, [f"{p}y"], name=f"{p}qgemm", domain="com.microsoft",
                            transA=trans_a, transB=trans_b, alpha=alpha)
    a_shape = [k, m] if trans_a else [m, k]
    return node, {f"{p}a": (a_dtype, a_shape)}, inits, {f"{p}y": out_dtype}


def matrix_cases(fast: bool = False) -> list[Case]:
    """QLinearMatMul and QGemm on the fast q8_fc_* path (constant B, zero point 0) and,
    unless `fast`, the reference gemm, MatMulInteger and ConvInteger, with K up to 8192."""
    cases: list[Case] = []
    for i, scales in enumerate(SCALES):
        p = f"m{i}"
        cases += [
            matmul_case(f"{p}a_", "uint8", "int8", 2, 8192, 3, "min", 0, 0, 255, scales),
            matmul_case(f"{p}b_", "int8", "int8", 3, 8192, 5, "max", 127, 0, -128, scales),
            matmul_case(f"{p}c_", "uint8", "uint8", 2, 1000, 6, "alternating", 255, 128, 0,
                        scales),
            qgemm_case(f"{p}d_", "uint8", "int8", 2, 8192, 5, "min", 255, 0, INT32_MAX,
                       "quantized", scales),
            qgemm_case(f"{p}e_", "int8", "int8", 3, 4096, 4, "alternating", -128, 0,
                       INT32_MIN, "quantized", scales, trans_b=1),
            qgemm_case(f"{p}f_", "uint8", "uint8", 1, 2048, 3, "max", 0, 128, INT32_MIN,
                       "float", scales, alpha=3.0),
        ]
        if fast:
            continue
        cases += [
            matmul_case(f"{p}g_", "uint8", "uint8", 2, 8192, 3, "max", 255, 0, 128, scales),
            matmul_case(f"{p}h_", "int8", "int8", 2, 4096, 3, "min", -128, 127, 0, scales),
            matmul_case(f"{p}i_", "int8", "int8", 2, 4096, 3, "", 127, -128, 0, scales,
                        b_const=False),
            qgemm_case(f"{p}j_", "uint8", "int8", 2, 4096, 3, "min", 255, 127, INT32_MAX,
                       "quantized", scales, trans_a=1),
        ]
    for i, (a_dtype, b_dtype, a_zp, b_zp) in enumerate([
            ("uint8", "uint8", 255, 0), ("uint8", "int8", 0, -128), ("int8", "int8", -128, 127),
            ("uint8", "uint8", 0, 255)]):
        p = f"mi{i}_"
        inits = {f"{p}b": const(b_dtype, (8192, 2), ["min", "max", "alternating"][i % 3]),
                 f"{p}az": scalar(a_zp, a_dtype), f"{p}bz": scalar(b_zp, b_dtype)}
        node = helper.make_node("MatMulInteger", [f"{p}a", f"{p}b", f"{p}az", f"{p}bz"],
                                [f"{p}y"], name=f"{p}mmi")
        cases.append((node, {f"{p}a": (a_dtype, [3, 8192])}, inits, {f"{p}y": "int32"}))
    for i, (a_dtype, b_dtype, a_zp, b_zp) in enumerate([
            ("uint8", "int8", 255, [-128, 127, 0]), ("int8", "int8", -128, [127, -128, 0])]):
        p = f"mf{i}_"  # MatMulIntegerToFloat, per-column scales far apart
        inits = {f"{p}b": const(b_dtype, (4096, 3), ["min", "alternating"][i]),
                 f"{p}as": scalar(1e15 if i else 1e-20, "float32"),
                 f"{p}bs": np.array([1e-25, 1e20, 0.01], F32),
                 f"{p}az": scalar(a_zp, a_dtype), f"{p}bz": np.array(b_zp, b_dtype)}
        node = helper.make_node("MatMulIntegerToFloat",
                                [f"{p}a", f"{p}b", f"{p}as", f"{p}bs", f"{p}az", f"{p}bz"],
                                [f"{p}y"], name=f"{p}node", domain="com.microsoft")
        cases.append((node, {f"{p}a": (a_dtype, [2, 4096])}, inits, {f"{p}y": "float32"}))
    cases.append(conv_case("ci0_", "uint8", "uint8", 4096, 2, (1, 2), (1, 1), "max", 0, 255, 0,
                           None, op="ConvInteger"))
    cases.append(conv_case("ci1_", "int8", "int8", 8, 3, (4, 4), (3, 3), "min", 127, -128, 0,
                           None, op="ConvInteger", pads=(1, 1, 1, 1)))
    return cases


@pytest.mark.parametrize("weights", ["int8", "int16"])
@pytest.mark.parametrize("requant", ["float", "int"])
def test_matrix_products_at_the_limits(requant: str, weights: str) -> None:
    cases = matrix_cases()
    model = combine(cases)
    kernels = {c.function for c in generate_sources(
        model, Options(requant=requant, weights=weights)).program.calls}
    assert any(k.startswith("q8_fc_") for k in kernels), kernels
    assert any(k.startswith("q8_gemm_") for k in kernels), kernels
    report = codegen.verify(model, inputs=extreme_samples(model), requant=requant,
                            weights=weights, cflags=SANITIZE)
    assert report.ok, [(c[0].name, o) for c, o in zip(cases, report.outputs, strict=True)
                       if o.mismatches]


def unary_q(p: str, op: str, dtype: str, shape: list[int], x_zp: int, y_zp: int,
            xs: float, ys: float, **attrs: Any) -> Case:
    inits = {f"{p}xs": scalar(xs, "float32"), f"{p}xz": scalar(x_zp, dtype),
             f"{p}ys": scalar(ys, "float32"), f"{p}yz": scalar(y_zp, dtype)}
    node = helper.make_node(op, [f"{p}x", f"{p}xs", f"{p}xz", f"{p}ys", f"{p}yz"], [f"{p}y"],
                            name=f"{p}node", domain="com.microsoft", **attrs)
    return node, {f"{p}x": (dtype, shape)}, inits, {f"{p}y": dtype}


def other_cases() -> list[Case]:
    """Element-wise, pooling, concatenation, table, softmax, quantize/dequantize and clamp
    operators with zero points at the limits and scales far apart."""
    cases: list[Case] = []
    limits = [("uint8", 0, 255), ("uint8", 255, 0), ("int8", -128, 127), ("int8", 127, -128)]
    # Far apart, and their ratios still finite float32 (non-finite ones are refused).
    scale_pairs = [(0.02, 0.02), (1e-20, 1e15), (1e18, 1e-18), (1e-3, 1e-6)]
    for i, ((dtype, zp_a, zp_b), (sa, sy)) in enumerate(zip(limits * 2, scale_pairs * 2,
                                                            strict=True)):
        p = f"e{i}_"
        for op in ("QLinearAdd", "QLinearMul"):
            q = f"{p}{op[7:].lower()}_"
            # QLinearMul's scale A * B / C: ordinary, huge, tiny, ordinary.
            s_a, s_c = (sa, sy) if op == "QLinearAdd" else [
                (0.02, 0.4), (1e15, 1.0), (1e-15, 1.0), (1e-3, 1e-3)][i % 4]
            inits = {f"{q}as": scalar(s_a, "float32"), f"{q}az": scalar(zp_a, dtype),
                     f"{q}bs": scalar(s_a, "float32"), f"{q}bz": scalar(zp_b, dtype),
                     f"{q}cs": scalar(s_c, "float32"), f"{q}cz": scalar(zp_b, dtype)}
            names = [f"{q}a", f"{q}as", f"{q}az", f"{q}b", f"{q}bs", f"{q}bz", f"{q}cs",
                     f"{q}cz"]
            b_shape = [1, 3, 1, 1] if i % 2 else [2, 3, 4, 5]
            node = helper.make_node(op, names, [f"{q}y"], name=f"{q}node",
                                    domain="com.microsoft")
            cases.append((node, {f"{q}a": (dtype, [2, 3, 4, 5]), f"{q}b": (dtype, b_shape)},
                          inits, {f"{q}y": dtype}))
        cases.append(unary_q(f"{p}gap_", "QLinearGlobalAveragePool", dtype,
                             [1, 2, 256, 64] if i < 2 else [2, 3, 5, 7], zp_a, zp_b, sa,
                             sa / 100 if i % 2 else sa, channels_last=i % 2))
        cases.append(unary_q(f"{p}ap_", "QLinearAveragePool", dtype, [1, 2, 6, 7], zp_a, zp_b,
                             sa, sy, kernel_shape=[3, 3], strides=[2, 1], pads=[1, 1, 2, 2],
                             count_include_pad=i % 2))
        cases.append(unary_q(f"{p}sig_", "QLinearSigmoid", dtype, [4, 8], zp_a, zp_b, sa, sy))
        cases.append(unary_q(f"{p}lr_", "QLinearLeakyRelu", dtype, [4, 8], zp_a, zp_b, sa, sy,
                             alpha=0.01 if i % 2 else 100.0))
        cases.append(unary_q(f"{p}sm_", "QLinearSoftmax", dtype, [3, 1000 if i < 2 else 7],
                             zp_a, RANGE[dtype][0], sa,
                             [1 / 256, 1e15, 2.0**-28, 1e-3][i % 4], axis=-1,
                             opset=13))
        names = [f"{p}cs", f"{p}cz", f"{p}c0", f"{p}s0", f"{p}z0", f"{p}c1", f"{p}s1", f"{p}z1"]
        node = helper.make_node("QLinearConcat", names, [f"{p}cy"], name=f"{p}concat", axis=1,
                                domain="com.microsoft")
        cases.append((node, {f"{p}c0": (dtype, [2, 3, 4]), f"{p}c1": (dtype, [2, 5, 4])},
                      {f"{p}cs": scalar(sy, "float32"), f"{p}cz": scalar(zp_b, dtype),
                       f"{p}s0": scalar(sa, "float32"), f"{p}z0": scalar(zp_a, dtype),
                       f"{p}s1": scalar(sy, "float32"), f"{p}z1": scalar(zp_b, dtype)},
                      {f"{p}cy": dtype}))
        cases.append((helper.make_node("MaxPool", [f"{p}mx"], [f"{p}my"], name=f"{p}maxpool",
                                       kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
                      {f"{p}mx": (dtype, [1, 2, 7, 6])}, {}, {f"{p}my": dtype}))
        if dtype == "int8":  # Relu (opset 14) has no uint8
            cases.append((helper.make_node("Relu", [f"{p}rx"], [f"{p}ry"], name=f"{p}relu"),
                          {f"{p}rx": (dtype, [3, 5])}, {}, {f"{p}ry": dtype}))
        lo, hi = sorted((zp_a, zp_b))
        cases.append((helper.make_node("Clip", [f"{p}kx", f"{p}klo", f"{p}khi"], [f"{p}ky"],
                                       name=f"{p}clip"),
                      {f"{p}kx": (dtype, [3, 5])},
                      {f"{p}klo": scalar(lo, dtype), f"{p}khi": scalar(hi, dtype)},
                      {f"{p}ky": dtype}))
        cases.append((helper.make_node("QuantizeLinear", [f"{p}qx", f"{p}qs", f"{p}qz"],
                                       [f"{p}qy"], name=f"{p}quantize"),
                      {f"{p}qx": ("float32", [4, 6])},
                      {f"{p}qs": scalar(sa, "float32"), f"{p}qz": scalar(zp_a, dtype)},
                      {f"{p}qy": dtype}))
        cases.append((helper.make_node("DequantizeLinear", [f"{p}dx", f"{p}ds", f"{p}dz"],
                                       [f"{p}dy"], name=f"{p}dequantize"),
                      {f"{p}dx": (dtype, [4, 6])},
                      {f"{p}ds": scalar(sy, "float32"), f"{p}dz": scalar(zp_a, dtype)},
                      {f"{p}dy": "float32"}))
    cases.append((helper.make_node("DequantizeLinear", ["d32x", "d32s"], ["d32y"],
                                   name="dequantize_int32"),
                  {"d32x": ("int32", [2, 6])}, {"d32s": scalar(1e30, "float32")},
                  {"d32y": "float32"}))
    return cases


@pytest.mark.parametrize("requant", ["float", "int"])
def test_other_operators_at_the_limits(requant: str) -> None:
    cases = other_cases()
    model = combine(cases, opset=14)
    report = codegen.verify(model, inputs=extreme_samples(model), requant=requant,
                            cflags=SANITIZE)
    assert report.ok, [(c[0].name, o) for c, o in zip(cases, report.outputs, strict=True)
                       if o.mismatches]



@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
def test_scale_combinations_that_overflow_are_refused(op: str) -> None:
    """Valid scales whose float32 ratio or product overflows: a clear refusal, not a
    crash in the generator (the kernels' constants must be finite)."""
    inits = {"as": scalar(1e30, "float32"), "az": scalar(0, "uint8"),
             "bs": scalar(1e30, "float32"), "bz": scalar(0, "uint8"),
             "cs": scalar(1e-30, "float32"), "cz": scalar(0, "uint8")}
    node = helper.make_node(op, ["a", "as", "az", "b", "bs", "bz", "cs", "cz"], ["y"],
                            domain="com.microsoft")
    model = combine([(node, {"a": ("uint8", [4]), "b": ("uint8", [4])}, inits,
                      {"y": "uint8"})])
    for requant in ("float", "int"):
        with pytest.raises(UnsupportedError, match="overflows float32"):
            generate_sources(model, Options(requant=requant))


def test_integer_requantization_refuses_an_infinite_scale() -> None:
    model = combine([conv_case("c_", "uint8", "int8", 2, 2, (3, 3), (1, 1), "max", 0, 0, 0,
                               None, scales=(1e30, 1e30, 1.0))])
    with pytest.raises(UnsupportedError, match="overflows float32"):
        generate_sources(model, Options(requant="int"))


def ort_rejected_cases() -> list[Case]:
    """Models ONNX allows and ORT 1.32 does not run: int8 activations with uint8 weights,
    ConvInteger with one weight zero point per channel."""
    cases: list[Case] = []
    for i, (w_zp, group, kernel) in enumerate([(0, 1, (3, 3)), (128, 1, (1, 1)),
                                               (255, 4, (3, 3)), (128, 4, (3, 3))]):
        cases.append(conv_case(f"r{i}_", "int8", "uint8", 4 if group > 1 else 600, 4, (3, 3),
                               kernel, ["max", "min", "alternating", "max"][i], w_zp, -128,
                               127, [INT32_MAX, INT32_MIN, None, 1][i], group=group,
                               pads=(1, 1, 1, 1) if kernel == (3, 3) else (0, 0, 0, 0)))
    cases.append(conv_case("ri_", "uint8", "uint8", 64, 3, (3, 3), (3, 3), "max",
                           [0, 255, 128], 255, 0, None, op="ConvInteger"))
    for i, b_zp in enumerate([128, 0]):
        cases.append(matmul_case(f"rm{i}_", "int8", "uint8", 2, 8192, 5, "max", -128, b_zp,
                                 127, "normal"))
    inits = {"rmi_b": const("uint8", (4096, 3), "max"), "rmi_az": scalar(127, "int8"),
             "rmi_bz": scalar(0, "uint8")}
    node = helper.make_node("MatMulInteger", ["rmi_a", "rmi_b", "rmi_az", "rmi_bz"], ["rmi_y"],
                            name="rmi_node")
    cases.append((node, {"rmi_a": ("int8", [2, 4096])}, inits, {"rmi_y": "int32"}))
    return cases


@pytest.mark.parametrize("requant,weights", [("float", "int8"), ("int", "int16")])
def test_models_ort_does_not_run(requant: str, weights: str) -> None:
    """Without ORT to compare with: our C under the sanitizers, fast kernels against the
    reference loops."""
    model = combine(ort_rejected_cases())
    run_both(model, Options(requant=requant, weights=weights), requant)


def test_integer_fma_at_the_limits() -> None:
    """QLinearAdd's fused multiply-adds through the integer fmaf that cores without an FMA
    unit use (Q8_SOFT_FMA), against ORT."""
    model = combine([c for c in other_cases() if c[0].op_type == "QLinearAdd"])
    report = codegen.verify(model, inputs=extreme_samples(model), requant="float",
                            cflags=(*SANITIZE, "-DQ8_SOFT_FMA"))
    assert report.ok, [o for o in report.outputs if o.mismatches]
