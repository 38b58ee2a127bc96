/* conv_transpose_f32.h - ConvTranspose on float32 NCHW (1-D as h = 1), one image, in
 * ONNX Runtime's order (conv_transpose_f32.c). */
#ifndef Q8_CONV_TRANSPOSE_F32_H
#define Q8_CONV_TRANSPOSE_F32_H

#include <stdint.h>

#include "q8_runtime.h"

typedef struct {
    q8_dims input;
    q8_dims output;
    q8_window window;    /* kernel, strides, dilations, pads at the top and left */
    int32_t groups;
    const float *weights; /* [C][M/groups][kernel_h][kernel_w] */
    const float *bias;    /* [M] or NULL */
} q8_conv_transpose_f32_params;

/* The scratch, in bytes: (M/groups) * kernel_h * kernel_w * input h * w floats. */
static inline size_t q8_conv_transpose_f32_scratch_bytes(const q8_conv_transpose_f32_params *params)
{
    const q8_conv_transpose_f32_params *p = params;
    return (size_t)(p->output.c / p->groups) * (size_t)(p->window.kernel_h * p->window.kernel_w) *
           (size_t)(p->input.h * p->input.w) * sizeof(float);
}

/* scratch: (M/groups) * kernel_h * kernel_w * input h * w floats. */
void q8_conv_transpose_f32(const q8_conv_transpose_f32_params *params,
                           const float *Q8_RESTRICT input, float *Q8_RESTRICT output,
                           void *Q8_RESTRICT scratch);

#endif /* Q8_CONV_TRANSPOSE_F32_H */
