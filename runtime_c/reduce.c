/* reduce.c - reductions over trailing axes, or any run of adjacent axes (reduce.h). */
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

/*
 * Sums over adjacent axes that are not trailing, input [outer, length, inner], in ORT's
 * orders (measured on ORT 1.32, 0 differing bits):
 *  - outer 1 (the leading axes reduced): one row of inner sums, the length rows added
 *    to it one after the other;
 *  - outer > 1: per outer block, ORT multiplies a vector of ones by the [length][inner]
 *    matrix with MLAS's single-row SGEMM kernel: the values added four at a time,
 *    ((v0 + v1) + v2) + v3, each group into the running sum, then a pair, then one.
 */
static void sum_strided(const q8_reduce_strided_params *p, const float *input, float *output)
{
    const size_t inner = (size_t)p->inner;
    int32_t o, l, i;
    for (o = 0; o < p->outer; o++) {
        const float *block = input + (size_t)o * (size_t)p->length * inner;
        float *out = output + (size_t)o * inner;
        if (p->outer == 1) {
            for (i = 0; i < p->inner; i++) {
                out[i] = block[i];
            }
            for (l = 1; l < p->length; l++) {
                for (i = 0; i < p->inner; i++) {
                    out[i] = (float)(out[i] + block[(size_t)l * inner + (size_t)i]);
                }
            }
            continue;
        }
        for (i = 0; i < p->inner; i++) {
            const float *column = block + i;
            float c = 0.0f;
            l = 0;
            for (; p->length - l >= 4; l += 4) {
                float part = (float)(column[(size_t)l * inner] + column[(size_t)(l + 1) * inner]);
                part = (float)(part + column[(size_t)(l + 2) * inner]);
                part = (float)(part + column[(size_t)(l + 3) * inner]);
                c = (float)(part + c);
            }
            if (p->length - l >= 2) {
                c = (float)((float)(column[(size_t)l * inner] + column[(size_t)(l + 1) * inner]) +
                            c);
                l += 2;
            }
            if (p->length - l == 1) {
                c = (float)(column[(size_t)l * inner] + c);
            }
            out[i] = c;
        }
    }
}

void q8_reduce_sum_strided_f32(const q8_reduce_strided_params *params,
                               const float *Q8_RESTRICT input, float *Q8_RESTRICT output)
{
    sum_strided(params, input, output);
}

void q8_reduce_mean_strided_f32(const q8_reduce_strided_params *params,
                                const float *Q8_RESTRICT input, float *Q8_RESTRICT output)
{
    const float count = (float)params->length;
    const size_t size = (size_t)params->outer * (size_t)params->inner;
    size_t i;
    sum_strided(params, input, output);
    for (i = 0; i < size; i++) {
        output[i] = output[i] / count;
    }
}
