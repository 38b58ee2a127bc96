"""Resize of the last one or two axes (torch's Upsample and F.interpolate, TF's
UpSampling2D and resize_* as tf2onnx writes them).

Mode "nearest", on any dtype: every output element is an input element, so the result
is exact for every type; which one is ORT's float32 coordinate arithmetic (each
coordinate_transformation_mode, then the nearest_mode rounding), computed here for each
output row and column (checked against ORT over the modes and many sizes in
tests/ops/test_resize.py). ORT drops the DequantizeLinear/QuantizeLinear around a nearest
Resize when both sides share one quantization.

Mode "linear" on 4-D inputs (bilinear): ORT's UpsampleBilinear, measured bit-exact on
ORT 1.32: per axis, the coordinate clamped to [0, len - 1], the two neighbours and their
distances (0.5 and 0.5 where both neighbours are one pixel), then
`((dx2*dy2)*X11 + (dx1*dy2)*X21) + (dx2*dy1)*X12 + (dx1*dy1)*X22` in float32; on
uint8/int8 tensors (QOperator models) the same sum truncated to the integer type. ORT
keeps DQ -> linear Resize -> Q in float: a float island. A 3-D linear Resize (torch's
Upsample(mode="linear") of a sequence) is ORT's trilinear kernel with (N, C, L) as
depth, height and width: the same neighbours and distances per axis (an axis of scale 1
weighs its index 0 and the next 1, or 0.5 and 0.5 at its end), eight terms
`((dx*dy)*dz)*X` summed left to right."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import NDArray

from codegen.core.ir import Graph, Node, Tensor, itemsize
from codegen.core.program import CArray, CRef, CStruct, KernelCall, Lowered
from codegen.errors import ModelError, UnsupportedError

from . import Inferred, LoweringOptions, OpDef, register
from ._common import (
    attr_float,
    attr_int,
    attr_str,
    check_output_shape,
    input_tensor,
    reject_unknown_attrs,
)
from ._export import export_through_int32
from .kernels import kernel
from .views import carried_quant

F32 = np.float32
SOURCES = ("resize.c",)
# half_pixel_symmetric (Resize-19) is left out: ORT's rounding of it is not reproduced yet.
TRANSFORMS = ("half_pixel", "asymmetric", "pytorch_half_pixel", "tf_half_pixel_for_nn",
              "align_corners")
ROUNDINGS = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


@dataclass(frozen=True)
class ResizeSpec:
    planes: int
    rows: NDArray[Any]  # input row of each output row
    cols: NDArray[Any]  # input column of each output column


@dataclass(frozen=True)
class LinearAxis:
    """Along one axis, each output index's two input neighbours and their distances,
    as ORT's SetupUpsampleBilinear computes them."""
    first: NDArray[Any]
    second: NDArray[Any]
    to_first: NDArray[Any]
    to_second: NDArray[Any]


@dataclass(frozen=True)
class BilinearSpec:
    planes: int
    rows: LinearAxis
    cols: LinearAxis


@dataclass(frozen=True)
class TrilinearSpec:
    """A 3-D linear Resize: ORT's trilinear kernel with (N, C, L) as (depth, height,
    width), the scales of N and C being 1."""
    depth: LinearAxis
    rows: LinearAxis
    cols: LinearAxis


def original_coordinate(mode: str, out_index: int, scale: np.float32, in_len: int,
                        out_len: int) -> np.float32:
    """ORT's get_original_coordinate, in float32."""
    x, half = F32(out_index), F32(0.5)
    if mode in ("half_pixel", "pytorch_half_pixel"):
        if mode == "pytorch_half_pixel" and out_len <= 1:
            return F32(0)
        return F32(F32(F32(x + half) / scale) - half)
    if mode == "asymmetric":
        return F32(x / scale)
    if mode == "tf_half_pixel_for_nn":
        return F32(F32(x + half) / scale)
    assert mode == "align_corners"
    if out_len == 1:
        return F32(0)
    return F32(F32(x * F32(in_len - 1)) / F32(out_len - 1))


def nearest_index(rounding: str, x: np.float32, in_len: int) -> int:
    """ORT's nearest-pixel rounding, then the clamp to the input."""
    value = float(x)
    if rounding == "round_prefer_floor":
        index = math.floor(value) if value == int(value) + 0.5 else _round_half_away(value)
    elif rounding == "round_prefer_ceil":
        index = _round_half_away(value)
    elif rounding == "floor":
        index = math.floor(value)
    else:
        index = math.ceil(value)
    return min(max(index, 0), in_len - 1)


def _round_half_away(value: float) -> int:
    """std::round."""
    return math.floor(abs(value) + 0.5) * (1 if value >= 0 else -1)


def axis_indices(mode: str, rounding: str, scale: np.float32, in_len: int,
                 out_len: int) -> NDArray[Any]:
    """The input index of each output index along one axis. ORT maps an axis whose
    scale is 1 to itself, whatever the coordinate mode (measured)."""
    if scale == F32(1) and in_len == out_len:
        return np.arange(out_len, dtype=np.int32)
    return np.array([nearest_index(rounding, original_coordinate(
        mode, i, scale, in_len, out_len), in_len) for i in range(out_len)], np.int32)


def linear_axis(mode: str, scale: np.float32, in_len: int, out_len: int) -> LinearAxis:
    first, second, d1, d2 = [], [], [], []
    for i in range(out_len):
        x = F32(i) if scale == F32(1) else original_coordinate(mode, i, scale, in_len, out_len)
        x = max(F32(0), min(x, F32(in_len - 1)))
        a = min(int(x), in_len - 1)
        b = min(a + 1, in_len - 1)
        first.append(a)
        second.append(b)
        if a == b:
            d1.append(F32(0.5))
            d2.append(F32(0.5))
        else:
            d1.append(abs(F32(x - F32(a))))
            d2.append(abs(F32(x - F32(b))))
    return LinearAxis(np.array(first, np.int32), np.array(second, np.int32),
                      np.array(d1, F32), np.array(d2, F32))


def _constant(node: Node, graph: Graph, index: int) -> NDArray[Any] | None:
    name = node.input(index)
    if name is None:
        return None
    if name not in graph.constants:
        raise UnsupportedError(f"{node.describe()}: input {index} of Resize is computed at run "
                               "time; it must be a constant")
    value = graph.constants[name]
    return value if value.size else None


def scales_and_sizes(node: Node, graph: Graph, shape: tuple[int, ...]) -> tuple[
        list[np.float32], list[int]]:
    """Each axis's float32 scale and output length, as ORT derives them from `scales`
    (length = floor(length * scale)) or from `sizes` (scale = out / in)."""
    scales_index, sizes_index = (1, None) if node.opset < 11 else (2, 3)
    scales = _constant(node, graph, scales_index)
    sizes = _constant(node, graph, sizes_index) if sizes_index is not None else None
    if (scales is None) == (sizes is None):
        raise ModelError(f"{node.describe()}: give exactly one of scales and sizes")
    if sizes is not None:
        out = [int(v) for v in sizes.reshape(-1)]
        if len(out) != len(shape):
            raise ModelError(f"{node.describe()}: sizes has {len(out)} entries for rank "
                             f"{len(shape)}")
        ratios = [Fraction(o, i) for o, i in zip(out, shape, strict=True)]
        if any(Fraction(float(F32(r))) != r for r in ratios):
            # ORT's coordinates from such a ratio are not its float32 arithmetic on
            # scales (measured: 4 / (8/7) gives 3.5, not 3.4999998); not reproduced yet.
            raise UnsupportedError(f"{node.describe()}: sizes {out} for an input of "
                                   f"{list(shape)}: only ratios exact in float32 (2, 0.5, "
                                   "1.5, ...) are supported; give scales instead")
        return [F32(r.numerator / r.denominator) for r in ratios], out
    assert scales is not None
    values = [F32(v) for v in scales.astype(F32).reshape(-1)]
    if len(values) != len(shape) or not all(np.isfinite(v) and v > 0 for v in values):
        raise ModelError(f"{node.describe()}: scales {[float(v) for v in values]} for rank "
                         f"{len(shape)}")
    return values, [int(F32(F32(d) * s)) for d, s in zip(shape, values, strict=True)]


def infer_resize(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, {"mode", "coordinate_transformation_mode", "nearest_mode",
                                "cubic_coeff_a", "exclude_outside", "extrapolation_value",
                                "antialias", "axes", "keep_aspect_ratio_policy"})
    x = input_tensor(node, graph, 0, "X")
    mode = attr_str(node, "mode", "nearest")
    if mode not in ("nearest", "linear"):
        raise UnsupportedError(f"{node.describe()}: Resize mode '{mode}' is not supported "
                               "(nearest and linear are)")
    for name in ("axes", "antialias"):
        if name in node.attrs and (name != "antialias" or attr_int(node, name, 0)):
            raise UnsupportedError(f"{node.describe()}: attribute '{name}' is not supported")
    transform = attr_str(node, "coordinate_transformation_mode",
                         "asymmetric" if node.opset < 11 else "half_pixel")
    rounding = attr_str(node, "nearest_mode", "round_prefer_floor")
    if transform not in TRANSFORMS or rounding not in ROUNDINGS:
        raise UnsupportedError(f"{node.describe()}: coordinate_transformation_mode "
                               f"'{transform}' with nearest_mode '{rounding}' is not supported")
    if node.opset >= 11 and attr_float(node, "extrapolation_value", 0.0) != 0.0 and \
            transform == "tf_crop_and_resize":
        raise UnsupportedError(f"{node.describe()}: tf_crop_and_resize is not supported")
    if len(x.shape) not in (3, 4):
        raise UnsupportedError(f"{node.describe()}: a rank-{len(x.shape)} input; 3-D and 4-D "
                               "are supported")
    if mode == "linear" and x.dtype not in ("float32", "uint8", "int8"):
        raise UnsupportedError(f"{node.describe()}: a linear Resize of {x.dtype}")
    scales, out = scales_and_sizes(node, graph, x.shape)
    if any(o != i for o, i in zip(out[:2], x.shape[:2], strict=True)):
        raise UnsupportedError(f"{node.describe()}: resizing the batch or channel axis is not "
                               "supported")
    if min(out) < 1:
        raise UnsupportedError(f"{node.describe()}: the output is empty")
    check_output_shape(node, graph, out, x.dtype)
    output = Tensor(node.outputs[0], x.dtype, tuple(out), carried_quant(x))
    if mode == "linear" and len(x.shape) == 3:
        return Inferred([output], spec=TrilinearSpec(*(
            linear_axis(transform, scales[a], x.shape[a], out[a]) for a in range(3))))
    if mode == "linear":
        return Inferred([output], spec=BilinearSpec(
            x.shape[0] * x.shape[1], linear_axis(transform, scales[2], x.shape[2], out[2]),
            linear_axis(transform, scales[3], x.shape[3], out[3])))
    spatial = list(range(2, len(x.shape)))
    tables = [axis_indices(transform, rounding, scales[a], x.shape[a], out[a])
              for a in spatial]
    rows = tables[0] if len(tables) == 2 else np.zeros(1, np.int32)
    cols = tables[-1]
    return Inferred([output], spec=ResizeSpec(x.shape[0] * x.shape[1], rows, cols))


def lower_bilinear(node: Node, graph: Graph, spec: BilinearSpec) -> Sequence[Lowered]:
    x, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    rows, cols = spec.rows, spec.cols
    # Row neighbours as offsets into the plane, as ORT keeps them.
    arrays = (CArray("row1", "int32_t", rows.first * np.int32(x.shape[3])),
              CArray("row2", "int32_t", rows.second * np.int32(x.shape[3])),
              CArray("dy1", "float", rows.to_first), CArray("dy2", "float", rows.to_second),
              CArray("col1", "int32_t", cols.first), CArray("col2", "int32_t", cols.second),
              CArray("dx1", "float", cols.to_first), CArray("dx2", "float", cols.to_second))
    params = CStruct("q8_resize_bilinear_params", (
        ("planes", spec.planes), ("in_size", x.shape[2] * x.shape[3]),
        ("out_h", y.shape[2]), ("out_w", y.shape[3]),
        *((a.name, CRef(a.name)) for a in arrays)))
    suffix = {"float32": "f32", "uint8": "u8", "int8": "s8"}[x.dtype]
    function = kernel("resize_bilinear").symbol(x=suffix)
    return [KernelCall(function, node.name, (x.name,), (y.name,), params,
                       arrays, SOURCES, macs=4 * int(np.prod(y.shape, dtype=np.int64)))]


def lower_trilinear(node: Node, graph: Graph, spec: TrilinearSpec) -> Sequence[Lowered]:
    x, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    plane, row = np.int32(x.shape[1] * x.shape[2]), np.int32(x.shape[2])
    arrays = []
    for axis, stride, (first, second, to_first, to_second) in (
            (spec.depth, plane, ("z1", "z2", "dz1", "dz2")),
            (spec.rows, row, ("y1", "y2", "dy1", "dy2")),
            (spec.cols, np.int32(1), ("x1", "x2", "dx1", "dx2"))):
        arrays += [CArray(first, "int32_t", axis.first * stride),
                   CArray(second, "int32_t", axis.second * stride),
                   CArray(to_first, "float", axis.to_first),
                   CArray(to_second, "float", axis.to_second)]
    params = CStruct("q8_resize_trilinear_params", (
        ("planes", 1), ("in_size", int(np.prod(x.shape, dtype=np.int64))),
        ("out_d", y.shape[0]), ("out_h", y.shape[1]), ("out_w", y.shape[2]),
        *((a.name, CRef(a.name)) for a in arrays)))
    suffix = {"float32": "f32", "uint8": "u8", "int8": "s8"}[x.dtype]
    function = kernel("resize_trilinear").symbol(x=suffix)
    return [KernelCall(function, node.name, (x.name,), (y.name,),
                       params, tuple(arrays), SOURCES,
                       macs=8 * int(np.prod(y.shape, dtype=np.int64)))]


def lower_resize(node: Node, graph: Graph, spec: ResizeSpec | BilinearSpec | TrilinearSpec,
                 options: LoweringOptions) -> Sequence[Lowered]:
    if isinstance(spec, BilinearSpec):
        return lower_bilinear(node, graph, spec)
    if isinstance(spec, TrilinearSpec):
        return lower_trilinear(node, graph, spec)
    x, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    in_h = x.shape[2] if len(x.shape) == 4 else 1
    params = CStruct("q8_resize_params", (
        ("planes", spec.planes), ("in_h", in_h), ("in_w", x.shape[-1]),
        ("out_h", int(spec.rows.size)), ("out_w", int(spec.cols.size)),
        ("element_size", itemsize(x.dtype)), ("rows", CRef("rows")), ("cols", CRef("cols"))))
    return [KernelCall("q8_resize_nearest", node.name, (x.name,), (y.name,), params,
                       (CArray("rows", "int32_t", spec.rows), CArray("cols", "int32_t", spec.cols)),
                       SOURCES)]


register(OpDef("Resize", "", infer_resize, lower_resize, versions=(10, 11, 13, 18, 19),
               constant_inputs=frozenset({1, 2, 3}),
               data_dtypes=frozenset({"uint8", "int8", "float32"}), float_island=True,
               moves_values=lambda node: attr_str(node, "mode", "nearest") == "nearest",
               export=export_through_int32(0)))
