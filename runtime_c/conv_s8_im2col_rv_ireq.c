/*
 * conv_s8_im2col_rv_ireq.c - q8_conv_s8_im2col_rv_ireq: the im2col convolution for RV32IM
 * cores; s8 activations, integer requantization.
 * The kernel is in q8_im2col_rv.h; one function per file, so a project compiles what it calls.
 */
#include "q8_im2col_rv.h"

Q8_DEFINE_IM2COL_RV(q8_conv_s8_im2col_rv_ireq, int8_t, 1, Q8_RQ_IREQ)
