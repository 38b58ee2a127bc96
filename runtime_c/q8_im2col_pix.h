/*
 * q8_im2col_pix.h - the host's group-1 convolution (conv_*_im2col_w16p_*.c): output pixels
 * in the vector lanes, for hosts whose vector unit multiplies int16 pairs (x86-64's
 * PMADDWD, VNNI's VPDPWSSD) and plain C elsewhere.
 *
 * Output pixels go in tiles of Q8_PIX_TILE, each pixel's taps as (tap k, tap k + 1) int16
 * pairs, consecutive pixels' pairs adjacent. Two layouts give them:
 * - flat bands (params->band > 0; stride 1, dilation 1): a band of the input's rows is
 *   converted once into channel pairs over the padded width; every tap of a run of output
 *   pixels is then a run of consecutive pairs, so nothing is gathered per tap. Outputs are
 *   computed at every column of the padded width, the last kernel_w - 1 of a row dropped.
 * - gathered tiles (band 0; any stride): each tile's taps gathered into scratch,
 *   [kh][kw][channel pair][pixel][2], pixels flattened over output rows.
 * A block of four output channels then multiplies the tile (q8_pix_products.h): per pair of
 * taps, one broadcast of the channel's (w_k, w_k+1) against a vector of pixel pairs adds
 * two products per lane, so a lane holds one pixel's sum and needs no reduction across
 * lanes. On x86-64 the products are built for SSE2, AVX2, AVX-VNNI, AVX-512BW and AVX-512
 * VNNI and the widest the machine has runs (Q8_PIX_ISA_MAX caps it: the tests build each);
 * they compute the same integers. The sums are requantized a channel at a time over runs
 * of consecutive outputs (q8_requant_run.h). -DQ8_PIX_PORTABLE takes the plain C paths.
 *
 * acc = sum_k x_k * w_k from zero, then + bias' (modulo 2^32), bias' = bias - x_zp * sum_k
 * w_k precomputed: padding taps hold x_zp and add nothing. |x * w| <= 255 * 128 and the
 * generator keeps K below 2^16 (ops/conv/im2col.py W16_MAX_TAPS): no signed overflow in any
 * lane. The scratch is q8_conv_im2col_w16p_scratch_bytes.
 */
#ifndef Q8_IM2COL_PIX_H
#define Q8_IM2COL_PIX_H

#include <stddef.h>
#include <string.h>

#include "q8_arith.h"
#include "q8_requant_row.h"
#include "q8_requant_run.h"
#include "q8_runtime.h"
#include "q8_window.h"
#include "q8_im2col_fill.h"
#include "q8_pix.h"

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
        q8_pix_fill_pairs(tile, pair_stride, x + (size_t)px, plane, in->c, (int32_t)plane, 0,
                          1, n, 0, n, pad,
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
                                          plane, in->c, in->w, iw0, stride, run->count,
                                          q8_pix_first_at(iw0, 0, stride, run->count),
                                          q8_pix_first_at(iw0, in->w, stride, run->count),
                                          pad, is_signed);
                    }
                }
            }
        }
    }
}

/* Where a pixel's pairs of taps lie, in int16 elements from its first pair, in the order of
 * the weights ([kh][kw][channel pair]): window row kh, column kw, pair j at
 * kh * row_step + kw * col_step + j * pair_step; consecutive pixels' pairs are adjacent. */
typedef struct {
    int32_t kernel_h, kernel_w, pairs;
    ptrdiff_t row_step, col_step, pair_step;
} q8_pix_taps;

typedef void q8_pix_products_fn(const int16_t *Q8_RESTRICT weights, int32_t k_padded,
                                const int16_t *Q8_RESTRICT base, const q8_pix_taps *taps,
                                int32_t channels, int32_t sums[Q8_PIX_CHANNELS][Q8_PIX_TILE]);

/* The products in plain C: other hosts, and -DQ8_PIX_PORTABLE. */
Q8_UNUSED static void q8_pix_products_c(const int16_t *Q8_RESTRICT weights, int32_t k_padded,
                              const int16_t *Q8_RESTRICT base, const q8_pix_taps *taps,
                              int32_t channels, int32_t sums[Q8_PIX_CHANNELS][Q8_PIX_TILE])
{
    int32_t i, j, kh, kw, c, kp;
    for (j = 0; j < channels; j++) {
        const int16_t *r = weights + (size_t)j * (size_t)k_padded;
        for (i = 0; i < Q8_PIX_TILE; i++) {
            sums[j][i] = 0;
        }
        kp = 0;
        for (kh = 0; kh < taps->kernel_h; kh++) {
            for (kw = 0; kw < taps->kernel_w; kw++) {
                const int16_t *t = base + kh * taps->row_step + kw * taps->col_step;
                for (c = 0; c < taps->pairs; c++, kp++, t += taps->pair_step) {
                    const int32_t w0 = r[2 * kp], w1 = r[2 * kp + 1];
                    for (i = 0; i < Q8_PIX_TILE; i++) {
                        sums[j][i] += t[2 * i] * w0 + t[2 * i + 1] * w1;
                    }
                }
            }
        }
    }
}

/* The products once per instruction set (q8_pix_each_isa.h), and the one to run. */
#define Q8_PIX_BODY "q8_pix_products.h"
#include "q8_pix_each_isa.h"
#undef Q8_PIX_BODY

Q8_UNUSED static q8_pix_products_fn *q8_pix_products_for(int isa)
{
    Q8_PIX_RETURN_FOR_ISA(isa, q8_pix_products)
}

/* A layer as the kernel runs it: its parameters, the products of the instruction set
 * chosen (and that level, for the requantization), where the taps lie, and the mode. */
typedef struct {
    const q8_conv_im2col_params *p;
    q8_pix_products_fn *products;
    q8_pix_taps taps;
    int mode, isa;
} q8_pix_layer;

/* Requantize a flat tile's sums whole (a dropped column's sum is a sum of in-range products
 * too, inside the same bound), then scatter them into the band's output rows. */
Q8_INLINE void q8_pix_store_flat(const q8_row_requant *r, const int32_t *sums, int32_t bias,
                                 int32_t q0, int32_t n, int32_t wp, int32_t ow_count,
                                 uint8_t *y_band, const uint8_t *y_end, int mode, int isa)
{
    uint8_t run[Q8_PIX_TILE + Q8_PIX_RUN_SLACK];
    q8_pix_requantize_run(r, sums, bias, n, run, mode, isa);
    q8_pix_scatter_rows(run, q0, n, wp, ow_count, y_band, y_end);
}

/* The tile at `base` (its pixels as the layer's taps say) for every output channel, each
 * channel's sums requantized into its consecutive outputs (NCHW). With wp > 0 the tile is
 * the n flat pixels from `first` of a band whose first output row starts at y_row; else
 * the n output pixels from `first`. */
Q8_INLINE void q8_pix_channels(const q8_pix_layer *layer, const int16_t *base, uint8_t *y_n,
                               size_t y_row, int32_t first, int32_t n, int32_t wp)
{
    const q8_conv_im2col_params *p = layer->p;
    const int32_t M = p->output.c, k_padded = p->k_padded;
    const size_t pixels = (size_t)p->output.h * (size_t)p->output.w;
    const int16_t *weights = (const int16_t *)p->weights;
    int32_t sums[Q8_PIX_CHANNELS][Q8_PIX_TILE];
    int32_t m, j;
    for (m = 0; m < M; m += Q8_PIX_CHANNELS) {
        const int32_t channels = M - m < Q8_PIX_CHANNELS ? M - m : Q8_PIX_CHANNELS;
        layer->products(weights + (size_t)m * (size_t)k_padded, k_padded, base, &layer->taps,
                        channels, sums);
        for (j = 0; j < channels; j++) {
            const q8_row_requant r = q8_row_constants(&p->requant, m + j, layer->mode);
            uint8_t *y_m = y_n + (size_t)(m + j) * pixels;
            if (wp > 0) {
                q8_pix_store_flat(&r, sums[j], p->bias[m + j], first, n, wp, p->output.w,
                                  y_m + y_row, y_m + pixels, layer->mode, layer->isa);
            } else {
                q8_pix_requantize_run(&r, sums[j], p->bias[m + j], n, y_m + first,
                                      layer->mode, layer->isa);
            }
        }
    }
}

/* Gathered tiles (any stride): each tile's taps gathered by q8_pix_fill_tile. */
Q8_INLINE void q8_pix_run_tiles(const q8_pix_layer *layer, const uint8_t *x_n, uint8_t *y_n,
                                int16_t *Q8_RESTRICT tile, int is_signed)
{
    const q8_conv_im2col_params *p = layer->p;
    const int32_t pixels = p->output.h * p->output.w;
    const int unit = q8_is_unit_pointwise(&p->input, &p->output, &p->window);
    int32_t px;
    for (px = 0; px < pixels; px += Q8_PIX_TILE) {
        const int32_t n = pixels - px < Q8_PIX_TILE ? pixels - px : Q8_PIX_TILE;
        q8_pix_fill_tile(p, x_n, px, n, tile, is_signed, unit);
        q8_pix_channels(layer, tile, y_n, 0, px, n, 0);
    }
}

/* The int16 elements of one channel pair's plane in a flat band: the band's input rows over
 * the padded width, then a tile's worth of slack (the last tile's lanes past the band read
 * it; their sums are dropped). */
Q8_INLINE size_t q8_pix_flat_plane(const q8_conv_im2col_params *p)
{
    const int32_t wp = p->output.w + p->window.kernel_w - 1;
    return 2u * ((size_t)(p->band + p->window.kernel_h - 1) * (size_t)wp + Q8_PIX_TILE);
}

/* Flat bands (stride 1, dilation 1): the band's input rows are converted once into channel
 * pairs over the padded width, where every tap of a run of output pixels is a run of
 * consecutive pairs, so no tile is gathered per tap. Outputs are computed at every column
 * of the padded width and those past the output width dropped. */
Q8_INLINE void q8_pix_run_flat(const q8_pix_layer *layer, const uint8_t *x_n, uint8_t *y_n,
                               int16_t *Q8_RESTRICT planes, int is_signed)
{
    const q8_conv_im2col_params *p = layer->p;
    const q8_dims *in = &p->input;
    const int32_t kh = p->window.kernel_h, oh_count = p->output.h, ow_count = p->output.w;
    const int32_t wp = ow_count + p->window.kernel_w - 1, pad_left = p->window.pad_left;
    const size_t plane = q8_pix_flat_plane(p), in_plane = (size_t)in->h * (size_t)in->w;
    const int16_t pad = (int16_t)p->pad_value;
    int32_t oh0, r, q0;
    for (oh0 = 0; oh0 < oh_count; oh0 += p->band) {
        const int32_t rows = oh_count - oh0 < p->band ? oh_count - oh0 : p->band;
        const int32_t in_rows = rows + kh - 1, flat = (rows - 1) * wp + ow_count;
        int32_t j;
        for (r = 0; r < in_rows; r++) {
            const int32_t ih = oh0 - p->window.pad_top + r;
            int16_t *dst = planes + (size_t)r * (size_t)wp * 2;
            if (ih < 0 || ih >= in->h) {
                int32_t i;
                for (j = 0; j < (in->c + 1) / 2; j++) {
                    for (i = 0; i < 2 * wp; i++) {
                        dst[(size_t)j * plane + (size_t)i] = pad;
                    }
                }
            } else {
                q8_pix_fill_pairs(dst, plane, x_n + (size_t)ih * (size_t)in->w, in_plane,
                                  in->c, in->w, -pad_left, 1, wp,
                                  q8_pix_first_at(-pad_left, 0, 1, wp),
                                  q8_pix_first_at(-pad_left, in->w, 1, wp), pad, is_signed);
            }
        }
        for (j = 0; j < (in->c + 1) / 2; j++) {
            const size_t used = (size_t)in_rows * (size_t)wp * 2;
            memset(planes + (size_t)j * plane + used, 0, (plane - used) * sizeof(int16_t));
        }
        for (q0 = 0; q0 < flat; q0 += Q8_PIX_TILE) {
            const int32_t n = flat - q0 < Q8_PIX_TILE ? flat - q0 : Q8_PIX_TILE;
            q8_pix_channels(layer, planes + 2 * (size_t)q0, y_n,
                            (size_t)oh0 * (size_t)ow_count, q0, n, wp);
        }
    }
}

Q8_INLINE void q8_conv_im2col_pix(const q8_conv_im2col_params *p, const uint8_t *x,
                                  uint8_t *y, int16_t *Q8_RESTRICT scratch, int is_signed,
                                  int mode)
{
    const size_t in_image = (size_t)p->input.c * (size_t)(p->input.h * p->input.w);
    const size_t out_image = (size_t)p->output.c * (size_t)(p->output.h * p->output.w);
    const int32_t pairs = (p->input.c + 1) / 2;
    q8_pix_layer layer;
    int32_t b;
    layer.p = p;
    layer.isa = q8_pix_isa();
    layer.products = q8_pix_products_for(layer.isa);
    layer.mode = mode;
    layer.taps.kernel_h = p->window.kernel_h;
    layer.taps.kernel_w = p->window.kernel_w;
    layer.taps.pairs = pairs;
    if (p->band > 0) {
        const ptrdiff_t wp = p->output.w + p->window.kernel_w - 1;
        layer.taps.row_step = 2 * wp;
        layer.taps.col_step = 2;
        layer.taps.pair_step = (ptrdiff_t)q8_pix_flat_plane(p);
    } else {
        layer.taps.pair_step = 2 * Q8_PIX_TILE;
        layer.taps.col_step = (ptrdiff_t)pairs * layer.taps.pair_step;
        layer.taps.row_step = p->window.kernel_w * layer.taps.col_step;
    }
    for (b = 0; b < p->input.n; b++) {
        if (p->band > 0) {
            q8_pix_run_flat(&layer, x + (size_t)b * in_image, y + (size_t)b * out_image,
                            scratch, is_signed);
        } else {
            q8_pix_run_tiles(&layer, x + (size_t)b * in_image, y + (size_t)b * out_image,
                             scratch, is_signed);
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
