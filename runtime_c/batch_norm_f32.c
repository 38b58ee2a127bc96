/*
 * batch_norm_f32.c - BatchNormalization (inference) on float32, as ONNX Runtime's CPU
 * kernel (nn/batch_norm.h, Eigen): y = x * s[c] + b[c] per (n, c) plane, with the
 * product rounded before the sum (ORT's x86-64 build fuses no multiply-add there).
 */
#include "batch_norm_f32.h"

#include "q8_arith.h"

void q8_batch_norm_f32(const q8_batch_norm_f32_params *params, const float *Q8_RESTRICT input,
                       float *Q8_RESTRICT output)
{
    int32_t n, c, i;
    size_t base = 0;
    for (n = 0; n < params->batch; n++) {
        for (c = 0; c < params->channels; c++) {
            const float s = params->scale[c];
            const float b = params->bias[c];
            for (i = 0; i < params->size; i++) {
                output[base + (size_t)i] = q8_mul_unfused(input[base + (size_t)i], s) + b;
            }
            base += (size_t)params->size;
        }
    }
}
