/* batch_norm_f32.h - BatchNormalization (inference) on float32 in ONNX Runtime's order:
 * the generator computes each channel's s = (1 / sqrt(var + eps)) * scale and
 * b = bias - mean * s as ORT does; the kernel computes y = x * s + b, the product
 * rounded before the sum. */
#ifndef Q8_BATCH_NORM_F32_H
#define Q8_BATCH_NORM_F32_H

#include <stdint.h>

#include "q8_runtime.h"

typedef struct {
    int32_t batch;      /* N */
    int32_t channels;   /* C */
    int32_t size;       /* values per (n, c) plane */
    const float *scale; /* C: s */
    const float *bias;  /* C: b */
} q8_batch_norm_f32_params;

void q8_batch_norm_f32(const q8_batch_norm_f32_params *params, const float *Q8_RESTRICT input,
                       float *Q8_RESTRICT output);

#endif /* Q8_BATCH_NORM_F32_H */
