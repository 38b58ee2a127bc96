/*
 * elementwise_f32.c - float32 Add, Sub, Mul, Div and PRelu with numpy broadcasting (float
 * islands): one rounding per element, as every IEEE-754 implementation gives (PRelu, as
 * ORT's kernel: x where x > 0, else the rounded product x * slope).
 */
#include "q8_arith.h"
#include "q8_index.h"
#include "q8_runtime.h"

/* y[i] = op(a, b) over the broadcast shape; op is one rounded IEEE operation. */
#define Q8_BINARY_F32(name, op)                                                         \
    void name(const q8_binary_f32_params *params, const float *a, const float *b,       \
              float *y)                                                                 \
    {                                                                                   \
        int32_t index[Q8_MAX_RANK];                                                     \
        size_t a_at = 0, b_at = 0, i;                                                   \
        const size_t total = q8_start_index(&params->shape, index);                     \
        for (i = 0; i < total; i++) {                                                   \
            const float x = a[a_at], z = b[b_at];                                       \
            y[i] = op;                                                                  \
            q8_next_index(&params->shape, index, &a_at, &b_at);                         \
        }                                                                               \
    }

Q8_BINARY_F32(q8_add_f32, (float)(x + z))
Q8_BINARY_F32(q8_sub_f32, (float)(x - z))
Q8_BINARY_F32(q8_mul_f32, q8_mul_unfused(x, z))
Q8_BINARY_F32(q8_div_f32, (float)(x / z))
Q8_BINARY_F32(q8_prelu_f32, x > 0.0f ? x : q8_mul_unfused(x, z))
