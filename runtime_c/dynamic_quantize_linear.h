/* dynamic_quantize_linear.h - DynamicQuantizeLinear: a float tensor quantized to uint8
 * with a scale and zero point computed from its own range at run time, as ONNX Runtime
 * computes them (dynamic_quantize_linear.c). */
#ifndef Q8_DYNAMIC_QUANTIZE_LINEAR_H
#define Q8_DYNAMIC_QUANTIZE_LINEAR_H

#include <stdint.h>

#include "q8_runtime.h"

typedef struct {
    int32_t size; /* values of x */
} q8_dynamic_quantize_params;

/* y (size bytes), its scale (one float) and zero point (one byte). */
void q8_dynamic_quantize_linear(const q8_dynamic_quantize_params *params,
                                const float *Q8_RESTRICT input, uint8_t *Q8_RESTRICT output,
                                float *Q8_RESTRICT scale, uint8_t *Q8_RESTRICT zero_point);

/*
 * MatMulInteger whose A zero point is a tensor computed at run time (DynamicQuantizeLinear's):
 * y[r][j] = sum_k (a[r][k] - a_zp) * b[k][j], exact in int32, with b the constant weights
 * less their zero points (generation time).
 */
typedef struct {
    int32_t rows;     /* of A, every leading axis flattened */
    int32_t k;
    int32_t n;
    int32_t a_signed; /* A and its zero point int8 (else uint8) */
    const int16_t *b; /* [k][n]: B - b_zero_point[n] */
} q8_matmul_integer_dynamic_params;

void q8_matmul_integer_dynamic(const q8_matmul_integer_dynamic_params *params,
                               const void *Q8_RESTRICT input, const void *Q8_RESTRICT zero_point,
                               int32_t *Q8_RESTRICT output);

#endif /* Q8_DYNAMIC_QUANTIZE_LINEAR_H */
