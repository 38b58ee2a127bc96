/*
 * q8_libm.h - the C library's logf as ONNX Runtime calls it on x86-64 Linux.
 *
 * ORT calls std::log for a few scalars (LogSoftmax's log of each row's sum). glibc 2.28
 * and later compute logf with Arm's optimized-routines algorithm, in double precision:
 * x = 2^k * z with z in [0x1.66p-1, 0x1.66p0), a 16-entry table of 1/c and log(c) for
 * the subinterval of z, and log(x) = k*ln2 + log(c) + log1p(z/c - 1), the last by a
 * degree-4 polynomial. The result is not always correctly rounded, so onnx2mcu runs the
 * same algorithm with the same constants (Arm Limited's, MIT licence: the table is data
 * that decides every rounding). Measured against glibc 2.36's logf on all 2^32 inputs,
 * with and without fused multiply-adds (its FMA build): 0 differences. Doubles are IEEE
 * operations, in software on a single-precision FPU: exact there too.
 */
#ifndef Q8_LIBM_H
#define Q8_LIBM_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "q8_arith.h"

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

Q8_INLINE float q8_glibc_logf(float x)
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
            return (float)NAN;
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

#endif /* Q8_LIBM_H */
