"""The integer-only kernels (--requant int) against their float twins, in C on the host's
FPU: the exact float32 roundings of q8_softfloat.h (and the integer fmaf used where the C
library's rounds twice), QLinearAdd and QLinearMul on every byte pair, QLinearSoftmax on
random tables and rows (tests/c/softfloat_check.c)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import SANITIZE

from codegen.core.resources import runtime_dir


def test_integer_kernels_match_the_float_kernels(tmp_path: Path) -> None:
    exe = tmp_path / "softfloat_check"
    runtime = runtime_dir()
    subprocess.run(["cc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O1",
                    "-DQ8_SOFT_FMA", *SANITIZE, f"-I{runtime}", "-o", str(exe),
                    str(Path(__file__).resolve().parents[1] / "c" / "softfloat_check.c"),
                    str(runtime / "elementwise.c"), str(runtime / "softmax.c"), "-lm"],
                   check=True)
    result = subprocess.run([str(exe)], capture_output=True, text=True, timeout=600)
    counts = dict(line.split() for line in result.stdout.splitlines())
    assert set(counts) == {"round_sum", "fmaf", "add_positive", "round_saturate", "qadd_u8",
                           "qadd_s8", "qmul_u8", "qmul_s8", "qsoftmax_u8", "qsoftmax_s8"}
    assert all(v == "0" for v in counts.values()), result.stdout
    assert result.returncode == 0


@pytest.mark.ort_kernels("glibc-logf", "glibc-fma")
def test_libm_matches_the_c_library(tmp_path: Path) -> None:
    """runtime_c/q8_libm.h against this host's glibc: the integer double FMA that cores
    without one use, logf, powf and expf (with that FMA) on a sweep of 4 million bit
    patterns (tests/c/libm_check.c)."""
    exe = tmp_path / "libm_check"
    subprocess.run(["cc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O1",
                    "-DQ8_SOFT_FMA", *SANITIZE, f"-I{runtime_dir()}", "-o", str(exe),
                    str(Path(__file__).resolve().parents[1] / "c" / "libm_check.c"),
                    str(runtime_dir() / "libm.c"), "-lm"], check=True)
    result = subprocess.run([str(exe)], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    counts = dict(line.split() for line in result.stdout.splitlines())
    assert counts == {"fma": "0", "logf": "0", "powf": "0", "expf": "0"}, result.stdout
