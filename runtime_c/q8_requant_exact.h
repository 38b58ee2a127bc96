/*
 * q8_requant_exact.h - exact requantization of the 16-bit integer kernels
 * (codegen/arith/exact_requant.py): rne(acc * num * 2^shift / den), the exact value
 * x_scale * w_scale / y_scale times acc rounded half to even as QuantizeLinear rounds,
 * in integers only (32-bit limbs: no 128-bit type, no float, on every core).
 *
 * acc * num has at most 63 + 48 bits. With one extra bit for the half,
 * G = floor(acc * num * 2^(shift + 1) / den) and a sticky bit (a remainder below it)
 * decide the rounding: q = G / 2, plus 1 when G is odd and (sticky or q odd). Results
 * beyond +-2^30 saturate there (every output type clamps far inside).
 */
#ifndef Q8_REQUANT_EXACT_H
#define Q8_REQUANT_EXACT_H

#include <stdint.h>

#include "q8_arith.h"

typedef struct {
    uint64_t num;  /* < 2^48 */
    uint32_t den;  /* < 2^24, nonzero */
    int32_t shift;
    /* The same multiplier as round(num * 2^shift / den * 2^rshift) = mult, below 2^31
     * (2^30 or more where rshift allows), for q8_requant_fast; mult 0: every accumulator
     * takes the exact path (multipliers of 1/4 or more, or below 2^-63). */
    int32_t mult;
    int32_t rshift; /* 33..62 */
} q8_exact_multiplier;

#define Q8_EXACT_SATURATION ((int64_t)1 << 30)

/* t[0..3] (least significant first) = a * b. */
Q8_INLINE void q8_mul_64x64(uint64_t a, uint64_t b, uint32_t t[4])
{
    const uint64_t a0 = (uint32_t)a, a1 = a >> 32, b0 = (uint32_t)b, b1 = b >> 32;
    const uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    const uint64_t middle = (p00 >> 32) + (uint32_t)p01 + (uint32_t)p10;
    const uint64_t high = p11 + (p01 >> 32) + (p10 >> 32) + (middle >> 32);
    t[0] = (uint32_t)p00;
    t[1] = (uint32_t)middle;
    t[2] = (uint32_t)high;
    t[3] = (uint32_t)(high >> 32);
}

/* t /= d in place; returns the remainder. */
Q8_INLINE uint32_t q8_divmod_128x32(uint32_t t[4], uint32_t d)
{
    uint64_t rest = 0;
    int i;
    for (i = 3; i >= 0; i--) {
        const uint64_t part = (rest << 32) | t[i];
        t[i] = (uint32_t)(part / d);
        rest = part % d;
    }
    return (uint32_t)rest;
}

Q8_INLINE int q8_bit_length_128(const uint32_t t[4])
{
    int i, bits;
    for (i = 3; i >= 0; i--) {
        if (t[i] != 0) {
            uint32_t v = t[i];
            bits = 32 * i;
            while (v != 0) {
                bits++;
                v >>= 1;
            }
            return bits;
        }
    }
    return 0;
}

/* Out of line: the fast kernels call it only where q8_requant_fast cannot decide, and
 * inlined it would crowd their registers. */
#if defined(__GNUC__) || defined(__clang__)
#define Q8_COLD __attribute__((noinline, unused))
#else
#define Q8_COLD
#endif
static Q8_COLD int64_t q8_requant_exact(int64_t acc, const q8_exact_multiplier *m)
{
    const int negative = acc < 0;
    const uint64_t magnitude = negative ? (uint64_t)0 - (uint64_t)acc : (uint64_t)acc;
    const int32_t e = m->shift + 1;
    uint32_t t[4];
    uint64_t g, q;
    int sticky;
    if (magnitude == 0) {
        return 0; /* whatever the shift: 0 is exact */
    }
    q8_mul_64x64(magnitude, m->num, t);
    if (e >= 0) {
        uint64_t x;
        if (q8_bit_length_128(t) + e > 62) {
            return negative ? -Q8_EXACT_SATURATION : Q8_EXACT_SATURATION;
        }
        x = (((uint64_t)t[1] << 32) | t[0]) << e;
        g = x / m->den;
        sticky = x % m->den != 0;
    } else {
        const int32_t d = -e;
        int i;
        sticky = q8_divmod_128x32(t, m->den) != 0;
        if (d >= 128) {
            sticky = sticky || q8_bit_length_128(t) != 0;
            t[0] = t[1] = t[2] = t[3] = 0;
        } else {
            /* The d bits shifted out of the quotient are below the half bit. */
            const int32_t words = d / 32, bits = d % 32;
            for (i = 0; i < words; i++) {
                sticky = sticky || t[i] != 0;
            }
            if (bits != 0 && words < 4) {
                sticky = sticky || (t[words] & (((uint32_t)1 << bits) - 1u)) != 0;
            }
            for (i = 0; i < 4; i++) {
                const int32_t from = i + words;
                uint32_t v = from < 4 ? t[from] >> bits : 0u;
                if (bits != 0 && from + 1 < 4) {
                    v |= t[from + 1] << (32 - bits);
                }
                t[i] = v;
            }
        }
        if (t[2] != 0 || t[3] != 0 || t[1] >= ((uint32_t)1 << 30)) {
            return negative ? -Q8_EXACT_SATURATION : Q8_EXACT_SATURATION;
        }
        g = ((uint64_t)t[1] << 32) | t[0];
    }
    q = g >> 1;
    if ((g & 1u) != 0 && (sticky || (q & 1u) != 0)) {
        q++;
    }
    if (q > (uint64_t)Q8_EXACT_SATURATION) {
        q = (uint64_t)Q8_EXACT_SATURATION;
    }
    return negative ? -(int64_t)q : (int64_t)q;
}

/*
 * The same result, from one 32 x 32 -> 64-bit product where that decides it. With
 * P = acc * mult and T = acc * M * 2^rshift the exact value (scaled), |P - T| <= |acc| / 2
 * since mult is M * 2^rshift rounded. The rounding boundaries of T are where
 * T + 2^(rshift - 1) is a multiple of 2^rshift: when t = P + 2^(rshift - 1) lies farther
 * than |acc| / 2 from every multiple, T lies strictly between the same two, is no tie,
 * and floor(t / 2^rshift) is the result. Otherwise (an accumulator beyond 31 bits, or
 * within |acc| / 2 of a boundary: about |acc| in 2^rshift) the exact path.
 * rshift is 33..62 (codegen/arith/exact_requant.py), so the half and the result lie in
 * t's high word and 32-bit operations do the rest.
 */
Q8_INLINE int32_t q8_requant_fast(int64_t acc, const q8_exact_multiplier *m)
{
    if (m->mult != 0 && acc > -(int64_t)0x7fffffff && acc < (int64_t)0x7fffffff) {
        const int32_t a = (int32_t)acc;
        const int64_t prod = (int64_t)a * m->mult; /* one SMULL; |prod| < 2^62 */
        const uint32_t k = (uint32_t)m->rshift - 32u;     /* 1..30 */
        /* t = prod + 2^(rshift - 1): the half lies in the high word (rshift >= 33) */
        const uint32_t lo = (uint32_t)(uint64_t)prod;
        const uint32_t hi = (uint32_t)((uint64_t)prod >> 32) + ((uint32_t)1 << (k - 1u));
        const uint32_t mask = ((uint32_t)1 << k) - 1u;
        const uint32_t err = (a < 0 ? 0u - (uint32_t)a : (uint32_t)a) / 2u + 1u;
        /* frac = t mod 2^rshift = (hi & mask):lo; the margin below the next multiple,
         * 2^rshift - 1 - frac, is (mask - (hi & mask)):(~lo) */
        const uint32_t frac_hi = hi & mask;
        if ((frac_hi != 0u || lo > err) && (frac_hi != mask || ~lo >= err)) {
            /* floor(t / 2^rshift) = the high word shifted, as a signed value, without
             * shifting a negative one; saturated as the exact path saturates */
            const int32_t q = (hi >> 31) != 0u ? -(int32_t)((~hi) >> k) - 1 : (int32_t)(hi >> k);
            return q > (int32_t)Q8_EXACT_SATURATION ? (int32_t)Q8_EXACT_SATURATION
                   : q < -(int32_t)Q8_EXACT_SATURATION ? -(int32_t)Q8_EXACT_SATURATION : q;
        }
    }
    return (int32_t)q8_requant_exact(acc, m); /* within +-2^30 */
}

#endif /* Q8_REQUANT_EXACT_H */
