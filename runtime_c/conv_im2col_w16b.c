/*
 * conv_im2col_w16b.c - the im2col convolutions with int16 weights in blocks of 8 taps, plain C
 * that compilers vectorize (q8_conv_*_im2col_w16b_*).
 * The kernels are in q8_im2col.h.
 */
#include "q8_im2col.h"

Q8_DEFINE_IM2COL_W16(q8_conv_u8_im2col_w16b_freq, uint8_t, 0, Q8_RQ_FREQ, W16_BLOCKS)
Q8_DEFINE_IM2COL_W16(q8_conv_s8_im2col_w16b_freq, int8_t, 1, Q8_RQ_FREQ, W16_BLOCKS)
Q8_DEFINE_IM2COL_W16(q8_conv_u8_im2col_w16b_ireq, uint8_t, 0, Q8_RQ_IREQ, W16_BLOCKS)
Q8_DEFINE_IM2COL_W16(q8_conv_s8_im2col_w16b_ireq, int8_t, 1, Q8_RQ_IREQ, W16_BLOCKS)
