"""The exact requantization written as ONNX operators (codegen/ops/_exact_requant_onnx.py)
and run by ONNX Runtime: equal to the rational oracle on random accumulators up to the
2^38 bound, exact ties and their neighbours, both signs, per-column multipliers of every
magnitude (shifts up and down), and saturation."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import onnx
from onnx import helper

from codegen.arith.exact_requant import ExactMultiplier, exact_multiplier
from codegen.ops._exact_requant_onnx import ACC_BOUND, exact_requantize_nodes

F32 = np.float32


def run(multipliers: list[ExactMultiplier], acc: np.ndarray, zp: int, lo: int,
        hi: int) -> np.ndarray:
    import onnxruntime as ort

    taken: set[str] = set()

    def fresh(base: str) -> str:
        name, k = base, 0
        while name in taken:
            k += 1
            name = f"{base}_{k}"
        taken.add(name)
        return name

    nodes, inits = exact_requantize_nodes("acc", "y", multipliers, zp, lo, hi, fresh)
    n = len(multipliers)
    graph = helper.make_graph(
        nodes, "exact", [helper.make_tensor_value_info("acc", onnx.TensorProto.INT64,
                                                       [None, n])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.INT32, [None, n])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    return np.asarray(session.run(None, {"acc": acc})[0])


def oracle(acc: int, m: ExactMultiplier, zp: int, lo: int, hi: int) -> int:
    value = round(Fraction(acc) * m.num * Fraction(2) ** m.shift / m.den)
    return min(max(value + zp, lo), hi)


def test_random_and_tie_accumulators_match_the_rationals() -> None:
    rng = np.random.default_rng(3)
    multipliers = []
    for _ in range(24):
        sx, sw = F32(2.0 ** rng.uniform(-16, -2)), F32(2.0 ** rng.uniform(-12, -1))
        sy = F32(2.0 ** rng.uniform(-8, 6)) if rng.random() < 0.8 else F32(2.0 ** -3)
        multipliers.append(exact_multiplier(float(sx), float(sw), float(sy)))
    multipliers.append(ExactMultiplier(3, 1, -1))  # ties at every odd accumulator
    # Power-of-two scales over small odd y_scale significands: ties every few steps.
    multipliers += [ExactMultiplier(num, den, shift) for num, den, shift in
                    ((1, 3, -5), (1, 5, -9), (1, 1, -7), (7, 3, -3), (1, 12582917, -20),
                     (5, 1, -12))]
    multipliers.append(ExactMultiplier(1, 3, 40))  # a large upward shift
    multipliers.append(ExactMultiplier(2**48 - 1, 2**24 - 1, -100))  # far downward
    multipliers += [ExactMultiplier(1, 1, 100), ExactMultiplier(1, 1, 61)]  # far upward
    # A large odd num over a long division: ties at acc = den * a * 2^v, shift -(v + 1).
    multipliers += [ExactMultiplier(2**47 - 1, 12582917, -11), ExactMultiplier(2**45 + 1, 3, -5)]
    n = len(multipliers)
    rows = []
    for _ in range(300):
        bits = rng.integers(0, 39, n)
        row = np.array([int(rng.integers(0, 2 ** int(b) + 1)) for b in bits], np.int64)
        rows.append(row * rng.choice([-1, 1], n))
    for k in range(-40, 40):  # exact ties of each column, and one unit beside them
        tie = []
        for m in multipliers:
            target = Fraction(2 * k + 1, 2) * m.den / (m.num * Fraction(2) ** m.shift)
            tie.append(int(target) if target.denominator == 1 and abs(target) <= ACC_BOUND
                       else 0)
        for delta in (-1, 0, 1):
            rows.append(np.clip(np.array(tie, np.int64) + delta, -ACC_BOUND, ACC_BOUND))
    rows += [np.full(n, ACC_BOUND, np.int64), np.full(n, -ACC_BOUND, np.int64),
             np.zeros(n, np.int64)]
    acc = np.stack(rows)
    for zp, lo, hi in ((0, -32768, 32767), (31000, 0, 65535)):
        got = run(multipliers, acc, zp, lo, hi)
        want = np.array([[oracle(int(a), m, zp, lo, hi) for a, m in zip(row, multipliers,
                                                                          strict=True)]
                         for row in acc])
        wrong = np.argwhere(got != want)
        assert wrong.size == 0, [(int(acc[r, c]), multipliers[c], int(got[r, c]),
                                  int(want[r, c])) for r, c in wrong[:5]]
