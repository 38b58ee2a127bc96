/* conv_integer_dynamic.h - ConvInteger whose x zero point DynamicQuantizeLinear computes
 * at run time (conv_integer_dynamic.c). */
#ifndef Q8_CONV_INTEGER_DYNAMIC_H
#define Q8_CONV_INTEGER_DYNAMIC_H

#include <stdint.h>

#include "q8_runtime.h"

/*
 * ConvInteger whose x zero point is a tensor computed at run time: the reference int32
 * convolution (q8_conv_{u8,s8}_i32) with the parameters' input_zero_point taken from it
 * (the padding holds that zero point, as in ORT).
 */
void q8_conv_u8_i32_dynamic(const q8_conv_params *params, const uint8_t *Q8_RESTRICT input,
                            const uint8_t *Q8_RESTRICT zero_point, int32_t *Q8_RESTRICT output);
void q8_conv_s8_i32_dynamic(const q8_conv_params *params, const int8_t *Q8_RESTRICT input,
                            const int8_t *Q8_RESTRICT zero_point, int32_t *Q8_RESTRICT output);

#endif /* Q8_CONV_INTEGER_DYNAMIC_H */
