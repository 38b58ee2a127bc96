"""The 16-bit x 8-bit products of --integer-only (ops/product16.py: QLinearConv16 and
QLinearMatMul16 on runtime_c/conv_s16.c and fully_connected_s16.c) against an exact
oracle written here: the integer sums in Python, the exact value rounded half to even as
QuantizeLinear rounds (codegen/arith/exact_requant.py's rationals), then saturated.

Random A16W8 QDQ units (DequantizeLinear -> Conv/MatMul/Gemm -> QuantizeLinear with
int16 or uint16 activations and symmetric int8 weights, every convolution attribute,
per-tensor and per-channel scales, biases) in models with integer inputs and outputs:
the generated C under ASan and UBSan equals the oracle, and `verify --integer-only`
finds it bit-exact against ORT on the converted model (its int64 form of each unit)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from conftest import SANITIZE, in_qemu
from modelgen import ConvConfig, random_conv_config
from numpy.typing import NDArray
from onnx import TensorProto, helper, numpy_helper

import codegen
from codegen.api import run_generated
from codegen.arith.exact_requant import requantize_exact_reference
from codegen.errors import UnsupportedError
from codegen.options import Options
from codegen.pipeline import generate_sources

F32 = np.float32
RANGES = {"int16": (-32768, 32767), "uint16": (0, 65535)}
ONNX_TYPES = {"int16": TensorProto.INT16, "uint16": TensorProto.UINT16}


@dataclass
class Unit:
    """One A16W8 unit of a test model: its nodes and constants, and the oracle."""

    nodes: list[onnx.NodeProto]
    initializers: list[onnx.TensorProto]
    x: str
    x_shape: tuple[int, ...]
    y: str
    oracle: Any  # x (integers) -> y (integers)


def scales(rng: np.random.Generator, taps: int, channels: int,
           per_channel: bool) -> tuple[F32, NDArray[Any], F32]:
    sx = F32(2.0 ** rng.uniform(-16, -6))
    sw = (2.0 ** rng.uniform(-10, -4, channels if per_channel else 1)).astype(F32)
    # An output scale near the products' magnitude, so outputs spread over the range.
    sy = F32(float(sx) * float(sw.mean()) * np.sqrt(taps) * 128 * rng.uniform(1, 64))
    return sx, sw, sy


def requantized(acc: NDArray[Any], channel_axis: int, sx: F32, sw: NDArray[Any], sy: F32,
                yzp: int, dtype: str) -> NDArray[Any]:
    """The oracle's rounding of every accumulator (Python integers, exact rationals)."""
    lo, hi = RANGES[dtype]
    out = np.empty(acc.shape, np.int64)
    for index in np.ndindex(*acc.shape):
        s = sw[index[channel_axis] if sw.size > 1 else 0]
        out[index] = requantize_exact_reference(int(acc[index]), float(sx), float(s),
                                                float(sy), yzp, lo, hi)
    return out.astype(dtype)


def same_pads(size: int, k: int, s: int, d: int, upper: bool) -> tuple[int, int]:
    out = -(-size // s)
    total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
    small = total // 2
    return (small, total - small) if upper else (total - small, small)


def conv_pads(cfg: ConvConfig) -> list[tuple[int, int]]:
    n = len(cfg.spatial)
    if cfg.auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        return [same_pads(cfg.spatial[i], cfg.kernel[i], cfg.strides[i], cfg.dilations[i],
                          cfg.auto_pad == "SAME_UPPER") for i in range(n)]
    if cfg.pads is None:
        return [(0, 0)] * n
    return [(cfg.pads[i], cfg.pads[n + i]) for i in range(n)]


def conv_oracle(x: NDArray[Any], xzp: int, w: NDArray[Any], bias: NDArray[Any] | None,
                cfg: ConvConfig) -> NDArray[Any]:
    """The exact int64 sums of a convolution: the input padded with its zero point."""
    centred = x.astype(np.int64) - xzp
    pads = conv_pads(cfg)
    padded = np.pad(centred, [(0, 0), (0, 0), *pads])
    n = x.shape[0]
    m, cg = w.shape[:2]
    mg = m // cfg.group
    k, s, d = cfg.kernel, cfg.strides, cfg.dilations
    out_sizes = [(padded.shape[2 + i] - (d[i] * (k[i] - 1) + 1)) // s[i] + 1
                 for i in range(len(k))]
    acc = np.zeros((n, m, *out_sizes), np.int64)
    for b in range(n):
        for o in range(m):
            g = o // mg
            for pos in np.ndindex(*out_sizes):
                window = padded[(b, slice(g * cg, (g + 1) * cg), *(
                    slice(pos[i] * s[i], pos[i] * s[i] + d[i] * (k[i] - 1) + 1, d[i])
                    for i in range(len(k))))]
                acc[(b, o, *pos)] = int(np.sum(window * w[o].astype(np.int64)))
            if bias is not None:
                acc[b, o] += int(bias[o])
    return acc


def qdq_nodes(prefix: str, dtype: str, rng: np.random.Generator, sx: F32, sw: NDArray[Any],
              sy: F32, w: NDArray[Any], bias: NDArray[Any] | None, axis: int,
              ) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto], int, int, list[str]]:
    """The DequantizeLinear of x, w and the bias (their outputs), the quantization
    constants, and the zero points drawn for x and y."""
    lo, hi = RANGES[dtype]
    xzp = int(rng.integers(lo, hi + 1)) if rng.random() < 0.7 else 0
    yzp = int(rng.integers(lo // 2, hi // 2 + 1)) if dtype == "int16" else \
        int(rng.integers(0, 65536))
    np_type = np.dtype(dtype)
    inits = [
        numpy_helper.from_array(np.array(sx, F32), f"{prefix}_sx"),
        numpy_helper.from_array(np.array(xzp, np_type), f"{prefix}_xzp"),
        numpy_helper.from_array(w, f"{prefix}_w"),
        numpy_helper.from_array(sw if sw.size > 1 else sw.reshape(()), f"{prefix}_sw"),
        numpy_helper.from_array(np.zeros(sw.shape if sw.size > 1 else (), np.int8),
                                f"{prefix}_wzp"),
        numpy_helper.from_array(np.array(sy, F32), f"{prefix}_sy"),
        numpy_helper.from_array(np.array(yzp, np_type), f"{prefix}_yzp"),
    ]
    nodes = [
        helper.make_node("DequantizeLinear", [f"{prefix}_x", f"{prefix}_sx", f"{prefix}_xzp"],
                         [f"{prefix}_xf"]),
        helper.make_node("DequantizeLinear", [f"{prefix}_w", f"{prefix}_sw", f"{prefix}_wzp"],
                         [f"{prefix}_wf"], axis=axis),
    ]
    operands = [f"{prefix}_xf", f"{prefix}_wf"]
    if bias is not None:
        bias_scale = (F32(sx) * sw).astype(F32)
        inits += [numpy_helper.from_array(bias, f"{prefix}_b"),
                  numpy_helper.from_array(bias_scale if sw.size > 1 else bias_scale.reshape(()),
                                          f"{prefix}_bs"),
                  numpy_helper.from_array(np.zeros(bias_scale.shape if sw.size > 1 else (),
                                                   np.int32), f"{prefix}_bzp")]
        nodes.append(helper.make_node("DequantizeLinear",
                                      [f"{prefix}_b", f"{prefix}_bs", f"{prefix}_bzp"],
                                      [f"{prefix}_bf"], axis=0))
        operands.append(f"{prefix}_bf")
    return nodes, inits, xzp, yzp, operands


def quantize_output(prefix: str) -> onnx.NodeProto:
    return helper.make_node("QuantizeLinear", [f"{prefix}_yf", f"{prefix}_sy", f"{prefix}_yzp"],
                            [f"{prefix}_y"])


def activation_nodes(prefix: str, kind: str, sy: F32, yzp: int, dtype: str,
                     ) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto], tuple[int, int]]:
    """Relu or Clip between the product and its QuantizeLinear, and the bounds it leaves
    on the quantized output: Q(clip(v)) = clip(Q(v), Q(lo), Q(hi)), Q monotone, with
    QuantizeLinear's float32 arithmetic on the bounds."""
    lo, hi = RANGES[dtype]

    def quantized(bound: float) -> int:
        q = float(np.rint(np.float32(bound) / np.float32(sy))) + yzp
        return int(min(max(q, lo), hi))
    if kind == "relu":
        return ([helper.make_node("Relu", [f"{prefix}_pre"], [f"{prefix}_yf"])], [],
                (quantized(0.0), hi))
    bound = float(sy) * float(rng_bound(sy))
    inits = [numpy_helper.from_array(np.array(-bound / 3, F32), f"{prefix}_clip_lo"),
             numpy_helper.from_array(np.array(bound, F32), f"{prefix}_clip_hi")]
    node = helper.make_node("Clip", [f"{prefix}_pre", f"{prefix}_clip_lo", f"{prefix}_clip_hi"],
                            [f"{prefix}_yf"])
    return [node], inits, (quantized(-bound / 3), quantized(bound))


def rng_bound(sy: F32) -> float:
    """A Clip bound a few thousand steps wide (deterministic, so the oracle knows it)."""
    return 3000.5


def conv_unit(prefix: str, cfg: ConvConfig, dtype: str, rng: np.random.Generator,
              activation: str | None = None) -> Unit:
    cg = cfg.channels // cfg.group
    w = cfg.arrays.get("w", rng.integers(-127, 128, (cfg.out_channels, cg, *cfg.kernel)))
    w = w.astype(np.int8)
    taps = int(np.prod(w.shape[1:]))
    sx, sw, sy = scales(rng, taps, cfg.out_channels, cfg.per_channel)
    bias = rng.integers(-(2**26) if cfg.big_bias else -(2**16), 2**26 if cfg.big_bias
                        else 2**16, cfg.out_channels).astype(np.int32) if cfg.bias else None
    bias = cfg.arrays.get("bias", bias)
    nodes, inits, xzp, yzp, operands = qdq_nodes(prefix, dtype, rng, sx, sw, sy, w, bias, 0)
    attrs: dict[str, Any] = {"group": cfg.group, "strides": list(cfg.strides),
                             "dilations": list(cfg.dilations)}
    if cfg.auto_pad is not None:
        attrs["auto_pad"] = cfg.auto_pad
    if cfg.pads is not None:
        attrs["pads"] = list(cfg.pads)
    bounds = RANGES[dtype]
    if activation is None:
        nodes.append(helper.make_node("Conv", operands, [f"{prefix}_yf"], **attrs))
    else:
        nodes.append(helper.make_node("Conv", operands, [f"{prefix}_pre"], **attrs))
        extra, extra_inits, bounds = activation_nodes(prefix, activation, sy, yzp, dtype)
        nodes += extra
        inits += extra_inits
    nodes.append(quantize_output(prefix))

    def oracle(x: NDArray[Any]) -> NDArray[Any]:
        y = requantized(conv_oracle(x, xzp, w, bias, cfg), 1, sx, sw, sy, yzp, dtype)
        return np.clip(y, *bounds).astype(dtype)
    shape = (cfg.batch, cfg.channels, *cfg.spatial)
    return Unit(nodes, inits, f"{prefix}_x", shape, f"{prefix}_y", oracle)


def matmul_unit(prefix: str, dtype: str, rng: np.random.Generator, gemm: bool,
                taps: tuple[int, int] = (1, 200)) -> Unit:
    k, n = int(rng.integers(*taps)), int(rng.integers(1, 12))
    rows = int(rng.integers(1, 4))
    trans_b = gemm and bool(rng.random() < 0.5)
    per_channel = bool(rng.random() < 0.6)
    sx, sw, sy = scales(rng, k, n, per_channel)
    w = rng.integers(-127, 128, (k, n)).astype(np.int8)
    stored = np.ascontiguousarray(w.T) if trans_b else w
    bias = rng.integers(-(2**20), 2**20, n).astype(np.int32) if gemm and rng.random() < 0.7 \
        else None
    nodes, inits, xzp, yzp, operands = qdq_nodes(prefix, dtype, rng, sx, sw, sy, stored, bias,
                                                 0 if trans_b else 1)
    if gemm:
        nodes.append(helper.make_node("Gemm", operands, [f"{prefix}_yf"], transB=int(trans_b)))
        shape: tuple[int, ...] = (rows, k)
    else:
        nodes.append(helper.make_node("MatMul", operands, [f"{prefix}_yf"]))
        shape = (2, rows, k)
    nodes.append(quantize_output(prefix))

    def oracle(x: NDArray[Any]) -> NDArray[Any]:
        centred = x.astype(np.int64) - xzp
        acc = np.array([[int(v) for v in row] for row in centred.reshape(-1, k) @
                        w.astype(np.int64)], np.int64)
        if bias is not None:
            acc += bias.astype(np.int64)
        y = requantized(acc, 1, sx, sw, sy, yzp, dtype)
        return y.reshape(*x.shape[:-1], n)
    return Unit(nodes, inits, f"{prefix}_x", shape, f"{prefix}_y", oracle)


def units_model(units: list[Unit], dtype: str) -> onnx.ModelProto:
    graph = helper.make_graph(
        [n for u in units for n in u.nodes], "product16",
        [helper.make_tensor_value_info(u.x, ONNX_TYPES[dtype], list(u.x_shape)) for u in units],
        [helper.make_tensor_value_info(u.y, ONNX_TYPES[dtype], None) for u in units],
        [i for u in units for i in u.initializers])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    return model


def random_units(seed: int, dtype: str) -> list[Unit]:
    rng = np.random.default_rng(seed)
    units = []
    for i in range(8):
        cfg = random_conv_config(rng, seed + i)
        # a Relu or a Clip before the QuantizeLinear of some (absorbed by the unit)
        activation = [None, None, "relu", "clip"][i % 4]
        units.append(conv_unit(f"c{i}", replace(cfg, batch=min(cfg.batch, 2)), dtype, rng,
                               activation))
    # g1: more than 256 taps, which the fast kernel sums in int32 chunks
    units += [matmul_unit("mm", dtype, rng, gemm=False), matmul_unit("g0", dtype, rng, True),
              matmul_unit("g1", dtype, rng, True, taps=(257, 900))]
    return units


def random_samples(units: list[Unit], dtype: str, seed: int,
                   count: int = 2) -> list[dict[str, NDArray[Any]]]:
    rng = np.random.default_rng(seed)
    lo, hi = RANGES[dtype]
    return [{u.x: rng.integers(lo, hi + 1, u.x_shape).astype(dtype) for u in units}
            for _ in range(count)]


CASES = [(seed, dtype) for seed in (1, 2, 3) for dtype in ("int16", "uint16")]


@pytest.mark.parametrize(("seed", "dtype"), CASES)
def test_16bit_units_match_the_exact_oracle(seed: int, dtype: str) -> None:
    units = random_units(seed, dtype)
    model = units_model(units, dtype)
    suffix = "s16" if dtype == "int16" else "u16"
    expected = {"fast": {f"q8_conv_{suffix}_im2col"},
                "reference": {f"q8_conv_{suffix}", f"q8_fully_connected_{suffix}"}}
    for requant, kernels in (("float", "fast"), ("int", "fast"), ("float", "reference")):
        gen = generate_sources(model, Options(integer_only=True, requant=requant,
                                              kernels=kernels))
        # (a Clip absorbed at a model output leaves a copy into the output's buffer)
        assert {call.function for call in gen.program.calls} - {"q8_copy"} == \
            expected[kernels]
        samples = random_samples(units, dtype, seed)
        for sample, got in zip(samples, run_generated(gen, samples, SANITIZE), strict=True):
            for unit in units:
                want = unit.oracle(sample[unit.x])
                assert got[unit.y].dtype == want.dtype
                assert np.array_equal(got[unit.y], want), unit.y


@pytest.mark.parametrize("dtype", ["int16", "uint16"])
def test_verify_integer_only_is_bit_exact_on_16bit_units(dtype: str) -> None:
    """ORT on the converted model (each unit as int64 operators) agrees with the C."""
    model = units_model(random_units(4, dtype), dtype)
    report = codegen.verify(model, samples=2, integer_only=True, cflags=SANITIZE)
    assert report.ok, [(o.name, o.mismatches) for o in report.outputs if o.mismatches]


def test_16bit_units_stay_float_by_default() -> None:
    """ORT computes an A16W8 unit in float: without --integer-only so does the C."""
    model = units_model(random_units(5, "int16")[:2], "int16")
    gen = generate_sources(model, Options())
    assert not any("16" in call.function and "quantize" not in call.function
                   for call in gen.program.calls), [c.function for c in gen.program.calls]


@in_qemu
@pytest.mark.parametrize("board", ["cortex-m4f", "cortex-m0plus"])
def test_16bit_units_match_the_exact_oracle_in_qemu(board: str) -> None:
    """The same kernels cross-compiled for the board (no 64-bit multiply instruction on
    the M0+: the compiler's own routines), run in QEMU, both signednesses."""
    for seed, dtype in ((6, "int16"), (7, "uint16")):
        units = random_units(seed, dtype)
        samples = random_samples(units, dtype, seed, count=1)
        for kernels in ("fast", "reference"):
            gen = generate_sources(units_model(units, dtype), Options(
                integer_only=True, board=board, kernels=kernels))
            got = run_generated(gen, samples)[0]
            for unit in units:
                assert np.array_equal(got[unit.y], unit.oracle(samples[0][unit.x])), unit.y


def test_a_converted_16bit_model_is_refused_with_the_way_back(tmp_path: Path) -> None:
    """`convert --integer-only` writes the 16-bit units as int64 operators: a reference
    for ORT, which generate refuses in one line naming a unit and what to do instead."""
    model = units_model(random_units(8, "uint16")[:1], "uint16")
    out = tmp_path / "converted.onnx"
    codegen.convert(model, out, integer_only=True)
    with pytest.raises(UnsupportedError, match=r"node '\w+'.*convert --integer-only.*"
                                               r"1 16-bit unit.*original model"):
        generate_sources(onnx.load(out), Options())


def extreme_conv(channels: int, out_channels: int, group: int, kernel: tuple[int, int],
                 pads: int, w: NDArray[Any], bias: NDArray[Any]) -> ConvConfig:
    return ConvConfig(x_dtype="", w_dtype="int8", batch=1, channels=channels,
                      out_channels=out_channels, spatial=(kernel[0] + 1, kernel[1] + 2),
                      kernel=kernel, group=group, strides=(1, 1), dilations=(1, 1),
                      pads=(pads, pads, pads, pads), auto_pad=None, per_channel=True,
                      bias=True, big_bias=False, kernel_shape_attr=False, seed=0,
                      arrays={"w": w, "bias": bias})


@pytest.mark.parametrize("dtype", ["int16", "uint16"])
def test_16bit_units_at_their_limits(dtype: str) -> None:
    """The sums the kernels prove in range, at their bounds: a 15x15 depthwise window
    (225 taps of |x - x_zp| up to 65535, summed in int32 without a column), 300 and
    1,000 taps (int32 chunks of 256), weights all -128 or alternating, biases at the
    int32 limits, inputs at their type's limits, alternating, and at the zero point."""
    rng = np.random.default_rng(99)
    top = np.iinfo(np.int32)
    dw_w = np.full((3, 1, 15, 15), -128)
    dense_w = np.where(np.arange(4 * 300 * 1).reshape(4, 300, 1, 1) % 2, 127, -128)
    units = [
        conv_unit("dw", extreme_conv(3, 3, 3, (15, 15), 7, dw_w,
                                     np.array([top.max, top.min, 0], np.int32)), dtype, rng),
        conv_unit("pw", extreme_conv(300, 4, 1, (1, 1), 0, dense_w,
                                     np.array([top.max, top.min, top.max, 1], np.int32)),
                  dtype, rng),
        matmul_unit("fc", dtype, rng, gemm=True, taps=(1000, 1001)),
    ]
    model = units_model(units, dtype)
    lo, hi = RANGES[dtype]
    samples = []
    for pattern in ("lo", "hi", "alternating"):
        sample = {}
        for u in units:
            size = int(np.prod(u.x_shape))
            values = {"lo": np.full(size, lo), "hi": np.full(size, hi),
                      "alternating": np.where(np.arange(size) % 2, hi, lo)}[pattern]
            sample[u.x] = values.reshape(u.x_shape).astype(dtype)
        samples.append(sample)
    for kernels in ("fast", "reference"):
        gen = generate_sources(model, Options(integer_only=True, kernels=kernels))
        for sample, got in zip(samples, run_generated(gen, samples, SANITIZE), strict=True):
            for unit in units:
                assert np.array_equal(got[unit.y], unit.oracle(sample[unit.x])), \
                    (kernels, unit.y)
