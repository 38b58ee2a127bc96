"""The group-1 convolution kernels (runtime_c/conv_*_im2col_*.c over q8_im2col.h): the
input gathered into columns of taps, multiplied by weight rows laid out for the target.
int8 weights (the default), int16 weights in pairs for the DSP extension (w16) or with
output pixels in the vector lanes on the host (w16p), unsigned bytes for cores without DSP
(b8). The slab mode gathers a chunk of output pixels' columns at once."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from codegen.core.ir import Node, Tensor, itemsize
from codegen.core.program import CArray, CRef, CStruct, KernelCall, Overlap

from .. import LoweringOptions
from .._common import bounded_requant, conv_acc_bound, folded_bias, kernel_suffix
from .._geometry import Window, dims_struct, window_struct
from ..kernels import field, flat_band_bytes, kernel

# The im2col kernels (the kernel table): one function per runtime file, named after it,
# so a project compiles only the variants it calls (each instantiates the whole kernel).
CONV_IM2COL = kernel("conv_im2col")
CONV_IM2COL_W16 = kernel("conv_im2col_w16")
CONV_IM2COL_B8 = kernel("conv_im2col_b8")
CONV_IM2COL_W16P = kernel("conv_im2col_w16p")
CONV_IM2COL_MVE = kernel("conv_im2col_mve")
CONV_IM2COL_RV = kernel("conv_im2col_rv")

# The _w16p_ kernel sums a row's products in int32 from zero (conv_*_im2col_w16p_*.c,
# q8_im2col_pix.h). |w * x| <= 128 * 255 = 32640 (weights int8 after the uint8 shift, inputs
# uint8 or int8), so K < 2^16 keeps |sum| <= 65535 * 32640 < 2^31: no signed overflow.
# Larger layers take the int8 im2col kernel, which accumulates modulo 2^32.
W16_MAX_TAPS = 2**16


def fast_conv_call(x: Tensor, y: Tensor, window: Window, x_zp: int, weights: NDArray[Any],
                   bias: NDArray[Any] | None, requant: CStruct, requant_arrays: list[CArray],
                   node: Node, options: LoweringOptions) -> KernelCall:
    """The fast group-1 convolution for the target: the byte kernel on cores without DSP
    (both the compact and the fast one there), int16 weights where chosen, else int8."""
    mode = options.requant_suffix
    if options.riscv:
        call = im2col_rv_call(node, x, y, window, x_zp, weights, bias, requant,
                              requant_arrays, mode)
    elif options.mcu and not options.dsp:
        call = im2col_b8_call(node, x, y, window, x_zp, weights, bias, requant,
                              requant_arrays, mode, options.thumb1)
    elif options.mve and not options.wide_for(node.name):
        call = im2col_mve_call(node, x, y, window, x_zp, weights, bias, requant,
                               requant_arrays, mode)
    elif (options.wide_for(node.name) and weights[0].size < W16_MAX_TAPS
          and not options.mcu and not options.dsp):
        call = im2col_w16p_call(node, x, y, window, x_zp, weights, bias, requant,
                                requant_arrays, mode)
    elif options.wide_for(node.name) and weights[0].size < W16_MAX_TAPS:
        call = im2col_w16_call(node, x, y, window, x_zp, weights, bias, requant,
                               requant_arrays, mode)
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


# Scratch the slab mode may take beyond the two columns of the classic im2col.
SLAB_SCRATCH_BYTES = 1024


def slab_buffer_taps(chunk: int, stride_w: int, kernel_w: int, slab: int,
                     k_padded: int) -> int:
    """q8_im2col_fill.h's q8_slab_buffer_taps: the chunk's slabs and the last column's padding."""
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
    wrapped = np.zeros(m_padded, np.int32)
    wrapped[:m] = folded_bias(bias, rows, x_zp)
    requant = bounded_requant(requant, requant_arrays, conv_acc_bound(rows, bias))
    params = CStruct("q8_conv_im2col_params", (
        ("input", dims_struct(x.shape)), ("output", dims_struct(y.shape)),
        ("window", window_struct(window)), ("pad_value", x_zp), ("k_padded", k_padded),
        ("weights", CRef("weights", "v")), ("bias", CRef("bias")), ("requant", requant),
        ("slab", slabs[0] if slabs else 0), ("chunk", slabs[1] if slabs else 0),
        ("band", 0)))
    # 8-byte aligned: the kernel reads a pair of rows' words with one LDRD.
    arrays = (CArray("weights", "int8_t", padded.reshape(-1), aligned8=True),
              CArray("bias", "int32_t", wrapped), *requant_arrays)
    kernel, axes = CONV_IM2COL, {"x": kernel_suffix(x.dtype), "rq": mode}
    return KernelCall(kernel.symbol(**axes), node.name, (x.name,), (y.name,), params, arrays,
                      (kernel.file(**axes),), y.numel * k,
                      scratch_bytes=kernel.scratch_bytes(params))


# The Helium kernel's slab buffer: a whole output row's slabs where they take at most this,
# else fewer pixels a fill.
MVE_SLAB_BYTES = 4096


def mve_slab_bytes(chunk: int, stride_w: int, kernel_w: int, slab: int, k_padded: int) -> int:
    """q8_api_conv.h's q8_conv_im2col_mve_scratch_bytes in slab mode."""
    return ((chunk - 1) * stride_w + kernel_w) * slab + (k_padded - kernel_w * slab) + 16


def mve_slab_layout(x: Tensor, y: Tensor, window: Window,
                    k_padded: int) -> tuple[int, int] | None:
    """(slab, chunk) for the Helium kernel's slab mode (q8_im2col_mve.h), or None: 2-D
    layers with a kernel at least two taps wide and dilation 1 across; slab = C * KH taps
    (its scatters take eight slabs of 16-bit offsets); chunk = the output row, or as many
    of its pixels as MVE_SLAB_BYTES (or the two columns of the column mode) hold."""
    if len(window.kernel) != 2 or window.kernel[1] < 2 or window.dilations[1] != 1:
        return None
    kh, kw, sw = window.kernel[0], window.kernel[1], window.strides[1]
    slab = x.shape[1] * kh
    if 8 * slab > 0xFFFF:
        return None
    budget = max(MVE_SLAB_BYTES, 2 * (k_padded + 16))
    chunk = y.shape[3]
    while chunk > 1 and mve_slab_bytes(chunk, sw, kw, slab, k_padded) > budget:
        chunk -= 1
    return slab, chunk


def im2col_mve_call(node: Node, x: Tensor, y: Tensor, window: Window, x_zp: int,
                    weights: NDArray[Any], bias: NDArray[Any] | None, requant: CStruct,
                    requant_arrays: list[CArray], mode: str) -> KernelCall:
    """The Helium path (conv_*_im2col_mve_*.c, q8_im2col_mve.h): int8 rows of k taps padded
    to 16 (in slab order where the slab mode applies), in fours (zero rows to a multiple of
    4) interleaved per 16 taps; the columns are int8, so a uint8 input's taps and pad are
    less 128, and the bias folds that pad."""
    m = weights.shape[0]
    rows = weights.reshape(m, -1).astype(np.int64)
    k = rows.shape[1]
    k_padded, m_padded = (k + 15) // 16 * 16, (m + 3) // 4 * 4
    slabs = mve_slab_layout(x, y, window, k_padded)
    stored = (slab_order(rows, x.shape[1], (window.kernel[0], window.kernel[1]), slabs[0])
              if slabs else rows)
    padded = np.zeros((m_padded, k_padded), dtype=np.int8)
    padded[:m, :k] = stored
    blocks = padded.reshape(m_padded // 4, 4, k_padded // 16, 16).transpose(0, 2, 1, 3)
    pad = x_zp if x.dtype == "int8" else x_zp - 128
    wrapped = np.zeros(m_padded, np.int32)
    wrapped[:m] = folded_bias(bias, rows, pad)
    requant = bounded_requant(requant, requant_arrays, conv_acc_bound(rows, bias))
    scales = np.zeros(m_padded, np.float32)
    found = {a.name: a.values for a in requant_arrays}
    if "scale" in found:
        scales[:m] = np.broadcast_to(np.asarray(found["scale"], np.float32).reshape(-1), (m,))
    stream = mve_weight_stream(np.ascontiguousarray(blocks).reshape(m_padded // 4, -1),
                               wrapped, scales)
    params = CStruct("q8_conv_im2col_params", (
        ("input", dims_struct(x.shape)), ("output", dims_struct(y.shape)),
        ("window", window_struct(window)), ("pad_value", pad), ("k_padded", k_padded),
        ("weights", CRef("weights", "v")), ("bias", CRef("bias")), ("requant", requant),
        ("slab", slabs[0] if slabs else 0), ("chunk", slabs[1] if slabs else 0), ("band", 0)))
    arrays = (CArray("weights", "int8_t", stream, aligned8=True),
              CArray("bias", "int32_t", wrapped), *requant_arrays)
    kernel, axes = CONV_IM2COL_MVE, {"x": kernel_suffix(x.dtype), "rq": mode}
    return KernelCall(kernel.symbol(**axes), node.name, (x.name,), (y.name,), params, arrays,
                      (kernel.file(**axes),), y.numel * k,
                      scratch_bytes=kernel.scratch_bytes(params))


MVE_HEAD_BYTES = 48  # q8_im2col_mve.h's Q8_MVE_HEAD_BYTES


def mve_weight_stream(blocks: NDArray[Any], bias: NDArray[Any],
                      scales: NDArray[Any]) -> NDArray[Any]:
    """The Helium weight stream: each block of four rows (`blocks`, one row of bytes per
    block) after its head, the block's four biases twice (one per accumulator of the
    4 x 2 block) and its four float32 scales, little-endian as the core reads them."""
    count = blocks.shape[0]
    heads = np.zeros((count, MVE_HEAD_BYTES), np.uint8)
    four = bias.astype("<i4").reshape(count, 4)
    heads[:, :32] = np.concatenate([four, four], axis=1).view(np.uint8)
    heads[:, 32:] = scales.astype("<f4").reshape(count, 4).view(np.uint8)
    stream: NDArray[Any] = np.concatenate([heads.view(np.int8), blocks.astype(np.int8)],
                                          axis=1).reshape(-1)
    return stream


def im2col_w16_call(node: Node, x: Tensor, y: Tensor, window: Window, x_zp: int,
                    weights: NDArray[Any], bias: NDArray[Any] | None, requant: CStruct,
                    requant_arrays: list[CArray], mode: str) -> KernelCall:
    """The im2col path with wide weights for the DSP (conv_*_im2col_w16_*.c): int16
    rows of k taps padded to a multiple of 8, output channels padded to an even count with
    zero rows, 8-byte aligned; each pair of rows interleaved per two taps."""
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
    group = 2
    # [pair][row in pair][group][taps] -> [pair][group][row in pair][taps]
    interleaved = padded.reshape(m_even // 2, 2, k_padded // group, group).transpose(0, 2, 1, 3)
    bias_even = np.zeros(m_even, np.int32)
    bias_even[:m] = folded_bias(bias, rows, x_zp)
    requant = bounded_requant(requant, requant_arrays, conv_acc_bound(rows, bias))
    params = CStruct("q8_conv_im2col_params", (
        ("input", dims_struct(x.shape)), ("output", dims_struct(y.shape)),
        ("window", window_struct(window)), ("pad_value", x_zp), ("k_padded", k_padded),
        ("weights", CRef("weights", "v")), ("bias", CRef("bias")), ("requant", requant),
        ("slab", slabs[0] if slabs else 0), ("chunk", slabs[1] if slabs else 0),
        ("band", 0)))
    arrays = (CArray("weights", "int16_t", interleaved.reshape(-1), aligned8=True),
              CArray("bias", "int32_t", bias_even), *requant_arrays)
    kernel = CONV_IM2COL_W16
    axes = {"x": kernel_suffix(x.dtype), "rq": mode}
    return KernelCall(kernel.symbol(**axes), node.name, (x.name,), (y.name,), params, arrays,
                      (kernel.file(**axes),), y.numel * k,
                      scratch_bytes=kernel.scratch_bytes(params))


# Output pixels per tile of the host's kernel (q8_im2col_pix.h Q8_PIX_TILE).
PIXEL_TILE = 32
# The scratch a flat band may take (q8_im2col_pix.h): a band's input rows as int16 channel
# pairs, within a core's L2 cache; a band of one output row takes more where it must.
FLAT_BAND_BYTES = 128 * 1024


def flat_band(x: Tensor, y: Tensor, window: Window) -> int:
    """Output rows per flat band of the host's kernel, or 0 for gathered tiles: flat bands
    read every tap of a run of output pixels from one converted copy of the input's rows,
    which needs stride 1, dilation 1 and no negative padding, and pays off where a tile
    would gather several taps per input value (not a 1x1 window without padding)."""
    geometry, out = window_struct(window), dims_struct(y.shape)
    kernel_h, kernel_w = field(geometry, "kernel_h"), field(geometry, "kernel_w")
    if (any(s != 1 for s in window.strides) or any(d != 1 for d in window.dilations)
            or any(p < 0 for p in (*window.pads_begin, *window.pads_end))
            or (kernel_h * kernel_w == 1 and not any(window.pads_begin))):
        return 0
    padded_w = field(out, "w") + kernel_w - 1
    band = field(out, "h")
    while band > 1 and flat_band_bytes(x.shape[1], kernel_h, padded_w, band,
                                       PIXEL_TILE) > FLAT_BAND_BYTES:
        band = (band + 1) // 2
    return band


def im2col_w16p_call(node: Node, x: Tensor, y: Tensor, window: Window, x_zp: int,
                     weights: NDArray[Any], bias: NDArray[Any] | None, requant: CStruct,
                     requant_arrays: list[CArray], mode: str) -> KernelCall:
    """The host's convolution (conv_*_im2col_w16p_*.c): output pixels in the vector lanes,
    int16 weight rows in (window position, channel) order with the channels padded to an
    even count (the kernel broadcasts a pair of channels' weights), the input zero point
    folded into the bias."""
    m, channels = weights.shape[0], x.shape[1]
    rows = weights.reshape(m, -1).astype(np.int64)
    k = rows.shape[1]
    # Taps in (window position, channel) order, channels padded to even: a pair of taps
    # is two channels at one position, which the kernel gathers side by side.
    positions = k // channels
    even = channels + channels % 2
    k_padded = positions * even
    padded = np.zeros((m, positions, even), dtype=np.int16)
    padded[:, :, :channels] = rows.reshape(m, channels, positions).transpose(0, 2, 1)
    requant = bounded_requant(requant, requant_arrays, conv_acc_bound(rows, bias))
    params = CStruct("q8_conv_im2col_params", (
        ("input", dims_struct(x.shape)), ("output", dims_struct(y.shape)),
        ("window", window_struct(window)), ("pad_value", x_zp), ("k_padded", k_padded),
        ("weights", CRef("weights", "v")), ("bias", CRef("bias")), ("requant", requant),
        ("slab", 0), ("chunk", PIXEL_TILE), ("band", flat_band(x, y, window))))
    arrays = (CArray("weights", "int16_t", padded.reshape(-1), aligned8=True),
              CArray("bias", "int32_t", folded_bias(bias, rows, x_zp).astype(np.int32)),
              *requant_arrays)
    axes = {"x": kernel_suffix(x.dtype), "rq": mode}
    return KernelCall(CONV_IM2COL_W16P.symbol(**axes), node.name, (x.name,), (y.name,), params,
                      arrays, (CONV_IM2COL_W16P.file(**axes),), y.numel * k,
                      scratch_bytes=CONV_IM2COL_W16P.scratch_bytes(params))


# The scratch (four int16 columns) a Thumb-1 convolution takes for four pixels per pass
# at least: columns up to 256 taps (a 3 x 3 window over 28 channels). Beyond it, up to
# the bytes of the layer's own input and output, which the arena holds at that step
# anyway: ResNet-8's 3 x 3 layers over 32 and 64 channels (288 and 576 taps) take four
# pixels too, 82.2 M -> 77.5 M estimated cycles on cortex-m0plus, its arena unchanged.
B8_QUAD_SCRATCH_BYTES = 2048


def quad_columns_fit(k_padded: int, x: Tensor, y: Tensor) -> bool:
    """Do four int16 columns of k_padded taps fit the scratch a layer may take?"""
    own = x.numel * itemsize(x.dtype) + y.numel * itemsize(y.dtype)
    return 4 * k_padded * 2 <= max(B8_QUAD_SCRATCH_BYTES, own)


def im2col_rv_call(node: Node, x: Tensor, y: Tensor, window: Window, x_zp: int,
                   weights: NDArray[Any], bias: NDArray[Any] | None, requant: CStruct,
                   requant_arrays: list[CArray], mode: str) -> KernelCall:
    """The RV32IM path (conv_*_im2col_rv_*.c): int8 weights in groups of four rows
    interleaved per tap, [ceil(M/4)][k_padded][4] (padding taps and rows 0), the bias with
    x_zp * sum(w) taken out; a 1x1 layer with stride 1, no padding and C a multiple of 4
    is read in place (direct), any other gathered into four pixels' columns."""
    m = weights.shape[0]
    rows = weights.reshape(m, -1).astype(np.int64)
    k = rows.shape[1]
    k_padded = (k + 3) // 4 * 4
    groups = (m + 3) // 4
    stored = np.zeros((groups * 4, k_padded), dtype=np.int8)
    stored[:m, :k] = rows
    interleaved = stored.reshape(groups, 4, k_padded).transpose(0, 2, 1)
    bias_stored = np.zeros(groups * 4, dtype=np.int32)
    bias_stored[:m] = folded_bias(bias, rows, x_zp)
    direct = (tuple(window.kernel) == (1, 1) and tuple(window.strides) == (1, 1)
              and not any(window.pads_begin) and not any(window.pads_end)
              and x.shape[1] % 4 == 0)
    requant = bounded_requant(requant, requant_arrays, conv_acc_bound(rows, bias))
    found = {a.name: a.values for a in requant_arrays}
    ints = rv_int_requant(found["mult"], found["exp"]) if mode == "ireq" else None
    params = CStruct("q8_conv_im2col_rv_params", (
        ("input", dims_struct(x.shape)), ("output", dims_struct(y.shape)),
        ("window", window_struct(window)), ("pad_value", x_zp), ("k_padded", k_padded),
        ("direct", int(direct)), ("weights", CRef("weights")), ("bias", CRef("bias")),
        ("ints", CRef("ints") if ints is not None else None), ("requant", requant)))
    arrays = (CArray("weights", "int8_t", interleaved.reshape(-1)),
              CArray("bias", "int32_t", bias_stored),
              *((CArray("ints", "uint32_t", ints),) if ints is not None else ()),
              *requant_arrays)
    kernel, axes = CONV_IM2COL_RV, {"x": kernel_suffix(x.dtype), "rq": mode}
    return KernelCall(kernel.symbol(**axes), node.name, (x.name,), (y.name,), params, arrays,
                      (kernel.file(**axes),), y.numel * k,
                      scratch_bytes=kernel.scratch_bytes(params))


def rv_int_requant(mult: NDArray[Any], exp: NDArray[Any]) -> NDArray[Any]:
    """Each channel's constants of the RV32 integer requantization (q8_requant_rv.h),
    [channels][4]: |mult| << 8, the accumulator limit of the product path (0: none), and
    the shifts ja and r, so the kernel reads them instead of deriving them per block."""
    out = np.zeros((len(mult), 4), dtype=np.uint32)
    for i, (m, e) in enumerate(zip(mult.astype(np.int64), exp.astype(np.int64), strict=True)):
        sh = int(-e - 20) if -62 <= e <= -21 else 0
        limit = 0 if sh == 0 or m < 0 else 1 << (7 + sh if sh < 12 else 19)
        out[i] = ((abs(int(m)) << 8) & 0xFFFFFFFF, limit, 0 if sh >= 24 else 24 - sh,
                  sh - 24 if sh >= 24 else 0)
    return out.reshape(-1)


def im2col_b8_call(node: Node, x: Tensor, y: Tensor, window: Window, x_zp: int,
                   weights: NDArray[Any], bias: NDArray[Any] | None, requant: CStruct,
                   requant_arrays: list[CArray], mode: str, thumb1: bool = False
                   ) -> KernelCall:
    """The unsigned-byte im2col path for cores without DSP (conv_*_im2col_b8_*.c):
    weights stored as w + 128 (uint8; padding taps 0), row by row; the columns hold
    x + 128 for int8 inputs, and the bias takes
    (x_zp + 128 or x_zp) * sum(w) out (see the kernel). Thumb-1 cores take four pixels
    per pass where their columns fit (quad_columns_fit), else two."""
    m = weights.shape[0]
    rows = weights.reshape(m, -1).astype(np.int64)
    k = rows.shape[1]
    k_padded = (k + 7) // 8 * 8
    offset = 128 if x.dtype == "int8" else 0
    stored = np.zeros((m, k_padded), dtype=np.uint8)
    stored[:, :k] = rows + 128
    columns = 4 if thumb1 and quad_columns_fit(k_padded, x, y) else 2
    requant = bounded_requant(requant, requant_arrays, conv_acc_bound(rows, bias))
    params = CStruct("q8_conv_im2col_b8_params", (
        ("input", dims_struct(x.shape)), ("output", dims_struct(y.shape)),
        ("window", window_struct(window)), ("pad_value", x_zp + offset),
        ("k_padded", k_padded), ("columns", columns), ("weights", CRef("weights")),
        ("bias", CRef("bias")), ("requant", requant)))
    arrays = (CArray("weights", "uint8_t", stored.reshape(-1)),
              CArray("bias", "int32_t", folded_bias(bias, rows, x_zp + offset)),
              *requant_arrays)
    kernel, axes = CONV_IM2COL_B8, {"x": kernel_suffix(x.dtype), "rq": mode}
    return KernelCall(kernel.symbol(**axes), node.name, (x.name,), (y.name,), params, arrays,
                      (kernel.file(**axes),), y.numel * k,
                      scratch_bytes=kernel.scratch_bytes(params))
