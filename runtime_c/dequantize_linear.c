/*
 * dequantize_linear.c - DequantizeLinear, uint8/int8/uint16/int16/int32 to float32.
 *
 * ORT computes y = f32((float)(x - zp) * scale): one rounding of the product. For
 * int32 inputs (biases) the zero point is 0, and (float)x rounds first, as in ORT.
 */
#include "q8_arith.h"
#include "q8_runtime.h"

#define Q8_DEFINE_DEQUANTIZE(NAME, TYPE)                                                         \
    void NAME(const q8_qdq_params *p, const TYPE *Q8_RESTRICT x, float *Q8_RESTRICT y)           \
    {                                                                                            \
        int32_t o, a, i;                                                                         \
        for (o = 0; o < p->outer; o++) {                                                         \
            for (a = 0; a < p->axis_len; a++) {                                                  \
                const int32_t k = p->per_axis ? a : 0;                                           \
                const float scale = p->scale[k];                                                 \
                const int32_t zp = p->zero_point[k];                                             \
                const size_t base =                                                              \
                    ((size_t)o * (size_t)p->axis_len + (size_t)a) * (size_t)p->inner;            \
                for (i = 0; i < p->inner; i++) {                                                 \
                    y[base + (size_t)i] = (float)((float)((int32_t)x[base + (size_t)i] - zp) *   \
                                                  scale);                                        \
                }                                                                                \
            }                                                                                    \
        }                                                                                        \
    }

Q8_DEFINE_DEQUANTIZE(q8_dequantize_linear_u8, uint8_t)
Q8_DEFINE_DEQUANTIZE(q8_dequantize_linear_s8, int8_t)
Q8_DEFINE_DEQUANTIZE(q8_dequantize_linear_u16, uint16_t)
Q8_DEFINE_DEQUANTIZE(q8_dequantize_linear_s16, int16_t)
Q8_DEFINE_DEQUANTIZE(q8_dequantize_linear_s32, int32_t)
