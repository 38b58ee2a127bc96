/*
 * dynamic_quantize_linear.c - DynamicQuantizeLinear as ONNX Runtime 1.32 computes it
 * (q8_dynamic_quant.h: GetQuantizationParameter<uint8_t>, then MlasQuantizeLinear), and
 * MatMulInteger with the zero point it computes.
 */
#include "dynamic_quantize_linear.h"

#include "q8_arith.h"
#include "q8_dynamic_quant.h"

void q8_dynamic_quantize_linear(const q8_dynamic_quantize_params *params,
                                const float *Q8_RESTRICT input, uint8_t *Q8_RESTRICT output,
                                float *Q8_RESTRICT scale_out, uint8_t *Q8_RESTRICT zp_out)
{
    float scale;
    int32_t zp, i;
    q8_dynamic_quantization(input, params->size, &scale, &zp);
    for (i = 0; i < params->size; i++) {
        output[i] = (uint8_t)q8_dynamic_quantize_value(input[i], scale, zp);
    }
    *scale_out = scale;
    *zp_out = (uint8_t)zp;
}

void q8_matmul_integer_dynamic(const q8_matmul_integer_dynamic_params *params,
                               const void *Q8_RESTRICT input, const void *Q8_RESTRICT zero_point,
                               int32_t *Q8_RESTRICT output)
{
    const int32_t za = params->a_signed ? (int32_t)*(const int8_t *)zero_point
                                        : (int32_t)*(const uint8_t *)zero_point;
    int32_t r, j, k;
    for (r = 0; r < params->rows; r++) {
        for (j = 0; j < params->n; j++) {
            int32_t acc = 0;
            for (k = 0; k < params->k; k++) {
                const size_t at = (size_t)r * (size_t)params->k + (size_t)k;
                const int32_t a = params->a_signed ? (int32_t)((const int8_t *)input)[at]
                                                   : (int32_t)((const uint8_t *)input)[at];
                acc += (a - za) * (int32_t)params->b[(size_t)k * (size_t)params->n + (size_t)j];
            }
            output[(size_t)r * (size_t)params->n + (size_t)j] = acc;
        }
    }
}
