/* reduce.c - reductions over trailing axes, or any adjacent axes for max/min (reduce.h). */
#include "reduce.h"
#include "q8_eigen.h"

void q8_reduce_sum_f32(const q8_reduce_params *params, const float *Q8_RESTRICT input,
                       float *Q8_RESTRICT output)
{
    int32_t r;
    for (r = 0; r < params->rows; r++) {
        output[r] = q8_eigen_sum(input + (size_t)r * (size_t)params->length, params->length,
                              q8_eigen_head(r, params->length));
    }
}

void q8_reduce_mean_f32(const q8_reduce_params *params, const float *Q8_RESTRICT input,
                        float *Q8_RESTRICT output)
{
    const float count = (float)params->length;
    int32_t r;
    for (r = 0; r < params->rows; r++) {
        output[r] = q8_eigen_sum(input + (size_t)r * (size_t)params->length, params->length,
                              q8_eigen_head(r, params->length)) / count;
    }
}

#define Q8_REDUCE_EXTREME(name, type, better)                                           \
    void name(const q8_reduce_params *params, const type *Q8_RESTRICT input,            \
              type *Q8_RESTRICT output)                                                 \
    {                                                                                   \
        int32_t r, i;                                                                   \
        for (r = 0; r < params->rows; r++) {                                            \
            const type *row = input + (size_t)r * (size_t)params->length;               \
            type best = row[0];                                                         \
            for (i = 1; i < params->length; i++) {                                      \
                if (row[i] better best) {                                               \
                    best = row[i];                                                      \
                }                                                                       \
            }                                                                           \
            output[r] = best;                                                           \
        }                                                                               \
    }

Q8_REDUCE_EXTREME(q8_reduce_max_u8, uint8_t, >)
Q8_REDUCE_EXTREME(q8_reduce_max_s8, int8_t, >)
Q8_REDUCE_EXTREME(q8_reduce_max_f32, float, >)
Q8_REDUCE_EXTREME(q8_reduce_min_u8, uint8_t, <)
Q8_REDUCE_EXTREME(q8_reduce_min_s8, int8_t, <)
Q8_REDUCE_EXTREME(q8_reduce_min_f32, float, <)

/* Element (o, i) of the output: the extreme over l of input (o, l, i). */
#define Q8_REDUCE_EXTREME_STRIDED(name, type, better)                                   \
    void name(const q8_reduce_strided_params *params, const type *Q8_RESTRICT input,    \
              type *Q8_RESTRICT output)                                                 \
    {                                                                                   \
        int32_t o, l, i;                                                                \
        const size_t inner = (size_t)params->inner;                                     \
        for (o = 0; o < params->outer; o++) {                                           \
            const type *block = input + (size_t)o * (size_t)params->length * inner;     \
            type *out = output + (size_t)o * inner;                                     \
            for (i = 0; i < params->inner; i++) {                                       \
                out[i] = block[i];                                                      \
            }                                                                           \
            for (l = 1; l < params->length; l++) {                                      \
                const type *row = block + (size_t)l * inner;                            \
                for (i = 0; i < params->inner; i++) {                                   \
                    if (row[i] better out[i]) {                                         \
                        out[i] = row[i];                                                \
                    }                                                                   \
                }                                                                       \
            }                                                                           \
        }                                                                               \
    }

Q8_REDUCE_EXTREME_STRIDED(q8_reduce_max_strided_u8, uint8_t, >)
Q8_REDUCE_EXTREME_STRIDED(q8_reduce_max_strided_s8, int8_t, >)
Q8_REDUCE_EXTREME_STRIDED(q8_reduce_max_strided_f32, float, >)
Q8_REDUCE_EXTREME_STRIDED(q8_reduce_min_strided_u8, uint8_t, <)
Q8_REDUCE_EXTREME_STRIDED(q8_reduce_min_strided_s8, int8_t, <)
Q8_REDUCE_EXTREME_STRIDED(q8_reduce_min_strided_f32, float, <)
