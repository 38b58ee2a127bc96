/*
 * activation_f32.c - float32 Sigmoid, Tanh and LeakyRelu (float islands), as ONNX
 * Runtime's CPU provider computes them: MLAS's logistic approximation, Eigen's tanh
 * approximation, and x or f32(alpha * x).
 */
#include "q8_arith.h"
#include "q8_float.h"
#include "q8_runtime.h"

void q8_sigmoid_f32(const q8_unary_f32_params *params, const float *Q8_RESTRICT input,
                    float *Q8_RESTRICT output)
{
    int32_t i;
    for (i = 0; i < params->size; i++) {
        output[i] = q8_mlas_logistic(input[i]);
    }
}

void q8_tanh_f32(const q8_unary_f32_params *params, const float *Q8_RESTRICT input,
                 float *Q8_RESTRICT output)
{
    int32_t i;
    for (i = 0; i < params->size; i++) {
        output[i] = q8_mlas_tanh(input[i]);
    }
}

void q8_leakyrelu_f32(const q8_unary_f32_params *params, const float *Q8_RESTRICT input,
                      float *Q8_RESTRICT output)
{
    int32_t i;
    for (i = 0; i < params->size; i++) {
        const float x = input[i];
        output[i] = x >= 0.0f ? x : q8_mul_unfused(params->alpha, x);
    }
}
