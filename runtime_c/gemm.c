/*
 * gemm.c - integer matrix products: QLinearMatMul, MatMulInteger, QGemm. Reference path.
 *
 * One loop nest, instantiated per operand types and output stage. The accumulation is
 * modulo 2^32 like ORT's int32 arithmetic, so no input overflows a signed type; the
 * output stages are those of q8_arith.h.
 */
#include "q8_arith.h"
#include "q8_runtime.h"


Q8_INLINE int32_t load8(const uint8_t *p, int is_signed)
{
    return is_signed ? (int32_t)(int8_t)*p : (int32_t)*p;
}

Q8_INLINE int32_t wrap_to_int32(uint32_t v)
{
    return v > 0x7fffffffu ? -(int32_t)(0xffffffffu - v) - 1 : (int32_t)v;
}

Q8_INLINE void gemm_reference(const q8_gemm_params *p, const uint8_t *Q8_RESTRICT a,
                              const uint8_t *Q8_RESTRICT b, void *Q8_RESTRICT y, int a_signed,
                              int b_signed, int out)
{
    const q8_requant_params *rq = &p->requant;
    const int32_t lo = rq->act_min - rq->zero_point;
    const int32_t hi = rq->act_max - rq->zero_point;
    int32_t batch, i, j, q;

    for (batch = 0; batch < p->batches; batch++) {
        const uint8_t *a_b = a + p->a_offset[batch];
        const uint8_t *b_b = b + p->b_offset[batch];
        const int32_t base = p->param_offset ? p->param_offset[batch] : 0;
        const size_t y_base = (size_t)batch * (size_t)p->m * (size_t)p->n;
        for (i = 0; i < p->m; i++) {
            for (j = 0; j < p->n; j++) {
                const int32_t ch = base + (p->per_column ? j : 0);
                const int32_t b_zp = p->b_zero_point[ch];
                const size_t at = y_base + (size_t)i * (size_t)p->n + (size_t)j;
                uint32_t acc = 0u;
                int32_t v;
                for (q = 0; q < p->k; q++) {
                    const int32_t av =
                        load8(a_b + i * p->a_stride_m + q * p->a_stride_k, a_signed) -
                        p->a_zero_point;
                    const int32_t bv =
                        load8(b_b + q * p->b_stride_k + j * p->b_stride_n, b_signed) - b_zp;
                    acc += (uint32_t)(av * bv);
                }
                if (p->bias) {
                    acc += (uint32_t)p->bias[i * p->bias_stride_m + j * p->bias_stride_n];
                }
                if (out == Q8_RQ_I32) {
                    ((int32_t *)y)[at] = wrap_to_int32(acc);
                    continue;
                }
                if (out == Q8_RQ_F32) {
                    ((float *)y)[at] = (float)((float)wrap_to_int32(acc) * rq->scale[ch]);
                    continue;
                }
                if (out == Q8_RQ_IREQ) {
                    v = q8_requant_int(wrap_to_int32(acc), rq->mult[ch], rq->exp[ch], lo, hi);
                } else {
                    v = q8_requant_f32(wrap_to_int32(acc), rq->scale[ch], (float)lo, (float)hi);
                }
                /* Modular conversion: int8 results land as their two's complement byte. */
                ((uint8_t *)y)[at] = (uint8_t)(v + rq->zero_point);
            }
        }
    }
}

#define Q8_DEFINE_GEMM(A, B, TA, TB, A_SIGNED, B_SIGNED)                                         \
    void q8_gemm_##A##B##_freq(const q8_gemm_params *params, const TA *Q8_RESTRICT a,           \
                               const TB *Q8_RESTRICT b, void *Q8_RESTRICT y)                    \
    {                                                                                            \
        gemm_reference(params, (const uint8_t *)a, (const uint8_t *)b, y, A_SIGNED, B_SIGNED,   \
                       Q8_RQ_FREQ);                                                                \
    }                                                                                            \
    void q8_gemm_##A##B##_ireq(const q8_gemm_params *params, const TA *Q8_RESTRICT a,           \
                               const TB *Q8_RESTRICT b, void *Q8_RESTRICT y)                    \
    {                                                                                            \
        gemm_reference(params, (const uint8_t *)a, (const uint8_t *)b, y, A_SIGNED, B_SIGNED,   \
                       Q8_RQ_IREQ);                                                                \
    }                                                                                            \
    void q8_gemm_##A##B##_i32(const q8_gemm_params *params, const TA *Q8_RESTRICT a,            \
                              const TB *Q8_RESTRICT b, int32_t *Q8_RESTRICT y)                  \
    {                                                                                            \
        gemm_reference(params, (const uint8_t *)a, (const uint8_t *)b, y, A_SIGNED, B_SIGNED,   \
                       Q8_RQ_I32);                                                                 \
    }                                                                                            \
    void q8_gemm_##A##B##_f32(const q8_gemm_params *params, const TA *Q8_RESTRICT a,            \
                              const TB *Q8_RESTRICT b, float *Q8_RESTRICT y)                    \
    {                                                                                            \
        gemm_reference(params, (const uint8_t *)a, (const uint8_t *)b, y, A_SIGNED, B_SIGNED,   \
                       Q8_RQ_F32);                                                                 \
    }

Q8_DEFINE_GEMM(u8, u8, uint8_t, uint8_t, 0, 0)
Q8_DEFINE_GEMM(u8, s8, uint8_t, int8_t, 0, 1)
Q8_DEFINE_GEMM(s8, u8, int8_t, uint8_t, 1, 0)
Q8_DEFINE_GEMM(s8, s8, int8_t, int8_t, 1, 1)
