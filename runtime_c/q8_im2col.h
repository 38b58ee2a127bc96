/*
 * q8_im2col.h - the im2col convolution paths (QLinearConv, group 1, weight zero point 0)
 * exported one function per file (conv_s8_im2col_freq.c holds q8_conv_s8_im2col_freq):
 * int8 weights (*_im2col_*), int16 weights in row pairs for the DSP extension
 * (*_im2col_w16_*), and unsigned bytes for cores without DSP (*_im2col_b8_*); the host's
 * int16 kernel with pixels in the vector lanes is q8_im2col_pix.h (*_im2col_w16p_*).
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
 *
 * The parts: q8_im2col_fill.h (columns and slabs), q8_im2col_dot.h (the products and the
 * shared row loop), this file (the int8 and int16 drivers), q8_im2col_b8.h (unsigned bytes).
 */
#ifndef Q8_IM2COL_H
#define Q8_IM2COL_H

#include <string.h>

#include "q8_arith.h"
#include "q8_dsp.h"
#include "q8_requant_row.h"
#include "q8_runtime.h"
#include "q8_window.h"
#include "q8_im2col_fill.h"
#include "q8_im2col_dot.h"

/* The int8-weight rows: q8_conv_rows over q8_conv_im2col_params. */
Q8_INLINE void q8_i8_rows(const q8_conv_im2col_params *p, const q8_row_requant *layer,
                       const int16_t *col0, const int16_t *c1, uint8_t *y0, int32_t pixels,
                       int two, int mode)
{
    q8_conv_rows_job job;
    job.weights = (const uint8_t *)(const void *)p->weights;
    job.pair_bytes = 2u * (size_t)p->k_padded;
    job.count = p->k_padded / 4;
    job.channels = p->output.c;
    job.bias = p->bias;
    job.requant = &p->requant;
    q8_conv_rows(&job, layer, col0, c1, y0, pixels, two, mode, DOT_I8);
}

Q8_INLINE void q8_conv_im2col(const q8_conv_im2col_params *p, const uint8_t *x,
                           uint8_t *y, int16_t *Q8_RESTRICT scratch, int is_signed,
                           int mode)
{
    const int32_t M = p->output.c, OW = p->output.w, k_padded = p->k_padded;
    const int32_t pixels = p->output.h * OW;
    const size_t in_image = (size_t)p->input.c * (size_t)(p->input.h * p->input.w);
    const q8_row_requant layer = q8_layer_constants(&p->requant);
    int16_t *col0 = scratch, *col1 = scratch + k_padded;
    const int unit = q8_is_unit_pointwise(&p->input, &p->output, &p->window);
    int32_t n, px;
    if (p->slab) {
#define Q8_I8_SLAB_ROWS(C0, C1, OUT, TWO) q8_i8_rows(p, &layer, (C0), (C1), (OUT), pixels, (TWO), mode)
        Q8_SLAB_LOOP(p, x, y, scratch, is_signed, Q8_I8_SLAB_ROWS);
#undef Q8_I8_SLAB_ROWS
        return;
    }
    q8_zero_column_tails(scratch, p->input.c * p->window.kernel_h * p->window.kernel_w,
                      p->k_padded);
    for (n = 0; n < p->input.n; n++) {
        const uint8_t *x_n = x + (size_t)n * in_image;
        uint8_t *y_n = y + (size_t)n * (size_t)M * (size_t)pixels;
        for (px = 0; px < pixels; px += 2) {
            const int two = px + 1 < pixels;
            q8_fill_pixels(&p->input, &p->window, p->pad_value, x_n, px, OW, two, unit, col0,
                        col1, is_signed);
            q8_i8_rows(p, &layer, col0, two ? col1 : col0, y_n + (size_t)px, pixels, two, mode);
        }
    }
}


/*
 * Wide weights: rows in pairs (an odd last row is paired with a zero row whose outputs
 * are not stored) and pixels in pairs (an odd last pixel is multiplied twice), so every
 * block is one 2x2 call.
 */
/* The int16-weight rows: q8_conv_rows over q8_conv_im2col_params. */
Q8_INLINE void q8_w16_rows(const q8_conv_im2col_params *p, const q8_row_requant *layer,
                        const int16_t *col0, const int16_t *c1, uint8_t *y0, int32_t pixels,
                        int two, int mode)
{
    q8_conv_rows_job job;
    job.weights = (const uint8_t *)(const void *)p->weights;
    job.pair_bytes = 4u * (size_t)p->k_padded;
    job.count = p->k_padded / 8;
    job.channels = p->output.c;
    job.bias = p->bias;
    job.requant = &p->requant;
    q8_conv_rows(&job, layer, col0, c1, y0, pixels, two, mode, DOT_W16_PAIRS);
}

Q8_INLINE void q8_conv_im2col_w16(const q8_conv_im2col_params *p, const uint8_t *x,
                               uint8_t *y, int16_t *Q8_RESTRICT scratch,
                               int is_signed, int mode)
{
    const int32_t M = p->output.c, OW = p->output.w, k_padded = p->k_padded;
    const int32_t pixels = p->output.h * OW;
    const size_t in_image = (size_t)p->input.c * (size_t)(p->input.h * p->input.w);
    const q8_row_requant layer = q8_layer_constants(&p->requant);
    int16_t *col0 = scratch, *col1 = scratch + k_padded;
    const int unit = q8_is_unit_pointwise(&p->input, &p->output, &p->window);
    int32_t n, px;
    if (p->slab) {
#define Q8_W16_SLAB_ROWS(C0, C1, OUT, TWO)                                                     \
    q8_w16_rows(p, &layer, (C0), (C1), (OUT), pixels, (TWO), mode)
        Q8_SLAB_LOOP(p, x, y, scratch, is_signed, Q8_W16_SLAB_ROWS);
#undef Q8_W16_SLAB_ROWS
        return;
    }
    q8_zero_column_tails(scratch, p->input.c * p->window.kernel_h * p->window.kernel_w, k_padded);
    for (n = 0; n < p->input.n; n++) {
        const uint8_t *x_n = x + (size_t)n * in_image;
        uint8_t *y_n = y + (size_t)n * (size_t)M * (size_t)pixels;
        for (px = 0; px + 1 < pixels; px += 2) {
            q8_fill_pixels(&p->input, &p->window, p->pad_value, x_n, px, OW, 1, unit, col0, col1,
                        is_signed);
            q8_w16_rows(p, &layer, col0, col1, y_n + (size_t)px, pixels, 1, mode);
        }
        if (px < pixels) { /* a last pixel alone */
            q8_fill(&p->input, &p->window, p->pad_value, x_n, px / OW, px % OW, col0,
                 is_signed);
            q8_w16_rows(p, &layer, col0, col0, y_n + (size_t)px, pixels, 0, mode);
        }
    }
}

#include "q8_im2col_b8.h"

/* The exported kernels, one per file named after the function (conv_s8_im2col_freq.c for
 * q8_conv_s8_im2col_freq, ...), so that a project compiles only the variants it calls: the
 * bounded float requantization is chosen per call, from the parameters. */
#define Q8_IM2COL_CALL(RQ) q8_conv_im2col(params, x, y, scratch, is_signed, RQ)
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
            q8_conv_im2col_b8(params, (const uint8_t *)input, (uint8_t *)output, scratch,       \
                           SIGNED, Q8_RQ_FREQ_BOUNDED);                                     \
        } else {                                                                             \
            q8_conv_im2col_b8(params, (const uint8_t *)input, (uint8_t *)output, scratch,       \
                           SIGNED, MODE);                                                    \
        }                                                                                    \
    }

/* The wide-weight kernels (*_w16_*): rows interleaved in pairs for the DSP loop. */
#define Q8_IM2COL_W16_CALL(RQ) q8_conv_im2col_w16(params, x, y, scratch, is_signed, RQ)
#define Q8_DEFINE_IM2COL_W16(NAME, TX, SIGNED, MODE)                                         \
    void NAME(const q8_conv_im2col_params *params, const TX *input,                      \
              void *output, int16_t *Q8_RESTRICT scratch)                                    \
    {                                                                                        \
        enum { is_signed = SIGNED };                                                         \
        const uint8_t *x = (const uint8_t *)input;                                           \
        uint8_t *y = (uint8_t *)output;                                                      \
        Q8_CALL_FOR_LAYER_MODE(&params->requant, MODE, Q8_IM2COL_W16_CALL)                   \
    }

#endif /* Q8_IM2COL_H */
