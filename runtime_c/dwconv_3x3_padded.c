/*
 * dwconv_3x3_padded.c - depthwise QLinearConv with 3x3 kernels, layers with padding
 * (q8_dwconv_*_3x3_padded_*). The kernel is in q8_dwconv.h.
 */
#include "q8_dwconv.h"

/* Padded layers copy each channel into the scratch plane
 * ((OH - 1) * stride_h + 3) x ((OW - 1) * stride_w + 3) bytes. The requantization mode is
 * settled once per call: the saturating VCVTR forms where the layer's range allows. */
#define Q8_DW_PADDED_CALL(RQ)                                                              \
    q8_dwconv_3x3(params, (const uint8_t *)input, (uint8_t *)output, (uint8_t *)scratch, 1,   \
               is_signed, RQ)
#define Q8_DEFINE_DWCONV_PADDED(NAME, TX, SIGNED, MODE)                                   \
    void NAME(const q8_dwconv_params *params, const TX *input, void *output,              \
              void *Q8_RESTRICT scratch)                                                  \
    {                                                                                     \
        const int is_signed = SIGNED;                                                     \
        Q8_CALL_FOR_LAYER_MODE(&params->requant, MODE, Q8_DW_PADDED_CALL)                 \
    }

Q8_DEFINE_DWCONV_PADDED(q8_dwconv_u8_3x3_padded_freq, uint8_t, 0, Q8_RQ_FREQ)
Q8_DEFINE_DWCONV_PADDED(q8_dwconv_s8_3x3_padded_freq, int8_t, 1, Q8_RQ_FREQ)
Q8_DEFINE_DWCONV_PADDED(q8_dwconv_u8_3x3_padded_ireq, uint8_t, 0, Q8_RQ_IREQ)
Q8_DEFINE_DWCONV_PADDED(q8_dwconv_s8_3x3_padded_ireq, int8_t, 1, Q8_RQ_IREQ)
