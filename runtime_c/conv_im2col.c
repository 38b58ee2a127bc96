/*
 * conv_im2col.c - the im2col convolutions with int8 weights (q8_conv_*_im2col_*).
 * The kernels are in q8_im2col.h.
 */
#include "q8_im2col.h"

/* One instantiation per requantization mode: the mode is chosen once per call. */
#define Q8_DEFINE_IM2COL(NAME, TX, SIGNED, MODE)                                             \
    void NAME(const q8_conv_im2col_params *params, const TX *Q8_RESTRICT input,              \
              void *Q8_RESTRICT output, int16_t *Q8_RESTRICT scratch)                        \
    {                                                                                        \
        const uint8_t *x = (const uint8_t *)input;                                           \
        uint8_t *y = (uint8_t *)output;                                                      \
        switch (layer_requant_mode(&params->requant, MODE)) {                                \
        Q8_SATURATING_CASES(                                                                 \
            conv_im2col(params, x, y, scratch, SIGNED, Q8_RQ_FREQ_BOUNDED_S8),               \
            conv_im2col(params, x, y, scratch, SIGNED, Q8_RQ_FREQ_BOUNDED_U8))               \
        case Q8_RQ_FREQ_BOUNDED:                                                             \
            conv_im2col(params, x, y, scratch, SIGNED, Q8_RQ_FREQ_BOUNDED);                  \
            break;                                                                           \
        default:                                                                             \
            conv_im2col(params, x, y, scratch, SIGNED, MODE);                                \
            break;                                                                           \
        }                                                                                    \
    }

Q8_DEFINE_IM2COL(q8_conv_u8_im2col_freq, uint8_t, 0, Q8_RQ_FREQ)
Q8_DEFINE_IM2COL(q8_conv_s8_im2col_freq, int8_t, 1, Q8_RQ_FREQ)
Q8_DEFINE_IM2COL(q8_conv_u8_im2col_ireq, uint8_t, 0, Q8_RQ_IREQ)
Q8_DEFINE_IM2COL(q8_conv_s8_im2col_ireq, int8_t, 1, Q8_RQ_IREQ)
