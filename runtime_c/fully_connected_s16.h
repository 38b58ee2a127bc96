/* fully_connected_s16.h - the 16-bit x 8-bit integer product (A16W8 under --integer-only):
 * y = clamp(rne((sum_k (x - x_zp) * w + bias) * x_scale * w_scale[n] / y_scale) + y_zp),
 * exact (fully_connected_s16.c, q8_requant_exact.h). */
#ifndef Q8_FULLY_CONNECTED_S16_H
#define Q8_FULLY_CONNECTED_S16_H

#include <stddef.h>
#include <stdint.h>

#include "q8_requant_exact.h"
#include "q8_runtime.h"

typedef struct {
    int32_t rows;          /* of x, every leading axis flattened */
    int32_t k;
    int32_t n;
    int32_t x_zero_point;  /* in x's type's range */
    int32_t y_zero_point;
    int32_t y_min;         /* the output type's range, or a fused activation's */
    int32_t y_max;
    const int8_t *w;       /* [n][k], zero point 0 (symmetric weights) */
    const int32_t *bias;   /* [n], scale x_scale * w_scale[n], or NULL */
    const q8_exact_multiplier *multiplier; /* [n] */
} q8_fully_connected_s16_params;

/* x, y int16 (the reference path). */
void q8_fully_connected_s16(const q8_fully_connected_s16_params *params,
                            const int16_t *Q8_RESTRICT x, int16_t *Q8_RESTRICT y);
/* x, y uint16 (ORT's default A16W8). */
void q8_fully_connected_u16(const q8_fully_connected_s16_params *params,
                            const uint16_t *Q8_RESTRICT x, uint16_t *Q8_RESTRICT y);

#endif /* Q8_FULLY_CONNECTED_S16_H */
