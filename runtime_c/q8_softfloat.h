/*
 * q8_softfloat.h - float32 roundings computed with integers, for cores without an FPU.
 *
 * Where ONNX Runtime's arithmetic is float32 (QLinearAdd's fused multiply-adds,
 * QLinearSoftmax's row sum), the integer-only kernels (--requant int) reproduce it bit
 * for bit: a value is a signed 32-bit significand m and an exponent e (m * 2^e), an
 * exact sum of two such values is formed in 64 bits with a sticky bit for what shifts
 * out, and rounded once to 24 significant bits, ties to even, as IEEE-754 does.
 * No soft-float library routine is involved. Subnormal results are rounded as
 * IEEE-754 does; q8_sf_round_sum leaves overflow to its callers.
 */
#ifndef Q8_SOFTFLOAT_H
#define Q8_SOFTFLOAT_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "q8_arith.h"

typedef struct {
    int32_t m; /* 0, or |m| in [2^23, 2^24) once rounded */
    int32_t e;
} q8_sf;

/* The float32 with these bits, as m * 2^e. */
Q8_INLINE q8_sf q8_sf_from_bits(uint32_t bits)
{
    q8_sf r;
    const int32_t field = (int32_t)((bits >> 23) & 0xffu);
    int32_t m = (int32_t)(bits & 0x7fffffu);
    if (field != 0) {
        m |= 0x800000;
        r.e = field - 150;
    } else {
        r.e = -149;
    }
    r.m = (bits >> 31) ? -m : m;
    return r;
}

/* |v| shifted right by n >= 1 bits, with a sticky 1 in bit 0 for any bit lost. */
Q8_INLINE uint64_t q8_sf_shift_sticky(uint64_t v, int32_t n)
{
    if (n >= 64) {
        return v != 0u;
    }
    return (v >> n) | (uint64_t)((v & ((((uint64_t)1) << n) - 1u)) != 0u);
}

/* Number of significant bits of v. */
Q8_INLINE int32_t q8_sf_bits(uint64_t v)
{
    const uint32_t hi = (uint32_t)(v >> 32);
    return hi ? 32 + q8_bit_length32(hi) : q8_bit_length32((uint32_t)v);
}

/*
 * The float32 nearest (ties to even) to p * 2^ep + q * 2^eq, for |p|, |q| < 2^61.
 * Both terms are brought to 61 significant bits; the smaller one is aligned with a
 * sticky bit, far below the 24 bits kept, so one rounding of the sum is exact.
 */
Q8_INLINE q8_sf q8_sf_round_sum(int64_t p, int32_t ep, int64_t q, int32_t eq)
{
    q8_sf r;
    uint64_t big = (uint64_t)(p < 0 ? -p : p), small = (uint64_t)(q < 0 ? -q : q);
    int big_negative = p < 0, small_negative = q < 0;
    int32_t ebig = ep, esmall = eq, n, lost, keep;
    uint64_t sum, half, rest;
    if (big == 0u || (small != 0u && esmall + q8_sf_bits(small) > ebig + q8_sf_bits(big))) {
        uint64_t t = big;
        int32_t te = ebig, tn = big_negative;
        big = small;
        ebig = esmall;
        big_negative = small_negative;
        small = t;
        esmall = te;
        small_negative = tn;
    }
    if (big == 0u) {
        r.m = 0;
        r.e = 0;
        return r;
    }
    n = 61 - q8_sf_bits(big);
    big <<= n;
    ebig -= n;
    if (small != 0u) {
        n = 61 - q8_sf_bits(small);
        small <<= n;
        esmall -= n;
        small = q8_sf_shift_sticky(small, ebig - esmall);
    }
    if (big_negative == small_negative) {
        sum = big + small;
    } else if (big >= small) {
        sum = big - small;
    } else {
        /* equal top bits (nothing was shifted out), the second one larger */
        sum = small - big;
        big_negative = small_negative;
    }
    if (sum == 0u) {
        r.m = 0;
        r.e = 0;
        return r;
    }
    /* Keep 24 bits, or fewer where the result is subnormal (below 2^-126). */
    lost = q8_sf_bits(sum) - 24;
    if (ebig + lost < -149) {
        lost = -149 - ebig;
    }
    keep = ebig + lost;
    if (lost > 0) {
        rest = lost >= 64 ? sum : sum & ((((uint64_t)1) << lost) - 1u);
        half = lost > 64 ? 0u : ((uint64_t)1) << (lost - 1);
        sum = lost >= 64 ? 0u : sum >> lost;
        if (rest > half || (rest == half && (sum & 1u))) {
            sum++;
        }
        if (sum >> 24) {
            sum >>= 1;
            keep++;
        }
    } else {
        sum <<= -lost;
    }
    r.m = big_negative ? -(int32_t)sum : (int32_t)sum;
    r.e = keep;
    return r;
}

/*
 * x86's cvtps2dq of m * 2^e then saturation, as q8_round_saturate: round half to even;
 * a value outside the int32 range gives qmin (INT32_MIN, saturated).
 */
Q8_INLINE int32_t q8_sf_round_saturate(q8_sf v, int32_t qmin, int32_t qmax)
{
    const uint32_t mag = (uint32_t)(v.m < 0 ? -v.m : v.m);
    uint32_t q;
    int32_t r;
    if (mag == 0u || v.e <= -25) {
        r = 0; /* |v| < 0.5 */
    } else if (v.e >= 0) {
        if (v.e + q8_sf_bits(mag) > 31) {
            return qmin; /* |v| >= 2^31 */
        }
        r = (int32_t)(mag << v.e);
        r = v.m < 0 ? -r : r;
    } else {
        const int32_t n = -v.e;
        const uint32_t rest = mag & ((1u << n) - 1u), half = 1u << (n - 1);
        q = mag >> n;
        if (rest > half || (rest == half && (q & 1u))) {
            q++;
        }
        r = v.m < 0 ? -(int32_t)q : (int32_t)q;
    }
    return r < qmin ? qmin : (r > qmax ? qmax : r);
}

/* The sum of two non-negative float32 values, as float32 bits (overflow gives inf). */
Q8_INLINE uint32_t q8_sf_add_positive(uint32_t a, uint32_t b)
{
    const q8_sf x = q8_sf_from_bits(a), y = q8_sf_from_bits(b);
    q8_sf s;
    int32_t field;
    if (((a >> 23) & 0xffu) == 0xffu || ((b >> 23) & 0xffu) == 0xffu) {
        return 0x7f800000u; /* inf stays inf (the inputs are never NaN) */
    }
    s = q8_sf_round_sum(x.m, x.e, y.m, y.e);
    if (s.m == 0) {
        return 0u;
    }
    field = s.e + 150;
    if (s.m < 0x800000) {
        return (uint32_t)s.m; /* subnormal: exponent field 0 */
    }
    if (field >= 0xff) {
        return 0x7f800000u;
    }
    return ((uint32_t)field << 23) | ((uint32_t)s.m & 0x7fffffu);
}

/* The float32 m * 2^e (zero: +0), overflowing to infinity. */
Q8_INLINE float q8_sf_to_float(q8_sf v, int negative_zero)
{
    uint32_t bits, mag = (uint32_t)(v.m < 0 ? -v.m : v.m);
    float f;
    if (mag == 0u) {
        bits = negative_zero ? 0x80000000u : 0u;
    } else if (mag < 0x800000u) {
        bits = mag; /* subnormal: e == -149 */
    } else if (v.e + 150 >= 0xff) {
        bits = 0x7f800000u;
    } else {
        bits = ((uint32_t)(v.e + 150) << 23) | (mag & 0x7fffffu);
    }
    if (v.m < 0) {
        bits |= 0x80000000u;
    }
    memcpy(&f, &bits, sizeof f);
    return f;
}

/*
 * fmaf(a, b, c) with one rounding. Hosts and cores with a hardware FMA have an exact
 * fmaf; newlib's soft-float fmaf goes through double and can round twice, so cores
 * without an FMA unit (or Q8_SOFT_FMA) use this integer form, exact for finite values.
 * RV32 cores without F take it too (the C library's is not trusted to round once).
 */
#if defined(Q8_SOFT_FMA) || (defined(__arm__) && !defined(__ARM_FEATURE_FMA)) || \
    (defined(__riscv) && !defined(__riscv_flen))
Q8_INLINE float q8_fmaf(float a, float b, float c)
{
    uint32_t ab, bb, cb;
    q8_sf x, y, z, r;
    memcpy(&ab, &a, sizeof ab);
    memcpy(&bb, &b, sizeof bb);
    memcpy(&cb, &c, sizeof cb);
    if (((ab >> 23) & 0xffu) == 0xffu || ((bb >> 23) & 0xffu) == 0xffu ||
        ((cb >> 23) & 0xffu) == 0xffu) {
        return fmaf(a, b, c); /* infinities and NaNs round nothing */
    }
    x = q8_sf_from_bits(ab);
    y = q8_sf_from_bits(bb);
    z = q8_sf_from_bits(cb);
    r = q8_sf_round_sum((int64_t)x.m * y.m, x.e + y.e, z.m, z.e);
    /* An exact zero is -0 only when the product and c are both -0 (or negative zeros). */
    return q8_sf_to_float(r, r.m == 0 && ((ab ^ bb) >> 31) && (cb >> 31) &&
                                 (x.m == 0 || y.m == 0) && z.m == 0);
}
#else
#define q8_fmaf fmaf
#endif

#endif /* Q8_SOFTFLOAT_H */
