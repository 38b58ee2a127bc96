"""The exact requantization of the 16-bit integer kernels (codegen/arith/exact_requant.py,
runtime_c/q8_requant_exact.h) written as ONNX operators that ORT runs exactly, so that
`convert --integer-only` can write a 16-bit unit ORT has no kernel for, and `verify
--integer-only` compare the C with ORT on it as for 8 bits.

From an int64 accumulator [..., n] (|acc| <= 2^38: the caller checks its bound) and the
columns' exact multipliers num * 2^shift / den, in int64 arithmetic that never overflows:

- |acc| * num as four base-2^24 limbs (num in two 24-bit halves, |acc| in a 14-bit and a
  24-bit part; every partial product below 2^63);
- G = floor(|acc| * num * 2^(shift + 1) / den): for shift + 1 >= 0 directly (the
  accumulator first clamped below the column's saturation threshold, so that the product
  stays below 2^44); otherwise by long division of the limbs by den, then the limbs that
  the shift drops (chosen per column by constant 0/1 masks) and the bits of the next;
- the sticky bit: a remainder, a dropped limb or bit not zero;
- q = G / 2, plus 1 where G is odd and (sticky or q odd); beyond the threshold, 2^19;
  then the sign, the zero point and the clamp.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from codegen.arith.exact_requant import ExactMultiplier

LIMB = 24
BASE = 1 << LIMB
SATURATED = 1 << 19  # beyond every 16-bit output range plus its zero point
ACC_BOUND = 1 << 38


def saturation_threshold(m: ExactMultiplier) -> int:
    """The least |acc| whose exact value times 2 reaches 2^20 (then q >= 2^19)."""
    # |acc| * num * 2^(shift + 1) >= den * 2^20  <=>  |acc| >= den * 2^(19 - shift) / num
    e = 19 - m.shift
    top = m.den << e if e >= 0 else m.den
    bottom = m.num if e >= 0 else m.num << -e
    return min(-(-top // bottom), ACC_BOUND + 1)


def exact_requantize_nodes(acc: str, out: str, multipliers: Sequence[ExactMultiplier],
                           zero_point: int, lo: int, hi: int,
                           fresh: Callable[[str], str]
                           ) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto]]:
    """Nodes computing `out` (int32) = clamp(rne(acc * M[c]) + zero_point, lo, hi) for the
    int64 tensor `acc` whose last axis holds the columns c (opset 12 or later: int64 Min,
    Clip and GreaterOrEqual); the output range is a 16-bit type's."""
    if not (-2**16 < lo <= hi < 2**16 and abs(zero_point) < 2**16):
        raise ValueError("exact_requantize_nodes writes 16-bit outputs")
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []

    def const(name: str, values: Sequence[int] | int, dtype: type = np.int64) -> str:
        tensor = fresh(name)
        inits.append(numpy_helper.from_array(np.asarray(values, dtype=dtype), tensor))
        return tensor

    def op(kind: str, *inputs: str, **attrs: Any) -> str:
        result = fresh(f"{out}_{kind.lower()}")
        nodes.append(helper.make_node(kind, list(inputs), [result], **attrs))
        return result

    def div(a: str, b: str) -> str:  # both non-negative: truncation is the floor
        return op("Div", a, b)

    def mod(a: str, b: str) -> str:
        return op("Mod", a, b)

    num = [m.num for m in multipliers]
    den = [m.den for m in multipliers]
    e = [m.shift + 1 for m in multipliers]
    base = const("base", BASE)
    zero = const("zero", 0)
    one = const("one", 1)
    two = const("two", 2)

    negative = op("Less", acc, zero)
    magnitude = op("Abs", acc)
    threshold = const("threshold", [saturation_threshold(m) for m in multipliers])
    saturates = op("GreaterOrEqual", magnitude, threshold)
    m_c = op("Min", magnitude, op("Sub", threshold, one))

    # |acc| * num in base-2^24 limbs.
    m1, m0 = div(m_c, base), mod(m_c, base)
    n1 = const("num_high", [v >> LIMB for v in num])
    n0 = const("num_low", [v & (BASE - 1) for v in num])
    t0 = op("Mul", m0, n0)
    t1 = op("Add", op("Mul", m1, n0), op("Mul", m0, n1))
    t2 = op("Mul", m1, n1)
    limb0 = mod(t0, base)
    t1 = op("Add", t1, div(t0, base))
    limb1 = mod(t1, base)
    t2 = op("Add", t2, div(t1, base))
    limb2, limb3 = mod(t2, base), div(t2, base)
    limbs = [limb0, limb1, limb2, limb3]

    den_c = const("den", den)
    # shift + 1 >= 0: the product times 2^e is below 2^44 (the clamp above); the other
    # columns take 0 here, so that nothing overflows in the branch Where drops. Past
    # e = 44 every nonzero accumulator saturates (threshold 1).
    scale_up = const("scale_up", [1 << min(max(v, 0), 44) for v in e])
    up_only = const("up_only", [int(v >= 0) for v in e])
    up = op("Mul", op("Mul", op("Mul", m_c, up_only), const("num", num)), scale_up)
    g_up = div(up, den_c)
    sticky_up = op("Greater", mod(up, den_c), zero)

    # shift + 1 < 0: long division of the limbs by den, then drop d = -(shift + 1) bits.
    rest = zero
    quotient: list[str] = []
    for limb in reversed(limbs):
        current = op("Add", op("Mul", rest, base), limb)
        quotient.append(div(current, den_c))
        rest = mod(current, den_c)
    quotient.reverse()
    drop = [max(-v, 0) for v in e]
    words = [min(d // LIMB, 4) for d in drop]
    bits = [d % LIMB if d // LIMB < 4 else 0 for d in drop]

    def mask(name: str, selected: Sequence[bool]) -> str:
        return const(name, [int(v) for v in selected])

    # The limb at words + k (k = 0, 1): G < 2^20 needs no more.
    kept = []
    for k in (0, 1):
        parts = [op("Mul", quotient[i], mask(f"at{k}_{i}", [i == w + k for w in words]))
                 for i in range(4)]
        total = parts[0]
        for part in parts[1:]:
            total = op("Add", total, part)
        kept.append(total)
    window = op("Add", kept[0], op("Mul", kept[1], base))
    low_bits = const("low_bits", [1 << b for b in bits])
    g_down = div(window, low_bits)
    dropped = op("Greater", mod(window, low_bits), zero)
    below = [op("Mul", op("Cast", op("Greater", quotient[i], zero), to=onnx.TensorProto.INT64),
                mask(f"below{i}", [i < w for w in words])) for i in range(4)]
    lost = below[0]
    for part in below[1:]:
        lost = op("Add", lost, part)
    sticky_down = op("Or", op("Or", op("Greater", rest, zero), dropped),
                     op("Greater", lost, zero))

    upward = const("upward", [v >= 0 for v in e], np.bool_)
    g = op("Where", upward, g_up, g_down)
    as_int = onnx.TensorProto.INT64  # ORT's Where has no bool kernel
    sticky = op("Greater", op("Where", upward, op("Cast", sticky_up, to=as_int),
                              op("Cast", sticky_down, to=as_int)), zero)

    q = div(g, two)
    half = op("Equal", mod(g, two), one)
    odd = op("Equal", mod(q, two), one)
    round_up = op("And", half, op("Or", sticky, odd))
    q = op("Add", q, op("Cast", round_up, to=onnx.TensorProto.INT64))
    q = op("Where", saturates, const("saturated", SATURATED), q)
    q = op("Where", negative, op("Neg", q), q)
    q = op("Add", q, const("zero_point", zero_point))
    q = op("Clip", q, const("lo", lo), const("hi", hi))
    nodes.append(helper.make_node("Cast", [q], [out], to=onnx.TensorProto.INT32))
    return nodes, inits
