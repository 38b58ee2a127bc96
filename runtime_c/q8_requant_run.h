/*
 * q8_requant_run.h - one output channel's run of consecutive outputs requantized at once:
 * on hosts with SSE2 the float path four lanes at a time (the same float32 operations as
 * q8_requant_f32), elsewhere output by output (q8_requantize). Shared by the host's
 * convolution (q8_im2col_pix.h) and depthwise rows (q8_dwconv.h). -DQ8_PIX_PORTABLE takes
 * the plain C path.
 */
#ifndef Q8_REQUANT_RUN_H
#define Q8_REQUANT_RUN_H

#include <string.h>

#include "q8_requant_row.h"

#if defined(__SSE2__) && !defined(Q8_PIX_PORTABLE)
#define Q8_PIX_SSE2_REQUANT 1
#include <emmintrin.h>
#endif

/* n bytes copied without a loop the compiler would turn into a library call (which costs
 * more than the copy on rows of a few bytes): two overlapping fixed-size copies cover any n
 * from 1 to 2x their size exactly; longer runs go 16 bytes at a time. */
Q8_INLINE void q8_copy_short(uint8_t *Q8_RESTRICT dst, const uint8_t *Q8_RESTRICT src,
                             int32_t n)
{
    uint64_t a, b;
    uint32_t c, d;
    if (n >= 16) {
        int32_t i;
        for (i = 0; i + 16 <= n; i += 16) {
            memcpy(&a, src + i, 8);
            memcpy(&b, src + i + 8, 8);
            memcpy(dst + i, &a, 8);
            memcpy(dst + i + 8, &b, 8);
        }
        src += n - 16;
        dst += n - 16;
        n = 16;
    }
    if (n >= 8) {
        memcpy(&a, src, 8);
        memcpy(&b, src + n - 8, 8);
        memcpy(dst, &a, 8);
        memcpy(dst + n - 8, &b, 8);
    } else if (n >= 4) {
        memcpy(&c, src, 4);
        memcpy(&d, src + n - 4, 4);
        memcpy(dst, &c, 4);
        memcpy(dst + n - 4, &d, 4);
    } else if (n > 0) {
        dst[0] = src[0];
        dst[n / 2] = src[n / 2];
        dst[n - 1] = src[n - 1];
    }
}

/* One channel's n sums + bias, requantized into y[0..n). */
Q8_INLINE void q8_requantize_run(const q8_row_requant *r, const int32_t *sums, int32_t bias,
                                 int32_t n, uint8_t *y, int mode)
{
    int32_t i = 0;
#if defined(Q8_PIX_SSE2_REQUANT)
    if (mode != Q8_RQ_IREQ) {
        /* q8_requant_f32 four lanes at a time: the same float32 product, clamp (MAXPS and
         * MINPS keep the bound on the side q8_fclamp does) and round half to even (CVTPS2DQ
         * in the default rounding mode, the value inside +-2^8 after the clamp). */
        const __m128 scale = _mm_set1_ps(r->scale), lo = _mm_set1_ps(r->lo_f),
                     hi = _mm_set1_ps(r->hi_f);
        const __m128i b = _mm_set1_epi32(bias), zp = _mm_set1_epi32(r->zero_point);
        const int unsigned_out = r->lo + r->zero_point >= 0;
        for (; i + 8 <= n; i += 8) {
            __m128i acc0 = _mm_add_epi32(_mm_loadu_si128((const __m128i *)(const void *)
                                                         (sums + i)), b);
            __m128i acc1 = _mm_add_epi32(_mm_loadu_si128((const __m128i *)(const void *)
                                                         (sums + i + 4)), b);
            __m128 v0 = _mm_mul_ps(_mm_cvtepi32_ps(acc0), scale);
            __m128 v1 = _mm_mul_ps(_mm_cvtepi32_ps(acc1), scale);
            __m128i q0, q1, q;
            v0 = _mm_min_ps(_mm_max_ps(v0, lo), hi);
            v1 = _mm_min_ps(_mm_max_ps(v1, lo), hi);
            q0 = _mm_add_epi32(_mm_cvtps_epi32(v0), zp);
            q1 = _mm_add_epi32(_mm_cvtps_epi32(v1), zp);
            /* Each value is inside the output type's range, [0, 255] or [-128, 127]
             * (a convolution may write the other signedness than it reads): packing
             * saturates nothing. */
            q = _mm_packs_epi32(q0, q1);
            q = unsigned_out ? _mm_packus_epi16(q, q) : _mm_packs_epi16(q, q);
            _mm_storel_epi64((__m128i *)(void *)(y + i), q);
        }
    }
#endif
    for (; i < n; i++) {
        y[i] = q8_requantize(r, (int32_t)((uint32_t)sums[i] + (uint32_t)bias), mode);
    }
}

#endif /* Q8_REQUANT_RUN_H */
