/*
 * fully_connected.c - matrix products with constant weights (QGemm, QLinearMatMul) whose
 * weight zero point is 0: the fast path beside the reference in gemm.c.
 *
 * Each row of A is widened once into int16 scratch; four weight rows at a time then
 * take it with 16-bit SIMD multiply-accumulates: a word of four weights, stored by the
 * generator as w0, w2, w1, w3, widens into the pairs (w0, w1) and (w2, w3) that match two
 * word loads of the row, so each q8_smlad does two multiply-accumulates.
 *
 * acc = sum_k a_k * w_k + bias', bias' = C - a_zp * sum_k w_k precomputed (modulo 2^32),
 * the same sum as sum (a_k - a_zp) * w_k + C. Requantization as the reference.
 */
#include "q8_arith.h"
#include "q8_dsp.h"
#include "q8_runtime.h"

enum { FC_FREQ, FC_IREQ, FC_F32 };

Q8_INLINE void widen_row(const uint8_t *a, int16_t *out, int32_t k, int32_t k_padded,
                         int is_signed)
{
    int32_t i;
    for (i = 0; i < k; i++) {
        out[i] = is_signed ? (int16_t)(int8_t)a[i] : (int16_t)a[i];
    }
    for (; i < k_padded; i++) {
        out[i] = 0;
    }
}

#if Q8_HAS_DSP
/* acc[r] += weight row r . x, for four rows k_padded apart. */
static void dot_4x1(const int8_t *w, int32_t k_padded, const int16_t *x, int32_t groups,
                    int32_t acc[4])
{
    const int8_t *w1 = w + k_padded, *w2 = w1 + k_padded, *w3 = w2 + k_padded;
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
    int32_t i;
    for (i = groups; i > 0; i--) {
        const uint32_t x01 = q8_load32(x), x23 = q8_load32(x + 2);
        uint32_t v = q8_load32(w);
        a0 = q8_smlad(q8_sxtb16(v), x01, a0);
        a0 = q8_smlad(q8_sxtb16(q8_ror8(v)), x23, a0);
        v = q8_load32(w1);
        a1 = q8_smlad(q8_sxtb16(v), x01, a1);
        a1 = q8_smlad(q8_sxtb16(q8_ror8(v)), x23, a1);
        v = q8_load32(w2);
        a2 = q8_smlad(q8_sxtb16(v), x01, a2);
        a2 = q8_smlad(q8_sxtb16(q8_ror8(v)), x23, a2);
        v = q8_load32(w3);
        a3 = q8_smlad(q8_sxtb16(v), x01, a3);
        a3 = q8_smlad(q8_sxtb16(q8_ror8(v)), x23, a3);
        x += 4;
        w += 4;
        w1 += 4;
        w2 += 4;
        w3 += 4;
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}

static int32_t dot_1x1(const int8_t *w, const int16_t *x, int32_t groups, int32_t acc)
{
    int32_t i;
    for (i = groups; i > 0; i--) {
        const uint32_t v = q8_load32(w);
        acc = q8_smlad(q8_sxtb16(v), q8_load32(x), acc);
        acc = q8_smlad(q8_sxtb16(q8_ror8(v)), q8_load32(x + 2), acc);
        x += 4;
        w += 4;
    }
    return acc;
}
#else
/* Cores without the DSP extension: 32-bit multiply-accumulates, weights in stored order. */
Q8_INLINE uint32_t dot_group(const int8_t *w, const int16_t *x)
{
    return (uint32_t)(x[0] * w[0]) + (uint32_t)(x[1] * w[2]) + (uint32_t)(x[2] * w[1]) +
           (uint32_t)(x[3] * w[3]);
}

static void dot_4x1(const int8_t *w, int32_t k_padded, const int16_t *x, int32_t groups,
                    int32_t acc[4])
{
    const int8_t *w1 = w + k_padded, *w2 = w1 + k_padded, *w3 = w2 + k_padded;
    uint32_t a0 = (uint32_t)acc[0], a1 = (uint32_t)acc[1];
    uint32_t a2 = (uint32_t)acc[2], a3 = (uint32_t)acc[3];
    int32_t i;
    for (i = groups; i > 0; i--) {
        a0 += dot_group(w, x);
        a1 += dot_group(w1, x);
        a2 += dot_group(w2, x);
        a3 += dot_group(w3, x);
        x += 4;
        w += 4;
        w1 += 4;
        w2 += 4;
        w3 += 4;
    }
    acc[0] = (int32_t)a0;
    acc[1] = (int32_t)a1;
    acc[2] = (int32_t)a2;
    acc[3] = (int32_t)a3;
}

static int32_t dot_1x1(const int8_t *w, const int16_t *x, int32_t groups, int32_t acc)
{
    uint32_t sum = (uint32_t)acc;
    int32_t i;
    for (i = groups; i > 0; i--) {
        sum += dot_group(w, x);
        x += 4;
        w += 4;
    }
    return (int32_t)sum;
}
#endif

Q8_INLINE void store(const q8_requant_params *rq, int32_t n, int32_t acc, void *y, size_t at,
                     int mode)
{
    const int32_t ch = rq->per_channel ? n : 0;
    if (mode == FC_F32) {
        ((float *)y)[at] = (float)((float)acc * rq->scale[ch]);
    } else {
        const int32_t lo = rq->act_min - rq->zero_point, hi = rq->act_max - rq->zero_point;
        const int32_t v = mode == FC_IREQ ? q8_requant_int(acc, rq->mult[ch], rq->exp[ch], lo, hi)
                                          : q8_requant_f32(acc, rq->scale[ch], (float)lo,
                                                           (float)hi);
        ((uint8_t *)y)[at] = (uint8_t)(v + rq->zero_point);
    }
}

Q8_INLINE void fully_connected(const q8_fc_params *p, const uint8_t *Q8_RESTRICT a,
                               void *Q8_RESTRICT y, int16_t *Q8_RESTRICT scratch,
                               int is_signed, int mode)
{
    const int32_t N = p->n, groups = p->k_padded / 4;
    int32_t row, n;
    for (row = 0; row < p->m; row++) {
        const size_t out = (size_t)row * (size_t)N;
        widen_row(a + (size_t)row * (size_t)p->k, scratch, p->k, p->k_padded, is_signed);
        for (n = 0; n + 4 <= N; n += 4) {
            int32_t acc[4];
            acc[0] = p->bias[n];
            acc[1] = p->bias[n + 1];
            acc[2] = p->bias[n + 2];
            acc[3] = p->bias[n + 3];
            dot_4x1(p->weights + (size_t)n * (size_t)p->k_padded, p->k_padded, scratch, groups,
                    acc);
            store(&p->requant, n, acc[0], y, out + (size_t)n, mode);
            store(&p->requant, n + 1, acc[1], y, out + (size_t)n + 1, mode);
            store(&p->requant, n + 2, acc[2], y, out + (size_t)n + 2, mode);
            store(&p->requant, n + 3, acc[3], y, out + (size_t)n + 3, mode);
        }
        for (; n < N; n++) {
            const int32_t acc = dot_1x1(p->weights + (size_t)n * (size_t)p->k_padded, scratch,
                                        groups, p->bias[n]);
            store(&p->requant, n, acc, y, out + (size_t)n, mode);
        }
    }
}

#define Q8_DEFINE_FC(NAME, TX, TY, SIGNED, MODE)                                           \
    void NAME(const q8_fc_params *params, const TX *Q8_RESTRICT input,                    \
              TY *Q8_RESTRICT output, int16_t *Q8_RESTRICT scratch)                       \
    {                                                                                      \
        fully_connected(params, (const uint8_t *)input, output, scratch, SIGNED, MODE);    \
    }

Q8_DEFINE_FC(q8_fc_u8_freq, uint8_t, void, 0, FC_FREQ)
Q8_DEFINE_FC(q8_fc_s8_freq, int8_t, void, 1, FC_FREQ)
Q8_DEFINE_FC(q8_fc_u8_ireq, uint8_t, void, 0, FC_IREQ)
Q8_DEFINE_FC(q8_fc_s8_ireq, int8_t, void, 1, FC_IREQ)
Q8_DEFINE_FC(q8_fc_u8_f32, uint8_t, float, 0, FC_F32)
Q8_DEFINE_FC(q8_fc_s8_f32, int8_t, float, 1, FC_F32)
