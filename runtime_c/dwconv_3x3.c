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
#include "q8_dsp.h"
#include "q8_runtime.h"

enum { DW_FREQ, DW_IREQ };

Q8_INLINE int32_t load_x(const uint8_t *p, int is_signed)
{
    return is_signed ? (int32_t)(int8_t)*p : (int32_t)*p;
}

/* A channel's requantization constants, read once per channel. */
typedef struct {
    float scale, lo_f, hi_f;
    int32_t mult, exp, lo, hi, zero_point;
} channel_requant;

Q8_INLINE channel_requant channel_constants(const q8_requant_params *rq, int32_t c, int mode)
{
    channel_requant r;
    const int32_t ch = rq->per_channel ? c : 0;
    r.lo = rq->act_min - rq->zero_point;
    r.hi = rq->act_max - rq->zero_point;
    r.lo_f = (float)r.lo;
    r.hi_f = (float)r.hi;
    r.zero_point = rq->zero_point;
    r.scale = mode == DW_FREQ ? rq->scale[ch] : 0.0f;
    r.mult = mode == DW_IREQ ? rq->mult[ch] : 0;
    r.exp = mode == DW_IREQ ? rq->exp[ch] : 0;
    return r;
}

Q8_INLINE uint8_t requantize(const channel_requant *r, int32_t acc, int mode)
{
    const int32_t v = mode == DW_IREQ ? q8_requant_int(acc, r->mult, r->exp, r->lo, r->hi)
                                      : q8_requant_f32(acc, r->scale, r->lo_f, r->hi_f);
    return (uint8_t)(v + r->zero_point);
}

/*
 * One output whose window leaves the input: the taps inside, as (x - pad) * w, on top of
 * the unfolded bias (bias' + pad * sum(w)), so padding taps cost nothing.
 */
Q8_INLINE int32_t border_output(const uint8_t *x, int32_t H, int32_t W, int32_t ih0,
                                int32_t iw0, const int32_t *w, int32_t pad, int32_t bias,
                                int is_signed)
{
    const int32_t kh0 = ih0 < 0 ? -ih0 : 0, kw0 = iw0 < 0 ? -iw0 : 0;
    const int32_t kh1 = H - ih0 < 3 ? H - ih0 : 3, kw1 = W - iw0 < 3 ? W - iw0 : 3;
    uint32_t acc = (uint32_t)bias;
    int32_t kh, kw;
    for (kh = kh0; kh < kh1; kh++) {
        const uint8_t *row = x + (size_t)(ih0 + kh) * (size_t)W + (size_t)iw0;
        for (kw = kw0; kw < kw1; kw++) {
            acc += (uint32_t)((load_x(row + kw, is_signed) - pad) * w[kh * 3 + kw]);
        }
    }
    return (int32_t)acc;
}

/* Two int16 weights in one word: lo, hi. */
Q8_INLINE int32_t weight_pair(const int16_t *w)
{
    return (int32_t)(((uint32_t)(uint16_t)w[0]) | ((uint32_t)(uint16_t)w[1] << 16));
}

/*
 * The outputs of one channel whose windows lie inside the input: row by row, three row
 * pointers walk along, the nine weights sit in five registers as halfword pairs, each
 * tap is one 16 x 16 multiply-accumulate (SMLABB/SMLABT on DSP cores).
 */
Q8_INLINE void interior_rows(const q8_dwconv_params *p, const uint8_t *x_c, uint8_t *y_c,
                             int32_t c, const int16_t *w, const int32_t rows[2],
                             const int32_t cols[2], int is_signed, int mode)
{
    const channel_requant rq = channel_constants(&p->requant, c, mode);
    const int32_t W = p->input.w, OW = p->output.w, sw = p->stride_w;
    const int32_t w01 = weight_pair(w), w23 = weight_pair(w + 2), w45 = weight_pair(w + 4);
    const int32_t w67 = weight_pair(w + 6), w8 = (int32_t)w[8];
    const int32_t bias = p->bias[c];
    int32_t oh, ow;
    for (oh = rows[0]; oh < rows[1]; oh++) {
        const uint8_t *r0 = x_c + (size_t)(oh * p->stride_h - p->pad_top) * (size_t)W +
                            (size_t)(cols[0] * sw - p->pad_left);
        const uint8_t *r1 = r0 + W, *r2 = r1 + W;
        uint8_t *out = y_c + (size_t)oh * (size_t)OW + (size_t)cols[0];
        for (ow = cols[0]; ow < cols[1]; ow++) {
            int32_t acc = bias;
            acc = q8_smlabb(load_x(r0, is_signed), w01, acc);
            acc = q8_smlabt(load_x(r0 + 1, is_signed), w01, acc);
            acc = q8_smlabb(load_x(r0 + 2, is_signed), w23, acc);
            acc = q8_smlabt(load_x(r1, is_signed), w23, acc);
            acc = q8_smlabb(load_x(r1 + 1, is_signed), w45, acc);
            acc = q8_smlabt(load_x(r1 + 2, is_signed), w45, acc);
            acc = q8_smlabb(load_x(r2, is_signed), w67, acc);
            acc = q8_smlabt(load_x(r2 + 1, is_signed), w67, acc);
            acc = q8_smlabb(load_x(r2 + 2, is_signed), w8, acc);
            *out++ = requantize(&rq, acc, mode);
            r0 += sw;
            r1 += sw;
            r2 += sw;
        }
    }
}

Q8_INLINE void dwconv_3x3(const q8_dwconv_params *p, const uint8_t *Q8_RESTRICT x,
                          uint8_t *Q8_RESTRICT y, int is_signed, int mode)
{
    const int32_t C = p->input.c, H = p->input.h, W = p->input.w;
    const int32_t OH = p->output.h, OW = p->output.w;
    const int32_t sh = p->stride_h, sw = p->stride_w;
    const int32_t pt = p->pad_top, pl = p->pad_left;
    /* Outputs [oh_lo, oh_hi) x [ow_lo, ow_hi) have their whole window inside. */
    int32_t rows[2], cols[2];
    int32_t n, c, oh, ow, i;
    rows[0] = (pt + sh - 1) / sh;
    cols[0] = (pl + sw - 1) / sw;
    rows[1] = (H - 3 + pt) >= 0 ? (H - 3 + pt) / sh + 1 : 0;
    cols[1] = (W - 3 + pl) >= 0 ? (W - 3 + pl) / sw + 1 : 0;
    rows[1] = rows[1] > OH ? OH : rows[1];
    cols[1] = cols[1] > OW ? OW : cols[1];
    if (rows[1] < rows[0] || cols[1] <= cols[0]) {
        rows[1] = rows[0]; /* no interior */
    }
    for (n = 0; n < p->input.n; n++) {
        for (c = 0; c < C; c++) {
            const uint8_t *x_c = x + ((size_t)n * (size_t)C + (size_t)c) * (size_t)(H * W);
            uint8_t *y_c = y + ((size_t)n * (size_t)C + (size_t)c) * (size_t)(OH * OW);
            const int16_t *wc = p->weights + (size_t)c * 9u;
            int32_t w[9];
            uint32_t unfolded = (uint32_t)p->bias[c];
            for (i = 0; i < 9; i++) {
                w[i] = (int32_t)wc[i];
                unfolded += (uint32_t)(p->pad_value * w[i]);
            }
            const channel_requant rq = channel_constants(&p->requant, c, mode);
            interior_rows(p, x_c, y_c, c, wc, rows, cols, is_signed, mode);
            for (oh = 0; oh < OH; oh++) {
                const int inside_row = oh >= rows[0] && oh < rows[1];
                for (ow = 0; ow < OW; ow++) {
                    if (inside_row && ow >= cols[0] && ow < cols[1]) {
                        ow = cols[1] - 1; /* done by interior_rows */
                        continue;
                    }
                    y_c[oh * OW + ow] = requantize(
                        &rq,
                        border_output(x_c, H, W, oh * sh - pt, ow * sw - pl, w, p->pad_value,
                                      (int32_t)unfolded, is_signed),
                        mode);
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
