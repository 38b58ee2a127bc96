"""QLinearConv parsed once: its checks, shape inference and the typed spec its lowering
and kernels consume (ConvSpec), and the weights as the int8 kernels read them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from codegen.arith.requant import output_scale
from codegen.core.ir import Graph, Node, QuantParams, Tensor
from codegen.core.program import CArray, CRef, CStruct
from codegen.errors import ModelError, UnsupportedError

from .. import Inferred, LoweringOptions
from .._common import (
    check_dtype,
    check_scales,
    constant_input,
    input_tensor,
    quant_params,
    reject_unknown_attrs,
    requant_params,
    scalar_constant,
    scalar_or_vector,
)
from .._geometry import Window, conv_groups, conv_window, dims_struct, window_struct

# The reference convolution (every group, every weight zero point): runtime_c/qlinear_conv.c.
SOURCES = ("qlinear_conv.c",)
INT8_TYPES = frozenset({"uint8", "int8"})
ATTRS = {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"}


@dataclass(frozen=True)
class ConvQuant:
    x_scale: float
    x_zp: int
    w_scale: NDArray[Any]  # 1 or M float32 values
    w_zp: NDArray[Any]  # 1 or M values, weight dtype
    y_scale: float
    y_zp: int
    y_dtype: str


def conv_quant(node: Node, graph: Graph, x: Tensor, w: NDArray[Any]) -> ConvQuant:
    m = w.shape[0]
    x_scale = check_scales(node, "x_scale", scalar_constant(node, graph, 1, "x_scale"))
    x_zp = scalar_constant(node, graph, 2, "x_zero_point")
    w_scale = check_scales(node, "w_scale", scalar_or_vector(
        node, "w_scale", constant_input(node, graph, 4, "w_scale"), m, True))
    w_zp = scalar_or_vector(node, "w_zero_point", constant_input(node, graph, 5, "w_zero_point"),
                            m, True)
    y_scale = check_scales(node, "y_scale", scalar_constant(node, graph, 6, "y_scale"))
    y_zp = scalar_constant(node, graph, 7, "y_zero_point")
    check_dtype(node, "x_zero_point", x_zp, (x.dtype,))
    check_dtype(node, "w_zero_point", w_zp, (str(w.dtype),))
    y_dtype = check_dtype(node, "y_zero_point", y_zp, ("uint8", "int8"))
    return ConvQuant(float(x_scale[0]), int(x_zp[0]), w_scale, w_zp, float(y_scale[0]),
                     int(y_zp[0]), y_dtype)


@dataclass(frozen=True)
class ConvSpec:
    """A QLinearConv as infer_qlinear_conv parsed and checked it."""

    window: Window
    groups: int
    quant: ConvQuant
    weights: NDArray[Any]  # as the model stores them: int8 or uint8, [M, C/group, ...]
    bias: NDArray[Any] | None  # int32 [M]


def infer_qlinear_conv(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, ATTRS)
    x = input_tensor(node, graph, 0, "x")
    check_dtype(node, "input x", x, ("uint8", "int8"))
    w = constant_input(node, graph, 3, "w (weights)")
    check_dtype(node, "weights w", w, ("uint8", "int8"))
    if len(x.shape) not in (3, 4):
        raise UnsupportedError(f"{node.describe()}: {len(x.shape) - 2}-D convolution is not "
                               "supported; supported: 1-D and 2-D")
    if w.ndim != len(x.shape):
        raise ModelError(f"{node.describe()}: weights of rank {w.ndim} do not match the "
                         f"input of rank {len(x.shape)}")
    window = conv_window(node, x.shape, w.shape)
    groups = conv_groups(node, x.shape, w.shape)
    m = w.shape[0]
    q = conv_quant(node, graph, x, w)
    bias = None
    if node.input(8) is not None:
        bias = constant_input(node, graph, 8, "bias B")
        check_dtype(node, "bias B", bias, ("int32",))
        if bias.shape != (m,):
            raise ModelError(f"{node.describe()}: bias has shape {list(bias.shape)}, "
                             f"expected [{m}]")
    y_shape = (x.shape[0], m, *window.output)
    y = Tensor(node.outputs[0], q.y_dtype, y_shape,
               QuantParams((q.y_scale,), (q.y_zp,)))
    return Inferred([y], {x.name: QuantParams((q.x_scale,), (q.x_zp,)),
                          node.inputs[3]: quant_params(q.w_scale, q.w_zp, 0)},
                    spec=ConvSpec(window, groups, q, w, bias))


def conv_requant(node: Node, quant: ConvQuant, bounds: tuple[int, int],
                 options: LoweringOptions) -> tuple[CStruct, list[CArray]]:
    """The requantization of the output into [act_min, act_max] = bounds."""
    return requant_params(node, output_scale(quant.x_scale, quant.w_scale, quant.y_scale),
                          quant.y_zp, *bounds, options.requant)


def as_int8_weights(w: NDArray[Any], w_zp: NDArray[Any]) -> tuple[NDArray[Any], NDArray[Any]]:
    """Weights as int8 and their zero points as int32 (one value when all are equal).
    uint8 weights and zero points are shifted by -128, which leaves (w - zp) unchanged."""
    zp = w_zp.astype(np.int32).reshape(-1)
    if w.dtype == np.uint8:
        w, zp = (w.astype(np.int16) - 128).astype(np.int8), zp - 128
    return w.astype(np.int8), zp[:1] if np.all(zp == zp[0]) else zp


def conv_params(x: Tensor, y: Tensor, window: Window, groups: int, x_zp: int,
                w_zp: NDArray[Any], has_bias: bool, requant: CStruct) -> CStruct:
    return CStruct("q8_conv_params", (
        ("input", dims_struct(x.shape)), ("output", dims_struct(y.shape)),
        ("window", window_struct(window)), ("groups", groups),
        ("input_zero_point", x_zp),
        ("weights", CRef("weights")), ("weight_zero_point", CRef("weight_zero_point")),
        ("weight_zero_point_per_channel", int(w_zp.size > 1)),
        ("bias", CRef("bias") if has_bias else None),
        ("requant", requant),
    ))


def conv_macs(y: Tensor, w: NDArray[Any]) -> int:
    return y.numel * int(np.prod(w.shape[1:]))
