"""The 16-bit x 8-bit integer product and its exact requantization
(runtime_c/fully_connected_s16.c, runtime_c/q8_requant_exact.h) against the exact oracle
of codegen/arith/exact_requant.py: Python rationals, the exact value rounded half to even
as QuantizeLinear rounds. Random products of both signednesses with zero points, biases
and per-channel scales, and requantization cases on and next to every kind of tie, up to
the int64 extremes, under ASan and UBSan (tests/c/fc16_driver.c)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from conftest import SANITIZE, in_qemu
from numpy.typing import NDArray

from codegen.arith.exact_requant import (
    ExactMultiplier,
    exact_multiplier,
    fixed_point,
    requantize_exact_reference,
)
from codegen.core.resources import runtime_dir

F32 = np.float32
SATURATION = 2**30


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Path:
    exe = tmp_path_factory.mktemp("fc16") / "fc16_driver"
    src = Path(__file__).resolve().parents[1] / "c" / "fc16_driver.c"
    subprocess.run(["cc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", *SANITIZE,
                    f"-I{runtime_dir()}", "-o", str(exe), str(src),
                    str(runtime_dir() / "fully_connected_s16.c")], check=True)
    return exe


def run(driver: Path, text: str) -> list[int]:
    out = subprocess.run([str(driver)], input=text, capture_output=True, text=True,
                         check=True)
    return [int(v) for v in out.stdout.split()]


def expected_requant(acc: int, num: int, den: int, shift: int) -> int:
    value = round(Fraction(acc) * num * Fraction(2) ** shift / den)
    return max(-SATURATION, min(SATURATION, value))


def requant_cases(rng: np.random.Generator) -> list[tuple[int, int, int, int]]:
    cases = []
    for _ in range(3000):  # random scales of every magnitude, accumulators up to 2^62
        sx, sw, sy = (F32(2.0 ** rng.uniform(-30, 4)) for _ in range(3))
        m = exact_multiplier(float(sx), float(sw), float(sy))
        bits = int(rng.integers(0, 63))
        acc = int(rng.integers(0, 2**bits, dtype=np.uint64)) * int(rng.choice([-1, 1]))
        cases.append((acc, m.num, m.den, m.shift))
    for _ in range(3000):  # ties: the exact value k + 1/2, and one unit of acc beside it
        den = int(rng.choice([1, 3, 5, 7, 2**23 - 1, 12582917]))
        num = int(rng.integers(1, 2**20)) * 2 + 1
        shift = int(rng.integers(-70, 20))
        # acc * num * 2^shift / den = k + 1/2  <=>  acc = (2k + 1) * den / (num * 2^(shift+1))
        k = int(rng.integers(-3000, 3000))
        target = Fraction(2 * k + 1) * den / (num * Fraction(2) ** (shift + 1))
        if target.denominator != 1:
            num = 1  # make it exact: acc * 2^shift / den = k + 1/2
            target = Fraction(2 * k + 1) * den / Fraction(2) ** (shift + 1)
            if target.denominator != 1:
                continue
        acc = int(target)
        if abs(acc) >= 2**62:
            continue
        for delta in (-1, 0, 1):
            cases.append((acc + delta, num, den, shift))
    for _ in range(2000):  # ties with a large odd num: acc = den * a * 2^v, shift -(v + 1)
        den = int(rng.choice([1, 3, 2**23 - 1, 12582917]))
        num = int(rng.integers(2**40, 2**47)) * 2 + 1
        v = int(rng.integers(0, 30))
        a = int(rng.integers(1, 2**7)) * 2 + 1
        acc = den * a * 2**v * int(rng.choice([-1, 1]))
        for delta in (-1, 0, 1):
            cases.append((acc + delta, num, den, -(v + 1)))
    cases += [(0, 1, 1, 100), (1, 1, 1, 61), (0, 1, 1, 359), (-1, 1, 1, 359),
              (0, 2**48 - 1, 1, -425)]
    cases += [(-(2**63), 2**48 - 1, 1, 0), (2**63 - 1, 2**48 - 1, 1, -200),
              (2**63 - 1, 1, 2**24 - 1, -110), (0, 12345, 3, 40), (1, 1, 1, -1),
              (3, 1, 1, -1), (-1, 1, 1, -1), (-3, 1, 1, -1), (5, 1, 1, 27)]
    return cases


def with_fixed_point(case: tuple[int, int, int, int]) -> tuple[int, int]:
    _, num, den, shift = case
    return fixed_point(Fraction(num) * Fraction(2) ** shift / den)


def test_exact_requantization_matches_the_rationals(driver: Path) -> None:
    """q8_requant_exact (mult 0) and q8_requant_fast (its fixed-point form first, the
    exact path near a tie or beyond 32-bit accumulators) on every case."""
    cases = requant_cases(np.random.default_rng(7))
    fast = [with_fixed_point(case) for case in cases]
    text = f"R {2 * len(cases)}\n" + "".join(f"{a} {n} {d} {s} 0 0\n" for a, n, d, s in cases)
    text += "".join(f"{a} {n} {d} {s} {m} {r}\n"
                    for (a, n, d, s), (m, r) in zip(cases, fast, strict=True))
    got = run(driver, text)
    want = [expected_requant(*case) for case in cases]
    wrong = [(c, g, w) for c, g, w in zip(cases + cases, got, want + want, strict=True)
             if g != w]
    assert not wrong, wrong[:5]
    assert sum(m != 0 for m, _ in fast) > len(cases) // 2


def test_the_fast_path_decides_near_ties_by_the_exact_one(driver: Path) -> None:
    """Accumulators of 32 bits or less next to an exact tie of a fixed-point multiplier:
    the window |acc| / 2 around each boundary sends them to the exact path."""
    rng = np.random.default_rng(17)
    cases = []
    for _ in range(3000):
        den = int(rng.choice([1, 3, 5, 7, 2**23 - 1, 12582917]))
        num = int(rng.integers(1, 2**24)) * 2 + 1
        shift = -int(rng.integers(20, 50))
        k = int(rng.integers(-2**20, 2**20))
        # acc * num * 2^shift / den = k + 1/2 (rounded to an integer acc: ties and near-ties)
        acc = round(Fraction(2 * k + 1) * den / (num * Fraction(2) ** (shift + 1)))
        if abs(acc) >= 2**31 - 2:
            continue
        for delta in (-1, 0, 1):
            cases.append((acc + delta, num, den, shift))
    fast = [with_fixed_point(case) for case in cases]
    text = f"R {len(cases)}\n" + "".join(
        f"{a} {n} {d} {s} {m} {r}\n" for (a, n, d, s), (m, r) in zip(cases, fast, strict=True))
    assert run(driver, text) == [expected_requant(*case) for case in cases]


@dataclass(frozen=True)
class Product:
    signed: bool
    x: NDArray[np.int64]  # [rows, k]
    w: NDArray[np.int64]  # [n, k]
    bias: NDArray[np.int64] | None
    x_zero_point: int
    y_zero_point: int
    multipliers: list[ExactMultiplier]
    want: list[int]  # the oracle's outputs, [rows * n]

    @property
    def range(self) -> tuple[int, int]:
        return (-32768, 32767) if self.signed else (0, 65535)


def product_case(rng: np.random.Generator, signed: bool, rows: int, k: int, n: int,
                 bias: bool) -> Product:
    lo, hi = (-32768, 32767) if signed else (0, 65535)
    x = rng.integers(lo, hi + 1, (rows, k))
    xzp = int(rng.integers(lo, hi + 1)) if rng.random() < 0.7 else 0
    yzp = int(rng.integers(lo // 2, hi // 2 + 1)) if signed else int(rng.integers(0, 65536))
    w = rng.integers(-127, 128, (n, k))
    b = rng.integers(-(2**22), 2**22, n) if bias else None
    sx = F32(2.0 ** rng.uniform(-16, -6))
    sw = (2.0 ** rng.uniform(-10, -4, n)).astype(F32)
    # y_scale near the typical output magnitude, so outputs spread over the range
    sy = F32(float(sx) * float(sw.mean()) * np.sqrt(k) * 128 * rng.uniform(1, 64))
    mults = [exact_multiplier(float(sx), float(s), float(sy)) for s in sw]
    want = []
    for r in range(rows):
        for j in range(n):
            acc = (int(b[j]) if b is not None else 0) + sum(
                (int(x[r, i]) - xzp) * int(w[j, i]) for i in range(k))
            want.append(requantize_exact_reference(acc, float(sx), float(sw[j]), float(sy),
                                                   yzp, lo, hi))
    return Product(signed, x, w, b, xzp, yzp, mults, want)


def driver_text(p: Product) -> str:
    rows, k = p.x.shape
    lo, hi = p.range
    text = (f"F {int(p.signed)} {rows} {k} {p.w.shape[0]} {p.x_zero_point} "
            f"{p.y_zero_point} {lo} {hi} {int(p.bias is not None)}\n")
    text += " ".join(str(v) for v in p.w.reshape(-1)) + "\n"
    if p.bias is not None:
        text += " ".join(str(v) for v in p.bias) + "\n"
    text += "".join(f"{m.num} {m.den} {m.shift} {m.mult} {m.rshift}\n" for m in p.multipliers)
    return text + " ".join(str(v) for v in p.x.reshape(-1)) + "\n"


@pytest.mark.parametrize("signed", [True, False])
def test_products_match_the_exact_oracle(driver: Path, signed: bool) -> None:
    rng = np.random.default_rng(11 + int(signed))
    text, want = "", []
    for _ in range(40):
        rows, k, n = (int(rng.integers(1, 4)), int(rng.integers(1, 300)),
                      int(rng.integers(1, 20)))
        product = product_case(rng, signed, rows, k, n, bool(rng.random() < 0.7))
        text += driver_text(product)
        want += product.want
    got = run(driver, text)
    assert got == want


def c_array(ctype: str, name: str, values: list[int] | NDArray[np.int64]) -> str:
    body = ", ".join(str(int(v)) for v in np.asarray(values).reshape(-1))
    return f"static const {ctype} {name}[] = {{{body}}};\n"


def qemu_main(products: list[Product]) -> str:
    """A firmware main running each product on embedded vectors, writing every output as
    int32 to output.bin (semihosting)."""
    parts = ["#include <stdio.h>\n#include <stdint.h>\n#include \"fully_connected_s16.h\"\n"]
    calls = []
    for i, p in enumerate(products):
        rows, k = p.x.shape
        n = p.w.shape[0]
        kind, ctype = ("s16", "int16_t") if p.signed else ("u16", "uint16_t")
        lo, hi = p.range
        parts.append(c_array("int8_t", f"w{i}", p.w))
        parts.append(c_array(ctype, f"x{i}", p.x))
        if p.bias is not None:
            parts.append(c_array("int32_t", f"b{i}", p.bias))
        mults = ", ".join(f"{{{m.num}u, {m.den}u, {m.shift}, {m.mult}, {m.rshift}}}"
                          for m in p.multipliers)
        parts.append(f"static const q8_exact_multiplier m{i}[] = {{{mults}}};\n")
        parts.append(f"static {ctype} y{i}[{rows * n}];\n")
        bias = f"b{i}" if p.bias is not None else "NULL"
        calls.append(
            f"    {{ const q8_fully_connected_s16_params p = {{{rows}, {k}, {n}, "
            f"{p.x_zero_point}, {p.y_zero_point}, {lo}, {hi}, w{i}, {bias}, m{i}}};\n"
            f"      q8_fully_connected_{kind}(&p, x{i}, y{i});\n"
            f"      for (j = 0; j < {rows * n}; j++) {{ const int32_t v = y{i}[j]; "
            f"fwrite(&v, sizeof v, 1, out); }} }}\n")
    parts.append("int main(void)\n{\n    FILE *out = fopen(\"output.bin\", \"wb\");\n"
                 "    int j;\n    if (out == NULL) {\n        return 1;\n    }\n")
    parts += calls
    parts.append("    return fclose(out) != 0;\n}\n")
    return "".join(parts)


@in_qemu
@pytest.mark.parametrize("board", ["cortex-m4f", "cortex-m0plus"])
def test_products_match_the_exact_oracle_in_qemu(board: str, tmp_path: Path) -> None:
    """The same kernels cross-compiled for the board (no 64-bit multiply instruction on
    the M0+: the compiler's own routines), run in QEMU on embedded vectors."""
    from modelgen import graph_model
    from onnx import helper

    from codegen.core.boards import load_board
    from codegen.options import Options
    from codegen.pipeline import generate_sources
    from codegen.target.firmware import build_firmware
    from codegen.target.qemu import qemu_command

    rng = np.random.default_rng(23)
    products = [product_case(rng, signed, int(rng.integers(1, 3)), int(rng.integers(1, 200)),
                             int(rng.integers(1, 12)), bool(rng.random() < 0.7))
                for signed in (True, False) for _ in range(6)]
    relu = graph_model([helper.make_node("Relu", ["x"], ["y"])], {"x": ("float32", [4])},
                       {"y": "float32"})
    gen = generate_sources(relu, Options(board=board))
    files = dict(gen.files)
    for name in ("fully_connected_s16.c", "fully_connected_s16.h", "q8_requant_exact.h"):
        files[f"runtime/{name}"] = (runtime_dir() / name).read_bytes()
    files[f"{gen.name}_main.c"] = qemu_main(products).encode()
    build = build_firmware(files, gen.name, load_board(board), size=False)
    subprocess.run(qemu_command(load_board(board), build.elf), cwd=tmp_path, check=True,
                   capture_output=True, timeout=300)
    got = np.frombuffer((tmp_path / "output.bin").read_bytes(), "<i4").tolist()
    assert got == [v for p in products for v in p.want]
