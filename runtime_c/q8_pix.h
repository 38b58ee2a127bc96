/*
 * q8_pix.h - what the host's kernels with output pixels in the vector lanes share
 * (q8_im2col_pix.h, the convolution; q8_dwconv_pix.h, depthwise 3x3): the x86-64
 * instruction sets they are built for and the choice among them when a kernel runs, the
 * widening of two rows of bytes into (a, b) int16 pairs per pixel, and the scatter of a
 * flat run of outputs (rows of a padded width) into the output's rows.
 *
 * On x86-64 (GCC 8+, Clang 8+) each kernel's products are instantiated once per
 * instruction set by q8_pix_each_isa.h: 1 SSE2 (every x86-64), 2 AVX2, 3 AVX-VNNI, 4
 * AVX-512BW (and VL), 5 AVX-512 VNNI; q8_pix_isa() gives the widest the machine has and the
 * operating system enables, up to Q8_PIX_ISA_MAX (the tests build each). Every level
 * computes the same integers: a program stays x86-64's baseline and takes what the machine
 * has. Elsewhere, or with -DQ8_PIX_PORTABLE, plain C (level 0).
 */
#ifndef Q8_PIX_H
#define Q8_PIX_H

#include <stddef.h>
#include <string.h>

#include "q8_arith.h"
#include "q8_requant_run.h"

/* Target attributes, the AVX-512 VNNI intrinsics and their __builtin_cpu_supports names:
 * GCC 8 and Clang 8 on. AVX-VNNI (level 3) only where the compiler knows it (GCC 11, Clang
 * 18; not Apple's Clang, numbered apart): elsewhere its CPUs take AVX2. */
#if !defined(Q8_PIX_PORTABLE) && defined(__x86_64__) &&                                    \
    ((defined(__clang__) && __clang_major__ >= 8) ||                                       \
     (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 8))
#define Q8_PIX_X86 1
#include <immintrin.h>
#ifndef Q8_PIX_ISA_MAX
#define Q8_PIX_ISA_MAX 5
#endif
#if (defined(__clang__) && __clang_major__ >= 18 && !defined(__apple_build_version__)) ||   \
    (!defined(__clang__) && __GNUC__ >= 11)
#define Q8_PIX_AVXVNNI 1
#endif
#endif

/* Return the instantiation of f (q8_pix_each_isa.h's f_sse2 .. f_avx512vnni) for level
 * isa, or f_c (plain C) at level 0 and off x86-64. */
#if defined(Q8_PIX_X86) && defined(Q8_PIX_AVXVNNI)
#define Q8_PIX_AVXVNNI_CASE(f)                                                             \
    case 3:                                                                                \
        return f##_avxvnni;
#else
#define Q8_PIX_AVXVNNI_CASE(f)
#endif
#if defined(Q8_PIX_X86)
#define Q8_PIX_RETURN_FOR_ISA(isa, f)                                                      \
    switch (isa) {                                                                         \
    case 5:                                                                                \
        return f##_avx512vnni;                                                             \
    case 4:                                                                                \
        return f##_avx512;                                                                 \
    Q8_PIX_AVXVNNI_CASE(f)                                                                 \
    case 2:                                                                                \
        return f##_avx2;                                                                   \
    case 1:                                                                                \
        return f##_sse2;                                                                   \
    default:                                                                               \
        return f##_c;                                                                      \
    }
#else
#define Q8_PIX_RETURN_FOR_ISA(isa, f)                                                      \
    (void)(isa);                                                                           \
    return f##_c;
#endif

/* The instruction set level to run (see above). */
Q8_UNUSED static int q8_pix_isa(void)
{
#if defined(Q8_PIX_X86)
    __builtin_cpu_init();
    const int avx512 = __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
    if (Q8_PIX_ISA_MAX >= 5 && avx512 && __builtin_cpu_supports("avx512vnni")) {
        return 5;
    }
    if (Q8_PIX_ISA_MAX >= 4 && avx512) {
        return 4;
    }
#if defined(Q8_PIX_AVXVNNI)
    if (Q8_PIX_ISA_MAX >= 3 && __builtin_cpu_supports("avxvnni")) {
        return 3;
    }
#endif
    if (Q8_PIX_ISA_MAX >= 2 && __builtin_cpu_supports("avx2")) {
        return 2;
    }
    return Q8_PIX_ISA_MAX >= 1 ? 1 : 0;
#else
    return 0;
#endif
}

/* The first i >= 0 with iw0 + i * stride >= bound (stride >= 1), at most count: the
 * division only for strides above 2, which no layer of the zoo has. */
Q8_INLINE int32_t q8_pix_first_at(int32_t iw0, int32_t bound, int32_t stride, int32_t count)
{
    int32_t i;
    if (iw0 >= bound) {
        return 0;
    }
    i = stride == 1 ? bound - iw0 : stride == 2 ? (bound - iw0 + 1) >> 1
                                                : (bound - iw0 + stride - 1) / stride;
    return i < count ? i : count;
}

/* Eight pixels of two channels widened to int16 and interleaved: (a_i, b_i) pairs, pixel
 * i at a[i * stride] (stride 1 or 2; at stride 2 the 16 bytes from a and b are read). */
Q8_INLINE void q8_pix_pairs8(int16_t *Q8_RESTRICT dst, const uint8_t *Q8_RESTRICT a,
                             const uint8_t *Q8_RESTRICT b, int32_t stride, int is_signed)
{
#if defined(Q8_PIX_X86)
    __m128i va, vb, lo, hi;
    if (stride == 1) {
        /* Bytes interleaved, then widened: a0 b0 a1 b1 ... as int16. */
        const __m128i ab = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(const void *)a),
                                             _mm_loadl_epi64((const __m128i *)(const void *)b));
        if (is_signed) {
            lo = _mm_srai_epi16(_mm_unpacklo_epi8(ab, ab), 8);
            hi = _mm_srai_epi16(_mm_unpackhi_epi8(ab, ab), 8);
        } else {
            lo = _mm_unpacklo_epi8(ab, _mm_setzero_si128());
            hi = _mm_unpackhi_epi8(ab, _mm_setzero_si128());
        }
    } else {
        /* The even bytes as int16 (the low byte of each 16-bit lane), then interleaved. */
        va = _mm_loadu_si128((const __m128i *)(const void *)a);
        vb = _mm_loadu_si128((const __m128i *)(const void *)b);
        if (is_signed) {
            va = _mm_srai_epi16(_mm_slli_epi16(va, 8), 8);
            vb = _mm_srai_epi16(_mm_slli_epi16(vb, 8), 8);
        } else {
            va = _mm_and_si128(va, _mm_set1_epi16(0xff));
            vb = _mm_and_si128(vb, _mm_set1_epi16(0xff));
        }
        lo = _mm_unpacklo_epi16(va, vb);
        hi = _mm_unpackhi_epi16(va, vb);
    }
    _mm_storeu_si128((__m128i *)(void *)dst, lo);
    _mm_storeu_si128((__m128i *)(void *)(dst + 8), hi);
#else
    int32_t i;
    for (i = 0; i < 8; i++) {
        const uint8_t va = a[i * stride], vb = b[i * stride];
        dst[2 * i] = is_signed ? (int16_t)(int8_t)va : (int16_t)va;
        dst[2 * i + 1] = is_signed ? (int16_t)(int8_t)vb : (int16_t)vb;
    }
#endif
}

/* The pairs of one run for the channels [0, channels) in pairs: pixel i reads column
 * iw0 + i * stride of the rows a (channel 2j) and a + plane (2j + 1), or the pad outside
 * [0, w); the columns [left, inside_end) are the inside ones, of a row of `w` bytes. A last
 * channel without a partner (odd C) pairs with the pad, whose weight is 0. */
Q8_INLINE void q8_pix_fill_pairs(int16_t *Q8_RESTRICT dst, size_t pair_stride,
                                 const uint8_t *Q8_RESTRICT row, size_t plane, int32_t channels,
                                 int32_t w, int32_t iw0, int32_t stride, int32_t count,
                                 int32_t left, int32_t inside_end, int16_t pad, int is_signed)
{
    int32_t c, i;
    for (c = 0; c < channels; c += 2, dst += pair_stride) {
        const uint8_t *a = row + (size_t)c * plane;
        const int partner = c + 1 < channels;
        for (i = 0; i < 2 * left; i++) {
            dst[i] = pad;
        }
        i = left;
        if (stride == 1 && partner && inside_end - i >= 8) {
            /* Blocks of 8 at once, the last one overlapping the one before. */
            const int32_t last = inside_end - 8;
            for (; i < last; i += 8) {
                q8_pix_pairs8(dst + 2 * i, a + (iw0 + i), a + plane + (iw0 + i), 1, is_signed);
            }
            q8_pix_pairs8(dst + 2 * last, a + (iw0 + last), a + plane + (iw0 + last), 1,
                          is_signed);
            i = inside_end;
        } else if (stride == 2 && partner) {
            /* Blocks of 8 while their 16 bytes stay inside the row. */
            for (; i + 8 <= inside_end && iw0 + 2 * i + 16 <= w; i += 8) {
                q8_pix_pairs8(dst + 2 * i, a + (iw0 + 2 * i), a + plane + (iw0 + 2 * i), 2,
                              is_signed);
            }
        }
        for (; i < inside_end; i++) {
            const size_t at = (size_t)(iw0 + i * stride);
            const uint8_t va = a[at];
            const uint8_t vb = partner ? a[plane + at] : 0;
            dst[2 * i] = is_signed ? (int16_t)(int8_t)va : (int16_t)va;
            dst[2 * i + 1] = !partner ? pad : is_signed ? (int16_t)(int8_t)vb
                                                         : (int16_t)vb;
        }
        for (i = 2 * i; i < 2 * count; i++) {
            dst[i] = pad;
        }
    }
}

/* The weight pair (w_k, w_k+1) of a row as the 32 bits a broadcast takes. */
Q8_INLINE int32_t q8_pix_weight_pair(const int16_t *row, int32_t pair)
{
    int32_t v;
    memcpy(&v, row + 2 * pair, sizeof v);
    return v;
}

#if defined(Q8_PIX_X86)
#define Q8_PIX_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))

/* q8_requantize_run's float path on sixteen lanes (AVX-512), the lanes of m only: the same
 * float32 operations (VCVTDQ2PS, VMULPS, VMAXPS/VMINPS with the bounds on the same side,
 * VCVTPS2DQ in the default rounding mode). After the clamp each value is inside the output
 * type's range, so keeping its low byte (VPMOVDB) is exact for either signedness. */
Q8_PIX_AVX512 static inline __m512i q8_pix_requant16(const q8_row_requant *r,
                                                     const int32_t *sums, int32_t bias,
                                                     __mmask16 m)
{
    const __m512i acc = _mm512_add_epi32(_mm512_maskz_loadu_epi32(m, sums),
                                         _mm512_set1_epi32(bias));
    __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(acc), _mm512_set1_ps(r->scale));
    v = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(r->lo_f)), _mm512_set1_ps(r->hi_f));
    return _mm512_add_epi32(_mm512_cvtps_epi32(v), _mm512_set1_epi32(r->zero_point));
}

/* The lanes [0, left) of a vector (none for left 0, all from 16 on). */
Q8_INLINE __mmask16 q8_pix_lanes(int32_t left)
{
    return left >= 16 ? (__mmask16)0xFFFFu : (__mmask16)((1u << (uint32_t)left) - 1u);
}

/* q8_requantize_run's float path sixteen lanes at a time, the tail under a mask. */
Q8_PIX_AVX512 Q8_UNUSED static void q8_pix_requant_avx512(const q8_row_requant *r,
                                                          const int32_t *sums, int32_t bias,
                                                          int32_t n, uint8_t *y)
{
    int32_t i;
    for (i = 0; i < n; i += 16) {
        const __mmask16 m = q8_pix_lanes(n - i);
        _mm_mask_storeu_epi8(y + i, m, _mm512_cvtepi32_epi8(q8_pix_requant16(r, sums + i,
                                                                             bias, m)));
    }
}

/* q8_pix_requant_avx512 over a flat run that starts a row, keeping only the outputs:
 * masks[v] has bit i set when flat position 16 v + i is one (its column below the output
 * width). Each vector's outputs are packed together (VPCOMPRESSD) and stored in order at
 * y. Returns how many it stored. */
Q8_PIX_AVX512 Q8_UNUSED static int32_t q8_pix_requant_compress_avx512(
    const q8_row_requant *r, const int32_t *sums, int32_t bias, int32_t n,
    const uint16_t *masks, uint8_t *y)
{
    int32_t i, stored = 0;
    for (i = 0; i < n; i += 16) {
        const __mmask16 m = (__mmask16)(masks[i / 16] & q8_pix_lanes(n - i));
        const int32_t count = __builtin_popcount((uint32_t)m);
        const __m512i q = _mm512_maskz_compress_epi32(m, q8_pix_requant16(r, sums + i, bias,
                                                                          m));
        _mm_mask_storeu_epi8(y + stored, q8_pix_lanes(count), _mm512_cvtepi32_epi8(q));
        stored += count;
    }
    return stored;
}
#endif

/* Whether a kernel packs its outputs out of flat runs with q8_pix_requant_compress_avx512:
 * AVX-512 and the float requantization. */
#if defined(Q8_PIX_X86)
#define Q8_PIX_COMPRESS(isa, mode) ((isa) >= 4 && (mode) != Q8_RQ_IREQ)
#else
#define Q8_PIX_COMPRESS(isa, mode) 0
#endif

/* The masks of q8_pix_requant_compress_avx512 for n flat positions of rows `len` wide, the
 * first `ow_count` of each an output. */
Q8_INLINE void q8_pix_row_masks(int32_t len, int32_t ow_count, int32_t n, uint16_t *masks)
{
    int32_t i;
    for (i = 0; i < n; i++) {
        if (i % 16 == 0) {
            masks[i / 16] = 0;
        }
        if (i % len < ow_count) {
            masks[i / 16] = (uint16_t)(masks[i / 16] | (1u << (uint32_t)(i % 16)));
        }
    }
}

/* q8_requantize_run at the kernel's instruction set level (q8_pix_isa()). */
Q8_INLINE void q8_pix_requantize_run(const q8_row_requant *r, const int32_t *sums, int32_t bias,
                                     int32_t n, uint8_t *y, int mode, int isa)
{
#if defined(Q8_PIX_X86)
    if (isa >= 4 && mode != Q8_RQ_IREQ) {
        q8_pix_requant_avx512(r, sums, bias, n, y);
        return;
    }
#else
    (void)isa;
#endif
    q8_requantize_run(r, sums, bias, n, y, mode);
}

/* A flat run of requantized outputs, flat index q0.. of rows `row_len` wide, into the
 * output's rows (ow_count wide, from y_first): flat q is output (q / row_len, q % row_len),
 * and the columns from ow_count to row_len are not outputs. A row of up to 8 outputs is
 * stored as 8 bytes where they end before y_end: the bytes past the row are the next
 * rows', which are stored after it (a kernel's stores within a channel go strictly
 * forward, so those bytes, dropped columns' values or `run`'s bytes past n, never stay;
 * a checker of uninitialized reads would still see them copied). `run` has
 * Q8_PIX_RUN_SLACK bytes past n. */
#define Q8_PIX_RUN_SLACK 8
Q8_INLINE void q8_pix_scatter_rows(const uint8_t *run, int32_t q0, int32_t n, int32_t row_len,
                                   int32_t ow_count, uint8_t *y_first, const uint8_t *y_end)
{
    int32_t q = q0, row = q0 / row_len, col = q0 % row_len;
    const int32_t end = q0 + n;
    while (q < end) {
        if (col < ow_count) {
            const int32_t left = ow_count - col, take = left < end - q ? left : end - q;
            uint8_t *dst = y_first + (size_t)row * (size_t)ow_count + (size_t)col;
            if (take <= 8 && y_end - dst >= 8) {
                uint64_t v;
                memcpy(&v, run + (q - q0), 8);
                memcpy(dst, &v, 8);
            } else {
                q8_copy_short(dst, run + (q - q0), take);
            }
            q += take;
            col += take;
        } else {
            q += row_len - col;
            row++;
            col = 0;
        }
    }
}

#endif /* Q8_PIX_H */
