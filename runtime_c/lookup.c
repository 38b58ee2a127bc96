/* lookup.c - 256-entry table lookups (QLinearSigmoid, QLinearLeakyRelu, requantize).
 * Input and output may be the same buffer (the planner writes outputs in place): each
 * element is read before it is written, and nothing is restrict-qualified. */
#include "q8_runtime.h"

static void lookup(const uint8_t *table, int32_t size, const uint8_t *in, uint8_t *out)
{
    int32_t i;
    for (i = 0; i < size; i++) {
        out[i] = table[in[i]];
    }
}

void q8_lut_u8(const q8_lut_params *params, const uint8_t *input, uint8_t *output)
{
    lookup(params->table, params->size, input, output);
}

void q8_lut_s8(const q8_lut_params *params, const int8_t *input, int8_t *output)
{
    lookup(params->table, params->size, (const uint8_t *)input, (uint8_t *)output);
}

void q8_lut_bytes(const q8_lut_params *params, const void *input, void *output)
{
    lookup(params->table, params->size, (const uint8_t *)input, (uint8_t *)output);
}

/* One table of 256 entries per channel: element (o, c, i) of [outer, channels, inner]
 * is looked up in table c (a chain with per-channel constants, PRelu's slopes). */
static void lookup_channels(const q8_lut_channels_params *p, const uint8_t *in, uint8_t *out)
{
    int32_t o, c, i;
    size_t at = 0;
    for (o = 0; o < p->outer; o++) {
        for (c = 0; c < p->channels; c++) {
            const uint8_t *table = p->tables + (size_t)c * 256u;
            for (i = 0; i < p->inner; i++, at++) {
                out[at] = table[in[at]];
            }
        }
    }
}

void q8_lut_channels_u8(const q8_lut_channels_params *params, const uint8_t *input,
                        uint8_t *output)
{
    lookup_channels(params, input, output);
}

void q8_lut_channels_s8(const q8_lut_channels_params *params, const int8_t *input,
                        int8_t *output)
{
    lookup_channels(params, (const uint8_t *)input, (uint8_t *)output);
}

void q8_lut_channels_bytes(const q8_lut_channels_params *params, const void *input,
                           void *output)
{
    lookup_channels(params, (const uint8_t *)input, (uint8_t *)output);
}
