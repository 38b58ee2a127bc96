"""Requantize (onnx2mcu's own operator, domain ai.onnx2mcu): y = Q(DQ(x)) between two
8-bit quantizations, which may differ in type (int8 -> uint8 after a Relu in QCDQ
models). ORT computes it as a float DequantizeLinear then QuantizeLinear; a 256-entry
table computed with that same arithmetic does it exactly. The exporter writes it back
as that DequantizeLinear -> QuantizeLinear pair."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from onnx import helper

from codegen.arith.numerics import quantize_like_mlas, table_inputs
from codegen.core.ir import Graph, Node, QuantParams, Tensor
from codegen.core.program import Alias, CArray, CRef, CStruct, KernelCall

from . import Inferred, LoweringOptions, OpDef, register
from ._common import (
    check_dtype,
    check_scales,
    constant_input,
    input_tensor,
    reject_unknown_attrs,
    scalar_constant,
)
from ._export import Writer
from .clamp import clamp_output_table

DOMAIN = "ai.onnx2mcu"
INT8_TYPES = ("uint8", "int8")


@dataclass(frozen=True)
class RequantizeSpec:
    x_scale: float
    x_zero_point: int
    y_scale: float
    y_zero_point: int
    y_dtype: str


def requantize_params(node: Node, graph: Graph) -> tuple[float, int, float, int, str]:
    x_scale = check_scales(node, "x_scale", scalar_constant(node, graph, 1, "x_scale"))
    y_scale = check_scales(node, "y_scale", scalar_constant(node, graph, 3, "y_scale"))
    x_zp = scalar_constant(node, graph, 2, "x_zero_point")
    y_zp = scalar_constant(node, graph, 4, "y_zero_point")
    y_dtype = check_dtype(node, "y_zero_point", y_zp, INT8_TYPES)
    return float(x_scale[0]), int(x_zp[0]), float(y_scale[0]), int(y_zp[0]), y_dtype


def requantize_table(x_scale: float, x_zp: int, x_dtype: str, y_scale: float, y_zp: int,
                     y_dtype: str) -> NDArray[Any]:
    """ORT's DequantizeLinear then QuantizeLinear, for each of the 256 input bytes."""
    return quantize_like_mlas(table_inputs(x_scale, x_zp, x_dtype), y_scale, y_zp, y_dtype)


def infer_requantize(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, set())
    x = input_tensor(node, graph, 0, "x")
    check_dtype(node, "input x", x, INT8_TYPES)
    xs, xz, ys, yz, y_dtype = requantize_params(node, graph)
    check_dtype(node, "x_zero_point", constant_input(node, graph, 2, "x_zero_point"),
                (x.dtype,))
    y = Tensor(node.outputs[0], y_dtype, x.shape, QuantParams((ys,), (yz,)))
    return Inferred([y], {x.name: QuantParams((xs,), (xz,))},
                    RequantizeSpec(xs, xz, ys, yz, y_dtype))


def lower_requantize(node: Node, graph: Graph, spec: RequantizeSpec,
        options: LoweringOptions) -> Sequence[
        KernelCall | Alias]:
    x, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    table = clamp_output_table(requantize_table(spec.x_scale, spec.x_zero_point, x.dtype,
                                                spec.y_scale, spec.y_zero_point, spec.y_dtype),
                               node, graph).view(np.uint8)
    params = CStruct("q8_lut_params", (("size", x.numel), ("table", CRef("table"))))
    # The table maps raw bytes to raw bytes, whatever the two types.
    return [KernelCall("q8_lut_bytes", node.name, (x.name,), (y.name,), params,
                       (CArray("table", "uint8_t", table),), ("lookup.c",), in_place=0)]


def export_requantize(node: Node, w: Writer) -> None:
    """Standard ONNX writes it as the pair ORT computes."""
    x, x_scale, x_zp, y_scale, y_zp = node.inputs
    real = w.fresh(f"{node.outputs[0]}__dequantized")
    w.nodes += [helper.make_node("DequantizeLinear", [x, x_scale, x_zp], [real],
                                 name=f"{node.name}_dequantize"),
                helper.make_node("QuantizeLinear", [real, y_scale, y_zp],
                                 list(node.outputs), name=node.name)]


register(OpDef("Requantize", DOMAIN, infer_requantize, lower_requantize,
               constant_inputs=frozenset({1, 2, 3, 4}), data_dtypes=frozenset(INT8_TYPES),
               absorbs_clamp=True, export=export_requantize))
