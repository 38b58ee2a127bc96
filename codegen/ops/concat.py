"""Concat (any dtype) and com.microsoft QLinearConcat. Each input is one kernel call
that writes its slice of the output: a copy, or for QLinearConcat inputs whose scale or
zero point differ from the output's, a requantization table y = Q(DQ(x)) computed with
ORT's arithmetic. ORT copies exactly when scale and zero point are equal."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from codegen.arith.numerics import requantize_table
from codegen.core.ir import Graph, Node, QuantParams, Tensor, itemsize
from codegen.core.pattern import Quantized, per_tensor, qparams
from codegen.core.program import Alias, CArray, CRef, CStruct, KernelCall
from codegen.errors import ModelError

from . import Fusion, Inferred, LoweringOptions, OpDef, register
from ._common import (
    attr_int,
    check_dtype,
    check_scales,
    input_tensor,
    normalize_axis,
    reject_unknown_attrs,
    scalar_constant,
)

SOURCES = ("concat.c",)


@dataclass(frozen=True)
class ConcatSpec:
    axis: int
    inputs: tuple[str, ...]  # the data inputs
    # QLinearConcat: each input's (scale, zero point), and the output's; Concat: None.
    input_quant: tuple[tuple[float, int], ...] | None
    output_quant: tuple[float, int] | None


def concat_shape(node: Node, shapes: list[tuple[int, ...]], axis: int) -> tuple[int, ...]:
    first = shapes[0]
    for shape in shapes[1:]:
        if len(shape) != len(first) or any(
                s != f for d, (s, f) in enumerate(zip(shape, first, strict=True)) if d != axis):
            raise ModelError(f"{node.describe()}: input shapes {[list(s) for s in shapes]} "
                             f"differ outside axis {axis}")
    return (*first[:axis], sum(s[axis] for s in shapes), *first[axis + 1:])


def data_inputs(node: Node) -> list[str]:
    if node.op_type == "QLinearConcat":
        if (len(node.inputs) - 2) % 3 or len(node.inputs) < 5:
            raise ModelError(f"{node.describe()}: expected Y_scale, Y_zero_point, then "
                             "(X, X_scale, X_zero_point) triples")
        return list(node.inputs[2::3])
    return list(node.inputs)


def input_quant(node: Node, graph: Graph, index: int) -> tuple[float, int]:
    """(scale, zero point) of the QLinearConcat operand at input `index` (-1: Y)."""
    scale_at, zp_at = (0, 1) if index < 0 else (2 + 3 * index + 1, 2 + 3 * index + 2)
    scale = check_scales(node, "scale", scalar_constant(node, graph, scale_at, "scale"))
    return float(scale[0]), int(scalar_constant(node, graph, zp_at, "zero point")[0])


def infer_concat(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, {"axis"})
    names = data_inputs(node)
    if not names:
        raise ModelError(f"{node.describe()}: no inputs")
    tensors = [input_tensor(node, graph, node.inputs.index(n), "input") for n in names]
    if "axis" not in node.attrs:
        raise ModelError(f"{node.describe()}: the axis attribute is required")
    axis = normalize_axis(node, attr_int(node, "axis", 0), len(tensors[0].shape))
    shape = concat_shape(node, [t.shape for t in tensors], axis)
    dtype = tensors[0].dtype
    for t in tensors:
        check_dtype(node, f"input '{t.name}'", t, (dtype,))
    quant = None
    annotations: dict[str, QuantParams] = {}
    spec = ConcatSpec(axis, tuple(names), None, None)
    if node.op_type == "QLinearConcat":
        check_dtype(node, "inputs", tensors[0], ("uint8", "int8"))
        zp = scalar_constant(node, graph, 1, "Y_zero_point")
        check_dtype(node, "Y_zero_point", zp, (dtype,))
        ys, yz = input_quant(node, graph, -1)
        quant = QuantParams((ys,), (yz,))
        quants = []
        for i, t in enumerate(tensors):
            s, z = input_quant(node, graph, i)
            annotations[t.name] = QuantParams((s,), (z,))
            quants.append((s, z))
        spec = ConcatSpec(axis, tuple(names), tuple(quants), (ys, yz))
    elif len({t.quant for t in tensors}) == 1:
        quant = tensors[0].quant
    return Inferred([Tensor(node.outputs[0], dtype, shape, quant)], annotations, spec)


def lower_concat(node: Node, graph: Graph, spec: ConcatSpec,
        options: LoweringOptions) -> Sequence[
        KernelCall | Alias]:
    y = graph.tensors[node.outputs[0]]
    axis = spec.axis
    size = itemsize(y.dtype)
    outer = int(np.prod(y.shape[:axis], dtype=np.int64))
    inner = int(np.prod(y.shape[axis + 1:], dtype=np.int64)) * size
    calls = []
    offset = 0
    for i, name in enumerate(spec.inputs):
        x = graph.tensors[name]
        table = None
        if spec.input_quant is not None and spec.output_quant is not None:
            (xs, xz), (ys, yz) = spec.input_quant[i], spec.output_quant
            if np.float32(xs) != np.float32(ys) or xz != yz:
                table = requantize_table(xs, xz, ys, yz, y.dtype).view(np.uint8)
        params = CStruct("q8_concat_params", (
            ("outer", outer), ("block", x.shape[axis] * inner),
            ("out_stride", y.shape[axis] * inner), ("out_offset", offset * inner),
            ("table", CRef("table") if table is not None else None)))
        arrays = (CArray("table", "uint8_t", table),) if table is not None else ()
        calls.append(KernelCall("q8_concat_slice", node.name, (x.name,), (y.name,), params,
                                arrays, SOURCES))
        offset += x.shape[axis]
    return calls


# Y_scale, Y_zero_point, then each (X, X_scale, X_zero_point): scales and zero points.
QLINEAR_CONCAT_CONSTANTS = frozenset({0, 1} | {i for i in range(3, 3 * 256) if (i - 2) % 3})
register(OpDef("QLinearConcat", "com.microsoft", infer_concat, lower_concat,
               constant_inputs=QLINEAR_CONCAT_CONSTANTS))


def build_concat(graph: Graph, node: Node, dqs: list[Quantized | None], y: Quantized,
                 integer_only: bool) -> list[str] | None:
    if any(d is None or not per_tensor(d, graph) for d in dqs):
        return None
    inputs = qparams(y, graph)
    for d in dqs:
        assert d is not None
        inputs += [d.q, *qparams(d, graph)]
    return inputs


register(OpDef("Concat", "", infer_concat, lower_concat, versions=(4, 11, 13, 23, 24, 25),
               fusion=Fusion("QLinearConcat", "com.microsoft", build_concat,
                             dequantized_inputs=None)))
