/*
 * softmax_f32.c - float32 Softmax and LogSoftmax (float islands), as ONNX Runtime computes it with MLAS's
 * AVX-512F kernels (one thread):
 *   m = the row maximum;
 *   e[i] = exp(x[i] - m) by MLAS's approximation: the argument clamped at -103.972, split
 *          as r + n*ln2 (n rounded to nearest, ln2 in two parts), a degree-6 polynomial in
 *          r by fused multiply-adds, scaled by 2^n with one rounding;
 *   sum  = sixteen lane sums L[i % 16] in row order, folded as t[j] = L[j + 8] + L[j], then
 *          ((t0 + t1) + (t2 + t3)) + ((t4 + t5) + (t6 + t7));
 *   y[i] = e[i] * (1 / sum).
 * LogSoftmax: y[i] = (x[i] - m) - logf(sum).
 * The row runs along a strided axis: element i of row (o, j) is x[(o*length + i)*inner + j].
 */
#include <math.h>

#include "q8_arith.h"
#include "q8_runtime.h"
#include "q8_float.h"
#include "q8_libm.h"
#include "q8_softfloat.h"

/*
 * The sum of exp(x[i] - maximum) over a row (MlasComputeSumExpF32Kernel, AVX-512F): sixteen
 * lane sums, folded as the kernel's horizontal adds do. Each exponential is stored to
 * y when y is not NULL.
 */
static float sum_of_exponentials(const float *x, float *y, int32_t length, size_t stride,
                                 float negated_maximum)
{
    float lane[16];
    float t[8];
    int32_t i;
    for (i = 0; i < 16; i++) {
        lane[i] = 0.0f;
    }
    for (i = 0; i < length; i++) {
        const float e = q8_mlas_exp((float)(x[(size_t)i * stride] + negated_maximum));
        if (y != NULL) {
            y[(size_t)i * stride] = e;
        }
        lane[i & 15] = (float)(lane[i & 15] + e);
    }
    for (i = 0; i < 8; i++) {
        t[i] = (float)(lane[i + 8] + lane[i]);
    }
    return (float)((float)((float)(t[0] + t[1]) + (float)(t[2] + t[3])) +
                   (float)((float)(t[4] + t[5]) + (float)(t[6] + t[7])));
}

static float row_maximum(const float *x, int32_t length, size_t stride)
{
    float maximum = x[0];
    int32_t i;
    for (i = 1; i < length; i++) {
        const float v = x[(size_t)i * stride];
        maximum = v > maximum ? v : maximum;
    }
    return maximum;
}

void q8_softmax_f32(const q8_softmax_f32_params *params, const float *Q8_RESTRICT input,
                    float *Q8_RESTRICT output)
{
    const int32_t length = params->length, inner = params->inner;
    const size_t stride = (size_t)inner;
    int32_t outer, j, i;
    for (outer = 0; outer < params->outer; outer++) {
        for (j = 0; j < inner; j++) {
            const size_t base = (size_t)outer * (size_t)length * stride + (size_t)j;
            float *y = output + base;
            const float sum = sum_of_exponentials(input + base, y, length, stride,
                                                  -row_maximum(input + base, length, stride));
            const float scale = (float)(1.0f / sum);
            for (i = 0; i < length; i++) {
                y[(size_t)i * stride] = q8_mul_unfused(y[(size_t)i * stride], scale);
            }
        }
    }
}

/*
 * LogSoftmax: the same row sum (exponentials not stored), its logarithm by the C
 * library's logf (glibc's algorithm, q8_libm.h), then y = (x - maximum) - log(sum) in
 * two roundings, as MlasComputeLogSoftmaxOutputF32Kernel adds then subtracts.
 */
void q8_logsoftmax_f32(const q8_softmax_f32_params *params, const float *Q8_RESTRICT input,
                       float *Q8_RESTRICT output)
{
    const int32_t length = params->length, inner = params->inner;
    const size_t stride = (size_t)inner;
    int32_t outer, j, i;
    for (outer = 0; outer < params->outer; outer++) {
        for (j = 0; j < inner; j++) {
            const size_t base = (size_t)outer * (size_t)length * stride + (size_t)j;
            const float *x = input + base;
            float *y = output + base;
            const float negated = -row_maximum(x, length, stride);
            const float logarithm =
                q8_glibc_logf(sum_of_exponentials(x, NULL, length, stride, negated));
            for (i = 0; i < length; i++) {
                y[(size_t)i * stride] = (float)((float)(x[(size_t)i * stride] + negated) -
                                                logarithm);
            }
        }
    }
}
