/* instance_norm_f32.h - InstanceNormalization on float32 in ONNX Runtime's order: per
 * (n, c) plane of `size` values, Eigen's mean, the Eigen sum of squared deviations,
 * inv = 1 / sqrt(ss / size + eps), then y = x * (inv * scale) + (bias - mean * that). */
#ifndef Q8_INSTANCE_NORM_F32_H
#define Q8_INSTANCE_NORM_F32_H

#include <stdint.h>

#include "q8_runtime.h"

typedef struct {
    int32_t planes;   /* N * C */
    int32_t channels; /* C */
    int32_t size;     /* values per plane */
    float epsilon;
    const float *scale; /* C */
    const float *bias;  /* C */
} q8_instance_norm_f32_params;

/* The scratch, in bytes: `size` floats (the squared deviations of one plane). */
static inline size_t q8_instance_norm_f32_scratch_bytes(const q8_instance_norm_f32_params *params)
{
    return (size_t)params->size * sizeof(float);
}

/* scratch: `size` floats (the squared deviations of one plane). */
void q8_instance_norm_f32(const q8_instance_norm_f32_params *params,
                          const float *Q8_RESTRICT input, float *Q8_RESTRICT output,
                          float *Q8_RESTRICT scratch);

#endif /* Q8_INSTANCE_NORM_F32_H */
