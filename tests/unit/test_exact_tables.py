"""The tables and constants computed at generation time (codegen/arith/numerics.py) are pinned:
the digests below were captured from the implementation that called the host's libm
(math.exp, math.log) before it was replaced by exactly rounded arithmetic, so the new one
is shown to reproduce the old bytes on this machine, and the generated C no longer
depends on the machine that generates it.

Never regenerate the digests to make a change pass: a different digest means the
generated C changes, which must be proven against ONNX Runtime first."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from codegen.arith import numerics
from codegen.ops.elementwise import qadd_constants, qadd_inner_table

F32 = np.float32

# Every class of scale the tests use: the operator tests' ranges (0.002 to 0.5), the
# decades from 1e-4 to 10, the extreme-input tests' far-apart scales (1e-20, 1e18), the
# float32 limits (smallest subnormal and normal, largest finite).
SOFTMAX_X_SCALES = ("1e-45", "1.1754944e-38", "1e-20", "1e-4", "3e-4", "0.001", "0.0037",
                    "0.01", "0.0173", "0.02", "0.0390625", "0.05", "0.0642", "0.1", "0.125",
                    "0.2", "0.2871", "0.31", "0.4419", "0.5", "1", "2.5", "10", "1e18",
                    "3.4028235e38")
# Row lengths from 1 to far beyond any model: the bias keeping a row's sum finite shrinks
# with the length and is 0 from about 2.3e36 on.
ROW_LENGTHS = (1, 2, 4, 7, 10, 1000, 65536, 10**6, 2**31 - 1, 10**37)

# (x_scale, x_zero_point, y_scale, y_zero_point, dtype) of the byte-to-byte tables: zero
# points at both limits and inside, the scale ranges of the operator and extreme tests.
UNARY_PARAMS = (
    ("0.002", 0, "0.0033333334", 0, "uint8"),
    ("0.0173", 128, "0.00390625", 0, "uint8"),
    ("0.05", 255, "0.01", 255, "uint8"),
    ("0.125", 37, "0.004", 201, "uint8"),
    ("0.2", 0, "0.0033333334", 255, "uint8"),
    ("1e-20", 0, "1e15", 255, "uint8"),
    ("1e18", 255, "1e-18", 0, "uint8"),
    ("0.001", 3, "1e-6", 250, "uint8"),
    ("0.002", -128, "0.0033333334", -128, "int8"),
    ("0.0173", 0, "0.00390625", 0, "int8"),
    ("0.05", 127, "0.01", -128, "int8"),
    ("0.125", -5, "0.004", 60, "int8"),
    ("0.2", -128, "0.0033333334", 127, "int8"),
    ("1e-20", -128, "1e15", 127, "int8"),
    ("1e18", 127, "1e-18", -128, "int8"),
    ("0.001", 100, "1e-6", -100, "int8"),
)
# (A_scale, A_zero_point, B_scale, B_zero_point, C_scale, C_zero_point, dtype) of
# QLinearAdd: ordinary, huge and tiny ratios, zero points at the limits.
QADD_PARAMS = (
    ("0.02", 0, "0.02", 255, "0.4", 0, "uint8"),
    ("0.0173", 128, "0.0642", 3, "0.05", 201, "uint8"),
    ("1e-20", 255, "1e-20", 0, "1e15", 255, "uint8"),
    ("1e18", 0, "1e18", 255, "1e-18", 0, "uint8"),
    ("0.02", -128, "0.02", 127, "0.4", -128, "int8"),
    ("0.0173", 5, "0.0642", -77, "0.05", 12, "int8"),
    ("1e-20", 127, "1e-20", -128, "1e15", 127, "int8"),
    ("1e-3", -128, "1e-3", 127, "1e-6", 127, "int8"),
)
LEAKY_ALPHAS = ("0.01", "0.1", "0.5", "100")
SOFTMAX_Y_SCALES = ("1e-45", "1e-38", "3.7252903e-09", "1e-6", "1e-3", "0.0033333334",
                    "0.00390625", "0.02", "0.5", "1", "1e15", "3.4028235e38")


def digest(tables: Iterator[NDArray[Any]]) -> str:
    """First 16 hex digits of the sha256 of the tables' little-endian bytes."""
    h = hashlib.sha256()
    for table in tables:
        h.update(np.ascontiguousarray(table).astype(table.dtype.newbyteorder("<")).tobytes())
    return h.hexdigest()[:16]


def softmax_tables(x_scale: str) -> Iterator[NDArray[Any]]:
    for length in ROW_LENGTHS:
        for dtype in ("uint8", "int8"):
            yield numerics.softmax_exp_table(float(F32(x_scale)), length, dtype)


def unary_tables(params: tuple[str, int, str, int, str]) -> Iterator[NDArray[Any]]:
    xs, xz, ys, yz, dtype = params
    x_scale, y_scale = float(F32(xs)), float(F32(ys))
    yield numerics.sigmoid_table(x_scale, xz, y_scale, yz, dtype)
    yield numerics.requantize_table(x_scale, xz, y_scale, yz, dtype)
    for alpha in LEAKY_ALPHAS:
        yield numerics.leaky_relu_table(float(F32(alpha)), x_scale, xz, y_scale, yz, dtype)


def qadd_tables(params: tuple[str, int, str, int, str, int, str]) -> Iterator[NDArray[Any]]:
    """QLinearAdd's ratios and fixed part (both operand orders) and the integer kernel's
    inner fused multiply-add tables."""
    sa, za, sb, zb, sc, zc, dtype = params
    scales = float(F32(sa)), float(F32(sb)), float(F32(sc))
    for b_first in (False, True):
        with np.errstate(over="ignore"):
            ra, rb, fixed = qadd_constants(scales[0], za, scales[1], zb, scales[2], zc, b_first)
        yield np.array([ra, rb, fixed], F32)
        if np.isfinite(fixed) and np.isfinite(ra) and np.isfinite(rb):
            yield qadd_inner_table(rb if not b_first else ra, fixed, dtype)


def f32_bits(word: int) -> np.float32:
    return np.array([word & 0xFFFFFFFF], np.uint32).view(F32)[0]


def fma_operands(count: int) -> Iterator[tuple[np.float32, np.float32, np.float32]]:
    """Finite float32 triples from a fixed linear congruential sequence of bit patterns:
    any bits (every exponent, overflow), products in [1, 4) with a sum that nearly
    cancels, and products and addends around the subnormal range."""
    state = 12345
    produced = 0
    while produced < count:
        words = []
        for _ in range(3):
            state = (state * 6364136223846793005 + 1442695040888963407) % 2**64
            words.append(state >> 32)
        mantissas = [w & 0x7FFFFF for w in words]
        kind = produced % 3
        if kind == 0:
            a, b, c = (f32_bits(w) for w in words)
        elif kind == 1:
            a, b = f32_bits(0x3F800000 | mantissas[0]), f32_bits(0x3F800000 | mantissas[1])
            product = np.array([F32(a * b)], F32).view(np.uint32)[0]
            c = f32_bits(0x80000000 | (int(product) ^ (words[2] & 0x3F)))
        else:
            a = f32_bits((words[0] & 0x80000000) | (117 + (words[0] >> 24) % 8) << 23
                         | mantissas[0])
            b = f32_bits((words[1] & 0x80000000) | (1 + (words[1] >> 24) % 8) << 23
                         | mantissas[1])
            c = f32_bits((words[2] & 0x80000000) | mantissas[2] >> (words[2] >> 28))
        if all(np.isfinite(v) for v in (a, b, c)):
            yield a, b, c
            produced += 1


def softmax_multipliers() -> list[float]:
    return [numerics.softmax_output_multiplier(float(F32(s))) for s in SOFTMAX_Y_SCALES]


SOFTMAX_DIGESTS = {
    "1e-45": "a7509cd3925c6221", "1.1754944e-38": "a7509cd3925c6221", "1e-20": "a7509cd3925c6221",
    "1e-4": "5f5b1c06780e1de5", "3e-4": "34d046a291ff3537", "0.001": "9f6d76df034f8808",
    "0.0037": "26410896a4fdc48d", "0.01": "d462cc51fb4c8712", "0.0173": "135bcd8ad41aa5bb",
    "0.02": "ec968836c59c7e8d", "0.0390625": "7b8801fa2c5308c6", "0.05": "d83e2882337c8ea6",
    "0.0642": "1e91c93c7bdaafdc", "0.1": "0cce0cee37310411", "0.125": "f1605c3aa664ab26",
    "0.2": "674235f62d7846a0", "0.2871": "4701391d091f4f22", "0.31": "c807a3ac429c10c1",
    "0.4419": "7dbbcb1a8e293fb2", "0.5": "7f136f653be2be69", "1": "13f66476fc5bb005",
    "2.5": "a093dc6bb6d81811", "10": "bcc1b7c9a192ca56", "1e18": "f52764f904bf5a68",
    "3.4028235e38": "f52764f904bf5a68",
}
UNARY_DIGESTS = {
    0: "1715bd091b7faa1f", 1: "f5cca54597696915", 2: "4d099301c5525844", 3: "dd90b4627cb82d93",
    4: "e6d1b616fc8f6230", 5: "e6d1b616fc8f6230", 6: "3437481977e65656", 7: "6125e7f4f56a8e11",
    8: "035c302a298bf7b0", 9: "3f0ea7c67aac6234", 10: "2ade5b173270b29b", 11: "c665d8e2f82d853a",
    12: "a4894e2592efb303", 13: "a4894e2592efb303", 14: "99d4845307a9ab7b", 15: "3bc504ef43cf384f",
}
QADD_DIGESTS = {
    0: "acf804a6003b771b", 1: "89d8cf042f5b2410", 2: "8c40e08e2b07ce52", 3: "fea6f5497b57b82a",
    4: "171bdc9122800ac8", 5: "f78eea5cd231c7ef", 6: "e94149217a913bd0", 7: "88de1104c09aa35e",
}
FMA_DIGEST = "0c064dc343445fbb"  # 3000 fma32 results
SOFTMAX_MULTIPLIERS = [713623846352979940529142984724747568191373312,
                       1.0000000694406173e+38, 268435456.0, 1000000.0, 999.0, 300.0, 256.0,
                       50.0, 2.0, 1.0, 0.0, 0.0]


@pytest.mark.parametrize("x_scale", SOFTMAX_X_SCALES)
def test_softmax_exp_tables_are_pinned(x_scale: str) -> None:
    assert digest(softmax_tables(x_scale)) == SOFTMAX_DIGESTS[x_scale]


@pytest.mark.parametrize("index", range(len(UNARY_PARAMS)))
def test_sigmoid_leaky_relu_and_requantize_tables_are_pinned(index: int) -> None:
    assert digest(unary_tables(UNARY_PARAMS[index])) == UNARY_DIGESTS[index], \
        UNARY_PARAMS[index]


@pytest.mark.parametrize("index", range(len(QADD_PARAMS)))
def test_qlinear_add_constants_and_tables_are_pinned(index: int) -> None:
    assert digest(qadd_tables(QADD_PARAMS[index])) == QADD_DIGESTS[index], QADD_PARAMS[index]


def test_fused_multiply_adds_are_pinned() -> None:
    results = np.array([numerics.fma32(a, b, c) for a, b, c in fma_operands(3000)], F32)
    assert digest(iter([results])) == FMA_DIGEST


def halfway_operands(count: int) -> Iterator[tuple[np.float32, np.float32, np.float32]]:
    """Products exactly halfway between two float32 values (3M/2 for an odd 23-bit M,
    normal and subnormal), with an addend of zero, one far below them, or one that
    decides the rounding: the one case where fma32's double path defers to the exact one."""
    rng = np.random.default_rng(7)
    for i in range(count):
        if i % 2:
            m = int(rng.integers(2**22, 2**23)) | 1
            shift = int(rng.integers(-140, 100))
            a, b = F32(math.ldexp(m, shift)), F32(1.5)
            low = shift - int(rng.integers(1, 60))
        else:  # k * 2^-150, k odd: halfway between two subnormals
            a, b = F32(math.ldexp(int(rng.integers(1, 2**20)) * 2 + 1, -75)), F32(2.0**-75)
            low = int(rng.integers(-149, -140))
        sign = float(rng.choice([-1.0, 1.0]))
        yield a, b, F32(0.0) if i % 3 == 0 else F32(math.ldexp(sign, low))


def test_fma_double_path_is_the_exact_one() -> None:
    """fma32 rounds in double with an exact error term; fma32_exact in rationals."""
    for a, b, c in [*fma_operands(3000), *halfway_operands(3000)]:
        fast, exact = numerics.fma32(a, b, c), numerics.fma32_exact(a, b, c)
        assert fast.tobytes() == exact.tobytes() or (np.isnan(fast) and np.isnan(exact)), \
            (a, b, c)


def test_softmax_output_multipliers_are_pinned() -> None:
    assert softmax_multipliers() == SOFTMAX_MULTIPLIERS


def test_a_few_entries_literally() -> None:
    """Readable anchors for the digests: entries of one softmax table (in byte order for
    uint8, rotated by 128 for int8) and values of MLAS's logistic."""
    table = numerics.softmax_exp_table(float(F32("0.1")), 10, "uint8")
    assert [float(table[i]).hex() for i in (0, 128, 255)] == [
        "0x1.98fa3e0000000p+80", "0x1.1a8d680000000p+99", "0x1.6143840000000p+117"]
    signed = numerics.softmax_exp_table(float(F32("0.1")), 10, "int8")
    assert [float(signed[i]).hex() for i in (0, 127, 128)] == [
        "0x1.1a8d680000000p+99", "0x1.6143840000000p+117", "0x1.98fa3e0000000p+80"]
    wide = numerics.softmax_exp_table(float(F32("10")), 1, "uint8")
    assert [float(wide[i]).hex() for i in (0, 254, 255)] == [
        "0x0.0p+0", "0x1.4875d00000000p+106", "0x1.b994060000000p+120"]
    logistic = [float(numerics.mlas_logistic(F32(x))).hex()
                for x in ("-18.5", "-3.25", "-0.1", "0", "0.1", "1", "3.25", "17.9")]
    assert logistic == ["0x0.0p+0", "0x1.31c8200000000p-5", "0x1.e66bdc0000000p-2",
                        "0x1.0000000000000p-1", "0x1.0cca120000000p-1", "0x1.764d500000000p-1",
                        "0x1.ece37e0000000p-1", "0x1.0000000000000p+0"]


def test_logistic_constants_round_once_as_c_float_literals() -> None:
    """MLAS writes its coefficients as float literals, rounded once from the decimal;
    numerics parses them to double (CPython's own correctly rounded parser, no libm) and
    then to float32. The two roundings agree for every coefficient."""
    for c in (*numerics.LOGISTIC_P, *numerics.LOGISTIC_Q):
        assert F32(c) == numerics.round_to_f32(Fraction(repr(c))), c



def nearest_double(value: Fraction, candidate: float) -> bool:
    """No double is nearer to value than candidate (ties: either)."""
    error = abs(value - Fraction(candidate))
    return all(error <= abs(value - Fraction(math.nextafter(candidate, toward)))
               for toward in (-math.inf, math.inf))


# Arguments where glibc 2.36's exp is 0.5015 ulp off (the double next to the nearest),
# the arguments of the softmax tables' extremes, and a spread.
EXP_ARGUMENTS = (float.fromhex("0x1.91be6765b50f0p+1"), float.fromhex("0x1.81d8cfb645998p+7"),
                 float.fromhex("-0x1.8b747c9109c1dp+1"), 83.72, -745.2, -745.0, 709.78,
                 -1e-300, 0.0, 1e-17, *(k / 7 - 300.0 for k in range(0, 4000, 37)))
LOG_ARGUMENTS = (5e-324, 1e-300, 0.5, 0.9999999999999999, 1.0000000000000002, 2.0, 148.4,
                 float(F32(numerics.FLT_MAX) / F32(1000)), numerics.FLT_MAX,
                 1.7976931348623157e308, *(1.37 ** k for k in range(-500, 500, 23)))


def test_exp_and_log_are_correctly_rounded() -> None:
    """Against a 120-digit reference (the decimal module's correctly rounded exp and
    ln): the double returned is the nearest."""
    with localcontext() as context:
        context.prec = 120
        for x in EXP_ARGUMENTS:
            r = numerics.exp_f64(x)
            assert r > 0.0 or x < -745.13, x
            assert nearest_double(Fraction(Decimal(x).exp()), r), x.hex()
        for x in LOG_ARGUMENTS:
            r = numerics.log_f64(x)
            assert nearest_double(Fraction(Decimal(x).ln()), r), x.hex()
    assert numerics.exp_f64(-746.5) == 0.0 and numerics.exp_f64(710.5) == math.inf
    assert numerics.log_f64(1.0) == 0.0


def test_no_c_math_function_is_called(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tables are built with no libm or numpy transcendental function at all."""
    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("a C math library function was called")

    for name in ("exp", "expm1", "exp2", "log", "log1p", "log2", "log10", "pow", "tanh",
                 "sinh", "cosh", "erf", "sqrt"):
        monkeypatch.setattr(math, name, forbidden)
    for name in ("exp", "expm1", "exp2", "log", "log1p", "log2", "log10", "power",
                 "float_power", "tanh", "sqrt"):
        monkeypatch.setattr(np, name, forbidden)
    numerics.softmax_exp_table(0.05, 1000, "int8")
    numerics.sigmoid_table(0.05, 3, 0.004, 0, "uint8")
    numerics.leaky_relu_table(0.1, 0.05, 3, 0.01, 0, "uint8")
    numerics.requantize_table(0.05, 3, 0.01, 0, "uint8")
    numerics.softmax_output_multiplier(1e-45)


if __name__ == "__main__":
    # How the digests above were captured (from the libm implementation, once).
    print({s: digest(softmax_tables(s)) for s in SOFTMAX_X_SCALES})
    print({i: digest(unary_tables(p)) for i, p in enumerate(UNARY_PARAMS)})
    print({i: digest(qadd_tables(p)) for i, p in enumerate(QADD_PARAMS)})
    print(digest(iter([np.array([numerics.fma32(*t) for t in fma_operands(3000)], F32)])))
    print(softmax_multipliers())
