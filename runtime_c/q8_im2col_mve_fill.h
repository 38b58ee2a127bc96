/*
 * q8_im2col_mve_fill.h - the columns and slabs of the Helium im2col convolution
 * (q8_im2col_mve.h): a pixel's window gathered into int8 taps a word per window row (both
 * pixels of a pair from one word, pointwise pairs by gathers), or in slab mode each input
 * row scattered into the slabs a row's pixels share.
 */
#ifndef Q8_IM2COL_MVE_FILL_H
#define Q8_IM2COL_MVE_FILL_H

#include <string.h>

#include "q8_arith.h"
#include "q8_dsp.h"
#include "q8_runtime.h"
#include "q8_window.h"

/* Bytes after each column that the word stores of the fills may run into. */
#define Q8_MVE_COLUMN_SLACK 16

/* The column of output pixel (oh, ow) as int8: x (int8 input) or x ^ 0x80 (uint8), the pad
 * byte outside the input. The taps past k meet zero weights: they are zeroed once per call,
 * and the word stores of narrow windows may leave input bytes there. */
Q8_INLINE void q8_fill_column_i8(const q8_dims *input, const q8_window *win, int8_t pad,
                              const uint8_t *x, int32_t oh, int32_t ow, int8_t *column,
                              uint8_t flip)
{
    const int32_t C = input->c, H = input->h, W = input->w;
    const int32_t KH = win->kernel_h, KW = win->kernel_w;
    const int32_t dh = win->dilation_h, dw = win->dilation_w;
    const int32_t ih0 = oh * win->stride_h - win->pad_top;
    const int32_t iw0 = ow * win->stride_w - win->pad_left;
    const size_t plane = (size_t)(H * W);
    int8_t *out = column;
    int32_t c, kh, kw;
    if (ih0 >= 0 && iw0 >= 0 && ih0 + (KH - 1) * dh < H && iw0 + (KW - 1) * dw < W) {
        const uint8_t *base = x + (size_t)ih0 * (size_t)W + (size_t)iw0;
        if (KH * KW == 1) { /* pointwise: a byte per channel, a plane apart */
            for (c = 0; c < C; c++) {
                out[c] = (int8_t)(base[(size_t)c * plane] ^ flip);
            }
            return;
        }
        if (KW <= 3 && dw == 1 && (iw0 + 3 < W || (iw0 >= 1 && iw0 + 2 < W))) {
            /* a word per (c, kh), KW bytes on; the bytes past the window land on the next
             * row's taps or past the last tap (Q8_MVE_COLUMN_SLACK). At the right edge the
             * word starts a byte early and is shifted down; it never reads past the row. */
            const uint32_t flip4 = flip * 0x01010101u;
            const int early = iw0 + 3 >= W;
            const uint8_t *first = early ? base - 1 : base;
            const uint32_t shift = early ? 8u : 0u;
            if (KH == 3) { /* a channel's three rows at once */
                const size_t step = (size_t)dh * (size_t)W;
                for (c = 0; c < C; c++) {
                    const uint8_t *row = first + (size_t)c * plane;
                    q8_store32(out, (q8_load32(row) >> shift) ^ flip4);
                    q8_store32(out + KW, (q8_load32(row + step) >> shift) ^ flip4);
                    q8_store32(out + 2 * KW, (q8_load32(row + 2 * step) >> shift) ^ flip4);
                    out += 3 * KW;
                }
                return;
            }
            for (c = 0; c < C; c++) {
                const uint8_t *row = first + (size_t)c * plane;
                for (kh = 0; kh < KH; kh++) {
                    q8_store32(out, (q8_load32(row) >> shift) ^ flip4);
                    out += KW;
                    row += (size_t)dh * (size_t)W;
                }
            }
            return;
        }
        for (c = 0; c < C; c++) {
            const uint8_t *row = base + (size_t)c * plane;
            for (kh = 0; kh < KH; kh++) {
                for (kw = 0; kw < KW; kw++) {
                    *out++ = (int8_t)(row[kw * dw] ^ flip);
                }
                row += (size_t)dh * (size_t)W;
            }
        }
        return;
    }
    if (KW == 3 && dw == 1 && W >= 4 && iw0 >= -1 && iw0 + 2 <= W) {
        /* A 3-wide window over the border, at most one tap off the row on either side: a
         * word per (c, kh) as above, the row's first or last four bytes shifted into
         * place and the pad byte put in; rows outside the input are pad words. */
        const uint32_t flip4 = (uint32_t)flip * 0x01010101u;
        const uint32_t pad_byte = (uint8_t)pad, pad4 = pad_byte * 0x01010101u;
        const int left = iw0 < 0, right = iw0 + 2 == W;
        const int32_t at = left ? 0 : right ? W - 4 : iw0 + 3 < W ? iw0 : iw0 - 1;
        const uint32_t down = right ? 16u : (!left && iw0 + 3 >= W) ? 8u : 0u;
        const uint32_t up = left ? 8u : 0u;
        const uint32_t fill = left ? pad_byte : right ? pad_byte << 16 : 0u;
        if (KH == 3) {
            /* Each of the three rows from the input or, outside it, from a word of pad
             * bytes (as the input would hold them) that stays put from channel to channel. */
            uint8_t pads[4];
            const uint8_t *src[3];
            size_t step[3];
            memset(pads, (uint8_t)(pad_byte ^ flip), sizeof pads);
            for (kh = 0; kh < 3; kh++) {
                const int32_t ih = ih0 + kh * dh;
                const int inside = ih >= 0 && ih < H;
                src[kh] = inside ? x + (size_t)ih * (size_t)W + (size_t)at : pads;
                step[kh] = inside ? plane : 0u;
            }
            for (c = 0; c < C; c++) {
                q8_store32(out, (((q8_load32(src[0]) ^ flip4) >> down) << up) | fill);
                q8_store32(out + 3, (((q8_load32(src[1]) ^ flip4) >> down) << up) | fill);
                q8_store32(out + 6, (((q8_load32(src[2]) ^ flip4) >> down) << up) | fill);
                src[0] += step[0];
                src[1] += step[1];
                src[2] += step[2];
                out += 9;
            }
            return;
        }
        for (c = 0; c < C; c++) {
            const uint8_t *x_c = x + (size_t)c * plane;
            for (kh = 0; kh < KH; kh++) {
                const int32_t ih = ih0 + kh * dh;
                uint32_t v = pad4;
                if (ih >= 0 && ih < H) {
                    v = (((q8_load32(x_c + (size_t)ih * (size_t)W + (size_t)at) ^ flip4) >> down)
                         << up) | fill;
                }
                q8_store32(out, v);
                out += 3;
            }
        }
        return;
    }
    {
        /* Over the border: the taps kw_lo .. kw_hi - 1 of a row lie inside the input, the
         * same on every row; rows outside are all pad. */
        int32_t kw_lo = 0, kw_hi = KW;
        while (kw_lo < KW && iw0 + kw_lo * dw < 0) {
            kw_lo++;
        }
        while (kw_hi > kw_lo && iw0 + (kw_hi - 1) * dw >= W) {
            kw_hi--;
        }
        for (c = 0; c < C; c++) {
            const uint8_t *x_c = x + (size_t)c * plane;
            for (kh = 0; kh < KH; kh++) {
                const int32_t ih = ih0 + kh * dh;
                if (ih < 0 || ih >= H) {
                    for (kw = 0; kw < KW; kw++) {
                        out[kw] = pad;
                    }
                } else {
                    const uint8_t *row = x_c + (size_t)ih * (size_t)W;
                    for (kw = 0; kw < kw_lo; kw++) {
                        out[kw] = pad;
                    }
                    for (; kw < kw_hi; kw++) {
                        out[kw] = (int8_t)(row[iw0 + kw * dw] ^ flip);
                    }
                    for (; kw < KW; kw++) {
                        out[kw] = pad;
                    }
                }
                out += KW;
            }
        }
    }
}

/*
 * Both columns of output pixels (oh, ow) and (oh, ow + 1) of a layer with stride 1 and
 * dilation 1 across and a kernel at most 3 taps wide, both windows inside the input and a
 * tap to spare on the right: per (c, kh) one word of the input row holds both windows'
 * taps (bytes 0..KW-1 and 1..KW). Each column takes the whole word, KW bytes on: the
 * byte(s) past a window land on the next row's taps, written next, or past the last tap,
 * where the weights are zero (the columns are Q8_MVE_COLUMN_SLACK bytes apart for that).
 */
Q8_INLINE void q8_fill_pair_i8_narrow(const q8_dims *input, const q8_window *win,
                                   const uint8_t *base, int8_t *col0, int8_t *col1,
                                   uint32_t flip)
{
    const int32_t C = input->c, KH = win->kernel_h, KW = win->kernel_w;
    const size_t plane = (size_t)(input->h * input->w);
    const size_t row_step = (size_t)win->dilation_h * (size_t)input->w;
    int32_t c, kh;
#if Q8_HAS_MVE
    if (KH == 1 && KW == 1 && plane <= 65535u / 8u) {
        /* Pointwise: eight channels of each pixel a gather (byte offsets a plane apart,
         * as 16-bit lanes), stored by their low bytes. */
        const uint16x8_t offsets = vmulq_n_u16(vidupq_n_u16(0u, 1), (uint16_t)plane);
        const uint16x8_t flips = vdupq_n_u16((uint16_t)(flip & 0xFFu));
        for (c = 0; c < C; c += 8) {
            const mve_pred16_t lanes = vctp16q((uint32_t)(C - c));
            const uint8_t *at = base + (size_t)c * plane;
            vstrbq_p_u16((uint8_t *)col0 + c,
                         veorq_u16(vldrbq_gather_offset_z_u16(at, offsets, lanes), flips),
                         lanes);
            vstrbq_p_u16((uint8_t *)col1 + c,
                         veorq_u16(vldrbq_gather_offset_z_u16(at + 1, offsets, lanes), flips),
                         lanes);
        }
        return;
    }
#endif
    if (KH == 3 && KW == 3) { /* the common 3x3: the channel's three rows at once */
        const uint8_t *row = base;
        for (c = 0; c < C; c++) {
            const uint32_t v0 = q8_load32(row) ^ flip;
            const uint32_t v1 = q8_load32(row + row_step) ^ flip;
            const uint32_t v2 = q8_load32(row + 2 * row_step) ^ flip;
            q8_store32(col0, v0);
            q8_store32(col0 + 3, v1);
            q8_store32(col0 + 6, v2);
            q8_store32(col1, v0 >> 8);
            q8_store32(col1 + 3, v1 >> 8);
            q8_store32(col1 + 6, v2 >> 8);
            col0 += 9;
            col1 += 9;
            row += plane;
        }
        return;
    }
    for (c = 0; c < C; c++) {
        const uint8_t *row = base + (size_t)c * plane;
        for (kh = 0; kh < KH; kh++) {
            const uint32_t v = q8_load32(row) ^ flip;
            q8_store32(col0, v);
            q8_store32(col1, v >> 8);
            col0 += KW;
            col1 += KW;
            row += row_step;
        }
    }
}

Q8_UNUSED static void q8_fill_pair_i8_narrow_s8(const q8_dims *input, const q8_window *win,
                                             const uint8_t *base, int8_t *col0,
                                             int8_t *col1)
{
    q8_fill_pair_i8_narrow(input, win, base, col0, col1, 0u);
}

Q8_UNUSED static void q8_fill_pair_i8_narrow_u8(const q8_dims *input, const q8_window *win,
                                             const uint8_t *base, int8_t *col0,
                                             int8_t *col1)
{
    q8_fill_pair_i8_narrow(input, win, base, col0, col1, 0x80808080u);
}

/* The pair fill applies to the pixels (oh, ow), (oh, ow + 1): returns the first tap's
 * address, or NULL. */
Q8_INLINE const uint8_t *q8_narrow_pair_base(const q8_dims *input, const q8_window *win,
                                          const uint8_t *x, int32_t oh, int32_t ow,
                                          int32_t OW)
{
    const int32_t ih0 = oh * win->stride_h - win->pad_top;
    const int32_t iw0 = ow - win->pad_left;
    if (win->stride_w != 1 || win->dilation_w != 1 || win->kernel_w > 3 || ow + 1 >= OW ||
        ih0 < 0 || ih0 + (win->kernel_h - 1) * win->dilation_h >= input->h || iw0 < 0 ||
        iw0 + 3 >= input->w) {
        return NULL;
    }
    return x + (size_t)ih0 * (size_t)input->w + (size_t)iw0;
}

/* Out of line, as the other fills: inlined, the loops run short of registers. */
Q8_UNUSED static void q8_fill_column_i8_s8(const q8_dims *input, const q8_window *win,
                                        int8_t pad, const uint8_t *x, int32_t oh,
                                        int32_t ow, int8_t *column)
{
    q8_fill_column_i8(input, win, pad, x, oh, ow, column, 0u);
}

Q8_UNUSED static void q8_fill_column_i8_u8(const q8_dims *input, const q8_window *win,
                                        int8_t pad, const uint8_t *x, int32_t oh,
                                        int32_t ow, int8_t *column)
{
    q8_fill_column_i8(input, win, pad, x, oh, ow, column, 0x80u);
}

/* The columns of pixels px and px + 1 (two) or px alone. */
Q8_INLINE void q8_fill_pixels_i8(const q8_conv_im2col_params *p, const uint8_t *x, int32_t px,
                              int two, int8_t *col0, int8_t *col1, int is_signed)
{
    const int32_t OW = p->output.w, oh = px / OW, ow = px % OW;
    const int8_t pad = (int8_t)p->pad_value;
    /* a 1x1 layer of stride 1 without padding reads input pixel px for output pixel px:
     * a pair is adjacent in the plane even across rows */
    const int unit = Q8_HAS_MVE && q8_is_unit_pointwise(&p->input, &p->output, &p->window) &&
                     (size_t)(p->input.h * p->input.w) <= 65535u / 8u;
    const uint8_t *base = !two ? NULL
                          : unit ? x + px
                                 : q8_narrow_pair_base(&p->input, &p->window, x, oh, ow, OW);
    if (base != NULL) {
        if (is_signed) {
            q8_fill_pair_i8_narrow_s8(&p->input, &p->window, base, col0, col1);
        } else {
            q8_fill_pair_i8_narrow_u8(&p->input, &p->window, base, col0, col1);
        }
        return;
    }
    if (is_signed) {
        q8_fill_column_i8_s8(&p->input, &p->window, pad, x, oh, ow, col0);
        if (two) {
            q8_fill_column_i8_s8(&p->input, &p->window, pad, x, (px + 1) / OW, (px + 1) % OW,
                              col1);
        }
    } else {
        q8_fill_column_i8_u8(&p->input, &p->window, pad, x, oh, ow, col0);
        if (two) {
            q8_fill_column_i8_u8(&p->input, &p->window, pad, x, (px + 1) / OW, (px + 1) % OW,
                              col1);
        }
    }
}

/*
 * Slab mode (p->slab > 0: kernels at least two taps wide, dilation 1 across): the taps are
 * ordered (kw, c, kh) and slab = C * KH, so output pixel j of a chunk reads KW consecutive
 * slabs from slab j * stride_w: the columns are pointers into the slabs, which a row's
 * pixels share. Slab s holds input column pw0 + s - pad_left of every (c, kh) (the pad
 * value outside). Each input row of a channel goes into the slabs by vector scatters of
 * eight bytes (offsets a slab apart), where the column fills wrote each input byte about
 * KW times per pixel pair.
 */
Q8_INLINE void q8_fill_slabs_i8(const q8_conv_im2col_params *p, const uint8_t *x, int32_t oh,
                             int32_t pw0, int32_t count, int8_t *out, uint8_t flip)
{
    const int32_t C = p->input.c, H = p->input.h, W = p->input.w;
    const int32_t KH = p->window.kernel_h, dh = p->window.dilation_h;
    const int32_t slab = p->slab, pl = p->window.pad_left;
    const int32_t ih0 = oh * p->window.stride_h - p->window.pad_top;
    const size_t plane = (size_t)(H * W);
    const uint8_t pad = (uint8_t)p->pad_value;
    /* the slabs s_lo .. s_hi - 1 lie over the input's columns */
    const int32_t s_lo = pw0 - pl < 0 ? pl - pw0 : 0;
    const int32_t s_end = W + pl - pw0;
    const int32_t s_hi = s_end < count ? (s_end > s_lo ? s_end : s_lo) : count;
    const int32_t n = s_hi - s_lo;
    int32_t s, c, kh, i;
    for (s = 0; s < count; s++) {
        if (s < s_lo || s >= s_hi) {
            memset(out + (size_t)s * (size_t)slab, pad, (size_t)slab);
        }
    }
    if (n <= 0) {
        return;
    }
#if Q8_HAS_MVE
    {
        const uint16x8_t offsets = vmulq_n_u16(vidupq_n_u16(0u, 1), (uint16_t)slab);
        const uint16x8_t flips = vdupq_n_u16(flip), pads = vdupq_n_u16(pad);
        const size_t eight = 8u * (size_t)slab;
        const int32_t whole = n & ~7, tail = n - whole;
        const mve_pred16_t last = vctp16q((uint32_t)tail);
        for (kh = 0; kh < KH; kh++) {
            const int32_t ih = ih0 + kh * dh;
            const uint8_t *src = x + (size_t)(ih >= 0 && ih < H ? ih : 0) * (size_t)W +
                                 (size_t)(pw0 + s_lo - pl);
            uint8_t *dst = (uint8_t *)out + (size_t)s_lo * (size_t)slab + (size_t)kh;
            if (ih >= 0 && ih < H) {
                for (c = 0; c < C; c++) {
                    const uint8_t *from = src;
                    uint8_t *to = dst;
                    for (i = 0; i < whole; i += 8) {
                        vstrbq_scatter_offset_u16(to, offsets, veorq_u16(vldrbq_u16(from), flips));
                        from += 8;
                        to += eight;
                    }
                    if (tail) {
                        vstrbq_scatter_offset_p_u16(
                            to, offsets, veorq_u16(vldrbq_z_u16(from, last), flips), last);
                    }
                    src += plane;
                    dst += KH;
                }
            } else {
                for (c = 0; c < C; c++) {
                    uint8_t *to = dst;
                    for (i = 0; i < whole; i += 8) {
                        vstrbq_scatter_offset_u16(to, offsets, pads);
                        to += eight;
                    }
                    if (tail) {
                        vstrbq_scatter_offset_p_u16(to, offsets, pads, last);
                    }
                    dst += KH;
                }
            }
        }
    }
#else
    for (c = 0; c < C; c++) {
        for (kh = 0; kh < KH; kh++) {
            const int32_t ih = ih0 + kh * dh;
            const int inside = ih >= 0 && ih < H;
            const uint8_t *src = x + (size_t)c * plane + (size_t)(inside ? ih : 0) * (size_t)W +
                                 (size_t)(pw0 + s_lo - pl);
            int8_t *dst = out + (size_t)s_lo * (size_t)slab + (size_t)(c * KH + kh);
            for (i = 0; i < n; i++) {
                dst[(size_t)i * (size_t)slab] = (int8_t)(inside ? (uint8_t)(src[i] ^ flip) : pad);
            }
        }
    }
#endif
}

/* Out of line, one per input type. */
Q8_UNUSED static void q8_fill_slabs_i8_s8(const q8_conv_im2col_params *p, const uint8_t *x,
                                       int32_t oh, int32_t pw0, int32_t count, int8_t *out)
{
    q8_fill_slabs_i8(p, x, oh, pw0, count, out, 0u);
}

Q8_UNUSED static void q8_fill_slabs_i8_u8(const q8_conv_im2col_params *p, const uint8_t *x,
                                       int32_t oh, int32_t pw0, int32_t count, int8_t *out)
{
    q8_fill_slabs_i8(p, x, oh, pw0, count, out, 0x80u);
}

/* The slab buffer's bytes: the chunk's slabs, the last column's taps past its KW slabs
 * (zero weights meet them), and slack. */
Q8_INLINE size_t q8_mve_slab_bytes(const q8_conv_im2col_params *p)
{
    return (size_t)((p->chunk - 1) * p->window.stride_w + p->window.kernel_w) *
               (size_t)p->slab +
           (size_t)(p->k_padded - p->window.kernel_w * p->slab) + Q8_MVE_COLUMN_SLACK;
}

#endif /* Q8_IM2COL_MVE_FILL_H */
