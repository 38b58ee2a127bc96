"""Where on 8-bit tensors with a constant condition (an attention mask, a masked fill):
com.microsoft QLinearWhere, which ORT's quantizer writes in QOperator models and into
which ORT fuses DQ -> Where -> Q.

ORT's kernel (contrib_ops/cpu/quantization/qlinear_where.cc) takes the X branch where
the condition holds and the Y branch elsewhere, each through a 256-entry table to the
output's quantization (QlinearBuildLookupTable: Q(DQ(v)), MLAS's QuantizeLinear), or
as it is where the branch's scale and zero point are the output's. In QDQ models a
branch that is a rank-0 float constant gets a DequantizeLinear of its own first (ORT's
WhereDummyDq, measured on ORT 1.32): the value is written as the extreme integer of
the type with zero point 127 (uint8) or 0 (int8) and scale value / (q - zero point).

The generated C selects per element between the two tables' outputs; a constant
branch is requantized at generation time. The condition is expanded to the smallest
trailing block of the output that it repeats over."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from codegen.arith.numerics import requantize_table
from codegen.core.ir import Graph, Node, QuantParams, Tensor
from codegen.core.pattern import Quantized, dtype_of, new_constant, per_tensor, qparams
from codegen.core.program import CArray, CRef, CStruct, KernelCall, Lowered
from codegen.errors import ModelError, UnsupportedError

from . import Fusion, Inferred, LoweringOptions, OpDef, register
from ._common import (
    check_dtype,
    constant_input,
    input_tensor,
    per_tensor_quant,
    reject_unknown_attrs,
)
from ._float import refuse

F32 = np.float32
SOURCES = ("where.c",)
INT8_TYPES = ("uint8", "int8")
MS = "com.microsoft"


@dataclass(frozen=True)
class WhereSpec:
    """The variable branches (one or two), each with its requantization table (None:
    a copy); the other branch's output byte where only one varies; and the mask: 1
    where the first variable branch is taken, repeating every `mask.size` elements."""

    inputs: tuple[str, ...]
    tables: tuple[NDArray[Any] | None, ...]
    constant: int | None
    mask: NDArray[Any]


def _table(xs: float, xz: int, zs: float, zz: int, dtype: str) -> NDArray[Any] | None:
    """ORT copies a branch whose scale (as float32) and zero point are the output's."""
    if F32(xs) == F32(zs) and xz == zz:
        return None
    return requantize_table(xs, xz, zs, zz, dtype).view(np.uint8)


def repeating_mask(condition: NDArray[Any], shape: tuple[int, ...]) -> NDArray[Any]:
    """The condition over the output's trailing axes from its first non-1 axis: the
    block the mask repeats over."""
    padded = condition.reshape((1,) * (len(shape) - condition.ndim) + condition.shape)
    first = next((i for i, d in enumerate(padded.shape) if d != 1), len(shape))
    block = np.broadcast_to(padded[(0,) * first], shape[first:])
    return np.ascontiguousarray(block).reshape(-1).astype(np.uint8)


def infer_qlinear_where(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, set())
    if len(node.inputs) != 9 or not all(node.inputs):
        raise ModelError(f"{node.describe()}: QLinearWhere takes 9 inputs (condition, X, "
                         "X_scale, X_zero_point, Y, Y_scale, Y_zero_point, Z_scale, "
                         "Z_zero_point)")
    cond_name = node.inputs[0]
    if cond_name not in graph.constants:
        raise UnsupportedError(f"{node.describe()}: the condition '{cond_name}' is computed at "
                               "run time; only a constant condition (a mask) is supported")
    condition = graph.constants[cond_name]
    if condition.dtype != np.bool_:
        raise ModelError(f"{node.describe()}: the condition is {condition.dtype}; expected bool")
    zz_value = constant_input(node, graph, 8, "Z_zero_point")
    dtype = check_dtype(node, "Z_zero_point", zz_value, INT8_TYPES)
    zs, zz = per_tensor_quant(node, graph, 7, 8, "Z", dtype)
    branches = []
    for data, what in ((1, "X"), (4, "Y")):
        name = node.inputs[data]
        scale, zp = per_tensor_quant(node, graph, data + 1, data + 2, what,
                                     dtype)
        if name in graph.constants:
            value = graph.constants[name]
            check_dtype(node, f"constant {what}", value, (dtype,))
            if value.size != 1:
                raise UnsupportedError(f"{node.describe()}: the constant {what} '{name}' has "
                                       f"{value.size} values; one is supported")
            shape: tuple[int, ...] = ()
        else:
            tensor = graph.tensors[name]
            check_dtype(node, f"input {what}", tensor, (dtype,))
            shape = tensor.shape
        branches.append((name, shape, scale, zp))
    try:
        out_shape = tuple(int(d) for d in np.broadcast_shapes(
            condition.shape, branches[0][1], branches[1][1]))
    except ValueError as error:
        raise ModelError(f"{node.describe()}: the shapes of the condition and branches do "
                         "not broadcast") from error
    variable = [b for b in branches if b[0] not in graph.constants]
    if not variable:
        raise UnsupportedError(f"{node.describe()}: both branches are constants")
    for name, shape, _, _ in variable:
        if shape != out_shape:
            raise UnsupportedError(f"{node.describe()}: branch '{name}' of shape {list(shape)} "
                                   f"is broadcast to {list(out_shape)}; only a branch of the "
                                   "output's shape or a constant is supported")
    mask = repeating_mask(condition, out_shape)
    tables = tuple(_table(scale, zp, zs, zz, dtype) for _, _, scale, zp in variable)
    constant = None
    if len(variable) == 1:
        fixed = next(b for b in branches if b[0] in graph.constants)
        table = _table(fixed[2], fixed[3], zs, zz, dtype)
        byte = int(graph.constants[fixed[0]].reshape(-1).view(np.uint8)[0])
        constant = int(table[byte]) if table is not None else byte
        if variable[0] is branches[1]:  # the variable branch is taken where cond is false
            mask = (1 - mask).astype(np.uint8)
    learned = {name: QuantParams((scale,), (zp,)) for name, _, scale, zp in variable}
    y = Tensor(node.outputs[0], dtype, out_shape, QuantParams((zs,), (zz,)))
    return Inferred([y], learned, WhereSpec(tuple(v[0] for v in variable), tables,
                                            constant, mask))


def lower_qlinear_where(node: Node, graph: Graph, spec: WhereSpec,
                        options: LoweringOptions) -> Sequence[Lowered]:
    y = graph.tensors[node.outputs[0]]
    arrays = [CArray("mask", "uint8_t", spec.mask)]
    fields: list[tuple[str, Any]] = [("size", y.numel), ("period", int(spec.mask.size)),
                                     ("mask", CRef("mask"))]
    for i, table in enumerate(spec.tables):
        name = f"table{i}"
        if table is not None:
            arrays.append(CArray(name, "uint8_t", table))
        fields.append((name, CRef(name) if table is not None else None))
    if spec.constant is not None:
        fields.append(("constant", spec.constant))
        return [KernelCall("q8_where_constant", node.name, spec.inputs, (y.name,),
                           CStruct("q8_where_constant_params", tuple(fields)), tuple(arrays),
                           SOURCES, in_place=0)]
    return [KernelCall("q8_where_select", node.name, spec.inputs, (y.name,),
                       CStruct("q8_where_params", tuple(fields)), tuple(arrays), SOURCES,
                       in_place=0)]


register(OpDef("QLinearWhere", MS, infer_qlinear_where, lower_qlinear_where,
               constant_inputs=frozenset({0, 2, 3, 5, 6, 7, 8})))


# ------------------------------------------------------------------ the QDQ rule


def dummy_dequantize(graph: Graph, node: Node, value: float, like: Quantized) -> list[str]:
    """ORT's WhereDummyDq: a rank-0 float constant as DequantizeLinear's inputs."""
    dtype = dtype_of(graph, like)
    if dtype == "uint8":
        zp, q = 127, (255 if value > 0 else 127 if value == 0 else 0)
    else:
        zp, q = 0, (127 if value > 0 else 0 if value == 0 else -128)
    scale = F32(1) if value == 0 else F32(F32(value) / F32(q - zp))
    np_type = np.uint8 if dtype == "uint8" else np.int8
    return [new_constant(graph, f"{node.name}_dummy_xq", np.array(q, np_type)),
            new_constant(graph, f"{node.name}_dummy_scale", np.array(scale, F32)),
            new_constant(graph, f"{node.name}_dummy_zp", np.array(zp, np_type))]


def build_where(graph: Graph, node: Node, dqs: list[Quantized | None], y: Quantized,
                integer_only: bool) -> list[str] | None:
    branches = dqs[1:3]
    dequantized = [d for d in branches if d is not None]
    if not dequantized or any(not per_tensor(d, graph) for d in dequantized):
        return None
    if any(dtype_of(graph, d) != dtype_of(graph, y) for d in dequantized):
        return None
    inputs = [node.inputs[0]]
    for index, d in zip((1, 2), branches, strict=True):
        if d is not None:
            inputs += [d.q, *qparams(d, graph)]
            continue
        value = graph.constants.get(node.inputs[index])
        other = dequantized[0]
        if value is None or value.ndim != 0 or value.dtype != np.float32 or \
                other.zero_point is None:
            return None
        inputs += dummy_dequantize(graph, node, float(value), other)
    return inputs + qparams(y, graph)


def infer_float_where(node: Node, graph: Graph) -> Inferred:
    """A float Where, as the QDQ model gives it before the fusion."""
    reject_unknown_attrs(node, set())
    shapes = []
    for index, what in ((0, "condition"), (1, "X"), (2, "Y")):
        name = node.input(index)
        if name is None:
            raise ModelError(f"{node.describe()}: input {what} is missing")
        if name in graph.constants:
            shapes.append(tuple(graph.constants[name].shape))
        else:
            shapes.append(input_tensor(node, graph, index, what).shape)
    x_name = node.inputs[1]
    dtype = str(graph.constants[x_name].dtype) if x_name in graph.constants else \
        graph.tensors[x_name].dtype
    try:
        shape = tuple(int(d) for d in np.broadcast_shapes(*shapes))
    except ValueError as error:
        raise ModelError(f"{node.describe()}: the shapes of the condition and branches do "
                         "not broadcast") from error
    return Inferred([Tensor(node.outputs[0], dtype, shape)])


def lower_float_where(node: Node, graph: Graph, spec: object,
                      options: LoweringOptions) -> Sequence[Lowered]:
    raise refuse(node, "onnx2mcu computes Where only between DequantizeLinear and "
                 "QuantizeLinear on 8-bit branches, as ORT's QLinearWhere does (a branch "
                 "may be a rank-0 float constant)")


def _unfused_where(node: Node) -> str:
    return ("a branch is neither dequantized nor a rank-0 float constant (ORT's "
            "WhereDummyDq), or the branches and the output differ in type")


register(OpDef("Where", "", infer_float_where, lower_float_where, versions=(9, 16),
               float_island=True,
               fusion=Fusion("QLinearWhere", MS, build_where, dequantized_inputs=0,
                             unfused_hint=_unfused_where)))
