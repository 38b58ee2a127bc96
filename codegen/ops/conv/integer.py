"""ConvInteger: the integer convolution with int32 output (ORT's dynamic quantization
writes it), on the reference convolution kernel (runtime_c/qlinear_conv.c); its x zero
point a constant, or the tensor a DynamicQuantizeLinear computes at run time."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from codegen.core.ir import Graph, Node, Tensor
from codegen.core.program import CArray, KernelCall
from codegen.errors import UnsupportedError

from .. import Inferred, LoweringOptions, OpDef, register
from .._common import (
    check_dtype,
    constant_input,
    input_tensor,
    kernel_suffix,
    no_requant,
    reject_unknown_attrs,
    scalar_constant,
    scalar_or_vector,
)
from .._geometry import Window, conv_groups, conv_window
from ..dynamic_quantize import runtime_zero_point
from ..kernels import kernel
from .spec import ATTRS, INT8_TYPES, as_int8_weights, conv_macs, conv_params

CONV_I32 = kernel("conv_i32")
CONV_I32_DYNAMIC = kernel("conv_i32_dynamic")


@dataclass(frozen=True)
class ConvIntegerSpec:
    window: Window
    groups: int
    x_zp: int
    w_zp: NDArray[Any]  # 1 or M values, weight dtype
    weights: NDArray[Any]  # as the model stores them: int8 or uint8
    # The tensor holding x's zero point when DynamicQuantizeLinear computes it at run time.
    x_zp_tensor: str | None = None


def conv_integer_zero_points(node: Node, graph: Graph, x: Tensor,
                             w: NDArray[Any]) -> tuple[int, NDArray[Any]]:
    """x and w zero points of a ConvInteger (absent means 0). ONNX allows one weight zero
    point per output channel; ORT 1.32 refuses those, so `verify` cannot compare them."""
    x_zp, w_zp = 0, np.zeros(1, dtype=w.dtype)
    if node.input(2) is not None and runtime_zero_point(node, graph, 2, "x_zero_point", x) is None:
        zp = scalar_constant(node, graph, 2, "x_zero_point")
        check_dtype(node, "x_zero_point", zp, (x.dtype,))
        x_zp = int(zp[0])
    if node.input(3) is not None:
        w_zp = scalar_or_vector(node, "w_zero_point",
                                constant_input(node, graph, 3, "w_zero_point"), w.shape[0], True)
        check_dtype(node, "w_zero_point", w_zp, (str(w.dtype),))
    return x_zp, w_zp


def infer_conv_integer(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, ATTRS)
    x = input_tensor(node, graph, 0, "x")
    check_dtype(node, "input x", x, ("uint8", "int8"))
    w = constant_input(node, graph, 1, "w (weights)")
    check_dtype(node, "weights w", w, ("uint8", "int8"))
    if len(x.shape) not in (3, 4) or w.ndim != len(x.shape):
        raise UnsupportedError(f"{node.describe()}: only 1-D and 2-D convolutions with "
                               "matching weight rank are supported")
    window = conv_window(node, x.shape, w.shape)
    groups = conv_groups(node, x.shape, w.shape)
    x_zp, w_zp = conv_integer_zero_points(node, graph, x, w)
    y_shape = (x.shape[0], w.shape[0], *window.output)
    return Inferred([Tensor(node.outputs[0], "int32", y_shape)],
                    spec=ConvIntegerSpec(window, groups, x_zp, w_zp, w,
                                         runtime_zero_point(node, graph, 2, "x_zero_point", x)))


def lower_conv_integer(node: Node, graph: Graph, spec: ConvIntegerSpec,
        options: LoweringOptions) -> list[KernelCall]:
    x = graph.tensors[node.inputs[0]]
    y = graph.tensors[node.outputs[0]]
    w = spec.weights
    weights, w_zp = as_int8_weights(w, spec.w_zp)
    arrays = (CArray("weights", "int8_t", weights.reshape(-1)),
              CArray("weight_zero_point", "int32_t", w_zp))
    params = conv_params(x, y, spec.window, spec.groups, spec.x_zp, w_zp, False, no_requant())
    axes = {"x": kernel_suffix(x.dtype)}
    if spec.x_zp_tensor is not None:
        return [KernelCall(CONV_I32_DYNAMIC.symbol(**axes), node.name,
                           (x.name, spec.x_zp_tensor), (y.name,), params, arrays,
                           (CONV_I32_DYNAMIC.file(**axes), CONV_I32.file(**axes)),
                           conv_macs(y, w))]
    return [KernelCall(CONV_I32.symbol(**axes), node.name, (x.name,),
                       (y.name,), params, arrays, (CONV_I32.file(**axes),), conv_macs(y, w))]


register(OpDef("ConvInteger", "", infer_conv_integer, lower_conv_integer, versions=(10,),
               constant_inputs=frozenset({1, 3}), data_dtypes=INT8_TYPES))
