/*
 * q8_im2col.h - the im2col convolution paths (QLinearConv, group 1, weight zero point 0)
 * exported one function per file (conv_s8_im2col_freq.c holds q8_conv_s8_im2col_freq):
 * int8 weights (*_im2col_*), int16 weights in row pairs for the DSP extension
 * (*_im2col_w16_*), int16 weights in blocks of 8 taps, plain C compilers vectorize
 * (*_im2col_w16b_*), and unsigned bytes for cores without DSP (*_im2col_b8_*).
 * Each file instantiates only its own variants, so a project compiles only what it uses.
 *
 * QLinearConv as a matrix product on 16-bit operands: the fast paths beside the
 * reference in qlinear_conv.c.
 *
 * Two output pixels at a time, the window's taps are gathered into a scratch buffer of
 * int16 (im2col), padding taps holding the input zero point. Each pair of output
 * channels then multiplies its weight rows with both columns: four weights are loaded
 * in one word and widened with two q8_sxtb16 (bytes 0,2 and 1,3); the generator stores
 * each group of four weights as w0, w2, w1, w3, so those are the pairs (w0, w1) and
 * (w2, w3), matching the column's word loads, and every q8_smlad does two
 * multiply-accumulates. A 2x2 block does 16 per two weight words.
 *
 * acc = sum_k x_k * w_k + bias', with bias' = bias - x_zp * sum_k w_k precomputed: the
 * same sum modulo 2^32 as sum (x_k - x_zp) * w_k + bias, where padded x_k = x_zp adds
 * nothing. Requantization as the reference (q8_arith.h).
 */
#ifndef Q8_IM2COL_H
#define Q8_IM2COL_H

#include <string.h>

#include "q8_arith.h"
#include "q8_dsp.h"
#include "q8_requant_row.h"
#include "q8_runtime.h"
#include "q8_window.h"


/* is_signed: 0 uint8, 1 int8, 2 int8 stored plus 128 (for the unsigned-byte variant). */
Q8_INLINE int16_t widen(const uint8_t *p, int is_signed)
{
    return is_signed == 2 ? (int16_t)(*p ^ 0x80u)
                          : (is_signed ? (int16_t)(int8_t)*p : (int16_t)*p);
}

/*
 * Gather the k = C * KH * KW taps of output pixel (oh, ow) of image x into column (int16),
 * in (c, kh, kw) order. A window inside the input is copied without bounds checks; the
 * column's padding taps past k are zeroed once per call (zero_column_tails).
 */
Q8_INLINE void fill_column(const q8_dims *input, const q8_window *win, int32_t pad_value,
                           const uint8_t *x, int32_t oh, int32_t ow, int16_t *column,
                           int is_signed)
{
    const int32_t C = input->c, H = input->h, W = input->w;
    const int32_t KH = win->kernel_h, KW = win->kernel_w;
    const int32_t dh = win->dilation_h, dw = win->dilation_w;
    const int32_t ih0 = oh * win->stride_h - win->pad_top;
    const int32_t iw0 = ow * win->stride_w - win->pad_left;
    const size_t plane = (size_t)(H * W);
    int16_t *out = column;
    int32_t c, kh, kw;
    if (ih0 >= 0 && iw0 >= 0 && ih0 + (KH - 1) * dh < H && iw0 + (KW - 1) * dw < W) {
        const uint8_t *base = x + (size_t)ih0 * (size_t)W + (size_t)iw0;
        const size_t row_step = (size_t)dh * (size_t)W;
        if (KH * KW == 1) { /* pointwise: one tap per channel */
            const uint8_t *tap = base;
            for (c = C; c >= 4; c -= 4) {
                out[0] = widen(tap, is_signed);
                out[1] = widen(tap + plane, is_signed);
                out[2] = widen(tap + 2 * plane, is_signed);
                out[3] = widen(tap + 3 * plane, is_signed);
                out += 4;
                tap += 4 * plane;
            }
            for (; c > 0; c--) {
                *out++ = widen(tap, is_signed);
                tap += plane;
            }
        } else if (KH == 3 && KW == 3 && dh == 1 && dw == 1) {
            const size_t W2 = 2 * (size_t)W;
            for (c = 0; c < C; c++) {
                const uint8_t *row = base + (size_t)c * plane;
                out[0] = widen(row, is_signed);
                out[1] = widen(row + 1, is_signed);
                out[2] = widen(row + 2, is_signed);
                out[3] = widen(row + W, is_signed);
                out[4] = widen(row + W + 1, is_signed);
                out[5] = widen(row + W + 2, is_signed);
                out[6] = widen(row + W2, is_signed);
                out[7] = widen(row + W2 + 1, is_signed);
                out[8] = widen(row + W2 + 2, is_signed);
                out += 9;
            }
        } else if (KW == 3 && dw == 1) {
            for (c = 0; c < C; c++) {
                const uint8_t *row = base + (size_t)c * plane;
                for (kh = 0; kh < KH; kh++) {
                    out[0] = widen(row, is_signed);
                    out[1] = widen(row + 1, is_signed);
                    out[2] = widen(row + 2, is_signed);
                    out += 3;
                    row += row_step;
                }
            }
        } else {
            for (c = 0; c < C; c++) {
                const uint8_t *row = base + (size_t)c * plane;
                for (kh = 0; kh < KH; kh++) {
                    for (kw = 0; kw < KW; kw++) {
                        *out++ = widen(row + kw * dw, is_signed);
                    }
                    row += row_step;
                }
            }
        }
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
                    continue;
                }
                for (kw = 0; kw < KW; kw++) {
                    const int32_t iw = iw0 + kw * dw;
                    *out++ = (iw >= 0 && iw < W)
                                 ? widen(x_c + (size_t)ih * (size_t)W + (size_t)iw, is_signed)
                                 : pad;
                }
            }
        }
    }
}

/* The padding taps of the columns (k .. k_padded) meet zero weights; they must hold
 * finite values, and the fills never write them, so they are zeroed once per call. */
Q8_INLINE void zero_tails_of(int16_t *scratch, int32_t columns, int32_t k, int32_t k_padded)
{
    int32_t col, i;
    for (col = 0; col < columns; col++) {
        for (i = k; i < k_padded; i++) {
            scratch[(size_t)col * (size_t)k_padded + (size_t)i] = 0;
        }
    }
}

Q8_INLINE void zero_column_tails(int16_t *scratch, int32_t k, int32_t k_padded)
{
    zero_tails_of(scratch, 2, k, k_padded);
}

/*
 * Out of line, one per input type: inlined into the kernels, the fill loops run short of
 * registers and spill their pointers.
 */
Q8_UNUSED static void fill_column_s8(const q8_dims *input, const q8_window *win,
                                     int32_t pad_value, const uint8_t *x, int32_t oh,
                                     int32_t ow, int16_t *column)
{
    fill_column(input, win, pad_value, x, oh, ow, column, 1);
}

Q8_UNUSED static void fill_column_u8(const q8_dims *input, const q8_window *win,
                                     int32_t pad_value, const uint8_t *x, int32_t oh,
                                     int32_t ow, int16_t *column)
{
    fill_column(input, win, pad_value, x, oh, ow, column, 0);
}

Q8_UNUSED static void fill_column_s8_offset(const q8_dims *input, const q8_window *win,
                                            int32_t pad_value, const uint8_t *x, int32_t oh,
                                            int32_t ow, int16_t *column)
{
    fill_column(input, win, pad_value, x, oh, ow, column, 2);
}

Q8_INLINE void fill(const q8_dims *input, const q8_window *win, int32_t pad_value,
                    const uint8_t *x, int32_t oh, int32_t ow, int16_t *column, int is_signed)
{
    if (is_signed == 2) {
        fill_column_s8_offset(input, win, pad_value, x, oh, ow, column);
    } else if (is_signed) {
        fill_column_s8(input, win, pad_value, x, oh, ow, column);
    } else {
        fill_column_u8(input, win, pad_value, x, oh, ow, column);
    }
}

/*
 * Both columns of a pixel pair of a 1x1, stride-1 layer without padding (its pixels are
 * the input's): the two pixels of a channel lie side by side, and two channels' values
 * of each pixel go out in one word store. Out of line per input type, as fill_column.
 */
Q8_INLINE void fill_pointwise_pair(const uint8_t *x, size_t plane, int32_t C, int16_t *col0,
                                   int16_t *col1, int is_signed)
{
    int32_t c;
    for (c = 0; c + 2 <= C; c += 2) {
        const uint8_t *a = x + (size_t)c * plane, *b = a + plane;
        const uint32_t a0 = (uint32_t)(int32_t)widen(a, is_signed);
        const uint32_t a1 = (uint32_t)(int32_t)widen(a + 1, is_signed);
        const uint32_t b0 = (uint32_t)(int32_t)widen(b, is_signed);
        const uint32_t b1 = (uint32_t)(int32_t)widen(b + 1, is_signed);
        q8_store32(col0 + c, q8_pack16(a0, b0));
        q8_store32(col1 + c, q8_pack16(a1, b1));
    }
    if (c < C) {
        col0[c] = widen(x + (size_t)c * plane, is_signed);
        col1[c] = widen(x + (size_t)c * plane + 1, is_signed);
    }
}

Q8_UNUSED static void fill_pointwise_pair_s8(const uint8_t *x, size_t plane, int32_t C,
                                             int16_t *col0, int16_t *col1)
{
    fill_pointwise_pair(x, plane, C, col0, col1, 1);
}

Q8_UNUSED static void fill_pointwise_pair_u8(const uint8_t *x, size_t plane, int32_t C,
                                             int16_t *col0, int16_t *col1)
{
    fill_pointwise_pair(x, plane, C, col0, col1, 0);
}

Q8_UNUSED static void fill_pointwise_pair_s8_offset(const uint8_t *x, size_t plane,
                                                    int32_t C, int16_t *col0, int16_t *col1)
{
    fill_pointwise_pair(x, plane, C, col0, col1, 2);
}

/* A layer whose output pixel px reads input pixel px alone (fill_pointwise_pair). */
Q8_INLINE int is_unit_pointwise(const q8_dims *input, const q8_dims *output,
                                const q8_window *win)
{
    return win->kernel_h == 1 && win->kernel_w == 1 && win->stride_h == 1 &&
           win->stride_w == 1 && win->pad_top == 0 && win->pad_left == 0 &&
           input->h == output->h && input->w == output->w;
}

/* The columns of pixels px and px + 1 (two) or px alone. */
Q8_INLINE void fill_pixels(const q8_dims *input, const q8_window *win, int32_t pad_value,
                           const uint8_t *x, int32_t px, int32_t OW, int two, int unit,
                           int16_t *col0, int16_t *col1, int is_signed)
{
    /* DSP cores only: elsewhere the convolutions run other kernels (Thumb-1, M3) or the
     * pairs would only add to the code the compiler builds (the host). */
    if (Q8_HAS_DSP && two && unit) {
        const size_t plane = (size_t)(input->h * input->w);
        if (is_signed == 2) {
            fill_pointwise_pair_s8_offset(x + px, plane, input->c, col0, col1);
        } else if (is_signed) {
            fill_pointwise_pair_s8(x + px, plane, input->c, col0, col1);
        } else {
            fill_pointwise_pair_u8(x + px, plane, input->c, col0, col1);
        }
        return;
    }
    fill(input, win, pad_value, x, px / OW, px % OW, col0, is_signed);
    if (two) {
        fill(input, win, pad_value, x, (px + 1) / OW, (px + 1) % OW, col1, is_signed);
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
Q8_INLINE void fill_slabs(const q8_dims *input, const q8_window *win, int32_t pad_value,
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
                o[0] = widen(tap, is_signed);
                o[1] = widen(tap + W, is_signed);
                o[2] = widen(tap + 2 * W, is_signed);
                o += 3;
                tap += plane;
            }
        } else {
            for (c = 0; c < C; c++) {
                const uint8_t *x_c = x + (size_t)c * plane + (size_t)iw;
                for (kh = 0; kh < KH; kh++) {
                    const int32_t ih = ih0 + kh * dh;
                    *o++ = (ih >= 0 && ih < H) ? widen(x_c + (size_t)ih * (size_t)W, is_signed)
                                               : pad;
                }
            }
        }
    }
}

/* Out of line, one per input type, as the column fills. */
Q8_UNUSED static void fill_slabs_s8(const q8_dims *input, const q8_window *win,
                                    int32_t pad_value, const uint8_t *x, int32_t oh,
                                    int32_t pw0, int32_t count, int32_t slab, int16_t *out)
{
    fill_slabs(input, win, pad_value, x, oh, pw0, count, slab, out, 1);
}

Q8_UNUSED static void fill_slabs_u8(const q8_dims *input, const q8_window *win,
                                    int32_t pad_value, const uint8_t *x, int32_t oh,
                                    int32_t pw0, int32_t count, int32_t slab, int16_t *out)
{
    fill_slabs(input, win, pad_value, x, oh, pw0, count, slab, out, 0);
}

Q8_UNUSED static void fill_slabs_s8_offset(const q8_dims *input, const q8_window *win,
                                           int32_t pad_value, const uint8_t *x, int32_t oh,
                                           int32_t pw0, int32_t count, int32_t slab,
                                           int16_t *out)
{
    fill_slabs(input, win, pad_value, x, oh, pw0, count, slab, out, 2);
}

Q8_INLINE void fill_slab_range(const q8_dims *input, const q8_window *win, int32_t pad_value,
                               const uint8_t *x, int32_t oh, int32_t pw0, int32_t count,
                               int32_t slab, int16_t *out, int is_signed)
{
    if (is_signed == 2) {
        fill_slabs_s8_offset(input, win, pad_value, x, oh, pw0, count, slab, out);
    } else if (is_signed) {
        fill_slabs_s8(input, win, pad_value, x, oh, pw0, count, slab, out);
    } else {
        fill_slabs_u8(input, win, pad_value, x, oh, pw0, count, slab, out);
    }
}

/* The slab buffer's size in taps: the chunk's slabs, then the last column's padding taps
 * past its KW slabs (zero, never filled). */
Q8_INLINE size_t slab_buffer_taps(int32_t chunk, int32_t stride_w, int32_t kernel_w,
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
               slab_buffer_taps(chunk_, sw_, KW_, slab_, (P)->k_padded) * sizeof(int16_t));   \
        for (n_ = 0; n_ < (P)->input.n; n_++) {                                              \
            const uint8_t *x_n_ = (X) + (size_t)n_ * in_image_;                              \
            uint8_t *y_n_ = (Y) + (size_t)n_ * (size_t)M_ * pixels_;                         \
            for (oh_ = 0; oh_ < OH_; oh_++) {                                                \
                for (ow0_ = 0; ow0_ < OW_; ow0_ += chunk_) {                                 \
                    const int32_t count_ = OW_ - ow0_ < chunk_ ? OW_ - ow0_ : chunk_;        \
                    fill_slab_range(&(P)->input, &(P)->window, (P)->pad_value, x_n_, oh_,    \
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

#if Q8_HAS_DSP
/* acc[r][j] += weight row r . column j for a pair of rows, interleaved per group of four
 * taps (one pointer), and columns c0 and c1: 16 multiply-accumulates per group in 8
 * q8_smlad, each widened weight pair used for both columns. */
#if Q8_ASM
/* The loop scheduled by hand: GCC 12 spills its counter and splits the loads (28
 * instructions per pass); here 20, about 21 cycles per 16 MACs on Cortex-M4 (the
 * pointer post-increments ride on the loads, which run in two pipelined runs of four and
 * two words, lr holding each widened weight pair), unrolled twice so that the counter and the
 * branch cost half as much: an odd count enters at the second copy. The C loop below is
 * the same computation. */
#define Q8_DOT_2X2_GROUP                                                                   \
    "ldr %[x0], [%[c0]], #4\n\t"                                                           \
    "ldr %[x1], [%[c1]], #4\n\t"                                                           \
    "ldr %[wa], [%[w]], #4\n\t"                                                            \
    "ldr %[wb], [%[w]], #4\n\t"                                                            \
    "sxtb16 lr, %[wa]\n\t"                                                                 \
    "smlad %[a00], lr, %[x0], %[a00]\n\t"                                                  \
    "smlad %[a01], lr, %[x1], %[a01]\n\t"                                                  \
    "sxtb16 lr, %[wb]\n\t"                                                                 \
    "smlad %[a10], lr, %[x0], %[a10]\n\t"                                                  \
    "smlad %[a11], lr, %[x1], %[a11]\n\t"                                                  \
    "ldr %[x0], [%[c0]], #4\n\t"                                                           \
    "ldr %[x1], [%[c1]], #4\n\t"                                                           \
    "sxtb16 lr, %[wa], ror #8\n\t"                                                         \
    "smlad %[a00], lr, %[x0], %[a00]\n\t"                                                  \
    "smlad %[a01], lr, %[x1], %[a01]\n\t"                                                  \
    "sxtb16 lr, %[wb], ror #8\n\t"                                                         \
    "smlad %[a10], lr, %[x0], %[a10]\n\t"                                                  \
    "smlad %[a11], lr, %[x1], %[a11]\n\t"

Q8_INLINE void dot_2x2(const int8_t *w, const int16_t *c0, const int16_t *c1,
                       int32_t groups, int32_t acc[4])
{
    int32_t a00 = acc[0], a01 = acc[1], a10 = acc[2], a11 = acc[3];
    uint32_t wa, wb, x0, x1;
    __asm__ volatile(
        "lsrs %[n], %[n], #1\n\t"
        "bcc 1f\n\t"
        "adds %[n], %[n], #1\n\t"
        "b 2f\n"
        ".p2align 2\n"
        "1:\n\t"
        Q8_DOT_2X2_GROUP
        "2:\n\t"
        Q8_DOT_2X2_GROUP
        "subs %[n], %[n], #1\n\t"
        "bne 1b\n"
        : [w] "+r"(w), [c0] "+r"(c0), [c1] "+r"(c1), [n] "+r"(groups), [a00] "+r"(a00),
          [a01] "+r"(a01), [a10] "+r"(a10), [a11] "+r"(a11), [wa] "=&r"(wa), [wb] "=&r"(wb),
          [x0] "=&r"(x0), [x1] "=&r"(x1)
        :
        : "lr", "cc", "memory");
    acc[0] = a00;
    acc[1] = a01;
    acc[2] = a10;
    acc[3] = a11;
}
#else
Q8_UNUSED static void dot_2x2(const int8_t *w, const int16_t *c0, const int16_t *c1,
                              int32_t groups, int32_t acc[4])
{
    const uint32_t *wp = (const uint32_t *)(const void *)w;
    int32_t a00 = acc[0], a01 = acc[1], a10 = acc[2], a11 = acc[3];
    do {
        const uint32_t wa = wp[0], wb = wp[1];
        const uint32_t x0_01 = q8_load32(c0), x1_01 = q8_load32(c1);
        uint32_t t = q8_sxtb16(wa);
        a00 = q8_smlad(t, x0_01, a00);
        a01 = q8_smlad(t, x1_01, a01);
        t = q8_sxtb16(wb);
        a10 = q8_smlad(t, x0_01, a10);
        a11 = q8_smlad(t, x1_01, a11);
        {
            const uint32_t x0_23 = q8_load32(c0 + 2), x1_23 = q8_load32(c1 + 2);
            t = q8_sxtb16_ror8(wa);
            a00 = q8_smlad(t, x0_23, a00);
            a01 = q8_smlad(t, x1_23, a01);
            t = q8_sxtb16_ror8(wb);
            a10 = q8_smlad(t, x0_23, a10);
            a11 = q8_smlad(t, x1_23, a11);
        }
        wp += 2;
        c0 += 4;
        c1 += 4;
    } while (--groups);
    acc[0] = a00;
    acc[1] = a01;
    acc[2] = a10;
    acc[3] = a11;
}
#endif
#else
/*
 * Cores without the DSP extension: one 32-bit multiply-accumulate per tap, four taps per
 * step with the weights in their stored order (w0, w2, w1, w3), modulo 2^32.
 */
Q8_INLINE uint32_t dot_group(const int8_t *w, const int16_t *c)
{
    return (uint32_t)(c[0] * w[0]) + (uint32_t)(c[1] * w[2]) + (uint32_t)(c[2] * w[1]) +
           (uint32_t)(c[3] * w[3]);
}

Q8_UNUSED static void dot_2x2(const int8_t *w, const int16_t *c0, const int16_t *c1,
                              int32_t groups, int32_t acc[4])
{
    uint32_t a00 = (uint32_t)acc[0], a01 = (uint32_t)acc[1];
    uint32_t a10 = (uint32_t)acc[2], a11 = (uint32_t)acc[3];
    do {
        a00 += dot_group(w, c0);
        a01 += dot_group(w, c1);
        a10 += dot_group(w + 4, c0);
        a11 += dot_group(w + 4, c1);
        w += 8;
        c0 += 4;
        c1 += 4;
    } while (--groups);
    acc[0] = (int32_t)a00;
    acc[1] = (int32_t)a01;
    acc[2] = (int32_t)a10;
    acc[3] = (int32_t)a11;
}
#endif

/*
 * The wide-weight variant (q8_conv_*_im2col_w16_*): weights stored as int16, two rows
 * interleaved per pair of taps ([row m: k, k+1][row m+1: k, k+1] ...), so one 64-bit load
 * gives both rows' operands for two taps and no widening is left in the inner loop:
 * 8 taps x 2 rows x 2 columns = 32 multiply-accumulates in 16 q8_smlad and 6 loads.
 * It costs twice the weight bytes of the int8 layout; the generator picks it when the
 * board's flash has room (--weights).
 */
#if Q8_HAS_DSP
#define Q8_W16_STEP(W, X, Y)                                                                   \
    do {                                                                                       \
        a00 = q8_smlad((uint32_t)(W), (X), a00);                                               \
        a01 = q8_smlad((uint32_t)(W), (Y), a01);                                               \
        a10 = q8_smlad((uint32_t)((W) >> 32), (X), a10);                                       \
        a11 = q8_smlad((uint32_t)((W) >> 32), (Y), a11);                                       \
    } while (0)

#if Q8_ASM
/* The loop by hand: per two taps, four word loads in one pipelined run (5 cycles on
 * Cortex-M4) and four SMLAD, 36 instructions and about 39 cycles per 32 MACs (GCC 12
 * splits the 64-bit loads and breaks the runs: about 46). The C loop below is the same
 * computation. */
#define Q8_DOT_W16_STEP                                                                    \
    "ldr %[x0], [%[c0]], #4\n\t"                                                           \
    "ldr %[x1], [%[c1]], #4\n\t"                                                           \
    "ldr %[wa], [%[w]], #4\n\t"                                                            \
    "ldr %[wb], [%[w]], #4\n\t"                                                            \
    "smlad %[a00], %[wa], %[x0], %[a00]\n\t"                                               \
    "smlad %[a01], %[wa], %[x1], %[a01]\n\t"                                               \
    "smlad %[a10], %[wb], %[x0], %[a10]\n\t"                                               \
    "smlad %[a11], %[wb], %[x1], %[a11]\n\t"

Q8_INLINE void dot_w16_2x2(const int16_t *w, const int16_t *c0, const int16_t *c1,
                           int32_t blocks, int32_t acc[4])
{
    int32_t a00 = acc[0], a01 = acc[1], a10 = acc[2], a11 = acc[3];
    uint32_t x0, x1, wa, wb;
    __asm__ volatile(
        ".p2align 2\n"
        "1:\n\t"
        Q8_DOT_W16_STEP
        Q8_DOT_W16_STEP
        Q8_DOT_W16_STEP
        Q8_DOT_W16_STEP
        "subs %[n], %[n], #1\n\t"
        "bne 1b\n"
        : [w] "+r"(w), [c0] "+r"(c0), [c1] "+r"(c1), [n] "+r"(blocks), [a00] "+r"(a00),
          [a01] "+r"(a01), [a10] "+r"(a10), [a11] "+r"(a11), [x0] "=&r"(x0), [x1] "=&r"(x1),
          [wa] "=&r"(wa), [wb] "=&r"(wb)
        :
        : "cc", "memory");
    acc[0] = a00;
    acc[1] = a01;
    acc[2] = a10;
    acc[3] = a11;
}
#else
/* acc[2r + j] += row r . column j over blocks * 8 taps; all pointers 8-byte aligned. */
Q8_INLINE void dot_w16_2x2(const int16_t *w, const int16_t *c0, const int16_t *c1,
                           int32_t blocks, int32_t acc[4])
{
    int32_t a00 = acc[0], a01 = acc[1], a10 = acc[2], a11 = acc[3];
    const uint64_t *wp = (const uint64_t *)(const void *)w;
    const uint64_t *p0 = (const uint64_t *)(const void *)c0;
    const uint64_t *p1 = (const uint64_t *)(const void *)c1;
    do {
        uint64_t x = p0[0], y = p1[0], wv;
        wv = wp[0];
        Q8_W16_STEP(wv, (uint32_t)x, (uint32_t)y);
        wv = wp[1];
        Q8_W16_STEP(wv, (uint32_t)(x >> 32), (uint32_t)(y >> 32));
        x = p0[1];
        y = p1[1];
        wv = wp[2];
        Q8_W16_STEP(wv, (uint32_t)x, (uint32_t)y);
        wv = wp[3];
        Q8_W16_STEP(wv, (uint32_t)(x >> 32), (uint32_t)(y >> 32));
        wp += 4;
        p0 += 2;
        p1 += 2;
    } while (--blocks);
    acc[0] = a00;
    acc[1] = a01;
    acc[2] = a10;
    acc[3] = a11;
}
#endif
#else
/* Plain 32-bit multiply-accumulates over the same layout, modulo 2^32. */
Q8_UNUSED static void dot_w16_2x2(const int16_t *w, const int16_t *c0, const int16_t *c1,
                        int32_t blocks, int32_t acc[4])
{
    uint32_t a00 = (uint32_t)acc[0], a01 = (uint32_t)acc[1];
    uint32_t a10 = (uint32_t)acc[2], a11 = (uint32_t)acc[3];
    int32_t i;
    for (i = blocks * 4; i > 0; i--) {
        const int32_t x0 = c0[0], x1 = c0[1], y0 = c1[0], y1 = c1[1];
        a00 += (uint32_t)(w[0] * x0 + w[1] * x1);
        a01 += (uint32_t)(w[0] * y0 + w[1] * y1);
        a10 += (uint32_t)(w[2] * x0 + w[3] * x1);
        a11 += (uint32_t)(w[2] * y0 + w[3] * y1);
        w += 4;
        c0 += 2;
        c1 += 2;
    }
    acc[0] = (int32_t)a00;
    acc[1] = (int32_t)a01;
    acc[2] = (int32_t)a10;
    acc[3] = (int32_t)a11;
}
#endif

/*
 * The block layout (q8_conv_*_im2col_w16b_*), for cores without the DSP extension and
 * vectorizing compilers: each pair of rows interleaved in blocks of 8 taps ([row m: 8
 * taps][row m+1: 8 taps] ...), so the loop over a block is a plain widening multiply-add
 * reduction the compiler vectorizes (e.g. PMADDWD). The products are summed in int32 from
 * zero, which the generator keeps exact (|w * x| <= 128 * 255 and k < 2^16), then added
 * to the accumulators modulo 2^32.
 */
Q8_UNUSED static void dot_w16b_2x2(const int16_t *w, const int16_t *c0, const int16_t *c1,
                         int32_t blocks, int32_t acc[4])
{
    int32_t s00 = 0, s01 = 0, s10 = 0, s11 = 0;
    int32_t b, j;
    for (b = 0; b < blocks; b++) {
        for (j = 0; j < 8; j++) {
            s00 += w[j] * c0[j];
            s01 += w[j] * c1[j];
            s10 += w[8 + j] * c0[j];
            s11 += w[8 + j] * c1[j];
        }
        w += 16;
        c0 += 8;
        c1 += 8;
    }
    acc[0] = (int32_t)((uint32_t)acc[0] + (uint32_t)s00);
    acc[1] = (int32_t)((uint32_t)acc[1] + (uint32_t)s01);
    acc[2] = (int32_t)((uint32_t)acc[2] + (uint32_t)s10);
    acc[3] = (int32_t)((uint32_t)acc[3] + (uint32_t)s11);
}

enum { W16_PAIRS, W16_BLOCKS };

/* The weight layouts of the 2x2 blocks: int8 (dot_2x2), int16 in row pairs
 * (dot_w16_2x2), int16 in blocks of 8 taps (dot_w16b_2x2). */
enum { DOT_I8, DOT_W16_PAIRS, DOT_W16_BLOCKS };

/* One 2x2 block: a pair of weight rows (at w) against columns c0 and c1; count is the
 * layout's loop count (groups of 4 taps for int8, blocks of 8 for int16). */
Q8_INLINE void dot_block(int kind, const uint8_t *w, const int16_t *c0, const int16_t *c1,
                         int32_t count, int32_t acc[4])
{
    if (kind == DOT_I8) {
        dot_2x2((const int8_t *)(const void *)w, c0, c1, count, acc);
    } else if (kind == DOT_W16_PAIRS) {
        dot_w16_2x2((const int16_t *)(const void *)w, c0, c1, count, acc);
    } else {
        dot_w16b_2x2((const int16_t *)(const void *)w, c0, c1, count, acc);
    }
}

/*
 * The row loop of the common case (both pixels, rows in full pairs, a saturating float
 * mode) in one piece of assembly, on cores with VCVTR: each block's dot loop, then its
 * four requantizations (two VMOV pairs into the FPU, VCVT, VMUL, VCVTR, back) and byte
 * stores, then the next pair of rows. The dot loop takes every register, so what the
 * block loop keeps (bias and scale pointers, the output pointer, the columns, counts) is
 * read from a small struct on the stack; the weight pointer runs on from one row pair to
 * the next. About 70 cycles a block on Cortex-M4 besides the dot loop, against about 95
 * for the C loop (GCC spills more and reloads the constants of both channels). The C
 * loop in conv_rows is the same computation.
 */
#if Q8_HAS_DSP && Q8_ASM && Q8_HAS_VCVTR
#define Q8_FUSED_ROWS 1

typedef struct {
    const int16_t *c0, *c1;
    int32_t count; /* the dot loop's count */
    const int32_t *bias;
    const float *scale;
    uint8_t *y;
    int32_t row_step;
    int32_t zero_point;
    int32_t pairs; /* row pairs left */
} fused_rows_state;

#define Q8_I8_DOT_LOOP                                                                     \
    "lsrs %[n], %[n], #1\n\t"                                                              \
    "bcc 2f\n\t"                                                                           \
    "adds %[n], %[n], #1\n\t"                                                              \
    "b 3f\n"                                                                               \
    ".p2align 2\n"                                                                         \
    "2:\n\t"                                                                               \
    Q8_DOT_2X2_GROUP                                                                       \
    "3:\n\t"                                                                               \
    Q8_DOT_2X2_GROUP                                                                       \
    "subs %[n], %[n], #1\n\t"                                                              \
    "bne 2b\n\t"

#define Q8_W16_DOT_LOOP                                                                    \
    ".p2align 2\n"                                                                         \
    "2:\n\t"                                                                               \
    Q8_DOT_W16_STEP                                                                        \
    Q8_DOT_W16_STEP                                                                        \
    Q8_DOT_W16_STEP                                                                        \
    Q8_DOT_W16_STEP                                                                        \
    "subs %[n], %[n], #1\n\t"                                                              \
    "bne 2b\n\t"

/* One output byte: plus the zero point (in x0), saturated, stored at ADDR. */
#define Q8_FUSED_STORE(SAT, A, ADDR)                                                       \
    "add " A ", " A ", %[x0]\n\t"                                                          \
    SAT " " A ", #8, " A "\n\t"                                                            \
    "strb " A ", " ADDR "\n\t"

#define Q8_FUSED_ROWS_ASM(DOT_LOOP, SCALES_ONCE, SCALES_PER_BLOCK, SAT)                    \
    __asm__ volatile(                                                                      \
        SCALES_ONCE                                                                        \
        "1:\n\t"                                                                           \
        "ldr %[c0], %[c0m]\n\t"                                                            \
        "ldr %[c1], %[c1m]\n\t"                                                            \
        "ldr %[n], %[biasm]\n\t"                                                           \
        "ldrd %[a00], %[a10], [%[n]], #8\n\t"                                              \
        "str %[n], %[biasm]\n\t"                                                           \
        "mov %[a01], %[a00]\n\t"                                                           \
        "mov %[a11], %[a10]\n\t"                                                           \
        "ldr %[n], %[countm]\n\t"                                                          \
        DOT_LOOP                                                                           \
        SCALES_PER_BLOCK                                                                   \
        "vmov s14, s15, %[a00], %[a01]\n\t"                                                \
        "vmov s10, s11, %[a10], %[a11]\n\t"                                                \
        "vcvt.f32.s32 s14, s14\n\t"                                                        \
        "vcvt.f32.s32 s15, s15\n\t"                                                        \
        "vcvt.f32.s32 s10, s10\n\t"                                                        \
        "vcvt.f32.s32 s11, s11\n\t"                                                        \
        "vmul.f32 s14, s14, s12\n\t"                                                       \
        "vmul.f32 s15, s15, s12\n\t"                                                       \
        "vmul.f32 s10, s10, s13\n\t"                                                       \
        "vmul.f32 s11, s11, s13\n\t"                                                       \
        "vcvtr.s32.f32 s14, s14\n\t"                                                       \
        "vcvtr.s32.f32 s15, s15\n\t"                                                       \
        "vcvtr.s32.f32 s10, s10\n\t"                                                       \
        "vcvtr.s32.f32 s11, s11\n\t"                                                       \
        "vmov %[a00], %[a01], s14, s15\n\t"                                                \
        "vmov %[a10], %[a11], s10, s11\n\t"                                                \
        "ldr %[x0], %[zpm]\n\t"                                                            \
        "ldr %[x1], %[ym]\n\t"                                                             \
        "ldr %[wb], %[rowm]\n\t"                                                           \
        Q8_FUSED_STORE(SAT, "%[a00]", "[%[x1]]")                                           \
        Q8_FUSED_STORE(SAT, "%[a01]", "[%[x1], #1]")                                       \
        "add %[x1], %[x1], %[wb]\n\t"                                                      \
        Q8_FUSED_STORE(SAT, "%[a10]", "[%[x1]]")                                           \
        Q8_FUSED_STORE(SAT, "%[a11]", "[%[x1], #1]")                                       \
        "add %[x1], %[x1], %[wb]\n\t"                                                      \
        "str %[x1], %[ym]\n\t"                                                             \
        "ldr %[n], %[pairsm]\n\t"                                                          \
        "subs %[n], %[n], #1\n\t"                                                          \
        "str %[n], %[pairsm]\n\t"                                                          \
        "bne 1b\n"                                                                         \
        : [w] "+r"(w), [c0] "=&r"(c0), [c1] "=&r"(c1), [n] "=&r"(n), [a00] "=&r"(a00),   \
          [a01] "=&r"(a01), [a10] "=&r"(a10), [a11] "=&r"(a11), [wa] "=&r"(wa),           \
          [wb] "=&r"(wb), [x0] "=&r"(x0), [x1] "=&r"(x1), [biasm] "+m"(st.bias),           \
          [scalem] "+m"(st.scale), [ym] "+m"(st.y), [pairsm] "+m"(st.pairs)                \
        : [c0m] "m"(st.c0), [c1m] "m"(st.c1), [countm] "m"(st.count),                      \
          [zpm] "m"(st.zero_point), [rowm] "m"(st.row_step)                                \
        : "lr", "s10", "s11", "s12", "s13", "s14", "s15", "cc", "memory")

/* Per-channel scales: two a block; one scale: loaded once. */
#define Q8_SCALES_PER_CHANNEL                                                              \
    "ldr %[wa], %[scalem]\n\t"                                                             \
    "vldmia %[wa]!, {s12, s13}\n\t"                                                        \
    "str %[wa], %[scalem]\n\t"
#define Q8_SCALE_ONCE                                                                      \
    "ldr %[wa], %[scalem]\n\t"                                                             \
    "vldr s12, [%[wa]]\n\t"                                                                \
    "vmov.f32 s13, s12\n\t"

#define Q8_FUSED_ROWS_SAT(DOT_LOOP, SAT)                                                   \
    do {                                                                                   \
        if (per_channel) {                                                                 \
            Q8_FUSED_ROWS_ASM(DOT_LOOP, "", Q8_SCALES_PER_CHANNEL, SAT);                   \
        } else {                                                                           \
            Q8_FUSED_ROWS_ASM(DOT_LOOP, Q8_SCALE_ONCE, "", SAT);                           \
        }                                                                                  \
    } while (0)

/* All M / 2 row pairs on columns c0 and c1 (both pixels), in a saturating mode; kind is
 * DOT_I8 or DOT_W16_PAIRS. */
Q8_INLINE void fused_rows(int kind, const uint8_t *weights, const int16_t *col0,
                          const int16_t *col1, uint8_t *y0, int32_t pixels, int32_t count,
                          const int32_t *bias, const float *scale, int per_channel,
                          int32_t zero_point, int32_t pairs, int mode)
{
    fused_rows_state st;
    const uint8_t *w = weights;
    const int16_t *c0, *c1;
    int32_t n, a00, a01, a10, a11;
    uint32_t wa, wb, x0, x1;
    st.c0 = col0;
    st.c1 = col1;
    st.count = count;
    st.bias = bias;
    st.scale = scale;
    st.y = y0;
    st.row_step = pixels;
    st.zero_point = zero_point;
    st.pairs = pairs;
    if (kind == DOT_I8) {
        if (mode == Q8_RQ_FREQ_BOUNDED_S8) {
            Q8_FUSED_ROWS_SAT(Q8_I8_DOT_LOOP, "ssat");
        } else {
            Q8_FUSED_ROWS_SAT(Q8_I8_DOT_LOOP, "usat");
        }
    } else {
        if (mode == Q8_RQ_FREQ_BOUNDED_S8) {
            Q8_FUSED_ROWS_SAT(Q8_W16_DOT_LOOP, "ssat");
        } else {
            Q8_FUSED_ROWS_SAT(Q8_W16_DOT_LOOP, "usat");
        }
    }
    (void)w;
    (void)c0;
    (void)c1;
    (void)n;
    (void)a00;
    (void)a01;
    (void)a10;
    (void)a11;
    (void)wa;
    (void)wb;
    (void)x0;
    (void)x1;
}
#else
#define Q8_FUSED_ROWS 0
#endif

/* The weights of a kernel as the shared row loop reads them. */
typedef struct {
    const uint8_t *weights; /* row pairs, pair_bytes apart */
    size_t pair_bytes;
    int32_t count; /* dot_block's loop count */
    int32_t channels;
    const int32_t *bias;
    const q8_requant_params *requant;
} conv_rows_job;

/*
 * Every output channel, in pairs, on columns col0 and c1 (c1 == col0 and two == 0 for a
 * lone pixel), requantized and stored at y0 + m * pixels. Inlined with kind, two and
 * mode constants. An odd last row is the generator's zero row, a lone last pixel taken
 * twice: their results are not stored.
 */
Q8_INLINE void conv_rows(const conv_rows_job *job, const row_requant *layer,
                         const int16_t *col0, const int16_t *c1, uint8_t *y0, int32_t pixels,
                         int two, int mode, int kind)
{
    /* Loop invariants in locals: the byte stores below may alias the parameters. */
    const int32_t M = job->channels, count = job->count;
    const uint8_t *const weights = job->weights;
    const size_t pair_bytes = job->pair_bytes;
    const int32_t *const bias = job->bias;
    const float *const scale = job->requant->scale;
    const int32_t *const mult = job->requant->mult, *const exp = job->requant->exp;
    const int32_t ch_step = job->requant->per_channel ? 1 : 0;
    int32_t m;
#if Q8_HAS_DSP
    /* The common case without its tests: both pixels, rows in full pairs (on DSP cores,
     * where it saves about 20 cycles a block; elsewhere the copy would only double the
     * code the compiler has to build). */
    if (two && !(M & 1)) {
        const uint8_t *w = weights;
#if Q8_FUSED_ROWS
        if (kind != DOT_W16_BLOCKS &&
            (mode == Q8_RQ_FREQ_BOUNDED_S8 || mode == Q8_RQ_FREQ_BOUNDED_U8)) {
            fused_rows(kind, weights, col0, c1, y0, pixels, count, bias, scale, ch_step,
                       layer->zero_point, M / 2, mode);
            return;
        }
#endif
        const int32_t *b = bias;
        const size_t row_step = (size_t)pixels;
        for (m = 0; m < M; m += 2) {
            const row_requant r0 = channel_constants(*layer, scale, mult, exp, m * ch_step,
                                                     mode);
            const row_requant r1 = channel_constants(*layer, scale, mult, exp,
                                                     (m + 1) * ch_step, mode);
            int32_t acc[4];
            acc[0] = acc[1] = b[0];
            acc[2] = acc[3] = b[1];
            dot_block(kind, w, col0, c1, count, acc);
            requantize_pair(&r0, acc[0], acc[1], &y0[0], &y0[1], mode);
            requantize_pair(&r1, acc[2], acc[3], &y0[row_step], &y0[row_step + 1], mode);
            y0 += 2u * row_step;
            w += pair_bytes;
            b += 2;
        }
        return;
    }
#endif
    for (m = 0; m < M; m += 2) {
        const row_requant r0 = channel_constants(*layer, scale, mult, exp, m * ch_step, mode);
        int32_t acc[4];
        acc[0] = acc[1] = bias[m];
        acc[2] = acc[3] = bias[m + 1];
        dot_block(kind, weights + (size_t)(m / 2) * pair_bytes, col0, c1, count, acc);
        if (two) {
            requantize_pair(&r0, acc[0], acc[1], &y0[0], &y0[1], mode);
        } else {
            y0[0] = requantize(&r0, acc[0], mode);
        }
        y0 += pixels;
        if (m + 1 < M) {
            const row_requant r1 = channel_constants(*layer, scale, mult, exp,
                                                     (m + 1) * ch_step, mode);
            if (two) {
                requantize_pair(&r1, acc[2], acc[3], &y0[0], &y0[1], mode);
            } else {
                y0[0] = requantize(&r1, acc[2], mode);
            }
            y0 += pixels;
        }
    }
}

/* The int8-weight rows: conv_rows over q8_conv_im2col_params. */
Q8_INLINE void i8_rows(const q8_conv_im2col_params *p, const row_requant *layer,
                       const int16_t *col0, const int16_t *c1, uint8_t *y0, int32_t pixels,
                       int two, int mode)
{
    conv_rows_job job;
    job.weights = (const uint8_t *)(const void *)p->weights;
    job.pair_bytes = 2u * (size_t)p->k_padded;
    job.count = p->k_padded / 4;
    job.channels = p->output.c;
    job.bias = p->bias;
    job.requant = &p->requant;
    conv_rows(&job, layer, col0, c1, y0, pixels, two, mode, DOT_I8);
}

Q8_INLINE void conv_im2col(const q8_conv_im2col_params *p, const uint8_t *x,
                           uint8_t *y, int16_t *Q8_RESTRICT scratch, int is_signed,
                           int mode)
{
    const int32_t M = p->output.c, OW = p->output.w, k_padded = p->k_padded;
    const int32_t pixels = p->output.h * OW;
    const size_t in_image = (size_t)p->input.c * (size_t)(p->input.h * p->input.w);
    const row_requant layer = layer_constants(&p->requant);
    int16_t *col0 = scratch, *col1 = scratch + k_padded;
    const int unit = is_unit_pointwise(&p->input, &p->output, &p->window);
    int32_t n, px;
    if (p->slab) {
#define Q8_I8_SLAB_ROWS(C0, C1, OUT, TWO) i8_rows(p, &layer, (C0), (C1), (OUT), pixels, (TWO), mode)
        Q8_SLAB_LOOP(p, x, y, scratch, is_signed, Q8_I8_SLAB_ROWS);
#undef Q8_I8_SLAB_ROWS
        return;
    }
    zero_column_tails(scratch, p->input.c * p->window.kernel_h * p->window.kernel_w,
                      p->k_padded);
    for (n = 0; n < p->input.n; n++) {
        const uint8_t *x_n = x + (size_t)n * in_image;
        uint8_t *y_n = y + (size_t)n * (size_t)M * (size_t)pixels;
        for (px = 0; px < pixels; px += 2) {
            const int two = px + 1 < pixels;
            fill_pixels(&p->input, &p->window, p->pad_value, x_n, px, OW, two, unit, col0,
                        col1, is_signed);
            i8_rows(p, &layer, col0, two ? col1 : col0, y_n + (size_t)px, pixels, two, mode);
        }
    }
}


/*
 * Wide weights: rows in pairs (an odd last row is paired with a zero row whose outputs
 * are not stored) and pixels in pairs (an odd last pixel is multiplied twice), so every
 * block is one 2x2 call.
 */
/* The int16-weight rows (both layouts): conv_rows over q8_conv_im2col_w16_params. */
Q8_INLINE void w16_rows(const q8_conv_im2col_w16_params *p, const row_requant *layer,
                        const int16_t *col0, const int16_t *c1, uint8_t *y0, int32_t pixels,
                        int two, int mode, int layout)
{
    conv_rows_job job;
    job.weights = (const uint8_t *)(const void *)p->weights;
    job.pair_bytes = 4u * (size_t)p->k_padded;
    job.count = p->k_padded / 8;
    job.channels = p->output.c;
    job.bias = p->bias;
    job.requant = &p->requant;
    conv_rows(&job, layer, col0, c1, y0, pixels, two, mode,
              layout == W16_PAIRS ? DOT_W16_PAIRS : DOT_W16_BLOCKS);
}

Q8_INLINE void conv_im2col_w16(const q8_conv_im2col_w16_params *p, const uint8_t *x,
                               uint8_t *y, int16_t *Q8_RESTRICT scratch,
                               int is_signed, int mode, int layout)
{
    const int32_t M = p->output.c, OW = p->output.w, k_padded = p->k_padded;
    const int32_t pixels = p->output.h * OW;
    const size_t in_image = (size_t)p->input.c * (size_t)(p->input.h * p->input.w);
    const row_requant layer = layer_constants(&p->requant);
    int16_t *col0 = scratch, *col1 = scratch + k_padded;
    const int unit = is_unit_pointwise(&p->input, &p->output, &p->window);
    int32_t n, px;
    if (p->slab) {
#define Q8_W16_SLAB_ROWS(C0, C1, OUT, TWO)                                                     \
    w16_rows(p, &layer, (C0), (C1), (OUT), pixels, (TWO), mode, layout)
        Q8_SLAB_LOOP(p, x, y, scratch, is_signed, Q8_W16_SLAB_ROWS);
#undef Q8_W16_SLAB_ROWS
        return;
    }
    zero_column_tails(scratch, p->input.c * p->window.kernel_h * p->window.kernel_w, k_padded);
    for (n = 0; n < p->input.n; n++) {
        const uint8_t *x_n = x + (size_t)n * in_image;
        uint8_t *y_n = y + (size_t)n * (size_t)M * (size_t)pixels;
        for (px = 0; px + 1 < pixels; px += 2) {
            fill_pixels(&p->input, &p->window, p->pad_value, x_n, px, OW, 1, unit, col0, col1,
                        is_signed);
            w16_rows(p, &layer, col0, col1, y_n + (size_t)px, pixels, 1, mode, layout);
        }
        if (px < pixels) { /* a last pixel alone */
            fill(&p->input, &p->window, p->pad_value, x_n, px / OW, px % OW, col0,
                 is_signed);
            w16_rows(p, &layer, col0, col0, y_n + (size_t)px, pixels, 0, mode, layout);
        }
    }
}


/*
 * The unsigned-byte variant (q8_conv_*_im2col_b8_*), for cores without the DSP extension
 * (Cortex-M0/M0+/M3): weights stored as u = w + 128 (one byte each, row by row) and
 * the columns as x' = x + 128 for
 * int8 inputs (x for uint8), both non-negative, so every operand is an unsigned load
 * with an immediate offset, which is all Thumb-1 has. With S = sum x' over the column:
 *   sum u x' - 128 S = sum w x + off * sum w        (off = 128 for int8 inputs, else 0)
 * and bias[m] = B[m] - (x_zp + off) * sum w[m] (modulo 2^32) completes the accumulator.
 */
#if defined(__GNUC__) && defined(__thumb__) && !defined(__thumb2__) && \
    defined(__OPTIMIZE__) && !defined(__OPTIMIZE_SIZE__) && !defined(Q8_NO_ASM)
/* Thumb-1 by hand (GCC 12 spills in this loop: 68 instructions per 16 MACs; at -Os GCC
 * keeps the high registers out of use, and the C loop runs): per tap one
 * byte and two halfword loads with immediate offsets, two MULS, two ADDs; 60 instructions
 * and about 87 cycles per 16 MACs on Cortex-M0+. The accumulators and the end sit in
 * high registers ("h": ADD and CMP take them; in Thumb-1 "r" means r0-r7), so six low
 * registers suffice even beside a frame pointer.
 * The C loop below is the same computation. */
#define Q8_B8_TAP_ASM(J, J2)                                                                \
    "ldrb %[u], [%[w], #" #J "]\n\t"                                                        \
    "ldrh %[x0], [%[c0], #" #J2 "]\n\t"                                                     \
    "ldrh %[x1], [%[c1], #" #J2 "]\n\t"                                                     \
    "muls %[x0], %[u]\n\t"                                                                 \
    "muls %[x1], %[u]\n\t"                                                                 \
    "add %[a0], %[x0]\n\t"                                                                 \
    "add %[a1], %[x1]\n\t"

Q8_UNUSED static void dot_b8_1x2(const uint8_t *w, const int16_t *c0, const int16_t *c1,
                                 int32_t blocks, uint32_t acc[2])
{
    uint32_t a0 = acc[0], a1 = acc[1], u, x0, x1;
    const uint8_t *const end = w + (size_t)blocks * 8u;
    /* GCC hands Thumb-1 inline assembly over in divided syntax. */
    __asm__ volatile(
        ".syntax unified\n"
        "1:\n\t"
        Q8_B8_TAP_ASM(0, 0)
        Q8_B8_TAP_ASM(1, 2)
        Q8_B8_TAP_ASM(2, 4)
        Q8_B8_TAP_ASM(3, 6)
        Q8_B8_TAP_ASM(4, 8)
        Q8_B8_TAP_ASM(5, 10)
        Q8_B8_TAP_ASM(6, 12)
        Q8_B8_TAP_ASM(7, 14)
        "adds %[w], #8\n\t"
        "adds %[c0], #16\n\t"
        "adds %[c1], #16\n\t"
        "cmp %[w], %[end]\n\t"
        "bne 1b\n"
        : [w] "+l"(w), [c0] "+l"(c0), [c1] "+l"(c1), [a0] "+h"(a0), [a1] "+h"(a1),
          [u] "=&l"(u), [x0] "=&l"(x0), [x1] "=&l"(x1)
        : [end] "h"(end)
        : "cc", "memory");
    acc[0] = a0;
    acc[1] = a1;
}
#else
Q8_UNUSED static void dot_b8_1x2(const uint8_t *w, const int16_t *c0, const int16_t *c1,
                       int32_t blocks, uint32_t acc[2])
{
    uint32_t a0 = acc[0], a1 = acc[1];
    /* Written out, so that every load takes an immediate offset; one row and two
     * columns keep all values in the eight low registers Thumb-1 multiplies with. */
#define Q8_B8_TAP(J)                                                                           \
    do {                                                                                       \
        const uint32_t u = w[J];                                                               \
        a0 += u * (uint16_t)c0[J];                                                             \
        a1 += u * (uint16_t)c1[J];                                                             \
    } while (0)
    for (; blocks > 0; blocks--) {
        Q8_B8_TAP(0);
        Q8_B8_TAP(1);
        Q8_B8_TAP(2);
        Q8_B8_TAP(3);
        Q8_B8_TAP(4);
        Q8_B8_TAP(5);
        Q8_B8_TAP(6);
        Q8_B8_TAP(7);
        w += 8;
        c0 += 8;
        c1 += 8;
    }
#undef Q8_B8_TAP
    acc[0] = a0;
    acc[1] = a1;
}
#endif

/* One row by four columns (Thumb-1 cores, columns == 4): the weight byte is loaded once
 * for four taps, 13 instructions per four multiply-accumulates against 14 for two
 * passes of the 1 x 2 loop, and the per-row work of the caller (requantization constants,
 * bias, call) is shared by four outputs. Seven low registers: all of r0-r6 beside the
 * frame pointer; the accumulators and the end in high ones. */
#if defined(__GNUC__) && defined(__thumb__) && !defined(__thumb2__) && \
    defined(__OPTIMIZE__) && !defined(__OPTIMIZE_SIZE__) && !defined(Q8_NO_ASM)
#define Q8_B8_TAP4_ASM(J, J2)                                                               \
    "ldrb %[u], [%[w], #" #J "]\n\t"                                                        \
    "ldrh %[x], [%[c0], #" #J2 "]\n\t"                                                      \
    "muls %[x], %[u]\n\t"                                                                  \
    "add %[a0], %[x]\n\t"                                                                  \
    "ldrh %[x], [%[c1], #" #J2 "]\n\t"                                                      \
    "muls %[x], %[u]\n\t"                                                                  \
    "add %[a1], %[x]\n\t"                                                                  \
    "ldrh %[x], [%[c2], #" #J2 "]\n\t"                                                      \
    "muls %[x], %[u]\n\t"                                                                  \
    "add %[a2], %[x]\n\t"                                                                  \
    "ldrh %[x], [%[c3], #" #J2 "]\n\t"                                                      \
    "muls %[x], %[u]\n\t"                                                                  \
    "add %[a3], %[x]\n\t"

Q8_INLINE void dot_b8_1x4(const uint8_t *w, const int16_t *const cols[4],
                          int32_t blocks, uint32_t acc[4])
{
    const int16_t *c0 = cols[0], *c1 = cols[1], *c2 = cols[2], *c3 = cols[3];
    uint32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3], u, x;
    const uint8_t *const end = w + (size_t)blocks * 8u;
    /* Sixteen taps a pass; an odd count of 8-tap blocks (bit 3 of end - w, shifted out
     * into the carry) enters at the second half with the pointers 8 taps back. The loop
     * is too long for a conditional branch back. */
    __asm__ volatile(
        ".syntax unified\n\t"
        "mov %[u], %[end]\n\t"
        "subs %[u], %[u], %[w]\n\t"
        "lsrs %[u], %[u], #4\n\t"
        "bcc 1f\n\t"
        "subs %[w], #8\n\t"
        "subs %[c0], #16\n\t"
        "subs %[c1], #16\n\t"
        "subs %[c2], #16\n\t"
        "subs %[c3], #16\n\t"
        "b 2f\n"
        "1:\n\t"
        Q8_B8_TAP4_ASM(0, 0)
        Q8_B8_TAP4_ASM(1, 2)
        Q8_B8_TAP4_ASM(2, 4)
        Q8_B8_TAP4_ASM(3, 6)
        Q8_B8_TAP4_ASM(4, 8)
        Q8_B8_TAP4_ASM(5, 10)
        Q8_B8_TAP4_ASM(6, 12)
        Q8_B8_TAP4_ASM(7, 14)
        "2:\n\t"
        Q8_B8_TAP4_ASM(8, 16)
        Q8_B8_TAP4_ASM(9, 18)
        Q8_B8_TAP4_ASM(10, 20)
        Q8_B8_TAP4_ASM(11, 22)
        Q8_B8_TAP4_ASM(12, 24)
        Q8_B8_TAP4_ASM(13, 26)
        Q8_B8_TAP4_ASM(14, 28)
        Q8_B8_TAP4_ASM(15, 30)
        "adds %[w], #16\n\t"
        "adds %[c0], #32\n\t"
        "adds %[c1], #32\n\t"
        "adds %[c2], #32\n\t"
        "adds %[c3], #32\n\t"
        "cmp %[w], %[end]\n\t"
        "beq 3f\n\t"
        "b 1b\n"
        "3:\n"
        : [w] "+l"(w), [c0] "+l"(c0), [c1] "+l"(c1), [c2] "+l"(c2), [c3] "+l"(c3),
          [a0] "+h"(a0), [a1] "+h"(a1), [a2] "+h"(a2), [a3] "+h"(a3), [u] "=&l"(u),
          [x] "=&l"(x)
        : [end] "h"(end)
        : "cc", "memory");
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}
#else
Q8_UNUSED static void dot_b8_1x4(const uint8_t *w, const int16_t *const cols[4],
                                 int32_t blocks, uint32_t acc[4])
{
    const int32_t k_padded = blocks * 8;
    int32_t k, i;
    for (i = 0; i < 4; i++) {
        uint32_t a = acc[i];
        for (k = 0; k < k_padded; k++) {
            a += (uint32_t)w[k] * (uint16_t)cols[i][k];
        }
        acc[i] = a;
    }
}
#endif

/* Two rows (k_padded apart) by two columns, for Thumb-2 cores (M3), whose registers
 * hold the four accumulators and whose MLA multiplies and adds in one instruction. */
Q8_UNUSED static void dot_b8_2x2(const uint8_t *w0, int32_t k_padded, const int16_t *c0,
                       const int16_t *c1, int32_t blocks, uint32_t acc[4])
{
    const uint8_t *w1 = w0 + k_padded;
    uint32_t a00 = acc[0], a01 = acc[1], a10 = acc[2], a11 = acc[3];
#define Q8_B8_TAP2(J)                                                                          \
    do {                                                                                       \
        const uint32_t u0 = w0[J], u1 = w1[J];                                                 \
        const uint32_t x0 = (uint16_t)c0[J], x1 = (uint16_t)c1[J];                             \
        a00 += u0 * x0;                                                                        \
        a01 += u0 * x1;                                                                        \
        a10 += u1 * x0;                                                                        \
        a11 += u1 * x1;                                                                        \
    } while (0)
    for (; blocks > 0; blocks--) {
        Q8_B8_TAP2(0);
        Q8_B8_TAP2(1);
        Q8_B8_TAP2(2);
        Q8_B8_TAP2(3);
        Q8_B8_TAP2(4);
        Q8_B8_TAP2(5);
        Q8_B8_TAP2(6);
        Q8_B8_TAP2(7);
        w0 += 8;
        w1 += 8;
        c0 += 8;
        c1 += 8;
    }
#undef Q8_B8_TAP2
    acc[0] = a00;
    acc[1] = a01;
    acc[2] = a10;
    acc[3] = a11;
}

/* Rows in pairs where the core has the registers for it (not Thumb-1). */
#if defined(__ARM_ARCH_ISA_THUMB) && __ARM_ARCH_ISA_THUMB == 1
#define Q8_B8_ROW_PAIRS 0
#else
#define Q8_B8_ROW_PAIRS 1
#endif

/* k_padded is a multiple of 8: eight taps a pass, with immediate offsets. */
Q8_UNUSED static uint32_t column_sum(const int16_t *column, int32_t k_padded)
{
    uint32_t sum = 0;
    const int16_t *const end = column + k_padded;
    for (; column < end; column += 8) {
        sum += (uint32_t)(uint16_t)column[0] + (uint16_t)column[1] + (uint16_t)column[2] +
               (uint16_t)column[3] + (uint16_t)column[4] + (uint16_t)column[5] +
               (uint16_t)column[6] + (uint16_t)column[7];
    }
    return sum;
}

/* Four pixels per pass (columns == 4, Thumb-1 cores): their columns filled and summed,
 * then every output channel's row against all four, with the channel's requantization
 * prepared once per pass. A last pass of three repeats the first column as the fourth
 * (its output is not stored); one of one or two pixels takes the 1 x 2 loop. */
Q8_INLINE void conv_b8_quads(const q8_conv_im2col_b8_params *p, const uint8_t *x,
                             uint8_t *y, int16_t *Q8_RESTRICT scratch,
                             int fill_mode, int mode)
{
    const int32_t M = p->output.c, OW = p->output.w, k_padded = p->k_padded;
    const int32_t pixels = p->output.h * OW, blocks = k_padded / 8;
    const size_t in_image = (size_t)p->input.c * (size_t)(p->input.h * p->input.w);
    const uint8_t *const weights = p->weights;
    const int32_t *const bias = p->bias;
    const float *const scale = p->requant.scale;
    const int32_t *const mult = p->requant.mult, *const exp = p->requant.exp;
    const int32_t ch_step = p->requant.per_channel ? 1 : 0;
    const row_requant layer = layer_constants(&p->requant);
    int32_t n, px, m, i;
    zero_tails_of(scratch, 4, p->input.c * p->window.kernel_h * p->window.kernel_w, k_padded);
    for (n = 0; n < p->input.n; n++) {
        const uint8_t *x_n = x + (size_t)n * in_image;
        uint8_t *y_n = y + (size_t)n * (size_t)M * (size_t)pixels;
        for (px = 0; px < pixels; px += 4) {
            const int32_t count = pixels - px < 4 ? pixels - px : 4;
            const int16_t *cols[4];
            uint32_t sums[4];
            uint8_t *out = y_n + (size_t)px;
            for (i = 0; i < 4; i++) {
                int16_t *col = scratch + (size_t)(i < count ? i : 0) * (size_t)k_padded;
                if (i < count) {
                    fill(&p->input, &p->window, p->pad_value, x_n, (px + i) / OW,
                         (px + i) % OW, col, fill_mode);
                    sums[i] = column_sum(col, k_padded) << 7;
                } else {
                    sums[i] = sums[0];
                }
                cols[i] = col;
            }
            for (m = 0; m < M; m++) {
                const row_requant r = channel_constants(layer, scale, mult, exp, m * ch_step,
                                                        mode);
                const uint32_t b = (uint32_t)bias[m];
                uint32_t acc[4];
                acc[0] = b - sums[0];
                acc[1] = b - sums[1];
                if (count <= 2) {
                    dot_b8_1x2(weights + (size_t)m * (size_t)k_padded, cols[0], cols[1],
                               blocks, acc);
                } else {
                    acc[2] = b - sums[2];
                    acc[3] = b - sums[3];
                    dot_b8_1x4(weights + (size_t)m * (size_t)k_padded, cols, blocks, acc);
                }
                for (i = 0; i < count; i++) {
                    out[i] = requantize(&r, (int32_t)acc[i], mode);
                }
                out += pixels;
            }
        }
    }
}

Q8_INLINE void conv_im2col_b8(const q8_conv_im2col_b8_params *p, const uint8_t *x,
                              uint8_t *y, int16_t *Q8_RESTRICT scratch,
                              int is_signed, int mode)
{
    const int32_t M = p->output.c, OW = p->output.w, k_padded = p->k_padded;
    const int32_t pixels = p->output.h * OW, blocks = k_padded / 8;
    const size_t in_image = (size_t)p->input.c * (size_t)(p->input.h * p->input.w);
    const uint8_t *const weights = p->weights;
    const int32_t *const bias = p->bias;
    const float *const scale = p->requant.scale;
    const int32_t *const mult = p->requant.mult, *const exp = p->requant.exp;
    const int32_t ch_step = p->requant.per_channel ? 1 : 0;
    const row_requant layer = layer_constants(&p->requant);
    const int fill_mode = is_signed ? 2 : 0;
    int16_t *col0 = scratch, *col1 = scratch + k_padded;
    int32_t n, px, m;
    if (p->columns == 4) {
        conv_b8_quads(p, x, y, scratch, fill_mode, mode);
        return;
    }
    zero_column_tails(scratch, p->input.c * p->window.kernel_h * p->window.kernel_w, k_padded);
    for (n = 0; n < p->input.n; n++) {
        const uint8_t *x_n = x + (size_t)n * in_image;
        uint8_t *y_n = y + (size_t)n * (size_t)M * (size_t)pixels;
        for (px = 0; px < pixels; px += 2) {
            const int two = px + 1 < pixels;
            const int16_t *c1 = two ? col1 : col0;
            uint8_t *y0 = y_n + (size_t)px;
            uint32_t s0, s1;
            fill(&p->input, &p->window, p->pad_value, x_n, px / OW, px % OW, col0,
                 fill_mode);
            if (two) {
                fill(&p->input, &p->window, p->pad_value, x_n, (px + 1) / OW,
                     (px + 1) % OW, col1, fill_mode);
            }
            s0 = column_sum(col0, k_padded) << 7;
            s1 = two ? column_sum(col1, k_padded) << 7 : s0;
            for (m = 0; Q8_B8_ROW_PAIRS && m + 1 < M; m += 2) {
                const row_requant r0 = channel_constants(layer, scale, mult, exp, m * ch_step,
                                                         mode);
                const row_requant r1 = channel_constants(layer, scale, mult, exp,
                                                         (m + 1) * ch_step, mode);
                uint32_t acc[4];
                acc[0] = (uint32_t)bias[m] - s0;
                acc[1] = (uint32_t)bias[m] - s1;
                acc[2] = (uint32_t)bias[m + 1] - s0;
                acc[3] = (uint32_t)bias[m + 1] - s1;
                dot_b8_2x2(weights + (size_t)m * (size_t)k_padded, k_padded, col0, c1, blocks,
                           acc);
                y0[0] = requantize(&r0, (int32_t)acc[0], mode);
                y0[pixels] = requantize(&r1, (int32_t)acc[2], mode);
                if (two) {
                    y0[1] = requantize(&r0, (int32_t)acc[1], mode);
                    y0[pixels + 1] = requantize(&r1, (int32_t)acc[3], mode);
                }
                y0 += 2 * pixels;
            }
            for (; m < M; m++) {
                const row_requant r = channel_constants(layer, scale, mult, exp, m * ch_step,
                                                        mode);
                uint32_t acc[2];
                acc[0] = (uint32_t)bias[m] - s0;
                acc[1] = (uint32_t)bias[m] - s1;
                dot_b8_1x2(weights + (size_t)m * (size_t)k_padded, col0, c1, blocks, acc);
                y0[0] = requantize(&r, (int32_t)acc[0], mode);
                if (two) {
                    y0[1] = requantize(&r, (int32_t)acc[1], mode);
                }
                y0 += pixels;
            }
        }
    }
}

/* The exported kernels, one per file named after the function (conv_s8_im2col_freq.c for
 * q8_conv_s8_im2col_freq, ...), so that a project compiles only the variants it calls: the
 * bounded float requantization is chosen per call, from the parameters. */
#define Q8_IM2COL_CALL(RQ) conv_im2col(params, x, y, scratch, is_signed, RQ)
#define Q8_DEFINE_IM2COL(NAME, TX, SIGNED, MODE)                                             \
    void NAME(const q8_conv_im2col_params *params, const TX *input,                          \
              void *output, int16_t *Q8_RESTRICT scratch)                                    \
    {                                                                                        \
        enum { is_signed = SIGNED };                                                         \
        const uint8_t *x = (const uint8_t *)input;                                           \
        uint8_t *y = (uint8_t *)output;                                                      \
        Q8_CALL_FOR_LAYER_MODE(&params->requant, MODE, Q8_IM2COL_CALL)                       \
    }

#define Q8_DEFINE_IM2COL_B8(NAME, TX, SIGNED, MODE)                                          \
    void NAME(const q8_conv_im2col_b8_params *params, const TX *input,                       \
              void *output, int16_t *Q8_RESTRICT scratch)                                    \
    {                                                                                        \
        if (MODE == Q8_RQ_FREQ && params->requant.bounded) {                                \
            conv_im2col_b8(params, (const uint8_t *)input, (uint8_t *)output, scratch,       \
                           SIGNED, Q8_RQ_FREQ_BOUNDED);                                     \
        } else {                                                                             \
            conv_im2col_b8(params, (const uint8_t *)input, (uint8_t *)output, scratch,       \
                           SIGNED, MODE);                                                    \
        }                                                                                    \
    }

/* The wide-weight kernels: LAYOUT is W16_PAIRS (rows interleaved in pairs for the DSP
 * loop, *_w16_*) or W16_BLOCKS (blocks of 8 taps, plain C compilers vectorize, *_w16b_*). */
#define Q8_IM2COL_W16_CALL(RQ) conv_im2col_w16(params, x, y, scratch, is_signed, RQ, layout)
#define Q8_DEFINE_IM2COL_W16(NAME, TX, SIGNED, MODE, LAYOUT)                                 \
    void NAME(const q8_conv_im2col_w16_params *params, const TX *input,                      \
              void *output, int16_t *Q8_RESTRICT scratch)                                    \
    {                                                                                        \
        enum { is_signed = SIGNED, layout = LAYOUT };                                        \
        const uint8_t *x = (const uint8_t *)input;                                           \
        uint8_t *y = (uint8_t *)output;                                                      \
        Q8_CALL_FOR_LAYER_MODE(&params->requant, MODE, Q8_IM2COL_W16_CALL)                   \
    }

#endif /* Q8_IM2COL_H */
