/* concat.c - one input of a Concat or QLinearConcat, copied or requantized into place. */
#include <string.h>

#include "q8_runtime.h"

void q8_concat_slice(const q8_concat_params *params, const void *Q8_RESTRICT input,
                     void *Q8_RESTRICT output)
{
    const uint8_t *in = (const uint8_t *)input;
    uint8_t *out = (uint8_t *)output + params->out_offset;
    int32_t o, i;
    for (o = 0; o < params->outer; o++) {
        const uint8_t *src = in + (size_t)o * (size_t)params->block;
        uint8_t *dst = out + (size_t)o * (size_t)params->out_stride;
        if (params->table) {
            for (i = 0; i < params->block; i++) {
                dst[i] = params->table[src[i]];
            }
        } else {
            memcpy(dst, src, (size_t)params->block);
        }
    }
}
