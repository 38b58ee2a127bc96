/* clamp.c - Relu and Clip on int8/uint8 tensors: exact integer clamps. */
#include "q8_arith.h"
#include "q8_runtime.h"

Q8_INLINE void clamp(const q8_clamp_params *p, const uint8_t *Q8_RESTRICT x,
                     uint8_t *Q8_RESTRICT y, int is_signed)
{
    int32_t i;
    for (i = 0; i < p->size; i++) {
        int32_t v = is_signed ? (int32_t)(int8_t)x[i] : (int32_t)x[i];
        v = v < p->min ? p->min : v;
        v = v > p->max ? p->max : v;
        y[i] = (uint8_t)v;
    }
}

void q8_clamp_u8(const q8_clamp_params *params, const uint8_t *Q8_RESTRICT input,
                 uint8_t *Q8_RESTRICT output)
{
    clamp(params, input, output, 0);
}

void q8_clamp_s8(const q8_clamp_params *params, const int8_t *Q8_RESTRICT input,
                 int8_t *Q8_RESTRICT output)
{
    clamp(params, (const uint8_t *)input, (uint8_t *)output, 1);
}

void q8_clamp_f32(const q8_clamp_f32_params *params, const float *Q8_RESTRICT input,
                  float *Q8_RESTRICT output)
{
    int32_t i;
    for (i = 0; i < params->size; i++) {
        float v = input[i];
        v = v < params->min ? params->min : v;
        v = v > params->max ? params->max : v;
        output[i] = v;
    }
}
