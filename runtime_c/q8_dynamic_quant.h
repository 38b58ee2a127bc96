/*
 * q8_dynamic_quant.h - ONNX Runtime 1.32's run-time quantization of a float tensor to
 * uint8 (GetQuantizationParameter<uint8_t>, then MlasQuantizeLinear), shared by
 * DynamicQuantizeLinear (dynamic_quantize_linear.c) and DynamicQuantizeLSTM
 * (recurrent_f32.c), measured bit-exact:
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
#ifndef Q8_DYNAMIC_QUANT_H
#define Q8_DYNAMIC_QUANT_H

#include <float.h>
#include <stdint.h>

#include "q8_arith.h"

Q8_INLINE float q8_dq_max_ps(float a, float b)
{
    return a > b ? a : b;
}

Q8_INLINE float q8_dq_min_ps(float a, float b)
{
    return a < b ? a : b;
}

/* The 8 lanes reduced: halves, lanes [2, 3, 2, 3], lanes [1, 1, 1, 1]; lane 0. */
Q8_INLINE float q8_dq_reduce_lanes(const float v[8], int maximum)
{
    float h[4], q[4];
    int32_t l;
    for (l = 0; l < 4; l++) {
        h[l] = maximum ? q8_dq_max_ps(v[l], v[l + 4]) : q8_dq_min_ps(v[l], v[l + 4]);
    }
    for (l = 0; l < 4; l++) {
        q[l] = maximum ? q8_dq_max_ps(h[l], h[2 + (l % 2)]) : q8_dq_min_ps(h[l], h[2 + (l % 2)]);
    }
    return maximum ? q8_dq_max_ps(q[0], q[1]) : q8_dq_min_ps(q[0], q[1]);
}

Q8_INLINE void q8_dq_find_min_max(const float *x, int32_t n, float *min_out, float *max_out)
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
                        mx[j][l] = q8_dq_max_ps(mx[j][l], x[i + 8 * j + l]);
                        mn[j][l] = q8_dq_min_ps(mn[j][l], x[i + 8 * j + l]);
                    }
                }
            }
            for (l = 0; l < 8; l++) {
                mx[0][l] = q8_dq_max_ps(mx[0][l], mx[1][l]);
                mx[2][l] = q8_dq_max_ps(mx[2][l], mx[3][l]);
                mx[0][l] = q8_dq_max_ps(mx[0][l], mx[2][l]);
                mn[0][l] = q8_dq_min_ps(mn[0][l], mn[1][l]);
                mn[2][l] = q8_dq_min_ps(mn[2][l], mn[3][l]);
                mn[0][l] = q8_dq_min_ps(mn[0][l], mn[2][l]);
            }
        }
        for (; n - i >= 8; i += 8) {
            for (l = 0; l < 8; l++) {
                mx[0][l] = q8_dq_max_ps(mx[0][l], x[i + l]);
                mn[0][l] = q8_dq_min_ps(mn[0][l], x[i + l]);
            }
        }
        hi = q8_dq_reduce_lanes(mx[0], 1);
        lo = q8_dq_reduce_lanes(mn[0], 0);
    }
    for (; i < n; i++) {
        hi = hi < x[i] ? x[i] : hi;
        lo = x[i] < lo ? x[i] : lo;
    }
    *min_out = lo;
    *max_out = hi;
}

Q8_INLINE void q8_dynamic_quantization(const float *x, int32_t size, float *scale_out,
                                       int32_t *zero_point_out)
{
    float lo, hi, scale, zp_float, t;
    q8_dq_find_min_max(x, size, &lo, &hi);
    lo = 0.0f < lo ? 0.0f : lo;
    hi = hi < 0.0f ? 0.0f : hi;
    scale = hi == lo ? 1.0f : (float)(hi - lo) / 255.0f;
    zp_float = 0.0f - (float)(lo / scale);
    t = zp_float < 255.0f ? zp_float : 255.0f;
    t = 0.0f < t ? t : 0.0f;
    *scale_out = scale;
    *zero_point_out = q8_round_half_even(t);
}

Q8_INLINE int32_t q8_dynamic_quantize_value(float x, float scale, int32_t zero_point)
{
    const float v = q8_fclamp((float)(x / scale), (float)(0 - zero_point),
                              (float)(255 - zero_point));
    return q8_round_half_even(v) + zero_point;
}

#endif /* Q8_DYNAMIC_QUANT_H */
