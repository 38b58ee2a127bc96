"""The integer-only kernels (--requant int) against their float twins, in C on the host's
FPU: the exact float32 roundings of q8_softfloat.h (and the integer fmaf used where the C
library's rounds twice), QLinearAdd and QLinearMul on every byte pair, QLinearSoftmax on
random tables and rows (tests/c/softfloat_check.c)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from conftest import SANITIZE

from codegen.resources import runtime_dir


def test_integer_kernels_match_the_float_kernels(tmp_path: Path) -> None:
    exe = tmp_path / "softfloat_check"
    runtime = runtime_dir()
    subprocess.run(["cc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O1",
                    "-DQ8_SOFT_FMA", *SANITIZE, f"-I{runtime}", "-o", str(exe),
                    str(Path(__file__).parent / "c" / "softfloat_check.c"),
                    str(runtime / "elementwise.c"), str(runtime / "softmax.c"), "-lm"],
                   check=True)
    result = subprocess.run([str(exe)], capture_output=True, text=True, timeout=600)
    counts = dict(line.split() for line in result.stdout.splitlines())
    assert set(counts) == {"round_sum", "fmaf", "add_positive", "round_saturate", "qadd_u8",
                           "qadd_s8", "qmul_u8", "qmul_s8", "qsoftmax_u8", "qsoftmax_s8"}
    assert all(v == "0" for v in counts.values()), result.stdout
    assert result.returncode == 0
