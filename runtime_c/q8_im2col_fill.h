/*
 * q8_im2col_fill.h - the columns of the im2col convolutions (q8_im2col.h): a pixel's window
 * gathered into int16 taps, one column per pixel or, in slab mode, slabs a row's pixels share.
 */
#ifndef Q8_IM2COL_FILL_H
#define Q8_IM2COL_FILL_H

#include <string.h>

#include "q8_arith.h"
#include "q8_dsp.h"
#include "q8_requant_row.h"
#include "q8_runtime.h"
#include "q8_window.h"

/* is_signed: 0 uint8, 1 int8, 2 int8 stored plus 128 (for the unsigned-byte variant). */
Q8_INLINE int16_t q8_widen(const uint8_t *p, int is_signed)
{
    return is_signed == 2 ? (int16_t)(*p ^ 0x80u)
                          : (is_signed ? (int16_t)(int8_t)*p : (int16_t)*p);
}

/* A window over the border, three taps wide (dilation 1 across): which of its three
 * columns lie inside the input is the same on every row, decided once. Returns the sum
 * of the taps. */
Q8_INLINE uint32_t q8_fill_border_3wide(const q8_dims *input, const q8_window *win,
                                               int32_t pad_value, const uint8_t *x,
                                               int32_t ih0, int32_t iw0, int16_t *out,
                                               int is_signed)
{
    const int32_t C = input->c, H = input->h, W = input->w;
    const int32_t KH = win->kernel_h, dh = win->dilation_h;
    const size_t plane = (size_t)(H * W);
    const int16_t pad = (int16_t)pad_value;
    const int in0 = iw0 >= 0 && iw0 < W, in1 = iw0 + 1 >= 0 && iw0 + 1 < W;
    const int in2 = iw0 + 2 >= 0 && iw0 + 2 < W;
    uint32_t total = 0;
    int32_t c, kh;
    for (c = 0; c < C; c++) {
        const uint8_t *x_c = x + (size_t)c * plane;
        for (kh = 0; kh < KH; kh++) {
            const int32_t ih = ih0 + kh * dh;
            if (ih < 0 || ih >= H) {
                out[0] = pad;
                out[1] = pad;
                out[2] = pad;
                total += 3u * (uint32_t)(uint16_t)pad;
            } else {
                /* the row's start: a pointer before it is never formed */
                const uint8_t *row = x_c + (size_t)ih * (size_t)W;
                const int16_t v0 = in0 ? q8_widen(row + iw0, is_signed) : pad;
                const int16_t v1 = in1 ? q8_widen(row + (iw0 + 1), is_signed) : pad;
                const int16_t v2 = in2 ? q8_widen(row + (iw0 + 2), is_signed) : pad;
                out[0] = v0;
                out[1] = v1;
                out[2] = v2;
                total += (uint32_t)(uint16_t)v0 + (uint16_t)v1 + (uint16_t)v2;
            }
            out += 3;
        }
    }
    return total;
}

#if defined(__GNUC__) && defined(__thumb__) && !defined(__thumb2__) && \
    defined(__OPTIMIZE__) && !defined(__OPTIMIZE_SIZE__) && !defined(Q8_NO_ASM) && \
    !defined(__ARM_RWPI)
/* Thumb-1 by hand: an interior 3x3 window of every channel into an offset column (int8
 * stored as x + 128, that is x ^ 0x80 of its byte) and the taps' sum, as the C below: per
 * tap a byte load, EOR, halfword store and add (about 6 cycles on Cortex-M0+; GCC 12 adds a
 * UXTB and register moves to each). Seven low registers; the steps in high ones. */
#define Q8_FILL3X3_THUMB1 1
#define Q8_FILL_TAP_ASM(J, J2)                                                              \
    "ldrb %[t], [%[r], #" #J "]\n\t"                                                        \
    "eors %[t], %[f]\n\t"                                                                  \
    "strh %[t], [%[o], #" #J2 "]\n\t"                                                       \
    "adds %[total], %[total], %[t]\n\t"
Q8_UNUSED static uint32_t q8_fill_3x3_offset_thumb1(const uint8_t *base, size_t w,
                                                    size_t plane, int32_t channels,
                                                    int16_t *out)
{
    uint32_t total = 0u, t, f = 0x80u;
    const uint8_t *r;
    __asm__ volatile(
        ".syntax unified\n"
        "1:\n\t"
        "movs %[r], %[base]\n\t"
        Q8_FILL_TAP_ASM(0, 0)
        Q8_FILL_TAP_ASM(1, 2)
        Q8_FILL_TAP_ASM(2, 4)
        "add %[r], %[w]\n\t"
        Q8_FILL_TAP_ASM(0, 6)
        Q8_FILL_TAP_ASM(1, 8)
        Q8_FILL_TAP_ASM(2, 10)
        "add %[r], %[w]\n\t"
        Q8_FILL_TAP_ASM(0, 12)
        Q8_FILL_TAP_ASM(1, 14)
        Q8_FILL_TAP_ASM(2, 16)
        "adds %[o], #18\n\t"
        "add %[base], %[plane]\n\t"
        "subs %[c], #1\n\t"
        "bne 1b\n"
        : [base] "+l"(base), [o] "+l"(out), [c] "+l"(channels), [total] "+l"(total),
          [r] "=&l"(r), [t] "=&l"(t)
        : [w] "h"(w), [plane] "h"(plane), [f] "l"(f)
        : "cc", "memory");
    return total;
}
#undef Q8_FILL_TAP_ASM
#endif

/*
 * Gather the k = C * KH * KW taps of output pixel (oh, ow) of image x into column (int16),
 * in (c, kh, kw) order. A window inside the input is copied without bounds checks; the
 * column's padding taps past k are zeroed once per call (q8_zero_column_tails).
 * With `sum`, the taps' values are also summed into it (as uint16: the unsigned-byte
 * variant's columns hold 0..255), on the way rather than by reading the column again.
 */
#define Q8_TAP(dst, src)                                                                   \
    do {                                                                                   \
        const int16_t q8_tap_value = q8_widen((src), is_signed);                           \
        (dst) = q8_tap_value;                                                              \
        if (sum != NULL) {                                                                 \
            total += (uint16_t)q8_tap_value;                                               \
        }                                                                                  \
    } while (0)

Q8_INLINE void q8_fill_column_summed(const q8_dims *input, const q8_window *win,
                                  int32_t pad_value, const uint8_t *x, int32_t oh, int32_t ow,
                                  int16_t *column, int is_signed, uint32_t *sum)
{
    const int32_t C = input->c, H = input->h, W = input->w;
    const int32_t KH = win->kernel_h, KW = win->kernel_w;
    const int32_t dh = win->dilation_h, dw = win->dilation_w;
    const int32_t ih0 = oh * win->stride_h - win->pad_top;
    const int32_t iw0 = ow * win->stride_w - win->pad_left;
    const size_t plane = (size_t)(H * W);
    int16_t *out = column;
    int32_t c, kh, kw;
    uint32_t total = 0;
    if (ih0 >= 0 && iw0 >= 0 && ih0 + (KH - 1) * dh < H && iw0 + (KW - 1) * dw < W) {
        const uint8_t *base = x + (size_t)ih0 * (size_t)W + (size_t)iw0;
        const size_t row_step = (size_t)dh * (size_t)W;
        if (KH * KW == 1) { /* pointwise: one tap per channel */
            const uint8_t *tap = base;
            for (c = C; c >= 4; c -= 4) {
                Q8_TAP(out[0], tap);
                Q8_TAP(out[1], tap + plane);
                Q8_TAP(out[2], tap + 2 * plane);
                Q8_TAP(out[3], tap + 3 * plane);
                out += 4;
                tap += 4 * plane;
            }
            for (; c > 0; c--) {
                Q8_TAP(*out, tap);
                out++;
                tap += plane;
            }
        } else if (KH == 3 && KW == 3 && dh == 1 && dw == 1) {
            const size_t W2 = 2 * (size_t)W;
#if defined(Q8_FILL3X3_THUMB1)
            if (is_signed == 2 && sum != NULL && C > 0) {
                *sum = q8_fill_3x3_offset_thumb1(base, (size_t)W, plane, C, out);
                return;
            }
#endif
            for (c = 0; c < C; c++) {
                const uint8_t *row = base + (size_t)c * plane;
                Q8_TAP(out[0], row);
                Q8_TAP(out[1], row + 1);
                Q8_TAP(out[2], row + 2);
                Q8_TAP(out[3], row + W);
                Q8_TAP(out[4], row + W + 1);
                Q8_TAP(out[5], row + W + 2);
                Q8_TAP(out[6], row + W2);
                Q8_TAP(out[7], row + W2 + 1);
                Q8_TAP(out[8], row + W2 + 2);
                out += 9;
            }
        } else if (KW == 3 && dw == 1) {
            for (c = 0; c < C; c++) {
                const uint8_t *row = base + (size_t)c * plane;
                for (kh = 0; kh < KH; kh++) {
                    Q8_TAP(out[0], row);
                    Q8_TAP(out[1], row + 1);
                    Q8_TAP(out[2], row + 2);
                    out += 3;
                    row += row_step;
                }
            }
        } else {
            for (c = 0; c < C; c++) {
                const uint8_t *row = base + (size_t)c * plane;
                for (kh = 0; kh < KH; kh++) {
                    for (kw = 0; kw < KW; kw++) {
                        Q8_TAP(*out, row + kw * dw);
                        out++;
                    }
                    row += row_step;
                }
            }
        }
    } else if (KW == 3 && dw == 1) {
        total = q8_fill_border_3wide(input, win, pad_value, x, ih0, iw0, out, is_signed);
    } else {
        const int16_t pad = (int16_t)pad_value;
        for (c = 0; c < C; c++) {
            const uint8_t *x_c = x + (size_t)c * plane;
            for (kh = 0; kh < KH; kh++) {
                const int32_t ih = ih0 + kh * dh;
                if (ih < 0 || ih >= H) {
                    for (kw = 0; kw < KW; kw++) {
                        *out++ = pad;
                    }
                    total += (uint32_t)(uint16_t)pad * (uint32_t)KW;
                    continue;
                }
                for (kw = 0; kw < KW; kw++) {
                    const int32_t iw = iw0 + kw * dw;
                    const int16_t value = (iw >= 0 && iw < W)
                        ? q8_widen(x_c + (size_t)ih * (size_t)W + (size_t)iw, is_signed)
                        : pad;
                    *out++ = value;
                    total += (uint16_t)value;
                }
            }
        }
    }
    if (sum != NULL) {
        *sum = total;
    }
}

Q8_INLINE void q8_fill_column(const q8_dims *input, const q8_window *win, int32_t pad_value,
                           const uint8_t *x, int32_t oh, int32_t ow, int16_t *column,
                           int is_signed)
{
    q8_fill_column_summed(input, win, pad_value, x, oh, ow, column, is_signed, NULL);
}

#undef Q8_TAP

/* The padding taps of the columns (k .. k_padded) meet zero weights; they must hold
 * finite values, and the fills never write them, so they are zeroed once per call. */
Q8_INLINE void q8_zero_tails_of(int16_t *scratch, int32_t columns, int32_t k, int32_t k_padded)
{
    int32_t col, i;
    for (col = 0; col < columns; col++) {
        for (i = k; i < k_padded; i++) {
            scratch[(size_t)col * (size_t)k_padded + (size_t)i] = 0;
        }
    }
}

Q8_INLINE void q8_zero_column_tails(int16_t *scratch, int32_t k, int32_t k_padded)
{
    q8_zero_tails_of(scratch, 2, k, k_padded);
}

/*
 * Out of line, one per input type: inlined into the kernels, the fill loops run short of
 * registers and spill their pointers.
 */
Q8_UNUSED static void q8_fill_column_s8(const q8_dims *input, const q8_window *win,
                                     int32_t pad_value, const uint8_t *x, int32_t oh,
                                     int32_t ow, int16_t *column)
{
    q8_fill_column(input, win, pad_value, x, oh, ow, column, 1);
}

Q8_UNUSED static void q8_fill_column_u8(const q8_dims *input, const q8_window *win,
                                     int32_t pad_value, const uint8_t *x, int32_t oh,
                                     int32_t ow, int16_t *column)
{
    q8_fill_column(input, win, pad_value, x, oh, ow, column, 0);
}

Q8_UNUSED static void q8_fill_column_s8_offset(const q8_dims *input, const q8_window *win,
                                            int32_t pad_value, const uint8_t *x, int32_t oh,
                                            int32_t ow, int16_t *column)
{
    q8_fill_column(input, win, pad_value, x, oh, ow, column, 2);
}

/* The unsigned-byte variant's column and its sum (q8_im2col_b8.h), out of line per type. */
Q8_UNUSED static uint32_t q8_fill_sum_s8_offset(const q8_dims *input, const q8_window *win,
                                             int32_t pad_value, const uint8_t *x, int32_t oh,
                                             int32_t ow, int16_t *column)
{
    uint32_t sum;
    q8_fill_column_summed(input, win, pad_value, x, oh, ow, column, 2, &sum);
    return sum;
}

Q8_UNUSED static uint32_t q8_fill_sum_u8(const q8_dims *input, const q8_window *win,
                                      int32_t pad_value, const uint8_t *x, int32_t oh,
                                      int32_t ow, int16_t *column)
{
    uint32_t sum;
    q8_fill_column_summed(input, win, pad_value, x, oh, ow, column, 0, &sum);
    return sum;
}

Q8_INLINE void q8_fill(const q8_dims *input, const q8_window *win, int32_t pad_value,
                    const uint8_t *x, int32_t oh, int32_t ow, int16_t *column, int is_signed)
{
    if (is_signed == 2) {
        q8_fill_column_s8_offset(input, win, pad_value, x, oh, ow, column);
    } else if (is_signed) {
        q8_fill_column_s8(input, win, pad_value, x, oh, ow, column);
    } else {
        q8_fill_column_u8(input, win, pad_value, x, oh, ow, column);
    }
}

/*
 * Both columns of a pixel pair of a 1x1, stride-1 layer without padding (its pixels are
 * the input's): the two pixels of a channel lie side by side, and two channels' values
 * of each pixel go out in one word store. Out of line per input type, as q8_fill_column.
 */
Q8_INLINE void q8_fill_pointwise_pair(const uint8_t *x, size_t plane, int32_t C, int16_t *col0,
                                   int16_t *col1, int is_signed)
{
    int32_t c;
    for (c = 0; c + 2 <= C; c += 2) {
        const uint8_t *a = x + (size_t)c * plane, *b = a + plane;
        const uint32_t a0 = (uint32_t)(int32_t)q8_widen(a, is_signed);
        const uint32_t a1 = (uint32_t)(int32_t)q8_widen(a + 1, is_signed);
        const uint32_t b0 = (uint32_t)(int32_t)q8_widen(b, is_signed);
        const uint32_t b1 = (uint32_t)(int32_t)q8_widen(b + 1, is_signed);
        q8_store32(col0 + c, q8_pack16(a0, b0));
        q8_store32(col1 + c, q8_pack16(a1, b1));
    }
    if (c < C) {
        col0[c] = q8_widen(x + (size_t)c * plane, is_signed);
        col1[c] = q8_widen(x + (size_t)c * plane + 1, is_signed);
    }
}

Q8_UNUSED static void q8_fill_pointwise_pair_s8(const uint8_t *x, size_t plane, int32_t C,
                                             int16_t *col0, int16_t *col1)
{
    q8_fill_pointwise_pair(x, plane, C, col0, col1, 1);
}

Q8_UNUSED static void q8_fill_pointwise_pair_u8(const uint8_t *x, size_t plane, int32_t C,
                                             int16_t *col0, int16_t *col1)
{
    q8_fill_pointwise_pair(x, plane, C, col0, col1, 0);
}

Q8_UNUSED static void q8_fill_pointwise_pair_s8_offset(const uint8_t *x, size_t plane,
                                                    int32_t C, int16_t *col0, int16_t *col1)
{
    q8_fill_pointwise_pair(x, plane, C, col0, col1, 2);
}

/* The columns of pixels px and px + 1 (two) or px alone. */
Q8_INLINE void q8_fill_pixels(const q8_dims *input, const q8_window *win, int32_t pad_value,
                           const uint8_t *x, int32_t px, int32_t OW, int two, int unit,
                           int16_t *col0, int16_t *col1, int is_signed)
{
    /* DSP cores only: elsewhere the convolutions run other kernels (Thumb-1, M3) or the
     * pairs would only add to the code the compiler builds (the host). */
    if (Q8_HAS_DSP && two && unit) {
        const size_t plane = (size_t)(input->h * input->w);
        if (is_signed == 2) {
            q8_fill_pointwise_pair_s8_offset(x + px, plane, input->c, col0, col1);
        } else if (is_signed) {
            q8_fill_pointwise_pair_s8(x + px, plane, input->c, col0, col1);
        } else {
            q8_fill_pointwise_pair_u8(x + px, plane, input->c, col0, col1);
        }
        return;
    }
    q8_fill(input, win, pad_value, x, px / OW, px % OW, col0, is_signed);
    if (two) {
        q8_fill(input, win, pad_value, x, (px + 1) / OW, (px + 1) % OW, col1, is_signed);
    }
}

/*
 * Slab mode (p->slab > 0, stride-w convolutions with dilation_w 1): the taps are ordered
 * (kw, c, kh), so an output pixel's column is KW consecutive slabs, one per padded input
 * column: slab s holds x[c][ih0 + kh * dh][s - pad_left] for every (c, kh) (the pad
 * value outside), then zero-weight taps up to p->slab. A row's pixels ow0 ..
 * ow0 + chunk - 1 read slabs ow0 * sw .. (ow0 + chunk - 1) * sw + KW - 1, filled once: a
 * 3x3 stride-1 layer gathers each input tap about once per output row instead of three
 * times, and the columns are pointers into the slabs.
 */
Q8_INLINE void q8_fill_slabs(const q8_dims *input, const q8_window *win, int32_t pad_value,
                          const uint8_t *x, int32_t oh, int32_t pw0, int32_t count,
                          int32_t slab, int16_t *out, int is_signed)
{
    const int32_t C = input->c, H = input->h, W = input->w;
    const int32_t KH = win->kernel_h, dh = win->dilation_h;
    const int32_t ih0 = oh * win->stride_h - win->pad_top;
    const size_t plane = (size_t)(H * W);
    const int16_t pad = (int16_t)pad_value;
    const int inside = ih0 >= 0 && ih0 + (KH - 1) * dh < H;
    int32_t s, c, kh;
    for (s = 0; s < count; s++) {
        const int32_t iw = pw0 + s - win->pad_left;
        int16_t *o = out + (size_t)s * (size_t)slab;
        if (iw < 0 || iw >= W) {
            for (c = 0; c < C * KH; c++) {
                o[c] = pad;
            }
        } else if (inside && KH == 3 && dh == 1) {
            const uint8_t *tap = x + (size_t)ih0 * (size_t)W + (size_t)iw;
            for (c = 0; c < C; c++) {
                o[0] = q8_widen(tap, is_signed);
                o[1] = q8_widen(tap + W, is_signed);
                o[2] = q8_widen(tap + 2 * W, is_signed);
                o += 3;
                tap += plane;
            }
        } else {
            for (c = 0; c < C; c++) {
                const uint8_t *x_c = x + (size_t)c * plane + (size_t)iw;
                for (kh = 0; kh < KH; kh++) {
                    const int32_t ih = ih0 + kh * dh;
                    *o++ = (ih >= 0 && ih < H) ? q8_widen(x_c + (size_t)ih * (size_t)W, is_signed)
                                               : pad;
                }
            }
        }
    }
}

/* Out of line, one per input type, as the column fills. */
Q8_UNUSED static void q8_fill_slabs_s8(const q8_dims *input, const q8_window *win,
                                    int32_t pad_value, const uint8_t *x, int32_t oh,
                                    int32_t pw0, int32_t count, int32_t slab, int16_t *out)
{
    q8_fill_slabs(input, win, pad_value, x, oh, pw0, count, slab, out, 1);
}

Q8_UNUSED static void q8_fill_slabs_u8(const q8_dims *input, const q8_window *win,
                                    int32_t pad_value, const uint8_t *x, int32_t oh,
                                    int32_t pw0, int32_t count, int32_t slab, int16_t *out)
{
    q8_fill_slabs(input, win, pad_value, x, oh, pw0, count, slab, out, 0);
}

Q8_UNUSED static void q8_fill_slabs_s8_offset(const q8_dims *input, const q8_window *win,
                                           int32_t pad_value, const uint8_t *x, int32_t oh,
                                           int32_t pw0, int32_t count, int32_t slab,
                                           int16_t *out)
{
    q8_fill_slabs(input, win, pad_value, x, oh, pw0, count, slab, out, 2);
}

Q8_INLINE void q8_fill_slab_range(const q8_dims *input, const q8_window *win, int32_t pad_value,
                               const uint8_t *x, int32_t oh, int32_t pw0, int32_t count,
                               int32_t slab, int16_t *out, int is_signed)
{
    if (is_signed == 2) {
        q8_fill_slabs_s8_offset(input, win, pad_value, x, oh, pw0, count, slab, out);
    } else if (is_signed) {
        q8_fill_slabs_s8(input, win, pad_value, x, oh, pw0, count, slab, out);
    } else {
        q8_fill_slabs_u8(input, win, pad_value, x, oh, pw0, count, slab, out);
    }
}

/* The slab buffer's size in taps: the chunk's slabs, then the last column's padding taps
 * past its KW slabs (zero, never filled). */
Q8_INLINE size_t q8_slab_buffer_taps(int32_t chunk, int32_t stride_w, int32_t kernel_w,
                                  int32_t slab, int32_t k_padded)
{
    return (size_t)((chunk - 1) * stride_w + kernel_w) * (size_t)slab +
           (size_t)(k_padded - kernel_w * slab);
}

/*
 * The slab mode's loop over output rows and chunks, shared by the kernels: ROWS(c0, c1,
 * out, two) runs every output channel on columns c0 and c1 (c1 == c0 for a lone last
 * pixel, two == 0) and stores at out (channel m at out + m * pixels).
 */
#define Q8_SLAB_LOOP(P, X, Y, SCRATCH, IS_SIGNED, ROWS)                                       \
    do {                                                                                     \
        const int32_t OH_ = (P)->output.h, OW_ = (P)->output.w, M_ = (P)->output.c;          \
        const int32_t sw_ = (P)->window.stride_w, KW_ = (P)->window.kernel_w;                \
        const int32_t slab_ = (P)->slab, chunk_ = (P)->chunk;                                \
        const size_t in_image_ = (size_t)(P)->input.c * (size_t)((P)->input.h * (P)->input.w); \
        const size_t pixels_ = (size_t)OH_ * (size_t)OW_;                                    \
        int32_t n_, oh_, ow0_, j_;                                                           \
        memset((SCRATCH), 0,                                                                 \
               q8_slab_buffer_taps(chunk_, sw_, KW_, slab_, (P)->k_padded) * sizeof(int16_t));   \
        for (n_ = 0; n_ < (P)->input.n; n_++) {                                              \
            const uint8_t *x_n_ = (X) + (size_t)n_ * in_image_;                              \
            uint8_t *y_n_ = (Y) + (size_t)n_ * (size_t)M_ * pixels_;                         \
            for (oh_ = 0; oh_ < OH_; oh_++) {                                                \
                for (ow0_ = 0; ow0_ < OW_; ow0_ += chunk_) {                                 \
                    const int32_t count_ = OW_ - ow0_ < chunk_ ? OW_ - ow0_ : chunk_;        \
                    q8_fill_slab_range(&(P)->input, &(P)->window, (P)->pad_value, x_n_, oh_,    \
                                    ow0_ * sw_, (count_ - 1) * sw_ + KW_, slab_, (SCRATCH),  \
                                    (IS_SIGNED));                                            \
                    for (j_ = 0; j_ < count_; j_ += 2) {                                     \
                        const int16_t *c0_ = (SCRATCH) + (size_t)(j_ * sw_) * (size_t)slab_; \
                        const int two_ = j_ + 1 < count_;                                    \
                        const int16_t *c1_ = two_ ? c0_ + (size_t)sw_ * (size_t)slab_ : c0_; \
                        uint8_t *out_ = y_n_ + (size_t)oh_ * (size_t)OW_ + (size_t)(ow0_ + j_); \
                        ROWS(c0_, c1_, out_, two_);                                          \
                    }                                                                        \
                }                                                                            \
            }                                                                                \
        }                                                                                    \
    } while (0)

#endif /* Q8_IM2COL_FILL_H */
