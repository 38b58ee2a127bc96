/*
 * conv_im2col_w16.c - the im2col convolutions with int16 weights in row pairs, for the DSP
 * extension (q8_conv_*_im2col_w16_*).
 * The kernels are in q8_im2col.h.
 */
#include "q8_im2col.h"

Q8_DEFINE_IM2COL_W16(q8_conv_u8_im2col_w16_freq, uint8_t, 0, Q8_RQ_FREQ, W16_PAIRS)
Q8_DEFINE_IM2COL_W16(q8_conv_s8_im2col_w16_freq, int8_t, 1, Q8_RQ_FREQ, W16_PAIRS)
Q8_DEFINE_IM2COL_W16(q8_conv_u8_im2col_w16_ireq, uint8_t, 0, Q8_RQ_IREQ, W16_PAIRS)
Q8_DEFINE_IM2COL_W16(q8_conv_s8_im2col_w16_ireq, int8_t, 1, Q8_RQ_IREQ, W16_PAIRS)
