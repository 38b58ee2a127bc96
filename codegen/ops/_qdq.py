"""Fusion builders that several families' QDQ rules share (the rule of each operator is
declared by its own module, in its OpDef's `fusion`)."""

from __future__ import annotations

import numpy as np

from codegen.core.ir import Graph, Node
from codegen.core.pattern import (
    Quantized,
    dtype_of,
    new_constant,
    per_tensor,
    qparams,
)

F32 = np.float32


def bias_input(graph: Graph, node: Node, bias: Quantized | None, x: Quantized, w: Quantized,
                integer_only: bool, check_scale: bool) -> str | None:
    """The int32 bias of a fused Conv/Gemm, or None when ORT would not fuse it.
    An int32 DQ bias with zero point 0 adds to the accumulator raw (ORT checks its scale
    against x_scale * w_scale within 1% for Conv, not at all for Gemm); a float 1-D bias
    initializer is quantized with that scale (ORT's WeightBiasQuantization)."""
    name = node.input(2)
    assert name is not None
    expected = (F32(graph.constants[x.scale].reshape(-1)[0]) *
                graph.constants[w.scale].astype(F32).reshape(-1)).astype(F32)
    if bias is None:
        value = graph.constants.get(name)
        if value is None or value.dtype != np.float32 or value.ndim != 1:
            return None
        quantized = np.rint((value / np.broadcast_to(expected, value.shape)).astype(F32))
        return new_constant(graph, f"{name}_quantized", quantized.astype(np.int32))
    if bias.q not in graph.constants or dtype_of(graph, bias) != "int32":
        return None
    b_scale, b_zp = bias.values(graph)
    if b_zp is not None and np.any(b_zp):
        return None
    if check_scale:
        scales = np.broadcast_to(b_scale.astype(F32).reshape(-1), expected.shape)
        tolerance = 1e-6 + 0.01 * np.abs(expected.astype(np.float64))
        if np.any(np.abs(scales.astype(np.float64) - expected) > tolerance):
            if not integer_only:
                return None
            # Integer-only: requantize the bias to the accumulator's scale.
            raw = graph.constants[bias.q].astype(np.float64) * scales / expected
            return new_constant(graph, f"{bias.q}_rescaled",
                                 np.rint(raw).astype(np.int32))
    return bias.q


def build_binary(graph: Graph, node: Node, dqs: list[Quantized | None], y: Quantized,
                 integer_only: bool) -> list[str] | None:
    a, b = dqs[0], dqs[1]
    if a is None or b is None or not per_tensor(a, graph) or not per_tensor(b, graph):
        return None
    return [a.q, *qparams(a, graph), b.q, *qparams(b, graph), *qparams(y, graph)]


def build_unary(graph: Graph, node: Node, dqs: list[Quantized | None], y: Quantized,
                integer_only: bool) -> list[str] | None:
    x = dqs[0]
    if x is None or not per_tensor(x, graph):
        return None
    return [x.q, *qparams(x, graph), *qparams(y, graph)]
