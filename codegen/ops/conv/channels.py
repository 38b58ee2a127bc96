"""The channels pruned models leave constant (the official VWW model has 971 dead
pointwise channels): a convolution runs on its live output channels only and fills the
dead ones with their constant byte; a depthwise layer over constant channels writes their
planes from 9 class bytes each; a pointwise layer takes channels that hold one value
everywhere into its bias. Exact: each constant is what ORT computes for it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from codegen.arith.requant import output_scale, requantize_float_reference
from codegen.core.ir import Graph, Node, Tensor
from codegen.core.program import CArray, CRef, CStruct, Intermediate, KernelCall, Lowered

from .. import LoweringOptions
from .._common import requant_params
from .._geometry import Window
from ..clamp import output_range
from .depthwise import dwconv_3x3_call, is_depthwise_3x3
from .im2col import fast_conv_call
from .spec import ConvQuant, ConvSpec, as_int8_weights, infer_qlinear_conv


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


def conv_producer(graph: Graph, x: Tensor) -> tuple[Node, Tensor, ConvSpec] | None:
    """The 2-D QLinearConv with constant weights whose first output is x: (the node, its
    input, its spec), or None."""
    producer = graph.producer(x.name)
    if (producer is None or producer.op_type != "QLinearConv" or
            producer.domain not in ("", "ai.onnx") or producer.outputs[0] != x.name):
        return None
    x_in = graph.tensors[producer.inputs[0]]
    w = graph.constants.get(producer.inputs[3])
    if w is None or len(x_in.shape) != 4 or len(w.shape) != 4:
        return None
    spec = infer_qlinear_conv(producer, graph).spec
    assert isinstance(spec, ConvSpec)
    return producer, x_in, spec


def constant_input_channels(graph: Graph, x: Tensor) -> ConstantChannels | None:
    """The channels of x that are constant planes, or None: x is the output of a group-1
    QLinearConv whose dead weight rows (all zero, zero point 0) leave each such channel
    at its requantized bias, as ORT computes it."""
    found = conv_producer(graph, x)
    if found is None:
        return None
    producer, _, spec = found
    if spec.groups != 1:
        return None
    q = spec.quant
    weights, w_zp = as_int8_weights(spec.weights, q.w_zp)
    m = weights.shape[0]
    dead = ~weights.reshape(m, -1).any(axis=1)
    if np.any(w_zp) or not dead.any():
        return None
    bias = (np.broadcast_to(spec.bias.astype(np.int64).reshape(-1), (m,))
            if spec.bias is not None else np.zeros(m, np.int64))
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
    producer, x_in, spec = found
    if not is_depthwise_3x3(x_in, x, spec.window, spec.groups):
        return None
    constant = constant_input_channels(graph, x_in)
    if constant is None:
        return None
    weights, w_zp = as_int8_weights(spec.weights, spec.quant.w_zp)
    classes = constant_plane_classes(x_in, x, spec.window, spec.quant, weights, w_zp,
                                     spec.bias, constant,
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
