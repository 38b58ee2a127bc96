"""Helpers shared by operator modules: constant inputs, attributes, quantization params."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from codegen.arith.requant import float32_mult_exp
from codegen.core.ir import DTYPES, QUANT_RANGE, Graph, Node, QuantParams, Tensor, itemsize
from codegen.core.limits import check_shape
from codegen.core.program import CArray, CRef, CStruct, CValue, Overlap
from codegen.errors import ModelError, NotConstantError, UnsupportedError


def input_tensor(node: Node, graph: Graph, index: int, what: str) -> Tensor:
    name = node.input(index)
    if name is None:
        raise ModelError(f"{node.describe()}: required input {index} ({what}) is missing")
    tensor = graph.tensors.get(name)
    if tensor is None:
        # The importer leaves out constants of dtypes the IR has no kernels for (bool,
        # float64, ...); the graph's references are checked before any node is inferred.
        value = graph.constants.get(name)
        dtype = str(value.dtype) if value is not None else "unknown"
        raise UnsupportedError(f"{node.describe()}: {what} '{name}' has dtype {dtype}; "
                               f"supported: {', '.join(DTYPES)}")
    return tensor


def constant_input(node: Node, graph: Graph, index: int, what: str) -> NDArray[Any]:
    """The value of a constant input; code generation needs weights and quantization
    parameters at generation time."""
    name = node.input(index)
    if name is None:
        raise ModelError(f"{node.describe()}: required input {index} ({what}) is missing")
    if name not in graph.constants:
        raise NotConstantError(
            f"{node.describe()}: {what} '{name}' must be a constant (initializer or Constant "
            "node); computed values are not supported"
        )
    return graph.constants[name]


def check_dtype(node: Node, what: str, tensor: Tensor | NDArray[Any],
                allowed: tuple[str, ...]) -> str:
    dtype = tensor.dtype if isinstance(tensor, Tensor) else str(tensor.dtype)
    if dtype not in allowed:
        raise UnsupportedError(
            f"{node.describe()}: {what} has dtype {dtype}; supported: {', '.join(allowed)}"
        )
    return dtype


def attr_int(node: Node, name: str, default: int) -> int:
    value = node.attrs.get(name, default)
    if not isinstance(value, int):
        raise ModelError(f"{node.describe()}: attribute '{name}' must be an integer")
    return value


def attr_float(node: Node, name: str, default: float) -> float:
    value = node.attrs.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int | float | np.floating):
        raise ModelError(f"{node.describe()}: attribute '{name}' must be a number")
    return float(value)


def attr_ints(node: Node, name: str, default: list[int] | None) -> list[int] | None:
    value = node.attrs.get(name, default)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, int) for v in value):
        raise ModelError(f"{node.describe()}: attribute '{name}' must be a list of integers")
    return list(value)


def attr_str(node: Node, name: str, default: str) -> str:
    value = node.attrs.get(name, default)
    if not isinstance(value, str):
        raise ModelError(f"{node.describe()}: attribute '{name}' must be a string")
    return value


def reject_unknown_attrs(node: Node, known: set[str]) -> None:
    unknown = sorted(set(node.attrs) - known)
    if unknown:
        raise UnsupportedError(f"{node.describe()}: unsupported attribute '{unknown[0]}'")


def scalar_or_vector(node: Node, what: str, value: NDArray[Any], length: int,
                     allow_vector: bool) -> NDArray[Any]:
    """Flatten a quantization parameter that must hold 1 or `length` values."""
    flat = value.reshape(-1)
    if value.ndim > 1 or flat.size == 0:
        raise ModelError(f"{node.describe()}: {what} must be a scalar or a 1-D tensor, "
                         f"got shape {list(value.shape)}")
    if flat.size != 1 and not (allow_vector and flat.size == length):
        expected = f"1 or {length}" if allow_vector else "1"
        raise ModelError(f"{node.describe()}: {what} has {flat.size} values, expected {expected}")
    return flat


def check_scales(node: Node, what: str, scale: NDArray[Any]) -> NDArray[Any]:
    """Scales as float32. float16 scales (QLinearMatMul-21) widen exactly, as ORT does."""
    if scale.dtype == np.float16:
        scale = scale.astype(np.float32)
    if scale.dtype != np.float32:
        raise UnsupportedError(f"{node.describe()}: {what} has dtype {scale.dtype}; "
                               "supported: float32, float16")
    if not np.all(np.isfinite(scale)) or np.any(scale <= 0):
        bad = scale[~(np.isfinite(scale) & (scale > 0))][0]
        raise ModelError(f"{node.describe()}: {what} must be finite and positive, got {bad}")
    return scale


def scalar_constant(node: Node, graph: Graph, index: int, what: str) -> NDArray[Any]:
    """A one-value constant input, flattened."""
    return scalar_or_vector(node, what, constant_input(node, graph, index, what), 1, False)


def per_tensor_quant(node: Node, graph: Graph, scale_index: int, zp_index: int, what: str,
                     dtype: str | None) -> tuple[float, int]:
    """(scale, zero point) of a per-tensor quantization given as constant inputs; an
    omitted zero point is 0; the zero point's type is checked when `dtype` is given."""
    scale = check_scales(node, f"{what}_scale", scalar_constant(node, graph, scale_index,
                                                                f"{what}_scale"))
    if node.input(zp_index) is None:
        return float(scale[0]), 0
    zp = scalar_constant(node, graph, zp_index, f"{what}_zero_point")
    if dtype is not None:
        check_dtype(node, f"{what}_zero_point", zp, (dtype,))
    return float(scale[0]), int(zp[0])


def check_zero_points(node: Node, what: str, zp: NDArray[Any],
                      dtype: str) -> NDArray[Any]:
    if str(zp.dtype) != dtype:
        raise ModelError(f"{node.describe()}: {what} has dtype {zp.dtype}, expected {dtype}")
    return zp


def quant_params(scale: NDArray[Any], zero_point: NDArray[Any],
                 axis: int | None) -> QuantParams:
    scales = tuple(float(s) for s in scale.reshape(-1))
    zps = tuple(int(z) for z in zero_point.reshape(-1))
    if len(zps) == 1 and len(scales) > 1:
        zps = zps * len(scales)
    return QuantParams(scale=scales, zero_point=zps, axis=axis if len(scales) > 1 else None)


def quant_range(dtype: str) -> tuple[int, int]:
    return QUANT_RANGE[dtype]


def normalize_axis(node: Node, axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise ModelError(f"{node.describe()}: axis {axis} is out of range for rank {rank}")
    return axis % rank


def check_finite_scales(node: Node, what: str, values: Any) -> None:
    """A scale derived from quantization parameters (a product, a ratio) overflows when
    they are absurdly far apart (y_scale 1e-45): refuse it rather than emit inf."""
    array = np.asarray(values, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(array)):
        raise UnsupportedError(f"{node.describe()}: the {what} is "
                               f"{array[~np.isfinite(array)][0]}: it overflows float32 (the "
                               "quantization scales are too far apart)")


def requant_params(node: Node, scale: NDArray[Any], zero_point: int, act_min: int,
                   act_max: int, mode: str, collapse: bool = True) -> tuple[
                       CStruct, list[CArray]]:
    """The q8_requant_params of an 8-bit output and the const arrays it points to.
    `scale` holds ORT's float32 requantization scale, one value or one per channel;
    mode "int" stores its exact mult * 2^exp decomposition instead. Equal per-channel
    scales collapse to one unless the kernel indexes them together with other arrays."""
    scale = np.asarray(scale, dtype=np.float32).reshape(-1)
    check_finite_scales(node, "requantization scale", scale)
    per_channel = scale.size > 1 and not (collapse and np.all(scale == scale[0]))
    if not per_channel:
        scale = scale[:1]
    if mode == "int":
        if not np.all(np.isfinite(scale)):
            raise UnsupportedError("a requantization scale f32(f32(x_scale * w_scale) / "
                                   "y_scale) overflows float32; --requant int needs it finite")
        mult, exp = float32_mult_exp(scale)
        arrays = [CArray("mult", "int32_t", mult), CArray("exp", "int32_t", exp)]
        fields: tuple[tuple[str, CValue], ...] = (
            ("scale", None), ("mult", CRef("mult")), ("exp", CRef("exp")))
    else:
        arrays = [CArray("scale", "float", scale)]
        fields = (("scale", CRef("scale")), ("mult", None), ("exp", None))
    struct = CStruct("q8_requant_params", (
        *fields, ("per_channel", int(per_channel)), ("zero_point", zero_point),
        ("act_min", act_min), ("act_max", act_max)))
    return struct, arrays


# q8_requant_f32_bounded is exact while |acc * scale| < 2^22; the proof keeps a factor 2.
BOUNDED_PRODUCT = 2.0**21


def bounded_requant(requant: CStruct, arrays: Sequence[CArray],
                    acc_bound: NDArray[Any]) -> CStruct:
    """Mark a float requantization as bounded when |acc| <= acc_bound (one per output
    channel, over every possible input) keeps |acc * scale| below BOUNDED_PRODUCT and acc
    within int32, and no scale is subnormal: the kernels then round through the float's
    bits and clamp in integers, or use vector float operations."""
    scale = next((a.values for a in arrays if a.name == "scale"), None)
    if scale is None:
        return requant
    bound = np.asarray(acc_bound, dtype=np.float64).reshape(-1)
    scales = np.abs(np.asarray(scale, dtype=np.float32).reshape(-1))
    product = bound * scales.astype(np.float64)
    # A subnormal scale keeps the scalar float path: Helium's vector float operations
    # flush subnormals to zero (the saturating modes run them on Cortex-M55).
    subnormal = (scales > 0) & (scales < np.finfo(np.float32).tiny)
    if (np.all(bound < 2.0**31) and np.all(product < BOUNDED_PRODUCT)
            and not np.any(subnormal)):
        return CStruct(requant.ctype, (*requant.fields, ("bounded", 1)))
    return requant


def conv_acc_bound(rows: NDArray[Any], bias: NDArray[Any] | None) -> NDArray[Any]:
    """The largest |acc| of each output row: |bias| + 255 * sum |w| (an input minus its
    zero point lies in [-255, 255]); rows are the weights minus their zero point."""
    total: NDArray[Any] = 255 * np.abs(rows.astype(np.int64)).sum(axis=1)
    if bias is not None:
        total = total + np.abs(np.broadcast_to(np.asarray(bias, np.int64).reshape(-1),
                                               total.shape))
    return total


def folded_bias(bias: NDArray[Any] | None, rows: NDArray[Any], x_zp: int) -> NDArray[Any]:
    """bias - x_zp * sum(row) per output channel (a row: one channel's weights minus their
    zero point), modulo 2^32: the input zero point taken out of the inner loop (padding
    taps then hold x_zp and add nothing)."""
    folded = (np.broadcast_to(bias.astype(np.int64).reshape(-1), (len(rows),))
              if bias is not None else np.zeros(len(rows), np.int64))
    folded = folded - x_zp * rows.astype(np.int64).sum(axis=1)
    wrapped: NDArray[Any] = ((folded + 2**31) % 2**32 - 2**31).astype(np.int32)
    return wrapped


def no_requant() -> CStruct:
    """q8_requant_params for kernels whose output is not requantized (int32 outputs)."""
    return CStruct("q8_requant_params", (
        ("scale", None), ("mult", None), ("exp", None), ("per_channel", 0),
        ("zero_point", 0), ("act_min", 0), ("act_max", 0)))


def kernel_suffix(dtype: str) -> str:
    return {"uint8": "u8", "int8": "s8", "uint16": "u16", "int16": "s16", "int32": "s32",
            "float32": "f32"}[dtype]


def plane_overlap(x: Tensor, y: Tensor, whole_plane_first: bool) -> Overlap | None:
    """A kernel that takes one channel plane at a time (depthwise convolutions, pooling)
    may overwrite the input planes before c with output plane c, as no later plane reads
    them; and plane c itself when the kernel reads that plane whole (into its scratch)
    before writing any of its output. With planes of hwi and hwo bytes, output plane c
    must end at or before the first input byte still to be read: Y + (c + 1) hwo <=
    X + (c + 1) hwi (whole plane first) or X + c hwi, for every c."""
    if x.shape[0] != 1 or y.shape[1] != x.shape[1]:
        return None
    c = x.shape[1]
    hwi, hwo = x.nbytes // c, y.nbytes // c
    if whole_plane_first:
        return Overlap(0, min(hwi - hwo, c * (hwi - hwo)))
    return Overlap(0, min(-hwo, (c - 1) * hwi - c * hwo))


def check_output_shape(node: Node, graph: Graph, shape: Sequence[int], dtype: str) -> None:
    """An operator whose spec holds tables as long as its output checks the output's
    shape against the model's limits first (the importer checks every output, but only
    after inference has built the spec)."""
    check_shape(tuple(int(d) for d in shape), itemsize(dtype),
                f"{node.describe()}: output '{node.outputs[0]}'", graph.limits, dtype)
