/* conv_s16.h - the 16-bit x 8-bit convolution (A16W8 under --integer-only): 1-D and 2-D,
 * any group, stride, dilation and pads, NCHW,
 * y = clamp(rne((sum (x - x_zp) * w + bias) * x_scale * w_scale[m] / y_scale) + y_zp),
 * exact (conv_s16.c, q8_requant_exact.h). */
#ifndef Q8_CONV_S16_H
#define Q8_CONV_S16_H

#include <stddef.h>
#include <stdint.h>

#include "q8_requant_exact.h"
#include "q8_runtime.h"

typedef struct {
    q8_dims input;
    q8_dims output;
    q8_window window;
    int32_t groups;
    int32_t x_zero_point;  /* in x's type's range; pads read as it (they add 0) */
    int32_t y_zero_point;
    int32_t y_min;         /* the output type's range, or a fused activation's */
    int32_t y_max;
    const int8_t *weights; /* [M][C / groups][KH][KW], zero point 0 (symmetric) */
    const int32_t *bias;   /* [M], scale x_scale * w_scale[m], or NULL */
    const q8_exact_multiplier *multiplier; /* [M] */
} q8_conv_s16_params;

/* x, y int16. */
void q8_conv_s16(const q8_conv_s16_params *params, const int16_t *Q8_RESTRICT x,
                 int16_t *Q8_RESTRICT y);
/* x, y uint16 (ORT's default A16W8). */
void q8_conv_u16(const q8_conv_s16_params *params, const uint16_t *Q8_RESTRICT x,
                 uint16_t *Q8_RESTRICT y);

#endif /* Q8_CONV_S16_H */
