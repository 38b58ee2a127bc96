/* resize.h - Resize of the last two axes. Nearest: output pixel (y, x) of each plane
 * copies input pixel (rows[y], cols[x]). Bilinear (and trilinear, over three axes):
 * ONNX Runtime's weighted sum of the four (eight) neighbours in float32 (truncated to
 * the integer type for u8/s8). The generator computes the index and distance tables
 * with ORT's float32 coordinate arithmetic. */
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

typedef struct {
    int32_t planes;
    int32_t in_size;          /* in_h * in_w */
    int32_t out_h;
    int32_t out_w;
    const int32_t *row1;      /* out_h offsets of the upper neighbour row (y1 * in_w) */
    const int32_t *row2;      /* ... and of the lower one */
    const float *dy1;         /* out_h distances to the upper neighbour */
    const float *dy2;
    const int32_t *col1;      /* out_w left and right neighbour columns */
    const int32_t *col2;
    const float *dx1;
    const float *dx2;
} q8_resize_bilinear_params;

void q8_resize_bilinear_f32(const q8_resize_bilinear_params *params,
                            const float *Q8_RESTRICT input, float *Q8_RESTRICT output);
void q8_resize_bilinear_u8(const q8_resize_bilinear_params *params,
                           const uint8_t *Q8_RESTRICT input, uint8_t *Q8_RESTRICT output);
void q8_resize_bilinear_s8(const q8_resize_bilinear_params *params,
                           const int8_t *Q8_RESTRICT input, int8_t *Q8_RESTRICT output);

/* Trilinear (a 3-D linear Resize: ORT's kernel over (N, C, L) as depth, height, width):
 * the eight neighbours' weights are products of three distances. */
typedef struct {
    int32_t planes;
    int32_t in_size;          /* in_d * in_h * in_w */
    int32_t out_d;
    int32_t out_h;
    int32_t out_w;
    const int32_t *z1;        /* out_d offsets of the two neighbour planes (z * in_h * in_w) */
    const int32_t *z2;
    const float *dz1;         /* out_d distances to them */
    const float *dz2;
    const int32_t *y1;        /* out_h offsets of the two neighbour rows (y * in_w) */
    const int32_t *y2;
    const float *dy1;
    const float *dy2;
    const int32_t *x1;        /* out_w neighbour columns */
    const int32_t *x2;
    const float *dx1;
    const float *dx2;
} q8_resize_trilinear_params;

void q8_resize_trilinear_f32(const q8_resize_trilinear_params *params,
                             const float *Q8_RESTRICT input, float *Q8_RESTRICT output);
void q8_resize_trilinear_u8(const q8_resize_trilinear_params *params,
                            const uint8_t *Q8_RESTRICT input, uint8_t *Q8_RESTRICT output);
void q8_resize_trilinear_s8(const q8_resize_trilinear_params *params,
                            const int8_t *Q8_RESTRICT input, int8_t *Q8_RESTRICT output);

void q8_resize_nearest(const q8_resize_params *params, const void *Q8_RESTRICT input,
                       void *Q8_RESTRICT output);

#endif /* Q8_RESIZE_H */
