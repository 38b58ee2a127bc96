"""QLinearConv: 1-D and 2-D, grouped and depthwise, any strides, dilations and pads,
uint8/int8 activations, uint8/int8 weights, per-tensor or per-channel weight scales."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import ModelError, ShapeError, UnsupportedError
from ..ir import Graph, Node, QuantParams, Tensor
from ..program import CArray, CRef, CStruct, KernelCall
from ..requant import float32_mult_exp, output_scale
from . import Inferred, LoweringOptions, OpDef, register
from ._common import (
    attr_int,
    attr_ints,
    attr_str,
    check_dtype,
    check_scales,
    constant_input,
    input_tensor,
    quant_params,
    quant_range,
    reject_unknown_attrs,
    scalar_or_vector,
)

SOURCES = ("qlinear_conv.c",)
ATTRS = {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"}


@dataclass(frozen=True)
class ConvGeometry:
    """Spatial parameters of one convolution, per spatial axis (1 or 2 axes)."""

    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    pads_begin: tuple[int, ...]  # may be negative: ORT's SAME padding with kernel < stride
    output: tuple[int, ...]
    groups: int


def _trunc_div(a: int, b: int) -> int:
    """C/C++ integer division (truncates toward zero), as ORT computes pads."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def conv_geometry(node: Node, x_shape: tuple[int, ...], w_shape: tuple[int, ...]) -> ConvGeometry:
    """Validate the attributes and compute pads and output size the way ORT does."""
    spatial = len(x_shape) - 2
    kernel = tuple(w_shape[2:])
    declared = attr_ints(node, "kernel_shape", None)
    if declared is not None and tuple(declared) != kernel:
        raise ModelError(f"{node.describe()}: kernel_shape {declared} does not match the "
                         f"weight shape {list(w_shape)}")
    strides = tuple(attr_ints(node, "strides", None) or [1] * spatial)
    dilations = tuple(attr_ints(node, "dilations", None) or [1] * spatial)
    pads = tuple(attr_ints(node, "pads", None) or [0] * (2 * spatial))
    groups = attr_int(node, "group", 1)
    auto_pad = attr_str(node, "auto_pad", "NOTSET")
    if len(strides) != spatial or len(dilations) != spatial or len(pads) != 2 * spatial:
        raise ModelError(f"{node.describe()}: strides/dilations/pads do not match the "
                         f"{spatial}-D input")
    if min(strides) < 1 or min(dilations) < 1:
        raise ModelError(f"{node.describe()}: strides and dilations must be >= 1")
    if min(pads) < 0:
        raise ModelError(f"{node.describe()}: pads must be >= 0, got {list(pads)}")
    if min(kernel) < 1:
        raise ModelError(f"{node.describe()}: empty kernel {list(kernel)}")
    if groups < 1:
        raise ModelError(f"{node.describe()}: group must be >= 1, got {groups}")

    begin: list[int] = []
    output: list[int] = []
    for i in range(spatial):
        size, k, s, d = x_shape[2 + i], kernel[i], strides[i], dilations[i]
        dk = d * (k - 1) + 1
        if auto_pad == "NOTSET":
            span = size + pads[i] + pads[spatial + i] - dk
            head = pads[i]
            out = span // s + 1 if span >= 0 else 0
        elif auto_pad == "VALID":
            head = 0
            out = (size - dk) // s + 1 if size >= dk else 0
        elif auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            if d != 1:
                raise UnsupportedError(f"{node.describe()}: auto_pad {auto_pad} with dilations "
                                       "!= 1 is not supported (ONNX Runtime rejects it too)")
            target = (size + s - 1) // s
            needed = (target - 1) * s + k - size
            if needed < 0:
                # kernel < stride: ORT 1.32 places the windows as if one more element of
                # padding were needed (measured on every QLinearConv path, see
                # tests/test_qlinear_conv_padding.py); the ONNX spec leaves this case open.
                needed += 1
            head = _trunc_div(needed + 1, 2) if auto_pad == "SAME_LOWER" else _trunc_div(needed, 2)
            out = target
        else:
            raise ModelError(f"{node.describe()}: unknown auto_pad '{auto_pad}'")
        if out < 1:
            raise ShapeError(f"{node.describe()}: the kernel ({dk} after dilation) is larger "
                             f"than the padded input ({size}) on spatial axis {i}")
        begin.append(head)
        output.append(out)
    return ConvGeometry(kernel, strides, dilations, tuple(begin), tuple(output), groups)


@dataclass(frozen=True)
class ConvQuant:
    x_scale: float
    x_zp: int
    w_scale: NDArray[Any]  # 1 or M float32 values
    w_zp: NDArray[Any]  # 1 or M values, weight dtype
    y_scale: float
    y_zp: int
    y_dtype: str


def _scalar_param(node: Node, graph: Graph, index: int, what: str) -> NDArray[Any]:
    return scalar_or_vector(node, what, constant_input(node, graph, index, what), 1, False)


def conv_quant(node: Node, graph: Graph, x: Tensor, w: NDArray[Any]) -> ConvQuant:
    m = w.shape[0]
    x_scale = check_scales(node, "x_scale", _scalar_param(node, graph, 1, "x_scale"))
    x_zp = _scalar_param(node, graph, 2, "x_zero_point")
    w_scale = check_scales(node, "w_scale", scalar_or_vector(
        node, "w_scale", constant_input(node, graph, 4, "w_scale"), m, True))
    w_zp = scalar_or_vector(node, "w_zero_point", constant_input(node, graph, 5, "w_zero_point"),
                            m, True)
    y_scale = check_scales(node, "y_scale", _scalar_param(node, graph, 6, "y_scale"))
    y_zp = _scalar_param(node, graph, 7, "y_zero_point")
    check_dtype(node, "x_zero_point", x_zp, (x.dtype,))
    check_dtype(node, "w_zero_point", w_zp, (str(w.dtype),))
    y_dtype = check_dtype(node, "y_zero_point", y_zp, ("uint8", "int8"))
    return ConvQuant(float(x_scale[0]), int(x_zp[0]), w_scale, w_zp, float(y_scale[0]),
                     int(y_zp[0]), y_dtype)


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
    geometry = conv_geometry(node, x.shape, w.shape)
    m = w.shape[0]
    if x.shape[1] != w.shape[1] * geometry.groups or m % geometry.groups:
        raise ModelError(f"{node.describe()}: {x.shape[1]} input channels, weights "
                         f"{list(w.shape)} and group {geometry.groups} are inconsistent")
    q = conv_quant(node, graph, x, w)
    if q.y_dtype != x.dtype:
        raise UnsupportedError(f"{node.describe()}: output dtype {q.y_dtype} differs from input "
                               f"dtype {x.dtype}")
    if node.input(8) is not None:
        bias = constant_input(node, graph, 8, "bias B")
        check_dtype(node, "bias B", bias, ("int32",))
        if bias.shape != (m,):
            raise ModelError(f"{node.describe()}: bias has shape {list(bias.shape)}, "
                             f"expected [{m}]")
    y_shape = (x.shape[0], m, *geometry.output)
    y = Tensor(node.outputs[0], q.y_dtype, y_shape,
               QuantParams((q.y_scale,), (q.y_zp,)))
    return Inferred([y], {x.name: QuantParams((q.x_scale,), (q.x_zp,)),
                          node.inputs[3]: quant_params(q.w_scale, q.w_zp, 0)})


def _as_int8_weights(w: NDArray[Any], w_zp: NDArray[Any]) -> tuple[
        NDArray[Any], NDArray[Any]]:
    """uint8 weights and zero points shifted by -128: (w - zp) is unchanged."""
    if w.dtype == np.uint8:
        return ((w.astype(np.int16) - 128).astype(np.int8),
                w_zp.astype(np.int32) - 128)
    return w.astype(np.int8), w_zp.astype(np.int32)


def lower_qlinear_conv(node: Node, graph: Graph, options: LoweringOptions) -> list[KernelCall]:
    x = graph.tensors[node.inputs[0]]
    y = graph.tensors[node.outputs[0]]
    w = constant_input(node, graph, 3, "w")
    geometry = conv_geometry(node, x.shape, w.shape)
    q = conv_quant(node, graph, x, w)
    weights, w_zp = _as_int8_weights(w, q.w_zp)
    if np.all(w_zp == w_zp[0]):
        w_zp = w_zp[:1]
    m = w.shape[0]
    scale = output_scale(q.x_scale, q.w_scale, q.y_scale)
    if scale.size > 1 and np.all(scale == scale[0]):
        scale = scale[:1]
    qmin, qmax = quant_range(y.dtype)

    arrays = [CArray("weights", "int8_t", weights.reshape(-1)),
              CArray("weight_zero_point", "int32_t", w_zp)]
    if options.requant == "int":
        mult, exp = float32_mult_exp(scale)
        arrays += [CArray("mult", "int32_t", mult), CArray("exp", "int32_t", exp)]
        scale_fields: tuple[tuple[str, Any], ...] = (
            ("scale", None), ("mult", CRef("mult")), ("exp", CRef("exp")))
    else:
        arrays.append(CArray("scale", "float", scale))
        scale_fields = (("scale", CRef("scale")), ("mult", None), ("exp", None))
    if node.input(8) is not None:
        arrays.append(CArray("bias", "int32_t", constant_input(node, graph, 8, "B")))
    requant = CStruct("q8_requant_params", (
        *scale_fields,
        ("per_channel", int(scale.size > 1)),
        ("zero_point", q.y_zp), ("act_min", qmin), ("act_max", qmax),
    ))

    one_d = len(x.shape) == 3
    h, w_in = (1, x.shape[2]) if one_d else (x.shape[2], x.shape[3])
    oh, ow = (1, y.shape[2]) if one_d else (y.shape[2], y.shape[3])

    def spatial(values: tuple[int, ...], neutral: int) -> tuple[int, int]:
        return (neutral, values[0]) if one_d else (values[0], values[1])

    kh, kw = spatial(geometry.kernel, 1)
    sh, sw = spatial(geometry.strides, 1)
    dh, dw = spatial(geometry.dilations, 1)
    pt, pl = spatial(geometry.pads_begin, 0)
    params = CStruct("q8_conv_params", (
        ("input", CStruct("q8_dims", (("n", x.shape[0]), ("c", x.shape[1]), ("h", h),
                                      ("w", w_in)))),
        ("output", CStruct("q8_dims", (("n", y.shape[0]), ("c", m), ("h", oh), ("w", ow)))),
        ("kernel_h", kh), ("kernel_w", kw), ("stride_h", sh), ("stride_w", sw),
        ("dilation_h", dh), ("dilation_w", dw), ("pad_top", pt), ("pad_left", pl),
        ("groups", geometry.groups), ("input_zero_point", q.x_zp),
        ("weights", CRef("weights")), ("weight_zero_point", CRef("weight_zero_point")),
        ("weight_zero_point_per_channel", int(w_zp.size > 1)),
        ("bias", CRef("bias") if node.input(8) is not None else None),
        ("requant", requant),
    ))
    act = "u8" if x.dtype == "uint8" else "s8"
    mode = "ireq" if options.requant == "int" else "freq"
    macs = y.numel * (w.shape[1] * kh * kw)
    return [KernelCall(f"q8_conv_{act}_{mode}", node.name, (x.name,), (y.name,), params,
                       tuple(arrays), SOURCES, macs)]


register(OpDef("QLinearConv", "", infer_qlinear_conv, lower_qlinear_conv, since_versions=(10,)))
