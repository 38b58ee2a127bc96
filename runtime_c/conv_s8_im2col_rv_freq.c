/*
 * conv_s8_im2col_rv_freq.c - q8_conv_s8_im2col_rv_freq: the im2col convolution for RV32IM
 * cores; s8 activations, float32 requantization as ORT.
 * The kernel is in q8_im2col_rv.h; one function per file, so a project compiles what it calls.
 */
#include "q8_im2col_rv.h"

Q8_DEFINE_IM2COL_RV(q8_conv_s8_im2col_rv_freq, int8_t, 1, Q8_RQ_FREQ)
