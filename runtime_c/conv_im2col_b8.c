/*
 * conv_im2col_b8.c - the im2col convolutions on unsigned bytes, for cores without the DSP
 * extension (q8_conv_*_im2col_b8_*).
 * The kernels are in q8_im2col.h.
 */
#include "q8_im2col.h"

#define Q8_DEFINE_IM2COL_B8(NAME, TX, SIGNED, MODE)                                          \
    void NAME(const q8_conv_im2col_b8_params *params, const TX *Q8_RESTRICT input,           \
              void *Q8_RESTRICT output, int16_t *Q8_RESTRICT scratch)                        \
    {                                                                                        \
        if (MODE == Q8_RQ_FREQ && params->requant.bounded) {                                \
            conv_im2col_b8(params, (const uint8_t *)input, (uint8_t *)output, scratch,       \
                           SIGNED, Q8_RQ_FREQ_BOUNDED);                                     \
        } else {                                                                             \
            conv_im2col_b8(params, (const uint8_t *)input, (uint8_t *)output, scratch,       \
                           SIGNED, MODE);                                                    \
        }                                                                                    \
    }

Q8_DEFINE_IM2COL_B8(q8_conv_u8_im2col_b8_freq, uint8_t, 0, Q8_RQ_FREQ)
Q8_DEFINE_IM2COL_B8(q8_conv_s8_im2col_b8_freq, int8_t, 1, Q8_RQ_FREQ)
Q8_DEFINE_IM2COL_B8(q8_conv_u8_im2col_b8_ireq, uint8_t, 0, Q8_RQ_IREQ)
Q8_DEFINE_IM2COL_B8(q8_conv_s8_im2col_b8_ireq, int8_t, 1, Q8_RQ_IREQ)
