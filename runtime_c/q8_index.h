/*
 * q8_index.h - walking a broadcast output in order while keeping the input offsets in
 * step (shared by the integer and float elementwise kernels).
 */
#ifndef Q8_INDEX_H
#define Q8_INDEX_H

#include <stddef.h>

#include "q8_arith.h"
#include "q8_runtime.h"

/* Advance an output index like an odometer, keeping the input offsets in step. */
Q8_INLINE void q8_next_index(const q8_broadcast *s, int32_t *index, size_t *a_at,
                             size_t *b_at)
{
    int32_t d;
    for (d = s->rank - 1; d >= 0; d--) {
        index[d]++;
        *a_at += (size_t)s->a_stride[d];
        *b_at += (size_t)s->b_stride[d];
        if (index[d] < s->out_shape[d]) {
            return;
        }
        *a_at -= (size_t)s->a_stride[d] * (size_t)s->out_shape[d];
        *b_at -= (size_t)s->b_stride[d] * (size_t)s->out_shape[d];
        index[d] = 0;
    }
}

/* Zero the index; returns the number of output elements. */
Q8_INLINE size_t q8_start_index(const q8_broadcast *s, int32_t *index)
{
    size_t total = 1;
    int32_t d;
    for (d = 0; d < s->rank; d++) {
        index[d] = 0;
        total *= (size_t)s->out_shape[d];
    }
    return total;
}

#endif /* Q8_INDEX_H */
