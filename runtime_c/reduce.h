/* reduce.h - reductions over the trailing axes of a tensor: each of `rows` rows of
 * `length` contiguous elements becomes one value. */
#ifndef Q8_REDUCE_H
#define Q8_REDUCE_H

#include <stdint.h>

#include "q8_runtime.h"

typedef struct {
    int32_t rows;
    int32_t length;
} q8_reduce_params;

/* Float islands, in ONNX Runtime's order: Eigen's SSE sum of each row (four lanes from
 * the first 16-byte-aligned element of the tensor, two packets per step, then the lanes,
 * then the unaligned head and the tail), divided by the length for the mean. */
void q8_reduce_sum_f32(const q8_reduce_params *params, const float *Q8_RESTRICT input,
                       float *Q8_RESTRICT output);
void q8_reduce_mean_f32(const q8_reduce_params *params, const float *Q8_RESTRICT input,
                        float *Q8_RESTRICT output);

/* Exact on any type. */
void q8_reduce_max_u8(const q8_reduce_params *params, const uint8_t *Q8_RESTRICT input,
                      uint8_t *Q8_RESTRICT output);
void q8_reduce_max_s8(const q8_reduce_params *params, const int8_t *Q8_RESTRICT input,
                      int8_t *Q8_RESTRICT output);
void q8_reduce_max_f32(const q8_reduce_params *params, const float *Q8_RESTRICT input,
                       float *Q8_RESTRICT output);
void q8_reduce_min_u8(const q8_reduce_params *params, const uint8_t *Q8_RESTRICT input,
                      uint8_t *Q8_RESTRICT output);
void q8_reduce_min_s8(const q8_reduce_params *params, const int8_t *Q8_RESTRICT input,
                      int8_t *Q8_RESTRICT output);
void q8_reduce_min_f32(const q8_reduce_params *params, const float *Q8_RESTRICT input,
                       float *Q8_RESTRICT output);

/* Max and min over adjacent axes that are not trailing: input [outer, length, inner]
 * becomes [outer, inner] (a channel max of NCHW: outer N, length C, inner H * W). */
typedef struct {
    int32_t outer;
    int32_t length;
    int32_t inner;
} q8_reduce_strided_params;

#define Q8_REDUCE_STRIDED(name, type)                                                   \
    void name(const q8_reduce_strided_params *params, const type *Q8_RESTRICT input,    \
              type *Q8_RESTRICT output);
Q8_REDUCE_STRIDED(q8_reduce_max_strided_u8, uint8_t)
Q8_REDUCE_STRIDED(q8_reduce_max_strided_s8, int8_t)
Q8_REDUCE_STRIDED(q8_reduce_max_strided_f32, float)
Q8_REDUCE_STRIDED(q8_reduce_min_strided_u8, uint8_t)
Q8_REDUCE_STRIDED(q8_reduce_min_strided_s8, int8_t)
Q8_REDUCE_STRIDED(q8_reduce_min_strided_f32, float)
/* Sum and mean on float32 in ORT's orders (reduce.c). */
Q8_REDUCE_STRIDED(q8_reduce_sum_strided_f32, float)
Q8_REDUCE_STRIDED(q8_reduce_mean_strided_f32, float)
#undef Q8_REDUCE_STRIDED

#endif /* Q8_REDUCE_H */
