/*
 * q8_float.h - float32 arithmetic of ONNX Runtime's CPU kernels (MLAS, x86-64) that the
 * float-island kernels share. Every operation rounds to float32 once, in ORT's order;
 * products that ORT rounds before adding go through q8_mul_unfused.
 */
#ifndef Q8_FLOAT_H
#define Q8_FLOAT_H

#include <math.h>
#include <stdint.h>

#include "q8_arith.h"
#include "q8_softfloat.h"

/*
 * MLAS's SGEMM blocking of an N x K product: N is cut into stride_n columns and K into
 * stride_k blocks, starting from 128 x 128 and trading one for the other so that a
 * block fits the smaller dimension.
 */
Q8_INLINE void q8_f32_blocking(int32_t n, int32_t k, int32_t *stride_n, int32_t *stride_k)
{
    int32_t sn = 128, sk = 128;
    if (n >= k) {
        while (sk / 2 >= k) {
            sn *= 2;
            sk /= 2;
        }
    } else {
        while (sn > 16 && sn / 2 >= n) {
            sk *= 2;
            sn /= 2;
        }
    }
    *stride_n = sn;
    *stride_k = sk;
}

/*
 * The lane reduction of MLAS's single-row SGEMM kernel for B stored [N][K]
 * (KernelM1TransposeBRoutine): eight lane sums l[k % 8], reduced in an order that
 * depends on the output's position: group 4 for outputs in full groups of four, 2 for
 * the pair after them, 1 for a last odd output.
 */
Q8_INLINE float q8_mlas_m1t_reduce(const float l[8], int group)
{
    if (group == 4) {
        const float lo = (float)((float)((float)(l[0] + l[1]) + l[2]) + l[3]);
        const float hi = (float)((float)((float)(l[4] + l[5]) + l[6]) + l[7]);
        return (float)(lo + hi);
    }
    if (group == 2) {
        const float even = (float)((float)(l[0] + l[2]) + (float)(l[4] + l[6]));
        const float odd = (float)((float)(l[1] + l[3]) + (float)(l[5] + l[7]));
        return (float)(even + odd);
    }
    return (float)((float)((float)(l[0] + l[1]) + (float)(l[2] + l[3])) +
                   (float)((float)(l[4] + l[5]) + (float)(l[6] + l[7])));
}

/* The group of output i of count outputs in q8_mlas_m1t_reduce. */
Q8_INLINE int q8_mlas_m1t_group(int32_t i, int32_t count)
{
    const int32_t full = count - count % 4;
    if (i < full) {
        return 4;
    }
    return count % 4 >= 2 && i < full + 2 ? 2 : 1;
}

/*
 * MlasComputeLogistic (the FMA3 kernel): x clamped to [-18, 18], odd polynomial p and
 * even polynomial q in x^2 by fused multiply-adds, p/q + 0.5, then max with 0. The
 * constants are MLAS's, rounded to float32 (hexadecimal, so that no compiler rounds twice).
 */
Q8_INLINE float q8_mlas_logistic(float x)
{
    float v, x2, p, q, r;
    if (x != x) {
        return x;
    }
    v = x > -18.0f ? x : -18.0f;
    v = v < 18.0f ? v : 18.0f;
    x2 = q8_mul_unfused(v, v);
    p = q8_fmaf(x2, 0x1.806aa2p-35f, 0x1.f09d96p-24f);
    p = q8_fmaf(p, x2, 0x1.fe8276p-15f);
    p = q8_fmaf(p, x2, 0x1.16fabp-7f);
    p = q8_fmaf(p, x2, 0x1.fc7e64p-3f);
    q = q8_fmaf(x2, 0x1.5789eap-41f, 0x1.8be4f6p-28f);
    q = q8_fmaf(q, x2, 0x1.a62fbap-18f);
    q = q8_fmaf(q, x2, 0x1.be2a7ep-10f);
    q = q8_fmaf(q, x2, 0x1.de7c3p-4f);
    q = q8_fmaf(q, x2, 0x1.fc7e68p-1f);
    p = q8_mul_unfused(v, p);
    r = (float)((float)(p / q) + 0.5f);
    if (r != r) {
        return r;
    }
    return r > 0.0f ? r : 0.0f;
}

/*
 * Tanh as ORT 1.32 computes it (Eigen's rational approximation, FMA3): x clamped to
 * [-9, 9] (a NaN passes), an odd numerator of degree 13 over an even denominator of
 * degree 6 in x^2, both by fused multiply-adds, one division.
 */
Q8_INLINE float q8_mlas_tanh(float x)
{
    float v = (-9.0f > x) ? -9.0f : x;
    float x2, p, q;
    v = (9.0f < v) ? 9.0f : v;
    x2 = q8_mul_unfused(v, v);
    p = q8_fmaf(x2, -0x1.3e4b8p-52f, 0x1.c266fcp-43f);
    p = q8_fmaf(p, x2, -0x1.7a6ffep-34f);
    p = q8_fmaf(p, x2, 0x1.b80082p-25f);
    p = q8_fmaf(p, x2, 0x1.f28694p-17f);
    p = q8_fmaf(p, x2, 0x1.4e1bdap-11f);
    p = q8_fmaf(p, x2, 0x1.40b3b8p-8f);
    p = q8_mul_unfused(p, v);
    q = q8_fmaf(x2, 0x1.41a7bp-20f, 0x1.f12bacp-14f);
    q = q8_fmaf(q, x2, 0x1.29540ap-9f);
    q = q8_fmaf(q, x2, 0x1.40b3bap-8f);
    return (float)(p / q);
}

/*
 * MlasComputeExp (the AVX-512F kernel, also the exponentials of Softmax's row sums): the
 * argument clamped below at -103.972 (a NaN passes), split as r + m*ln2 with m rounded
 * to nearest (ln2 in two parts), a degree-6 polynomial in r by fused multiply-adds, and
 * one scaling by 2^m (vscalefps: one rounding, overflow to infinity). Measured against
 * ORT 1.32 on all 2^32 inputs: the same bits (NaN for NaN).
 */
Q8_INLINE float q8_mlas_exp(float v)
{
    float m, r, p;
    if (v == HUGE_VALF) {
        return v; /* measured: ORT's exp(+inf) is +inf */
    }
    v = (-103.9720840454f > v) ? -103.9720840454f : v;
    m = (float)(q8_fmaf(v, 1.44269504088896341f, 12582912.0f) - 12582912.0f);
    if (m != m) {
        return m;
    }
    r = q8_fmaf(m, -6.93145752e-1f, v);
    r = q8_fmaf(m, -1.42860677e-6f, r);
    p = q8_fmaf(0x1.694p-10f, r, 0x1.125edcp-7f);
    p = q8_fmaf(p, r, 0x1.555b5ap-5f);
    p = q8_fmaf(p, r, 0x1.55545p-3f);
    p = q8_fmaf(p, r, 0x1.fffff6p-2f);
    p = q8_fmaf(p, r, 1.0f);
    p = q8_fmaf(p, r, 1.0f);
    /* Past 2^8 every p (in [0.7, 1.5]) overflows alike; the cap keeps the int in range. */
    return ldexpf(p, m > 256.0f ? 256 : (int)m);
}

/*
 * MlasErfKernelFma3 (ORT's Erf on x86-64 with AVX2 and FMA, every lane alike): |x| capped
 * at 3.925 (ORT 1.32's constant); below 0.921875 an odd polynomial in x^2 by fused
 * multiply-adds, else 1 - exp(-(a + a*p(a))) with MLAS's exp steps (rounding constant,
 * two-part ln 2, a degree-6 polynomial, then 2^t); the sign put back. The constants are
 * MLAS's as float32 (hex: no decimal double rounding).
 */
Q8_INLINE float q8_mlas_erf(float x)
{
    float a, result;
    uint32_t bits;
    if (x != x) {
        return x;
    }
    memcpy(&bits, &x, sizeof bits);
    a = fabsf(x);
    a = a < 0x1.f66666p+1f ? a : 0x1.f66666p+1f;
    if (a < 0x1.d8p-1f) {
        const float s = q8_mul_unfused(a, a);
        float p = q8_fmaf(-0x1.3a1a82p-11f, s, 0x1.473f48p-8f);
        p = q8_fmaf(p, s, -0x1.b68bd2p-6f);
        p = q8_fmaf(p, s, 0x1.ce1a46p-4f);
        p = q8_fmaf(p, s, -0x1.8126ep-2f);
        p = q8_fmaf(p, s, 0x1.06eba6p-3f);
        result = q8_fmaf(p, a, a);
    } else {
        float r, t, f, y;
        r = q8_fmaf(0x1.2229p-16f, a, -0x1.91d2ccp-12f);
        r = q8_fmaf(r, a, 0x1.fd1336p-9f);
        r = q8_fmaf(r, a, -0x1.8d63p-6f);
        r = q8_fmaf(r, a, 0x1.b55cbp-4f);
        r = q8_fmaf(r, a, 0x1.450aap-1f);
        r = q8_fmaf(r, a, 0x1.079d0cp-3f);
        r = -q8_fmaf(r, a, a);
        r = r > -0x1.61814ap+6f ? r : -0x1.61814ap+6f;
        t = (float)(q8_fmaf(0x1.715476p+0f, r, 12582912.0f) - 12582912.0f);
        f = q8_fmaf(t, -0x1.62e4p-1f, r);
        f = q8_fmaf(t, -0x1.7f7d1cp-20f, f);
        y = q8_fmaf(0x1.6a98dap-10f, f, 0x1.1272cap-7f);
        y = q8_fmaf(y, f, 0x1.555a2p-5f);
        y = q8_fmaf(y, f, 0x1.55542ep-3f);
        y = q8_fmaf(y, f, 0x1.fffff6p-2f);
        y = q8_fmaf(y, f, 1.0f);
        y = q8_fmaf(y, f, 1.0f);
        /* t is an integer in [-128, 0]: 2^t exactly. */
        result = (float)(1.0f - q8_mul_unfused(y, ldexpf(1.0f, (int)t)));
    }
    return (bits >> 31) ? -result : result;
}

#endif /* Q8_FLOAT_H */
