"""Float arithmetic done exactly at generation time: the constants and 256-entry tables
that reproduce ONNX Runtime's table-based and FMA-based operators.

Everything here is pure and deterministic, and depends on no C math library and on no
numpy SIMD path: float32 and double values are combined only with IEEE basic operations
(+ - * /, conversions, comparisons, rint), which every IEEE 754 machine rounds correctly;
`fma32` computes a fused multiply-add exactly with Python integers, and the exponential
and logarithm of the softmax table are correctly rounded with the decimal module. So the
generated C is the same whatever machine, operating system or numpy build generates it.
"""

from __future__ import annotations

import functools
import math
from decimal import ROUND_HALF_EVEN, Context, Decimal, localcontext
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import NDArray

from codegen.core.ir import QDQ_RANGE

F32 = np.float32
FLT_MAX = float(np.finfo(np.float32).max)


def _scaled(num: int, den: int, e: int) -> tuple[int, int]:
    """num / den / 2^e as an integer numerator and denominator."""
    return (num, den << e) if e >= 0 else (num << -e, den)


def round_binary(value: Fraction, bits: int, min_exponent: int) -> tuple[int, int]:
    """|value| rounded to `bits` significant bits, ties to even, with a quantum no finer
    than 2^min_exponent (subnormals): (m, e) with the result m * 2^e, m <= 2^bits. Integer
    arithmetic only."""
    num, den = abs(value.numerator), value.denominator
    if num == 0:
        return 0, min_exponent
    # num / den / 2^e lands in [2^(bits-1), 2^(bits+1)); one step brings it below 2^bits.
    e = num.bit_length() - den.bit_length() - bits
    n, d = _scaled(num, den, e)
    if n >= d << bits:
        e += 1
    e = max(e, min_exponent)
    n, d = _scaled(num, den, e)
    m, rem = divmod(n, d)
    if 2 * rem > d or (2 * rem == d and m & 1):
        m += 1
    return m, e


def _round_to_format(value: Fraction, bits: int, min_exponent: int,
                     max_exponent: int) -> float:
    """value rounded to a binary format (ties to even, overflow to +-inf), as a double.
    ldexp only scales an exactly representable result by a power of two: it is exact."""
    m, e = round_binary(value, bits, min_exponent)
    sign = -1.0 if value < 0 else 1.0
    # Overflow when the rounded magnitude reaches 2^(max_exponent + 1).
    if e + m.bit_length() - 1 > max_exponent:
        return sign * math.inf
    return sign * math.ldexp(m, e)


def round_to_f32(value: Fraction) -> np.float32:
    """The float32 nearest to an exact rational, ties to even (overflow: +-inf)."""
    return F32(_round_to_format(value, 24, -149, 127))


def round_to_f64(value: Fraction) -> float:
    """The double nearest to an exact rational, ties to even (overflow: +-inf)."""
    return _round_to_format(value, 53, -1074, 1023)


def fma32(a: Any, b: Any, c: Any) -> np.float32:
    """C99 fmaf(a, b, c): one rounding of a*b + c (an exact zero is +0).

    In double: a float32 product is exact, and the sum's rounding error e is exact too
    (Knuth's two-sum), so a*b + c = r + e exactly with |e| at most half an ulp of r.
    r rounds to the same float32 as r + e unless r lies exactly halfway between two
    float32 values (a 25-bit number, which a double holds), where e decides; that rare
    case, and overflow, take the exact rational path (fma32_exact)."""
    fa, fb, fc = float(F32(a)), float(F32(b)), float(F32(c))
    if not (math.isfinite(fa) and math.isfinite(fb) and math.isfinite(fc)):
        # An infinity or NaN operand makes the result one too, which double arithmetic
        # gets right: a float32 product is exact in double.
        with np.errstate(invalid="ignore"):
            return F32(fa * fb + fc)
    p = fa * fb
    r = p + fc
    if r == 0.0:
        return F32(0.0)
    c_part = r - p
    e = (p - (r - c_part)) + (fc - c_part)
    if e == 0.0:
        with np.errstate(over="ignore"):
            return F32(r)
    if abs(r) < FLT_MAX:
        nearest = F32(r)
        if float(nearest) == r:  # r is a float32; r + e is nearer to it than to any other
            return nearest
        other = np.nextafter(nearest, F32(math.copysign(math.inf, r - float(nearest))))
        if float(nearest) + float(other) != 2.0 * r:  # not halfway
            return nearest
    return fma32_exact(fa, fb, fc)


def fma32_exact(a: Any, b: Any, c: Any) -> np.float32:
    """fma32 in rational arithmetic: the reference the double path is tested against."""
    fa, fb, fc = (F32(v) for v in (a, b, c))
    return round_to_f32(Fraction(float(fa)) * Fraction(float(fb)) + Fraction(float(fc)))


def _correctly_rounded(function: str, x: float) -> float:
    """exp(x) or log(x) correctly rounded to double (what a correctly rounded C library
    returns), by Ziv's method: the decimal module's exp and ln are correctly rounded to
    the context's digits, so the exact value lies within one unit of the last digit of
    the result; widen the digits until both ends of that interval round to the same
    double (they always do in the end: the values are transcendental, never halfway)."""
    for digits in (40, 80, 160, 320, 640):
        # A context of its own: nothing the embedding program set applies.
        with localcontext(Context(prec=digits, rounding=ROUND_HALF_EVEN, Emin=-999999,
                                  Emax=999999)):
            result = Decimal(x).exp() if function == "exp" else Decimal(x).ln()
            unit = Fraction(Decimal(1).scaleb(result.adjusted() - digits + 1))
        low, high = (round_to_f64(Fraction(result) - unit),
                     round_to_f64(Fraction(result) + unit))
        if low == high:
            return low
    raise ArithmeticError(f"{function}({x!r}) did not round")  # pragma: no cover


def exp_f64(x: float) -> float:
    """exp(x) correctly rounded to double, for a finite x."""
    if x < -746.0:  # exp(x) < 2^-1076, below half the smallest subnormal: rounds to 0
        return 0.0
    if x > 710.0:  # exp(x) > 2^1024: rounds to inf
        return math.inf
    return _correctly_rounded("exp", x)


def log_f64(x: float) -> float:
    """log(x) correctly rounded to double, for a finite x > 0."""
    if not x > 0.0 or not math.isfinite(x):
        raise ValueError(f"log_f64 needs a finite positive value, got {x!r}")
    return 0.0 if x == 1.0 else _correctly_rounded("log", x)


# ------------------------------------------------------------------ QuantizeLinear


def quantize_like_mlas(values: NDArray[Any], scale: float, zero_point: int,
                       dtype: str) -> NDArray[Any]:
    """MlasQuantizeLinear: f32(x / scale), max(lo) (NaN -> lo), min(hi), rne, + zp; the
    same for 16-bit types (measured on ORT 1.32)."""
    lo, hi = QDQ_RANGE[dtype]
    with np.errstate(all="ignore"):
        v = (np.asarray(values, F32) / F32(scale)).astype(F32)
    v = np.where(np.isnan(v), F32(lo - zero_point), np.maximum(v, F32(lo - zero_point)))
    v = np.minimum(v, F32(hi - zero_point))
    return (np.rint(v).astype(np.int64) + zero_point).astype(dtype)


def quantize_constant_like_ort(values: NDArray[Any], scale: NDArray[Any],
                                zero_point: NDArray[Any] | None, axis: int | None,
                                dtype: str) -> NDArray[Any]:
    """QuantizeLinear of a constant as ORT's constant folding computes it:
    MlasQuantizeLinear on the whole tensor, or on each slice along `axis` with that
    slice's scale and zero point (per-axis)."""
    scales = np.asarray(scale).reshape(-1)
    zeros = np.zeros(scales.shape, np.int64) if zero_point is None else \
        np.broadcast_to(np.asarray(zero_point).reshape(-1).astype(np.int64), scales.shape)
    if axis is None:
        return quantize_like_mlas(values, float(scales[0]), int(zeros[0]), dtype).reshape(
            values.shape)
    slices = np.moveaxis(values, axis, 0)
    folded = [quantize_like_mlas(s, float(c), int(z), dtype)
              for s, c, z in zip(slices, scales, zeros, strict=True)]
    return np.moveaxis(np.stack(folded), 0, axis).reshape(values.shape)


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

# MlasComputeLogistic's rational approximation (FMA3 kernel), float32 constants. MLAS
# writes them as float literals (one rounding from the decimal); CPython parses these to
# the nearest double with its own correctly rounded parser, and F32() rounds that to
# float32: the same float32 for each (tests/unit/test_exact_tables.py checks it).
LOGISTIC_P = (4.37031012579801e-11, 1.15627324459942e-07, 6.08574864600143e-05,
              8.51377133304701e-03, 2.48287947061529e-01)
LOGISTIC_Q = (6.10247389755681e-13, 5.76102136993427e-09, 6.29106785017040e-06,
              1.70198817374094e-03, 1.16817656904453e-01, 9.93151921023180e-01)


def mlas_logistic(x: Any) -> np.float32:
    """One value of ORT's sigmoid on x86 (FMA3): clamp to [-18, 18], odd polynomial p
    and even polynomial q in x^2 by FMA steps, p/q + 0.5, max with 0. This reproduces
    MLAS's own float32 arithmetic with IEEE basic operations only (numpy float32 scalar
    *, /, +, min/max, and the exact fma32), so no C library is involved."""
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


TANH_P = ("-0x1.3e4b8p-52", "0x1.c266fcp-43", "-0x1.7a6ffep-34", "0x1.b80082p-25",
          "0x1.f28694p-17", "0x1.4e1bdap-11", "0x1.40b3b8p-8")
TANH_Q = ("0x1.41a7bp-20", "0x1.f12bacp-14", "0x1.29540ap-9", "0x1.40b3bap-8")


def mlas_tanh(x: Any) -> np.float32:
    """One value of ORT's float Tanh (runtime_c/q8_float.h's q8_mlas_tanh, the same
    steps): clamp to [-9, 9], odd polynomial p and even q in x^2 by FMA steps, p/q."""
    v = F32(x)
    if np.isnan(v):
        return v
    v = min(max(F32(-9.0), v), F32(9.0))
    x2 = F32(v * v)
    coefficients = [F32(float.fromhex(c)) for c in TANH_P]
    p = fma32(x2, coefficients[0], coefficients[1])
    for c in coefficients[2:]:
        p = fma32(p, x2, c)
    p = F32(p * v)
    q_coefficients = [F32(float.fromhex(c)) for c in TANH_Q]
    q = fma32(x2, q_coefficients[0], q_coefficients[1])
    for c in q_coefficients[2:]:
        q = fma32(q, x2, c)
    return F32(p / q)


# MlasErfConstants (onnxruntime/core/mlas/lib/erf.cpp), float32 as MLAS writes them.
# The cap on |x| is ORT 1.32's, measured: 3.925 (a later source has 3.725).
ERF_UPPER_ABS_RANGE = 3.925
ERF_SPLIT_BOUNDARY = 0.921875
ERF_SMALL = (-5.99104969e-4, 4.99339588e-3, -2.67667342e-2, 1.12818025e-1, -3.76124859e-1,
             1.28379151e-1)
ERF_BIG = (1.72948930e-5, -3.83208680e-4, 3.88393435e-3, -2.42545605e-2, 1.06777847e-1,
           6.34846687e-1, 1.28717512e-1)
EXP_LOWER_RANGE = -88.3762626647949
EXP_LOG2_RECIPROCAL = 1.44269504088896341
EXP_LOG2_HI = -6.93145752e-1
EXP_LOG2_LO = -1.42860677e-6
EXP_P = (1.38319808e-3, 8.37550033e-3, 4.16689515e-2, 1.66664466e-1, 4.99999851e-1, 1.0, 1.0)
EXP_ROUNDING = 1.25829120e7


def mlas_erf(x: Any) -> np.float32:
    """One value of ORT's Erf on x86 (MlasErfKernelFma3, every lane alike): on |x| capped
    at 3.925, an odd polynomial below 0.921875, else 1 - exp(-(a + a * p(a))) with MLAS's
    exp (a rounding constant, two-part log 2, a degree-6 polynomial, then 2^i); the sign
    put back. IEEE basic operations and the exact fma32 only."""
    v = F32(x)
    if np.isnan(v):
        return v
    negative = bool(np.signbit(v))
    a = min(F32(abs(v)), F32(ERF_UPPER_ABS_RANGE))
    big = F32(ERF_SPLIT_BOUNDARY) <= a
    if not big:
        s = F32(a * a)
        p = fma32(F32(ERF_SMALL[0]), s, F32(ERF_SMALL[1]))
        for c in ERF_SMALL[2:]:
            p = fma32(p, s, F32(c))
        result = fma32(p, a, a)
    else:
        r = fma32(F32(ERF_BIG[0]), a, F32(ERF_BIG[1]))
        for c in ERF_BIG[2:]:
            r = fma32(r, a, F32(c))
        r = F32(-fma32(r, a, a))
        r = max(r, F32(EXP_LOWER_RANGE))
        t = F32(fma32(F32(EXP_LOG2_RECIPROCAL), r, F32(EXP_ROUNDING)) - F32(EXP_ROUNDING))
        f = fma32(t, F32(EXP_LOG2_HI), r)
        f = fma32(t, F32(EXP_LOG2_LO), f)
        y = fma32(F32(EXP_P[0]), f, F32(EXP_P[1]))
        for c in EXP_P[2:]:
            y = fma32(y, f, F32(c))
        power = F32(np.ldexp(F32(1.0), int(t)))  # (trunc(t) + 127) << 23
        result = F32(F32(1.0) - F32(y * power))
    return F32(-result) if negative else result


EXP_ARGUMENT_FLOOR = -103.9720840454
EXP_SOFTMAX_P = ("0x1.694p-10", "0x1.125edcp-7", "0x1.555b5ap-5", "0x1.55545p-3",
                 "0x1.fffff6p-2", "0x1p0", "0x1p0")


def mlas_exp(x: Any) -> np.float32:
    """One value of ORT's float Exp (MlasComputeExpF32KernelAvx512F, also Softmax's
    exponentials): x clamped below at -103.972, m = round(x / ln2) by the rounding
    constant, r = x - m*ln2 in two fused steps, a degree-6 polynomial by fused
    multiply-adds, then p * 2^m with one rounding (vscalefps)."""
    v = F32(x)
    if np.isnan(v) or v == np.inf:  # measured: ORT's exp(+inf) is +inf
        return v
    v = max(v, F32(EXP_ARGUMENT_FLOOR))
    m = F32(fma32(v, F32(EXP_LOG2_RECIPROCAL), F32(EXP_ROUNDING)) - F32(EXP_ROUNDING))
    r = fma32(m, F32(EXP_LOG2_HI), v)
    r = fma32(m, F32(EXP_LOG2_LO), r)
    coefficients = [F32(float.fromhex(c)) for c in EXP_SOFTMAX_P]
    p = fma32(coefficients[0], r, coefficients[1])
    for c in coefficients[2:]:
        p = fma32(p, r, c)
    if np.isnan(p):
        return p
    with np.errstate(over="ignore"):
        return F32(np.ldexp(p, 256 if m > 256 else int(m)))


def sigmoid_table(x_scale: float, x_zp: int, y_scale: float, y_zp: int,
                  dtype: str) -> NDArray[Any]:
    return _sigmoid_table(x_scale, x_zp, y_scale, y_zp, dtype).copy()


@functools.lru_cache(maxsize=256)
def _sigmoid_table(x_scale: float, x_zp: int, y_scale: float, y_zp: int,
                   dtype: str) -> NDArray[Any]:
    # Kept per process: each entry is 256 exact evaluations in rational arithmetic
    # (about 0.1 s), and a model is often lowered several times (verify, report, bands).
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
    a row below FLT_MAX: max(0, logf(FLT_MAX / D) - 5) / x_scale.

    ORT calls its C library's exp and log; here they are correctly rounded (exp_f64,
    log_f64, rounded once more to float32 where ORT's value is a float), which is what
    those libraries return for all but the rarest arguments. The rest are IEEE basic
    operations on doubles and float32 values, as in ORT."""
    xs = float(F32(x_scale))
    q = F32(F32(FLT_MAX) / round_to_f32(Fraction(row_length)))
    bias = float(F32(log_f64(float(q)))) - 5.0
    bias = bias if bias > 0.0 else 0.0
    bias = bias / xs
    table = np.zeros(256, F32)
    for i in range(256):
        value = exp_f64((float(i) - 255.0 + bias) * xs)
        with np.errstate(over="ignore"):
            table[(i - 128) & 0xFF if dtype == "int8" else i] = F32(value)
    return table


def softmax_output_multiplier(y_scale: float) -> float:
    """floorf(1.0f / y_scale), as ORT scales its probabilities (in double where the
    float32 quotient overflows). IEEE division and floor: exact everywhere."""
    with np.errstate(over="ignore"):
        m = float(np.floor(F32(F32(1.0) / F32(y_scale))))
    if not math.isfinite(m):
        m = float(math.floor(1.0 / float(F32(y_scale))))
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
