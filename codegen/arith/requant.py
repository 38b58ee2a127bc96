"""Requantization constants, computed at generation time exactly as ORT computes them.

ORT's QLinearConv/QLinearMatMul scale is f32(f32(x_scale * w_scale) / y_scale), in this
order and in float32. The float kernels use it as is; the integer kernels use its exact
decomposition scale = mult * 2^exp (mult < 2^24, the float32 significand).

The two reference functions here are the specification the C kernels are tested against.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

F32 = np.float32


def output_scale(x_scale: float, w_scale: NDArray[Any], y_scale: float) -> NDArray[Any]:
    """Per-channel requantization scale, rounded to float32 after each operation."""
    with np.errstate(over="ignore"):  # an infinite scale is refused or saturates later
        product = (F32(x_scale) * w_scale.astype(F32)).astype(F32)
        return (product / F32(y_scale)).astype(F32)


def float32_mult_exp(scale: NDArray[Any]) -> tuple[NDArray[Any], NDArray[Any]]:
    """Exact decomposition of float32 values: scale == mult * 2**exp, |mult| < 2**24."""
    bits = scale.astype(F32).reshape(-1).view(np.uint32).astype(np.int64)
    sign = np.where(bits >> 31, -1, 1)
    biased = (bits >> 23) & 0xFF
    fraction = bits & 0x7FFFFF
    if np.any(biased == 0xFF):
        raise ValueError("scale is not finite")
    normal = biased != 0
    mult = np.where(normal, fraction | 0x800000, fraction)
    exp = np.where(normal, biased - 150, -149)
    exp = np.where(mult == 0, 0, exp)
    return (sign * mult).astype(np.int32), exp.astype(np.int32)


def requantize_float_reference(acc: NDArray[Any], scale: NDArray[Any],
                               zero_point: int, qmin: int, qmax: int) -> NDArray[Any]:
    """ORT's arithmetic in numpy: y = rne(clamp(f32(f32(acc) * scale))) + zp."""
    with np.errstate(over="ignore"):
        v = (acc.astype(np.int32).astype(F32) * scale.astype(F32)).astype(F32)
    lo, hi = F32(qmin - zero_point), F32(qmax - zero_point)
    v = np.minimum(np.maximum(v, lo), hi)
    return np.rint(v).astype(np.int32) + zero_point


def _round_shift(value: int, shift: int) -> int:
    """value / 2**shift rounded half to even (value >= 0, shift >= 1)."""
    q, rem = value >> shift, value & ((1 << shift) - 1)
    half = 1 << (shift - 1)
    return q + (1 if rem > half or (rem == half and q & 1) else 0)


def requantize_int_reference(acc: int, mult: int, exp: int, lo: int, hi: int) -> int:
    """The integer algorithm of q8_requant_int, one value, in Python integers."""
    a, m = abs(acc), abs(mult)
    negative = (acc < 0) != (mult < 0)
    e = exp
    if a >= 1 << 24:
        n = a.bit_length() - 24
        a = _round_shift(a, n)
        e += n
    p = a * m
    n = p.bit_length() - 24
    if n > 0:
        p = _round_shift(p, n)
        e += n
    if p == 0:
        mag = 0
    elif e >= 0:
        mag = min(p << e, 1024)
    elif e < -40:
        mag = 0
    else:
        mag = min(_round_shift(p, -e), 1024)
    v = -mag if negative else mag
    return max(lo, min(hi, v))
