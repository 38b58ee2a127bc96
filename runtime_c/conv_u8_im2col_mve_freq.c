/*
 * conv_u8_im2col_mve_freq.c - q8_conv_u8_im2col_mve_freq: the im2col convolution on
 * Helium (MVE) cores, int8 weights and int8 columns; u8 activations, float requantization.
 * The kernel is in q8_im2col_mve.h; one function per file, so a project compiles what it calls.
 */
#include "q8_im2col_mve.h"

Q8_DEFINE_IM2COL_MVE(q8_conv_u8_im2col_mve_freq, uint8_t, 0, Q8_RQ_FREQ)
