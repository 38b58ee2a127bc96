"""Exact requantization for the 16-bit integer kernels (--integer-only on int16/uint16
activations with int8 weights), where ORT has no integer kernel to agree with.

The value a 16-bit unit stands for is exact: acc * x_scale * w_scale[c], acc the exact
integer sum of (x - x_zp) * w (plus the int32 bias, whose scale is x_scale * w_scale[c]).
The kernels round that exact value divided by y_scale half to even, as QuantizeLinear
rounds, and saturate: y = clamp(rne(acc * x_scale * w_scale[c] / y_scale) + y_zp).

x_scale * w_scale[c] is exact as num * 2^e (num < 2^48, two float32 significands), and
y_scale is den * 2^f (den < 2^24): the C computes rne(acc * num * 2^shift / den) with
shift = e - f in integers (runtime_c/q8_requant_exact.h), no float anywhere.
`requantize_exact_reference` is the oracle the C is tested against: Python's exact
rationals, written independently of that decomposition.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

F32 = np.float32


@dataclass(frozen=True)
class ExactMultiplier:
    """x_scale * w_scale / y_scale == num * 2^shift / den, exactly."""

    num: int  # < 2^48
    den: int  # < 2^24, odd or 1
    shift: int
    # The fixed-point form q8_requant_fast tries first: mult = the multiplier times
    # 2^rshift rounded, below 2^31, rshift 33..62; 0 where there is none (fixed_point).
    mult: int = 0
    rshift: int = 0


def _significand_exponent(value: Fraction) -> tuple[int, int]:
    """value == m * 2^e with m an odd integer (or 0): value has a power-of-two
    denominator (a product of floats)."""
    if value == 0:
        return 0, 0
    m, e = value.numerator, 0
    d = value.denominator
    assert d & (d - 1) == 0, "not a dyadic rational"
    e -= d.bit_length() - 1
    while m % 2 == 0:
        m //= 2
        e += 1
    return m, e


def exact_multiplier(x_scale: float, w_scale: float, y_scale: float) -> ExactMultiplier:
    """The decomposition of float32 x_scale * w_scale / y_scale (all positive, finite)."""
    scales = [F32(x_scale), F32(w_scale), F32(y_scale)]
    if not all(np.isfinite(s) and s > 0 for s in scales):
        raise ValueError("scales must be positive and finite")
    product = Fraction(float(F32(x_scale))) * Fraction(float(F32(w_scale)))
    num, e = _significand_exponent(product)
    den, f = _significand_exponent(Fraction(float(F32(y_scale))))
    if not 0 < num < 2**48 or not 0 < den < 2**24:
        raise ValueError("scales must be positive and finite")
    mult, rshift = fixed_point(Fraction(num) * Fraction(2) ** (e - f) / den)
    return ExactMultiplier(num, den, e - f, mult, rshift)


def fixed_point(value: Fraction) -> tuple[int, int]:
    """(mult, s) with mult = round(value * 2^s) below 2^31 and 33 <= s <= 62 (the half of
    q8_requant_fast's rounding then lies in the product's high word), as many bits as
    that allows (mult >= 2^30 where s is free), or (0, 0) where no such pair exists
    (value >= 1/4, or below 2^-63: those take the exact path only)."""
    s = 30 - (value.numerator.bit_length() - value.denominator.bit_length())
    while value * 2**s >= 2**31:
        s -= 1
    while value * 2**s < 2**30:
        s += 1
    s = min(max(s, 33), 62)
    mult = round(value * 2**s)
    if mult >= 2**31 and s > 33:
        mult, s = round(value * 2 ** (s - 1)), s - 1
    return (mult, s) if 0 < mult < 2**31 else (0, 0)


def requantize_exact_reference(acc: int, x_scale: float, w_scale: float, y_scale: float,
                               y_zero_point: int, lo: int, hi: int) -> int:
    """The oracle: the exact value rounded half to even, plus the zero point, clamped."""
    exact = Fraction(acc) * Fraction(float(F32(x_scale))) * Fraction(float(F32(w_scale))) \
        / Fraction(float(F32(y_scale)))
    return min(max(round(exact) + y_zero_point, lo), hi)
