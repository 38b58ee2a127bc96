/*
 * conv_s8_im2col_w16p_ireq.c - q8_conv_s8_im2col_w16p_ireq: the host's convolution with
 * output pixels in the vector lanes and int16 weights; s8 activations, integer requantization.
 * The kernel is in q8_im2col_pix.h; one function per file, so a project compiles what it calls.
 */
#include "q8_im2col_pix.h"

Q8_DEFINE_IM2COL_PIX(q8_conv_s8_im2col_w16p_ireq, int8_t, 1, Q8_RQ_IREQ)
