/*
 * dwconv_3x3_pix.c - the host's depthwise QLinearConv with 3x3 kernels, strides 1 and 2
 * (q8_dwconv_*_3x3_pix_*). The kernel is in q8_dwconv_pix.h.
 */
#include "q8_dwconv_pix.h"

Q8_DEFINE_DWCONV_PIX(q8_dwconv_u8_3x3_pix_freq, uint8_t, 0, Q8_RQ_FREQ)
Q8_DEFINE_DWCONV_PIX(q8_dwconv_s8_3x3_pix_freq, int8_t, 1, Q8_RQ_FREQ)
Q8_DEFINE_DWCONV_PIX(q8_dwconv_u8_3x3_pix_ireq, uint8_t, 0, Q8_RQ_IREQ)
Q8_DEFINE_DWCONV_PIX(q8_dwconv_s8_3x3_pix_ireq, int8_t, 1, Q8_RQ_IREQ)
