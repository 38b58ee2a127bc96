/*
 * conv_s8_im2col_ireq.c - q8_conv_s8_im2col_ireq: the im2col convolution with int8
 * weights, the DSP extension's 16-bit SIMD where the core has it; s8 activations, integer
 * requantization.
 * The kernel is in q8_im2col.h; one function per file, so a project compiles what it calls.
 */
#include "q8_im2col.h"

Q8_DEFINE_IM2COL(q8_conv_s8_im2col_ireq, int8_t, 1, Q8_RQ_IREQ)
