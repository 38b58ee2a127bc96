/*
 * conv_integer_dynamic.c - ConvInteger with a run-time x zero point: the reference int32
 * convolution of qlinear_conv.c with that zero point in its parameters.
 */
#include "conv_integer_dynamic.h"

void q8_conv_u8_i32_dynamic(const q8_conv_params *params, const uint8_t *Q8_RESTRICT input,
                            const uint8_t *Q8_RESTRICT zero_point, int32_t *Q8_RESTRICT output)
{
    q8_conv_params with_zero_point = *params;
    with_zero_point.input_zero_point = (int32_t)*zero_point;
    q8_conv_u8_i32(&with_zero_point, input, output);
}

void q8_conv_s8_i32_dynamic(const q8_conv_params *params, const int8_t *Q8_RESTRICT input,
                            const int8_t *Q8_RESTRICT zero_point, int32_t *Q8_RESTRICT output)
{
    q8_conv_params with_zero_point = *params;
    with_zero_point.input_zero_point = (int32_t)*zero_point;
    q8_conv_s8_i32(&with_zero_point, input, output);
}
