/*
 * conv_s8_im2col_w16_freq.c - q8_conv_s8_im2col_w16_freq: the im2col convolution with
 * int16 weights in row pairs, for the DSP extension; s8 activations, float requantization.
 * The kernel is in q8_im2col.h; one function per file, so a project compiles what it calls.
 */
#include "q8_im2col.h"

Q8_DEFINE_IM2COL_W16(q8_conv_s8_im2col_w16_freq, int8_t, 1, Q8_RQ_FREQ)
