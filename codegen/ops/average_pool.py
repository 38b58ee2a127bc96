"""com.microsoft QLinearGlobalAveragePool and QLinearAveragePool.

The global pool sums integers and requantizes like QLinearConv. The windowed pool is
ORT's float32 path; when its window covers the whole input with no padding, ORT takes
the global path instead, and so does this module."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from codegen.core.ir import Graph, Node, QuantParams, Tensor
from codegen.core.program import Alias, CFloat, CStruct, KernelCall
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
    constant_input,
    input_tensor,
    kernel_suffix,
    per_tensor_quant,
    reject_unknown_attrs,
    requant_params,
)
from ._float import FLOAT_TYPES, float_input, refuse
from ._geometry import Window, ceil_mode, dims_struct, pool_kernel, sliding_window, window_struct
from ._nchwc import nchwc_average_pool, nchwc_pool, pool_input_nchwc
from ._qdq import build_unary
from .clamp import output_range
from .kernels import kernel

SOURCES = ("average_pool.c",)
INT8_TYPES = ("uint8", "int8")
MAX_GLOBAL_SIZE = 2**23  # keeps 255 * size inside int32 (ORT itself stops at 2^24)


@dataclass(frozen=True)
class GlobalPoolSpec:
    quant: tuple[float, int, float, int]  # x_scale, x_zero_point, y_scale, y_zero_point
    channels_last: bool


@dataclass(frozen=True)
class AveragePoolSpec:
    window: Window
    quant: tuple[float, int, float, int]  # x_scale, x_zero_point, y_scale, y_zero_point
    count_include_pad: int
    is_global: bool  # a window over the whole unpadded input: ORT's global path


@dataclass(frozen=True)
class FloatAveragePoolSpec:
    window: Window
    ceil: bool  # ceil_mode
    count_include_pad: int


@dataclass(frozen=True)
class FloatGlobalPoolSpec:
    planes: int  # N * C
    size: int  # the elements of a plane


def pool_quant(node: Node, graph: Graph, x: Tensor) -> tuple[float, int, float, int]:
    """x_scale, x_zero_point, y_scale, y_zero_point (y_zero_point may be omitted: 0)."""
    constant_input(node, graph, 2, "x_zero_point")  # required, unlike y_zero_point
    return (*per_tensor_quant(node, graph, 1, 2, "x", x.dtype),
            *per_tensor_quant(node, graph, 3, 4, "y", x.dtype))


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
    mode = requant_suffix(requant_mode)
    return KernelCall(kernel("global_avgpool").symbol(x=kernel_suffix(x.dtype), rq=mode), node.name,
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
    return Inferred([y], {x.name: QuantParams((quant[0],), (quant[1],))},
                    GlobalPoolSpec(quant, last))


def lower_global(node: Node, graph: Graph, spec: GlobalPoolSpec,
        options: LoweringOptions) -> Sequence[
        KernelCall | Alias]:
    x, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    return [global_call(node, graph, x, y, spec.channels_last, spec.quant, options.requant)]


register(OpDef("QLinearGlobalAveragePool", "com.microsoft", infer_global, lower_global,
               constant_inputs=frozenset({1, 2, 3, 4}), data_dtypes=frozenset(INT8_TYPES),
               absorbs_clamp=True))


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
    whole = is_global(x, window)
    if whole:
        global_scale(node, quant[0], quant[2], int(np.prod(window.kernel)))
    y = Tensor(node.outputs[0], x.dtype, (*x.shape[:2], *window.output),
               QuantParams((quant[2],), (quant[3],)))
    return Inferred([y], {x.name: QuantParams((quant[0],), (quant[1],))},
                    AveragePoolSpec(window, quant, attr_int(node, "count_include_pad", 0), whole))


def lower_average(node: Node, graph: Graph, spec: AveragePoolSpec,
        options: LoweringOptions) -> Sequence[
        KernelCall | Alias]:
    x, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    window, quant = spec.window, spec.quant
    if spec.is_global:
        return [global_call(node, graph, x, y, False, quant, options.requant)]
    x_scale, x_zp, y_scale, y_zp = quant
    params = CStruct("q8_avgpool_params", (
        ("input", dims_struct(x.shape)), ("output", dims_struct(y.shape)),
        ("window", window_struct(window)),
        ("count_include_pad", spec.count_include_pad),
        ("x_scale", CFloat(x_scale)), ("x_zero_point", x_zp),
        ("y_scale", CFloat(y_scale)), ("y_zero_point", y_zp)))
    function = kernel("avgpool").symbol(x=kernel_suffix(x.dtype))
    return [KernelCall(function, node.name, (x.name,), (y.name,),
                       params, (), SOURCES, y.numel * int(np.prod(window.kernel)))]


register(OpDef("QLinearAveragePool", "com.microsoft", infer_average, lower_average,
               constant_inputs=frozenset({1, 2, 3, 4}), data_dtypes=frozenset(INT8_TYPES)))


def infer_float_average_pool(node: Node, graph: Graph) -> Inferred:
    x = float_input(node, graph, 0, "X")
    kernel = pool_kernel(node, x.shape)
    ceil = ceil_mode(node)
    window = sliding_window(node, x.shape, kernel, ceil)
    return Inferred([Tensor(node.outputs[0], "float32", (*x.shape[:2], *window.output))],
                    spec=FloatAveragePoolSpec(window, ceil,
                                              attr_int(node, "count_include_pad", 0)))


def infer_float_global_average_pool(node: Node, graph: Graph) -> Inferred:
    x = float_input(node, graph, 0, "X")
    if len(x.shape) < 3:
        raise ModelError(f"{node.describe()}: input of rank {len(x.shape)}; expected >= 3")
    return Inferred([Tensor(node.outputs[0], "float32",
                            (*x.shape[:2], *np.ones(len(x.shape) - 2, dtype=int).tolist()))],
                    spec=FloatGlobalPoolSpec(x.shape[0] * x.shape[1],
                                             int(np.prod(x.shape[2:], dtype=np.int64))))


def global_pool_is_sequential(node: Node, graph: Graph) -> bool:
    x = graph.tensors[node.inputs[0]]
    return nchwc_pool(x) and (x.name in graph.inputs or pool_input_nchwc(node, graph, x.name))


def lower_float_global_average_pool(node: Node, graph: Graph, spec: FloatGlobalPoolSpec,
        options: LoweringOptions) -> Sequence[
        KernelCall | Alias]:
    x, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    params = CStruct("q8_global_pool_f32_params", (
        ("planes", spec.planes), ("size", spec.size),
        ("sequential", int(global_pool_is_sequential(node, graph)))))
    return [KernelCall("q8_global_avgpool_f32", node.name, (x.name,), (y.name,), params, (),
                       ("average_pool_f32.c",))]


AVGPOOL_ALGORITHMS = {"mlas_vector": 0, "in_order": 1, "ort": 2}


def average_pool_algorithm(node: Node, graph: Graph, x: Tensor,
                           spec: FloatAveragePoolSpec) -> str:
    """Which of ORT's AveragePool kernels runs, as measured on ORT 1.32 at
    ORT_ENABLE_ALL: NCHWc (channels a multiple of the block), ORT's own kernel
    (AveragePool-19 and later, or ceil_mode with count_include_pad), else MLAS's:
    the global kernel, the vector kernel, or the generic one."""
    include_pad = spec.count_include_pad == 1
    ceil, window = spec.ceil, spec.window
    if nchwc_average_pool(node, graph):
        return "in_order"
    if operator_version(node) >= 19 or (ceil and include_pad):
        return "ort"
    kernel_h, kernel_w = window.kernel[-2:] if len(window.kernel) == 2 else (1, window.kernel[0])
    pads = (*window.pads_begin, *window.pads_end)
    if tuple(window.kernel) == tuple(x.shape[2:]) and set(window.strides) == {1} and \
            not any(pads):
        return "global"
    stride_w = window.strides[-1]
    if stride_w <= 2 and kernel_h <= 32 and kernel_w <= 32 and \
            window.pads_begin[-1] + window.pads_end[-1] + x.shape[-1] <= 2045:
        return "mlas_vector"
    return "in_order"


def lower_float_average_pool(node: Node, graph: Graph, spec: FloatAveragePoolSpec,
        options: LoweringOptions) -> Sequence[
        KernelCall | Alias]:
    x, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    if len(x.shape) != 4:
        raise refuse(node, "only 2-D float average pooling is supported")
    window = spec.window
    if set(window.dilations) != {1}:
        raise refuse(node, "dilations are not supported")
    if min(window.pads_begin) < 0:
        raise refuse(node, "negative padding (SAME with a kernel smaller than the stride)")
    algorithm = average_pool_algorithm(node, graph, x, spec)
    if algorithm == "global":
        params = CStruct("q8_global_pool_f32_params", (
            ("planes", x.shape[0] * x.shape[1]), ("size", x.shape[2] * x.shape[3]),
            ("sequential", 0)))
        return [KernelCall("q8_global_avgpool_f32", node.name, (x.name,), (y.name,), params,
                           (), ("average_pool_f32.c",))]
    params = CStruct("q8_avgpool_f32_params", (
        ("input", dims_struct(x.shape)), ("output", dims_struct(y.shape)),
        ("window", window_struct(window)), ("pad_bottom", window.pads_end[0]),
        ("pad_right", window.pads_end[1]),
        ("count_include_pad", spec.count_include_pad),
        ("algorithm", AVGPOOL_ALGORITHMS[algorithm])))
    return [KernelCall("q8_avgpool_f32", node.name, (x.name,), (y.name,), params, (),
                       ("average_pool_f32.c",))]


register(OpDef("AveragePool", "", infer_float_average_pool, lower_float_average_pool,
               versions=(7, 10, 11, 19, 22), data_dtypes=FLOAT_TYPES, float_island=True,
               fusion=Fusion("QLinearAveragePool", "com.microsoft", build_unary)))
register(OpDef("GlobalAveragePool", "", infer_float_global_average_pool,
               lower_float_global_average_pool, versions=(1, 22), data_dtypes=FLOAT_TYPES,
               float_island=True,
               fusion=Fusion("QLinearGlobalAveragePool", "com.microsoft", build_unary)))
