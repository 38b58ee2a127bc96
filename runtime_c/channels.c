/* channels.c - q8_fill_channels, q8_fill_planes and q8_select_channels (channels.h): NCHW
 * planes copied from the computed channels or filled with a constant channel's bytes, and
 * the planes a pointwise convolution reads. */
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

/* The planes are small (6 x 6 and below in MobileNet's late layers): the rows are written
 * byte by byte, GCC kept from turning the loop back into memset calls, which cost more
 * than the stores. */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("no-tree-loop-distribute-patterns")))
#endif
void q8_fill_planes(const q8_fill_planes_params *params, const void *input, void *output)
{
    const uint8_t *in = (const uint8_t *)input;
    uint8_t *out = (uint8_t *)output;
    const int32_t H = params->height, W = params->width;
    const size_t plane = (size_t)H * (size_t)W;
    int32_t n, k, r, j;
    if (in != out) {
        memcpy(out, in, (size_t)params->batch * (size_t)params->channels * plane);
    }
    for (n = 0; n < params->batch; n++) {
        for (k = 0; k < params->count; k++) {
            const uint8_t *classes = params->classes + (size_t)k * 9u;
            uint8_t *o = out + ((size_t)n * (size_t)params->channels +
                                (size_t)params->list[k]) * plane;
            for (r = 0; r < H; r++) {
                /* row class: first, inner, last */
                const uint8_t *b = classes + (r == 0 ? 0u : (r == H - 1 ? 6u : 3u));
                const uint8_t inner = b[1];
                *o++ = b[0];
                for (j = 1; j < W - 1; j++) {
                    *o++ = inner;
                }
                if (W > 1) {
                    *o++ = b[2];
                }
            }
        }
    }
}

void q8_select_channels(const q8_select_channels_params *params,
                        const void *Q8_RESTRICT input, void *Q8_RESTRICT output)
{
    const uint8_t *in = (const uint8_t *)input;
    uint8_t *out = (uint8_t *)output;
    const size_t plane = (size_t)params->pixels;
    int32_t n, k;
    for (n = 0; n < params->batch; n++) {
        const uint8_t *in_n = in + (size_t)n * (size_t)params->channels * plane;
        for (k = 0; k < params->count; k++) {
            memcpy(out, in_n + (size_t)params->list[k] * plane, plane);
            out += plane;
        }
    }
}
