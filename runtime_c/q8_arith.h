/*
 * q8_arith.h - the scalar arithmetic that makes onnx2mcu bit-exact with ONNX Runtime.
 *
 * ORT requantizes an int32 accumulator as
 *     v = f32( (float)acc * scale );  v = clamp(v, lo, hi);  y = rne(v) + zp
 * with scale = f32( f32(x_scale * w_scale) / y_scale ) and rne = round half to even.
 * q8_requant_f32() does exactly that on any IEEE-754 binary32 FPU.
 * q8_requant_int() reproduces the same two float32 roundings with integer operations
 * only, for cores without an FPU. See docs/numerics.md.
 *
 * Requirements on the compiler: IEEE binary32 floats, no -ffast-math.
 */
#ifndef Q8_ARITH_H
#define Q8_ARITH_H

#include "q8_names.h"

#include <float.h>
#include <stdint.h>
#include <string.h>

#if defined(__FAST_MATH__)
#error "onnx2mcu kernels need IEEE float semantics: do not compile them with -ffast-math"
#endif

/*
 * No fused multiply-add where ORT rounds the product and the sum separately. ISO modes
 * (-std=c99) already turn contraction off; GNU modes and other compilers' defaults may
 * not, whatever flags the user's build passes.
 */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#if defined(__GNUC__) || defined(__clang__)
#define Q8_INLINE static __inline__ __attribute__((always_inline))
/* A static helper of a shared kernel header that some of its including files do not call. */
#define Q8_UNUSED __attribute__((unused))
#else
#define Q8_INLINE static
#define Q8_UNUSED
#endif

/*
 * How a kernel turns its int32 accumulators into outputs, one list for every family
 * (the mode of an instantiated kernel is a constant; the suffix of its name says it):
 *   Q8_RQ_FREQ             float32 requantization, as ORT (suffix _freq)
 *   Q8_RQ_IREQ             the exact integer method, no float (suffix _ireq)
 *   Q8_RQ_F32              float32 output f32((float)acc * scale) (suffix _f32)
 *   Q8_RQ_FREQ_BOUNDED     float32 where the generator proved |acc * scale| < 2^21
 *                          (q8_requant_f32_bounded; chosen at run time from `bounded`)
 *   Q8_RQ_FREQ_BOUNDED_S8  the same over the whole int8 range, rounded by VCVTR and
 *   Q8_RQ_FREQ_BOUNDED_U8  saturated by SSAT (uint8: USAT) where the core has them
 *   Q8_RQ_I32              the raw accumulator (suffix _i32)
 */
enum {
    Q8_RQ_FREQ,
    Q8_RQ_IREQ,
    Q8_RQ_F32,
    Q8_RQ_FREQ_BOUNDED,
    Q8_RQ_FREQ_BOUNDED_S8,
    Q8_RQ_FREQ_BOUNDED_U8,
    Q8_RQ_I32
};

/*
 * Round to the nearest integer, ties to even, for |v| < 2^22.
 * Adding 1.5 * 2^23 leaves no fraction bits, so the FPU's own round-to-nearest-even
 * does the rounding; the casts force float32 precision even where FLT_EVAL_METHOD != 0.
 */
Q8_INLINE int32_t q8_round_half_even(float v)
{
    const float magic = 12582912.0f;
    float r = (float)(v + magic);
    r = (float)(r - magic);
    return (int32_t)r;
}

/*
 * Clamp as x86 maxps/minps do (the order ORT uses): a NaN input becomes lo.
 */
Q8_INLINE float q8_fclamp(float v, float lo, float hi)
{
    v = (v > lo) ? v : lo;
    v = (v < hi) ? v : hi;
    return v;
}

/*
 * q8_requant_f32 where the generator has proved |acc * scale| < 2^21 for every possible
 * input ("bounded" layers): v + 1.5 * 2^23 is then the rounded value in the low bits of
 * its representation (rounded to nearest even by the FPU), and clamping the integer
 * gives what clamping the float first gives, for integer bounds. Fewer instructions than
 * a float clamp on cores without VMINNM/VMAXNM.
 */
#define Q8_ROUNDING_BITS 0x4B400000 /* the representation of 1.5 * 2^23 */

/* The representation of v + 1.5 * 2^23: Q8_ROUNDING_BITS + the rounded value. Kernels
 * clamp it against bounds offset by Q8_ROUNDING_BITS and fold the offset into the zero
 * point, which saves the subtraction. */
Q8_INLINE int32_t q8_requant_bits(int32_t acc, float scale)
{
    const float magic = 12582912.0f;
    const float v = (float)((float)acc * scale);
    const float shifted = (float)(v + magic);
    uint32_t bits;
    memcpy(&bits, &shifted, sizeof bits);
    return (int32_t)bits;
}

Q8_INLINE int32_t q8_requant_f32_bounded(int32_t acc, float scale, int32_t lo, int32_t hi)
{
    int32_t q = q8_requant_bits(acc, scale) - Q8_ROUNDING_BITS;
    q = q < lo ? lo : q;
    return q > hi ? hi : q;
}

/* Float requantization of an accumulator; returns the value before the zero point. */
Q8_INLINE int32_t q8_requant_f32(int32_t acc, float scale, float lo, float hi)
{
    float v = (float)((float)acc * scale);
    return q8_round_half_even(q8_fclamp(v, lo, hi));
}

/*
 * x86 cvtps2dq followed by saturation, as ORT's kernels finish: round half to even,
 * a NaN or a value outside the int32 range becomes INT32_MIN (so the minimum after
 * clamping), everything else is clamped to [qmin, qmax].
 */
Q8_INLINE int32_t q8_round_saturate(float t, int32_t qmin, int32_t qmax)
{
    if (!(t >= -2147483648.0f && t < 2147483648.0f)) {
        return qmin;
    }
    return q8_round_half_even(q8_fclamp(t, (float)qmin, (float)qmax));
}

/*
 * f32(a * b) with its rounding forced: a following addition is never fused into an FMA
 * (compilers may contract a*b + c under -ffp-contract=fast, the GNU C default), where
 * ORT computes the product and the sum separately.
 */
Q8_INLINE float q8_mul_unfused(float a, float b)
{
    volatile float product = a * b;
    return product;
}

/* Number of significant bits of v (0 for v == 0). */
Q8_INLINE int q8_bit_length32(uint32_t v)
{
#if defined(__GNUC__) || defined(__clang__)
    return v ? 32 - __builtin_clz(v) : 0;
#else
    int n = 0;
    while (v) {
        v >>= 1;
        n++;
    }
    return n;
#endif
}

Q8_INLINE int q8_bit_length64(uint64_t v)
{
    uint32_t hi = (uint32_t)(v >> 32);
    return hi ? 32 + q8_bit_length32(hi) : q8_bit_length32((uint32_t)v);
}

/* v / 2^n rounded half to even, 1 <= n <= 31. */
Q8_INLINE uint32_t q8_shift_round_even32(uint32_t v, int n)
{
    uint32_t q = v >> n;
    uint32_t rem = v & ((1u << n) - 1u);
    uint32_t half = 1u << (n - 1);
    return q + (uint32_t)(rem > half || (rem == half && (q & 1u)));
}

/* v / 2^n rounded half to even, 1 <= n <= 63. */
Q8_INLINE uint64_t q8_shift_round_even64(uint64_t v, int n)
{
    uint64_t q = v >> n;
    uint64_t rem = v & ((((uint64_t)1) << n) - 1u);
    uint64_t half = ((uint64_t)1) << (n - 1);
    return q + (uint64_t)(rem > half || (rem == half && (q & 1u)));
}

/*
 * Integer-only requantization, bit-identical to q8_requant_f32(acc, scale, lo, hi) with
 * scale = mult * 2^exp, |mult| < 2^24 (the float32 significand, sign included) and
 * lo/hi integers. Returns the value before the zero point.
 */
Q8_INLINE int32_t q8_requant_int(int32_t acc, int32_t mult, int32_t exp, int32_t lo, int32_t hi)
{
    uint32_t a = (acc < 0) ? 0u - (uint32_t)acc : (uint32_t)acc;
    uint32_t m = (mult < 0) ? 0u - (uint32_t)mult : (uint32_t)mult;
    int negative = (acc < 0) != (mult < 0);
    int32_t e = exp;
    uint64_t p;
    uint32_t mag;
    int32_t v;
    int n;

    /* The common case without 64-bit arithmetic or bit counts (library calls on ARMv6-M):
     * |acc| < 2^24, so (float)acc is exact, and 2^-62 <= 2^exp <= 2^-21. t, the exact
     * product a * m * 2^exp to 20 fraction bits (truncated), decides the result unless
     * it lies within 2^-14 of a half: the float32 rounding of the product moves it by at
     * most 2^-15 below the saturation bound (the product has at most 30 integer bits
     * there), and 2^-20 is the truncation. Near a half the full way below decides. */
    if (a < 0x1000000u && exp <= -21 && exp >= -62) {
        const int sh = -exp - 20; /* 1 .. 42 */
        uint32_t t = 0u;
        int32_t d;
        int saturated;
        if (a < 0x100000u) {
            /* |acc| < 2^20 (most accumulators): two 32-bit products with the 12-bit halves
             * of m, x = a * (m >> 12) and y = a * (m & 0xFFF), and a * m = x * 2^12 + y;
             * with sh >= 12, x + (y >> 12) < 2^32 is a * m / 2^12 truncated, and
             * truncating twice is truncating once. */
            const uint32_t x = a * (m >> 12), y = a * (m & 0xFFFu);
            if (sh >= 12) {
                t = (x + (y >> 12)) >> (sh - 12);
                saturated = 0;
            } else {
                saturated = (x >> (18 + sh)) != 0u; /* t >= 2^30 */
                if (!saturated) {
                    t = (x << (12 - sh)) + (y >> sh);
                }
            }
        } else {
            const uint32_t al = a & 0xFFFFu, ah = a >> 16, ml = m & 0xFFFFu, mh = m >> 16;
            const uint32_t low = al * ml, mid = ah * ml + al * mh; /* mid < 2^25 */
            const uint32_t lo32 = low + (mid << 16);
            const uint32_t hi32 = ah * mh + (mid >> 16) + (uint32_t)(lo32 < low);
            if (sh >= 32) {
                t = hi32 >> (sh - 32);
                saturated = 0;
            } else {
                saturated = (hi32 >> sh) != 0u;
                if (!saturated) {
                    t = (lo32 >> sh) | (hi32 << (32 - sh));
                }
            }
        }
        d = (int32_t)(t & 0xFFFFFu) - 0x80000;
        if (saturated || (t >> 20) >= 1024u || d > 64 || d < -64) {
            mag = saturated || (t >> 20) >= 1024u ? 1024u : (t >> 20) + (uint32_t)(d > 0);
            v = negative ? -(int32_t)mag : (int32_t)mag;
            v = v < lo ? lo : v;
            v = v > hi ? hi : v;
            return v;
        }
    }

    /* (float)acc: round |acc| to 24 significant bits. */
    if (a >= 0x1000000u) {
        n = q8_bit_length32(a) - 24;
        a = q8_shift_round_even32(a, n);
        e += n;
    }
    /* f32(a * m): the exact 48-bit product, rounded again to 24 significant bits. */
    p = (uint64_t)a * m;
    n = q8_bit_length64(p) - 24;
    if (n > 0) {
        p = q8_shift_round_even64(p, n);
        e += n;
    }
    /* rne(p * 2^e), saturated well outside any 8-bit range. */
    if (p == 0u) {
        mag = 0u;
    } else if (e >= 0) {
        mag = (e > 10 || p > (1024u >> e)) ? 1024u : (uint32_t)p << e;
    } else if (e < -40) {
        mag = 0u;
    } else {
        uint64_t r = q8_shift_round_even64(p, -e);
        mag = r > 1024u ? 1024u : (uint32_t)r;
    }
    v = negative ? -(int32_t)mag : (int32_t)mag;
    v = v < lo ? lo : v;
    v = v > hi ? hi : v;
    return v;
}

/*
 * q8_requant_int with a channel's work done once (q8_prepare_int_requant), for the
 * kernels' rows. With 2^-62 <= 2^exp <= 2^-21 (sh = -exp - 20 in 1 .. 42), mult > 0 and
 * m = mult split at s = min(sh, 12) into hi = m >> s and lo = m mod 2^s,
 *   t = floor(a m / 2^sh) = (a hi + floor(a lo / 2^s)) >> (sh - s)
 * (truncating twice is truncating once), q8_requant_int's truncated product, from two
 * 32-bit products: a lo < 2^(19 + s) and a hi + floor(a lo / 2^s) = floor(a m / 2^s) <
 * 2^31 while a < 2^min(19, 7 + sh) (m < 2^24). t decides the result as there unless it
 * lies within 2^-14 of a half. The rest (larger accumulators, negative scales, the near
 * halves) goes to q8_requant_int. The clamp bounds lie within +-1024 (8-bit outputs), so
 * no saturation step is needed first.
 */
typedef struct {
    uint32_t m_hi, m_lo; /* |mult| split at split */
    uint32_t a_limit;    /* where the products above apply (0: nowhere) */
    int32_t split, shift; /* s, sh - s */
    int32_t negative;    /* mult < 0 */
    int32_t mult, exp, lo, hi;
} q8_int_requant;

Q8_INLINE q8_int_requant q8_prepare_int_requant(int32_t mult, int32_t exp, int32_t lo,
                                                int32_t hi)
{
    q8_int_requant r;
    const uint32_t m = mult < 0 ? 0u - (uint32_t)mult : (uint32_t)mult;
    const int32_t sh = exp <= -21 && exp >= -62 ? -exp - 20 : 0;
    r.split = sh < 12 ? sh : 12;
    r.shift = sh - r.split;
    r.m_hi = m >> r.split;
    r.m_lo = m & ((1u << r.split) - 1u);
    r.a_limit = sh == 0 || mult < 0 ? 0u : 1u << (sh < 12 ? 7 + sh : 19);
    r.negative = mult < 0;
    r.mult = mult;
    r.exp = exp;
    r.lo = lo;
    r.hi = hi;
    return r;
}

/* Out of line: the rare cases stay out of the kernels' loops. */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
Q8_UNUSED static int32_t q8_requant_int_rare(int32_t acc, int32_t mult, int32_t exp,
                                              int32_t lo, int32_t hi)
{
    return q8_requant_int(acc, mult, exp, lo, hi);
}

Q8_INLINE int32_t q8_requant_int_prepared(const q8_int_requant *r, int32_t acc)
{
    const uint32_t sign = (uint32_t)(acc >> 31); /* all ones for acc < 0 */
    const uint32_t a = ((uint32_t)acc ^ sign) - sign;
    if (a < r->a_limit) {
        const uint32_t t = (a * r->m_hi + ((a * r->m_lo) >> r->split)) >> r->shift;
        /* With d = (t mod 2^20) - 2^19, w mod 2^20 < 128 exactly when d lies in [-64, 63]
         * (near a half: farther than 2^-14 decides, 34 * 2^-20 would do); elsewhere
         * w >> 20 is t / 2^20 rounded. */
        const uint32_t w = t + 0x80040u;
        if (((w << 12) >> 19) != 0u) {
            const int32_t v = (int32_t)(((w >> 20) ^ sign) - sign);
            return v < r->lo ? r->lo : (v > r->hi ? r->hi : v);
        }
    }
    /* by value: a pointer would let the caller's constants escape */
    return q8_requant_int_rare(acc, r->mult, r->exp, r->lo, r->hi);
}

#endif /* Q8_ARITH_H */
