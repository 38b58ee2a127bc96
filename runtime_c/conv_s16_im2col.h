/* conv_s16_im2col.h - the fast 16-bit x 8-bit convolution (A16W8 under --integer-only),
 * 1-D and 2-D, any group, stride, dilation and pads, NCHW; also the 16-bit matrix
 * product, as a 1x1 convolution over rows (input [rows][k][1][1]). Bit-identical to
 * conv_s16.c (the reference); see conv_s16_im2col.c. */
#ifndef Q8_CONV_S16_IM2COL_H
#define Q8_CONV_S16_IM2COL_H

#include <stddef.h>
#include <stdint.h>

#include "q8_requant_exact.h"
#include "q8_runtime.h"

typedef struct {
    q8_dims input;
    q8_dims output;
    q8_window window;
    int32_t groups;
    int32_t taps;          /* C / groups * KH * KW */
    int32_t taps_padded;   /* taps rounded up to a multiple of 4 */
    int32_t x_offset;      /* x - x_offset is the int16 column value: 0 (int16), 32768 (uint16) */
    int32_t x_pad;         /* the column value of x_zero_point: its term is folded in bias */
    int32_t y_zero_point;
    int32_t y_min;         /* the output type's range, or a fused activation's */
    int32_t y_max;
    /* Per group: its channels in blocks of 4 (each quad of taps: the 4 channels' 4
     * bytes side by side), then the channels left over one row each; taps zero padded
     * to taps_padded, every 4 bytes stored w0 w2 w1 w3 (conv_s16_im2col.c) */
    const int8_t *weights;
    /* [M]: bias - x_pad * sum(w), the zero point's terms of every tap folded in */
    const int64_t *bias;
    const q8_exact_multiplier *multiplier; /* [M] */
} q8_conv_s16_im2col_params;

/* The scratch, in bytes: one column of taps_padded int16 values. */
static inline size_t q8_conv_s16_im2col_scratch_bytes(const q8_conv_s16_im2col_params *params)
{
    return 2u * (size_t)params->taps_padded;
}

void q8_conv_s16_im2col(const q8_conv_s16_im2col_params *params, const int16_t *Q8_RESTRICT x,
                        int16_t *Q8_RESTRICT y, int16_t *Q8_RESTRICT scratch);
void q8_conv_u16_im2col(const q8_conv_s16_im2col_params *params,
                        const uint16_t *Q8_RESTRICT x, uint16_t *Q8_RESTRICT y,
                        int16_t *Q8_RESTRICT scratch);

#endif /* Q8_CONV_S16_IM2COL_H */
