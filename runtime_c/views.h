/* views.h - strided copies of any element type: Slice (steps of any sign), Expand,
 * Tile, DepthToSpace, SpaceToDepth, Split, and Gather along an axis with constant
 * indices. The generator describes each as a view of the input: for every output axis,
 * the input stride it moves by (0 repeats, negative walks backwards), from one offset. */
#ifndef Q8_VIEWS_H
#define Q8_VIEWS_H

#include <stdint.h>

#include "q8_runtime.h"

#define Q8_VIEW_MAX_RANK 8

typedef struct {
    int32_t rank;
    int32_t element_size;                  /* bytes */
    int32_t offset;                        /* elements, of the first element read */
    int32_t out_shape[Q8_VIEW_MAX_RANK];
    int32_t in_stride[Q8_VIEW_MAX_RANK];   /* elements */
} q8_view_params;

void q8_view_copy(const q8_view_params *params, const void *Q8_RESTRICT input,
                  void *Q8_RESTRICT output);

/* out[o][j][i] = in[o][indices[j]][i] for o < outer, j < count, i < inner_bytes. */
typedef struct {
    int32_t outer;
    int32_t axis_len;
    int32_t count;
    int32_t inner_bytes;
    const int32_t *indices;
} q8_gather_params;

void q8_gather_axis(const q8_gather_params *params, const void *Q8_RESTRICT input,
                    void *Q8_RESTRICT output);

#endif /* Q8_VIEWS_H */
