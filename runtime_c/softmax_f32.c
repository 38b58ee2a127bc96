/*
 * softmax_f32.c - float32 Softmax (float islands), as ONNX Runtime computes it with MLAS's
 * AVX-512F kernels (one thread):
 *   m = the row maximum;
 *   e[i] = exp(x[i] - m) by MLAS's approximation: the argument clamped at -103.972, split
 *          as r + n*ln2 (n rounded to nearest, ln2 in two parts), a degree-6 polynomial in
 *          r by fused multiply-adds, scaled by 2^n with one rounding;
 *   sum  = sixteen lane sums L[i % 16] in row order, folded as t[j] = L[j + 8] + L[j], then
 *          ((t0 + t1) + (t2 + t3)) + ((t4 + t5) + (t6 + t7));
 *   y[i] = e[i] * (1 / sum).
 * The row runs along a strided axis: element i of row (o, j) is x[(o*length + i)*inner + j].
 */
#include <math.h>

#include "q8_arith.h"
#include "q8_runtime.h"
#include "q8_softfloat.h"

Q8_INLINE float mlas_exp(float v)
{
    float m, r, p;
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
    return ldexpf(p, (int)m);
}

void q8_softmax_f32(const q8_softmax_f32_params *params, const float *Q8_RESTRICT input,
                    float *Q8_RESTRICT output)
{
    const int32_t length = params->length, inner = params->inner;
    int32_t outer, j, i;
    for (outer = 0; outer < params->outer; outer++) {
        for (j = 0; j < inner; j++) {
            const size_t base = (size_t)outer * (size_t)length * (size_t)inner + (size_t)j;
            const float *x = input + base;
            float *y = output + base;
            float lane[16];
            float t[8];
            float maximum = x[0], negated, sum, scale;
            for (i = 0; i < 16; i++) {
                lane[i] = 0.0f;
            }
            for (i = 1; i < length; i++) {
                const float v = x[(size_t)i * (size_t)inner];
                maximum = v > maximum ? v : maximum;
            }
            negated = -maximum;
            for (i = 0; i < length; i++) {
                const float e = mlas_exp((float)(x[(size_t)i * (size_t)inner] + negated));
                y[(size_t)i * (size_t)inner] = e;
                lane[i & 15] = (float)(lane[i & 15] + e);
            }
            for (i = 0; i < 8; i++) {
                t[i] = (float)(lane[i + 8] + lane[i]);
            }
            sum = (float)((float)((float)(t[0] + t[1]) + (float)(t[2] + t[3])) +
                          (float)((float)(t[4] + t[5]) + (float)(t[6] + t[7])));
            scale = (float)(1.0f / sum);
            for (i = 0; i < length; i++) {
                y[(size_t)i * (size_t)inner] = q8_mul_unfused(y[(size_t)i * (size_t)inner], scale);
            }
        }
    }
}
