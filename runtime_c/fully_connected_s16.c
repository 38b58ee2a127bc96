/*
 * fully_connected_s16.c - the reference 16-bit x 8-bit product, in the manner of
 * CMSIS-NN's s16 kernels (arm_fully_connected_s16: int64 accumulation) but with
 * activations of any zero point (ORT's uint16 A16W8 is asymmetric) and the exact
 * requantization of q8_requant_exact.h in place of a Q31 multiplier: every output is the
 * exact value rounded as QuantizeLinear rounds. Each term is at most 65535 * 128 in
 * magnitude, so the int64 sum is exact for any k below 2^39.
 */
#include "fully_connected_s16.h"

#define Q8_FC16_ROW(NAME, T)                                                                 \
    void NAME(const q8_fully_connected_s16_params *params, const T *Q8_RESTRICT x,          \
              T *Q8_RESTRICT y)                                                              \
    {                                                                                        \
        const q8_fully_connected_s16_params *p = params;                                     \
        int32_t r, j, k;                                                                     \
        for (r = 0; r < p->rows; r++) {                                                      \
            const T *row = x + (size_t)r * (size_t)p->k;                                     \
            for (j = 0; j < p->n; j++) {                                                     \
                const int8_t *w = p->w + (size_t)j * (size_t)p->k;                           \
                int64_t acc = p->bias != NULL ? (int64_t)p->bias[j] : 0;                     \
                int64_t q;                                                                   \
                for (k = 0; k < p->k; k++) {                                                 \
                    acc += (int64_t)((int32_t)row[k] - p->x_zero_point) * (int64_t)w[k];    \
                }                                                                            \
                q = q8_requant_fast(acc, &p->multiplier[j]) + p->y_zero_point;               \
                q = q < p->y_min ? p->y_min : q;                                             \
                q = q > p->y_max ? p->y_max : q;                                             \
                y[(size_t)r * (size_t)p->n + (size_t)j] = (T)q;                              \
            }                                                                                \
        }                                                                                    \
    }

Q8_FC16_ROW(q8_fully_connected_s16, int16_t)
Q8_FC16_ROW(q8_fully_connected_u16, uint16_t)
