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

/* Tiles of TILE x TILE elements, so that both the rows read and the rows written stay
 * in a few cache lines (or, on a Cortex-M, the loops stay short and the index
 * arithmetic is one add per element). */
#define TILE 16

#define Q8_TRANSPOSE_TILES(TYPE)                                                        \
    do {                                                                                \
        const TYPE *src = (const TYPE *)input;                                          \
        TYPE *dst = (TYPE *)output;                                                     \
        for (b = 0; b < p->batches; b++) {                                              \
            for (r0 = 0; r0 < p->rows; r0 += TILE) {                                    \
                const int32_t r1 = r0 + TILE < p->rows ? r0 + TILE : p->rows;           \
                for (c0 = 0; c0 < p->cols; c0 += TILE) {                                \
                    const int32_t c1 = c0 + TILE < p->cols ? c0 + TILE : p->cols;       \
                    for (c = c0; c < c1; c++) {                                         \
                        TYPE *out_row = dst + (size_t)c * (size_t)p->rows;              \
                        const TYPE *in_col = src + c;                                   \
                        const size_t step = (size_t)p->cols;                            \
                        /* four loads, then four stores: the pipelining restrict would  \
                         * allow, kept without it (the output may overlap the input) */ \
                        for (r = r0; r + 4 <= r1; r += 4) {                             \
                            const TYPE *q = in_col + (size_t)r * step;                  \
                            const TYPE v0 = q[0], v1 = q[step];                         \
                            const TYPE v2 = q[2 * step], v3 = q[3 * step];              \
                            out_row[r] = v0;                                            \
                            out_row[r + 1] = v1;                                        \
                            out_row[r + 2] = v2;                                        \
                            out_row[r + 3] = v3;                                        \
                        }                                                               \
                        for (; r < r1; r++) {                                           \
                            out_row[r] = in_col[(size_t)r * step];                      \
                        }                                                               \
                    }                                                                   \
                }                                                                       \
            }                                                                           \
            src += plane;                                                               \
            dst += plane;                                                               \
        }                                                                               \
    } while (0)

void q8_transpose_2d(const q8_transpose_2d_params *params, const void *input, void *output)
{
    const q8_transpose_2d_params *p = params;
    const size_t plane = (size_t)p->rows * (size_t)p->cols;
    int32_t b, r0, c0, r, c;

    if (p->element_size == 1 && p->cols == 3) {
        /* Three channels (an RGB image, NHWC to NCHW): a pixel at a time into three
         * planes, about three instructions per byte on a Cortex-M. */
        const uint8_t *in = (const uint8_t *)input;
        uint8_t *out = (uint8_t *)output;
        const size_t rows = (size_t)p->rows;
        for (b = 0; b < p->batches; b++, out += plane) {
            uint8_t *out0 = out, *out1 = out + rows, *out2 = out + 2 * rows;
            for (r = 0; r < p->rows; r++, in += 3) {
                const uint8_t v0 = in[0], v1 = in[1], v2 = in[2];
                out0[r] = v0;
                out1[r] = v1;
                out2[r] = v2;
            }
        }
    } else if (p->element_size == 1) {
        Q8_TRANSPOSE_TILES(uint8_t);
    } else if (p->element_size == 4) {
        Q8_TRANSPOSE_TILES(uint32_t);
    } else {
        const unsigned char *in = (const unsigned char *)input;
        unsigned char *out = (unsigned char *)output;
        const size_t esize = (size_t)p->element_size;
        for (b = 0; b < p->batches; b++) {
            for (r = 0; r < p->rows; r++) {
                for (c = 0; c < p->cols; c++) {
                    memcpy(out + ((size_t)c * (size_t)p->rows + (size_t)r) * esize,
                           in + ((size_t)r * (size_t)p->cols + (size_t)c) * esize, esize);
                }
            }
            in += plane * esize;
            out += plane * esize;
        }
    }
}
