"""com.microsoft QLinearSigmoid and QLinearLeakyRelu: 256-entry tables, computed at
generation time with ORT's own float32 arithmetic (MLAS's logistic approximation with
its fused multiply-adds, then MLAS's QuantizeLinear), in IEEE basic operations only, so
the tables are the same on every generating machine (codegen/numerics.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..ir import Graph, Node, QuantParams, Tensor
from ..numerics import leaky_relu_table, sigmoid_table
from ..program import Alias, CArray, CRef, CStruct, KernelCall
from . import Inferred, LoweringOptions, OpDef, register
from ._common import (
    attr_float,
    check_dtype,
    check_scales,
    constant_input,
    input_tensor,
    kernel_suffix,
    reject_unknown_attrs,
    scalar_or_vector,
)
from .clamp import clamp_output_table

SOURCES = ("lookup.c",)
INT8_TYPES = ("uint8", "int8")


def unary_quant(node: Node, graph: Graph, dtype: str) -> tuple[float, int, float, int]:
    """x_scale, x_zero_point, y_scale, y_zero_point (zero points may be omitted: 0)."""
    values: list[float | int] = []
    for scale_index, zp_index, what in ((1, 2, "X"), (3, 4, "Y")):
        scale = scalar_or_vector(node, f"{what}_scale",
                                 constant_input(node, graph, scale_index, f"{what}_scale"), 1,
                                 False)
        check_scales(node, f"{what}_scale", scale)
        zp = 0
        if node.input(zp_index) is not None:
            z = scalar_or_vector(node, f"{what}_zero_point",
                                 constant_input(node, graph, zp_index, f"{what}_zero_point"), 1,
                                 False)
            check_dtype(node, f"{what}_zero_point", z, (dtype,))
            zp = int(z[0])
        values += [float(scale[0]), zp]
    return float(values[0]), int(values[1]), float(values[2]), int(values[3])


def lookup_table(node: Node, graph: Graph, dtype: str) -> NDArray[Any]:
    xs, xz, ys, yz = unary_quant(node, graph, dtype)
    if node.op_type == "QLinearSigmoid":
        return sigmoid_table(xs, xz, ys, yz, dtype)
    alpha = attr_float(node, "alpha", float(np.float32(0.01)))
    return leaky_relu_table(alpha, xs, xz, ys, yz, dtype)


def infer_lookup(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, {"alpha"} if node.op_type == "QLinearLeakyRelu" else set())
    x = input_tensor(node, graph, 0, "X")
    check_dtype(node, "input X", x, INT8_TYPES)
    xs, xz, ys, yz = unary_quant(node, graph, x.dtype)
    y = Tensor(node.outputs[0], x.dtype, x.shape, QuantParams((ys,), (yz,)))
    return Inferred([y], {x.name: QuantParams((xs,), (xz,))})


def lower_lookup(node: Node, graph: Graph, options: LoweringOptions) -> Sequence[
        KernelCall | Alias]:
    x, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    table = clamp_output_table(lookup_table(node, graph, x.dtype), node, graph).view(np.uint8)
    params = CStruct("q8_lut_params", (("size", x.numel), ("table", CRef("table"))))
    return [KernelCall(f"q8_lut_{kernel_suffix(x.dtype)}", node.name, (x.name,), (y.name,),
                       params, (CArray("table", "uint8_t", table),), SOURCES, in_place=0)]


for _op in ("QLinearSigmoid", "QLinearLeakyRelu"):
    register(OpDef(_op, "com.microsoft", infer_lookup, lower_lookup,
                   constant_inputs=frozenset({1, 2, 3, 4}), data_dtypes=frozenset(INT8_TYPES)))
