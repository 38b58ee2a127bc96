/*
 * q8_dsp.h - the SIMD-within-a-register operations the fast kernels are written with.
 *
 * On cores with the DSP extension (Cortex-M4, M7, M33) they are the ACLE intrinsics of
 * <arm_acle.h>, one instruction each. Elsewhere (M0+, M3, the host) they are plain C
 * computing the same 32-bit results, so the same kernels run, and are tested, everywhere.
 *
 *   q8_sxtb16(x)       bytes 0 and 2 of x, sign-extended to the two halfwords
 *   q8_uxtb16(x)       the same, zero-extended
 *   q8_ror8(x)         x rotated right by 8 bits
 *   q8_sxtb16_ror8(x)  q8_sxtb16(q8_ror8(x)): bytes 1 and 3, sign-extended
 *   q8_smlad(a, b, c)  c + a.lo * b.lo + a.hi * b.hi (signed halfwords), modulo 2^32
 *   q8_smlabb(a, b, c) c + a.lo * b.lo;  q8_smlabt(a, b, c)  c + a.lo * b.hi
 *   q8_smlatb(a, b, c) c + a.hi * b.lo
 */
#ifndef Q8_DSP_H
#define Q8_DSP_H

#include <stdint.h>
#include <string.h>

#include "q8_arith.h"

#if defined(__ARM_FEATURE_DSP) && __ARM_FEATURE_DSP
#include <arm_acle.h>

#define Q8_HAS_DSP 1

Q8_INLINE uint32_t q8_sxtb16(uint32_t x)
{
    return (uint32_t)__sxtb16((int32_t)x);
}

Q8_INLINE uint32_t q8_uxtb16(uint32_t x)
{
    return (uint32_t)__uxtb16(x);
}

/* SXTB16 with its operand rotated by 8: one instruction. GCC 12 does not fold a C
 * rotate into the intrinsic's operand (it emits a separate ROR), hence the asm. */
Q8_INLINE uint32_t q8_sxtb16_ror8(uint32_t x)
{
    uint32_t r;
    __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(x));
    return r;
}

Q8_INLINE int32_t q8_smlad(uint32_t a, uint32_t b, int32_t acc)
{
    return __smlad((int32_t)a, (int32_t)b, acc);
}

Q8_INLINE int32_t q8_smlabb(int32_t a, int32_t b, int32_t acc)
{
    return __smlabb(a, b, acc);
}

Q8_INLINE int32_t q8_smlabt(int32_t a, int32_t b, int32_t acc)
{
    return __smlabt(a, b, acc);
}

Q8_INLINE int32_t q8_smlatb(int32_t a, int32_t b, int32_t acc)
{
    return __smlatb(a, b, acc);
}

#else

#define Q8_HAS_DSP 0

Q8_INLINE uint32_t q8_sxtb16(uint32_t x)
{
    const uint32_t lo = (uint32_t)(int32_t)(int8_t)(uint8_t)x & 0xffffu;
    const uint32_t hi = (uint32_t)(int32_t)(int8_t)(uint8_t)(x >> 16) & 0xffffu;
    return lo | (hi << 16);
}

Q8_INLINE uint32_t q8_uxtb16(uint32_t x)
{
    return x & 0x00ff00ffu;
}

Q8_INLINE int32_t q8_smlad(uint32_t a, uint32_t b, int32_t acc)
{
    const int32_t a_lo = (int16_t)(uint16_t)a, a_hi = (int16_t)(uint16_t)(a >> 16);
    const int32_t b_lo = (int16_t)(uint16_t)b, b_hi = (int16_t)(uint16_t)(b >> 16);
    /* Each product fits int32; the sum wraps modulo 2^32, as the instruction does. */
    return (int32_t)((uint32_t)acc + (uint32_t)(a_lo * b_lo) + (uint32_t)(a_hi * b_hi));
}

Q8_INLINE int32_t q8_smlabb(int32_t a, int32_t b, int32_t acc)
{
    const int32_t a_lo = (int16_t)(uint16_t)(uint32_t)a, b_lo = (int16_t)(uint16_t)(uint32_t)b;
    return (int32_t)((uint32_t)acc + (uint32_t)(a_lo * b_lo));
}

Q8_INLINE int32_t q8_smlabt(int32_t a, int32_t b, int32_t acc)
{
    const int32_t a_lo = (int16_t)(uint16_t)(uint32_t)a;
    const int32_t b_hi = (int16_t)(uint16_t)((uint32_t)b >> 16);
    return (int32_t)((uint32_t)acc + (uint32_t)(a_lo * b_hi));
}

Q8_INLINE int32_t q8_smlatb(int32_t a, int32_t b, int32_t acc)
{
    const int32_t a_hi = (int16_t)(uint16_t)((uint32_t)a >> 16);
    const int32_t b_lo = (int16_t)(uint16_t)(uint32_t)b;
    return (int32_t)((uint32_t)acc + (uint32_t)(a_hi * b_lo));
}

#endif

/* The loops scheduled by hand in inline assembly: GCC-compatible compilers on Thumb-2,
 * optimizing (at -O0 GCC cannot give the loops their 12 or 13 registers: "impossible
 * constraints"), unless Q8_NO_ASM asks for the C loops, which compute the same. */
#if defined(__GNUC__) && defined(__thumb2__) && defined(__OPTIMIZE__) && !defined(Q8_NO_ASM)
#define Q8_ASM 1
#else
#define Q8_ASM 0
#endif

/* Helium (the M-profile Vector Extension: Cortex-M55, M85), integer and float: the
 * _mve_ kernels' vector paths, unless Q8_NO_MVE or Q8_NO_ASM asks for their C loops. */
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1) && !defined(Q8_NO_MVE) && \
    !defined(Q8_NO_ASM)
#include <arm_mve.h>
#define Q8_HAS_MVE 1
#else
#define Q8_HAS_MVE 0
#endif

/* VCVTR: a float rounded to the nearest int32 by the FPSCR's mode (ties to even by
 * default, as ORT's cvtps2dq), saturating; cores with a single-precision FPU and DSP. */
#if defined(__GNUC__) && defined(__ARM_FP) && (__ARM_FP & 4) && Q8_HAS_DSP && \
    !defined(Q8_NO_ASM)
#define Q8_HAS_VCVTR 1
Q8_INLINE int32_t q8_vcvtr(float v)
{
    float rounded;
    int32_t q;
    __asm__("vcvtr.s32.f32 %0, %1" : "=t"(rounded) : "t"(v));
    memcpy(&q, &rounded, sizeof q);
    return q;
}

/* Both values times scale, each rounded as q8_vcvtr: one core-to-FPU move and one back
 * for the pair (two cycles each on Cortex-M4) instead of one each per value. */
Q8_INLINE void q8_vcvtr_pair(int32_t *a, int32_t *b, float scale)
{
    __asm__("vmov s14, s15, %[a], %[b]\n\t"
            "vcvt.f32.s32 s14, s14\n\t"
            "vcvt.f32.s32 s15, s15\n\t"
            "vmul.f32 s14, s14, %[s]\n\t"
            "vmul.f32 s15, s15, %[s]\n\t"
            "vcvtr.s32.f32 s14, s14\n\t"
            "vcvtr.s32.f32 s15, s15\n\t"
            "vmov %[a], %[b], s14, s15"
            : [a] "+r"(*a), [b] "+r"(*b)
            : [s] "t"(scale)
            : "s14", "s15");
}
#else
#define Q8_HAS_VCVTR 0
#endif

/* Rotate right by 8 bits: one ror. */
Q8_INLINE uint32_t q8_ror8(uint32_t x)
{
    return (x >> 8) | (x << 24);
}

#if !Q8_HAS_DSP
Q8_INLINE uint32_t q8_sxtb16_ror8(uint32_t x)
{
    return q8_sxtb16(q8_ror8(x));
}
#endif

/* The low halves of lo and hi in one word (lo in bits 0-15): one PKHBT on DSP cores,
 * where GCC 12 emits two instructions for the C form. */
Q8_INLINE uint32_t q8_pack16(uint32_t lo, uint32_t hi)
{
#if Q8_HAS_DSP && Q8_ASM
    uint32_t r;
    __asm__("pkhbt %0, %1, %2, lsl #16" : "=r"(r) : "r"(lo), "r"(hi));
    return r;
#else
    return (lo & 0xFFFFu) | (hi << 16);
#endif
}

/* Unaligned-safe 32-bit loads and stores (compiled to single ldr/str where allowed). */
Q8_INLINE uint32_t q8_load32(const void *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

Q8_INLINE void q8_store32(void *p, uint32_t v)
{
    memcpy(p, &v, sizeof v);
}

#endif /* Q8_DSP_H */
