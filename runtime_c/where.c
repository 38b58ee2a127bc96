/* where.c - Where with a constant condition on 8-bit tensors (where.h). */
#include "where.h"

static uint8_t requantized(const uint8_t *table, uint8_t value)
{
    return table != NULL ? table[value] : value;
}

void q8_where_select(const q8_where_params *params, const void *x,
                     const void *y, void *output)
{
    const uint8_t *a = (const uint8_t *)x;
    const uint8_t *b = (const uint8_t *)y;
    uint8_t *out = (uint8_t *)output;
    int32_t i, m = 0;

    for (i = 0; i < params->size; i++) {
        out[i] = params->mask[m] ? requantized(params->table0, a[i])
                                 : requantized(params->table1, b[i]);
        if (++m == params->period) {
            m = 0;
        }
    }
}

void q8_where_constant(const q8_where_constant_params *params, const void *input,
                       void *output)
{
    const uint8_t *in = (const uint8_t *)input;
    uint8_t *out = (uint8_t *)output;
    const uint8_t constant = (uint8_t)params->constant;
    int32_t i, m = 0;

    for (i = 0; i < params->size; i++) {
        out[i] = params->mask[m] ? requantized(params->table0, in[i]) : constant;
        if (++m == params->period) {
            m = 0;
        }
    }
}
