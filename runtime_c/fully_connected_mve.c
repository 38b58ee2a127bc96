/*
 * fully_connected_mve.c - matrix products with constant weights (QGemm, QLinearMatMul) whose
 * weight zero point is 0, on cores with Helium (MVE: Cortex-M55, M85).
 *
 * Each row of A is copied once into int8 scratch (a uint8 row less 128, x ^ 0x80), its tail
 * to k_padded zeroed; eight weight rows then take it 16 taps at a time, one VMLADAVA.S8 a
 * row: 128 multiply-accumulates in 19 instructions. The generator stores the rows in
 * blocks of eight (the last padded with zero rows, the bias too), interleaved per 16 taps:
 * [n_padded/8][k_padded/16][8][16], so one pointer walks a block.
 *
 * acc = sum_k a'_k * w_k + bias', a' the scratch row, bias' = C - a'_zp * sum_k w_k
 * precomputed (modulo 2^32) with a'_zp = a_zp (int8) or a_zp - 128 (uint8): the same sum as
 * sum (a_k - a_zp) * w_k + C. The saturating float modes and float32 outputs requantize
 * four columns at a time with the same float32 operations as the reference; the other
 * modes as the reference (q8_store_requantized). Without MVE (the host, Q8_NO_MVE or
 * Q8_NO_ASM) the same layout runs plain C loops.
 */
#include <string.h>

#include "q8_arith.h"
#include "q8_dsp.h"
#include "q8_requant_row.h"
#include "q8_runtime.h"

/* The row as int8, zero taps up to k_padded. */
static void copy_row_i8(const uint8_t *a, int8_t *out, int32_t k, int32_t k_padded,
                        int is_signed)
{
    const uint8_t flip = is_signed ? 0u : 0x80u;
    int32_t i;
#if Q8_HAS_MVE
    const uint8x16_t flips = vdupq_n_u8(flip);
    for (i = 0; i < k; i += 16) {
        const mve_pred16_t lanes = vctp8q((uint32_t)(k - i));
        vstrbq_p_u8((uint8_t *)out + i, veorq_u8(vldrbq_z_u8(a + i, lanes), flips), lanes);
    }
#else
    for (i = 0; i < k; i++) {
        out[i] = (int8_t)(a[i] ^ flip);
    }
#endif
    memset(out + k, 0, (size_t)(k_padded - k));
}

/* acc[r] += weight row r (of the block's eight) . x, over blocks of 16 taps. */
#if Q8_HAS_MVE && Q8_ASM && !defined(__ARM_RWPI)
/* By hand: VMLADAVA's accumulators are even registers, eight of them r0 .. r12 and lr (GCC
 * 12 spills two); the weights, row and count sit in r1, r3 and r5, the accumulators'
 * address on the stack while r0 accumulates. */
static void dot_mve_8x1(const int8_t *w, const int8_t *x, int32_t blocks, int32_t acc[8])
{
    register int32_t *r_acc __asm__("r0") = acc;
    register const int8_t *r_w __asm__("r1") = w;
    register const int8_t *r_x __asm__("r3") = x;
    register int32_t r_n __asm__("r5") = blocks;
    __asm__ volatile(
        "ldrd r2, r4, [r0, #4]\n\t"
        "ldrd r6, r8, [r0, #12]\n\t"
        "ldrd r10, r12, [r0, #20]\n\t"
        "ldr lr, [r0, #28]\n\t"
        "push {r0}\n\t"
        "ldr r0, [r0]\n"
        "1:\n\t"
        "vldrb.8 q0, [r3], #16\n\t"
        "vldrb.8 q1, [r1], #16\n\t"
        "vmladava.s8 r0, q1, q0\n\t"
        "vldrb.8 q2, [r1], #16\n\t"
        "vmladava.s8 r2, q2, q0\n\t"
        "vldrb.8 q1, [r1], #16\n\t"
        "vmladava.s8 r4, q1, q0\n\t"
        "vldrb.8 q2, [r1], #16\n\t"
        "vmladava.s8 r6, q2, q0\n\t"
        "vldrb.8 q1, [r1], #16\n\t"
        "vmladava.s8 r8, q1, q0\n\t"
        "vldrb.8 q2, [r1], #16\n\t"
        "vmladava.s8 r10, q2, q0\n\t"
        "vldrb.8 q1, [r1], #16\n\t"
        "vmladava.s8 r12, q1, q0\n\t"
        "vldrb.8 q2, [r1], #16\n\t"
        "vmladava.s8 lr, q2, q0\n\t"
        "subs r5, r5, #1\n\t"
        "bne 1b\n\t"
        "pop {r5}\n\t"
        "str r0, [r5]\n\t"
        "strd r2, r4, [r5, #4]\n\t"
        "strd r6, r8, [r5, #12]\n\t"
        "strd r10, r12, [r5, #20]\n\t"
        "str lr, [r5, #28]\n\t"
        : "+r"(r_acc), "+r"(r_w), "+r"(r_x), "+r"(r_n)
        :
        : "r2", "r4", "r6", "r8", "r10", "r12", "lr", "s0", "s1", "s2", "s3", "s4", "s5",
          "s6", "s7", "s8", "s9", "s10", "s11", "cc", "memory");
}
#elif Q8_HAS_MVE
static void dot_mve_8x1(const int8_t *w, const int8_t *x, int32_t blocks, int32_t acc[8])
{
    int32_t r;
    do {
        const int8x16_t v = vld1q_s8(x);
        for (r = 0; r < 8; r++) {
            acc[r] = vmladavaq_s8(acc[r], vld1q_s8(w + 16 * r), v);
        }
        w += 128;
        x += 16;
    } while (--blocks);
}
#else
static void dot_mve_8x1(const int8_t *w, const int8_t *x, int32_t blocks, int32_t acc[8])
{
    uint32_t a[8];
    int32_t r, t;
    for (r = 0; r < 8; r++) {
        a[r] = (uint32_t)acc[r];
    }
    do {
        for (r = 0; r < 8; r++) {
            for (t = 0; t < 16; t++) {
                a[r] += (uint32_t)(w[16 * r + t] * x[t]);
            }
        }
        w += 128;
        x += 16;
    } while (--blocks);
    for (r = 0; r < 8; r++) {
        acc[r] = (int32_t)a[r];
    }
}
#endif

#if Q8_HAS_MVE
/* Four columns from n of a saturating float mode or of a float32 output: the reference's
 * float32 operations (VCVT, VMUL; VCVTN rounds to nearest, ties to even, as VCVTR in the
 * default mode), stored under a predicate (columns past N are not). */
Q8_INLINE void store_four(const q8_requant_params *rq, const int32_t *acc, int32_t n, int32_t N,
                       void *y, int mode)
{
    const mve_pred16_t lanes = vctp32q((uint32_t)(N - n));
    const float32x4_t scale = rq->per_channel ? vldrwq_z_f32(rq->scale + n, lanes)
                                              : vdupq_n_f32(rq->scale[0]);
    const float32x4_t value = vmulq_f32(vcvtq_f32_s32(vld1q_s32(acc)), scale);
    if (mode == Q8_RQ_F32) {
        vstrwq_p_f32((float *)y + n, value, lanes);
    } else {
        const int32_t lo = mode == Q8_RQ_FREQ_BOUNDED_S8 ? -128 : 0;
        int32x4_t v = vaddq_n_s32(vcvtnq_s32_f32(value), rq->zero_point);
        v = vminq_s32(vmaxq_s32(v, vdupq_n_s32(lo)), vdupq_n_s32(lo + 255));
        vstrbq_p_s32((int8_t *)y + n, v, lanes);
    }
}

/* Whether the scales of columns n .. n + 7 (those below N) are normal floats or zero:
 * Helium's vector float operations flush subnormals, so a subnormal scale takes the
 * scalar path. (The saturating modes are only chosen for such scales: bounded_requant.) */
Q8_INLINE int normal_scales(const q8_requant_params *rq, int32_t n, int32_t N)
{
    int32_t j;
    for (j = 0; j < 8 && n + j < N; j++) {
        const float s = rq->scale[rq->per_channel ? n + j : 0];
        if (s != 0.0f && s < 1.17549435e-38f && s > -1.17549435e-38f) {
            return 0;
        }
    }
    return 1;
}
#endif

static void fully_connected_mve(const q8_fc_params *p, const uint8_t *Q8_RESTRICT a,
                                void *Q8_RESTRICT y, int8_t *Q8_RESTRICT scratch,
                                int is_signed, int mode)
{
    const int32_t N = p->n, blocks = p->k_padded / 16;
    const size_t block_bytes = 8u * (size_t)p->k_padded;
    int32_t row, n, j;
    for (row = 0; row < p->m; row++) {
        const size_t out = (size_t)row * (size_t)N;
        const int8_t *w = p->weights;
        copy_row_i8(a + (size_t)row * (size_t)p->k, scratch, p->k, p->k_padded, is_signed);
        for (n = 0; n < N; n += 8) {
            int32_t acc[8];
            for (j = 0; j < 8; j++) {
                acc[j] = p->bias[n + j];
            }
            if (blocks > 0) {
                dot_mve_8x1(w, scratch, blocks, acc);
            }
            w += block_bytes;
#if Q8_HAS_MVE
            if ((mode == Q8_RQ_F32 && normal_scales(&p->requant, n, N)) ||
                mode == Q8_RQ_FREQ_BOUNDED_S8 || mode == Q8_RQ_FREQ_BOUNDED_U8) {
                uint8_t *y_row = (uint8_t *)y + (mode == Q8_RQ_F32 ? 4u : 1u) * out;
                store_four(&p->requant, acc, n, N, y_row, mode);
                if (n + 4 < N) {
                    store_four(&p->requant, acc + 4, n + 4, N, y_row, mode);
                }
                continue;
            }
#endif
            for (j = 0; j < 8 && n + j < N; j++) {
                q8_store_requantized(&p->requant, n + j, acc[j], y, out + (size_t)(n + j),
                                     mode);
            }
        }
    }
}

#define Q8_DEFINE_FC_MVE(NAME, TX, TY, SIGNED, MODE)                                       \
    void NAME(const q8_fc_params *params, const TX *Q8_RESTRICT input,                    \
              TY *Q8_RESTRICT output, int8_t *Q8_RESTRICT scratch)                        \
    {                                                                                      \
        fully_connected_mve(params, (const uint8_t *)input, output, scratch, SIGNED,       \
                            q8_layer_requant_mode(&params->requant, MODE));                          \
    }

Q8_DEFINE_FC_MVE(q8_fc_u8_mve_freq, uint8_t, void, 0, Q8_RQ_FREQ)
Q8_DEFINE_FC_MVE(q8_fc_s8_mve_freq, int8_t, void, 1, Q8_RQ_FREQ)
Q8_DEFINE_FC_MVE(q8_fc_u8_mve_ireq, uint8_t, void, 0, Q8_RQ_IREQ)
Q8_DEFINE_FC_MVE(q8_fc_s8_mve_ireq, int8_t, void, 1, Q8_RQ_IREQ)
Q8_DEFINE_FC_MVE(q8_fc_u8_mve_f32, uint8_t, float, 0, Q8_RQ_F32)
Q8_DEFINE_FC_MVE(q8_fc_s8_mve_f32, int8_t, float, 1, Q8_RQ_F32)
