/*
 * q8_api_pool.h - MaxPool, QLinearGlobalAveragePool and QLinearAveragePool on 8-bit tensors.
 * (q8_runtime.h includes every family's header.)
 */
#ifndef Q8_API_POOL_H
#define Q8_API_POOL_H

#include "q8_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * MaxPool over int8/uint8 (1-D and 2-D); padded taps are ignored. A window with no
 * tap inside the input yields the type's minimum.
 */
typedef struct {
    q8_dims input;
    q8_dims output;
    q8_window window;
} q8_pool_params;

void q8_maxpool_u8(const q8_pool_params *params, const uint8_t *input, uint8_t *output);
void q8_maxpool_s8(const q8_pool_params *params, const int8_t *input, int8_t *output);
void q8_maxpool_s16(const q8_pool_params *params, const int16_t *input, int16_t *output);
void q8_maxpool_u16(const q8_pool_params *params, const uint16_t *input, uint16_t *output);
/* float32: an all-padding window yields -FLT_MAX, as ORT's lowest(). */
void q8_maxpool_f32(const q8_pool_params *params, const float *input, float *output);

/*
 * QLinearGlobalAveragePool (and QLinearAveragePool whose window is the whole input):
 *   acc = sum(x) - x_zp * size, requantized like QLinearConv with
 *   scale = f32(x_scale / f32(y_scale * (float)size)).
 * Element s of channel c of image o is x[(o * size + s) * channels + c]: NCHW tensors
 * use channels = 1 and outer = N*C, channels-last tensors channels = C and outer = N.
 */
typedef struct {
    int32_t outer;
    int32_t channels;
    int32_t size;
    int32_t input_zero_point;
    q8_requant_params requant;
} q8_global_pool_params;

void q8_global_avgpool_u8_freq(const q8_global_pool_params *params,
                               const uint8_t *Q8_RESTRICT input, uint8_t *Q8_RESTRICT output);
void q8_global_avgpool_s8_freq(const q8_global_pool_params *params,
                               const int8_t *Q8_RESTRICT input, int8_t *Q8_RESTRICT output);
void q8_global_avgpool_u8_ireq(const q8_global_pool_params *params,
                               const uint8_t *Q8_RESTRICT input, uint8_t *Q8_RESTRICT output);
void q8_global_avgpool_s8_ireq(const q8_global_pool_params *params,
                               const int8_t *Q8_RESTRICT input, int8_t *Q8_RESTRICT output);

/*
 * QLinearAveragePool, as ORT computes it in float32: each tap is dequantized as
 * f32(x_scale * (float)(x - x_zp)) and summed in window order, the sum is divided by
 * the count (all taps with count_include_pad, else the taps inside the input), and
 * y = (int32)rne(f32(f32(v / y_scale) + (float)y_zp)), clamped; a NaN or a value
 * beyond the int32 range gives the type's minimum, as ORT's conversion does on x86.
 */
typedef struct {
    q8_dims input;
    q8_dims output;
    q8_window window;
    int32_t count_include_pad;
    float x_scale;
    int32_t x_zero_point;
    float y_scale;
    int32_t y_zero_point;
} q8_avgpool_params;

void q8_avgpool_u8(const q8_avgpool_params *params, const uint8_t *Q8_RESTRICT input,
                   uint8_t *Q8_RESTRICT output);
void q8_avgpool_s8(const q8_avgpool_params *params, const int8_t *Q8_RESTRICT input,
                   int8_t *Q8_RESTRICT output);

#ifdef __cplusplus
}
#endif

#endif /* Q8_API_POOL_H */
