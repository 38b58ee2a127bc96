/*
 * q8_im2col_pix.h - the host's group-1 convolution (conv_*_im2col_w16p_*.c): output pixels
 * in the vector lanes, for hosts whose vector unit multiplies int16 pairs (x86-64's
 * PMADDWD, on every x86-64) and plain C elsewhere.
 *
 * The layer's output pixels (flattened over rows, so narrow planes fill the lanes too) go
 * in tiles of Q8_PIX_TILE. A tile's window taps are gathered into scratch as one int16 row
 * per tap, rows of consecutive pixels (runs of one input row are plain widening copies);
 * each pair of tap rows is then interleaved in place into (tap k, tap k + 1) pairs per
 * pixel. A block of output channels then multiplies the tile: per pair of taps, one
 * broadcast of the channel's (w_k, w_k+1) against a vector of pixel pairs adds two products
 * per lane (PMADDWD), so a lane holds one pixel's sum and needs no reduction across lanes;
 * every tile row is read once per block of four channels, every weight pair once per block
 * of pixels. The sums are requantized a channel at a time over the tile's pixels, which
 * are consecutive in the NCHW output: the float path vectorized (SSE2), the same float32
 * operations as q8_requant_f32. -DQ8_PIX_PORTABLE takes the plain C paths (tested beside
 * the others).
 *
 * acc = sum_k x_k * w_k from zero, then + bias' (modulo 2^32), bias' = bias - x_zp * sum_k
 * w_k precomputed: padding taps hold x_zp and add nothing. |x * w| <= 255 * 128 and the
 * generator keeps K below 2^16 (ops/conv/im2col.py W16_MAX_TAPS): no signed overflow.
 * The scratch is Q8_PIX_TILE int16 per padded tap (q8_conv_im2col_w16p_scratch_bytes).
 */
#ifndef Q8_IM2COL_PIX_H
#define Q8_IM2COL_PIX_H

#include <string.h>

#include "q8_arith.h"
#include "q8_requant_row.h"
#include "q8_requant_run.h"
#include "q8_runtime.h"
#include "q8_window.h"
#include "q8_im2col_fill.h"

#if defined(__AVX2__) && !defined(Q8_PIX_PORTABLE)
#include <immintrin.h>
#define Q8_PIX_LANES 8
typedef __m256i q8_pix_vec;
#define q8_pix_load(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define q8_pix_store(p, v) _mm256_storeu_si256((__m256i *)(void *)(p), (v))
#define q8_pix_splat(w) _mm256_set1_epi32(w)
#define q8_pix_madd(a, b) _mm256_madd_epi16((a), (b))
#define q8_pix_add(a, b) _mm256_add_epi32((a), (b))
#define q8_pix_zero() _mm256_setzero_si256()
#elif defined(__SSE2__) && !defined(Q8_PIX_PORTABLE)
#include <emmintrin.h>
#define Q8_PIX_LANES 4
typedef __m128i q8_pix_vec;
#define q8_pix_load(p) _mm_loadu_si128((const __m128i *)(const void *)(p))
#define q8_pix_store(p, v) _mm_storeu_si128((__m128i *)(void *)(p), (v))
#define q8_pix_splat(w) _mm_set1_epi32(w)
#define q8_pix_madd(a, b) _mm_madd_epi16((a), (b))
#define q8_pix_add(a, b) _mm_add_epi32((a), (b))
#define q8_pix_zero() _mm_setzero_si128()
#endif

/* Output pixels per tile: the generator's `chunk` (ops/conv/im2col.py PIXEL_TILE). */
#define Q8_PIX_TILE 32
/* Output channels per block. */
#define Q8_PIX_CHANNELS 4

/* One segment of a tile: `count` pixels of output row `oh` from column `ow`, landing at
 * `at` in the tile. */
typedef struct {
    int32_t oh, ow, count, at;
} q8_pix_run;

/* The tile's pixels [px, px + n) as runs of output rows; returns how many. */
Q8_INLINE int32_t q8_pix_runs(int32_t px, int32_t n, int32_t ow_count, q8_pix_run *runs)
{
    int32_t count = 0, at = 0;
    int32_t oh = px / ow_count, ow = px % ow_count;
    while (at < n) {
        const int32_t left = ow_count - ow, take = left < n - at ? left : n - at;
        runs[count].oh = oh;
        runs[count].ow = ow;
        runs[count].count = take;
        runs[count].at = at;
        count++;
        at += take;
        oh++;
        ow = 0;
    }
    return count;
}

/* The first i >= 0 with iw0 + i * stride >= bound (stride >= 1), at most count: the
 * division only for strides above 2, which no layer of the zoo has. */
Q8_INLINE int32_t q8_pix_first_at(int32_t iw0, int32_t bound, int32_t stride, int32_t count)
{
    int32_t i;
    if (iw0 >= bound) {
        return 0;
    }
    i = stride == 1 ? bound - iw0 : stride == 2 ? (bound - iw0 + 1) >> 1
                                                : (bound - iw0 + stride - 1) / stride;
    return i < count ? i : count;
}

/* Eight pixels of two channels widened to int16 and interleaved: (a_i, b_i) pairs. */
Q8_INLINE void q8_pix_pairs8(int16_t *Q8_RESTRICT dst, const uint8_t *Q8_RESTRICT a,
                             const uint8_t *Q8_RESTRICT b, int is_signed)
{
    int32_t i;
    if (is_signed) {
        for (i = 0; i < 8; i++) {
            dst[2 * i] = (int16_t)(int8_t)a[i];
            dst[2 * i + 1] = (int16_t)(int8_t)b[i];
        }
    } else {
        for (i = 0; i < 8; i++) {
            dst[2 * i] = (int16_t)a[i];
            dst[2 * i + 1] = (int16_t)b[i];
        }
    }
}

/* The pairs of one run for the channel pairs [0, pairs) from c0: pixel i reads column
 * iw0 + i * stride of the rows a (channel 2j) and a + plane (2j + 1), or the pad outside
 * [0, w); the columns [left, inside_end) are the inside ones. A last channel without a
 * partner (odd C) pairs with the pad, whose weight is 0. */
Q8_INLINE void q8_pix_fill_pairs(int16_t *Q8_RESTRICT dst, size_t pair_stride,
                                 const uint8_t *Q8_RESTRICT row, size_t plane, int32_t channels,
                                 int32_t iw0, int32_t stride, int32_t count, int32_t left,
                                 int32_t inside_end, int16_t pad, int is_signed)
{
    int32_t c, i;
    for (c = 0; c < channels; c += 2, dst += pair_stride) {
        const uint8_t *a = row + (size_t)c * plane;
        const int partner = c + 1 < channels;
        for (i = 0; i < 2 * left; i++) {
            dst[i] = pad;
        }
        i = left;
        if (stride == 1 && partner && inside_end - i >= 8) {
            /* Blocks of 8 at once, the last one overlapping the one before. */
            const int32_t last = inside_end - 8;
            for (; i < last; i += 8) {
                q8_pix_pairs8(dst + 2 * i, a + (iw0 + i), a + plane + (iw0 + i), is_signed);
            }
            q8_pix_pairs8(dst + 2 * last, a + (iw0 + last), a + plane + (iw0 + last),
                          is_signed);
            i = inside_end;
        } else {
            for (; i < inside_end; i++) {
                const size_t at = (size_t)(iw0 + i * stride);
                const uint8_t va = a[at];
                const uint8_t vb = partner ? a[plane + at] : 0;
                dst[2 * i] = is_signed ? (int16_t)(int8_t)va : (int16_t)va;
                dst[2 * i + 1] = !partner ? pad : is_signed ? (int16_t)(int8_t)vb
                                                             : (int16_t)vb;
            }
        }
        for (i = 2 * i; i < 2 * count; i++) {
            dst[i] = pad;
        }
    }
}

/* The tile: for each window position (kh, kw), the pairs of channels (2j, 2j + 1) of the
 * tile's pixels, [kh][kw][j][pixel][2] (the generator orders the weights' taps so). Pixels
 * past n are zero (their lanes are computed, never stored). */
Q8_INLINE void q8_pix_fill_tile(const q8_conv_im2col_params *p, const uint8_t *x,
                                int32_t px, int32_t n, int16_t *Q8_RESTRICT tile,
                                int is_signed, int unit)
{
    const q8_dims *in = &p->input;
    const q8_window *win = &p->window;
    const int16_t pad = (int16_t)p->pad_value;
    const size_t plane = (size_t)in->h * (size_t)in->w;
    const size_t pair_stride = 2 * Q8_PIX_TILE;
    q8_pix_run runs[Q8_PIX_TILE + 1];
    int32_t kh, kw, r;
    if (n < Q8_PIX_TILE) {
        memset(tile, 0, (size_t)p->k_padded * Q8_PIX_TILE * sizeof(int16_t));
    }
    if (unit) {
        /* A 1x1 stride-1 layer without padding: a pair row is two channels' pixels. */
        q8_pix_fill_pairs(tile, pair_stride, x + (size_t)px, plane, in->c, 0, 1, n, 0, n, pad,
                          is_signed);
        return;
    }
    {
        const int32_t run_count = q8_pix_runs(px, n, p->output.w, runs);
        const int32_t per_position = (in->c + 1) / 2;
        for (kh = 0; kh < win->kernel_h; kh++) {
            for (kw = 0; kw < win->kernel_w; kw++) {
                int16_t *position = tile + (size_t)(kh * win->kernel_w + kw) *
                                               (size_t)per_position * pair_stride;
                for (r = 0; r < run_count; r++) {
                    const q8_pix_run *run = &runs[r];
                    const int32_t ih = run->oh * win->stride_h - win->pad_top +
                                       kh * win->dilation_h;
                    const int32_t iw0 = run->ow * win->stride_w - win->pad_left +
                                        kw * win->dilation_w;
                    int16_t *dst = position + 2 * run->at;
                    if (ih < 0 || ih >= in->h) {
                        int32_t j, i;
                        for (j = 0; j < per_position; j++) {
                            for (i = 0; i < 2 * run->count; i++) {
                                dst[(size_t)j * pair_stride + (size_t)i] = pad;
                            }
                        }
                    } else {
                        const int32_t stride = win->stride_w;
                        q8_pix_fill_pairs(dst, pair_stride, x + (size_t)ih * (size_t)in->w,
                                          plane, in->c, iw0, stride, run->count,
                                          q8_pix_first_at(iw0, 0, stride, run->count),
                                          q8_pix_first_at(iw0, in->w, stride, run->count),
                                          pad, is_signed);
                    }
                }
            }
        }
    }
}

/* The weight pair (w_k, w_k+1) of a row as the 32 bits a broadcast takes. */
Q8_INLINE int32_t q8_pix_weight_pair(const int16_t *row, int32_t pair)
{
    int32_t v;
    memcpy(&v, row + 2 * pair, sizeof v);
    return v;
}

/* sums[j][i] = the products of rows m + j (j < channels) with the tile's first `vectors`
 * groups of lanes, from zero. */
Q8_INLINE void q8_pix_products(const int16_t *Q8_RESTRICT weights, int32_t k_padded,
                               const int16_t *Q8_RESTRICT tile, int32_t channels,
                               int32_t pixels, int32_t sums[Q8_PIX_CHANNELS][Q8_PIX_TILE])
{
    const int32_t pairs = k_padded / 2;
    int32_t j, kp;
#if defined(Q8_PIX_LANES)
    int32_t v;
    /* Two vectors of pixels a pass, four channels: eight sums in registers. */
    for (v = 0; v < pixels; v += 2 * Q8_PIX_LANES) {
        if (channels == Q8_PIX_CHANNELS) {
            q8_pix_vec s00 = q8_pix_zero(), s01 = q8_pix_zero(), s10 = q8_pix_zero(),
                       s11 = q8_pix_zero(), s20 = q8_pix_zero(), s21 = q8_pix_zero(),
                       s30 = q8_pix_zero(), s31 = q8_pix_zero();
            const int16_t *r0 = weights, *r1 = r0 + k_padded, *r2 = r1 + k_padded,
                          *r3 = r2 + k_padded;
            for (kp = 0; kp < pairs; kp++) {
                const int16_t *t = tile + (size_t)kp * 2 * Q8_PIX_TILE + 2 * v;
                const q8_pix_vec a = q8_pix_load(t), b = q8_pix_load(t + 2 * Q8_PIX_LANES);
                q8_pix_vec w = q8_pix_splat(q8_pix_weight_pair(r0, kp));
                s00 = q8_pix_add(s00, q8_pix_madd(a, w));
                s01 = q8_pix_add(s01, q8_pix_madd(b, w));
                w = q8_pix_splat(q8_pix_weight_pair(r1, kp));
                s10 = q8_pix_add(s10, q8_pix_madd(a, w));
                s11 = q8_pix_add(s11, q8_pix_madd(b, w));
                w = q8_pix_splat(q8_pix_weight_pair(r2, kp));
                s20 = q8_pix_add(s20, q8_pix_madd(a, w));
                s21 = q8_pix_add(s21, q8_pix_madd(b, w));
                w = q8_pix_splat(q8_pix_weight_pair(r3, kp));
                s30 = q8_pix_add(s30, q8_pix_madd(a, w));
                s31 = q8_pix_add(s31, q8_pix_madd(b, w));
            }
            q8_pix_store(&sums[0][v], s00);
            q8_pix_store(&sums[0][v + Q8_PIX_LANES], s01);
            q8_pix_store(&sums[1][v], s10);
            q8_pix_store(&sums[1][v + Q8_PIX_LANES], s11);
            q8_pix_store(&sums[2][v], s20);
            q8_pix_store(&sums[2][v + Q8_PIX_LANES], s21);
            q8_pix_store(&sums[3][v], s30);
            q8_pix_store(&sums[3][v + Q8_PIX_LANES], s31);
        } else {
            for (j = 0; j < channels; j++) {
                q8_pix_vec s0 = q8_pix_zero(), s1 = q8_pix_zero();
                const int16_t *r = weights + (size_t)j * (size_t)k_padded;
                for (kp = 0; kp < pairs; kp++) {
                    const int16_t *t = tile + (size_t)kp * 2 * Q8_PIX_TILE + 2 * v;
                    const q8_pix_vec w = q8_pix_splat(q8_pix_weight_pair(r, kp));
                    s0 = q8_pix_add(s0, q8_pix_madd(q8_pix_load(t), w));
                    s1 = q8_pix_add(s1, q8_pix_madd(q8_pix_load(t + 2 * Q8_PIX_LANES), w));
                }
                q8_pix_store(&sums[j][v], s0);
                q8_pix_store(&sums[j][v + Q8_PIX_LANES], s1);
            }
        }
    }
#else
    int32_t i;
    for (j = 0; j < channels; j++) {
        const int16_t *r = weights + (size_t)j * (size_t)k_padded;
        for (i = 0; i < pixels; i++) {
            sums[j][i] = 0;
        }
        for (kp = 0; kp < pairs; kp++) {
            const int32_t w0 = r[2 * kp], w1 = r[2 * kp + 1];
            const int16_t *t = tile + (size_t)kp * 2 * Q8_PIX_TILE;
            for (i = 0; i < pixels; i++) {
                sums[j][i] += t[2 * i] * w0 + t[2 * i + 1] * w1;
            }
        }
    }
#endif
}

Q8_INLINE void q8_conv_im2col_pix(const q8_conv_im2col_params *p, const uint8_t *x,
                                  uint8_t *y, int16_t *Q8_RESTRICT tile, int is_signed,
                                  int mode)
{
    const int32_t M = p->output.c, k_padded = p->k_padded;
    const int32_t pixels = p->output.h * p->output.w;
    const size_t in_image = (size_t)p->input.c * (size_t)(p->input.h * p->input.w);
    const int16_t *weights = (const int16_t *)p->weights;
    const int unit = q8_is_unit_pointwise(&p->input, &p->output, &p->window);
    int32_t sums[Q8_PIX_CHANNELS][Q8_PIX_TILE];
    int32_t b, px, m, j;
    for (b = 0; b < p->input.n; b++) {
        const uint8_t *x_n = x + (size_t)b * in_image;
        uint8_t *y_n = y + (size_t)b * (size_t)M * (size_t)pixels;
        for (px = 0; px < pixels; px += Q8_PIX_TILE) {
            const int32_t n = pixels - px < Q8_PIX_TILE ? pixels - px : Q8_PIX_TILE;
            /* The lanes the products compute: n rounded up to two vectors. */
#if defined(Q8_PIX_LANES)
            const int32_t lanes = (n + 2 * Q8_PIX_LANES - 1) / (2 * Q8_PIX_LANES) *
                                  (2 * Q8_PIX_LANES);
#else
            const int32_t lanes = n;
#endif
            q8_pix_fill_tile(p, x_n, px, n, tile, is_signed, unit);
            for (m = 0; m < M; m += Q8_PIX_CHANNELS) {
                const int32_t channels = M - m < Q8_PIX_CHANNELS ? M - m : Q8_PIX_CHANNELS;
                q8_pix_products(weights + (size_t)m * (size_t)k_padded, k_padded, tile,
                                channels, lanes, sums);
                for (j = 0; j < channels; j++) {
                    const q8_row_requant r = q8_row_constants(&p->requant, m + j, mode);
                    q8_requantize_run(&r, sums[j], p->bias[m + j], n,
                                      y_n + (size_t)(m + j) * (size_t)pixels + (size_t)px,
                                      mode);
                }
            }
        }
    }
}

/* The exported kernels, one per file (conv_u8_im2col_w16p_freq.c, ...). */
#define Q8_IM2COL_PIX_CALL(RQ) q8_conv_im2col_pix(params, x, y, scratch, is_signed, RQ)
#define Q8_DEFINE_IM2COL_PIX(NAME, TX, SIGNED, MODE)                                       \
    void NAME(const q8_conv_im2col_params *params, const TX *input, void *output,          \
              int16_t *Q8_RESTRICT scratch)                                                \
    {                                                                                      \
        enum { is_signed = SIGNED };                                                       \
        const uint8_t *x = (const uint8_t *)input;                                         \
        uint8_t *y = (uint8_t *)output;                                                    \
        Q8_CALL_FOR_LAYER_MODE(&params->requant, MODE, Q8_IM2COL_PIX_CALL)                 \
    }

#endif /* Q8_IM2COL_PIX_H */
