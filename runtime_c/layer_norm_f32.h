/* layer_norm_f32.h - LayerNormalization on float32 over the trailing dimensions from
 * axis, in ONNX Runtime's order (layer_norm_f32.c). */
#ifndef Q8_LAYER_NORM_F32_H
#define Q8_LAYER_NORM_F32_H

#include <stdint.h>

#include "q8_runtime.h"

typedef struct {
    int32_t rows;        /* product of the dimensions before axis */
    int32_t size;        /* product of the dimensions from axis (one row) */
    float epsilon;
    const float *scale;  /* [size] */
    const float *bias;   /* [size] or NULL */
} q8_layer_norm_f32_params;

void q8_layer_norm_f32(const q8_layer_norm_f32_params *params,
                       const float *Q8_RESTRICT input, float *Q8_RESTRICT output);

/* The same, with the Mean and InvStdDev outputs ([rows] each). */
void q8_layer_norm_stats_f32(const q8_layer_norm_f32_params *params,
                             const float *Q8_RESTRICT input, float *Q8_RESTRICT output,
                             float *Q8_RESTRICT mean, float *Q8_RESTRICT inv_std_dev);

/* SimplifiedLayerNormalization (RMS normalization: no mean, no bias). */
void q8_simplified_layer_norm_f32(const q8_layer_norm_f32_params *params,
                                  const float *Q8_RESTRICT input, float *Q8_RESTRICT output);

/* SkipLayerNormalization: LayerNormalization of input + skip (+ skip_bias). */
typedef struct {
    q8_layer_norm_f32_params norm;
    const float *skip_bias; /* [size] or NULL */
} q8_skip_layer_norm_f32_params;

void q8_skip_layer_norm_f32(const q8_skip_layer_norm_f32_params *params,
                            const float *Q8_RESTRICT input, const float *Q8_RESTRICT skip,
                            float *Q8_RESTRICT output);

#endif /* Q8_LAYER_NORM_F32_H */
