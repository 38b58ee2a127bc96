"""com.microsoft QLinearSoftmax, as ORT computes it: a float32 table of exponentials
(computed in double precision as ORT does with exp(), here correctly rounded, so that the
table does not depend on the generating machine's C library), a float32 sum per row, and
a double-precision scaling by floorf(1 / y_scale). The 'opset' attribute selects the
axis semantics: before 13 the tensor is flattened to 2-D at axis, from 13 each
1-D slice along axis is normalized."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from codegen.arith.numerics import softmax_exp_table, softmax_output_multiplier
from codegen.core.ir import Graph, Node, QuantParams, Tensor
from codegen.core.program import Alias, CArray, CDouble, CRef, CStruct, KernelCall
from codegen.errors import ModelError, UnsupportedError

from . import (
    Fusion,
    Inferred,
    LoweringOptions,
    OpDef,
    operator_version,
    register,
    requant_suffix,
)
from ._common import (
    attr_int,
    check_dtype,
    check_scales,
    constant_input,
    input_tensor,
    kernel_suffix,
    normalize_axis,
    reject_unknown_attrs,
    scalar_constant,
)
from ._float import FLOAT_TYPES, infer_float_unary
from ._qdq import build_unary
from .kernels import kernel

SOURCES = ("softmax.c",)
INT8_TYPES = ("uint8", "int8")


@dataclass(frozen=True)
class SoftmaxSpec:
    """The rows a softmax normalizes, and for QLinearSoftmax its quantization (ORT
    ignores x_zero_point)."""

    outer: int
    length: int
    inner: int
    x_scale: float = 0.0
    y_scale: float = 0.0
    y_zero_point: int = 0


def softmax_layout(node: Node, shape: tuple[int, ...]) -> tuple[int, int, int]:
    """(outer, length, inner) of the rows the kernel normalizes."""
    if "opset" not in node.attrs:
        raise ModelError(f"{node.describe()}: the opset attribute is required")
    axis = normalize_axis(node, attr_int(node, "axis", -1), len(shape))
    if attr_int(node, "opset", 13) < 13:
        return (int(np.prod(shape[:axis], dtype=np.int64)),
                int(np.prod(shape[axis:], dtype=np.int64)), 1)
    return (int(np.prod(shape[:axis], dtype=np.int64)), shape[axis],
            int(np.prod(shape[axis + 1:], dtype=np.int64)))


def softmax_quant(node: Node, graph: Graph, dtype: str) -> tuple[float, float, int]:
    """x_scale, y_scale, y_zero_point; ORT ignores x_zero_point."""
    x_scale = check_scales(node, "X_scale", scalar_constant(node, graph, 1, "X_scale"))
    y_scale = check_scales(node, "y_scale", scalar_constant(node, graph, 3, "y_scale"))
    y_zp = scalar_constant(node, graph, 4, "y_zero_point")
    check_dtype(node, "y_zero_point", y_zp, (dtype,))
    return float(x_scale[0]), float(y_scale[0]), int(y_zp[0])


def infer_softmax(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, {"axis", "opset"})
    x = input_tensor(node, graph, 0, "X")
    check_dtype(node, "input X", x, INT8_TYPES)
    layout = softmax_layout(node, x.shape)
    x_scale, y_scale, y_zp = softmax_quant(node, graph, x.dtype)
    y = Tensor(node.outputs[0], x.dtype, x.shape, QuantParams((y_scale,), (y_zp,)))
    x_zp = 0
    if node.input(2) is not None:
        x_zp = int(constant_input(node, graph, 2, "x_zero_point").reshape(-1)[0])
    return Inferred([y], {x.name: QuantParams((x_scale,), (x_zp,))},
                    SoftmaxSpec(*layout, x_scale, y_scale, y_zp))


def lower_softmax(node: Node, graph: Graph, spec: SoftmaxSpec,
        options: LoweringOptions) -> Sequence[
        KernelCall | Alias]:
    x, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    outer, length, inner = spec.outer, spec.length, spec.inner
    x_scale, y_scale, y_zp = spec.x_scale, spec.y_scale, spec.y_zero_point
    table = softmax_exp_table(x_scale, length, x.dtype)
    multiplier = softmax_output_multiplier(y_scale)
    integer = options.requant == "int"
    if integer and not multiplier < INTEGER_MULTIPLIER_LIMIT:
        raise UnsupportedError(f"{node.describe()}: y_scale {y_scale:g} is too small for the "
                               "integer-only softmax (1/y_scale must stay below 2^29); use "
                               "--requant float")
    params = CStruct("q8_qsoftmax_params", (
        ("outer", outer), ("length", length), ("inner", inner), ("table", CRef("table")),
        ("multiplier", CDouble(multiplier)),
        ("multiplier_int", int(multiplier) if integer else 0), ("y_zero_point", y_zp)))
    function = kernel("qsoftmax").symbol(x=kernel_suffix(x.dtype),
                                         rq=requant_suffix(options.requant))
    return [KernelCall(function, node.name, (x.name,),
                       (y.name,), params, (CArray("table", "float", table),), SOURCES)]


# The integer kernel multiplies a 24-bit significand by the multiplier in 64 bits and
# needs the product exact in double precision, as ORT's is.
INTEGER_MULTIPLIER_LIMIT = 2**29


register(OpDef("QLinearSoftmax", "com.microsoft", infer_softmax, lower_softmax,
               constant_inputs=frozenset({1, 2, 3, 4}), data_dtypes=frozenset(INT8_TYPES)))


def _softmax_attrs(graph: Graph, node: Node) -> dict[str, Any]:
    # QLinearSoftmax's 'opset' attribute is the Softmax version: before 13 the tensor
    # is flattened at axis (default 1), from 13 each slice along axis (default -1).
    version = operator_version(node)
    return {"axis": node.attrs.get("axis", 1 if version < 13 else -1), "opset": version}


def infer_float_softmax(node: Node, graph: Graph) -> Inferred:
    inferred = infer_float_unary(node, graph)
    x = graph.tensors[node.inputs[0]]
    version = operator_version(node)
    axis = normalize_axis(node, attr_int(node, "axis", -1 if version >= 13 else 1),
                          len(x.shape))
    outer = int(np.prod(x.shape[:axis], dtype=np.int64))
    if version < 13:  # flattened to 2-D at axis
        inferred.spec = SoftmaxSpec(outer, int(np.prod(x.shape[axis:], dtype=np.int64)), 1)
    else:  # along axis only (ORT moves it last, which orders each row the same)
        inferred.spec = SoftmaxSpec(outer, x.shape[axis],
                                    int(np.prod(x.shape[axis + 1:], dtype=np.int64)))
    return inferred


def lower_float_softmax(node: Node, graph: Graph, spec: SoftmaxSpec,
        options: LoweringOptions) -> Sequence[
        KernelCall | Alias]:
    x, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    params = CStruct("q8_softmax_f32_params", (("outer", spec.outer), ("length", spec.length),
                                               ("inner", spec.inner)))
    function = "q8_logsoftmax_f32" if node.op_type == "LogSoftmax" else "q8_softmax_f32"
    return [KernelCall(function, node.name, (x.name,), (y.name,), params, (),
                       ("softmax_f32.c", "libm.c"))]


register(OpDef("Softmax", "", infer_float_softmax, lower_float_softmax, versions=(1, 11, 13),
               data_dtypes=FLOAT_TYPES, float_island=True,
               fusion=Fusion("QLinearSoftmax", "com.microsoft", build_unary, _softmax_attrs)))

# LogSoftmax: ORT's Softmax kernel with the logarithm of each row's sum (glibc's logf,
# runtime_c/q8_libm.h). ORT has no integer form, so a QDQ model's stays a float island.
register(OpDef("LogSoftmax", "", infer_float_softmax, lower_float_softmax, versions=(1, 11, 13),
               data_dtypes=FLOAT_TYPES, float_island=True))
