/* clamp.c - Relu and Clip on int8/uint8 tensors: exact integer clamps. */
#include "q8_runtime.h"

void q8_clamp_u8(const q8_clamp_params *params, const uint8_t *Q8_RESTRICT input,
                 uint8_t *Q8_RESTRICT output)
{
    int32_t i;
    for (i = 0; i < params->size; i++) {
        int32_t v = input[i];
        v = v < params->min ? params->min : v;
        v = v > params->max ? params->max : v;
        output[i] = (uint8_t)v;
    }
}

void q8_clamp_s8(const q8_clamp_params *params, const int8_t *Q8_RESTRICT input,
                 int8_t *Q8_RESTRICT output)
{
    int32_t i;
    for (i = 0; i < params->size; i++) {
        int32_t v = input[i];
        v = v < params->min ? params->min : v;
        v = v > params->max ? params->max : v;
        output[i] = (int8_t)v;
    }
}
