/*
 * layer_norm_f32.c - float32 LayerNormalization as ONNX Runtime 1.32's CPU provider
 * computes it (a float island of a QDQ model, or a float layer of a QOperator one),
 * one row of n = size values at a time.
 *
 * n < 8: ORT's scalar loop (layer_norm_impl.cc), Welford's recurrence in float32:
 *   d = x[i] - mean; mean = mean + d / (i + 1); m2 = m2 + f32(d * (x[i] - mean));
 *   den = sqrtf(m2 / n + epsilon); y = f32(f32((x - mean) / den) * scale) + bias;
 *   InvStdDev = 1 / den.
 * n >= 8: MLAS's AVX2 kernel (layernorm_kernel_avx2.cpp, built with -mavx2 -mfma):
 *   sum    = 4 double lanes L[i % 4] over the whole groups of 4, (L0 + L2) + (L1 + L3),
 *            then the rest in order, in double; mean = (float)(sum / n);
 *   var    = 8 float lanes V[i % 8] = fmaf(d, d, V) with d = x[i] - mean over the whole
 *            groups of 8, ((V0 + V4) + (V2 + V6)) + ((V1 + V5) + (V3 + V7)); the rest in
 *            order, where the compiler's 4-wide epilogue rounds d * d before adding it
 *            (the first 4 of a rest of 4 to 7) and the last ones use fmaf;
 *   inv    = 1 / sqrtf(var / n + epsilon);
 *   y      = fmaf((x - mean) * inv, scale, bias), or (x - mean) * inv * scale.
 *
 * SimplifiedLayerNormalization (RMS normalization, ORT's contrib operator of the ONNX
 * domain, what its SimplifiedLayerNormFusion makes of Pow -> ReduceMean -> Add -> Sqrt ->
 * Div -> Mul), measured on ORT 1.32:
 * n < 16:  ms = sum of f32(x * x) in order; den = sqrtf(ms / n + epsilon);
 *          y = f32(f32(x / den) * scale);
 * n >= 16: the AVX2 kernel above with a mean of 0: var from the 8 lanes of fmaf(x, x, V)
 *          and the same rest; inv = 1 / sqrtf(var / n + epsilon); y = f32(f32(x * inv) * scale).
 *
 * com.microsoft SkipLayerNormalization (what ORT's SkipLayerNormFusion makes of an Add of
 * two 3-D tensors, and of a constant bias, before a LayerNormalization), measured on ORT
 * 1.32: v = f32(f32(input + skip) + bias), then the scalar Welford loop above whatever n.
 */
#include <math.h>

#include "layer_norm_f32.h"
#include "q8_arith.h"
#include "q8_softfloat.h"

static void welford_row(const q8_layer_norm_f32_params *p, const float *x, float *y,
                        float *mean_out, float *inv_out)
{
    const int32_t n = p->size;
    float mean = 0.0f, m2 = 0.0f, den;
    int32_t i;
    for (i = 0; i < n; i++) {
        const float d = (float)(x[i] - mean);
        mean = (float)(mean + (float)(d / (float)(i + 1)));
        m2 = (float)(m2 + q8_mul_unfused(d, (float)(x[i] - mean)));
    }
    den = sqrtf((float)((float)(m2 / (float)n) + p->epsilon));
    for (i = 0; i < n; i++) {
        const float t = (float)((float)(x[i] - mean) / den);
        if (p->bias != NULL) {
            y[i] = (float)(q8_mul_unfused(t, p->scale[i]) + p->bias[i]);
        } else {
            y[i] = (float)(t * p->scale[i]);
        }
    }
    *mean_out = mean;
    *inv_out = (float)(1.0f / den);
}

/* The AVX2 kernel's sum of (x - mean)^2: 8 lanes of fmaf over the whole groups of 8,
 * reduced pairwise; a rest of 4 to 7 adds its first 4 squares unfused, the others by fmaf. */
static float avx2_centred_squares(const float *x, int32_t n, float mean)
{
    const int32_t n8 = n & ~7;
    float lane_sq[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    float sum;
    int32_t i;
    for (i = 0; i < n8; i++) {
        const float d = (float)(x[i] - mean);
        lane_sq[i & 7] = q8_fmaf(d, d, lane_sq[i & 7]);
    }
    sum = (float)((float)((float)(lane_sq[0] + lane_sq[4]) + (float)(lane_sq[2] + lane_sq[6])) +
                  (float)((float)(lane_sq[1] + lane_sq[5]) + (float)(lane_sq[3] + lane_sq[7])));
    i = n8;
    if (n - n8 >= 4) {
        for (; i < n8 + 4; i++) {
            const float d = (float)(x[i] - mean);
            sum = (float)(sum + q8_mul_unfused(d, d));
        }
    }
    for (; i < n; i++) {
        const float d = (float)(x[i] - mean);
        sum = q8_fmaf(d, d, sum);
    }
    return sum;
}

static void avx2_row(const q8_layer_norm_f32_params *p, const float *x, float *y,
                     float *mean_out, float *inv_out)
{
    const int32_t n = p->size, n4 = n & ~3;
    double lane_sum[4] = {0.0, 0.0, 0.0, 0.0};
    double sum;
    float mean, var, inv;
    int32_t i;
    for (i = 0; i < n4; i++) {
        lane_sum[i & 3] += (double)x[i];
    }
    sum = (lane_sum[0] + lane_sum[2]) + (lane_sum[1] + lane_sum[3]);
    for (i = n4; i < n; i++) {
        sum += (double)x[i];
    }
    mean = (float)(sum / (double)n);
    var = avx2_centred_squares(x, n, mean);
    inv = (float)(1.0f / sqrtf((float)((float)(var / (float)n) + p->epsilon)));
    for (i = 0; i < n; i++) {
        const float t = q8_mul_unfused((float)(x[i] - mean), inv);
        y[i] = p->bias != NULL ? q8_fmaf(t, p->scale[i], p->bias[i])
                               : (float)(t * p->scale[i]);
    }
    *mean_out = mean;
    *inv_out = inv;
}

void q8_layer_norm_stats_f32(const q8_layer_norm_f32_params *params,
                             const float *Q8_RESTRICT input, float *Q8_RESTRICT output,
                             float *Q8_RESTRICT mean, float *Q8_RESTRICT inv_std_dev)
{
    const size_t n = (size_t)params->size;
    int32_t r;
    for (r = 0; r < params->rows; r++) {
        const float *x = input + (size_t)r * n;
        float *y = output + (size_t)r * n;
        if (params->size < 8) {
            welford_row(params, x, y, &mean[r], &inv_std_dev[r]);
        } else {
            avx2_row(params, x, y, &mean[r], &inv_std_dev[r]);
        }
    }
}

void q8_layer_norm_f32(const q8_layer_norm_f32_params *params,
                       const float *Q8_RESTRICT input, float *Q8_RESTRICT output)
{
    const size_t n = (size_t)params->size;
    float mean, inv_std_dev;
    int32_t r;
    for (r = 0; r < params->rows; r++) {
        const float *x = input + (size_t)r * n;
        float *y = output + (size_t)r * n;
        if (params->size < 8) {
            welford_row(params, x, y, &mean, &inv_std_dev);
        } else {
            avx2_row(params, x, y, &mean, &inv_std_dev);
        }
    }
}

void q8_simplified_layer_norm_f32(const q8_layer_norm_f32_params *params,
                                  const float *Q8_RESTRICT input, float *Q8_RESTRICT output)
{
    const int32_t n = params->size;
    int32_t r, i;
    for (r = 0; r < params->rows; r++) {
        const float *x = input + (size_t)r * (size_t)n;
        float *y = output + (size_t)r * (size_t)n;
        if (n < 16) {
            float ms = 0.0f, den;
            for (i = 0; i < n; i++) {
                ms = (float)(ms + q8_mul_unfused(x[i], x[i]));
            }
            den = sqrtf((float)((float)(ms / (float)n) + params->epsilon));
            for (i = 0; i < n; i++) {
                y[i] = q8_mul_unfused((float)(x[i] / den), params->scale[i]);
            }
        } else {
            const float var = avx2_centred_squares(x, n, 0.0f); /* x - 0 is x */
            const float inv =
                (float)(1.0f / sqrtf((float)((float)(var / (float)n) + params->epsilon)));
            for (i = 0; i < n; i++) {
                y[i] = q8_mul_unfused(q8_mul_unfused(x[i], inv), params->scale[i]);
            }
        }
    }
}

void q8_skip_layer_norm_f32(const q8_skip_layer_norm_f32_params *params,
                            const float *Q8_RESTRICT input, const float *Q8_RESTRICT skip,
                            float *Q8_RESTRICT output)
{
    const q8_layer_norm_f32_params *norm = &params->norm;
    const size_t n = (size_t)norm->size;
    float mean, inv_std_dev;
    int32_t r;
    size_t i;
    for (r = 0; r < norm->rows; r++) {
        const size_t at = (size_t)r * n;
        float *y = output + at;
        for (i = 0; i < n; i++) {
            const float v = (float)(input[at + i] + skip[at + i]);
            y[i] = params->skip_bias != NULL ? (float)(v + params->skip_bias[i]) : v;
        }
        welford_row(norm, y, y, &mean, &inv_std_dev); /* in place: each read before written */
    }
}
