/* channels.c - q8_fill_channels (channels.h): NCHW planes copied from the computed
 * channels or filled with a constant channel's byte. */
#include <string.h>

#include "channels.h"

void q8_fill_channels(const q8_fill_channels_params *params, const void *Q8_RESTRICT input,
                      void *Q8_RESTRICT output)
{
    const uint8_t *in = (const uint8_t *)input;
    uint8_t *out = (uint8_t *)output;
    const size_t plane = (size_t)params->pixels;
    int32_t n, c;
    for (n = 0; n < params->batch; n++) {
        const uint8_t *in_n = in + (size_t)n * (size_t)params->live * plane;
        uint8_t *out_n = out + (size_t)n * (size_t)params->channels * plane;
        for (c = 0; c < params->channels; c++) {
            const int32_t source = params->source[c];
            if (source >= 0) {
                memcpy(out_n + (size_t)c * plane, in_n + (size_t)source * plane, plane);
            } else {
                memset(out_n + (size_t)c * plane, params->fill[c], plane);
            }
        }
    }
}
