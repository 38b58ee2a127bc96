/* pad.h - Pad in every mode (constant, edge, reflect, wrap; negative pads crop) of a
 * tensor of any element type. For each output axis the generator gives a table of the
 * input index each output index reads, or -1 for the padding value. */
#ifndef Q8_PAD_H
#define Q8_PAD_H

#include <stdint.h>

#include "q8_runtime.h"

#define Q8_PAD_MAX_RANK 6

typedef struct {
    int32_t rank;
    int32_t element_size;                 /* bytes */
    int32_t out_shape[Q8_PAD_MAX_RANK];
    int32_t in_stride[Q8_PAD_MAX_RANK];   /* elements */
    int32_t table_start[Q8_PAD_MAX_RANK]; /* where each axis's entries begin in index */
    const int32_t *index;                 /* per output index: input index, or -1 */
    const uint8_t *value;                 /* element_size bytes: the padding value */
} q8_pad_params;

void q8_pad(const q8_pad_params *params, const void *Q8_RESTRICT input,
            void *Q8_RESTRICT output);

#endif /* Q8_PAD_H */
