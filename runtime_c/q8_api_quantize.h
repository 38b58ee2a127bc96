/*
 * q8_api_quantize.h - QuantizeLinear and DequantizeLinear.
 * (q8_runtime.h includes every family's header.)
 */
#ifndef Q8_API_QUANTIZE_H
#define Q8_API_QUANTIZE_H

#include "q8_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * QuantizeLinear and DequantizeLinear, per tensor or per axis.
 * The tensor is viewed as [outer][axis_len][inner]; scale and zero_point hold axis_len
 * values when per_axis is 1, else one value.
 */
typedef struct {
    int32_t outer;
    int32_t axis_len;
    int32_t inner;
    int32_t per_axis;
    const float *scale;
    const int32_t *zero_point;
} q8_qdq_params;

/* y = clamp(rne(x / scale) + zero_point); NaN gives the type's minimum, as in ORT. */
void q8_quantize_linear_u8(const q8_qdq_params *params, const float *Q8_RESTRICT input,
                           uint8_t *Q8_RESTRICT output);
void q8_quantize_linear_s8(const q8_qdq_params *params, const float *Q8_RESTRICT input,
                           int8_t *Q8_RESTRICT output);
void q8_quantize_linear_u16(const q8_qdq_params *params, const float *Q8_RESTRICT input,
                            uint16_t *Q8_RESTRICT output);
void q8_quantize_linear_s16(const q8_qdq_params *params, const float *Q8_RESTRICT input,
                            int16_t *Q8_RESTRICT output);

/* y = (float)(x - zero_point) * scale, rounded once to float32. */
void q8_dequantize_linear_u8(const q8_qdq_params *params, const uint8_t *Q8_RESTRICT input,
                             float *Q8_RESTRICT output);
void q8_dequantize_linear_s8(const q8_qdq_params *params, const int8_t *Q8_RESTRICT input,
                             float *Q8_RESTRICT output);
void q8_dequantize_linear_u16(const q8_qdq_params *params, const uint16_t *Q8_RESTRICT input,
                              float *Q8_RESTRICT output);
void q8_dequantize_linear_s16(const q8_qdq_params *params, const int16_t *Q8_RESTRICT input,
                              float *Q8_RESTRICT output);
void q8_dequantize_linear_s32(const q8_qdq_params *params, const int32_t *Q8_RESTRICT input,
                              float *Q8_RESTRICT output);

#ifdef __cplusplus
}
#endif

#endif /* Q8_API_QUANTIZE_H */
