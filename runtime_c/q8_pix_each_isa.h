/*
 * q8_pix_each_isa.h - includes the products body Q8_PIX_BODY (a header name) once per x86-64
 * instruction set (q8_pix.h), each time with:
 *   Q8_PX_FN(f)    the function's name for this set: f_sse2, f_avx2, f_avxvnni (where
 *                  Q8_PIX_AVXVNNI), f_avx512, f_avx512vnni;
 *   Q8_PX_TARGET   its target attribute;
 *   Q8_PX_LANES    int32 lanes per vector; Q8_PX_VEC the vector type;
 *   Q8_PX_LOAD(p), Q8_PX_STORE(p, v), Q8_PX_SPLAT(w32), Q8_PX_ZERO();
 *   Q8_PX_MAC(s, a, w) s + the two int16 products of each lane's pairs of a and w (PMADDWD
 *                  and PADDD, or VNNI's VPDPWSSD, which adds them without saturation).
 * No include guard, by design: the includer defines Q8_PIX_BODY, includes this file, and
 * undefines it.
 */
#if defined(Q8_PIX_X86)
#define Q8_PX_CAT2(a, b) a##b
#define Q8_PX_CAT(a, b) Q8_PX_CAT2(a, b)

#define Q8_PX_FN(f) Q8_PX_CAT(f, _sse2)
#define Q8_PX_TARGET
#define Q8_PX_LANES 4
#define Q8_PX_VEC __m128i
#define Q8_PX_LOAD(p) _mm_loadu_si128((const __m128i *)(const void *)(p))
#define Q8_PX_STORE(p, v) _mm_storeu_si128((__m128i *)(void *)(p), (v))
#define Q8_PX_SPLAT(w) _mm_set1_epi32(w)
#define Q8_PX_MAC(s, a, w) _mm_add_epi32((s), _mm_madd_epi16((a), (w)))
#define Q8_PX_ZERO() _mm_setzero_si128()
#include Q8_PIX_BODY
#undef Q8_PX_FN
#undef Q8_PX_TARGET
#undef Q8_PX_LANES
#undef Q8_PX_VEC
#undef Q8_PX_LOAD
#undef Q8_PX_STORE
#undef Q8_PX_SPLAT
#undef Q8_PX_MAC
#undef Q8_PX_ZERO

#define Q8_PX_FN(f) Q8_PX_CAT(f, _avx2)
#define Q8_PX_TARGET __attribute__((target("avx2")))
#define Q8_PX_LANES 8
#define Q8_PX_VEC __m256i
#define Q8_PX_LOAD(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define Q8_PX_STORE(p, v) _mm256_storeu_si256((__m256i *)(void *)(p), (v))
#define Q8_PX_SPLAT(w) _mm256_set1_epi32(w)
#define Q8_PX_MAC(s, a, w) _mm256_add_epi32((s), _mm256_madd_epi16((a), (w)))
#define Q8_PX_ZERO() _mm256_setzero_si256()
#include Q8_PIX_BODY
#undef Q8_PX_FN
#undef Q8_PX_TARGET
#undef Q8_PX_MAC

#if defined(Q8_PIX_AVXVNNI)
#define Q8_PX_FN(f) Q8_PX_CAT(f, _avxvnni)
#define Q8_PX_TARGET __attribute__((target("avx2,avxvnni")))
#define Q8_PX_MAC(s, a, w) _mm256_dpwssd_avx_epi32((s), (a), (w))
#include Q8_PIX_BODY
#undef Q8_PX_FN
#undef Q8_PX_TARGET
#endif
#undef Q8_PX_LANES
#undef Q8_PX_VEC
#undef Q8_PX_LOAD
#undef Q8_PX_STORE
#undef Q8_PX_SPLAT
#undef Q8_PX_MAC
#undef Q8_PX_ZERO

#define Q8_PX_FN(f) Q8_PX_CAT(f, _avx512)
#define Q8_PX_TARGET __attribute__((target("avx512f,avx512bw")))
#define Q8_PX_LANES 16
#define Q8_PX_VEC __m512i
#define Q8_PX_LOAD(p) _mm512_loadu_si512((const void *)(p))
#define Q8_PX_STORE(p, v) _mm512_storeu_si512((void *)(p), (v))
#define Q8_PX_SPLAT(w) _mm512_set1_epi32(w)
#define Q8_PX_MAC(s, a, w) _mm512_add_epi32((s), _mm512_madd_epi16((a), (w)))
#define Q8_PX_ZERO() _mm512_setzero_si512()
#include Q8_PIX_BODY
#undef Q8_PX_FN
#undef Q8_PX_TARGET
#undef Q8_PX_MAC

#define Q8_PX_FN(f) Q8_PX_CAT(f, _avx512vnni)
#define Q8_PX_TARGET __attribute__((target("avx512f,avx512bw,avx512vnni")))
#define Q8_PX_MAC(s, a, w) _mm512_dpwssd_epi32((s), (a), (w))
#include Q8_PIX_BODY
#undef Q8_PX_FN
#undef Q8_PX_TARGET
#undef Q8_PX_LANES
#undef Q8_PX_VEC
#undef Q8_PX_LOAD
#undef Q8_PX_STORE
#undef Q8_PX_SPLAT
#undef Q8_PX_MAC
#undef Q8_PX_ZERO
#endif /* Q8_PIX_X86 */
