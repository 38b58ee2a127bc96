/* lookup.c - 256-entry table lookups (QLinearSigmoid, QLinearLeakyRelu, requantize). */
#include "q8_runtime.h"

void q8_lut_u8(const q8_lut_params *params, const uint8_t *Q8_RESTRICT input,
               uint8_t *Q8_RESTRICT output)
{
    int32_t i;
    for (i = 0; i < params->size; i++) {
        output[i] = params->table[input[i]];
    }
}

void q8_lut_s8(const q8_lut_params *params, const int8_t *Q8_RESTRICT input,
               int8_t *Q8_RESTRICT output)
{
    const uint8_t *in = (const uint8_t *)input;
    uint8_t *out = (uint8_t *)output;
    int32_t i;
    for (i = 0; i < params->size; i++) {
        out[i] = params->table[in[i]];
    }
}

void q8_lut_bytes(const q8_lut_params *params, const void *Q8_RESTRICT input,
                  void *Q8_RESTRICT output)
{
    const uint8_t *in = (const uint8_t *)input;
    uint8_t *out = (uint8_t *)output;
    int32_t i;
    for (i = 0; i < params->size; i++) {
        out[i] = params->table[in[i]];
    }
}
