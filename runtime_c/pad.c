/* pad.c - Pad (pad.h): row by row over the outer axes, the last axis by its table. */
#include <string.h>

#include "pad.h"

void q8_pad(const q8_pad_params *params, const void *Q8_RESTRICT input,
            void *Q8_RESTRICT output)
{
    const unsigned char *in = (const unsigned char *)input;
    unsigned char *out = (unsigned char *)output;
    const size_t esize = (size_t)params->element_size;
    const int32_t last = params->rank - 1;
    const int32_t *columns = params->index + params->table_start[last];
    const int32_t width = params->out_shape[last];
    int32_t position[Q8_PAD_MAX_RANK];
    int32_t rows = 1, row, axis, x;

    for (axis = 0; axis < last; axis++) {
        position[axis] = 0;
        rows *= params->out_shape[axis];
    }
    for (row = 0; row < rows; row++) {
        int32_t base = 0, padded = 0;
        for (axis = 0; axis < last; axis++) {
            const int32_t source = params->index[params->table_start[axis] + position[axis]];
            if (source < 0) {
                padded = 1;
            } else {
                base += source * params->in_stride[axis];
            }
        }
        for (x = 0; x < width; x++) {
            if (padded || columns[x] < 0) {
                memcpy(out, params->value, esize);
            } else {
                memcpy(out, in + (size_t)(base + columns[x] * params->in_stride[last]) * esize,
                       esize);
            }
            out += esize;
        }
        for (axis = last - 1; axis >= 0; axis--) {
            if (++position[axis] < params->out_shape[axis]) {
                break;
            }
            position[axis] = 0;
        }
    }
}
