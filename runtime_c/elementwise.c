/*
 * elementwise.c - com.microsoft QLinearAdd and QLinearMul with numpy broadcasting.
 *
 * QLinearAdd follows ORT's AVX2 kernel, whose multiply-adds are fused: q8_fmaf (C99
 * fmaf, or its integer form where the C library's would round twice) makes that exact
 * on any target. QLinearMul rounds its product before adding the zero point.
 */
#include <math.h>

#include "q8_arith.h"
#include "q8_dsp.h"
#include "q8_index.h"
#include "q8_pix.h"
#include "q8_runtime.h"
#include "q8_softfloat.h"

Q8_INLINE int32_t load8(const uint8_t *p, size_t i, int is_signed)
{
    return is_signed ? (int32_t)(int8_t)p[i] : (int32_t)p[i];
}

/* Both operands dense and of the output's shape: no broadcasting to track. */
Q8_INLINE int same_shape(const q8_broadcast *s)
{
    int32_t d;
    size_t dense = 1;
    for (d = s->rank - 1; d >= 0; d--) {
        if ((size_t)s->a_stride[d] != dense || (size_t)s->b_stride[d] != dense) {
            if (s->out_shape[d] != 1) {
                return 0;
            }
        }
        dense *= (size_t)s->out_shape[d];
    }
    return 1;
}

#if Q8_HAS_VCVTR
/* Two elements of the bounded path, t = fma(a, ra, fma(b, rb, fixed)) rounded by VCVTR,
 * the inner fused multiply-adds read from the table (t0 and t1 point at the float32 bits
 * of fma(b, rb, fixed) for the two bytes of b); each move between the core and the FPU
 * carries a pair. The same VFMA as q8_fmaf. */
Q8_INLINE void qadd_pair(int32_t a0, int32_t a1, const uint32_t *t0, const uint32_t *t1,
                               float ra, int32_t *q0, int32_t *q1)
{
    int32_t r0, r1;
    __asm__("vmov s8, s9, %[a0], %[a1]\n\t"
            "vldr s12, [%[t0]]\n\t"
            "vldr s13, [%[t1]]\n\t"
            "vcvt.f32.s32 s8, s8\n\t"
            "vcvt.f32.s32 s9, s9\n\t"
            "vfma.f32 s12, s8, %[ra]\n\t"
            "vfma.f32 s13, s9, %[ra]\n\t"
            "vcvtr.s32.f32 s12, s12\n\t"
            "vcvtr.s32.f32 s13, s13\n\t"
            "vmov %[r0], %[r1], s12, s13"
            : [r0] "=r"(r0), [r1] "=r"(r1)
            : [a0] "r"(a0), [a1] "r"(a1), [t0] "r"(t0), [t1] "r"(t1), [ra] "t"(ra),
              "m"(*t0), "m"(*t1)
            : "s8", "s9", "s12", "s13");
    *q0 = r0;
    *q1 = r1;
}
#endif

/* The exact float32 arithmetic of one QLinearAdd output in integers, out of line: the
 * tables decide all but about one output in 8,000, and inlined it would crowd the loop's
 * registers (Thumb-1 has eight). */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static uint8_t qadd_int_exact(const q8_qadd_params *p, uint8_t outer_byte, uint8_t inner_byte,
                              int is_signed, int32_t qmin, int32_t qmax)
{
    const int32_t outer = is_signed ? (int32_t)(int8_t)outer_byte : (int32_t)outer_byte;
    const q8_sf inner = q8_sf_from_bits(p->inner_table[inner_byte]);
    const q8_sf t = q8_sf_round_sum((int64_t)outer * p->outer_mult, p->outer_exp, inner.m,
                                    inner.e);
    return (uint8_t)q8_sf_round_saturate(t, qmin, qmax);
}

/* One output of the integer QLinearAdd: from the tables where the sum is not near a half,
 * else the exact float32 arithmetic in integers. */
Q8_INLINE uint8_t qadd_int_one(const q8_qadd_params *p, uint8_t outer_byte, uint8_t inner_byte,
                               int is_signed, int32_t qmin, int32_t qmax)
{
    const int32_t *fast = p->fast_table;
    if (fast != NULL) {
        /* T = t * 2^20 from below, off by less than 2 units; the float32 rounding of
         * t moves it by at most 32 (|t| < 1024): away from a half by more than 64,
         * T rounds as t does. The bias 2^30 keeps the shift on unsigned values. */
        const uint32_t u = (uint32_t)(fast[outer_byte] + fast[256 + inner_byte] + 0x40000000);
        const int32_t d = (int32_t)(u & 0xFFFFFu) - 0x80000;
        if (d > 64 || d < -64) {
            int32_t v = (int32_t)(u >> 20) - 1024 + (d > 0);
            v = v < qmin ? qmin : v;
            v = v > qmax ? qmax : v;
            return (uint8_t)v;
        }
    }
    return qadd_int_exact(p, outer_byte, inner_byte, is_signed, qmin, qmax);
}

/* The same-shape integer QLinearAdd from the fast tables: qadd_int_one's table path
 * written for Thumb-1's few registers. Outside the window (|d| <= 64) the rounding is that
 * of bit 19 (d > 0 exactly when it is set there), so v = ((u >> 19) + 1) >> 1 - 1024. The
 * float kernel takes it too where the generator gave it the tables (the host): the result
 * is the same fmaf arithmetic, decided without two fmaf calls per element. */
#if defined(__GNUC__) && defined(__thumb__) && !defined(__thumb2__) && \
    defined(__OPTIMIZE__) && !defined(__OPTIMIZE_SIZE__) && !defined(Q8_NO_ASM) && \
    !defined(__ARM_RWPI)
/* qadd_fast_same_shape's loop by hand for Thumb-1 (GCC 12 reloads its constants every
 * element there: about 50 cycles per element on Cortex-M0+, this about 34). The same
 * operations: u = fast[o] + fast[256 + n] + 0x3FF80040 (modulo 2^32); near a half (the low
 * 20 bits <= 128) it stops and returns; else w = (((u + 0x7FFC0) >> 19) + 1) >> 1, which is
 * v + 1024, clamped to [qmin, qmax] + 1024 and stored as its low byte (v's). The arrays
 * are passed at their ends and `at` counts up from -count; returns where it stopped (0 at
 * the end). The constants sit in high registers ("h"), the rest in seven low ones. */
#define Q8_QADD_THUMB1 1
static int32_t qadd_fast_run_thumb1(const uint8_t *outer_end, const uint8_t *inner_end,
                                    uint8_t *y_end, int32_t at, const int32_t *fast,
                                    int32_t lo, int32_t hi)
{
    uint32_t u, t;
    __asm__ volatile(
        ".syntax unified\n"
        "1:\n\t"
        "ldrb %[u], [%[o], %[at]]\n\t"
        "ldrb %[t], [%[in], %[at]]\n\t"
        "lsls %[u], %[u], #2\n\t"
        "lsls %[t], %[t], #2\n\t"
        "add %[t], %[k1024]\n\t"
        "ldr %[u], [%[f], %[u]]\n\t"
        "ldr %[t], [%[f], %[t]]\n\t"
        "adds %[u], %[u], %[t]\n\t"
        "add %[u], %[k]\n\t"
        "lsls %[t], %[u], #12\n\t"
        "lsrs %[t], %[t], #12\n\t"
        "cmp %[t], #128\n\t"
        "bls 9f\n\t"
        "add %[u], %[k2]\n\t"
        "lsrs %[u], %[u], #19\n\t"
        "adds %[u], #1\n\t"
        "lsrs %[u], %[u], #1\n\t"
        "cmp %[u], %[lo]\n\t"
        "blt 5f\n\t"
        "cmp %[u], %[hi]\n\t"
        "bgt 6f\n"
        "2:\n\t"
        "strb %[u], [%[y], %[at]]\n\t"
        "adds %[at], #1\n\t"
        "bne 1b\n\t"
        "b 9f\n"
        "5:\n\t"
        "mov %[u], %[lo]\n\t"
        "b 2b\n"
        "6:\n\t"
        "mov %[u], %[hi]\n\t"
        "b 2b\n"
        "9:\n"
        : [at] "+l"(at), [u] "=&l"(u), [t] "=&l"(t)
        : [o] "l"(outer_end), [in] "l"(inner_end), [y] "l"(y_end), [f] "l"(fast),
          [k] "h"(0x3FF80040u), [k2] "h"(0x7FFC0u), [k1024] "h"(1024u), [lo] "h"(lo + 1024),
          [hi] "h"(hi + 1024)
        : "cc", "memory");
    return at;
}
#endif

Q8_INLINE void qadd_fast_same_shape(const q8_qadd_params *p, const uint8_t *outer,
                                    const uint8_t *inner, uint8_t *y, size_t total,
                                    int is_signed)
{
    const int32_t qmin = is_signed ? -128 : 0, qmax = is_signed ? 127 : 255;
    const int32_t *fast = p->fast_table, *inner_fast = p->fast_table + 256;
    const uint8_t *const end = outer + total;
#if defined(Q8_QADD_THUMB1)
    if (total > 0 && total < 0x7FFFFFFFu) {
        int32_t at = -(int32_t)total;
        for (;;) {
            at = qadd_fast_run_thumb1(end, inner + total, y + total, at, fast, qmin, qmax);
            if (at == 0) {
                return;
            }
            y[(int32_t)total + at] = qadd_int_exact(p, end[at], inner[(int32_t)total + at],
                                                     is_signed, qmin, qmax);
            if (++at == 0) {
                return;
            }
        }
    }
#endif
    while (outer != end) {
        const uint8_t o = *outer++, n = *inner++;
        /* T + 2^30 from the tables, less 2^30 - 2^19 + 64: the window's test on its low
         * 20 bits becomes one unsigned compare. */
        const uint32_t u = (uint32_t)(fast[o] + inner_fast[n]) + 0x3FF80040u;
        if ((u & 0xFFFFFu) <= 128u) {
            *y++ = qadd_int_exact(p, o, n, is_signed, qmin, qmax);
            continue;
        }
        {
            /* u + 2^19 - 64 is T + 2^30: rounded at bit 20 by bit 19. */
            int32_t v = (int32_t)(((u + 0x7FFC0u) >> 19) + 1u) / 2 - 1024;
            v = v < qmin ? qmin : v;
            *y++ = (uint8_t)(v > qmax ? qmax : v);
        }
    }
}

#if defined(Q8_PIX_X86)
/* The same-shape float QLinearAdd eight lanes at a time on x86-64 CPUs with AVX2 and FMA
 * (chosen when the kernel runs, as q8_pix.h's levels): t = fma(outer, r_outer, fma(inner,
 * r_inner, fixed)) by VFMADD, each lane the one rounding of fmaf; CVTPS2DQ rounds half to
 * even and gives INT32_MIN past the int32 range (and for NaN), and the saturating packs
 * then clamp, exactly as q8_round_saturate. Returns how many outputs it wrote (whole
 * groups of eight). */
__attribute__((target("avx2,fma"))) static size_t qadd_fma_avx2(
    const uint8_t *outer, const uint8_t *inner, uint8_t *y, size_t total, float r_outer,
    float r_inner, float fixed, int is_signed)
{
    const __m256 ro = _mm256_set1_ps(r_outer), ri = _mm256_set1_ps(r_inner),
                 f = _mm256_set1_ps(fixed);
    size_t i;
    for (i = 0; i + 8 <= total; i += 8) {
        const __m128i o8 = _mm_loadl_epi64((const __m128i *)(const void *)(outer + i));
        const __m128i n8 = _mm_loadl_epi64((const __m128i *)(const void *)(inner + i));
        const __m256i o = is_signed ? _mm256_cvtepi8_epi32(o8) : _mm256_cvtepu8_epi32(o8);
        const __m256i n = is_signed ? _mm256_cvtepi8_epi32(n8) : _mm256_cvtepu8_epi32(n8);
        const __m256 t = _mm256_fmadd_ps(_mm256_cvtepi32_ps(o), ro,
                                         _mm256_fmadd_ps(_mm256_cvtepi32_ps(n), ri, f));
        const __m256i q = _mm256_cvtps_epi32(t);
        const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q),
                                          _mm256_extracti128_si256(q, 1));
        _mm_storel_epi64((__m128i *)(void *)(y + i),
                         is_signed ? _mm_packs_epi16(w, w) : _mm_packus_epi16(w, w));
    }
    return i;
}
#endif

#if Q8_HAS_MVE
/* The same-shape float QLinearAdd four lanes at a time on Helium: t = fma(outer, r_outer,
 * fma(inner, r_inner, fixed)) by VFMA (one rounding each, as fmaf), VCVTN rounds half to even
 * and saturates, VMAX/VMIN clamp; the last lanes predicated. Helium's vector float
 * operations flush subnormals to zero: with the ratios and the constant zero or at least
 * 2^-100 in magnitude the inner sum is zero or normal, and an outer one too small to be
 * normal rounds to 0 either way, so the results are the reference's; otherwise this
 * returns 0 and the scalar path runs. Returns how many outputs it wrote. */
static int qadd_mve_safe(float v)
{
    return v == 0.0f || v >= 0x1p-100f || v <= -0x1p-100f;
}

/* Four lanes of the sum (qadd_fma_mve): the bytes widened by TYPE's loads. */
#define Q8_QADD_MVE_LANES(LOAD, CAST, STORE)                                               \
    do {                                                                                   \
        const int32x4_t o_ = CAST(LOAD(outer + i));                                        \
        const int32x4_t n_ = CAST(LOAD(inner + i));                                        \
        const float32x4_t t_ = vfmaq_f32(vfmaq_f32(f, vcvtq_f32_s32(n_), ri),              \
                                         vcvtq_f32_s32(o_), ro);                           \
        STORE((int8_t *)y + i, vminq_s32(vmaxq_s32(vcvtnq_s32_f32(t_), low), high));       \
    } while (0)
#define Q8_LOAD_S8(P) vldrbq_s32((const int8_t *)(P))
#define Q8_LOAD_U8(P) vldrbq_u32((P))
#define Q8_LOAD_S8_TAIL(P) vldrbq_z_s32((const int8_t *)(P), lanes)
#define Q8_LOAD_U8_TAIL(P) vldrbq_z_u32((P), lanes)
#define Q8_STORE_TAIL(P, V) vstrbq_p_s32((P), (V), lanes)
#define Q8_AS_S32(V) (V)

static size_t qadd_fma_mve(const uint8_t *outer, const uint8_t *inner, uint8_t *y,
                           size_t total, float r_outer, float r_inner, float fixed,
                           int is_signed)
{
    const int32x4_t low = vdupq_n_s32(is_signed ? -128 : 0);
    const int32x4_t high = vdupq_n_s32(is_signed ? 127 : 255);
    const float32x4_t ro = vdupq_n_f32(r_outer), ri = vdupq_n_f32(r_inner);
    const float32x4_t f = vdupq_n_f32(fixed);
    size_t i = 0;
    if (!qadd_mve_safe(r_outer) || !qadd_mve_safe(r_inner) || !qadd_mve_safe(fixed)) {
        return 0;
    }
    if (is_signed) {
        for (; i + 4 <= total; i += 4) {
            Q8_QADD_MVE_LANES(Q8_LOAD_S8, Q8_AS_S32, vstrbq_s32);
        }
        if (i < total) {
            const mve_pred16_t lanes = vctp32q((uint32_t)(total - i));
            Q8_QADD_MVE_LANES(Q8_LOAD_S8_TAIL, Q8_AS_S32, Q8_STORE_TAIL);
        }
    } else {
        for (; i + 4 <= total; i += 4) {
            Q8_QADD_MVE_LANES(Q8_LOAD_U8, vreinterpretq_s32_u32, vstrbq_s32);
        }
        if (i < total) {
            const mve_pred16_t lanes = vctp32q((uint32_t)(total - i));
            Q8_QADD_MVE_LANES(Q8_LOAD_U8_TAIL, vreinterpretq_s32_u32, Q8_STORE_TAIL);
        }
    }
    return total;
}
#undef Q8_QADD_MVE_LANES
#undef Q8_LOAD_S8
#undef Q8_LOAD_U8
#undef Q8_LOAD_S8_TAIL
#undef Q8_LOAD_U8_TAIL
#undef Q8_STORE_TAIL
#undef Q8_AS_S32
#endif

Q8_INLINE void qadd(const q8_qadd_params *p, const uint8_t *a, const uint8_t *b, uint8_t *y,
                    int is_signed)
{
    const int32_t qmin = is_signed ? -128 : 0, qmax = is_signed ? 127 : 255;
    int32_t index[Q8_MAX_RANK];
    size_t a_at = 0, b_at = 0, i;
    const size_t total = q8_start_index(&p->shape, index);
    if (same_shape(&p->shape)) {
        const float ra = p->ratio_a, rb = p->ratio_b, fixed = p->fixed;
#if Q8_HAS_MVE
        if (qadd_fma_mve(p->b_first ? b : a, p->b_first ? a : b, y, total,
                         p->b_first ? rb : ra, p->b_first ? ra : rb, fixed,
                         is_signed) == total) {
            return;
        }
#endif
        if (p->fast_table != NULL) {
            const uint8_t *outer = p->b_first ? b : a, *inner = p->b_first ? a : b;
            size_t done = 0;
#if defined(Q8_PIX_X86)
            if (q8_pix_isa() >= 2 && __builtin_cpu_supports("fma")) {
                done = qadd_fma_avx2(outer, inner, y, total, p->b_first ? rb : ra,
                                     p->b_first ? ra : rb, fixed, is_signed);
            }
#endif

            qadd_fast_same_shape(p, outer + done, inner + done, y + done, total - done,
                                 is_signed);
            return;
        }
#if Q8_HAS_VCVTR
        if (p->bounded && !p->b_first && p->inner_table != NULL) {
            const uint32_t *table = p->inner_table;
            for (i = 0; i + 2 <= total; i += 2) {
                int32_t q0, q1;
                qadd_pair(load8(a, i, is_signed), load8(a, i + 1, is_signed),
                                table + b[i], table + b[i + 1], ra, &q0, &q1);
                y[i] = (uint8_t)(is_signed ? __ssat(q0, 8) : (int32_t)__usat(q0, 8));
                y[i + 1] = (uint8_t)(is_signed ? __ssat(q1, 8) : (int32_t)__usat(q1, 8));
            }
            if (i < total) {
                const float t = q8_fmaf((float)load8(a, i, is_signed), ra, q8_fmaf(
                    (float)load8(b, i, is_signed), rb, fixed));
                const int32_t q = q8_vcvtr(t);
                y[i] = (uint8_t)(is_signed ? __ssat(q, 8) : (int32_t)__usat(q, 8));
            }
            return;
        }
#endif
        for (i = 0; i < total; i++) {
            const float av = (float)load8(a, i, is_signed), bv = (float)load8(b, i, is_signed);
            const float t = p->b_first ? q8_fmaf(bv, rb, q8_fmaf(av, ra, fixed))
                                       : q8_fmaf(av, ra, q8_fmaf(bv, rb, fixed));
            y[i] = (uint8_t)q8_round_saturate(t, qmin, qmax);
        }
        return;
    }
    for (i = 0; i < total; i++) {
        const float av = (float)load8(a, a_at, is_signed);
        const float bv = (float)load8(b, b_at, is_signed);
        const float t = p->b_first ? q8_fmaf(bv, p->ratio_b, q8_fmaf(av, p->ratio_a, p->fixed))
                                   : q8_fmaf(av, p->ratio_a, q8_fmaf(bv, p->ratio_b, p->fixed));
        y[i] = (uint8_t)q8_round_saturate(t, qmin, qmax);
        q8_next_index(&p->shape, index, &a_at, &b_at);
    }
}

Q8_INLINE void qadd_int(const q8_qadd_params *p, const uint8_t *a, const uint8_t *b,
                        uint8_t *y, int is_signed)
{
    const int32_t qmin = is_signed ? -128 : 0, qmax = is_signed ? 127 : 255;
    int32_t index[Q8_MAX_RANK];
    size_t a_at = 0, b_at = 0, i;
    const size_t total = q8_start_index(&p->shape, index);
    if (same_shape(&p->shape)) {
        /* No broadcast (a residual connection's add): one index for all three, without
         * stepping a multi-dimensional one per element. */
        const uint8_t *outer = p->b_first ? b : a, *inner = p->b_first ? a : b;
        if (p->fast_table != NULL) {
            qadd_fast_same_shape(p, outer, inner, y, total, is_signed);
            return;
        }
        for (i = 0; i < total; i++) {
            y[i] = qadd_int_one(p, outer[i], inner[i], is_signed, qmin, qmax);
        }
        return;
    }
    for (i = 0; i < total; i++) {
        const uint8_t outer_byte = p->b_first ? b[b_at] : a[a_at];
        const uint8_t inner_byte = p->b_first ? a[a_at] : b[b_at];
        y[i] = qadd_int_one(p, outer_byte, inner_byte, is_signed, qmin, qmax);
        q8_next_index(&p->shape, index, &a_at, &b_at);
    }
}

Q8_INLINE void qmul(const q8_qmul_params *p, const uint8_t *a, const uint8_t *b, uint8_t *y,
                    int is_signed)
{
    const int32_t qmin = is_signed ? -128 : 0, qmax = is_signed ? 127 : 255;
    int32_t index[Q8_MAX_RANK];
    size_t a_at = 0, b_at = 0, i;
    const size_t total = q8_start_index(&p->shape, index);
    for (i = 0; i < total; i++) {
        const int32_t product = (load8(a, a_at, is_signed) - p->a_zero_point) *
                                (load8(b, b_at, is_signed) - p->b_zero_point);
        const float t = (float)(q8_mul_unfused((float)product, p->scale) +
                                (float)p->y_zero_point);
        y[i] = (uint8_t)q8_round_saturate(t, qmin, qmax);
        q8_next_index(&p->shape, index, &a_at, &b_at);
    }
}

void q8_qadd_u8(const q8_qadd_params *params, const uint8_t *a, const uint8_t *b, uint8_t *y)
{
    qadd(params, a, b, y, 0);
}

void q8_qadd_s8(const q8_qadd_params *params, const int8_t *a, const int8_t *b, int8_t *y)
{
    qadd(params, (const uint8_t *)a, (const uint8_t *)b, (uint8_t *)y, 1);
}

Q8_INLINE void qmul_int(const q8_qmul_params *p, const uint8_t *a, const uint8_t *b,
                        uint8_t *y, int is_signed)
{
    const int32_t qmin = is_signed ? -128 : 0, qmax = is_signed ? 127 : 255;
    int32_t index[Q8_MAX_RANK];
    size_t a_at = 0, b_at = 0, i;
    const size_t total = q8_start_index(&p->shape, index);
    for (i = 0; i < total; i++) {
        const int32_t product = (load8(a, a_at, is_signed) - p->a_zero_point) *
                                (load8(b, b_at, is_signed) - p->b_zero_point);
        /* |product| <= 2^16: exact as a float; two roundings, as the float kernel */
        const q8_sf scaled = q8_sf_round_sum((int64_t)product * p->scale_mult, p->scale_exp,
                                             0, 0);
        const q8_sf t = q8_sf_round_sum(scaled.m, scaled.e, p->y_zero_point, 0);
        y[i] = (uint8_t)q8_sf_round_saturate(t, qmin, qmax);
        q8_next_index(&p->shape, index, &a_at, &b_at);
    }
}

void q8_qmul_u8_ireq(const q8_qmul_params *params, const uint8_t *a, const uint8_t *b,
                     uint8_t *y)
{
    qmul_int(params, a, b, y, 0);
}

void q8_qmul_s8_ireq(const q8_qmul_params *params, const int8_t *a, const int8_t *b, int8_t *y)
{
    qmul_int(params, (const uint8_t *)a, (const uint8_t *)b, (uint8_t *)y, 1);
}

void q8_qadd_u8_ireq(const q8_qadd_params *params, const uint8_t *a, const uint8_t *b,
                     uint8_t *y)
{
    qadd_int(params, a, b, y, 0);
}

void q8_qadd_s8_ireq(const q8_qadd_params *params, const int8_t *a, const int8_t *b, int8_t *y)
{
    qadd_int(params, (const uint8_t *)a, (const uint8_t *)b, (uint8_t *)y, 1);
}

void q8_qmul_u8(const q8_qmul_params *params, const uint8_t *a, const uint8_t *b, uint8_t *y)
{
    qmul(params, a, b, y, 0);
}

void q8_qmul_s8(const q8_qmul_params *params, const int8_t *a, const int8_t *b, int8_t *y)
{
    qmul(params, (const uint8_t *)a, (const uint8_t *)b, (uint8_t *)y, 1);
}
