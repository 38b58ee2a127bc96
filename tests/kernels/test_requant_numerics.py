"""The requantization arithmetic of runtime_c/q8_arith.h, tested directly: the float
path and the integer-only path against ORT's formula (numpy float32), on random and on
adversarial rounding-boundary cases, under ASan and UBSan."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import SANITIZE
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from codegen.arith.requant import (
    float32_mult_exp,
    output_scale,
    requantize_float_reference,
    requantize_int_reference,
)
from codegen.core.resources import runtime_dir

F32 = np.float32


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Path:
    exe = tmp_path_factory.mktemp("requant") / "requant_driver"
    src = Path(__file__).resolve().parents[1] / "c" / "requant_driver.c"
    subprocess.run(["cc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", *SANITIZE,
                    f"-I{runtime_dir()}", "-o", str(exe), str(src)], check=True)
    return exe


def run_driver(driver: Path, acc: NDArray[Any], scale: NDArray[Any],
               lo: NDArray[Any], hi: NDArray[Any]) -> NDArray[Any]:
    mult, exp = float32_mult_exp(scale)
    rec = np.zeros(acc.size, dtype=[("acc", "<i4"), ("scale", "<f4"), ("mult", "<i4"),
                                     ("exp", "<i4"), ("lo", "<i4"), ("hi", "<i4")])
    rec["acc"], rec["scale"], rec["mult"], rec["exp"] = acc, scale, mult, exp
    rec["lo"], rec["hi"] = lo, hi
    out = subprocess.run([str(driver)], input=rec.tobytes(), capture_output=True, check=True)
    return np.frombuffer(out.stdout, dtype="<i4").reshape(-1, 3)


def boundary_cases(rng: np.random.Generator, n: int) -> tuple[NDArray[Any], ...]:
    """Accumulators and scales whose float32 product lands on or next to k + 0.5, with
    |acc| above 2^24 for half of them, where (float)acc itself rounds."""
    big = rng.random(n) < 0.5
    acc = np.where(big, rng.integers(2**24, 2**31 - 1, n), rng.integers(1, 2**24, n))
    acc = acc * np.where(rng.random(n) < 0.5, -1, 1)
    k = rng.integers(-300, 300, n).astype(np.float64)
    scale = ((k + 0.5) / acc.astype(F32).astype(np.float64)).astype(F32)
    scale = np.abs(scale)
    # Exactly on the boundary, or one float32 step to either side of it.
    nudge = rng.integers(-1, 2, n)
    scale = np.where(nudge > 0, np.nextafter(scale, F32(np.inf)), scale)
    scale = np.where(nudge < 0, np.nextafter(scale, F32(0)), scale)
    scale = np.where(scale == 0, F32(1e-30), scale).astype(F32)
    return acc.astype(np.int32), scale.astype(F32)


def margin_cases(rng: np.random.Generator, n: int,
                 acc_bits: int | NDArray[Any] = 24) -> tuple[NDArray[Any], ...]:
    """Accumulators below 2^acc_bits and products within 2^-17 .. 2^-11 of k + 0.5, around
    the 2^-14 margin of q8_requant_int's fast path (and of q8_requant_int_prepared's, for
    accumulators below 2^20), and up to its saturation bound."""
    top = np.left_shift(1, np.asarray(acc_bits, dtype=np.int64))
    acc = rng.integers(1, top, n) * np.where(rng.random(n) < 0.5, -1, 1)
    k = rng.integers(-1030, 1030, n).astype(np.float64)
    offset = 2.0 ** rng.uniform(-17, -11, n) * np.where(rng.random(n) < 0.5, -1, 1)
    scale = np.abs((k + 0.5 + offset) / acc.astype(np.float64)).astype(F32)
    scale = np.where(scale == 0, F32(1e-30), scale).astype(F32)
    return acc.astype(np.int32), scale


def random_cases(rng: np.random.Generator, n: int) -> tuple[NDArray[Any], ...]:
    exps = rng.uniform(-45, 6, n)  # scales from subnormal to 64
    scale = (2.0 ** exps).astype(F32)
    bits = rng.integers(1, 32, n)
    acc = (rng.integers(-(2**31), 2**31 - 1, n) >> (31 - bits)).astype(np.int32)
    return acc, scale


@pytest.mark.parametrize("kind", ["boundary", "margin", "small-margin", "random", "extreme"])
def test_float_and_int_paths_match_ort_formula(driver: Path, kind: str) -> None:
    rng = np.random.default_rng({"boundary": 1, "random": 2, "extreme": 3, "margin": 4,
                                 "small-margin": 5}[kind])
    n = 400_000
    if kind == "boundary":
        acc, scale = boundary_cases(rng, n)
    elif kind == "margin":
        acc, scale = margin_cases(rng, n)
    elif kind == "small-margin":
        acc, scale = margin_cases(rng, n, acc_bits=rng.integers(4, 21, n))
    elif kind == "random":
        acc, scale = random_cases(rng, n)
    else:
        acc = rng.choice(np.array([-(2**31), -(2**31) + 1, -(2**24) - 1, -(2**24), -1, 0, 1,
                                   2**24, 2**24 + 1, 2**24 + 3, 2**31 - 1], dtype=np.int64), n)
        tiny = np.array([1e-45, 1.2e-38, 1e-20, 1e-10, 1.0, 255.0, 3e38], dtype=F32)
        scale = rng.choice(tiny, n).astype(F32)
        acc = acc.astype(np.int32)
    zp = rng.integers(-128, 256, n)
    lo = np.where(zp >= 0, 0, -128) - zp
    hi = np.where(zp >= 0, 255, 127) - zp
    got = run_driver(driver, acc, scale, lo, hi)
    # ORT's formula in numpy float32, with zero point 0 and per-element clamp bounds.
    with np.errstate(over="ignore"):
        v = (acc.astype(F32) * scale).astype(F32)
    want = np.rint(np.minimum(np.maximum(v, lo.astype(F32)), hi.astype(F32))).astype(np.int64)
    assert np.array_equal(got[:, 0], want), np.flatnonzero(got[:, 0] != want)[:10]
    assert np.array_equal(got[:, 1], want), np.flatnonzero(got[:, 1] != want)[:10]
    assert np.array_equal(got[:, 2], want), np.flatnonzero(got[:, 2] != want)[:10]


@settings(max_examples=3000, deadline=None)
@given(acc=st.integers(-(2**31), 2**31 - 1),
       scale=st.floats(min_value=float(F32(1e-45)), max_value=1024.0, width=32,
                        allow_subnormal=True))
def test_python_integer_reference_matches_float32(acc: int, scale: float) -> None:
    s = np.array([scale], dtype=F32)
    mult, exp = float32_mult_exp(s)
    want = requantize_float_reference(np.array([acc]), s, 0, -128, 127)[0]
    assert requantize_int_reference(acc, int(mult[0]), int(exp[0]), -128, 127) == want


def test_output_scale_is_float32_in_ort_order() -> None:
    xs, ws, ys = F32(0.0123), np.array([0.00071, 0.0042], dtype=F32), F32(0.0567)
    got = output_scale(float(xs), ws, float(ys))
    assert got.dtype == F32
    assert np.array_equal(got, np.array([F32(F32(xs * w) / ys) for w in ws], dtype=F32))


def test_mult_exp_decomposition_is_exact() -> None:
    values = np.array([1e-45, 1.17e-38, 0.1, 1.0, 3.4e38, 0.0], dtype=F32)
    mult, exp = float32_mult_exp(values)
    back = np.array([float(m) * 2.0 ** int(e) for m, e in zip(mult, exp, strict=True)])
    assert np.array_equal(back.astype(F32), values)
    assert np.all(np.abs(mult) < 2**24)
