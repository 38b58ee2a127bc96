/* resize.h - nearest-neighbour Resize of the last two axes: output pixel (y, x) of each
 * plane copies input pixel (rows[y], cols[x]); the generator computes the two index
 * tables with ONNX Runtime's float32 coordinate arithmetic. */
#ifndef Q8_RESIZE_H
#define Q8_RESIZE_H

#include <stdint.h>

#include "q8_runtime.h"

typedef struct {
    int32_t planes;
    int32_t in_h;
    int32_t in_w;
    int32_t out_h;
    int32_t out_w;
    int32_t element_size;  /* bytes */
    const int32_t *rows;   /* out_h entries in [0, in_h) */
    const int32_t *cols;   /* out_w entries in [0, in_w) */
} q8_resize_params;

void q8_resize_nearest(const q8_resize_params *params, const void *Q8_RESTRICT input,
                       void *Q8_RESTRICT output);

#endif /* Q8_RESIZE_H */
