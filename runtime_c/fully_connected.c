/*
 * fully_connected.c - matrix products with constant weights (QGemm, QLinearMatMul) whose
 * weight zero point is 0: the fast path beside the reference in gemm.c.
 *
 * Each row of A is widened once into int16 scratch; four weight rows at a time then
 * take it with 16-bit SIMD multiply-accumulates: a word of four weights, stored by the
 * generator as w0, w2, w1, w3, widens into the pairs (w0, w1) and (w2, w3) that match two
 * word loads of the row, so each q8_smlad does two multiply-accumulates. The generator
 * stores the rows in blocks of four (the last padded with zero rows, the bias too),
 * interleaved per group of four taps, so one pointer walks a block.
 *
 * acc = sum_k a_k * w_k + bias', bias' = C - a_zp * sum_k w_k precomputed (modulo 2^32),
 * the same sum as sum (a_k - a_zp) * w_k + C. Requantization as the reference.
 */
#include "q8_arith.h"
#include "q8_dsp.h"
#include "q8_requant_row.h"
#include "q8_runtime.h"

#if !Q8_HAS_DSP && defined(__SSE2__) && !defined(Q8_PIX_PORTABLE)
#include <emmintrin.h>
#include <string.h>
#endif

/* The modes are Q8_RQ_* (q8_arith.h); Q8_RQ_FREQ_BOUNDED_S8/_U8 run fused_fc_blocks (VCVTR
 * and SSAT/USAT, on cores with VCVTR). */

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

#if Q8_HAS_DSP && Q8_ASM
/* acc[r] += weight row r . x for a block of four rows, interleaved per group of four taps:
 * the loop scheduled by hand, 24 instructions and about 26 cycles per 16 MACs on
 * Cortex-M4 (word loads in pipelined runs rather than LDRD) (GCC 12's schedule of the C loop below: 24 and about 30). lr holds each
 * widened weight pair. Unrolled twice (the counter and the branch cost half as much); an
 * odd count enters at the second copy. */
#define Q8_DOT_4X1_GROUP                                                                   \
    "ldr %[x01], [%[x]], #4\n\t"                                                           \
    "ldr %[x23], [%[x]], #4\n\t"                                                           \
    "ldr %[v0], [%[w]], #4\n\t"                                                            \
    "ldr %[v1], [%[w]], #4\n\t"                                                            \
    "sxtb16 lr, %[v0]\n\t"                                                                 \
    "smlad %[a0], lr, %[x01], %[a0]\n\t"                                                   \
    "sxtb16 lr, %[v0], ror #8\n\t"                                                         \
    "smlad %[a0], lr, %[x23], %[a0]\n\t"                                                   \
    "sxtb16 lr, %[v1]\n\t"                                                                 \
    "smlad %[a1], lr, %[x01], %[a1]\n\t"                                                   \
    "sxtb16 lr, %[v1], ror #8\n\t"                                                         \
    "smlad %[a1], lr, %[x23], %[a1]\n\t"                                                   \
    "ldr %[v0], [%[w]], #4\n\t"                                                            \
    "ldr %[v1], [%[w]], #4\n\t"                                                            \
    "sxtb16 lr, %[v0]\n\t"                                                                 \
    "smlad %[a2], lr, %[x01], %[a2]\n\t"                                                   \
    "sxtb16 lr, %[v0], ror #8\n\t"                                                         \
    "smlad %[a2], lr, %[x23], %[a2]\n\t"                                                   \
    "sxtb16 lr, %[v1]\n\t"                                                                 \
    "smlad %[a3], lr, %[x01], %[a3]\n\t"                                                   \
    "sxtb16 lr, %[v1], ror #8\n\t"                                                         \
    "smlad %[a3], lr, %[x23], %[a3]\n\t"

Q8_INLINE void dot_4x1(const int8_t *w, const int16_t *x, int32_t groups, int32_t acc[4])
{
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
    uint32_t x01, x23, v0, v1;
    __asm__ volatile(
        "lsrs %[n], %[n], #1\n\t"
        "bcc 1f\n\t"
        "adds %[n], %[n], #1\n\t"
        "b 2f\n"
        ".p2align 2\n"
        "1:\n\t"
        Q8_DOT_4X1_GROUP
        "2:\n\t"
        Q8_DOT_4X1_GROUP
        "subs %[n], %[n], #1\n\t"
        "bne 1b\n"
        : [w] "+r"(w), [x] "+r"(x), [n] "+r"(groups), [a0] "+r"(a0), [a1] "+r"(a1),
          [a2] "+r"(a2), [a3] "+r"(a3), [x01] "=&r"(x01), [x23] "=&r"(x23), [v0] "=&r"(v0),
          [v1] "=&r"(v1)
        :
        : "lr", "cc", "memory");
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}
#elif Q8_HAS_DSP
/* acc[r] += weight row r . x for a block of four rows, interleaved per group of four taps
 * (one pointer, four word loads, two SXTB16 and two SMLAD per word). */
static void dot_4x1(const int8_t *w, const int16_t *x, int32_t groups, int32_t acc[4])
{
    const uint32_t *wp = (const uint32_t *)(const void *)w;
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
    do {
        const uint32_t x01 = q8_load32(x), x23 = q8_load32(x + 2);
        const uint32_t v0 = wp[0], v1 = wp[1];
        uint32_t v;
        a0 = q8_smlad(q8_sxtb16(v0), x01, a0);
        a0 = q8_smlad(q8_sxtb16_ror8(v0), x23, a0);
        a1 = q8_smlad(q8_sxtb16(v1), x01, a1);
        a1 = q8_smlad(q8_sxtb16_ror8(v1), x23, a1);
        v = wp[2];
        a2 = q8_smlad(q8_sxtb16(v), x01, a2);
        a2 = q8_smlad(q8_sxtb16_ror8(v), x23, a2);
        v = wp[3];
        a3 = q8_smlad(q8_sxtb16(v), x01, a3);
        a3 = q8_smlad(q8_sxtb16_ror8(v), x23, a3);
        wp += 4;
        x += 4;
    } while (--groups);
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}
#else
/* Cores without the DSP extension: 32-bit multiply-accumulates, weights in stored order. */
Q8_INLINE uint32_t dot_group(const int8_t *w, const int16_t *x)
{
    return (uint32_t)(x[0] * w[0]) + (uint32_t)(x[1] * w[2]) + (uint32_t)(x[2] * w[1]) +
           (uint32_t)(x[3] * w[3]);
}

static void dot_4x1(const int8_t *w, const int16_t *x, int32_t groups, int32_t acc[4])
{
    uint32_t a0 = (uint32_t)acc[0], a1 = (uint32_t)acc[1];
    uint32_t a2 = (uint32_t)acc[2], a3 = (uint32_t)acc[3];
    do {
        a0 += dot_group(w, x);
        a1 += dot_group(w + 4, x);
        a2 += dot_group(w + 8, x);
        a3 += dot_group(w + 12, x);
        x += 4;
        w += 16;
    } while (--groups);
    acc[0] = (int32_t)a0;
    acc[1] = (int32_t)a1;
    acc[2] = (int32_t)a2;
    acc[3] = (int32_t)a3;
}
#endif

/*
 * Wide weights (q8_fc_*_w16_*): int16, output columns in blocks of four (the last block
 * padded with zero rows), the four rows interleaved per four taps:
 * [n][k..k+3] [n+1][k..k+3] [n+2][k..k+3] [n+3][k..k+3] ...; k_padded a multiple of 8.
 * One 64-bit load per row and one for the input give 16 multiply-accumulates in 8
 * q8_smlad, nothing to widen.
 */
#if Q8_HAS_DSP
#define Q8_FC_W16_ROW(ACC, W, XLO, XHI)                                                    \
    do {                                                                                   \
        const uint64_t v_ = (W);                                                           \
        ACC = q8_smlad((uint32_t)v_, (XLO), ACC);                                          \
        ACC = q8_smlad((uint32_t)(v_ >> 32), (XHI), ACC);                                  \
    } while (0)

#if Q8_ASM
/* The loop by hand: per four taps, the input's two words and each row's two in pipelined
 * runs of loads, 8 SMLAD; 34 instructions and about 47 cycles per 32 MACs on Cortex-M4
 * (GCC 12's schedule of the C loop below: about 54). */
#define Q8_FC_W16_GROUP                                                                    \
    "ldr %[x01], [%[x]], #4\n\t"                                                           \
    "ldr %[x23], [%[x]], #4\n\t"                                                           \
    "ldr %[v0], [%[w]], #4\n\t"                                                            \
    "ldr %[v1], [%[w]], #4\n\t"                                                            \
    "smlad %[a0], %[v0], %[x01], %[a0]\n\t"                                                \
    "smlad %[a0], %[v1], %[x23], %[a0]\n\t"                                                \
    "ldr %[v0], [%[w]], #4\n\t"                                                            \
    "ldr %[v1], [%[w]], #4\n\t"                                                            \
    "smlad %[a1], %[v0], %[x01], %[a1]\n\t"                                                \
    "smlad %[a1], %[v1], %[x23], %[a1]\n\t"                                                \
    "ldr %[v0], [%[w]], #4\n\t"                                                            \
    "ldr %[v1], [%[w]], #4\n\t"                                                            \
    "smlad %[a2], %[v0], %[x01], %[a2]\n\t"                                                \
    "smlad %[a2], %[v1], %[x23], %[a2]\n\t"                                                \
    "ldr %[v0], [%[w]], #4\n\t"                                                            \
    "ldr %[v1], [%[w]], #4\n\t"                                                            \
    "smlad %[a3], %[v0], %[x01], %[a3]\n\t"                                                \
    "smlad %[a3], %[v1], %[x23], %[a3]\n\t"

static void dot_w16_4x1(const int16_t *w, const int16_t *x, int32_t blocks, int32_t acc[4])
{
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
    uint32_t x01, x23, v0, v1;
    __asm__ volatile(
        ".p2align 2\n"
        "1:\n\t"
        Q8_FC_W16_GROUP
        Q8_FC_W16_GROUP
        "subs %[n], %[n], #1\n\t"
        "bne 1b\n"
        : [w] "+r"(w), [x] "+r"(x), [n] "+r"(blocks), [a0] "+r"(a0), [a1] "+r"(a1),
          [a2] "+r"(a2), [a3] "+r"(a3), [x01] "=&r"(x01), [x23] "=&r"(x23), [v0] "=&r"(v0),
          [v1] "=&r"(v1)
        :
        : "cc", "memory");
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}
#else
static void dot_w16_4x1(const int16_t *w, const int16_t *x, int32_t blocks, int32_t acc[4])
{
    const uint64_t *wp = (const uint64_t *)(const void *)w;
    const uint64_t *xp = (const uint64_t *)(const void *)x;
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
    do {
        uint64_t xv = xp[0];
        Q8_FC_W16_ROW(a0, wp[0], (uint32_t)xv, (uint32_t)(xv >> 32));
        Q8_FC_W16_ROW(a1, wp[1], (uint32_t)xv, (uint32_t)(xv >> 32));
        Q8_FC_W16_ROW(a2, wp[2], (uint32_t)xv, (uint32_t)(xv >> 32));
        Q8_FC_W16_ROW(a3, wp[3], (uint32_t)xv, (uint32_t)(xv >> 32));
        xv = xp[1];
        Q8_FC_W16_ROW(a0, wp[4], (uint32_t)xv, (uint32_t)(xv >> 32));
        Q8_FC_W16_ROW(a1, wp[5], (uint32_t)xv, (uint32_t)(xv >> 32));
        Q8_FC_W16_ROW(a2, wp[6], (uint32_t)xv, (uint32_t)(xv >> 32));
        Q8_FC_W16_ROW(a3, wp[7], (uint32_t)xv, (uint32_t)(xv >> 32));
        wp += 8;
        xp += 2;
    } while (--blocks);
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}
#endif
#elif defined(__SSE2__) && !defined(Q8_PIX_PORTABLE)
/* x86-64 hosts: a group of four taps of the four rows is two vectors (rows 0-1, rows
 * 2-3), the four inputs broadcast to both halves; PMADDWD adds each row's products in
 * pairs and PADDD wraps modulo 2^32, as the plain loop below. */
static void dot_w16_4x1(const int16_t *w, const int16_t *x, int32_t blocks, int32_t acc[4])
{
    __m128i s01 = _mm_setzero_si128(), s23 = _mm_setzero_si128();
    int32_t i;
    for (i = blocks * 2; i > 0; i--) {
        long long four;
        __m128i xx;
        memcpy(&four, x, sizeof four);
        xx = _mm_set1_epi64x(four);
        s01 = _mm_add_epi32(s01, _mm_madd_epi16(_mm_loadu_si128((const __m128i *)(const void *)w),
                                                xx));
        s23 = _mm_add_epi32(s23, _mm_madd_epi16(
                                     _mm_loadu_si128((const __m128i *)(const void *)(w + 8)), xx));
        w += 16;
        x += 4;
    }
    {
        /* Each row's two lanes: s01 = r0 r0 r1 r1, s23 = r2 r2 r3 r3. */
        int32_t v[8], r[4];
        _mm_storeu_si128((__m128i *)(void *)v, s01);
        _mm_storeu_si128((__m128i *)(void *)(v + 4), s23);
        for (i = 0; i < 4; i++) {
            r[i] = (int32_t)((uint32_t)v[2 * i] + (uint32_t)v[2 * i + 1]);
        }
        for (i = 0; i < 4; i++) {
            acc[i] = (int32_t)((uint32_t)acc[i] + (uint32_t)r[i]);
        }
    }
}
#else
static void dot_w16_4x1(const int16_t *w, const int16_t *x, int32_t blocks, int32_t acc[4])
{
    uint32_t a[4];
    int32_t i, r;
    for (r = 0; r < 4; r++) {
        a[r] = (uint32_t)acc[r];
    }
    for (i = blocks * 2; i > 0; i--) {
        for (r = 0; r < 4; r++) {
            a[r] += (uint32_t)(w[0] * x[0] + w[1] * x[1]) + (uint32_t)(w[2] * x[2] + w[3] * x[3]);
            w += 4;
        }
        x += 4;
    }
    for (r = 0; r < 4; r++) {
        acc[r] = (int32_t)a[r];
    }
}
#endif

/*
 * The block loop of the int8-weight product in one piece of assembly on cores with VCVTR,
 * for bounded layers over the whole int8 or uint8 range: each block's dot loop, its four
 * requantizations (VCVTR, SSAT/USAT) and byte stores, then the next block, the loop state
 * in a struct on the stack (dot_4x1 takes every register). About 60 cycles a block
 * besides the dot loop against about 170 for the C loop with the generic float
 * requantization. Full blocks only: a last block of fewer rows takes the C loop.
 */
#if Q8_HAS_DSP && Q8_ASM && Q8_HAS_VCVTR
#define Q8_FUSED_FC 1

typedef struct {
    const int16_t *x, *x_end;
    int32_t odd; /* groups / 4 is odd: the first pass runs its second half only */
    const int32_t *bias;
    const float *scale;
    int32_t scale_step; /* bytes: 16, or 0 for one scale copied four times */
    uint8_t *y;
    int32_t zero_point;
    int32_t blocks;
} fused_fc_state;

#define Q8_FC_STORE(SAT, A)                                                                \
    "add " A ", " A ", %[x01]\n\t"                                                         \
    SAT " " A ", #8, " A "\n\t"                                                            \
    "strb " A ", [%[x23]], #1\n\t"

/* The dot loop: eight groups a pass, a count of four more entering at the second half
 * (the generator pads K to a multiple of 16 on DSP cores; other counts take the C loop).
 * Each group's six words load in one pipelined run; the loop ends at the end of the
 * row, which frees the counter's register for it. */
#define Q8_FC_GROUP_RUN6                                                                   \
    "ldr %[x01], [%[x]], #4\n\t"                                                           \
    "ldr %[x23], [%[x]], #4\n\t"                                                           \
    "ldr %[v0], [%[w]], #4\n\t"                                                            \
    "ldr %[v1], [%[w]], #4\n\t"                                                            \
    "ldr %[v2], [%[w]], #4\n\t"                                                            \
    "ldr %[v3], [%[w]], #4\n\t"                                                            \
    "sxtb16 lr, %[v0]\n\t"                                                                 \
    "smlad %[a0], lr, %[x01], %[a0]\n\t"                                                   \
    "sxtb16 lr, %[v0], ror #8\n\t"                                                         \
    "smlad %[a0], lr, %[x23], %[a0]\n\t"                                                   \
    "sxtb16 lr, %[v1]\n\t"                                                                 \
    "smlad %[a1], lr, %[x01], %[a1]\n\t"                                                   \
    "sxtb16 lr, %[v1], ror #8\n\t"                                                         \
    "smlad %[a1], lr, %[x23], %[a1]\n\t"                                                   \
    "sxtb16 lr, %[v2]\n\t"                                                                 \
    "smlad %[a2], lr, %[x01], %[a2]\n\t"                                                   \
    "sxtb16 lr, %[v2], ror #8\n\t"                                                         \
    "smlad %[a2], lr, %[x23], %[a2]\n\t"                                                   \
    "sxtb16 lr, %[v3]\n\t"                                                                 \
    "smlad %[a3], lr, %[x01], %[a3]\n\t"                                                   \
    "sxtb16 lr, %[v3], ror #8\n\t"                                                         \
    "smlad %[a3], lr, %[x23], %[a3]\n\t"

/* The same for int16 weights: a group's eight weight words in two runs of four. */
#define Q8_FC_W16_GROUP_RUNS                                                               \
    "ldr %[x01], [%[x]], #4\n\t"                                                           \
    "ldr %[x23], [%[x]], #4\n\t"                                                           \
    "ldr %[v0], [%[w]], #4\n\t"                                                            \
    "ldr %[v1], [%[w]], #4\n\t"                                                            \
    "ldr %[v2], [%[w]], #4\n\t"                                                            \
    "ldr %[v3], [%[w]], #4\n\t"                                                            \
    "smlad %[a0], %[v0], %[x01], %[a0]\n\t"                                                \
    "smlad %[a0], %[v1], %[x23], %[a0]\n\t"                                                \
    "smlad %[a1], %[v2], %[x01], %[a1]\n\t"                                                \
    "smlad %[a1], %[v3], %[x23], %[a1]\n\t"                                                \
    "ldr %[v0], [%[w]], #4\n\t"                                                            \
    "ldr %[v1], [%[w]], #4\n\t"                                                            \
    "ldr %[v2], [%[w]], #4\n\t"                                                            \
    "ldr %[v3], [%[w]], #4\n\t"                                                            \
    "smlad %[a2], %[v0], %[x01], %[a2]\n\t"                                                \
    "smlad %[a2], %[v1], %[x23], %[a2]\n\t"                                                \
    "smlad %[a3], %[v2], %[x01], %[a3]\n\t"                                                \
    "smlad %[a3], %[v3], %[x23], %[a3]\n\t"

#define Q8_FC_DOT_FOURS(GROUP)                                                                  \
    "ldr %[v0], %[oddm]\n\t"                                                               \
    "cmp %[v0], #0\n\t"                                                                    \
    "bne 3f\n"                                                                             \
    ".p2align 2\n"                                                                         \
    "2:\n\t"                                                                               \
    GROUP                                                                                  \
    GROUP                                                                                  \
    GROUP                                                                                  \
    GROUP                                                                                  \
    "3:\n\t"                                                                               \
    GROUP                                                                                  \
    GROUP                                                                                  \
    GROUP                                                                                  \
    GROUP                                                                                  \
    "ldr %[v0], %[xendm]\n\t"                                                              \
    "cmp %[x], %[v0]\n\t"                                                                  \
    "bne 2b\n\t"

#define Q8_FUSED_FC_ASM(GROUP, SAT)                                                        \
    __asm__ volatile(                                                                      \
        "1:\n\t"                                                                           \
        "ldr %[x], %[xm]\n\t"                                                              \
        "ldr %[v0], %[biasm]\n\t"                                                          \
        "ldrd %[a0], %[a1], [%[v0]], #8\n\t"                                               \
        "ldrd %[a2], %[a3], [%[v0]], #8\n\t"                                               \
        "str %[v0], %[biasm]\n\t"                                                          \
        Q8_FC_DOT_FOURS(GROUP)                                                             \
        "ldr %[v0], %[scalem]\n\t"                                                         \
        "ldr %[v1], %[stepm]\n\t"                                                          \
        "vldmia %[v0], {s8-s11}\n\t"                                                       \
        "add %[v0], %[v0], %[v1]\n\t"                                                      \
        "str %[v0], %[scalem]\n\t"                                                         \
        "vmov s12, s13, %[a0], %[a1]\n\t"                                                  \
        "vmov s14, s15, %[a2], %[a3]\n\t"                                                  \
        "vcvt.f32.s32 s12, s12\n\t"                                                        \
        "vcvt.f32.s32 s13, s13\n\t"                                                        \
        "vcvt.f32.s32 s14, s14\n\t"                                                        \
        "vcvt.f32.s32 s15, s15\n\t"                                                        \
        "vmul.f32 s12, s12, s8\n\t"                                                        \
        "vmul.f32 s13, s13, s9\n\t"                                                        \
        "vmul.f32 s14, s14, s10\n\t"                                                       \
        "vmul.f32 s15, s15, s11\n\t"                                                       \
        "vcvtr.s32.f32 s12, s12\n\t"                                                       \
        "vcvtr.s32.f32 s13, s13\n\t"                                                       \
        "vcvtr.s32.f32 s14, s14\n\t"                                                       \
        "vcvtr.s32.f32 s15, s15\n\t"                                                       \
        "ldr %[x01], %[zpm]\n\t"                                                           \
        "ldr %[x23], %[ym]\n\t"                                                            \
        "vmov %[a0], %[a1], s12, s13\n\t"                                                  \
        "vmov %[a2], %[a3], s14, s15\n\t"                                                  \
        Q8_FC_STORE(SAT, "%[a0]")                                                          \
        Q8_FC_STORE(SAT, "%[a1]")                                                          \
        Q8_FC_STORE(SAT, "%[a2]")                                                          \
        Q8_FC_STORE(SAT, "%[a3]")                                                          \
        "str %[x23], %[ym]\n\t"                                                            \
        "ldr %[v0], %[blocksm]\n\t"                                                        \
        "subs %[v0], %[v0], #1\n\t"                                                        \
        "str %[v0], %[blocksm]\n\t"                                                        \
        "bne 1b\n"                                                                         \
        : [w] "+r"(w), [x] "=&r"(x), [a0] "=&r"(a0), [a1] "=&r"(a1),         \
          [a2] "=&r"(a2), [a3] "=&r"(a3), [x01] "=&r"(x01), [x23] "=&r"(x23),              \
          [v0] "=&r"(v0), [v1] "=&r"(v1), [v2] "=&r"(v2), [v3] "=&r"(v3),                  \
          [biasm] "+m"(st.bias), [scalem] "+m"(st.scale),  \
          [ym] "+m"(st.y), [blocksm] "+m"(st.blocks)                                       \
        : [xm] "m"(st.x), [xendm] "m"(st.x_end), [oddm] "m"(st.odd),                       \
          [zpm] "m"(st.zero_point),                                                        \
          [stepm] "m"(st.scale_step)                                                       \
        : "lr", "s8", "s9", "s10", "s11", "s12", "s13", "s14", "s15", "cc", "memory")

/* `blocks` blocks of four rows (blocks > 0, groups a multiple of 4) from weights w and
 * bias, against the widened row x, stored at y; scale points at the first block's
 * scales (per_channel) or the one. */
Q8_INLINE void fused_fc_blocks(const void *weights, int wide, const int16_t *xs,
                               int32_t groups,
                               const int32_t *bias, const float *scale, int per_channel,
                               int32_t zero_point, uint8_t *y, int32_t blocks, int mode)
{
    fused_fc_state st;
    const uint8_t *w = (const uint8_t *)weights;
    float one[4];
    const int16_t *x;
    int32_t a0, a1, a2, a3;
    uint32_t x01, x23, v0, v1, v2, v3;
    st.x = xs;
    st.x_end = xs + (size_t)groups * 4u;
    st.odd = (groups / 4) & 1;
    st.bias = bias;
    st.scale = scale;
    st.scale_step = 16;
    if (!per_channel) {
        one[0] = one[1] = one[2] = one[3] = scale[0];
        st.scale = one;
        st.scale_step = 0;
    }
    st.y = y;
    st.zero_point = zero_point;
    st.blocks = blocks;
    if (wide) {
        if (mode == Q8_RQ_FREQ_BOUNDED_S8) {
            Q8_FUSED_FC_ASM(Q8_FC_W16_GROUP_RUNS, "ssat");
        } else {
            Q8_FUSED_FC_ASM(Q8_FC_W16_GROUP_RUNS, "usat");
        }
    } else if (mode == Q8_RQ_FREQ_BOUNDED_S8) {
        Q8_FUSED_FC_ASM(Q8_FC_GROUP_RUN6, "ssat");
    } else {
        Q8_FUSED_FC_ASM(Q8_FC_GROUP_RUN6, "usat");
    }
    (void)x;
    (void)a0;
    (void)a1;
    (void)a2;
    (void)a3;
    (void)x01;
    (void)x23;
    (void)v0;
    (void)v1;
    (void)v2;
    (void)v3;
}
#else
#define Q8_FUSED_FC 0
#endif

Q8_INLINE void fully_connected(const q8_fc_params *p, const uint8_t *Q8_RESTRICT a,
                               void *Q8_RESTRICT y, int16_t *Q8_RESTRICT scratch,
                               int is_signed, int mode)
{
    const int32_t N = p->n, groups = p->k_padded / 4;
    int32_t row, n, j;
    for (row = 0; row < p->m; row++) {
        const size_t out = (size_t)row * (size_t)N;
        widen_row(a + (size_t)row * (size_t)p->k, scratch, p->k, p->k_padded, is_signed);
        n = 0;
#if Q8_FUSED_FC
        if ((mode == Q8_RQ_FREQ_BOUNDED_S8 || mode == Q8_RQ_FREQ_BOUNDED_U8) && N >= 4 && groups > 0 &&
            groups % 4 == 0) {
            const int per_channel = p->requant.per_channel;
            n = N / 4 * 4;
            fused_fc_blocks(p->weights, 0, scratch, groups, p->bias, p->requant.scale,
                            per_channel, p->requant.zero_point, (uint8_t *)y + out, N / 4,
                            mode);
        }
        if (mode == Q8_RQ_FREQ_BOUNDED_S8 || mode == Q8_RQ_FREQ_BOUNDED_U8) {
            mode = Q8_RQ_FREQ_BOUNDED; /* the last rows */
        }
#endif
        for (; n < N; n += 4) {
            const int32_t count = N - n < 4 ? N - n : 4;
            int32_t acc[4];
            acc[0] = p->bias[n];
            acc[1] = p->bias[n + 1];
            acc[2] = p->bias[n + 2];
            acc[3] = p->bias[n + 3];
            if (groups > 0) {
                dot_4x1(p->weights + (size_t)n * (size_t)p->k_padded, scratch, groups, acc);
            }
            for (j = 0; j < count; j++) {
                q8_store_requantized(&p->requant, n + j, acc[j], y, out + (size_t)(n + j), mode);
            }
        }
    }
}

/* The kernel called with the mode the layer settles on (fc_mode, for the float modes):
 * one instantiation per mode, each with its mode constant. */
#define Q8_FC_BY_MODE(KERNEL, SIGNED, MODE)                                                \
    switch (MODE == Q8_RQ_FREQ ? fc_mode(&params->requant, MODE) : MODE) {                   \
    case Q8_RQ_FREQ_BOUNDED_S8:                                                                        \
        KERNEL(params, (const uint8_t *)input, output, scratch, SIGNED, Q8_RQ_FREQ_BOUNDED_S8);        \
        break;                                                                             \
    case Q8_RQ_FREQ_BOUNDED_U8:                                                                        \
        KERNEL(params, (const uint8_t *)input, output, scratch, SIGNED, Q8_RQ_FREQ_BOUNDED_U8);        \
        break;                                                                             \
    case Q8_RQ_FREQ_BOUNDED:                                                                  \
        KERNEL(params, (const uint8_t *)input, output, scratch, SIGNED, Q8_RQ_FREQ_BOUNDED);  \
        break;                                                                             \
    default:                                                                               \
        KERNEL(params, (const uint8_t *)input, output, scratch, SIGNED, MODE);             \
        break;                                                                             \
    }

#define Q8_DEFINE_FC(NAME, TX, TY, SIGNED, MODE)                                           \
    void NAME(const q8_fc_params *params, const TX *Q8_RESTRICT input,                    \
              TY *Q8_RESTRICT output, int16_t *Q8_RESTRICT scratch)                       \
    {                                                                                      \
        Q8_FC_BY_MODE(fully_connected, SIGNED, MODE);                                      \
    }

/* The bounded float layers over the whole range of their output type take the fused
 * loop where it exists, the other bounded ones the shorter rounding. */
Q8_INLINE int fc_mode(const q8_requant_params *rq, int mode)
{
    if (mode != Q8_RQ_FREQ || !rq->bounded) {
        return mode;
    }
#if Q8_FUSED_FC
    if (rq->act_min == -128 && rq->act_max == 127) {
        return Q8_RQ_FREQ_BOUNDED_S8;
    }
    if (rq->act_min == 0 && rq->act_max == 255) {
        return Q8_RQ_FREQ_BOUNDED_U8;
    }
#endif
    return Q8_RQ_FREQ_BOUNDED;
}

Q8_DEFINE_FC(q8_fc_u8_freq, uint8_t, void, 0, Q8_RQ_FREQ)
Q8_DEFINE_FC(q8_fc_s8_freq, int8_t, void, 1, Q8_RQ_FREQ)
Q8_DEFINE_FC(q8_fc_u8_ireq, uint8_t, void, 0, Q8_RQ_IREQ)
Q8_DEFINE_FC(q8_fc_s8_ireq, int8_t, void, 1, Q8_RQ_IREQ)
Q8_DEFINE_FC(q8_fc_u8_f32, uint8_t, float, 0, Q8_RQ_F32)
Q8_DEFINE_FC(q8_fc_s8_f32, int8_t, float, 1, Q8_RQ_F32)

/* Wide weights; requantization constants are copied into locals first (a byte store may
 * alias anything, so fields read through the params pointer would be reloaded). */
Q8_INLINE void fully_connected_w16(const q8_fc_w16_params *p, const uint8_t *Q8_RESTRICT a,
                                   void *Q8_RESTRICT y, int16_t *Q8_RESTRICT scratch,
                                   int is_signed, int mode)
{
    const int32_t N = p->n, K = p->k, k_padded = p->k_padded, blocks = k_padded / 8;
    const int16_t *const weights = p->weights;
    const int32_t *const bias = p->bias;
    const q8_requant_params rq = p->requant;
    int32_t row, n, j;
    for (row = 0; row < p->m; row++) {
        const size_t out = (size_t)row * (size_t)N;
        widen_row(a + (size_t)row * (size_t)K, scratch, K, k_padded, is_signed);
        n = 0;
#if Q8_FUSED_FC
        if ((mode == Q8_RQ_FREQ_BOUNDED_S8 || mode == Q8_RQ_FREQ_BOUNDED_U8) && N >= 4 && k_padded % 16 == 0) {
            n = N / 4 * 4;
            fused_fc_blocks(weights, 1, scratch, k_padded / 4, bias, rq.scale, rq.per_channel,
                            rq.zero_point, (uint8_t *)y + out, N / 4, mode);
        }
        if (mode == Q8_RQ_FREQ_BOUNDED_S8 || mode == Q8_RQ_FREQ_BOUNDED_U8) {
            mode = Q8_RQ_FREQ_BOUNDED; /* the last rows */
        }
#endif
        for (; n < N; n += 4) {
            const int32_t count = N - n < 4 ? N - n : 4;
            int32_t acc[4];
            acc[0] = bias[n];
            acc[1] = bias[n + 1];
            acc[2] = bias[n + 2];
            acc[3] = bias[n + 3];
            dot_w16_4x1(weights + (size_t)n * (size_t)k_padded, scratch, blocks, acc);
            for (j = 0; j < count; j++) {
                q8_store_requantized(&rq, n + j, acc[j], y, out + (size_t)(n + j), mode);
            }
        }
    }
}

#define Q8_DEFINE_FC_W16(NAME, TX, TY, SIGNED, MODE)                                       \
    void NAME(const q8_fc_w16_params *params, const TX *Q8_RESTRICT input,                \
              TY *Q8_RESTRICT output, int16_t *Q8_RESTRICT scratch)                       \
    {                                                                                      \
        Q8_FC_BY_MODE(fully_connected_w16, SIGNED, MODE);                                  \
    }

Q8_DEFINE_FC_W16(q8_fc_u8_w16_freq, uint8_t, void, 0, Q8_RQ_FREQ)
Q8_DEFINE_FC_W16(q8_fc_s8_w16_freq, int8_t, void, 1, Q8_RQ_FREQ)
Q8_DEFINE_FC_W16(q8_fc_u8_w16_ireq, uint8_t, void, 0, Q8_RQ_IREQ)
Q8_DEFINE_FC_W16(q8_fc_s8_w16_ireq, int8_t, void, 1, Q8_RQ_IREQ)
Q8_DEFINE_FC_W16(q8_fc_u8_w16_f32, uint8_t, float, 0, Q8_RQ_F32)
Q8_DEFINE_FC_W16(q8_fc_s8_w16_f32, int8_t, float, 1, Q8_RQ_F32)
