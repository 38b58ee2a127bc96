"""com.microsoft QLinearGlobalAveragePool and QLinearAveragePool.

The global pool sums integers and requantizes like QLinearConv. The windowed pool is
ORT's float32 path; when its window covers the whole input with no padding, ORT takes
the global path instead, and so does this module."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import ModelError, UnsupportedError
from ..ir import Graph, Node, QuantParams, Tensor
from ..program import Alias, CFloat, CStruct, KernelCall
from . import Inferred, LoweringOptions, OpDef, register
from ._common import (
    attr_int,
    check_dtype,
    check_scales,
    constant_input,
    input_tensor,
    kernel_suffix,
    reject_unknown_attrs,
    requant_params,
    scalar_or_vector,
)
from ._geometry import Window, ceil_mode, dims_struct, pool_kernel, sliding_window, window_struct
from .clamp import output_range

SOURCES = ("average_pool.c",)
INT8_TYPES = ("uint8", "int8")
MAX_GLOBAL_SIZE = 2**23  # keeps 255 * size inside int32 (ORT itself stops at 2^24)


def _scalar(node: Node, graph: Graph, index: int, what: str) -> NDArray[Any]:
    return scalar_or_vector(node, what, constant_input(node, graph, index, what), 1, False)


def pool_quant(node: Node, graph: Graph, x: Tensor) -> tuple[float, int, float, int]:
    """x_scale, x_zero_point, y_scale, y_zero_point (y_zero_point may be omitted: 0)."""
    x_scale = check_scales(node, "x_scale", _scalar(node, graph, 1, "x_scale"))
    x_zp = _scalar(node, graph, 2, "x_zero_point")
    check_dtype(node, "x_zero_point", x_zp, (x.dtype,))
    y_scale = check_scales(node, "y_scale", _scalar(node, graph, 3, "y_scale"))
    y_zp = 0
    if node.input(4) is not None:
        zp = _scalar(node, graph, 4, "y_zero_point")
        check_dtype(node, "y_zero_point", zp, (x.dtype,))
        y_zp = int(zp[0])
    return float(x_scale[0]), int(x_zp[0]), float(y_scale[0]), y_zp


def global_scale(node: Node, x_scale: float, y_scale: float, size: int) -> np.float32:
    """ORT: s = f32(x_scale / f32(y_scale * (float)size)), refused outside [2^-32, 256)."""
    if size >= MAX_GLOBAL_SIZE:
        raise UnsupportedError(f"{node.describe()}: averaging {size} elements is not "
                               f"supported (limit {MAX_GLOBAL_SIZE})")
    s = np.float32(np.float32(x_scale) / np.float32(np.float32(y_scale) * np.float32(size)))
    if not np.float32(2.0**-32) <= s < np.float32(256.0):
        raise UnsupportedError(f"{node.describe()}: x_scale / (y_scale * {size}) = {s} is out "
                               "of ORT's computation range [2^-32, 256)")
    return s


def global_call(node: Node, graph: Graph, x: Tensor, y: Tensor, channels_last: bool,
                quant: tuple[float, int, float, int], requant_mode: str) -> KernelCall:
    x_scale, x_zp, y_scale, y_zp = quant
    spatial = x.shape[1:-1] if channels_last else x.shape[2:]
    size = int(np.prod(spatial, dtype=np.int64))
    channels = x.shape[-1] if channels_last else 1
    outer = x.shape[0] if channels_last else x.shape[0] * x.shape[1]
    qmin, qmax = output_range(node, graph, x.dtype)
    scale = global_scale(node, x_scale, y_scale, size)
    requant, arrays = requant_params(node, np.array([scale]), y_zp, qmin, qmax, requant_mode)
    params = CStruct("q8_global_pool_params", (
        ("outer", outer), ("channels", channels), ("size", size),
        ("input_zero_point", x_zp), ("requant", requant)))
    mode = "ireq" if requant_mode == "int" else "freq"
    return KernelCall(f"q8_global_avgpool_{kernel_suffix(x.dtype)}_{mode}", node.name,
                      (x.name,), (y.name,), params, tuple(arrays), SOURCES, x.numel)


# --------------------------------------------------------- QLinearGlobalAveragePool


def _channels_last(node: Node) -> bool:
    value = attr_int(node, "channels_last", 0)
    if value not in (0, 1):
        raise ModelError(f"{node.describe()}: channels_last must be 0 or 1")
    return bool(value)


def infer_global(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, {"channels_last"})
    x = input_tensor(node, graph, 0, "X")
    check_dtype(node, "input X", x, INT8_TYPES)
    if len(x.shape) < 3:
        raise ModelError(f"{node.describe()}: input of rank {len(x.shape)}; expected >= 3")
    quant = pool_quant(node, graph, x)
    last = _channels_last(node)
    spatial = x.shape[1:-1] if last else x.shape[2:]
    global_scale(node, quant[0], quant[2], int(np.prod(spatial, dtype=np.int64)))
    ones = (1,) * (len(x.shape) - 2)
    shape = (x.shape[0], *ones, x.shape[-1]) if last else (*x.shape[:2], *ones)
    y = Tensor(node.outputs[0], x.dtype, shape, QuantParams((quant[2],), (quant[3],)))
    return Inferred([y], {x.name: QuantParams((quant[0],), (quant[1],))})


def lower_global(node: Node, graph: Graph, options: LoweringOptions) -> Sequence[
        KernelCall | Alias]:
    x, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    return [global_call(node, graph, x, y, _channels_last(node), pool_quant(node, graph, x),
                        options.requant)]


register(OpDef("QLinearGlobalAveragePool", "com.microsoft", infer_global, lower_global,
               constant_inputs=frozenset({1, 2, 3, 4}), data_dtypes=frozenset(INT8_TYPES)))


# --------------------------------------------------------------- QLinearAveragePool

POOL_ATTRS = {"auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads", "strides",
              "channels_last"}


def average_window(node: Node, x: Tensor) -> Window:
    if _channels_last(node):
        raise UnsupportedError(f"{node.describe()}: channels_last=1 is not supported")
    if "dilations" in node.attrs:
        raise UnsupportedError(f"{node.describe()}: dilations are not supported (ONNX Runtime "
                               "rejects them too)")
    kernel = pool_kernel(node, x.shape)
    window = sliding_window(node, x.shape, kernel, ceil_mode(node))
    if any(p >= k for p, k in zip(window.pads_begin + window.pads_end, kernel + kernel,
                                  strict=True)):
        raise UnsupportedError(f"{node.describe()}: pads must be smaller than the kernel "
                               "(ONNX Runtime rejects larger ones)")
    return window


def is_global(x: Tensor, window: Window) -> bool:
    """ORT's shortcut: a window over the whole unpadded input is a global pool."""
    return window.kernel == tuple(x.shape[2:]) and not any(window.pads_begin + window.pads_end)


def infer_average(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, POOL_ATTRS)
    x = input_tensor(node, graph, 0, "X")
    check_dtype(node, "input X", x, INT8_TYPES)
    window = average_window(node, x)
    quant = pool_quant(node, graph, x)
    if is_global(x, window):
        global_scale(node, quant[0], quant[2], int(np.prod(window.kernel)))
    y = Tensor(node.outputs[0], x.dtype, (*x.shape[:2], *window.output),
               QuantParams((quant[2],), (quant[3],)))
    return Inferred([y], {x.name: QuantParams((quant[0],), (quant[1],))})


def lower_average(node: Node, graph: Graph, options: LoweringOptions) -> Sequence[
        KernelCall | Alias]:
    x, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    window = average_window(node, x)
    quant = pool_quant(node, graph, x)
    if is_global(x, window):
        return [global_call(node, graph, x, y, False, quant, options.requant)]
    x_scale, x_zp, y_scale, y_zp = quant
    params = CStruct("q8_avgpool_params", (
        ("input", dims_struct(x.shape)), ("output", dims_struct(y.shape)),
        ("window", window_struct(window)),
        ("count_include_pad", attr_int(node, "count_include_pad", 0)),
        ("x_scale", CFloat(x_scale)), ("x_zero_point", x_zp),
        ("y_scale", CFloat(y_scale)), ("y_zero_point", y_zp)))
    return [KernelCall(f"q8_avgpool_{kernel_suffix(x.dtype)}", node.name, (x.name,), (y.name,),
                       params, (), SOURCES, y.numel * int(np.prod(window.kernel)))]


register(OpDef("QLinearAveragePool", "com.microsoft", infer_average, lower_average,
               constant_inputs=frozenset({1, 2, 3, 4}), data_dtypes=frozenset(INT8_TYPES)))
