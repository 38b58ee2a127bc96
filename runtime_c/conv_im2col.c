/*
 * conv_im2col.c - QLinearConv (group 1, weight zero point 0) as a matrix product on
 * 16-bit operands: the fast path beside the reference in qlinear_conv.c.
 *
 * Two output pixels at a time, the window's taps are gathered into a scratch buffer of
 * int16 (im2col), padding taps holding the input zero point. Each pair of output
 * channels then multiplies its weight rows with both columns: four weights are loaded
 * in one word and widened with two q8_sxtb16 (bytes 0,2 and 1,3), the columns are
 * stored in the matching order (taps k, k+2, k+1, k+3), so every q8_smlad does two
 * multiply-accumulates. A 2x2 block does 16 per four weight words, loaded once.
 *
 * acc = sum_k x_k * w_k + bias', with bias' = bias - x_zp * sum_k w_k precomputed: the
 * same sum modulo 2^32 as sum (x_k - x_zp) * w_k + bias, where padded x_k = x_zp adds
 * nothing. Requantization as the reference (q8_arith.h).
 */
#include "q8_arith.h"
#include "q8_dsp.h"
#include "q8_runtime.h"
#include "q8_window.h"

enum { IM2COL_FREQ, IM2COL_IREQ };

/* Where tap k goes in a column: within each group of four, order 0, 2, 1, 3. */
Q8_INLINE int32_t column_slot(int32_t k)
{
    static const int32_t order[4] = {0, 2, 1, 3};
    return (k & ~3) + order[k & 3];
}

/* Gather the taps of output pixel (oh, ow) of image x into column (k_padded int16). */
static void fill_column(const q8_conv_im2col_params *p, const uint8_t *x, int32_t oh,
                        int32_t ow, int16_t *column, int is_signed)
{
    const q8_window *win = &p->window;
    const int32_t H = p->input.h, W = p->input.w;
    const int32_t ih0 = oh * win->stride_h - win->pad_top;
    const int32_t iw0 = ow * win->stride_w - win->pad_left;
    const int16_t pad = (int16_t)p->pad_value;
    int32_t c, kh, kw, k = 0;
    for (c = 0; c < p->input.c; c++) {
        const uint8_t *x_c = x + (size_t)c * (size_t)(H * W);
        for (kh = 0; kh < win->kernel_h; kh++) {
            const int32_t ih = ih0 + kh * win->dilation_h;
            const uint8_t *row = x_c + (size_t)(ih < 0 ? 0 : ih) * (size_t)W;
            const int row_inside = ih >= 0 && ih < H;
            for (kw = 0; kw < win->kernel_w; kw++, k++) {
                const int32_t iw = iw0 + kw * win->dilation_w;
                int16_t v = pad;
                if (row_inside && iw >= 0 && iw < W) {
                    v = is_signed ? (int16_t)(int8_t)row[iw] : (int16_t)row[iw];
                }
                column[column_slot(k)] = v;
            }
        }
    }
    for (; k < p->k_padded; k++) {
        column[column_slot(k)] = 0; /* against zero weights */
    }
}

/* acc[r][j] += weights row r . column j, for rows w0 (and w1) and columns c0 (and c1). */
static void dot_2x2(const int8_t *w0, const int8_t *w1, const int16_t *c0, const int16_t *c1,
                    int32_t groups, int32_t acc[4])
{
    int32_t a00 = acc[0], a01 = acc[1], a10 = acc[2], a11 = acc[3];
    int32_t i;
    /* A down-counter and one base pointer per operand keep the loop in registers. */
    for (i = groups; i > 0; i--) {
        const uint32_t wa = q8_load32(w0), wb = q8_load32(w1);
        const uint32_t wa_even = q8_sxtb16(wa), wa_odd = q8_sxtb16(q8_ror8(wa));
        const uint32_t wb_even = q8_sxtb16(wb), wb_odd = q8_sxtb16(q8_ror8(wb));
        const uint32_t x0_even = q8_load32(c0), x0_odd = q8_load32(c0 + 2);
        const uint32_t x1_even = q8_load32(c1), x1_odd = q8_load32(c1 + 2);
        a00 = q8_smlad(wa_even, x0_even, a00);
        a00 = q8_smlad(wa_odd, x0_odd, a00);
        a01 = q8_smlad(wa_even, x1_even, a01);
        a01 = q8_smlad(wa_odd, x1_odd, a01);
        a10 = q8_smlad(wb_even, x0_even, a10);
        a10 = q8_smlad(wb_odd, x0_odd, a10);
        a11 = q8_smlad(wb_even, x1_even, a11);
        a11 = q8_smlad(wb_odd, x1_odd, a11);
        w0 += 4;
        w1 += 4;
        c0 += 4;
        c1 += 4;
    }
    acc[0] = a00;
    acc[1] = a01;
    acc[2] = a10;
    acc[3] = a11;
}

static int32_t dot_1x1(const int8_t *w, const int16_t *c, int32_t groups, int32_t acc)
{
    int32_t i;
    for (i = 0; i < groups; i++) {
        const uint32_t wv = q8_load32(w);
        acc = q8_smlad(q8_sxtb16(wv), q8_load32(c), acc);
        acc = q8_smlad(q8_sxtb16(q8_ror8(wv)), q8_load32(c + 2), acc);
        w += 4;
        c += 4;
    }
    return acc;
}

Q8_INLINE uint8_t requantize(const q8_requant_params *rq, int32_t m, int32_t acc, int mode)
{
    const int32_t ch = rq->per_channel ? m : 0;
    const int32_t lo = rq->act_min - rq->zero_point, hi = rq->act_max - rq->zero_point;
    const int32_t v = mode == IM2COL_IREQ ? q8_requant_int(acc, rq->mult[ch], rq->exp[ch], lo, hi)
                                          : q8_requant_f32(acc, rq->scale[ch], (float)lo,
                                                           (float)hi);
    return (uint8_t)(v + rq->zero_point);
}

Q8_INLINE void conv_im2col(const q8_conv_im2col_params *p, const uint8_t *Q8_RESTRICT x,
                           uint8_t *Q8_RESTRICT y, int16_t *Q8_RESTRICT scratch, int is_signed,
                           int mode)
{
    const int32_t M = p->output.c, OW = p->output.w;
    const int32_t pixels = p->output.h * OW, groups = p->k_padded / 4;
    const size_t in_image = (size_t)p->input.c * (size_t)(p->input.h * p->input.w);
    int16_t *col0 = scratch, *col1 = scratch + p->k_padded;
    int32_t n, px, m;
    for (n = 0; n < p->input.n; n++) {
        const uint8_t *x_n = x + (size_t)n * in_image;
        uint8_t *y_n = y + (size_t)n * (size_t)M * (size_t)pixels;
        for (px = 0; px < pixels; px += 2) {
            const int two = px + 1 < pixels;
            fill_column(p, x_n, px / OW, px % OW, col0, is_signed);
            if (two) {
                fill_column(p, x_n, (px + 1) / OW, (px + 1) % OW, col1, is_signed);
            }
            for (m = 0; m < M; m += 2) {
                const int8_t *w0 = p->weights + (size_t)m * (size_t)p->k_padded;
                int32_t acc[4];
                acc[0] = acc[1] = p->bias[m];
                if (m + 1 < M) {
                    acc[2] = acc[3] = p->bias[m + 1];
                    if (two) {
                        dot_2x2(w0, w0 + p->k_padded, col0, col1, groups, acc);
                    } else {
                        acc[0] = dot_1x1(w0, col0, groups, acc[0]);
                        acc[2] = dot_1x1(w0 + p->k_padded, col0, groups, acc[2]);
                    }
                    y_n[(size_t)(m + 1) * (size_t)pixels + (size_t)px] =
                        requantize(&p->requant, m + 1, acc[2], mode);
                    if (two) {
                        y_n[(size_t)(m + 1) * (size_t)pixels + (size_t)px + 1] =
                            requantize(&p->requant, m + 1, acc[3], mode);
                    }
                } else {
                    acc[0] = dot_1x1(w0, col0, groups, acc[0]);
                    if (two) {
                        acc[1] = dot_1x1(w0, col1, groups, acc[1]);
                    }
                }
                y_n[(size_t)m * (size_t)pixels + (size_t)px] =
                    requantize(&p->requant, m, acc[0], mode);
                if (two) {
                    y_n[(size_t)m * (size_t)pixels + (size_t)px + 1] =
                        requantize(&p->requant, m, acc[1], mode);
                }
            }
        }
    }
}

#define Q8_DEFINE_IM2COL(NAME, TX, SIGNED, MODE)                                             \
    void NAME(const q8_conv_im2col_params *params, const TX *Q8_RESTRICT input,              \
              void *Q8_RESTRICT output, int16_t *Q8_RESTRICT scratch)                        \
    {                                                                                        \
        conv_im2col(params, (const uint8_t *)input, (uint8_t *)output, scratch, SIGNED, MODE); \
    }

Q8_DEFINE_IM2COL(q8_conv_u8_im2col_freq, uint8_t, 0, IM2COL_FREQ)
Q8_DEFINE_IM2COL(q8_conv_s8_im2col_freq, int8_t, 1, IM2COL_FREQ)
Q8_DEFINE_IM2COL(q8_conv_u8_im2col_ireq, uint8_t, 0, IM2COL_IREQ)
Q8_DEFINE_IM2COL(q8_conv_s8_im2col_ireq, int8_t, 1, IM2COL_IREQ)
