/* resize.c - nearest-neighbour, bilinear and trilinear Resize (resize.h). */
#include <string.h>

#include "resize.h"

void q8_resize_nearest(const q8_resize_params *params, const void *Q8_RESTRICT input,
                       void *Q8_RESTRICT output)
{
    const unsigned char *in = (const unsigned char *)input;
    unsigned char *out = (unsigned char *)output;
    const size_t esize = (size_t)params->element_size;
    const size_t in_row = (size_t)params->in_w * esize;
    int32_t p, y, x;

    for (p = 0; p < params->planes; p++) {
        const unsigned char *plane = in + (size_t)p * (size_t)params->in_h * in_row;
        for (y = 0; y < params->out_h; y++) {
            const unsigned char *row = plane + (size_t)params->rows[y] * in_row;
            if (esize == 1) {
                for (x = 0; x < params->out_w; x++) {
                    out[x] = row[params->cols[x]];
                }
            } else {
                for (x = 0; x < params->out_w; x++) {
                    memcpy(out + (size_t)x * esize, row + (size_t)params->cols[x] * esize,
                           esize);
                }
            }
            out += (size_t)params->out_w * esize;
        }
    }
}

/* ORT's UpsampleBilinear sums left to right, each weight a product of two distances;
 * one definition for the three types keeps their arithmetic identical. The integer
 * types convert with C's truncation, as ORT's static_cast does. */
#define Q8_RESIZE_BILINEAR(NAME, TYPE)                                                    \
    void NAME(const q8_resize_bilinear_params *params, const TYPE *Q8_RESTRICT input,    \
              TYPE *Q8_RESTRICT output)                                                  \
    {                                                                                    \
        int32_t p, y, x;                                                                 \
        for (p = 0; p < params->planes; p++) {                                           \
            const TYPE *plane = input + (size_t)p * (size_t)params->in_size;             \
            for (y = 0; y < params->out_h; y++) {                                        \
                const TYPE *upper = plane + params->row1[y];                             \
                const TYPE *lower = plane + params->row2[y];                             \
                const float dy1 = params->dy1[y], dy2 = params->dy2[y];                  \
                for (x = 0; x < params->out_w; x++) {                                    \
                    const int32_t x1 = params->col1[x], x2 = params->col2[x];            \
                    const float dx1 = params->dx1[x], dx2 = params->dx2[x];              \
                    float sum = (dx2 * dy2) * (float)upper[x1];                          \
                    sum = sum + (dx1 * dy2) * (float)upper[x2];                          \
                    sum = sum + (dx2 * dy1) * (float)lower[x1];                          \
                    sum = sum + (dx1 * dy1) * (float)lower[x2];                          \
                    output[x] = (TYPE)sum;                                               \
                }                                                                        \
                output += params->out_w;                                                 \
            }                                                                            \
        }                                                                                \
    }

Q8_RESIZE_BILINEAR(q8_resize_bilinear_f32, float)
Q8_RESIZE_BILINEAR(q8_resize_bilinear_u8, uint8_t)
Q8_RESIZE_BILINEAR(q8_resize_bilinear_s8, int8_t)

/* ORT's UpsampleTrilinear: eight terms, each weight ((dx * dy) * dz), summed left to
 * right from the (x1, y1, z1) neighbour, x varying fastest, then y, then z. */
#define Q8_RESIZE_TRILINEAR(NAME, TYPE)                                                   \
    void NAME(const q8_resize_trilinear_params *params, const TYPE *Q8_RESTRICT input,   \
              TYPE *Q8_RESTRICT output)                                                  \
    {                                                                                    \
        int32_t p, z, y, x;                                                              \
        for (p = 0; p < params->planes; p++) {                                           \
            const TYPE *volume = input + (size_t)p * (size_t)params->in_size;            \
            for (z = 0; z < params->out_d; z++) {                                        \
                const TYPE *front = volume + params->z1[z], *back = volume + params->z2[z]; \
                const float dz1 = params->dz1[z], dz2 = params->dz2[z];                  \
                for (y = 0; y < params->out_h; y++) {                                    \
                    const int32_t y1 = params->y1[y], y2 = params->y2[y];                \
                    const float dy1 = params->dy1[y], dy2 = params->dy2[y];              \
                    for (x = 0; x < params->out_w; x++) {                                \
                        const int32_t x1 = params->x1[x], x2 = params->x2[x];            \
                        const float dx1 = params->dx1[x], dx2 = params->dx2[x];          \
                        float sum = ((dx2 * dy2) * dz2) * (float)front[y1 + x1];          \
                        sum = sum + ((dx1 * dy2) * dz2) * (float)front[y1 + x2];          \
                        sum = sum + ((dx2 * dy1) * dz2) * (float)front[y2 + x1];          \
                        sum = sum + ((dx1 * dy1) * dz2) * (float)front[y2 + x2];          \
                        sum = sum + ((dx2 * dy2) * dz1) * (float)back[y1 + x1];           \
                        sum = sum + ((dx1 * dy2) * dz1) * (float)back[y1 + x2];           \
                        sum = sum + ((dx2 * dy1) * dz1) * (float)back[y2 + x1];           \
                        sum = sum + ((dx1 * dy1) * dz1) * (float)back[y2 + x2];           \
                        output[x] = (TYPE)sum;                                           \
                    }                                                                    \
                    output += params->out_w;                                             \
                }                                                                        \
            }                                                                            \
        }                                                                                \
    }

Q8_RESIZE_TRILINEAR(q8_resize_trilinear_f32, float)
Q8_RESIZE_TRILINEAR(q8_resize_trilinear_u8, uint8_t)
Q8_RESIZE_TRILINEAR(q8_resize_trilinear_s8, int8_t)
