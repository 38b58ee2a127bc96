/* instance_norm_f32.c - InstanceNormalization (instance_norm_f32.h). */
#include <math.h>

#include "instance_norm_f32.h"
#include "q8_arith.h"
#include "q8_eigen.h"

void q8_instance_norm_f32(const q8_instance_norm_f32_params *params,
                          const float *Q8_RESTRICT input, float *Q8_RESTRICT output,
                          float *Q8_RESTRICT scratch)
{
    const int32_t n = params->size;
    const float count = (float)n;
    int32_t p, i;

    for (p = 0; p < params->planes; p++) {
        const float *x = input + (size_t)p * (size_t)n;
        float *y = output + (size_t)p * (size_t)n;
        const int32_t c = p % params->channels;
        /* Xi.mean(): a Map of the plane, vectorized from its first aligned element. */
        const float mean = q8_eigen_sum(x, n, q8_eigen_head(p, n)) / count;
        float squares, inv_stdev, channel_scale, channel_shift;
        for (i = 0; i < n; i++) {
            const float d = x[i] - mean;
            scratch[i] = d * d;
        }
        /* (Xi - mean).squaredNorm(): an expression without direct access, which Eigen
         * traverses with unaligned packets from element 0. */
        squares = q8_eigen_sum(scratch, n, 0);
        inv_stdev = 1.0f / sqrtf(squares / count + params->epsilon);
        channel_scale = inv_stdev * params->scale[c];
        channel_shift = params->bias[c] - q8_mul_unfused(mean, channel_scale);
        for (i = 0; i < n; i++) {
            y[i] = q8_mul_unfused(x[i], channel_scale) + channel_shift;
        }
    }
}
