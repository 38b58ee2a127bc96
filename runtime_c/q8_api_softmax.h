/*
 * q8_api_softmax.h - QLinearSoftmax.
 * (q8_runtime.h includes every family's header.)
 */
#ifndef Q8_API_SOFTMAX_H
#define Q8_API_SOFTMAX_H

#include "q8_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * com.microsoft QLinearSoftmax, as ORT computes it. The tensor is viewed as
 * [outer][length][inner]; each (outer, inner) row is normalized along length. With m
 * the row maximum, e = table[byte offset of x from m], sum = the float32 sum of e in
 * row order, y = clamp(rint((double)e * multiplier / sum) + y_zero_point).
 */
typedef struct {
    int32_t outer;
    int32_t length;
    int32_t inner;
    const float *table;
    double multiplier;
    int32_t multiplier_int; /* the same, an integer below 2^29, for the _ireq kernels */
    int32_t y_zero_point;
} q8_qsoftmax_params;

void q8_qsoftmax_u8(const q8_qsoftmax_params *params, const uint8_t *Q8_RESTRICT input,
                    uint8_t *Q8_RESTRICT output);
void q8_qsoftmax_s8(const q8_qsoftmax_params *params, const int8_t *Q8_RESTRICT input,
                    int8_t *Q8_RESTRICT output);
/* The same with integers only: the float32 row sum and the double-precision scaling and
   rounding are reproduced exactly (q8_softfloat.h). */
void q8_qsoftmax_u8_ireq(const q8_qsoftmax_params *params, const uint8_t *Q8_RESTRICT input,
                         uint8_t *Q8_RESTRICT output);
void q8_qsoftmax_s8_ireq(const q8_qsoftmax_params *params, const int8_t *Q8_RESTRICT input,
                         int8_t *Q8_RESTRICT output);

#ifdef __cplusplus
}
#endif

#endif /* Q8_API_SOFTMAX_H */
