"""The 16-bit x 8-bit integer products of --integer-only (A16W8: int16/uint16 activations,
symmetric int8 weights): QLinearConv16 and QLinearMatMul16, onnx2mcu's own operators.

ORT has no integer kernel for 16-bit activations; it computes those units in float
between DequantizeLinear and QuantizeLinear, as the default path reproduces. Under
--integer-only a Conv, MatMul or Gemm whose activation is 16-bit becomes one of these:
the exact integer sum of (x - x_zp) * w plus the int32 bias, then the exact value
acc * x_scale * w_scale[c] / y_scale rounded half to even as QuantizeLinear rounds, and
saturated (codegen/arith/exact_requant.py; runtime_c/conv_s16.c and
fully_connected_s16.c). `convert` writes each as int64 ONNX operators that ORT runs
exactly (an index table that gathers the windows, an int64 MatMul, the rounding of
codegen/ops/_exact_requant_onnx.py), so `verify --integer-only` compares bit for bit
with ORT on the converted model, as for 8 bits.

- QLinearConv16: QLinearConv's inputs and attributes, x and y of one 16-bit type.
- QLinearMatMul16: (a, a_scale, a_zero_point, b [K, N], b_scale, b_zero_point, y_scale,
  y_zero_point, bias [N]); a of any rank >= 2 times a constant 2-D b.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from onnx import helper, numpy_helper

from codegen.arith.exact_requant import ExactMultiplier, exact_multiplier
from codegen.core.ir import QDQ_RANGE, Graph, Node, QuantParams, Tensor
from codegen.core.pattern import Quantized, dtype_of, new_constant, per_tensor, qparams, scale_axis
from codegen.core.program import CArray, CRef, CStruct, KernelCall
from codegen.errors import ModelError, UnsupportedError

from . import OWN_DOMAIN, Fusion, Inferred, LoweringOptions, OpDef, register
from ._common import (
    attr_float,
    attr_int,
    check_dtype,
    check_scales,
    constant_input,
    input_tensor,
    kernel_suffix,
    quant_params,
    reject_unknown_attrs,
    scalar_constant,
    scalar_or_vector,
)
from ._exact_requant_onnx import exact_requantize_nodes
from ._export import Writer
from ._geometry import Window, conv_groups, conv_window, dims_struct, window_struct
from ._qdq import bias_input
from .clamp import output_range
from .kernels import kernel

WIDE_TYPES = ("int16", "uint16")
CONV16 = kernel("conv_16")
CONV16_IM2COL = kernel("conv_16_im2col")
FC16 = kernel("fully_connected_16")
# The fast kernel's column holds x - X_OFFSET[dtype] as int16.
X_OFFSET = {"int16": 0, "uint16": 32768}
CONV_ATTRS = {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"}
# The largest |accumulator| the exported int64 rounding takes (exact_requant_onnx.py).
ACC_BOUND = 1 << 38
# How a multiplier is stored in the C (q8_exact_multiplier of q8_requant_exact.h).
MULTIPLIER_DTYPE = np.dtype([("num", "<u8"), ("den", "<u4"), ("shift", "<i4"),
                             ("mult", "<i4"), ("rshift", "<i4")])


@dataclass(frozen=True)
class Wide16Quant:
    """The quantization of a 16-bit product: one activation scale and zero point, the
    weights' scales (1 or one per output channel, zero point 0) and the output's."""

    x_scale: float
    x_zp: int
    w_scale: NDArray[Any]
    y_scale: float
    y_zp: int
    dtype: str  # of x and y

    def multipliers(self, channels: int) -> list[ExactMultiplier]:
        scales = np.broadcast_to(self.w_scale.reshape(-1), (channels,))
        return [exact_multiplier(self.x_scale, float(s), self.y_scale) for s in scales]


@dataclass(frozen=True)
class Conv16Spec:
    window: Window
    groups: int
    quant: Wide16Quant
    weights: NDArray[Any]  # int8 [M, C / group, ...]
    bias: NDArray[Any] | None  # int32 [M]
    multipliers: tuple[ExactMultiplier, ...]


@dataclass(frozen=True)
class MatMul16Spec:
    rows: int
    k: int
    n: int
    quant: Wide16Quant
    weights: NDArray[Any]  # int8 [K, N]
    bias: NDArray[Any] | None  # int32 [N]
    multipliers: tuple[ExactMultiplier, ...]


def _wide_quant(node: Node, graph: Graph, x: Tensor, slots: tuple[int, int, int, int, int, int],
                channels: int) -> Wide16Quant:
    """x_scale, x_zp, w_scale, w_zp, y_scale, y_zp at the input slots `slots`."""
    xs, xz, ws, wz, ys, yz = slots
    check_dtype(node, "input x", x, WIDE_TYPES)
    x_scale = check_scales(node, "x_scale", scalar_constant(node, graph, xs, "x_scale"))
    x_zp = scalar_constant(node, graph, xz, "x_zero_point")
    check_dtype(node, "x_zero_point", x_zp, (x.dtype,))
    w_scale = check_scales(node, "w_scale", scalar_or_vector(
        node, "w_scale", constant_input(node, graph, ws, "w_scale"), channels, True))
    w_zp = constant_input(node, graph, wz, "w_zero_point")
    check_dtype(node, "w_zero_point", w_zp, ("int8",))
    if np.any(w_zp):
        raise UnsupportedError(f"{node.describe()}: the 16-bit kernels take symmetric "
                               "weights (zero point 0)")
    y_scale = check_scales(node, "y_scale", scalar_constant(node, graph, ys, "y_scale"))
    y_zp = scalar_constant(node, graph, yz, "y_zero_point")
    check_dtype(node, "y_zero_point", y_zp, (x.dtype,))
    return Wide16Quant(float(x_scale[0]), int(x_zp[0]), w_scale, float(y_scale[0]),
                       int(y_zp[0]), x.dtype)


def _checked_multipliers(node: Node, quant: Wide16Quant,
                         channels: int) -> tuple[ExactMultiplier, ...]:
    try:
        return tuple(quant.multipliers(channels))
    except ValueError as error:
        raise ModelError(f"{node.describe()}: {error}") from None


def _check_bound(node: Node, taps: int, bias: NDArray[Any] | None) -> None:
    """|acc| <= taps * 65535 * 128 + |bias|: within what the exported rounding takes."""
    largest = taps * 65535 * 128 + (int(np.max(np.abs(bias.astype(np.int64))))
                                    if bias is not None and bias.size else 0)
    if largest > ACC_BOUND:
        raise UnsupportedError(f"{node.describe()}: {taps} products per output may exceed "
                               "the 16-bit kernels' accumulator bound 2^38")


def _bias(node: Node, graph: Graph, index: int, channels: int) -> NDArray[Any] | None:
    if node.input(index) is None:
        return None
    bias = constant_input(node, graph, index, "bias")
    check_dtype(node, "bias", bias, ("int32",))
    if bias.shape != (channels,):
        raise ModelError(f"{node.describe()}: bias has shape {list(bias.shape)}, "
                         f"expected [{channels}]")
    return bias


def _weights(node: Node, graph: Graph, index: int) -> NDArray[Any]:
    w = constant_input(node, graph, index, "weights")
    check_dtype(node, "weights", w, ("int8",))
    return w


def infer_conv16(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, CONV_ATTRS)
    x = input_tensor(node, graph, 0, "x")
    w = _weights(node, graph, 3)
    if len(x.shape) not in (3, 4) or w.ndim != len(x.shape):
        raise UnsupportedError(f"{node.describe()}: only 1-D and 2-D convolutions are "
                               "supported")
    window = conv_window(node, x.shape, w.shape)
    groups = conv_groups(node, x.shape, w.shape)
    m = w.shape[0]
    quant = _wide_quant(node, graph, x, (1, 2, 4, 5, 6, 7), m)
    bias = _bias(node, graph, 8, m)
    _check_bound(node, int(np.prod(w.shape[1:])), bias)
    y = Tensor(node.outputs[0], quant.dtype, (x.shape[0], m, *window.output),
               QuantParams((quant.y_scale,), (quant.y_zp,)))
    return Inferred([y], {x.name: QuantParams((quant.x_scale,), (quant.x_zp,)),
                          node.inputs[3]: quant_params(quant.w_scale, np.zeros(1, np.int8), 0)},
                    spec=Conv16Spec(window, groups, quant, w, bias,
                                    _checked_multipliers(node, quant, m)))


def infer_matmul16(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, set())
    a = input_tensor(node, graph, 0, "a")
    b = _weights(node, graph, 3)
    if len(a.shape) < 2 or b.ndim != 2 or a.shape[-1] != b.shape[0]:
        raise ModelError(f"{node.describe()}: a {list(a.shape)} and b {list(b.shape)} do not "
                         "multiply (a of rank 2 or more, b [K, N])")
    k, n = int(b.shape[0]), int(b.shape[1])
    quant = _wide_quant(node, graph, a, (1, 2, 4, 5, 6, 7), n)
    bias = _bias(node, graph, 8, n)
    _check_bound(node, k, bias)
    y = Tensor(node.outputs[0], quant.dtype, (*a.shape[:-1], n),
               QuantParams((quant.y_scale,), (quant.y_zp,)))
    rows = int(np.prod(a.shape[:-1], dtype=np.int64))
    return Inferred([y], {a.name: QuantParams((quant.x_scale,), (quant.x_zp,)),
                          node.inputs[3]: quant_params(quant.w_scale, np.zeros(1, np.int8), 1)},
                    spec=MatMul16Spec(rows, k, n, quant, b, bias,
                                      _checked_multipliers(node, quant, n)))


# ------------------------------------------------------------------ lowering


def multiplier_array(multipliers: Sequence[ExactMultiplier]) -> NDArray[Any]:
    """The q8_exact_multiplier array of the C, one element per output channel."""
    return np.array([(m.num, m.den, m.shift, m.mult, m.rshift) for m in multipliers],
                    MULTIPLIER_DTYPE)


def _arrays(weights: NDArray[Any], bias: NDArray[Any] | None,
            multipliers: Sequence[ExactMultiplier]) -> tuple[CArray, ...]:
    arrays = [CArray("weights", "int8_t", weights.reshape(-1)),
              CArray("multiplier", "q8_exact_multiplier", multiplier_array(multipliers))]
    if bias is not None:
        arrays.append(CArray("bias", "int32_t", bias))
    return tuple(arrays)


def _output_fields(node: Node, graph: Graph, quant: Wide16Quant) -> tuple[tuple[str, Any], ...]:
    """The output's zero point and range, narrowed by a Relu/Clip the unit absorbs."""
    lo, hi = output_range(node, graph, quant.dtype)
    return (("y_zero_point", quant.y_zp), ("y_min", lo), ("y_max", hi))


def blocked_weights(quads: NDArray[Any], m_group: int) -> NDArray[Any]:
    """[M][quads][4] -> per group, its channels in blocks of 4 with each quad's 4
    channels side by side ([quad][channel][4]), then the channels left over as rows."""
    parts = []
    for start in range(0, quads.shape[0], m_group):
        group = quads[start:start + m_group]
        full = m_group // 4 * 4
        blocks = group[:full].reshape(full // 4, 4, *group.shape[1:]).transpose(0, 2, 1, 3)
        parts += [blocks.reshape(-1), group[full:].reshape(-1)]
    return np.concatenate(parts)


def im2col_call(node: Node, graph: Graph, x: Tensor, y: Tensor, x_shape: tuple[int, ...],
                y_shape: tuple[int, ...], window: Window, groups: int, quant: Wide16Quant,
                weights: NDArray[Any], bias: NDArray[Any] | None,
                multipliers: Sequence[ExactMultiplier]) -> KernelCall:
    """The fast kernel (runtime_c/conv_s16_im2col.c) on NCHW shapes: weights [M][taps],
    padded to a multiple of 4 taps and interleaved w0 w2 w1 w3 per 4 (the order SXTB16
    unpacks), the zero point's terms folded into an int64 bias."""
    m, taps = weights.shape
    padded_taps = (taps + 3) // 4 * 4
    padded = np.zeros((m, padded_taps), np.int8)
    padded[:, :taps] = weights
    interleaved = blocked_weights(padded.reshape(m, padded_taps // 4, 4)[:, :, [0, 2, 1, 3]],
                                  m // groups)
    x_offset = X_OFFSET[quant.dtype]
    x_pad = quant.x_zp - x_offset
    folded = (bias.astype(np.int64) if bias is not None else np.zeros(m, np.int64)) - \
        x_pad * weights.astype(np.int64).sum(axis=1)
    params = CStruct("q8_conv_s16_im2col_params", (
        ("input", dims_struct(x_shape)), ("output", dims_struct(y_shape)),
        ("window", window_struct(window)), ("groups", groups),
        ("taps", taps), ("taps_padded", padded_taps),
        ("x_offset", x_offset), ("x_pad", x_pad), *_output_fields(node, graph, quant),
        ("weights", CRef("weights")), ("bias", CRef("bias")),
        ("multiplier", CRef("multiplier"))))
    arrays = (CArray("weights", "int8_t", interleaved.reshape(-1)),
              CArray("bias", "int64_t", folded),
              CArray("multiplier", "q8_exact_multiplier", multiplier_array(multipliers)))
    axes = {"x": kernel_suffix(quant.dtype)}
    return KernelCall(CONV16_IM2COL.symbol(**axes), node.name, (x.name,), (y.name,), params,
                      arrays, (CONV16_IM2COL.file(**axes),), int(np.prod(y_shape)) * taps,
                      scratch_bytes=CONV16_IM2COL.scratch_bytes(params))


def lower_conv16(node: Node, graph: Graph, spec: Conv16Spec,
                 options: LoweringOptions) -> list[KernelCall]:
    x, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    q = spec.quant
    if options.kernels == "fast":
        weights = spec.weights.reshape(spec.weights.shape[0], -1)
        return [im2col_call(node, graph, x, y, x.shape, y.shape, spec.window, spec.groups, q,
                            weights, spec.bias, spec.multipliers)]
    params = CStruct("q8_conv_s16_params", (
        ("input", dims_struct(x.shape)), ("output", dims_struct(y.shape)),
        ("window", window_struct(spec.window)), ("groups", spec.groups),
        ("x_zero_point", q.x_zp), *_output_fields(node, graph, q),
        ("weights", CRef("weights")),
        ("bias", CRef("bias") if spec.bias is not None else None),
        ("multiplier", CRef("multiplier"))))
    macs = y.numel * int(np.prod(spec.weights.shape[1:]))
    axes = {"x": kernel_suffix(q.dtype)}
    return [KernelCall(CONV16.symbol(**axes), node.name, (x.name,), (y.name,), params,
                       _arrays(spec.weights, spec.bias, spec.multipliers),
                       (CONV16.file(**axes),), macs)]


# A matrix product as the fast kernel sees it: a 1x1 convolution over rows.
POINT = Window(kernel=(1, 1), strides=(1, 1), dilations=(1, 1), pads_begin=(0, 0),
               pads_end=(0, 0), output=(1, 1))


def lower_matmul16(node: Node, graph: Graph, spec: MatMul16Spec,
                   options: LoweringOptions) -> list[KernelCall]:
    a, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    q = spec.quant
    if options.kernels == "fast":
        return [im2col_call(node, graph, a, y, (spec.rows, spec.k, 1, 1), (spec.rows, spec.n, 1, 1),
                            POINT, 1, q, np.ascontiguousarray(spec.weights.T), spec.bias,
                            spec.multipliers)]
    params = CStruct("q8_fully_connected_s16_params", (
        ("rows", spec.rows), ("k", spec.k), ("n", spec.n),
        ("x_zero_point", q.x_zp), *_output_fields(node, graph, q),
        ("w", CRef("weights")),
        ("bias", CRef("bias") if spec.bias is not None else None),
        ("multiplier", CRef("multiplier"))))
    axes = {"x": kernel_suffix(q.dtype)}
    # The kernel reads the weights as [N][K].
    weights = np.ascontiguousarray(spec.weights.T)
    return [KernelCall(FC16.symbol(**axes), node.name, (a.name,), (y.name,), params,
                       _arrays(weights, spec.bias, spec.multipliers), (FC16.file(**axes),),
                       spec.rows * spec.k * spec.n)]


# ------------------------------------------------------------------ the fusions


def _wide_unit(graph: Graph, x: Quantized | None, w: Quantized | None, y: Quantized,
               weights_axis: int) -> bool:
    """16-bit activations in and out (one type), per tensor, and constant int8 weights
    quantized per tensor or along `weights_axis`."""
    if x is None or w is None or not per_tensor(x, graph) or not per_tensor(y, graph):
        return False
    if dtype_of(graph, x) not in WIDE_TYPES or dtype_of(graph, y) != dtype_of(graph, x):
        return False
    return w.q in graph.constants and dtype_of(graph, w) == "int8" and \
        scale_axis(w, graph) in (None, weights_axis)


def build_conv16(graph: Graph, node: Node, dqs: list[Quantized | None], y: Quantized,
                 integer_only: bool) -> list[str] | None:
    """DQ(x 16-bit) -> Conv(DQ(w int8)) -> Q(16-bit): QLinearConv16's inputs."""
    x, w = dqs[0], dqs[1]
    if not integer_only or not _wide_unit(graph, x, w, y, 0):
        return None
    assert x is not None and w is not None
    inputs = [x.q, *qparams(x, graph), w.q, *qparams(w, graph), *qparams(y, graph)]
    if node.input(2) is not None:
        bias = bias_input(graph, node, dqs[2], x, w, True, check_scale=True)
        if bias is None:
            return None
        inputs.append(bias)
    return inputs


def build_matmul16(graph: Graph, node: Node, dqs: list[Quantized | None], y: Quantized,
                   integer_only: bool) -> list[str] | None:
    """DQ(a 16-bit) -> MatMul(DQ(b int8 [K, N])) -> Q(16-bit)."""
    a, b = dqs[0], dqs[1]
    if not integer_only or not _wide_unit(graph, a, b, y, 1):
        return None
    assert a is not None and b is not None
    if graph.constants[b.q].ndim != 2:
        return None
    return [a.q, *qparams(a, graph), b.q, *qparams(b, graph), *qparams(y, graph)]


def build_gemm16(graph: Graph, node: Node, dqs: list[Quantized | None], y: Quantized,
                 integer_only: bool) -> list[str] | None:
    """DQ(a 16-bit) -> Gemm(DQ(b int8), bias) -> Q(16-bit), alpha = beta = 1, no transA:
    B as [K, N] (transposed where transB), the bias as the accumulator's int32."""
    a, b = dqs[0], dqs[1]
    trans_b = attr_int(node, "transB", 0)
    if not integer_only or attr_int(node, "transA", 0) or \
            attr_float(node, "alpha", 1.0) != 1.0 or attr_float(node, "beta", 1.0) != 1.0 or \
            not _wide_unit(graph, a, b, y, 0 if trans_b else 1):
        return None
    assert a is not None and b is not None
    weights = graph.constants[b.q]
    if weights.ndim != 2:
        return None
    b_name = new_constant(graph, f"{b.q}_kn", np.ascontiguousarray(weights.T)) \
        if trans_b else b.q
    inputs = [a.q, *qparams(a, graph), b_name, *qparams(b, graph), *qparams(y, graph)]
    if node.input(2) is not None:
        bias = bias_input(graph, node, dqs[2], a, b, True, check_scale=True)
        if bias is None or graph.constants[bias].shape != (weights.shape[0 if trans_b else 1],):
            return None
        inputs.append(bias)
    return inputs


def _no_attrs(graph: Graph, node: Node) -> dict[str, Any]:
    return {}


CONV16_FUSION = Fusion("QLinearConv16", OWN_DOMAIN, build_conv16, dequantized_inputs=2,
                       product=True)
MATMUL16_FUSION = Fusion("QLinearMatMul16", OWN_DOMAIN, build_matmul16, _no_attrs,
                         dequantized_inputs=2, product=True)
GEMM16_FUSION = Fusion("QLinearMatMul16", OWN_DOMAIN, build_gemm16, _no_attrs,
                       dequantized_inputs=2, product=True)


# ------------------------------------------------------------------ export


def _int64(w: Writer, value: str, zero_point: str, base: str) -> str:
    """value - zero_point as int64 (exact)."""
    wide = w.fresh(f"{base}_int64")
    w.nodes.append(helper.make_node("Cast", [value], [wide], to=7, name=w.fresh(f"{base}_cast")))
    zp = w.constant(f"{base}_zero_point_int64",
                    np.asarray(w.zero_point(zero_point, w.dtype(value)), np.int64))
    centred = w.fresh(f"{base}_centred")
    w.add("Sub", [wide, zp], [centred], f"{base}_sub")
    return centred


def _requantize(w: Writer, node: Node, acc: str, out: str, quant: Wide16Quant,
                multipliers: Sequence[ExactMultiplier]) -> None:
    """out (the 16-bit type) = the exact rounding of acc, whose last axis is the channels."""
    lo, hi = QDQ_RANGE[quant.dtype]
    rounded = w.fresh(f"{out}_int32")
    nodes, inits = exact_requantize_nodes(acc, rounded, multipliers, quant.y_zp, lo, hi,
                                          w.fresh)
    for init in inits:
        w.constants[init.name] = numpy_helper.to_array(init)
    for proto in nodes:
        proto.name = w.fresh(f"{node.name}_requantize")
    w.nodes += nodes
    to = 5 if quant.dtype == "int16" else 4
    w.nodes.append(helper.make_node("Cast", [rounded], [out], to=to,
                                    name=w.fresh(f"{node.name}_cast")))


def _plus_bias(w: Writer, acc: str, bias: NDArray[Any] | None, base: str) -> str:
    if bias is None:
        return acc
    total = w.fresh(f"{base}_acc_bias")
    w.add("Add", [acc, w.constant(f"{base}_bias_int64", bias.astype(np.int64))], [total],
          f"{base}_bias")
    return total


def export_matmul16(node: Node, w: Writer) -> None:
    spec = infer_matmul16(node, w.graph).spec
    assert isinstance(spec, MatMul16Spec)
    w.int64_units.append(node.name)
    a = _int64(w, node.inputs[0], node.inputs[2], node.name)
    acc = w.fresh(f"{node.name}_acc")
    w.add("MatMul", [a, w.constant(f"{node.name}_b_int64", spec.weights.astype(np.int64))],
          [acc], f"{node.name}_matmul")
    _requantize(w, node, _plus_bias(w, acc, spec.bias, node.name), node.outputs[0],
                spec.quant, spec.multipliers)


def window_indices(shape: tuple[int, ...], window: Window, groups: int,
                   c_group: int) -> NDArray[Any]:
    """For each group, output position and tap (c, kh, kw) of the group: the index of the
    input value it reads in the flattened [C * H * W] input, or C * H * W for a tap in
    the padding (the zero appended there). Shape [groups, OH * OW, c_group * KH * KW]."""
    _, c, *spatial = shape
    h, width = (1, spatial[0]) if len(spatial) == 1 else spatial
    two = len(window.kernel) == 2
    kh, kw = (window.kernel if two else (1, window.kernel[0]))
    sh, sw = (window.strides if two else (1, window.strides[0]))
    dh, dw = (window.dilations if two else (1, window.dilations[0]))
    ph, pw = (window.pads_begin if two else (0, window.pads_begin[0]))
    oh, ow = (window.output if two else (1, window.output[0]))
    rows = (np.arange(oh)[:, None] * sh - ph) + np.arange(kh)[None, :] * dh  # [OH, KH]
    cols = (np.arange(ow)[:, None] * sw - pw) + np.arange(kw)[None, :] * dw  # [OW, KW]
    r = rows[:, None, None, :, None]  # [OH, 1, 1, KH, 1]
    s = cols[None, :, None, None, :]  # [1, OW, 1, 1, KW]
    channel = np.arange(c_group)[None, None, :, None, None]
    inside = (r >= 0) & (r < h) & (s >= 0) & (s < width)
    per_group = []
    for g in range(groups):
        flat = ((g * c_group + channel) * h + r) * width + s
        index = np.where(inside, flat, c * h * width)
        per_group.append(index.reshape(oh * ow, c_group * kh * kw))
    return np.stack(per_group).astype(np.int64)


def export_conv16(node: Node, w: Writer) -> None:
    """The windows gathered by an index table from the flattened input with a zero
    appended (the padding), one int64 MatMul per group, the rounding, back to NCHW."""
    spec = infer_conv16(node, w.graph).spec
    assert isinstance(spec, Conv16Spec)
    w.int64_units.append(node.name)
    x = w.graph.tensors[node.inputs[0]]
    y = w.graph.tensors[node.outputs[0]]
    n, c = x.shape[0], x.shape[1]
    m = spec.weights.shape[0]
    c_group, m_group, groups = c // spec.groups, m // spec.groups, spec.groups
    base = node.name
    centred = _int64(w, node.inputs[0], node.inputs[2], base)
    flat = w.fresh(f"{base}_flat")
    w.add("Reshape", [centred, w.constant(f"{base}_flat_shape", np.array([n, -1], np.int64))],
          [flat], f"{base}_flatten")
    padded = w.fresh(f"{base}_padded")
    w.add("Concat", [flat, w.constant(f"{base}_pad_zero", np.zeros((n, 1), np.int64))],
          [padded], f"{base}_pad")
    w.nodes[-1].attribute.append(helper.make_attribute("axis", 1))
    index = window_indices(x.shape, spec.window, groups, c_group)
    windows = w.fresh(f"{base}_windows")  # [N, G, P, Cg * K]
    w.nodes.append(helper.make_node("Gather", [padded, w.constant(f"{base}_window_index", index)],
                                    [windows], axis=1, name=w.fresh(f"{base}_gather")))
    weights = spec.weights.reshape(groups, m_group, -1).transpose(0, 2, 1)  # [G, Cg * K, Mg]
    acc = w.fresh(f"{base}_acc")  # [N, G, P, Mg]
    w.add("MatMul", [windows, w.constant(f"{base}_w_int64", weights.astype(np.int64))], [acc],
          f"{base}_matmul")
    by_position = w.fresh(f"{base}_acc_positions")  # [N, P, G, Mg]
    w.nodes.append(helper.make_node("Transpose", [acc], [by_position], perm=[0, 2, 1, 3],
                                    name=w.fresh(f"{base}_positions")))
    positions = int(index.shape[1])
    columns = w.fresh(f"{base}_acc_columns")  # [N, P, M]
    w.add("Reshape", [by_position, w.constant(f"{base}_columns_shape",
                                              np.array([n, positions, m], np.int64))],
          [columns], f"{base}_columns")
    rounded = w.fresh(f"{base}_rounded")  # [N, P, M] in the 16-bit type
    _requantize(w, node, _plus_bias(w, columns, spec.bias, base), rounded, spec.quant,
                spec.multipliers)
    channels_first = w.fresh(f"{base}_nchw")
    w.nodes.append(helper.make_node("Transpose", [rounded], [channels_first], perm=[0, 2, 1],
                                    name=w.fresh(f"{base}_channels_first")))
    w.add("Reshape", [channels_first, w.constant(f"{base}_y_shape",
                                                 np.array(y.shape, np.int64))],
          [node.outputs[0]], f"{base}_output")


register(OpDef("QLinearConv16", OWN_DOMAIN, infer_conv16, lower_conv16,
               constant_inputs=frozenset(range(1, 9)), data_dtypes=frozenset(WIDE_TYPES),
               absorbs_clamp=True, export=export_conv16))
register(OpDef("QLinearMatMul16", OWN_DOMAIN, infer_matmul16, lower_matmul16,
               constant_inputs=frozenset(range(1, 9)), data_dtypes=frozenset(WIDE_TYPES),
               absorbs_clamp=True, export=export_matmul16))
