"""QuantizeLinear and DequantizeLinear (opsets 10, 13, 19, 21; ORT's com.microsoft
versions, which AMD Quark writes for 16-bit activations, are imported as these), per
tensor and per axis,
between float32 and uint8/int8/uint16/int16 (and int32 -> float32 for dequantized
biases)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from codegen.arith.numerics import dequantize_like_ort
from codegen.core.ir import ONNX_TO_DTYPE, QDQ_RANGE, Graph, Node, Tensor
from codegen.core.program import CArray, ComputedConstant, CRef, CStruct, KernelCall
from codegen.errors import ModelError, UnsupportedError

from . import ELEMENTWISE_ROWS, BandRule, Inferred, LoweringOptions, OpDef, RowAccess, register
from ._common import (
    attr_int,
    check_dtype,
    check_scales,
    constant_input,
    input_tensor,
    kernel_suffix,
    normalize_axis,
    quant_params,
    reject_unknown_attrs,
    scalar_or_vector,
)
from ._export import export_wide_qdq

SOURCES_Q = ("quantize_linear.c",)
SOURCES_DQ = ("dequantize_linear.c",)
QUANTIZED_TYPES = tuple(QDQ_RANGE)


@dataclass(frozen=True)
class QdqSpec:
    """A QuantizeLinear or DequantizeLinear, parsed: its quantization axis (None per
    tensor), its float32 scales and its zero points (flattened)."""

    axis: int | None
    scale: NDArray[Any]
    zero_point: NDArray[Any]


def _axis_and_scale(node: Node, graph: Graph, x: Tensor) -> tuple[int | None, NDArray[Any]]:
    """The quantization axis (None for per tensor) and the flattened float32 scales."""
    scale = check_scales(node, "scale", constant_input(node, graph, 1, "scale"))
    if node.attrs.get("block_size", 0) not in (0, None):
        raise UnsupportedError(f"{node.describe()}: blocked quantization (block_size) "
                               "is not supported")
    if scale.ndim == 0 or scale.size == 1:
        return None, scale.reshape(-1)
    if node.opset < 13:
        raise ModelError(f"{node.describe()}: scale must be a scalar before opset 13")
    if scale.ndim != 1:
        raise UnsupportedError(f"{node.describe()}: scale of shape {list(scale.shape)} "
                               "(blocked quantization) is not supported")
    axis = normalize_axis(node, attr_int(node, "axis", 1), len(x.shape))
    flat = scalar_or_vector(node, "scale", scale, x.shape[axis], allow_vector=True)
    return axis, flat


def _zero_point(node: Node, graph: Graph, default_dtype: str, length: int) -> NDArray[Any]:
    if node.input(2) is None:
        return np.zeros(1, dtype=default_dtype)
    zp = constant_input(node, graph, 2, "zero point")
    flat = scalar_or_vector(node, "zero point", zp, length, allow_vector=True)
    return flat


def _qdq_params(x: Tensor, axis: int | None, scale: NDArray[Any],
                zp: NDArray[Any]) -> tuple[CStruct, tuple[CArray, ...]]:
    if axis is None:
        outer, axis_len, inner = 1, 1, x.numel
    else:
        outer = int(np.prod(x.shape[:axis], dtype=np.int64))
        axis_len = x.shape[axis]
        inner = int(np.prod(x.shape[axis + 1:], dtype=np.int64))
    per_axis = axis is not None
    zps = np.broadcast_to(zp.astype(np.int32), scale.shape)
    arrays = (CArray("scale", "float", scale.astype(np.float32)),
              CArray("zero_point", "int32_t", zps.astype(np.int32)))
    params = CStruct("q8_qdq_params", (
        ("outer", outer), ("axis_len", axis_len), ("inner", inner),
        ("per_axis", int(per_axis)), ("scale", CRef("scale")),
        ("zero_point", CRef("zero_point")),
    ))
    return params, arrays


def _qdq_call(node: Node, graph: Graph, spec: QdqSpec, kernel: str,
              sources: tuple[str, ...]) -> KernelCall:
    """The kernel call of a QuantizeLinear or DequantizeLinear node."""
    x = graph.tensors[node.inputs[0]]
    y = graph.tensors[node.outputs[0]]
    integer = y if x.dtype == "float32" else x
    params, arrays = _qdq_params(x, spec.axis, spec.scale, spec.zero_point)
    return KernelCall(f"{kernel}_{kernel_suffix(integer.dtype)}", node.name, (x.name,), (y.name,),
                      params, arrays, sources)


# ---------------------------------------------------------------- QuantizeLinear


def infer_quantize_linear(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, {"axis", "saturate", "block_size", "output_dtype", "precision"})
    if node.attrs.get("precision", 0) not in (0, 1):
        raise UnsupportedError(f"{node.describe()}: precision {node.attrs['precision']} is not "
                               "supported; supported: float32")
    x = input_tensor(node, graph, 0, "x")
    check_dtype(node, "input x", x, ("float32",))
    axis, scale = _axis_and_scale(node, graph, x)
    out_dtype_attr = node.attrs.get("output_dtype", 0)
    default_dtype = "uint8"
    if out_dtype_attr:
        if out_dtype_attr not in ONNX_TO_DTYPE or \
                ONNX_TO_DTYPE[out_dtype_attr] not in QUANTIZED_TYPES:
            raise UnsupportedError(f"{node.describe()}: output_dtype {out_dtype_attr} is not "
                                   f"supported; supported: {', '.join(QUANTIZED_TYPES)}")
        default_dtype = ONNX_TO_DTYPE[out_dtype_attr]
    zp = _zero_point(node, graph, default_dtype, scale.size)
    y_dtype = check_dtype(node, "y_zero_point", zp, QUANTIZED_TYPES)
    if out_dtype_attr and y_dtype != default_dtype:
        raise ModelError(f"{node.describe()}: output_dtype and y_zero_point disagree")
    q = quant_params(scale, zp, axis)
    y = Tensor(node.outputs[0], y_dtype, x.shape, q)
    return Inferred([y], {x.name: q}, QdqSpec(axis, scale, zp))


def lower_quantize_linear(node: Node, graph: Graph, spec: QdqSpec,
        options: LoweringOptions) -> list[KernelCall]:
    return [_qdq_call(node, graph, spec, "q8_quantize_linear", SOURCES_Q)]


def quantize_row_access(node: Node, graph: Graph) -> dict[int, RowAccess] | None:
    """Reads the float input (--io float: the caller's) a band at a time, so that the
    quantized input is never whole; not with a scale per row (axis 0, 2 or 3)."""
    x, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    scale = graph.constants.get(node.inputs[1])
    per_row_axis = scale is not None and scale.size > 1 and \
        int(node.attrs.get("axis", 1)) % 4 in (0, 2, 3)
    return None if per_row_axis or x.shape != y.shape else {0: ELEMENTWISE_ROWS}


register(OpDef("QuantizeLinear", "", infer_quantize_linear, lower_quantize_linear,
               versions=(10, 13, 19, 21, 23, 24, 25), constant_inputs=frozenset({1, 2}),
               data_dtypes=frozenset({"float32"}),
               bands=BandRule((0,), quantize_row_access, input_dtypes=("float32",)),
               export=export_wide_qdq))


# -------------------------------------------------------------- DequantizeLinear


def infer_dequantize_linear(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, {"axis", "block_size", "output_dtype"})
    x = input_tensor(node, graph, 0, "x")
    x_dtype = check_dtype(node, "input x", x, (*QUANTIZED_TYPES, "int32"))
    axis, scale = _axis_and_scale(node, graph, x)
    zp = _zero_point(node, graph, x_dtype, scale.size)
    if str(zp.dtype) != x_dtype:
        raise ModelError(f"{node.describe()}: x_zero_point has dtype {zp.dtype}, "
                         f"expected {x_dtype}")
    if x_dtype == "int32" and np.any(zp != 0):
        raise ModelError(f"{node.describe()}: an int32 input needs a zero point of 0")
    out_dtype = node.attrs.get("output_dtype", 0)
    if out_dtype not in (0, 1):
        raise UnsupportedError(f"{node.describe()}: output_dtype {out_dtype} is not "
                               "supported; supported: float32")
    q = quant_params(scale, zp, axis)
    y = Tensor(node.outputs[0], "float32", x.shape, q)
    return Inferred([y], {x.name: q}, QdqSpec(axis, scale, zp))


def lower_dequantize_linear(node: Node, graph: Graph, spec: QdqSpec,
        options: LoweringOptions) -> Sequence[
        KernelCall | ComputedConstant]:
    if node.inputs[0] in graph.constants:
        # Weights of a float island: ORT dequantizes them at run time, to the values
        # computed here.
        values = dequantize_like_ort(graph.constants[node.inputs[0]], spec.scale,
                                     spec.zero_point, spec.axis)
        return [ComputedConstant(node.outputs[0], values)]
    return [_qdq_call(node, graph, spec, "q8_dequantize_linear", SOURCES_DQ)]


register(OpDef("DequantizeLinear", "", infer_dequantize_linear, lower_dequantize_linear,
               versions=(10, 13, 19, 21, 23, 24, 25), constant_inputs=frozenset({1, 2}),
               data_dtypes=frozenset({*QUANTIZED_TYPES, "int32"}), export=export_wide_qdq))
