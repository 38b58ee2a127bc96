"""glibc's powf in Python, for tables computed at generation time.

ORT's Pow by an exponent other than 2 and 3 calls std::pow(float, float), glibc's powf
on Linux (2.28 and later: Arm's optimized-routines algorithm, in double precision). Its
results are not always correctly rounded, so the tables follow the algorithm itself,
with the same constants (Arm Limited's, MIT licence) and the fused multiply-adds of the
build glibc runs on x86-64 CPUs with FMA, as runtime_c/q8_libm.h does in C. Python
floats are IEEE doubles, every other step is one IEEE operation, and fma64 rounds
once, so the values are the C library's, bit for bit (tests/ops/test_tabulate.py checks
them against ORT)."""

from __future__ import annotations

import struct
from fractions import Fraction

import numpy as np

from .numerics import round_to_f64

# 1/c for the 16 subintervals of [0x1.66p-1, 0x1.66p0) (shared with logf), log2(c).
INVERSE_C = tuple(float.fromhex(h) for h in (
    "0x1.661ec79f8f3bep+0", "0x1.571ed4aaf883dp+0", "0x1.49539f0f010bp+0",
    "0x1.3c995b0b80385p+0", "0x1.30d190c8864a5p+0", "0x1.25e227b0b8eap+0",
    "0x1.1bb4a4a1a343fp+0", "0x1.12358f08ae5bap+0", "0x1.0953f419900a7p+0", "0x1p+0",
    "0x1.e608cfd9a47acp-1", "0x1.ca4b31f026aap-1", "0x1.b2036576afce6p-1",
    "0x1.9c2d163a1aa2dp-1", "0x1.886e6037841edp-1", "0x1.767dcf5534862p-1"))
LOG2_C = tuple(float.fromhex(h) for h in (
    "-0x1.efec65b963019p-2", "-0x1.b0b6832d4fca4p-2", "-0x1.7418b0a1fb77bp-2",
    "-0x1.39de91a6dcf7bp-2", "-0x1.01d9bf3f2b631p-2", "-0x1.97c1d1b3b7afp-3",
    "-0x1.2f9e393af3c9fp-3", "-0x1.960cbbf788d5cp-4", "-0x1.a6f9db6475fcep-5", "0x0p+0",
    "0x1.338ca9f24f53dp-4", "0x1.476a9543891bap-3", "0x1.e840b4ac4e4d2p-3",
    "0x1.40645f0c6651cp-2", "0x1.88e9c2c1b9ff8p-2", "0x1.ce0a44eb17bccp-2"))
LOG2_POLY = tuple(float.fromhex(h) for h in (
    "0x1.27616c9496e0bp-2", "-0x1.71969a075c67ap-2", "0x1.ec70a6ca7baddp-2",
    "-0x1.7154748bef6c8p-1", "0x1.71547652ab82bp0"))
# The bits of 2^(i/32) less i << 47.
EXP2_TABLE = (
    0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51,
    0x3fef72b83c7d517b, 0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1,
    0x3fef06fe0a31b715, 0x3feef1a7373aa9cb, 0x3feedea64c123422, 0x3feece086061892d,
    0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429, 0x3feea47eb03a5585,
    0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
    0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d,
    0x3feee89f995ad3ad, 0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069,
    0x3fef5818dcfba487, 0x3fef7c97337b9b5f, 0x3fefa4afa2a490da, 0x3fefd0765b6e4540)
EXP2_POLY = tuple(float.fromhex(h) for h in (
    "0x1.c6af84b912394p-5", "0x1.ebfce50fac4f3p-3", "0x1.62e42ff0c52d6p-1"))
OVERFLOW = float.fromhex("0x1.fffffffd1d571p+6")
F32 = np.float32


def _f32_bits(v: float) -> int:
    return int(np.array(v, F32).view(np.uint32))


def _f32_from_bits(bits: int) -> float:
    return float(np.array(bits & 0xFFFFFFFF, np.uint32).view(F32))


def _f64_bits(v: float) -> int:
    return int(struct.unpack("<Q", struct.pack("<d", v))[0])


def _f64_from_bits(bits: int) -> float:
    return float(struct.unpack("<d", struct.pack("<Q", bits & 0xFFFFFFFFFFFFFFFF))[0])


def fma64(a: float, b: float, c: float) -> float:
    """fma(a, b, c) in double, one rounding, for finite operands."""
    return round_to_f64(Fraction(a) * Fraction(b) + Fraction(c))


def _log2(bits: int) -> float:
    offset = (bits - 0x3F330000) & 0xFFFFFFFF
    index = (offset >> 19) & 15
    top = offset & 0xFF800000
    k = (top - (1 << 32) if top >> 31 else top) >> 23
    z = _f32_from_bits(bits - top)
    r = fma64(z, INVERSE_C[index], -1.0)
    r2 = r * r
    a = LOG2_POLY
    q = fma64(a[4], r, LOG2_C[index] + float(k))
    q = fma64(fma64(a[2], r, a[3]), r2, q)
    return fma64(fma64(a[0], r, a[1]), r2 * r2, q)


def _exp2(v: float, negative: bool) -> np.float32:
    shift = float.fromhex("0x1.8p+52") / 32.0
    rounded = v + shift
    k = _f64_bits(rounded)
    rounded -= shift
    r = v - rounded
    s = _f64_from_bits(EXP2_TABLE[k % 32] + ((k + ((1 << 16) if negative else 0)) << 47))
    c = EXP2_POLY
    y = fma64(fma64(c[0], r, c[1]), r * r, fma64(c[2], r, 1.0))
    return F32(y * s)


def _integer_kind(y_bits: int) -> int:
    """0: not an integer, 1: odd, 2: even (y finite and not zero)."""
    e = (y_bits >> 23) & 0xFF
    if e < 0x7F:
        return 0
    if e > 0x7F + 23:
        return 2
    if y_bits & ((1 << (0x7F + 23 - e)) - 1):
        return 0
    return 1 if y_bits & (1 << (0x7F + 23 - e)) else 2


def _twice(bits: int) -> int:
    """2 * bits in uint32 arithmetic: the bits without their sign, shifted."""
    return (2 * bits) & 0xFFFFFFFF


def glibc_powf(x: float | np.float32, y: float | np.float32) -> np.float32:
    """powf(x, y) as glibc 2.28+ computes it, for float32 x and y."""
    fx, fy = F32(x), F32(y)
    xb, yb = _f32_bits(float(fx)), _f32_bits(float(fy))
    with np.errstate(all="ignore"):
        if (_twice(yb) - 1) & 0xFFFFFFFF >= 2 * 0x7F800000 - 1:  # y zero, infinite or NaN
            if _twice(yb) == 0 or xb == 0x3F800000:
                return F32(1.0)
            if _twice(xb) > 2 * 0x7F800000 or _twice(yb) > 2 * 0x7F800000:
                return F32(fx + fy)
            if _twice(xb) == 2 * 0x3F800000:
                return F32(1.0)
            if (_twice(xb) < 2 * 0x3F800000) == (not yb >> 31):
                return F32(0.0)
            return F32(fy * fy)
        if (_twice(xb) - 1) & 0xFFFFFFFF >= 2 * 0x7F800000 - 1:  # x zero, infinite or NaN
            x2 = F32(fx * fx)
            if xb >> 31 and _integer_kind(yb) == 1:
                x2 = F32(-x2)
            return F32(F32(1.0) / x2) if yb >> 31 else x2
        negative = False
        if xb >> 31:
            kind = _integer_kind(yb)
            if kind == 0:  # glibc's (x - x) / (x - x): x86's default NaN, sign set
                return F32(_f32_from_bits(0xFFC00000))
            negative = kind == 1
            xb &= 0x7FFFFFFF
        if xb < 0x00800000:  # subnormal: normalized, with a negative exponent field
            xb = (_f32_bits(float(F32(_f32_from_bits(xb)) * F32(2.0**23))) & 0x7FFFFFFF) - (
                23 << 23)
            xb &= 0xFFFFFFFF
        v = float(fy) * _log2(xb)
        if v > OVERFLOW:
            return F32(-np.inf if negative else np.inf)
        if v <= -150.0:
            return F32(-0.0 if negative else 0.0)
        return _exp2(v, negative)
