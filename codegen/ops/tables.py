"""com.microsoft QLinearSigmoid and QLinearLeakyRelu: 256-entry tables, computed at
generation time with ORT's own float32 arithmetic (MLAS's logistic approximation with
its fused multiply-adds, then MLAS's QuantizeLinear), in IEEE basic operations only, so
the tables are the same on every generating machine (codegen/arith/numerics.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from onnx import TensorProto, helper

from codegen.arith.numerics import leaky_relu_table, mlas_logistic, mlas_tanh, sigmoid_table
from codegen.core.ir import Graph, Node, QuantParams, Tensor
from codegen.core.program import Alias, CArray, CFloat, CRef, CStruct, KernelCall
from codegen.errors import ModelError, UnsupportedError

from . import Fusion, Inferred, LoweringOptions, OpDef, register
from ._common import (
    attr_float,
    attr_int,
    check_dtype,
    check_scales,
    constant_input,
    input_tensor,
    kernel_suffix,
    normalize_axis,
    per_tensor_quant,
    reject_unknown_attrs,
    scalar_or_vector,
)
from ._export import Writer
from ._float import FLOAT_TYPES, f32, infer_float_unary
from ._qdq import build_unary
from .clamp import clamp_output_table
from .kernels import kernel

SOURCES = ("lookup.c",)
F32 = np.float32
INT8_TYPES = ("uint8", "int8")


def unary_quant(node: Node, graph: Graph, dtype: str) -> tuple[float, int, float, int]:
    """x_scale, x_zero_point, y_scale, y_zero_point (zero points may be omitted: 0)."""
    return (*per_tensor_quant(node, graph, 1, 2, "X", dtype),
            *per_tensor_quant(node, graph, 3, 4, "Y", dtype))


@dataclass(frozen=True)
class LookupSpec:
    """A QLinear* unary operator, parsed: its quantization on both sides and the
    attribute its function takes."""

    op_type: str
    dtype: str
    x_scale: float
    x_zero_point: int
    y_scale: float
    y_zero_point: int
    alpha: float = 0.0


def _sigmoid(spec: LookupSpec) -> NDArray[Any]:
    return sigmoid_table(spec.x_scale, spec.x_zero_point, spec.y_scale, spec.y_zero_point,
                         spec.dtype)


def _leaky_relu(spec: LookupSpec) -> NDArray[Any]:
    return leaky_relu_table(spec.alpha, spec.x_scale, spec.x_zero_point, spec.y_scale,
                            spec.y_zero_point, spec.dtype)


# Each operator's table, computed with ORT's own float32 arithmetic.
TABLES: dict[str, Callable[[LookupSpec], NDArray[Any]]] = {
    "QLinearSigmoid": _sigmoid,
    "QLinearLeakyRelu": _leaky_relu,
}
ATTRIBUTES = {"QLinearSigmoid": set(), "QLinearLeakyRelu": {"alpha"}}


def lookup_table(spec: LookupSpec) -> NDArray[Any]:
    return TABLES[spec.op_type](spec)


def infer_lookup(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, ATTRIBUTES[node.op_type])
    x = input_tensor(node, graph, 0, "X")
    check_dtype(node, "input X", x, INT8_TYPES)
    xs, xz, ys, yz = unary_quant(node, graph, x.dtype)
    alpha = attr_float(node, "alpha", float(np.float32(0.01))) \
        if node.op_type == "QLinearLeakyRelu" else 0.0
    y = Tensor(node.outputs[0], x.dtype, x.shape, QuantParams((ys,), (yz,)))
    return Inferred([y], {x.name: QuantParams((xs,), (xz,))},
                    LookupSpec(node.op_type, x.dtype, xs, xz, ys, yz, alpha))


def lower_lookup(node: Node, graph: Graph, spec: LookupSpec,
                 options: LoweringOptions) -> Sequence[KernelCall | Alias]:
    return [lut_call(node, graph, lookup_table(spec))]


def lut_call(node: Node, graph: Graph, table: NDArray[Any]) -> KernelCall:
    """y = table[x] for every element, with an absorbed Relu/Clip applied to the table."""
    x, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    clamped = clamp_output_table(table, node, graph).view(np.uint8)
    params = CStruct("q8_lut_params", (("size", x.numel), ("table", CRef("table"))))
    # uint8 -> int8 and back (a chain quantized to the other type) looks up bytes.
    suffix = kernel_suffix(x.dtype) if x.dtype == y.dtype else "bytes"
    return KernelCall(kernel("lut_bytes").symbol() if suffix == "bytes"
                      else kernel("lut").symbol(x=suffix), node.name, (x.name,), (y.name,),
                      params, (CArray("table", "uint8_t", clamped),), SOURCES, in_place=0)


for _op in TABLES:
    register(OpDef(_op, "com.microsoft", infer_lookup, lower_lookup,
                   constant_inputs=frozenset({1, 2, 3, 4}), data_dtypes=frozenset(INT8_TYPES),
                   absorbs_clamp=True))


@dataclass(frozen=True)
class ActivationSpec:
    """A float activation kernel's constants (q8_unary_f32_params)."""

    alpha: float
    beta: float


# The float activations with a kernel (runtime_c/activation_f32.c).
FLOAT_ACTIVATIONS = ("Sigmoid", "Tanh", "Exp", "Erf", "Gelu", "Sqrt", "Neg", "Abs",
                     "LeakyRelu", "HardSigmoid", "HardSwish")


def infer_float_activation(node: Node, graph: Graph) -> Inferred:
    inferred = infer_float_unary(node, graph)
    if node.op_type in FLOAT_ACTIVATIONS:
        alpha, beta = {"LeakyRelu": (attr_float(node, "alpha", 0.01), 0.0),
                       "HardSigmoid": (attr_float(node, "alpha", 0.2),
                                       attr_float(node, "beta", 0.5)),
                       "HardSwish": (1.0 / 6.0, 0.5)}.get(node.op_type, (0.0, 0.0))
        inferred.spec = ActivationSpec(alpha, beta)
    return inferred


def lower_float_activation(node: Node, graph: Graph, spec: ActivationSpec,
        options: LoweringOptions) -> Sequence[
        KernelCall | Alias]:
    x, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    params = CStruct("q8_unary_f32_params", (("size", x.numel), ("alpha", CFloat(spec.alpha)),
                                             ("beta", CFloat(spec.beta))))
    function = {"Sigmoid": "q8_sigmoid_f32", "Tanh": "q8_tanh_f32", "Exp": "q8_exp_f32",
                "Erf": "q8_erf_f32", "Gelu": "q8_gelu_f32", "Sqrt": "q8_sqrt_f32",
                "Neg": "q8_neg_f32", "Abs": "q8_abs_f32", "LeakyRelu": "q8_leakyrelu_f32",
                "HardSigmoid": "q8_hardsigmoid_f32", "HardSwish": "q8_hardswish_f32"}[node.op_type]
    return [KernelCall(function, node.name, (x.name,), (y.name,), params, (),
                       ("activation_f32.c", "libm.c"))]


def _sigmoid_values(node: Node, operands: list[NDArray[np.float32]]) -> NDArray[np.float32]:
    return f32([mlas_logistic(v) for v in operands[0].reshape(-1)]).reshape(operands[0].shape)


def _tanh_values(node: Node, operands: list[NDArray[np.float32]]) -> NDArray[np.float32]:
    return f32([mlas_tanh(v) for v in operands[0].reshape(-1)]).reshape(operands[0].shape)


def _leaky_relu_values(node: Node, operands: list[NDArray[np.float32]]) -> NDArray[np.float32]:
    v, alpha = operands[0], F32(attr_float(node, "alpha", 0.01))
    return f32(np.where(v >= F32(0.0), v, f32(alpha * v)))


for _op, _versions, _fusion, _fn in (
        ("Sigmoid", (6, 13), Fusion("QLinearSigmoid", "com.microsoft", build_unary),
         _sigmoid_values),
        ("LeakyRelu", (6, 16), Fusion("QLinearLeakyRelu", "com.microsoft", build_unary),
         _leaky_relu_values),
        ("Tanh", (6, 13), None, _tanh_values)):
    register(OpDef(_op, "", infer_float_activation, lower_float_activation, versions=_versions,
                   data_dtypes=FLOAT_TYPES, float_island=True, fusion=_fusion,
                   elementwise=_fn))


# ------------------------------------------------------------------ Table

# onnx2mcu's own operator (domain ai.onnx2mcu): y = table[x], the 256-entry table of a
# chain of float elementwise operators that a QDQ model writes between one
# DequantizeLinear and one QuantizeLinear (transform/tabulate.py computes it). Inputs: x,
# the table (of y's type, which may differ from x's; indexed by x's byte: int8 by bit
# pattern), and optionally
# y_scale and y_zero_point (the quantization of the values, where it is known).
DOMAIN = "ai.onnx2mcu"


@dataclass(frozen=True)
class TableSpec:
    table: NDArray[Any]  # [256] in byte order, or [channels, 256] for a per-channel table
    axis: int  # x's channel axis of a per-channel table (-1 for one table)


MAX_TABLE_CHANNELS = 1024  # 256 KB of tables: beyond it, not worth the flash


def infer_table(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, {"tabulates", "axis"})
    x = input_tensor(node, graph, 0, "x")
    check_dtype(node, "input x", x, INT8_TYPES)
    table = constant_input(node, graph, 1, "table")
    check_dtype(node, "table", table, INT8_TYPES)  # the output's type, maybe not x's
    axis = -1
    if "axis" in node.attrs:
        axis = normalize_axis(node, attr_int(node, "axis", 0), len(x.shape))
        expected: tuple[int, ...] = (x.shape[axis], 256)
    else:
        expected = (256,)
    if table.shape != expected:
        raise ModelError(f"{node.describe()}: the table has shape {list(table.shape)}; "
                         f"expected {list(expected)}")
    if len(expected) == 2 and expected[0] > MAX_TABLE_CHANNELS:
        raise UnsupportedError(f"{node.describe()}: {expected[0]} per-channel tables; at "
                               f"most {MAX_TABLE_CHANNELS} are supported")
    quant = None
    if node.input(2) is not None:
        scale = check_scales(node, "y_scale", scalar_or_vector(
            node, "y_scale", constant_input(node, graph, 2, "y_scale"), 1, False))
        zp = scalar_or_vector(node, "y_zero_point",
                              constant_input(node, graph, 3, "y_zero_point"), 1, False)
        check_dtype(node, "y_zero_point", zp, (str(table.dtype),))
        quant = QuantParams((float(scale[0]),), (int(zp[0]),))
    y = Tensor(node.outputs[0], str(table.dtype), x.shape, quant)
    return Inferred([y], spec=TableSpec(table, axis))


def lower_table(node: Node, graph: Graph, spec: TableSpec,
                options: LoweringOptions) -> Sequence[KernelCall | Alias]:
    if spec.axis < 0:
        return [lut_call(node, graph, spec.table)]
    x, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    clamped = clamp_output_table(spec.table, node, graph).view(np.uint8).reshape(-1)
    params = CStruct("q8_lut_channels_params", (
        ("outer", int(np.prod(x.shape[:spec.axis], dtype=np.int64))),
        ("channels", x.shape[spec.axis]),
        ("inner", int(np.prod(x.shape[spec.axis + 1:], dtype=np.int64))),
        ("tables", CRef("tables"))))
    suffix = kernel_suffix(x.dtype) if x.dtype == y.dtype else "bytes"
    return [KernelCall(kernel("lut_channels_bytes").symbol() if suffix == "bytes"
                       else kernel("lut_channels").symbol(x=suffix), node.name, (x.name,),
                       (y.name,), params, (CArray("tables", "uint8_t", clamped),), SOURCES,
                       in_place=0)]


def export_table(node: Node, w: Writer) -> None:
    """Standard ONNX that ORT runs: Gather from the table at x cast to int32 (an int8
    value v < 0 indexes from the end, which is the byte of v: the table is in byte
    order either way). A per-channel table is written flat, in value order per channel,
    and indexed at Cast(Cast(x, float) + offset[c], int32) with offset[c] = 256 c (+ 128
    for int8): float sums of integers below 2^24 are exact, and onnx2mcu's importer
    takes float arithmetic where it would refuse integer Add."""
    if "axis" not in node.attrs:
        index = w.fresh(f"{node.outputs[0]}__index")
        w.nodes.append(helper.make_node("Cast", [node.inputs[0]], [index],
                                        name=w.fresh(f"{node.name}_index"),
                                        to=TensorProto.INT32))
        w.nodes.append(helper.make_node("Gather", [node.inputs[1], index], list(node.outputs),
                                        name=node.name, axis=0))
        return
    x = w.graph.tensors[node.inputs[0]]
    table = w.graph.constants[node.inputs[1]]
    axis = int(node.attrs["axis"]) % len(x.shape)
    signed = x.dtype == "int8"
    by_value = np.roll(table, 128, axis=1) if signed else table
    channels = table.shape[0]
    offsets = (np.arange(channels, dtype=np.float32) * 256 + (128 if signed else 0)).reshape(
        (channels,) + (1,) * (len(x.shape) - axis - 1))
    flat = w.constant(f"{node.inputs[1]}__flat", by_value.reshape(-1))
    offset = w.constant(f"{node.inputs[1]}__offsets", offsets)
    value, at, index = (w.fresh(f"{node.outputs[0]}__{part}")
                        for part in ("value", "at", "index"))
    w.nodes += [
        helper.make_node("Cast", [node.inputs[0]], [value], name=w.fresh(f"{node.name}_value"),
                         to=TensorProto.FLOAT),
        helper.make_node("Add", [value, offset], [at], name=w.fresh(f"{node.name}_offset")),
        helper.make_node("Cast", [at], [index], name=w.fresh(f"{node.name}_index"),
                         to=TensorProto.INT32),
        helper.make_node("Gather", [flat, index], list(node.outputs), name=node.name, axis=0)]


register(OpDef("Table", DOMAIN, infer_table, lower_table,
               constant_inputs=frozenset({1, 2, 3}), data_dtypes=frozenset(INT8_TYPES),
               absorbs_clamp=True, export=export_table))
