"""Float32 arithmetic done exactly at generation time: the constants and 256-entry
tables that reproduce ONNX Runtime's table-based and FMA-based operators.

Everything here is pure and deterministic: numpy float32 operations are single IEEE
roundings, and `fma32` computes a fused multiply-add exactly with Python integers, so
the results do not depend on the machine running the generator.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import NDArray

F32 = np.float32
FLT_MAX = float(np.finfo(np.float32).max)


def round_to_f32(value: Fraction) -> np.float32:
    """The float32 nearest to an exact rational, ties to even (overflow: +-inf)."""
    if value == 0:
        return F32(0.0)
    sign = -1.0 if value < 0 else 1.0
    mag = abs(value)
    # exponent e with 2^23 <= mag / 2^e < 2^24, then not below the subnormal quantum.
    e = mag.numerator.bit_length() - mag.denominator.bit_length() - 24
    while mag / Fraction(2) ** e >= 2**24:
        e += 1
    while mag / Fraction(2) ** e < 2**23:
        e -= 1
    e = max(e, -149)
    scaled = mag / Fraction(2) ** e
    m, rem = divmod(scaled.numerator, scaled.denominator)
    twice = 2 * rem
    if twice > scaled.denominator or (twice == scaled.denominator and m & 1):
        m += 1
    result = m * 2.0**e if e < 128 - 24 else float(m) * 2.0**e
    if result > FLT_MAX:
        return F32(sign * math.inf)
    return F32(sign * result)


def fma32(a: Any, b: Any, c: Any) -> np.float32:
    """C99 fmaf(a, b, c) for finite float32 operands: one rounding of a*b + c."""
    fa, fb, fc = (F32(v) for v in (a, b, c))
    if not (np.isfinite(fa) and np.isfinite(fb) and np.isfinite(fc)):
        raise ValueError("fma32 needs finite operands")
    return round_to_f32(Fraction(float(fa)) * Fraction(float(fb)) + Fraction(float(fc)))


# ------------------------------------------------------------------ QuantizeLinear


def quantize_like_mlas(values: NDArray[Any], scale: float, zero_point: int,
                       dtype: str) -> NDArray[Any]:
    """MlasQuantizeLinear: f32(x / scale), max(lo) (NaN -> lo), min(hi), rne, + zp."""
    lo, hi = (0, 255) if dtype == "uint8" else (-128, 127)
    with np.errstate(all="ignore"):
        v = (np.asarray(values, F32) / F32(scale)).astype(F32)
    v = np.where(np.isnan(v), F32(lo - zero_point), np.maximum(v, F32(lo - zero_point)))
    v = np.minimum(v, F32(hi - zero_point))
    return (np.rint(v).astype(np.int64) + zero_point).astype(dtype)


def table_inputs(x_scale: float, x_zero_point: int, dtype: str) -> NDArray[Any]:
    """Dequantized values of the 256 raw bytes, in byte order (int8 by bit pattern)."""
    raw = np.arange(256, dtype=np.int64)
    if dtype == "int8":
        raw = raw.astype(np.uint8).view(np.int8).astype(np.int64)
    return (F32(x_scale) * (raw - x_zero_point).astype(F32)).astype(F32)


def requantize_table(x_scale: float, x_zp: int, y_scale: float, y_zp: int,
                     dtype: str) -> NDArray[Any]:
    """y = Q(DQ(x)) as a table: QLinearConcat's requantization of an input."""
    return quantize_like_mlas(table_inputs(x_scale, x_zp, dtype), y_scale, y_zp, dtype)


# ------------------------------------------------------------------ logistic (sigmoid)

# MlasComputeLogistic's rational approximation (FMA3 kernel), float32 constants.
LOGISTIC_P = (4.37031012579801e-11, 1.15627324459942e-07, 6.08574864600143e-05,
              8.51377133304701e-03, 2.48287947061529e-01)
LOGISTIC_Q = (6.10247389755681e-13, 5.76102136993427e-09, 6.29106785017040e-06,
              1.70198817374094e-03, 1.16817656904453e-01, 9.93151921023180e-01)


def mlas_logistic(x: Any) -> np.float32:
    """One value of ORT's sigmoid on x86 (FMA3): clamp to [-18, 18], odd polynomial p
    and even polynomial q in x^2 by FMA steps, p/q + 0.5, max with 0."""
    v = F32(x)
    if np.isnan(v):
        return v
    v = min(max(F32(-18.0), v), F32(18.0))
    x2 = F32(v * v)
    p = fma32(x2, F32(LOGISTIC_P[0]), F32(LOGISTIC_P[1]))
    for coefficient in LOGISTIC_P[2:]:
        p = fma32(p, x2, F32(coefficient))
    q = fma32(x2, F32(LOGISTIC_Q[0]), F32(LOGISTIC_Q[1]))
    for coefficient in LOGISTIC_Q[2:]:
        q = fma32(q, x2, F32(coefficient))
    p = F32(v * p)
    r = F32(F32(p / q) + F32(0.5))
    return r if np.isnan(r) else max(F32(0.0), r)


def sigmoid_table(x_scale: float, x_zp: int, y_scale: float, y_zp: int,
                  dtype: str) -> NDArray[Any]:
    values = np.array([mlas_logistic(v) for v in table_inputs(x_scale, x_zp, dtype)], F32)
    return quantize_like_mlas(values, y_scale, y_zp, dtype)


def leaky_relu_table(alpha: float, x_scale: float, x_zp: int, y_scale: float, y_zp: int,
                     dtype: str) -> NDArray[Any]:
    v = table_inputs(x_scale, x_zp, dtype)
    values = np.where(v >= F32(0.0), v, (F32(alpha) * v).astype(F32)).astype(F32)
    return quantize_like_mlas(values, y_scale, y_zp, dtype)


# ------------------------------------------------------------------ softmax

def softmax_exp_table(x_scale: float, row_length: int, dtype: str) -> NDArray[Any]:
    """ORT's QLinearSoftmax table: exp(((i - 255) + bias) * x_scale) in double, rounded to
    float32, for the 256 offsets of a value from its row's maximum. bias keeps the sum of
    a row below FLT_MAX: max(0, logf(FLT_MAX / D) - 5) / x_scale."""
    xs = float(F32(x_scale))
    q = F32(F32(FLT_MAX) / F32(row_length))
    bias = float(F32(math.log(float(q)))) - 5.0
    bias = bias if bias > 0.0 else 0.0
    bias = bias / xs
    table = np.zeros(256, F32)
    for i in range(256):
        value = math.exp((float(i) - 255.0 + bias) * xs)
        with np.errstate(over="ignore"):
            table[(i - 128) & 0xFF if dtype == "int8" else i] = F32(value)
    return table


def softmax_output_multiplier(y_scale: float) -> float:
    """floorf(1.0f / y_scale), as ORT scales its probabilities."""
    m = float(np.floor(F32(F32(1.0) / F32(y_scale))))
    if not math.isfinite(m):
        m = math.floor(1.0 / float(F32(y_scale)))
    return m


def dequantize_like_ort(x: NDArray[Any], scale: NDArray[Any], zero_point: NDArray[Any],
                        axis: int | None) -> NDArray[Any]:
    """DequantizeLinear as ORT computes it: f32((float)(int32)(x - zp) * scale), the
    difference in int32 (an int32 input may round when converted to float)."""
    shape = [1] * x.ndim
    if axis is not None:
        shape[axis] = -1
    s = np.asarray(scale, F32).reshape(shape)
    z = np.asarray(zero_point, np.int64).reshape(shape if axis is not None else ())
    diff = (x.astype(np.int64) - z).astype(np.int32)
    return (diff.astype(F32) * s).astype(F32)
