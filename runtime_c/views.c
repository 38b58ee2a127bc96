/* views.c - strided copies (views.h). The innermost axis is copied as one run when it
 * is contiguous in the input; otherwise element by element. */
#include <string.h>

#include "views.h"

void q8_view_copy(const q8_view_params *params, const void *Q8_RESTRICT input,
                  void *Q8_RESTRICT output)
{
    const unsigned char *in = (const unsigned char *)input;
    unsigned char *out = (unsigned char *)output;
    const int32_t rank = params->rank;
    const size_t esize = (size_t)params->element_size;
    const int32_t last = rank - 1;
    const int32_t run = params->out_shape[last];
    const int32_t run_stride = params->in_stride[last];
    int32_t index[Q8_VIEW_MAX_RANK];
    int32_t src = params->offset;
    int32_t rows = 1, row, k, axis;

    for (axis = 0; axis < last; axis++) {
        index[axis] = 0;
        rows *= params->out_shape[axis];
    }
    for (row = 0; row < rows; row++) {
        if (run_stride == 1) {
            memcpy(out, in + (size_t)src * esize, (size_t)run * esize);
            out += (size_t)run * esize;
        } else {
            int32_t at = src;
            for (k = 0; k < run; k++) {
                memcpy(out, in + (size_t)at * esize, esize);
                out += esize;
                at += run_stride;
            }
        }
        /* Odometer over the outer output axes, tracking the input offset. */
        for (axis = last - 1; axis >= 0; axis--) {
            index[axis]++;
            src += params->in_stride[axis];
            if (index[axis] < params->out_shape[axis]) {
                break;
            }
            src -= params->in_stride[axis] * params->out_shape[axis];
            index[axis] = 0;
        }
    }
}

void q8_gather_axis(const q8_gather_params *params, const void *Q8_RESTRICT input,
                    void *Q8_RESTRICT output)
{
    const unsigned char *in = (const unsigned char *)input;
    unsigned char *out = (unsigned char *)output;
    const size_t inner = (size_t)params->inner_bytes;
    int32_t o, j;

    for (o = 0; o < params->outer; o++) {
        const unsigned char *slab = in + (size_t)o * (size_t)params->axis_len * inner;
        for (j = 0; j < params->count; j++) {
            memcpy(out, slab + (size_t)params->indices[j] * inner, inner);
            out += inner;
        }
    }
}
