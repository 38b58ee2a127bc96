"""The depthwise 3x3 kernels (runtime_c/dwconv_3x3*.c over q8_dwconv.h): one 3x3 filter
per channel, weights minus their zero point as int16, the input zero point folded into the
bias. The plain kernel (no padding), the padded one (each channel first copied into a
plane with its border), the two-row one for DSP cores (dwconv_3x3_rows.c), and the band
form of --memory min that copies the plane's rows straight from the bands of the layer
before (QLinearConvGather, dwconv_3x3_gather.c)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from codegen.core.ir import Graph, Node, Tensor
from codegen.core.program import CArray, CInts, CRef, CStruct, KernelCall
from codegen.errors import ModelError

from .. import BAND_DOMAIN, Inferred, LoweringOptions, OpDef, register
from .._common import (
    bounded_requant,
    conv_acc_bound,
    folded_bias,
    kernel_suffix,
    plane_overlap,
)
from .._geometry import Window, dims_struct
from ..clamp import output_range
from ..kernels import kernel
from .spec import ConvSpec, as_int8_weights, conv_requant, infer_qlinear_conv

# The depthwise 3x3 kernels (the kernel table).
DWCONV = kernel("dwconv_3x3")
DWCONV_PADDED = kernel("dwconv_3x3_padded")
DWCONV_ROWS = kernel("dwconv_3x3_rows")
DWCONV_GATHER = kernel("dwconv_3x3_gather")
DWCONV_PIX = kernel("dwconv_3x3_pix")
DWCONV_MVE = kernel("dwconv_3x3_mve")


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
    unsigned bytes; the host takes dwconv_3x3_pix.c at strides 1 and 2, Helium cores
    dwconv_3x3_mve.c. `channels`:
    compute those only (the others read a constant channel, lower_constant_planes); the
    weights, bias and requantization constants are then those channels' alone."""
    c = weights.shape[0]
    centered = weights.reshape(c, 9).astype(np.int64) - np.broadcast_to(
        w_zp.astype(np.int64).reshape(-1, 1), (c, 1))
    wrapped = folded_bias(bias, centered, x_zp)
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
    if options.mve:
        # Helium: four outputs in the lanes, any stride; layers with padding and all of
        # stride 1 read each channel from its padded plane, copied before any output of
        # the channel is written; the others in place.
        axes = {"x": kernel_suffix(x.dtype), "rq": mode}
        return KernelCall(DWCONV_MVE.symbol(**axes), node.name, (x.name,), (y.name,), params,
                          arrays, (DWCONV_MVE.file(**axes),), macs,
                          scratch_bytes=DWCONV_MVE.scratch_bytes(params),
                          overlap=plane_overlap(x, y, mve_copies_plane(x, y, window))
                          if channels is None else None)
    if options.dsp and tuple(window.strides) == (1, 1) and y.shape[2] > 1:
        bands = rows_bands_per_pass(y.shape[2], y.shape[3], plane)
        params = CStruct(params.ctype, tuple((k, bands if k == "bands" else v)
                                             for k, v in params.fields))
        # One pass over all of a channel's bands packs the whole plane before writing.
        whole = 2 * bands >= y.shape[2]
        axes = {"x": kernel_suffix(x.dtype), "rq": mode}
        return KernelCall(DWCONV_ROWS.symbol(**axes), node.name,
                          (x.name,), (y.name,), params, arrays, (DWCONV_ROWS.file(**axes),),
                          macs, scratch_bytes=DWCONV_ROWS.scratch_bytes(params),
                          overlap=plane_overlap(x, y, whole) if channels is None else None)
    if not options.mcu and not options.dsp and set(window.strides) <= {1, 2}:
        # The host's kernel: every channel copied into its padded plane first.
        padded, kernel = True, DWCONV_PIX
    else:
        kernel = DWCONV_PADDED if padded else DWCONV
    axes = {"x": kernel_suffix(x.dtype), "rq": mode}
    return KernelCall(kernel.symbol(**axes), node.name,
                      (x.name,), (y.name,), params, arrays, (kernel.file(**axes),), macs,
                      scratch_bytes=kernel.scratch_bytes(params),
                      overlap=plane_overlap(x, y, padded) if channels is None else None)


def mve_copies_plane(x: Tensor, y: Tensor, window: Window) -> bool:
    """Whether dwconv_3x3_mve.c copies each channel into its padded plane before writing the
    channel's outputs (its `padded`): padding before, a plane larger than the input, or
    stride 1."""
    oh, ow = y.shape[2], y.shape[3]
    sh, sw = window.strides
    return (any(window.pads_begin) or (oh - 1) * sh + 3 > x.shape[2]
            or (ow - 1) * sw + 3 > x.shape[3] or (sh, sw) == (1, 1))


def padded_plane_bytes(y_shape: tuple[int, ...], strides: Sequence[int]) -> int:
    """The plane a padded depthwise 3x3 kernel copies a channel into, border included."""
    return ((y_shape[2] - 1) * strides[0] + 3) * ((y_shape[3] - 1) * strides[1] + 3)


# Scratch the two-row depthwise kernel may take beyond the padded plane of the other one.
ROWS_SCRATCH_BYTES = 1024


def rows_bands_per_pass(oh: int, ow: int, plane_bytes: int) -> int:
    """Bands of two output rows that dwconv_3x3_rows.c fills and runs in one pass: all of
    a channel's where the scratch stays within the padded plane of the other kernel or
    1 KB (narrow planes: DS-CNN's 25 x 5 runs in one pass instead of 13), at least one."""
    band_bytes = (ow + 2) * 8
    return max(1, min((oh + 1) // 2, max(plane_bytes, ROWS_SCRATCH_BYTES) // band_bytes))


# ------------------------------------------------------------------ QLinearConvGather

# A depthwise 3x3 band reading its window's rows straight from the bands of the layer
# before (codegen/transform/bands.py gathers no window buffer for it): QLinearConv's inputs
# with the first band in place of x and the others after B, and the attributes of its
# band plus GATHER_ATTRS: window_rows, and per window row its band (row_source, -1:
# padding) and its row in that band (row_index).
GATHER_ATTRS = ("window_rows", "row_source", "row_index")
GATHER_SOURCES = 3
CONV_INPUTS = 9


def gather_sources(node: Node) -> tuple[str, ...]:
    return (node.inputs[0], *node.inputs[CONV_INPUTS:])


def gathered_band(node: Node, bands: Sequence[str], attrs: dict[str, Any]) -> Node:
    """The band of the depthwise QLinearConv `node` that reads its window's rows from
    `bands` (attrs: the band's own, and GATHER_ATTRS)."""
    conv_inputs = [*node.inputs, *[""] * (CONV_INPUTS - len(node.inputs))]
    inputs = (bands[0], *conv_inputs[1:CONV_INPUTS], *bands[1:])
    return replace(node, op_type="QLinearConvGather", domain=BAND_DOMAIN, inputs=inputs,
                   attrs=attrs)


@dataclass(frozen=True)
class GatherSpec:
    """The depthwise QLinearConv a gathering band computes, on its window."""

    conv: Node
    window: Tensor
    spec: ConvSpec
    row_source: NDArray[Any]  # int8: each window row's band (-1: padding)
    row_index: NDArray[Any]  # int16: its row in that band


def infer_conv_gather(node: Node, graph: Graph) -> Inferred:
    out = graph.tensors.get(node.outputs[0])
    if out is None or len(out.shape) != 4:
        raise ModelError(f"{node.describe()}: a band needs the 4-D shape the banding pass "
                         "gives it")
    band = graph.tensors[gather_sources(node)[0]]
    n, c, _, w = band.shape
    window = Tensor(f"{node.outputs[0]}@window", band.dtype,
                    (n, c, int(node.attrs["window_rows"]), w), band.quant)
    conv = replace(node, op_type="QLinearConv", domain="",
                   inputs=(window.name, *node.inputs[1:CONV_INPUTS]),
                   attrs={k: v for k, v in node.attrs.items() if k not in GATHER_ATTRS})
    spec = infer_qlinear_conv(conv, replace(graph, tensors={**graph.tensors,
                                                            window.name: window})).spec
    assert isinstance(spec, ConvSpec)
    if not is_depthwise_3x3(window, out, spec.window, spec.groups):
        raise ModelError(f"{node.describe()}: a gathered window needs a depthwise 3x3 "
                         "convolution")
    return Inferred([Tensor(out.name, out.dtype, out.shape, out.quant)],
                    spec=GatherSpec(conv, window, spec,
                                    np.asarray(node.attrs["row_source"], np.int8),
                                    np.asarray(node.attrs["row_index"], np.int16)))


def lower_conv_gather(node: Node, graph: Graph, spec: GatherSpec,
                      options: LoweringOptions) -> Sequence[KernelCall]:
    """The depthwise kernel's parameters (those of the padded or plain kernel, which
    the two-row one's are not) inside the gather's, which say where each row is."""
    sources = gather_sources(node)
    conv, window, q = spec.conv, spec.window, spec.spec.quant
    y = graph.tensors[node.outputs[0]]
    weights, w_zp = as_int8_weights(spec.spec.weights, q.w_zp)
    window_graph = replace(graph, tensors={**graph.tensors, window.name: window})
    requant, requant_arrays = conv_requant(
        conv, q, output_range(conv, window_graph, y.dtype), options)
    call = dwconv_3x3_call(conv, window, y, spec.spec.window, q.x_zp, weights, w_zp,
                           spec.spec.bias, requant, requant_arrays, options.requant_suffix,
                           replace(options, dsp=False))
    assert call.params is not None
    rows_of = [graph.tensors[s].shape[2] for s in sources]
    params = CStruct("q8_dwconv_gather_params", (
        ("conv", call.params), ("row_source", CRef("row_source")),
        ("row_index", CRef("row_index")),
        ("source_rows", CInts(tuple(rows_of + [0] * (GATHER_SOURCES - len(rows_of)))))))
    arrays = (*call.arrays,
              CArray("row_source", "int8_t", spec.row_source),
              CArray("row_index", "int16_t", spec.row_index))
    padded_sources = (*sources, *[sources[0]] * (GATHER_SOURCES - len(sources)))
    axes = {"x": kernel_suffix(window.dtype), "rq": options.requant_suffix}
    return [replace(call, function=DWCONV_GATHER.symbol(**axes), inputs=padded_sources,
                    params=params, arrays=arrays, sources=(DWCONV_GATHER.file(**axes),),
                    scratch_bytes=DWCONV_GATHER.scratch_bytes(params), overlap=None)]


register(OpDef("QLinearConvGather", BAND_DOMAIN, infer_conv_gather, lower_conv_gather,
               band_of=("QLinearConv", "")))
