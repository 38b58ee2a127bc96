/* transpose.c - Transpose of any tensor of up to Q8_MAX_RANK dimensions. */
#include <string.h>

#include "q8_runtime.h"

void q8_transpose(const q8_transpose_params *params, const void *Q8_RESTRICT input,
                  void *Q8_RESTRICT output)
{
    const unsigned char *in = (const unsigned char *)input;
    unsigned char *out = (unsigned char *)output;
    const int32_t rank = params->rank;
    const size_t esize = (size_t)params->element_size;
    int32_t index[Q8_MAX_RANK];
    size_t total = 1, i, src = 0;
    int32_t axis;

    for (axis = 0; axis < rank; axis++) {
        index[axis] = 0;
        total *= (size_t)params->out_shape[axis];
    }
    /* Walk the output in order, like an odometer over its indices, tracking the
       matching input offset incrementally. */
    for (i = 0; i < total; i++) {
        memcpy(out + i * esize, in + src * esize, esize);
        for (axis = rank - 1; axis >= 0; axis--) {
            index[axis]++;
            src += (size_t)params->in_stride[axis];
            if (index[axis] < params->out_shape[axis]) {
                break;
            }
            src -= (size_t)params->in_stride[axis] * (size_t)params->out_shape[axis];
            index[axis] = 0;
        }
    }
}
