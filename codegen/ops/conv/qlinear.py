"""QLinearConv: 1-D and 2-D, grouped and depthwise, any strides, dilations and pads,
uint8/int8 activations, uint8/int8 weights, per-tensor or per-channel weight scales.

The kernel is chosen here, by named predicates, as CMSIS-NN's convolve wrapper chooses
its variants: a group-1 convolution whose weight zero point is 0 takes the im2col kernels
(ops/conv/im2col.py: the byte, int16- or int8-weight variant for the target), a
depthwise 3x3 one the depthwise kernels (ops/conv/depthwise.py), anything else the
reference loops (runtime_c/qlinear_conv.c), which `--kernels reference` takes for every
layer. Channels a pruned model leaves constant are handled first (ops/conv/channels.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from codegen.core.ir import Graph, Node, Tensor
from codegen.core.program import CArray, KernelCall, Lowered
from codegen.errors import ModelError

from .. import BandRule, LoweringOptions, OpDef, RowAccess, register
from .._common import kernel_suffix
from .._export import ProductSlots, export_product
from .._geometry import conv_groups, conv_window, sliding_window
from ..clamp import output_range
from ..kernels import kernel
from .channels import (
    constant_input_channels,
    constant_plane_classes,
    fold_uniform_inputs,
    lower_constant_planes,
    lower_live_channels,
)
from .depthwise import GATHER_SOURCES, dwconv_3x3_call, gathered_band, is_depthwise_3x3
from .im2col import fast_conv_call
from .spec import (
    INT8_TYPES,
    ConvSpec,
    as_int8_weights,
    conv_macs,
    conv_params,
    conv_requant,
    infer_qlinear_conv,
)

# The reference convolution (the kernel table).
CONV = kernel("conv")


def takes_im2col(spec: ConvSpec, w_zp: NDArray[Any], options: LoweringOptions) -> bool:
    """Group 1 and weight zero point 0: the fast im2col kernels (their folded bias holds
    the input zero point only)."""
    return options.kernels == "fast" and spec.groups == 1 and not np.any(w_zp)


def takes_depthwise_3x3(spec: ConvSpec, x: Tensor, y: Tensor,
                        options: LoweringOptions) -> bool:
    """One 3x3 filter per channel: the depthwise kernels."""
    return options.kernels == "fast" and is_depthwise_3x3(x, y, spec.window, spec.groups)


def lower_qlinear_conv(node: Node, graph: Graph, spec: ConvSpec,
                       options: LoweringOptions) -> list[Lowered]:
    x = graph.tensors[node.inputs[0]]
    y = graph.tensors[node.outputs[0]]
    window, q, bias = spec.window, spec.quant, spec.bias
    weights, w_zp = as_int8_weights(spec.weights, q.w_zp)
    bounds = output_range(node, graph, y.dtype)
    requant, requant_arrays = conv_requant(node, q, bounds, options)
    if takes_im2col(spec, w_zp, options):
        prefix: list[Lowered] = []
        folded = fold_uniform_inputs(node, graph, x, y, window, q.x_zp, weights, bias)
        if folded is not None:
            prefix, x, weights, bias = folded
        live = np.flatnonzero(weights.reshape(weights.shape[0], -1).any(axis=1))
        if 0 < live.size < weights.shape[0]:
            return [*prefix, *lower_live_channels(node, graph, x, y, window, q, weights, bias,
                                                  live, bounds, options)]
        return [*prefix, fast_conv_call(x, y, window, q.x_zp, weights, bias, requant,
                                        requant_arrays, node, options)]
    mode = options.requant_suffix
    if takes_depthwise_3x3(spec, x, y, options):
        constant = constant_input_channels(graph, x)
        if constant is not None:
            classes = constant_plane_classes(x, y, window, q, weights, w_zp, bias, constant,
                                             bounds)
            if classes is not None:
                return lower_constant_planes(node, graph, x, y, window, q, weights, w_zp,
                                             bias, bounds, mode, options, constant, classes)
        return [dwconv_3x3_call(node, x, y, window, q.x_zp, weights, w_zp, bias, requant,
                                requant_arrays, mode, options)]
    arrays = [CArray("weights", "int8_t", weights.reshape(-1)),
              CArray("weight_zero_point", "int32_t", w_zp), *requant_arrays]
    if bias is not None:
        arrays.append(CArray("bias", "int32_t", bias))
    params = conv_params(x, y, window, spec.groups, q.x_zp, w_zp, bias is not None, requant)
    axes = {"x": kernel_suffix(x.dtype), "rq": mode}
    return [KernelCall(CONV.symbol(**axes), node.name, (x.name,), (y.name,), params,
                       tuple(arrays), (CONV.file(**axes),), conv_macs(y, spec.weights))]


SLOTS = ProductSlots(0, 3, 5, 7, bias=8)


def conv_wide_weights(node: Node) -> str | None:
    """Group 1 only: grouped and depthwise kernels have no int16-weight variant."""
    return "conv" if int(node.attrs.get("group", 1)) == 1 else None


# ------------------------------------------------------------------ in row bands

# The input whose zero point pads a convolution's window (x_zero_point).
X_ZERO_POINT = 2


def conv_row_access(node: Node, graph: Graph) -> dict[int, RowAccess] | None:
    """Output row j reads input rows [j * stride - pad, ... + kernel); not with dilation,
    negative padding on W, or where ORT's output height is not the window's."""
    x, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    w = graph.constants.get(node.inputs[3])
    if w is None or w.ndim != 4 or len(node.inputs) < 3:
        return None
    try:
        window = sliding_window(node, x.shape, tuple(w.shape[2:]), is_conv=True)
    except ModelError:
        return None
    if window.dilations != (1, 1) or min(window.pads_begin[1], window.pads_end[1]) < 0 or \
            window.output[0] != y.shape[2]:
        return None
    return {0: RowAccess(window.kernel[0], window.strides[0], window.pads_begin[0])}


def conv_pad_value(node: Node, graph: Graph) -> int:
    return int(graph.constants[node.inputs[X_ZERO_POINT]].reshape(-1)[0])


def conv_band_attrs(node: Node, graph: Graph) -> dict[str, Any]:
    """Explicit pads without those above and below (the band's window holds them)."""
    attrs = dict(node.attrs)
    x = graph.tensors[node.inputs[0]]
    w = graph.constants[node.inputs[3]]
    window = sliding_window(node, x.shape, tuple(w.shape[2:]), is_conv=True)
    attrs.pop("auto_pad", None)
    attrs["pads"] = [0, window.pads_begin[1], 0, window.pads_end[1]]
    return attrs


def reads_bands(node: Node, graph: Graph) -> bool:
    """A depthwise 3x3 convolution: its kernel copies each channel's rows into a padded
    plane anyway, so it can take them from the bands that hold them."""
    x, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    w = graph.constants[node.inputs[3]]
    groups = conv_groups(node, x.shape, w.shape)
    # One channel is a group-1 convolution, which the im2col kernels take.
    return groups > 1 and is_depthwise_3x3(x, y, conv_window(node, x.shape, w.shape), groups)


register(OpDef("QLinearConv", "", infer_qlinear_conv, lower_qlinear_conv, versions=(10,),
               constant_inputs=frozenset(range(1, 9)), data_dtypes=INT8_TYPES,
               absorbs_clamp=True, product=SLOTS, export=export_product(SLOTS),
               wide_weights=conv_wide_weights,
               bands=BandRule((0,), conv_row_access, pad_value=conv_pad_value,
                              band_attrs=conv_band_attrs, gathers=reads_bands,
                              gathered=gathered_band, gathered_sources=GATHER_SOURCES)))
