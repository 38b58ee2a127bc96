/*
 * libm.c - the C library's logf, powf and expf as ONNX Runtime calls them on Linux
 * (q8_libm.h says why and how they were measured). Out of line: the double-precision
 * steps are long in software, and every caller shares one copy.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "q8_arith.h"
#include "q8_libm.h"

/*
 * The NaN glibc returns for an invalid argument: (x - x) / (x - x), the default NaN of
 * the CPU, which on x86-64 (where ORT is compared) has its sign bit set. Spelled out so
 * that every core returns the same bits.
 */
static float q8_invalid_nan(void)
{
    const uint32_t bits = 0xffc00000u;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* 1/c and log(c) for z's subinterval (index: bits 19..22 of z's bits - 0x3f330000). */
static const double q8_logf_inverse_c[16] = {
    0x1.661ec79f8f3bep+0, 0x1.571ed4aaf883dp+0, 0x1.49539f0f010bp+0, 0x1.3c995b0b80385p+0,
    0x1.30d190c8864a5p+0, 0x1.25e227b0b8eap+0,  0x1.1bb4a4a1a343fp+0, 0x1.12358f08ae5bap+0,
    0x1.0953f419900a7p+0, 0x1p+0,               0x1.e608cfd9a47acp-1, 0x1.ca4b31f026aap-1,
    0x1.b2036576afce6p-1, 0x1.9c2d163a1aa2dp-1, 0x1.886e6037841edp-1, 0x1.767dcf5534862p-1};
static const double q8_logf_log_c[16] = {
    -0x1.57bf7808caadep-2, -0x1.2bef0a7c06ddbp-2, -0x1.01eae7f513a67p-2, -0x1.b31d8a68224e9p-3,
    -0x1.6574f0ac07758p-3, -0x1.1aa2bc79c81p-3,   -0x1.a4e76ce8c0e5ep-4, -0x1.1973c5a611cccp-4,
    -0x1.252f438e10c1ep-5, 0x0p+0,                0x1.aa5aa5df25984p-5,  0x1.c5e53aa362eb4p-4,
    0x1.526e57720db08p-3,  0x1.bc2860d22477p-3,   0x1.1058bc8a07ee1p-2,  0x1.4043057b6ee09p-2};

float q8_glibc_logf(float x)
{
    uint32_t bits, offset, z_bits;
    int32_t k;
    int index;
    float z32;
    double z, r, r2, y;
    memcpy(&bits, &x, sizeof bits);
    if (bits == 0x3f800000u) {
        return 0.0f;
    }
    if (bits - 0x00800000u >= 0x7f000000u) { /* zero, subnormal, negative, inf or NaN */
        if ((bits & 0x7fffffffu) == 0u) {
            return -HUGE_VALF;
        }
        if (bits == 0x7f800000u || (bits & 0x7fffffffu) > 0x7f800000u) {
            return x;
        }
        if (bits >> 31) {
            return q8_invalid_nan();
        }
        x = x * 0x1p23f; /* a subnormal, made normal (exact) */
        memcpy(&bits, &x, sizeof bits);
        bits -= 23u << 23;
    }
    offset = bits - 0x3f330000u;
    index = (int)((offset >> 19) & 15u);
    k = (int32_t)(offset & 0xff800000u) / (1 << 23); /* exact: a multiple of 2^23 */
    z_bits = bits - (offset & 0xff800000u);
    memcpy(&z32, &z_bits, sizeof z32);
    z = (double)z32;
    r = z * q8_logf_inverse_c[index] - 1.0; /* exact: 1/c has few enough bits */
    r2 = r * r;
    y = -0x1.00ea348b88334p-2 * r2 + (0x1.5575b0be00b6ap-2 * r + -0x1.ffffef20a4123p-2);
    y = y * r2 + ((q8_logf_log_c[index] + (double)k * 0x1.62e42fefa39efp-1) + r);
    return (float)y;
}

/*
 * fma(a, b, c) in double with one rounding (ties to even). glibc's FMA build of powf
 * fuses its multiply-adds; cores without a double-precision FMA (every Cortex-M) and
 * newlib's fma() do not round once, so those (and Q8_SOFT_FMA) use this integer form:
 * the 106-bit product and c aligned in 128 bits with 20 guard bits and a sticky bit,
 * added, then rounded to 53 bits. Exact for finite values.
 */
typedef struct {
    uint64_t hi;
    uint64_t lo;
} q8_u128;

static q8_u128 q8_u128_shift_left(q8_u128 v, int n)
{
    if (n == 0) {
        return v;
    }
    if (n >= 64) {
        v.hi = v.lo << (n - 64);
        v.lo = 0u;
    } else {
        v.hi = (v.hi << n) | (v.lo >> (64 - n));
        v.lo <<= n;
    }
    return v;
}

/* v >> n, with every bit shifted out ORed into the lowest bit (sticky). */
static q8_u128 q8_u128_shift_right_sticky(q8_u128 v, int n)
{
    uint64_t lost;
    if (n == 0) {
        return v;
    }
    if (n >= 128) {
        lost = v.hi | v.lo;
        v.hi = 0u;
        v.lo = lost != 0u;
        return v;
    }
    if (n >= 64) {
        lost = v.lo | (n > 64 ? v.hi << (128 - n) : 0u);
        v.lo = n > 64 ? v.hi >> (n - 64) : v.hi;
        v.hi = 0u;
    } else {
        lost = v.lo << (64 - n);
        v.lo = (v.lo >> n) | (v.hi << (64 - n));
        v.hi >>= n;
    }
    v.lo |= lost != 0u;
    return v;
}

static uint64_t q8_u128_bit(q8_u128 v, int i)
{
    return (i >= 64 ? v.hi >> (i - 64) : v.lo >> i) & 1u;
}

/* Is any of bits 0 .. n-1 of v set? */
static int q8_u128_any_below(q8_u128 v, int n)
{
    if (n <= 0) {
        return 0;
    }
    if (n >= 128) {
        return v.lo != 0u || v.hi != 0u;
    }
    if (n >= 64) {
        return v.lo != 0u || (n > 64 && (v.hi << (128 - n)) != 0u);
    }
    return (v.lo << (64 - n)) != 0u;
}

/* The significand and exponent of a finite non-zero double: |d| = m * 2^e. */
static uint64_t q8_f64_parts(double d, int *e)
{
    uint64_t bits, m;
    int field;
    memcpy(&bits, &d, sizeof bits);
    field = (int)((bits >> 52) & 0x7ffu);
    m = bits & 0xfffffffffffffu;
    if (field != 0) {
        m |= (uint64_t)1 << 52;
        *e = field - 1075;
    } else {
        *e = -1074;
    }
    return m;
}

double q8_fma_integer(double a, double b, double c)
{
    uint64_t ma, mb, mc, a0, a1, b0, b1, mid, m, half, bits;
    int rest;
    int ea, eb, ec, ep, e, top, shift, negative;
    q8_u128 p, q, s;
    double r;
    if (a - a != 0.0 || b - b != 0.0 || a == 0.0 || b == 0.0) {
        return a * b + c; /* an infinite, NaN or zero product: nothing to round */
    }
    if (c - c != 0.0) {
        return c; /* a finite product plus an infinity or a NaN */
    }
    ma = q8_f64_parts(a, &ea);
    mb = q8_f64_parts(b, &eb);
    a0 = ma & 0xffffffffu;
    a1 = ma >> 32;
    b0 = mb & 0xffffffffu;
    b1 = mb >> 32;
    mid = a1 * b0 + ((a0 * b0) >> 32) + ((a0 * b1) & 0xffffffffu); /* below 2^54 */
    p.lo = ma * mb;
    p.hi = a1 * b1 + (mid >> 32) + ((a0 * b1) >> 32);
    p = q8_u128_shift_left(p, 20); /* below 2^126: 20 guard bits */
    ep = ea + eb - 20;
    negative = (a < 0.0) != (b < 0.0);
    if (c != 0.0) {
        const int c_negative = c < 0.0;
        mc = q8_f64_parts(c, &ec);
        q.hi = 0u;
        q.lo = mc;
        q = q8_u128_shift_left(q, 73); /* below 2^126 too */
        ec -= 73;
        if (ec > ep) { /* align to the smaller exponent, or shift it out into sticky */
            const int d = ec - ep;
            if (d <= 1) {
                q = q8_u128_shift_left(q, d);
                ec = ep;
            } else {
                p = q8_u128_shift_right_sticky(p, d);
                ep = ec;
            }
        } else if (ep > ec) {
            const int d = ep - ec;
            if (d <= 1) {
                p = q8_u128_shift_left(p, d);
                ep = ec;
            } else {
                q = q8_u128_shift_right_sticky(q, d);
            }
        }
        if (c_negative == negative) {
            s.lo = p.lo + q.lo;
            s.hi = p.hi + q.hi + (s.lo < p.lo);
        } else if (p.hi > q.hi || (p.hi == q.hi && p.lo >= q.lo)) {
            s.lo = p.lo - q.lo;
            s.hi = p.hi - q.hi - (p.lo < q.lo);
        } else {
            s.lo = q.lo - p.lo;
            s.hi = q.hi - p.hi - (q.lo < p.lo);
            negative = c_negative;
        }
        if (s.hi == 0u && s.lo == 0u) {
            return 0.0; /* an exact zero sum of opposite signs is +0 */
        }
        p = s;
    }
    /* Round p * 2^ep to 53 bits (fewer for a subnormal result). */
    top = 127;
    while (top > 0 && !((top >= 64 ? p.hi >> (top - 64) : p.lo >> top) & 1u)) {
        top--;
    }
    shift = top - 52;
    if (ep + shift < -1074) {
        shift = -1074 - ep;
    }
    e = ep + shift;
    if (shift <= 0) {
        m = q8_u128_shift_left(p, -shift).lo;
    } else {
        if (shift >= 128) {
            m = 0u;
        } else if (shift >= 64) {
            m = p.hi >> (shift - 64);
        } else {
            m = (p.lo >> shift) | (p.hi << (64 - shift));
        }
        half = shift <= 128 ? q8_u128_bit(p, shift - 1) : 0u;
        rest = q8_u128_any_below(p, shift - 1);
        if (half && (rest || (m & 1u))) {
            m++;
            if (m >> 53) {
                m >>= 1;
                e++;
            }
        }
    }
    if (m >> 52) { /* normal */
        if (e + 1075 >= 0x7ff) {
            return negative ? -HUGE_VAL : HUGE_VAL;
        }
        bits = ((uint64_t)(e + 1075) << 52) | (m & 0xfffffffffffffu);
    } else {
        bits = m; /* subnormal, e == -1074 */
    }
    bits |= (uint64_t)negative << 63;
    memcpy(&r, &bits, sizeof r);
    return r;
}

#if defined(Q8_SOFT_FMA) || defined(__arm__) || \
    (defined(__riscv) && !(defined(__riscv_flen) && __riscv_flen >= 64))
#define q8_fma q8_fma_integer
#else
#define q8_fma fma
#endif

/*
 * powf, as glibc 2.28+ computes it (Arm's algorithm): log2(x) in double from a 16-entry
 * table and a degree-5 polynomial, times y, then 2^(y*log2 x) from a 32-entry table of
 * 2^(i/32) and a degree-3 polynomial. x < 0 takes an integer y only (the sign from an odd
 * y); zeros, infinities and NaNs as C99 says. The multiply-adds are fused, as in the
 * build glibc runs on x86-64 CPUs with FMA and AVX2 (without them glibc's unfused build
 * rounds a few results otherwise: 1 in 2^32 for y = -2.2). Measured against glibc 2.36's
 * powf on all 2^31 positive normal x for 16 exponents (0.1 to 10, negative ones, 1/3):
 * 0 differences.
 */
static const double q8_powf_log2_c[16] = {
    -0x1.efec65b963019p-2, -0x1.b0b6832d4fca4p-2, -0x1.7418b0a1fb77bp-2, -0x1.39de91a6dcf7bp-2,
    -0x1.01d9bf3f2b631p-2, -0x1.97c1d1b3b7afp-3,  -0x1.2f9e393af3c9fp-3, -0x1.960cbbf788d5cp-4,
    -0x1.a6f9db6475fcep-5, 0x0p+0,                0x1.338ca9f24f53dp-4,  0x1.476a9543891bap-3,
    0x1.e840b4ac4e4d2p-3,  0x1.40645f0c6651cp-2,  0x1.88e9c2c1b9ff8p-2,  0x1.ce0a44eb17bccp-2};
/* The bits of 2^(i/32), less i << 47 (added back with the integer part of the power). */
static const uint64_t q8_exp2f_table[32] = {
    0x3ff0000000000000u, 0x3fefd9b0d3158574u, 0x3fefb5586cf9890fu, 0x3fef9301d0125b51u,
    0x3fef72b83c7d517bu, 0x3fef54873168b9aau, 0x3fef387a6e756238u, 0x3fef1e9df51fdee1u,
    0x3fef06fe0a31b715u, 0x3feef1a7373aa9cbu, 0x3feedea64c123422u, 0x3feece086061892du,
    0x3feebfdad5362a27u, 0x3feeb42b569d4f82u, 0x3feeab07dd485429u, 0x3feea47eb03a5585u,
    0x3feea09e667f3bcdu, 0x3fee9f75e8ec5f74u, 0x3feea11473eb0187u, 0x3feea589994cce13u,
    0x3feeace5422aa0dbu, 0x3feeb737b0cdc5e5u, 0x3feec49182a3f090u, 0x3feed503b23e255du,
    0x3feee89f995ad3adu, 0x3feeff76f2fb5e47u, 0x3fef199bdd85529cu, 0x3fef3720dcef9069u,
    0x3fef5818dcfba487u, 0x3fef7c97337b9b5fu, 0x3fefa4afa2a490dau, 0x3fefd0765b6e4540u};

/* log2 of the normal (or normalized) positive float with these bits, in double. */
static double q8_powf_log2(uint32_t bits)
{
    const uint32_t offset = bits - 0x3f330000u;
    const int index = (int)((offset >> 19) & 15u);
    const int32_t k = (int32_t)(offset & 0xff800000u) / (1 << 23);
    const uint32_t z_bits = bits - (offset & 0xff800000u);
    float z32;
    double r, r2, y, p, q;
    memcpy(&z32, &z_bits, sizeof z32);
    r = q8_fma((double)z32, q8_logf_inverse_c[index], -1.0);
    r2 = r * r;
    y = q8_fma(0x1.27616c9496e0bp-2, r, -0x1.71969a075c67ap-2);
    p = q8_fma(0x1.ec70a6ca7baddp-2, r, -0x1.7154748bef6c8p-1);
    q = q8_fma(0x1.71547652ab82bp0, r, q8_powf_log2_c[index] + (double)k);
    q = q8_fma(p, r2, q);
    return q8_fma(y, r2 * r2, q);
}

/* 2^v rounded to float, negated when negative is set, for |v| < 150. */
static float q8_powf_exp2(double v, int negative)
{
    const double shift = 0x1.8p+52 / 32.0;
    double rounded = v + shift, r, y, s;
    uint64_t k, bits;
    memcpy(&k, &rounded, sizeof k);
    rounded -= shift; /* v to the nearest 1/32 */
    r = v - rounded;
    bits = q8_exp2f_table[k % 32u] + ((k + (negative ? 1u << 16 : 0u)) << 47);
    memcpy(&s, &bits, sizeof s);
    y = q8_fma(q8_fma(0x1.c6af84b912394p-5, r, 0x1.ebfce50fac4f3p-3), r * r,
               q8_fma(0x1.62e42ff0c52d6p-1, r, 1.0));
    return (float)(y * s);
}

/* 0: y is not an integer, 1: an odd integer, 2: an even one (y finite, non-zero). */
static int q8_powf_integer_kind(uint32_t y_bits)
{
    const int e = (int)((y_bits >> 23) & 0xffu);
    if (e < 0x7f) {
        return 0;
    }
    if (e > 0x7f + 23) {
        return 2;
    }
    if (y_bits & ((1u << (0x7f + 23 - e)) - 1u)) {
        return 0;
    }
    return (y_bits & (1u << (0x7f + 23 - e))) ? 1 : 2;
}

float q8_glibc_powf(float x, float y)
{
    uint32_t xb, yb;
    int negative = 0;
    double v;
    memcpy(&xb, &x, sizeof xb);
    memcpy(&yb, &y, sizeof yb);
    if (2u * yb - 1u >= 2u * 0x7f800000u - 1u) { /* y is zero, infinite or NaN */
        if (2u * yb == 0u || xb == 0x3f800000u) {
            return 1.0f;
        }
        if (2u * xb > 2u * 0x7f800000u || 2u * yb > 2u * 0x7f800000u) {
            return x + y;
        }
        if (2u * xb == 2u * 0x3f800000u) {
            return 1.0f;
        }
        if ((2u * xb < 2u * 0x3f800000u) == !(yb >> 31)) {
            return 0.0f;
        }
        return y * y;
    }
    if (2u * xb - 1u >= 2u * 0x7f800000u - 1u) { /* x is zero, infinite or NaN */
        float x2 = x * x;
        if ((xb >> 31) && q8_powf_integer_kind(yb) == 1) {
            x2 = -x2;
        }
        return (yb >> 31) ? 1.0f / x2 : x2;
    }
    if (xb >> 31) {
        const int kind = q8_powf_integer_kind(yb);
        if (kind == 0) {
            return q8_invalid_nan();
        }
        negative = kind == 1;
        xb &= 0x7fffffffu;
    }
    if (xb < 0x00800000u) { /* subnormal: normalized, with a negative exponent field */
        float normal;
        memcpy(&normal, &xb, sizeof normal);
        normal *= 0x1p23f;
        memcpy(&xb, &normal, sizeof xb);
        xb = (xb & 0x7fffffffu) - (23u << 23);
    }
    v = (double)y * q8_powf_log2(xb);
    if (v > 0x1.fffffffd1d571p+6) {
        return negative ? -HUGE_VALF : HUGE_VALF;
    }
    if (v <= -150.0) {
        return negative ? -0.0f : 0.0f;
    }
    return q8_powf_exp2(v, negative);
}

/*
 * expf, as glibc 2.28+ computes it (Arm's algorithm): k = round(x * 32/ln2) by the
 * 1.5 * 2^52 shift, r = x * 32/ln2 - k, 2^(k/32) from the table above times a degree-3
 * polynomial in r, in double. The product x * 32/ln2 is fused into both the shift and r,
 * and the polynomial's multiply-adds too, as in the build glibc runs on CPUs with FMA
 * and AVX2. Measured against glibc 2.36's expf on all 2^32 inputs: 0 differences (the
 * unfused build differs on 2).
 */
float q8_glibc_expf(float x)
{
    const double scaled_inverse_ln2 = 0x1.71547652b82fep+0 * 32.0, shift = 0x1.8p+52;
    uint32_t bits;
    uint64_t k, scale_bits;
    double rounded, r, s, y;
    memcpy(&bits, &x, sizeof bits);
    if (((bits >> 20) & 0x7ffu) >= 0x42bu) { /* |x| >= 88, an infinity or a NaN */
        if (bits == 0xff800000u) {
            return 0.0f;
        }
        if (((bits >> 20) & 0x7ffu) >= 0x7f8u) {
            return x + x;
        }
        if (x > 0x1.62e42ep6f) {
            return HUGE_VALF;
        }
        if (x < -0x1.9fe368p6f) {
            return 0.0f;
        }
    }
    rounded = q8_fma(scaled_inverse_ln2, (double)x, shift);
    memcpy(&k, &rounded, sizeof k);
    rounded -= shift;
    r = q8_fma(scaled_inverse_ln2, (double)x, -rounded);
    scale_bits = q8_exp2f_table[k % 32u] + (k << 47);
    memcpy(&s, &scale_bits, sizeof s);
    y = q8_fma(q8_fma(0x1.c6af84b912394p-5 / 32768.0, r, 0x1.ebfce50fac4f3p-3 / 1024.0),
               r * r, q8_fma(0x1.62e42ff0c52d6p-1 / 32.0, r, 1.0));
    return (float)(y * s);
}

