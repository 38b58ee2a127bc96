/*
 * dwconv_3x3.c - depthwise QLinearConv with 3x3 kernels (one filter per channel, any
 * stride and padding, dilation 1): the fast path beside the reference in qlinear_conv.c.
 *
 * Each channel's nine weights (minus their zero point, int16) stay in registers. Every output
 * is acc = bias' + sum of nine x * w over raw inputs, with bias' = bias - x_zp * sum(w)
 * precomputed and padding taps reading x_zp, which is the same sum modulo 2^32 as
 * sum (x - x_zp) * w + bias. Windows wholly inside the input take a loop without bounds
 * checks; the border ones check each tap.
 */
#include "q8_arith.h"
#include "q8_runtime.h"

enum { DW_FREQ, DW_IREQ };

Q8_INLINE int32_t load_x(const uint8_t *p, int is_signed)
{
    return is_signed ? (int32_t)(int8_t)*p : (int32_t)*p;
}

Q8_INLINE uint8_t requantize(const q8_requant_params *rq, int32_t c, int32_t acc, int mode)
{
    const int32_t ch = rq->per_channel ? c : 0;
    const int32_t lo = rq->act_min - rq->zero_point, hi = rq->act_max - rq->zero_point;
    const int32_t v = mode == DW_IREQ ? q8_requant_int(acc, rq->mult[ch], rq->exp[ch], lo, hi)
                                      : q8_requant_f32(acc, rq->scale[ch], (float)lo,
                                                       (float)hi);
    return (uint8_t)(v + rq->zero_point);
}

/* One output whose window may leave the input: padding taps read pad. */
Q8_INLINE int32_t border_output(const uint8_t *x, int32_t H, int32_t W, int32_t ih0,
                                int32_t iw0, const int32_t *w, int32_t pad, int32_t acc,
                                int is_signed)
{
    int32_t kh, kw;
    for (kh = 0; kh < 3; kh++) {
        const int32_t ih = ih0 + kh;
        for (kw = 0; kw < 3; kw++) {
            const int32_t iw = iw0 + kw;
            const int32_t v = (ih >= 0 && ih < H && iw >= 0 && iw < W)
                                  ? load_x(x + (size_t)ih * (size_t)W + (size_t)iw, is_signed)
                                  : pad;
            acc = (int32_t)((uint32_t)acc + (uint32_t)(v * w[kh * 3 + kw]));
        }
    }
    return acc;
}

Q8_INLINE void dwconv_3x3(const q8_dwconv_params *p, const uint8_t *Q8_RESTRICT x,
                          uint8_t *Q8_RESTRICT y, int is_signed, int mode)
{
    const int32_t C = p->input.c, H = p->input.h, W = p->input.w;
    const int32_t OH = p->output.h, OW = p->output.w;
    const int32_t sh = p->stride_h, sw = p->stride_w;
    const int32_t pt = p->pad_top, pl = p->pad_left;
    /* Outputs [oh_lo, oh_hi) x [ow_lo, ow_hi) have their whole window inside. */
    const int32_t oh_lo = (pt + sh - 1) / sh, ow_lo = (pl + sw - 1) / sw;
    const int32_t oh_hi = (H - 3 + pt) >= 0 ? (H - 3 + pt) / sh + 1 : 0;
    const int32_t ow_hi = (W - 3 + pl) >= 0 ? (W - 3 + pl) / sw + 1 : 0;
    int32_t n, c, oh, ow, i;
    for (n = 0; n < p->input.n; n++) {
        for (c = 0; c < C; c++) {
            const uint8_t *x_c = x + ((size_t)n * (size_t)C + (size_t)c) * (size_t)(H * W);
            uint8_t *y_c = y + ((size_t)n * (size_t)C + (size_t)c) * (size_t)(OH * OW);
            const int16_t *wc = p->weights + (size_t)c * 9u;
            const int32_t bias = p->bias[c];
            int32_t w[9];
            for (i = 0; i < 9; i++) {
                w[i] = (int32_t)wc[i];
            }
            for (oh = 0; oh < OH; oh++) {
                const int32_t ih0 = oh * sh - pt;
                const int inside_rows = oh >= oh_lo && oh < oh_hi;
                for (ow = 0; ow < OW; ow++) {
                    const int32_t iw0 = ow * sw - pl;
                    int32_t acc;
                    if (inside_rows && ow >= ow_lo && ow < ow_hi) {
                        const uint8_t *r0 = x_c + (size_t)ih0 * (size_t)W + (size_t)iw0;
                        const uint8_t *r1 = r0 + W, *r2 = r1 + W;
                        uint32_t sum = (uint32_t)bias;
                        sum += (uint32_t)(load_x(r0, is_signed) * w[0]);
                        sum += (uint32_t)(load_x(r0 + 1, is_signed) * w[1]);
                        sum += (uint32_t)(load_x(r0 + 2, is_signed) * w[2]);
                        sum += (uint32_t)(load_x(r1, is_signed) * w[3]);
                        sum += (uint32_t)(load_x(r1 + 1, is_signed) * w[4]);
                        sum += (uint32_t)(load_x(r1 + 2, is_signed) * w[5]);
                        sum += (uint32_t)(load_x(r2, is_signed) * w[6]);
                        sum += (uint32_t)(load_x(r2 + 1, is_signed) * w[7]);
                        sum += (uint32_t)(load_x(r2 + 2, is_signed) * w[8]);
                        acc = (int32_t)sum;
                    } else {
                        acc = border_output(x_c, H, W, ih0, iw0, w, p->pad_value, bias,
                                            is_signed);
                    }
                    y_c[oh * OW + ow] = requantize(&p->requant, c, acc, mode);
                }
            }
        }
    }
}

#define Q8_DEFINE_DWCONV(NAME, TX, SIGNED, MODE)                                         \
    void NAME(const q8_dwconv_params *params, const TX *Q8_RESTRICT input,               \
              void *Q8_RESTRICT output)                                                  \
    {                                                                                    \
        dwconv_3x3(params, (const uint8_t *)input, (uint8_t *)output, SIGNED, MODE);     \
    }

Q8_DEFINE_DWCONV(q8_dwconv_u8_3x3_freq, uint8_t, 0, DW_FREQ)
Q8_DEFINE_DWCONV(q8_dwconv_s8_3x3_freq, int8_t, 1, DW_FREQ)
Q8_DEFINE_DWCONV(q8_dwconv_u8_3x3_ireq, uint8_t, 0, DW_IREQ)
Q8_DEFINE_DWCONV(q8_dwconv_s8_3x3_ireq, int8_t, 1, DW_IREQ)
