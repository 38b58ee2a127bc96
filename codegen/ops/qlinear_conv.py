"""QLinearConv: 1-D and 2-D, grouped and depthwise, any strides, dilations and pads,
uint8/int8 activations, uint8/int8 weights, per-tensor or per-channel weight scales."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray
from onnx import helper

from codegen.arith.requant import output_scale, requantize_float_reference
from codegen.core.ir import Graph, Node, QuantParams, Tensor
from codegen.core.pattern import Index, Quantized, dtype_of, per_tensor, qparams, scale_axis
from codegen.core.program import (
    Alias,
    CArray,
    CRef,
    CStruct,
    Intermediate,
    KernelCall,
    Lowered,
    Overlap,
)
from codegen.errors import ModelError, UnsupportedError
from codegen.views.exporter import ProductSlots, Writer, export_product

from . import GENERIC_UNFUSED, Fusion, Inferred, LoweringOptions, OpDef, register
from ._common import (
    attr_int,
    attr_ints,
    bounded_requant,
    check_dtype,
    check_scales,
    constant_input,
    conv_acc_bound,
    input_tensor,
    kernel_suffix,
    no_requant,
    plane_overlap,
    quant_params,
    reject_unknown_attrs,
    requant_params,
    scalar_constant,
    scalar_or_vector,
)
from ._float import FLOAT_TYPES, dequantized_weights, float_bias, float_input, refuse
from ._geometry import Window, dims_struct, sliding_window, window_struct
from ._qdq import bias_input
from .average_pool import NCHWC_BLOCK
from .clamp import output_range

SOURCES = ("qlinear_conv.c",)
F32 = np.float32
INT8_TYPES = frozenset({"uint8", "int8"})
# The _w16b_ kernel sums a row's products in int32 from zero (conv_*_im2col_w16b_*.c,
# dot_w16b_2x2). |w * x| <= 128 * 255 = 32640 (weights int8 after the uint8 shift, inputs
# uint8 or int8), so K < 2^16 keeps |sum| <= 65535 * 32640 < 2^31: no signed overflow.
# Larger layers take the int8 im2col kernel, which accumulates modulo 2^32.
W16_MAX_TAPS = 2**16
ATTRS = {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"}


def conv_window(node: Node, x_shape: tuple[int, ...], w_shape: tuple[int, ...]) -> Window:
    kernel = tuple(w_shape[2:])
    declared = attr_ints(node, "kernel_shape", None)
    if declared is not None and tuple(declared) != kernel:
        raise ModelError(f"{node.describe()}: kernel_shape {declared} does not match the "
                         f"weight shape {list(w_shape)}")
    return sliding_window(node, x_shape, kernel, is_conv=True)


def conv_groups(node: Node, x_shape: tuple[int, ...], w_shape: tuple[int, ...]) -> int:
    groups = attr_int(node, "group", 1)
    if groups < 1 or x_shape[1] != w_shape[1] * groups or w_shape[0] % groups:
        raise ModelError(f"{node.describe()}: {x_shape[1]} input channels, weights "
                         f"{list(w_shape)} and group {groups} are inconsistent")
    return groups


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
    conv_groups(node, x.shape, w.shape)
    m = w.shape[0]
    q = conv_quant(node, graph, x, w)
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
                          node.inputs[3]: quant_params(q.w_scale, q.w_zp, 0)})


def as_int8_weights(w: NDArray[Any], w_zp: NDArray[Any]) -> tuple[NDArray[Any], NDArray[Any]]:
    """Weights as int8 and their zero points as int32 (one value when all are equal).
    uint8 weights and zero points are shifted by -128, which leaves (w - zp) unchanged."""
    zp = w_zp.astype(np.int32).reshape(-1)
    if w.dtype == np.uint8:
        w, zp = (w.astype(np.int16) - 128).astype(np.int8), zp - 128
    return w.astype(np.int8), zp[:1] if np.all(zp == zp[0]) else zp


def lower_qlinear_conv(node: Node, graph: Graph, spec: object,
        options: LoweringOptions) -> list[Lowered]:
    x = graph.tensors[node.inputs[0]]
    y = graph.tensors[node.outputs[0]]
    w = constant_input(node, graph, 3, "w")
    window = conv_window(node, x.shape, w.shape)
    groups = conv_groups(node, x.shape, w.shape)
    q = conv_quant(node, graph, x, w)
    weights, w_zp = as_int8_weights(w, q.w_zp)
    qmin, qmax = output_range(node, graph, y.dtype)
    requant, requant_arrays = requant_params(
        node, output_scale(q.x_scale, q.w_scale, q.y_scale), q.y_zp, qmin, qmax,
        options.requant)
    arrays = [CArray("weights", "int8_t", weights.reshape(-1)),
              CArray("weight_zero_point", "int32_t", w_zp), *requant_arrays]
    if node.input(8) is not None:
        arrays.append(CArray("bias", "int32_t", constant_input(node, graph, 8, "B")))

    mode = "ireq" if options.requant == "int" else "freq"
    bias = constant_input(node, graph, 8, "B") if node.input(8) is not None else None
    if options.kernels == "fast" and groups == 1 and not np.any(w_zp):
        prefix: list[Lowered] = []
        folded = fold_uniform_inputs(node, graph, x, y, window, q.x_zp, weights, bias)
        if folded is not None:
            prefix, x, weights, bias = folded
        live = np.flatnonzero(weights.reshape(weights.shape[0], -1).any(axis=1))
        if 0 < live.size < weights.shape[0]:
            return [*prefix, *lower_live_channels(node, graph, x, y, window, q, weights, bias,
                                                  live, (qmin, qmax), options)]
        return [*prefix, fast_conv_call(x, y, window, q.x_zp, weights, bias, requant,
                                        requant_arrays, node, options)]
    if options.kernels == "fast" and is_depthwise_3x3(x, y, window, groups):
        constant = constant_input_channels(graph, x)
        if constant is not None:
            classes = constant_plane_classes(x, y, window, q, weights, w_zp, bias, constant,
                                             (qmin, qmax))
            if classes is not None:
                return lower_constant_planes(node, graph, x, y, window, q, weights, w_zp,
                                             bias, (qmin, qmax), mode, options, constant,
                                             classes)
        return [dwconv_3x3_call(node, x, y, window, q.x_zp, weights, w_zp, bias, requant,
                                requant_arrays, mode, options)]
    params = conv_params(x, y, window, groups, q.x_zp, w_zp, node.input(8) is not None,
                         requant)
    return [KernelCall(f"q8_conv_{kernel_suffix(x.dtype)}_{mode}", node.name, (x.name,),
                       (y.name,), params, tuple(arrays), SOURCES, conv_macs(y, w))]


def is_depthwise_3x3(x: Tensor, y: Tensor, window: Window, groups: int) -> bool:
    """One 3x3 filter per channel, dilation 1, no negative padding: dwconv_3x3.c."""
    return (len(x.shape) == 4 and groups == x.shape[1] == y.shape[1] and
            tuple(window.kernel) == (3, 3) and set(window.dilations) == {1} and
            min(window.pads_begin) >= 0)


def dwconv_3x3_call(node: Node, x: Tensor, y: Tensor, window: Window, x_zp: int,
                    weights: NDArray[Any], w_zp: NDArray[Any], bias: NDArray[Any] | None,
                    requant: CStruct, requant_arrays: list[CArray], mode: str,
                    options: LoweringOptions, channels: NDArray[Any] | None = None
                    ) -> KernelCall:
    """The depthwise 3x3 path: weights minus their zero point as int16, the input zero
    point folded into the bias (modulo 2^32). On cores with the DSP extension, stride-1
    layers take dwconv_3x3_rows.c, two output rows at a time, unless they have only one
    (half the two-row kernel's multiplies would be thrown away);
    on Thumb-1 cores every layer takes the padded kernel, whose copy turns int8 into
    unsigned bytes. `channels`: compute those only (the others read a constant channel,
    lower_constant_planes); the weights, bias and requantization constants are then
    those channels' alone."""
    c = weights.shape[0]
    centered = weights.reshape(c, 9).astype(np.int64) - np.broadcast_to(
        w_zp.astype(np.int64).reshape(-1, 1), (c, 1))
    folded = (bias.astype(np.int64) if bias is not None else np.zeros(c, np.int64))
    folded = folded - x_zp * centered.sum(axis=1)
    wrapped = ((folded + 2**31) % 2**32 - 2**31).astype(np.int32)
    requant = bounded_requant(requant, requant_arrays, conv_acc_bound(centered, bias))
    params = CStruct("q8_dwconv_params", (
        ("input", dims_struct(x.shape)), ("output", dims_struct(y.shape)),
        ("stride_h", window.strides[0]), ("stride_w", window.strides[1]),
        ("pad_top", window.pads_begin[0]), ("pad_left", window.pads_begin[1]),
        ("pad_value", x_zp), ("weights", CRef("weights")), ("bias", CRef("bias")),
        ("requant", requant), ("bands", 0),
        ("channel_list", CRef("channel_list") if channels is not None else None),
        ("channel_count", int(channels.size) if channels is not None else 0)))
    arrays = (CArray("weights", "int16_t", centered.astype(np.int16).reshape(-1)),
              CArray("bias", "int32_t", wrapped), *requant_arrays)
    if channels is not None:
        arrays = (*arrays, CArray("channel_list", "int16_t", channels.astype(np.int16)))
    macs = (y.numel // y.shape[1]) * c * 9  # c: the computed channels
    # With padding, each channel is first copied into a scratch plane with its border.
    padded = any(window.pads_begin) or any(window.pads_end) or options.thumb1
    plane = padded_plane_bytes(y.shape, window.strides)
    if options.dsp and tuple(window.strides) == (1, 1) and y.shape[2] > 1:
        bands = rows_bands_per_pass(y.shape[2], y.shape[3], plane)
        params = CStruct(params.ctype, tuple((k, bands if k == "bands" else v)
                                             for k, v in params.fields))
        # The bands (four padded rows, 8 bytes per column), then a row of the padding value.
        scratch = bands * (y.shape[3] + 2) * 8 + x.shape[3]
        # One pass over all of a channel's bands packs the whole plane before writing.
        whole = 2 * bands >= y.shape[2]
        return KernelCall(f"q8_dwconv_{kernel_suffix(x.dtype)}_3x3_rows_{mode}", node.name,
                          (x.name,), (y.name,), params, arrays, ("dwconv_3x3_rows.c",),
                          macs, scratch_bytes=scratch,
                          overlap=plane_overlap(x, y, whole) if channels is None else None)
    variant = "3x3_padded" if padded else "3x3"
    source = "dwconv_3x3_padded.c" if padded else "dwconv_3x3.c"
    return KernelCall(f"q8_dwconv_{kernel_suffix(x.dtype)}_{variant}_{mode}", node.name,
                      (x.name,), (y.name,), params, arrays, (source,), macs,
                      scratch_bytes=padded_scratch_bytes(y.shape, window.strides)
                      if padded else 0,
                      overlap=plane_overlap(x, y, padded) if channels is None else None)


def padded_plane_bytes(y_shape: tuple[int, ...], strides: Sequence[int]) -> int:
    """The plane a padded depthwise 3x3 kernel copies a channel into, border included."""
    return ((y_shape[2] - 1) * strides[0] + 3) * ((y_shape[3] - 1) * strides[1] + 3)


def padded_scratch_bytes(y_shape: tuple[int, ...], strides: Sequence[int]) -> int:
    """The padded kernel's scratch: its plane, and stride_w spare bytes (Thumb-1's kernel
    computes an odd row's last output as a pair, whose second output reads past the
    plane's last row and is not stored)."""
    return padded_plane_bytes(y_shape, strides) + strides[1]


# Scratch the two-row depthwise kernel may take beyond the padded plane of the other one.
ROWS_SCRATCH_BYTES = 1024


def rows_bands_per_pass(oh: int, ow: int, plane_bytes: int) -> int:
    """Bands of two output rows that dwconv_3x3_rows.c fills and runs in one pass: all of
    a channel's where the scratch stays within the padded plane of the other kernel or
    1 KB (narrow planes: DS-CNN's 25 x 5 runs in one pass instead of 13), at least one."""
    band_bytes = (ow + 2) * 8
    return max(1, min((oh + 1) // 2, max(plane_bytes, ROWS_SCRATCH_BYTES) // band_bytes))


def fast_conv_call(x: Tensor, y: Tensor, window: Window, x_zp: int, weights: NDArray[Any],
                   bias: NDArray[Any] | None, requant: CStruct, requant_arrays: list[CArray],
                   node: Node, options: LoweringOptions) -> KernelCall:
    """The fast group-1 convolution for the target: the byte kernel on cores without DSP
    (both the compact and the fast one there), int16 weights where chosen, else int8."""
    mode = "ireq" if options.requant == "int" else "freq"
    if options.cortex_m and not options.dsp:
        call = im2col_b8_call(node, x, y, window, x_zp, weights, bias, requant,
                              requant_arrays, mode, options.thumb1)
    elif options.wide_for(node.name) and weights[0].size < W16_MAX_TAPS:
        call = im2col_w16_call(node, x, y, window, x_zp, weights, bias, requant,
                               requant_arrays, mode, pairs=options.dsp)
    else:
        call = im2col_call(node, x, y, window, x_zp, weights, bias, requant, requant_arrays,
                           mode)
    return replace(call, overlap=pointwise_overlap(x, y, window))


def pointwise_overlap(x: Tensor, y: Tensor, window: Window) -> Overlap | None:
    """A 1x1 convolution with stride 1 and no padding gathers a few pixels' input (all
    channels) into its columns before it writes those pixels' outputs: output channel m
    of pixel p may then take the place of input channel m of pixel p (the same offset
    for both tensors), which no later pixel reads. Any other offset of an overlapping
    output would land on pixels still to be read."""
    if (tuple(window.kernel) != (1, 1) or tuple(window.strides) != (1, 1)
            or any(window.pads_begin) or any(window.pads_end) or x.shape[0] != 1
            or tuple(x.shape[2:]) != tuple(y.shape[2:])
            or np.dtype(x.dtype).itemsize != np.dtype(y.dtype).itemsize):
        return None
    return Overlap(0, 0, exact=True)


def constant_channel_bytes(bias: NDArray[Any], scale: NDArray[Any], zero_point: int,
                           act_min: int, act_max: int) -> NDArray[Any]:
    """The output of a channel whose weights are all zero: its accumulator is its bias at
    every pixel, requantized as ORT's MlasRequantizeOutput does."""
    return requantize_float_reference(bias, scale, zero_point, act_min, act_max)


def lower_live_channels(node: Node, graph: Graph, x: Tensor, y: Tensor, window: Window,
                        q: ConvQuant, weights: NDArray[Any], bias: NDArray[Any] | None,
                        live: NDArray[Any], bounds: tuple[int, int],
                        options: LoweringOptions) -> list[Lowered]:
    """A convolution with output channels whose weights are all zero (pruned models: 971
    of the official VWW model's pointwise channels) runs on its live rows only, into an
    intermediate tensor; q8_fill_channels then places those channels and fills the dead
    ones with their constant byte. The work and the weights of the dead rows are gone."""
    m = weights.shape[0]
    scales = np.broadcast_to(output_scale(q.x_scale, q.w_scale, q.y_scale), (m,))
    biases = (np.broadcast_to(bias.astype(np.int64).reshape(-1), (m,)) if bias is not None
              else np.zeros(m, np.int64))
    name = f"{y.name}#live"
    while name in graph.tensors:
        name += "#"
    y_live = Tensor(name, y.dtype, (y.shape[0], int(live.size), *y.shape[2:]), y.quant)
    requant, requant_arrays = requant_params(node, scales[live], q.y_zp, *bounds,
                                             options.requant)
    conv = fast_conv_call(x, y_live, window, q.x_zp, weights[live],
                          biases[live] if bias is not None else None, requant,
                          requant_arrays, node, options)
    source = np.full(m, -1, np.int16)
    source[live] = np.arange(live.size, dtype=np.int16)
    fill = constant_channel_bytes(biases, scales, q.y_zp, *bounds) % 256
    fill[live] = 0
    params = CStruct("q8_fill_channels_params", (
        ("batch", y.shape[0]), ("channels", m), ("live", int(live.size)),
        ("pixels", int(np.prod(y.shape[2:], dtype=np.int64))), ("source", CRef("source")),
        ("fill", CRef("fill"))))
    dead = m - int(live.size)
    place = KernelCall("q8_fill_channels", node.name, (y_live.name,), (y.name,), params,
                       (CArray("source", "int16_t", source), CArray("fill", "uint8_t", fill)),
                       ("channels.c",),
                       skipped_macs=dead * (y.numel // m) * int(weights[0].size),
                       skipped_weight_bytes=dead * int(weights[0].size))
    return [Intermediate(y_live), conv, place]


@dataclass(frozen=True)
class ConstantChannels:
    """The channels of a tensor that are constant planes, and their values."""

    mask: NDArray[Any]  # bool per channel
    values: NDArray[Any]  # int64 per channel (meaningful where mask is set)


def conv_producer(graph: Graph, x: Tensor) -> tuple[Node, Tensor, NDArray[Any]] | None:
    """The 2-D QLinearConv with constant weights whose first output is x: (the node, its
    input, its weights), or None."""
    producer = next((n for n in graph.nodes if x.name in n.outputs), None)
    if (producer is None or producer.op_type != "QLinearConv" or
            producer.domain not in ("", "ai.onnx") or producer.outputs[0] != x.name):
        return None
    x_in = graph.tensors[producer.inputs[0]]
    w = graph.constants.get(producer.inputs[3])
    if w is None or len(x_in.shape) != 4 or len(w.shape) != 4:
        return None
    return producer, x_in, w


def constant_input_channels(graph: Graph, x: Tensor) -> ConstantChannels | None:
    """The channels of x that are constant planes, or None: x is the output of a group-1
    QLinearConv whose dead weight rows (all zero, zero point 0) leave each such channel
    at its requantized bias, as ORT computes it."""
    found = conv_producer(graph, x)
    if found is None:
        return None
    producer, x_in, w = found
    if conv_groups(producer, x_in.shape, w.shape) != 1:
        return None
    q = conv_quant(producer, graph, x_in, w)
    weights, w_zp = as_int8_weights(w, q.w_zp)
    m = weights.shape[0]
    dead = ~weights.reshape(m, -1).any(axis=1)
    if np.any(w_zp) or not dead.any():
        return None
    bias = (np.broadcast_to(constant_input(producer, graph, 8, "B").astype(np.int64)
                            .reshape(-1), (m,)) if producer.input(8) is not None
            else np.zeros(m, np.int64))
    scales = np.broadcast_to(output_scale(q.x_scale, q.w_scale, q.y_scale), (m,))
    values = constant_channel_bytes(bias, scales, q.y_zp,
                                    *output_range(producer, graph, x.dtype)).astype(np.int64)
    return ConstantChannels(np.asarray(dead, dtype=bool), values)


def uniform_input_channels(graph: Graph, x: Tensor) -> ConstantChannels | None:
    """The channels of x that hold one value over every pixel, or None: the constant
    channels of a group-1 convolution's dead rows (constant_input_channels), or the planes
    a depthwise 3x3 layer makes of them where every border class holds the same byte
    (its input's constant equals the padding's zero point, the usual ReLU case)."""
    direct = constant_input_channels(graph, x)
    if direct is not None:
        return direct
    found = conv_producer(graph, x)
    if found is None:
        return None
    producer, x_in, w = found
    window = conv_window(producer, x_in.shape, w.shape)
    if not is_depthwise_3x3(x_in, x, window, conv_groups(producer, x_in.shape, w.shape)):
        return None
    constant = constant_input_channels(graph, x_in)
    if constant is None:
        return None
    q = conv_quant(producer, graph, x_in, w)
    weights, w_zp = as_int8_weights(w, q.w_zp)
    bias = (constant_input(producer, graph, 8, "B") if producer.input(8) is not None
            else None)
    classes = constant_plane_classes(x_in, x, window, q, weights, w_zp, bias, constant,
                                     output_range(producer, graph, x.dtype))
    if classes is None:
        return None
    uniform = constant.mask & np.all(classes == classes[:, :1], axis=1)
    return ConstantChannels(uniform, classes[:, 0]) if uniform.any() else None


def fold_uniform_inputs(node: Node, graph: Graph, x: Tensor, y: Tensor, window: Window,
                        x_zp: int, weights: NDArray[Any], bias: NDArray[Any] | None
                        ) -> tuple[list[Lowered], Tensor, NDArray[Any], NDArray[Any]] | None:
    """A pointwise layer (1x1, no padding, weight zero point 0) over input channels that
    hold one value u everywhere (uniform_input_channels: the planes after a pruned
    model's dead channels) takes their contribution w * (u - x_zp), the same at every
    pixel, into its bias, exactly, and reads the other channels only: q8_select_channels
    copies those into an intermediate tensor, and the weights keep their columns. Returns
    (the select step, that tensor, the weights, the bias), or None."""
    if (len(x.shape) != 4 or tuple(window.kernel) != (1, 1) or any(window.pads_begin) or
            any(window.pads_end)):
        return None
    uniform = uniform_input_channels(graph, x)
    if uniform is None:
        return None
    c = x.shape[1]
    kept = np.flatnonzero(~uniform.mask)
    if kept.size == 0:
        return None
    m = weights.shape[0]
    rows = weights.reshape(m, c).astype(np.int64)
    folded = (np.broadcast_to(bias.astype(np.int64).reshape(-1), (m,)) if bias is not None
              else np.zeros(m, np.int64))
    folded = folded + rows[:, uniform.mask] @ (uniform.values[uniform.mask] - x_zp)
    if np.any(np.abs(folded) >= 2**31):
        return None
    name = f"{x.name}#kept"
    while name in graph.tensors:
        name += "#"
    x_kept = Tensor(name, x.dtype, (x.shape[0], int(kept.size), *x.shape[2:]), x.quant)
    pixels = int(np.prod(x.shape[2:], dtype=np.int64))
    dropped = c - int(kept.size)
    params = CStruct("q8_select_channels_params", (
        ("batch", x.shape[0]), ("channels", c), ("count", int(kept.size)),
        ("pixels", pixels), ("list", CRef("list"))))
    select = KernelCall("q8_select_channels", node.name, (x.name,), (x_kept.name,), params,
                        (CArray("list", "int16_t", kept.astype(np.int16)),), ("channels.c",),
                        skipped_macs=dropped * (y.numel // y.shape[1]) * m,
                        skipped_weight_bytes=dropped * m)
    return ([Intermediate(x_kept), select], x_kept,
            np.ascontiguousarray(weights[:, kept]), folded.astype(np.int32))


def constant_plane_classes(x: Tensor, y: Tensor, window: Window, q: ConvQuant,
                           weights: NDArray[Any], w_zp: NDArray[Any],
                           bias: NDArray[Any] | None, constant: ConstantChannels,
                           bounds: tuple[int, int]) -> NDArray[Any] | None:
    """The output planes of a depthwise 3x3 layer over its constant input channels, as 9
    bytes per channel (row class first/inner/last x column class), or None when a plane
    is not that simple. acc = B + (v - x_zp) * (the sum of the taps inside the input),
    padding taps reading x_zp; then ORT's requantization."""
    c, (oh, ow) = weights.shape[0], y.shape[2:]
    h, w = x.shape[2:]
    centered = weights.reshape(c, 3, 3).astype(np.int64) - np.broadcast_to(
        w_zp.astype(np.int64).reshape(-1, 1, 1), (c, 1, 1))
    rows = np.arange(oh)[:, None] * window.strides[0] - window.pads_begin[0] + np.arange(3)
    cols = np.arange(ow)[:, None] * window.strides[1] - window.pads_begin[1] + np.arange(3)
    row_in = (rows >= 0) & (rows < h)  # [oh, 3]
    col_in = (cols >= 0) & (cols < w)  # [ow, 3]
    # the sum of the taps inside the input, per channel and output pixel: [c, oh, ow]
    inside = np.einsum("ia,jb,cab->cij", row_in.astype(np.int64), col_in.astype(np.int64),
                       centered)
    scales = np.broadcast_to(output_scale(q.x_scale, q.w_scale, q.y_scale), (c,))
    biases = (np.broadcast_to(bias.astype(np.int64).reshape(-1), (c,)) if bias is not None
              else np.zeros(c, np.int64))
    classes = np.zeros((c, 9), np.int64)
    pick_r = [0, min(1, oh - 1), oh - 1]
    pick_c = [0, min(1, ow - 1), ow - 1]
    row_class = np.array([0 if i == 0 else (2 if i == oh - 1 else 1) for i in range(oh)])
    col_class = np.array([0 if j == 0 else (2 if j == ow - 1 else 1) for j in range(ow)])
    for ch in np.flatnonzero(constant.mask):
        acc = biases[ch] + (int(constant.values[ch]) - q.x_zp) * inside[ch]
        if np.any(np.abs(acc) >= 2**31):
            return None
        plane = requantize_float_reference(acc, np.broadcast_to(scales[ch], acc.shape),
                                           q.y_zp, *bounds)
        table = plane[np.ix_(pick_r, pick_c)]
        if not np.array_equal(table[row_class][:, col_class], plane):
            return None
        classes[ch] = table.reshape(-1)
    return classes


def lower_constant_planes(node: Node, graph: Graph, x: Tensor, y: Tensor, window: Window,
                          q: ConvQuant, weights: NDArray[Any], w_zp: NDArray[Any],
                          bias: NDArray[Any] | None, bounds: tuple[int, int], mode: str,
                          options: LoweringOptions, constant: ConstantChannels,
                          classes: NDArray[Any]) -> list[Lowered]:
    """A depthwise 3x3 layer over a convolution's constant channels (pruned models: the
    official VWW model's dead pointwise channels) computes its other channels only, with
    their weights, biases and scales alone, into an intermediate tensor; q8_fill_planes
    then writes each constant channel's output plane from its class bytes
    (constant_plane_classes), over that tensor where the planner allows. The constant
    channels' multiply-accumulates and weights are gone."""
    computed = np.flatnonzero(~constant.mask)
    c = weights.shape[0]
    name = f"{y.name}#computed"
    while name in graph.tensors:
        name += "#"
    y_computed = Tensor(name, y.dtype, y.shape, y.quant)
    scales = np.broadcast_to(output_scale(q.x_scale, q.w_scale, q.y_scale), (c,))
    requant, requant_arrays = requant_params(node, scales[computed], q.y_zp, *bounds,
                                             options.requant)
    zps = w_zp if w_zp.size == 1 else w_zp[computed]
    kept_bias = (np.broadcast_to(bias.reshape(-1), (c,))[computed] if bias is not None
                 else None)
    conv = dwconv_3x3_call(node, x, y_computed, window, q.x_zp, weights[computed], zps,
                           kept_bias, requant, requant_arrays, mode, options,
                           channels=computed)
    dead = np.flatnonzero(constant.mask)
    params = CStruct("q8_fill_planes_params", (
        ("batch", y.shape[0]), ("channels", c), ("height", y.shape[2]), ("width", y.shape[3]),
        ("count", int(dead.size)), ("list", CRef("list")), ("classes", CRef("classes"))))
    fill = KernelCall("q8_fill_planes", node.name, (y_computed.name,), (y.name,), params,
                      (CArray("list", "int16_t", dead.astype(np.int16)),
                       CArray("classes", "uint8_t",
                              (classes[dead] % 256).astype(np.uint8).reshape(-1))),
                      ("channels.c",), skipped_macs=int(dead.size) * (y.numel // c) * 9,
                      skipped_weight_bytes=int(dead.size) * 9, in_place=0)
    return [Intermediate(y_computed), conv, fill]


# Scratch the slab mode may take beyond the two columns of the classic im2col.
SLAB_SCRATCH_BYTES = 1024


def slab_buffer_taps(chunk: int, stride_w: int, kernel_w: int, slab: int,
                     k_padded: int) -> int:
    """q8_im2col.h's slab_buffer_taps: the chunk's slabs and the last column's padding."""
    return ((chunk - 1) * stride_w + kernel_w) * slab + (k_padded - kernel_w * slab)


def slab_layout(x: Tensor, y: Tensor, window: Window, k_padded: int,
                tap_multiple: int) -> tuple[int, int] | None:
    """(slab, chunk) for the im2col kernels' slab mode (q8_im2col.h), or None: 2-D layers
    with dilation_w 1, a kernel wider than one tap and an even output width, whose slab
    order needs no more padded taps than the column order. slab = C * KH taps rounded up
    to 4 (8-byte aligned columns); chunk = the most output pixels per fill, even, whose
    buffer stays within the classic two columns or SLAB_SCRATCH_BYTES."""
    if len(window.kernel) != 2 or window.kernel[1] < 2 or window.dilations[1] != 1:
        return None
    ow = y.shape[3]
    if ow % 2:
        return None
    c, kh, kw = x.shape[1], window.kernel[0], window.kernel[1]
    slab = (c * kh + 3) // 4 * 4
    if (kw * slab + tap_multiple - 1) // tap_multiple * tap_multiple != k_padded:
        return None
    budget = max(2 * k_padded * 2, SLAB_SCRATCH_BYTES)
    chunk = 2
    while (chunk + 2 <= ow and 2 * slab_buffer_taps(chunk + 2, window.strides[1], kw, slab,
                                                    k_padded) <= budget):
        chunk += 2
    return slab, chunk


def slab_order(rows: NDArray[Any], channels: int, kernel: tuple[int, int],
               slab: int) -> NDArray[Any]:
    """Weight rows from (c, kh, kw) order to the slab order (kw, c, kh), each kernel
    column's C * KH taps padded with zeros to `slab`."""
    m = rows.shape[0]
    kh, kw = kernel
    ordered = rows.reshape(m, channels, kh, kw).transpose(0, 3, 1, 2).reshape(m, kw, -1)
    padded = np.zeros((m, kw, slab), dtype=rows.dtype)
    padded[:, :, :channels * kh] = ordered
    return padded.reshape(m, kw * slab)


def im2col_call(node: Node, x: Tensor, y: Tensor, window: Window, x_zp: int,
                weights: NDArray[Any], bias: NDArray[Any] | None, requant: CStruct,
                requant_arrays: list[CArray], mode: str) -> KernelCall:
    """The im2col + 16-bit SIMD path (conv_*_im2col_*.c): weight rows of k taps padded to a
    multiple of 4, output channels to an even count (a zero row), each pair of rows
    interleaved per group of four taps; the input zero point folded into the bias (modulo
    2^32), padded like the rows."""
    m = weights.shape[0]
    rows = weights.reshape(m, -1).astype(np.int64)
    k = rows.shape[1]
    k_padded, m_padded = (k + 3) // 4 * 4, m + m % 2
    slabs = slab_layout(x, y, window, k_padded, 4)
    stored = (slab_order(rows, x.shape[1], (window.kernel[0], window.kernel[1]), slabs[0])
              if slabs else rows)
    padded = np.zeros((m_padded, k_padded), dtype=np.int8)
    padded[:m, :stored.shape[1]] = stored
    # Each group of four as w0, w2, w1, w3: the kernel's two byte-pair widenings of a word
    # (bytes 0,2 and 1,3) then give (w0, w1) and (w2, w3), in the columns' order.
    padded = padded.reshape(m_padded // 2, 2, k_padded // 4, 4)[:, :, :, [0, 2, 1, 3]]
    padded = np.ascontiguousarray(padded.transpose(0, 2, 1, 3))
    folded = np.zeros(m_padded, np.int64)
    folded[:m] = (bias.astype(np.int64) if bias is not None else 0) - x_zp * rows.sum(axis=1)
    wrapped = ((folded + 2**31) % 2**32 - 2**31).astype(np.int32)
    requant = bounded_requant(requant, requant_arrays, conv_acc_bound(rows, bias))
    params = CStruct("q8_conv_im2col_params", (
        ("input", dims_struct(x.shape)), ("output", dims_struct(y.shape)),
        ("window", window_struct(window)), ("pad_value", x_zp), ("k_padded", k_padded),
        ("weights", CRef("weights", "v")), ("bias", CRef("bias")), ("requant", requant),
        ("slab", slabs[0] if slabs else 0), ("chunk", slabs[1] if slabs else 0)))
    # 8-byte aligned: the kernel reads a pair of rows' words with one LDRD.
    arrays = (CArray("weights", "int8_t", padded.reshape(-1), aligned8=True),
              CArray("bias", "int32_t", wrapped), *requant_arrays)
    function = f"q8_conv_{kernel_suffix(x.dtype)}_im2col_{mode}"
    return KernelCall(function, node.name, (x.name,), (y.name,), params, arrays,
                      (source_of(function),), y.numel * k,
                      scratch_bytes=im2col_scratch_bytes(window, k_padded, slabs))


def source_of(function: str) -> str:
    """The runtime file of an im2col kernel: one function per file, named after it, so a
    project compiles only the variants it calls (each instantiates the whole kernel)."""
    return function.removeprefix("q8_") + ".c"


def im2col_scratch_bytes(window: Window, k_padded: int,
                         slabs: tuple[int, int] | None) -> int:
    """Two int16 columns, or the slab buffer."""
    if slabs is None:
        return 2 * k_padded * 2
    slab, chunk = slabs
    return 2 * slab_buffer_taps(chunk, window.strides[1], window.kernel[1], slab, k_padded)


def folded_bias(bias: NDArray[Any] | None, rows: NDArray[Any], x_zp: int) -> NDArray[Any]:
    """bias - x_zp * sum(row) per output channel, modulo 2^32: the input zero point taken
    out of the inner loop (padding taps then hold x_zp and add nothing)."""
    folded = (bias.astype(np.int64) if bias is not None else np.zeros(len(rows), np.int64))
    folded = folded - x_zp * rows.astype(np.int64).sum(axis=1)
    wrapped: NDArray[Any] = ((folded + 2**31) % 2**32 - 2**31).astype(np.int32)
    return wrapped


def im2col_w16_call(node: Node, x: Tensor, y: Tensor, window: Window, x_zp: int,
                    weights: NDArray[Any], bias: NDArray[Any] | None, requant: CStruct,
                    requant_arrays: list[CArray], mode: str, pairs: bool) -> KernelCall:
    """The im2col path with wide weights (conv_*_im2col_w16_*.c, conv_*_im2col_w16b_*.c): int16
    rows of k taps padded to a multiple of 8, output channels padded to an even count with
    zero rows, 8-byte aligned; each pair of rows interleaved per two taps for the DSP loop
    (*_w16_*), or in blocks of 8 taps for plain, vectorizable C (*_w16b_*)."""
    m = weights.shape[0]
    rows = weights.reshape(m, -1).astype(np.int64)
    k = rows.shape[1]
    k_padded = (k + 7) // 8 * 8
    m_even = m + m % 2
    slabs = slab_layout(x, y, window, k_padded, 8)
    stored = (slab_order(rows, x.shape[1], (window.kernel[0], window.kernel[1]), slabs[0])
              if slabs else rows)
    padded = np.zeros((m_even, k_padded), dtype=np.int16)
    padded[:m, :stored.shape[1]] = stored
    group = 2 if pairs else 8
    # [pair][row in pair][group][taps] -> [pair][group][row in pair][taps]
    interleaved = padded.reshape(m_even // 2, 2, k_padded // group, group).transpose(0, 2, 1, 3)
    bias_even = np.zeros(m_even, np.int32)
    bias_even[:m] = folded_bias(bias, rows, x_zp)
    requant = bounded_requant(requant, requant_arrays, conv_acc_bound(rows, bias))
    params = CStruct("q8_conv_im2col_w16_params", (
        ("input", dims_struct(x.shape)), ("output", dims_struct(y.shape)),
        ("window", window_struct(window)), ("pad_value", x_zp), ("k_padded", k_padded),
        ("weights", CRef("weights", "v")), ("bias", CRef("bias")), ("requant", requant),
        ("slab", slabs[0] if slabs else 0), ("chunk", slabs[1] if slabs else 0)))
    arrays = (CArray("weights", "int16_t", interleaved.reshape(-1), aligned8=True),
              CArray("bias", "int32_t", bias_even), *requant_arrays)
    variant = "w16" if pairs else "w16b"
    function = f"q8_conv_{kernel_suffix(x.dtype)}_im2col_{variant}_{mode}"
    return KernelCall(function, node.name, (x.name,), (y.name,), params, arrays,
                      (source_of(function),), y.numel * k,
                      scratch_bytes=im2col_scratch_bytes(window, k_padded, slabs))


# The largest scratch (four int16 columns) a Thumb-1 convolution takes for four pixels per
# pass: columns up to 256 taps (a 3 x 3 window over 28 channels).
B8_QUAD_SCRATCH_BYTES = 2048


def im2col_b8_call(node: Node, x: Tensor, y: Tensor, window: Window, x_zp: int,
                   weights: NDArray[Any], bias: NDArray[Any] | None, requant: CStruct,
                   requant_arrays: list[CArray], mode: str, thumb1: bool = False
                   ) -> KernelCall:
    """The unsigned-byte im2col path for cores without DSP (conv_*_im2col_b8_*.c):
    weights stored as w + 128 (uint8; padding taps 0), row by row; the columns hold
    x + 128 for int8 inputs, and the bias takes
    (x_zp + 128 or x_zp) * sum(w) out (see the kernel). Thumb-1 cores take four pixels
    per pass where their columns fit in B8_QUAD_SCRATCH_BYTES, else two."""
    m = weights.shape[0]
    rows = weights.reshape(m, -1).astype(np.int64)
    k = rows.shape[1]
    k_padded = (k + 7) // 8 * 8
    offset = 128 if x.dtype == "int8" else 0
    stored = np.zeros((m, k_padded), dtype=np.uint8)
    stored[:, :k] = rows + 128
    columns = 4 if thumb1 and 4 * k_padded * 2 <= B8_QUAD_SCRATCH_BYTES else 2
    requant = bounded_requant(requant, requant_arrays, conv_acc_bound(rows, bias))
    params = CStruct("q8_conv_im2col_b8_params", (
        ("input", dims_struct(x.shape)), ("output", dims_struct(y.shape)),
        ("window", window_struct(window)), ("pad_value", x_zp + offset),
        ("k_padded", k_padded), ("columns", columns), ("weights", CRef("weights")),
        ("bias", CRef("bias")), ("requant", requant)))
    arrays = (CArray("weights", "uint8_t", stored.reshape(-1)),
              CArray("bias", "int32_t", folded_bias(bias, rows, x_zp + offset)),
              *requant_arrays)
    function = f"q8_conv_{kernel_suffix(x.dtype)}_im2col_b8_{mode}"
    return KernelCall(function, node.name, (x.name,), (y.name,), params, arrays,
                      (source_of(function),), y.numel * k, scratch_bytes=columns * k_padded * 2)


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


register(OpDef("QLinearConv", "", infer_qlinear_conv, lower_qlinear_conv, versions=(10,),
               constant_inputs=frozenset(range(1, 9)), data_dtypes=INT8_TYPES,
               absorbs_clamp=True, export=export_product(ProductSlots(0, 3, 5, 7))))


# -------------------------------------------------------------------- ConvInteger


def conv_integer_zero_points(node: Node, graph: Graph, x: Tensor,
                             w: NDArray[Any]) -> tuple[int, NDArray[Any]]:
    """x and w zero points of a ConvInteger (absent means 0). ONNX allows one weight zero
    point per output channel; ORT 1.32 refuses those, so `verify` cannot compare them."""
    x_zp, w_zp = 0, np.zeros(1, dtype=w.dtype)
    if node.input(2) is not None:
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
    conv_groups(node, x.shape, w.shape)
    conv_integer_zero_points(node, graph, x, w)
    y_shape = (x.shape[0], w.shape[0], *window.output)
    return Inferred([Tensor(node.outputs[0], "int32", y_shape)])


def lower_conv_integer(node: Node, graph: Graph, spec: object,
        options: LoweringOptions) -> list[KernelCall]:
    x = graph.tensors[node.inputs[0]]
    y = graph.tensors[node.outputs[0]]
    w = constant_input(node, graph, 1, "w")
    x_zp, raw_w_zp = conv_integer_zero_points(node, graph, x, w)
    weights, w_zp = as_int8_weights(w, raw_w_zp)
    arrays = (CArray("weights", "int8_t", weights.reshape(-1)),
              CArray("weight_zero_point", "int32_t", w_zp))
    params = conv_params(x, y, conv_window(node, x.shape, w.shape),
                         conv_groups(node, x.shape, w.shape), x_zp, w_zp, False, no_requant())
    return [KernelCall(f"q8_conv_{kernel_suffix(x.dtype)}_i32", node.name, (x.name,),
                       (y.name,), params, arrays, SOURCES, conv_macs(y, w))]


register(OpDef("ConvInteger", "", infer_conv_integer, lower_conv_integer, versions=(10,),
               constant_inputs=frozenset({1, 2, 3}), data_dtypes=INT8_TYPES))


def build_conv(graph: Graph, node: Node, dqs: list[Quantized | None], y: Quantized,
               integer_only: bool) -> list[str] | None:
    x, w = dqs[0], dqs[1]
    if x is None or w is None or not per_tensor(x, graph) or scale_axis(w, graph) not in (
            None, 0):
        return None
    if not integer_only and dtype_of(graph, y) != dtype_of(graph, x):
        return None  # ORT's QLinearConv produces the input's type
    inputs = [x.q, *qparams(x, graph), w.q, *qparams(w, graph), *qparams(y, graph)]
    if node.input(2) is not None:
        bias = bias_input(graph, node, dqs[2], x, w, integer_only, check_scale=True)
        if bias is None:
            return None
        inputs.append(bias)
    return inputs


def infer_float_conv(node: Node, graph: Graph) -> Inferred:
    x, w = float_input(node, graph, 0, "X"), float_input(node, graph, 1, "W")
    if len(x.shape) not in (3, 4) or len(w.shape) != len(x.shape):
        raise UnsupportedError(f"{node.describe()}: only 1-D and 2-D convolutions are "
                               "supported")
    window = conv_window(node, x.shape, w.shape)
    conv_groups(node, x.shape, w.shape)
    return Inferred([Tensor(node.outputs[0], "float32", (x.shape[0], w.shape[0],
                                                          *window.output))])


ALGORITHMS = {"sgemm": 0, "nchw": 1, "pointwise": 2, "nchwc": 3}


# ORT's NchwcTransformer keeps a convolution's output in its NCHWc layout through these
# activations, fusing them into the convolution (measured on ORT 1.32).
NCHWC_ACTIVATIONS = ("Relu", "Clip", "Sigmoid", "LeakyRelu", "HardSigmoid")


def nchwc_layout(graph: Graph, index: Index, tensor: str) -> bool | None:
    """Whether ORT holds a float tensor in NCHWc layout: True, False, or None where
    onnx2mcu cannot tell."""
    node = index.producer.get(tensor)
    if node is None:
        readers = index.readers.get(tensor, [])
        return None if any(conv_is_nchwc(r, graph) for r in readers) else False
    if node.op_type in ("Conv", "ConvAdd") and conv_is_nchwc(node, graph):
        return True
    if not node.domain and node.op_type in NCHWC_ACTIVATIONS:
        return nchwc_layout(graph, index, node.inputs[0])
    float_inputs = [t for t in node.inputs if t and t not in graph.constants and
                    t in graph.tensors and graph.tensors[t].dtype == "float32"]
    layouts = [nchwc_layout(graph, index, t) for t in float_inputs]
    if not node.domain and node.op_type == "Add" and layouts and all(layouts):
        return True
    return False if all(layout is False for layout in layouts) else None


def check_nchwc_readers(node: Node, graph: Graph) -> None:
    """ORT fuses an Add that alone reads an NCHWc convolution's output into it (the sum
    joins before the bias) when the other addend is NCHWc too; passes/float_fusions.py
    makes such pairs one ConvAdd. An Add left here whose other addend's layout onnx2mcu
    cannot tell is refused. (The pools that read the NCHWc layout follow it:
    ops/average_pool.py.)"""
    index = Index.of(graph)
    readers = index.readers.get(node.outputs[0], [])
    if len(readers) != 1 or readers[0].op_type not in ("Add", "Sum") or readers[0].domain:
        return
    others = [t for t in readers[0].inputs if t and t != node.outputs[0]]
    if not all(nchwc_layout(graph, index, t) is False for t in others):
        raise refuse(node, f"ONNX Runtime fuses the {readers[0].op_type} node "
                     f"'{readers[0].name}' into this convolution of float-initializer weights "
                     "(its NCHWc Sum input, added before the bias), which onnx2mcu does not "
                     "reproduce yet")


def conv_is_nchwc(node: Node, graph: Graph) -> bool:
    """Does ORT run this Conv with an NCHWc kernel (so its output is in that layout)?"""
    if (node.op_type, node.domain) == ("ConvAdd", DOMAIN):
        return True
    if node.op_type != "Conv" or node.domain or node.inputs[0] not in graph.tensors or \
            node.inputs[1] not in graph.tensors:
        return False
    x_shape, w_shape = graph.tensors[node.inputs[0]].shape, graph.tensors[node.inputs[1]].shape
    try:
        return nchwc_algorithm(node, graph, x_shape, w_shape) not in (None, "sgemm")
    except UnsupportedError:
        return False


def float_conv_algorithm(node: Node, graph: Graph, x_shape: tuple[int, ...],
                         w_shape: tuple[int, ...]) -> str:
    """The kernel for this Conv (nchwc_algorithm), refusing what is not reproduced."""
    algorithm = nchwc_algorithm(node, graph, x_shape, w_shape)
    if algorithm is None:
        raise refuse(node, "a grouped convolution of float-initializer weights, which "
                     "ONNX Runtime computes with kernels not reproduced yet; quantize the "
                     "weights (DequantizeLinear of integers)")
    if algorithm != "sgemm" and node.op_type == "Conv":
        check_nchwc_readers(node, graph)
    return algorithm


def nchwc_algorithm(node: Node, graph: Graph, x_shape: tuple[int, ...],
                    w_shape: tuple[int, ...]) -> str | None:
    """Which of ORT's float convolution kernels computes this Conv (measured on ORT
    1.32): its NchwcTransformer takes a 2-D Conv whose weights (and bias, if any) are
    float initializers: with group 1, fewer input channels than the block, the
    NCHW-input kernel; a multiple of 4 input channels, the pointwise kernel (1x1, no
    padding) or the direct NCHWc one; a depthwise convolution of a multiple of 16
    channels, the depthwise kernel. Group 1 on other channel counts, and every Conv on
    dequantized weights, runs MLAS's SGEMM convolution; other grouped convolutions of
    float weights (measured to differ from it) are refused."""
    bias = node.input(2)
    if node.inputs[1] not in graph.constants or len(w_shape) != 4 or (
            bias is not None and bias not in graph.constants):
        return "sgemm"
    groups, channels = conv_groups(node, x_shape, w_shape), x_shape[1]
    filters = w_shape[0]
    window = conv_window(node, x_shape, w_shape)
    pointwise = window.kernel == (1, 1) and not any(window.pads_begin) and \
        not any(window.pads_end)
    if groups > 1:
        if filters % NCHWC_BLOCK or w_shape[1] != 1 or filters != groups:
            return None
        return "nchw"  # the depthwise kernel: each channel alone, as the NCHW one
    if channels < NCHWC_BLOCK:
        return "nchw"
    if channels % 4:
        return "sgemm"
    return "pointwise" if pointwise else "nchwc"


def float_conv_weights(node: Node, graph: Graph) -> NDArray[Any]:
    """Float-initializer weights, or the values of dequantized constants."""
    value = graph.constants.get(node.inputs[1])
    if value is not None:
        check_dtype(node, "weight", value, ("float32",))
        return value
    return dequantized_weights(node, graph, 1, "weight")


def lower_float_conv(node: Node, graph: Graph, spec: object,
        options: LoweringOptions) -> Sequence[
        KernelCall | Alias]:
    x, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    addend = node.input(3) if node.op_type == "ConvAdd" else None
    w = float_conv_weights(node, graph)
    algorithm = float_conv_algorithm(node, graph, x.shape, w.shape)
    window = conv_window(node, x.shape, w.shape)
    if min(window.pads_begin) < 0:
        raise refuse(node, "negative padding (SAME with a kernel smaller than the stride)")
    bias = float_bias(node, graph, 2, "bias") if node.input(2) else None
    pads_end = (0, *window.pads_end) if len(window.pads_end) == 1 else window.pads_end
    arrays = [CArray("weights", "float", w.astype(F32).reshape(-1))]
    if bias is not None:
        arrays.append(CArray("bias", "float", bias.astype(F32).reshape(-1)))
    params = CStruct("q8_conv_f32_params", (
        ("input", dims_struct(x.shape)), ("output", dims_struct(y.shape)),
        ("window", window_struct(window)), ("pad_bottom", pads_end[0]),
        ("pad_right", pads_end[1]), ("groups", conv_groups(node, x.shape, w.shape)),
        ("algorithm", ALGORITHMS[algorithm]),
        ("weights", CRef("weights")), ("bias", CRef("bias") if bias is not None else None)))
    macs = y.numel * int(np.prod(w.shape[1:]))
    if addend is not None:
        return [KernelCall("q8_conv_add_f32", node.name, (x.name, addend), (y.name,), params,
                           tuple(arrays), ("conv_f32.c",), macs)]
    return [KernelCall("q8_conv_f32", node.name, (x.name,), (y.name,), params, tuple(arrays),
                       ("conv_f32.c",), macs)]


# ------------------------------------------------------------------ ConvAdd

# onnx2mcu's own operator (domain ai.onnx2mcu): Conv(X, W, B) + Sum as ORT's NCHWc
# convolution computes it when it fuses the Add that alone reads a convolution of
# float-initializer weights (its fourth, Sum input): the output starts as Sum, each batch
# of input channels is added to it, then the bias. Inputs X, W, B (or ""), Sum.
DOMAIN = "ai.onnx2mcu"


def infer_conv_add(node: Node, graph: Graph) -> Inferred:
    inferred = infer_float_conv(node, graph)
    addend = float_input(node, graph, 3, "Sum")
    if addend.shape != inferred.outputs[0].shape:
        raise ModelError(f"{node.describe()}: Sum has shape {list(addend.shape)}; expected "
                         f"{list(inferred.outputs[0].shape)}")
    return inferred


def export_conv_add(node: Node, w: Writer) -> None:
    """Standard ONNX: the Conv and the Add, which ORT fuses back the same way."""
    product = w.fresh(f"{node.outputs[0]}__conv")
    conv = [name for name in node.inputs[:3] if name]
    w.nodes.append(helper.make_node("Conv", conv, [product], name=w.fresh(f"{node.name}_conv"),
                                    **node.attrs))
    w.nodes.append(helper.make_node("Add", [product, node.inputs[3]], list(node.outputs),
                                    name=node.name))


register(OpDef("ConvAdd", DOMAIN, infer_conv_add, lower_float_conv,
               constant_inputs=frozenset({1, 2}), data_dtypes=FLOAT_TYPES, float_island=True,
               export=export_conv_add))


def conv_unfused_hint(node: Node) -> str:
    if node.input(2):
        return "its bias is not an int32 DequantizeLinear with scale x_scale * w_scale (1%)"
    return GENERIC_UNFUSED


register(OpDef("Conv", "", infer_float_conv, lower_float_conv, versions=(1, 11, 22),
               data_dtypes=FLOAT_TYPES, float_island=True,
               fusion=Fusion("QLinearConv", "", build_conv, dequantized_inputs=2,
                             int8_input_refused_on_x86=True, product=True,
                             unfused_hint=conv_unfused_hint)))
