/*
 * dynamic_quantize_linear.c - DynamicQuantizeLinear as ONNX Runtime 1.32 computes it
 * (GetQuantizationParameter<uint8_t>, then MlasQuantizeLinear), measured bit-exact:
 *
 * - min and max by MLAS's AVX kernel (every x86-64 with AVX, AVX-512 included): from
 *   FLT_MAX / -FLT_MAX, with 32 or more values four 8-lane accumulators over chunks of
 *   32, merged (0, 1), (2, 3), then both; chunks of 8 into the first; the 8 lanes reduced
 *   as halves, then lanes [2, 3, 2, 3], then [1, 1, 1, 1]; the last n % 8 values one by
 *   one. Lanes take `acc > x ? acc : x` (maxps), the scalar tail `max < x ? x : max`: these
 *   decide where a NaN survives.
 * - 0 taken into the range; scale = max == min ? 1 : f32(f32(max - min) / 255);
 *   zp = rne(clamp(f32(0 - f32(min / scale)), 0, 255)) (NaN gives 255).
 * - y = rne(clamp(f32(x / scale), -zp, 255 - zp)) + zp, a true division (NaN gives 0).
 */
#include "dynamic_quantize_linear.h"

#include <float.h>

#include "q8_arith.h"

static float max_ps(float a, float b)
{
    return a > b ? a : b;
}

static float min_ps(float a, float b)
{
    return a < b ? a : b;
}

/* The 8 lanes reduced: halves, lanes [2, 3, 2, 3], lanes [1, 1, 1, 1]; lane 0. */
static float reduce_lanes(const float v[8], float (*op)(float, float))
{
    float h[4], q[4];
    int32_t l;
    for (l = 0; l < 4; l++) {
        h[l] = op(v[l], v[l + 4]);
    }
    for (l = 0; l < 4; l++) {
        q[l] = op(h[l], h[2 + (l % 2)]);
    }
    return op(q[0], q[1]);
}

static void find_min_max(const float *x, int32_t n, float *min_out, float *max_out)
{
    float mx[4][8], mn[4][8];
    float lo = FLT_MAX, hi = -FLT_MAX;
    int32_t i = 0, j, l;
    if (n >= 8) {
        for (j = 0; j < 4; j++) {
            for (l = 0; l < 8; l++) {
                mx[j][l] = -FLT_MAX;
                mn[j][l] = FLT_MAX;
            }
        }
        if (n >= 32) {
            for (; n - i >= 32; i += 32) {
                for (j = 0; j < 4; j++) {
                    for (l = 0; l < 8; l++) {
                        mx[j][l] = max_ps(mx[j][l], x[i + 8 * j + l]);
                        mn[j][l] = min_ps(mn[j][l], x[i + 8 * j + l]);
                    }
                }
            }
            for (l = 0; l < 8; l++) {
                mx[0][l] = max_ps(mx[0][l], mx[1][l]);
                mx[2][l] = max_ps(mx[2][l], mx[3][l]);
                mx[0][l] = max_ps(mx[0][l], mx[2][l]);
                mn[0][l] = min_ps(mn[0][l], mn[1][l]);
                mn[2][l] = min_ps(mn[2][l], mn[3][l]);
                mn[0][l] = min_ps(mn[0][l], mn[2][l]);
            }
        }
        for (; n - i >= 8; i += 8) {
            for (l = 0; l < 8; l++) {
                mx[0][l] = max_ps(mx[0][l], x[i + l]);
                mn[0][l] = min_ps(mn[0][l], x[i + l]);
            }
        }
        hi = reduce_lanes(mx[0], max_ps);
        lo = reduce_lanes(mn[0], min_ps);
    }
    for (; i < n; i++) {
        hi = hi < x[i] ? x[i] : hi;
        lo = x[i] < lo ? x[i] : lo;
    }
    *min_out = lo;
    *max_out = hi;
}

void q8_dynamic_quantize_linear(const q8_dynamic_quantize_params *params,
                                const float *Q8_RESTRICT input, uint8_t *Q8_RESTRICT output,
                                float *Q8_RESTRICT scale_out, uint8_t *Q8_RESTRICT zp_out)
{
    float lo, hi, scale, zp_float, t;
    int32_t zp, i;
    find_min_max(input, params->size, &lo, &hi);
    lo = 0.0f < lo ? 0.0f : lo;
    hi = hi < 0.0f ? 0.0f : hi;
    scale = hi == lo ? 1.0f : (float)(hi - lo) / 255.0f;
    zp_float = 0.0f - (float)(lo / scale);
    t = zp_float < 255.0f ? zp_float : 255.0f;
    t = 0.0f < t ? t : 0.0f;
    zp = q8_round_half_even(t);
    for (i = 0; i < params->size; i++) {
        const float v = q8_fclamp((float)(input[i] / scale), (float)(0 - zp), (float)(255 - zp));
        output[i] = (uint8_t)(q8_round_half_even(v) + zp);
    }
    *scale_out = scale;
    *zp_out = (uint8_t)zp;
}

void q8_matmul_integer_dynamic(const q8_matmul_integer_dynamic_params *params,
                               const void *Q8_RESTRICT input, const void *Q8_RESTRICT zero_point,
                               int32_t *Q8_RESTRICT output)
{
    const int32_t za = params->a_signed ? (int32_t)*(const int8_t *)zero_point
                                        : (int32_t)*(const uint8_t *)zero_point;
    int32_t r, j, k;
    for (r = 0; r < params->rows; r++) {
        for (j = 0; j < params->n; j++) {
            int32_t acc = 0;
            for (k = 0; k < params->k; k++) {
                const size_t at = (size_t)r * (size_t)params->k + (size_t)k;
                const int32_t a = params->a_signed ? (int32_t)((const int8_t *)input)[at]
                                                   : (int32_t)((const uint8_t *)input)[at];
                acc += (a - za) * (int32_t)params->b[(size_t)k * (size_t)params->n + (size_t)j];
            }
            output[(size_t)r * (size_t)params->n + (size_t)j] = acc;
        }
    }
}
