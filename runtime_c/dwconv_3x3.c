/*
 * dwconv_3x3.c - depthwise QLinearConv with 3x3 kernels, layers without padding
 * (q8_dwconv_*_3x3_*). The kernel is in q8_dwconv.h.
 */
#include "q8_dwconv.h"

/* Layers without padding read the input directly. The requantization mode is settled
 * once per call: the saturating VCVTR forms where the layer's range allows. */
#define Q8_DW_CALL(RQ)                                                                     \
    q8_dwconv_3x3(params, (const uint8_t *)input, (uint8_t *)output, NULL, 0, is_signed, RQ)
#define Q8_DEFINE_DWCONV(NAME, TX, SIGNED, MODE)                                          \
    void NAME(const q8_dwconv_params *params, const TX *input, void *output)              \
    {                                                                                     \
        const int is_signed = SIGNED;                                                     \
        Q8_CALL_FOR_LAYER_MODE(&params->requant, MODE, Q8_DW_CALL)                        \
    }

Q8_DEFINE_DWCONV(q8_dwconv_u8_3x3_freq, uint8_t, 0, Q8_RQ_FREQ)
Q8_DEFINE_DWCONV(q8_dwconv_s8_3x3_freq, int8_t, 1, Q8_RQ_FREQ)
Q8_DEFINE_DWCONV(q8_dwconv_u8_3x3_ireq, uint8_t, 0, Q8_RQ_IREQ)
Q8_DEFINE_DWCONV(q8_dwconv_s8_3x3_ireq, int8_t, 1, Q8_RQ_IREQ)
