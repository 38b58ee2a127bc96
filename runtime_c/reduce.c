/* reduce.c - reductions over trailing axes (reduce.h). */
#include "reduce.h"

#define LANES 4

/* Eigen's vectorized sum (redux, linear vectorized traversal, SSE Packet4f) of v[0..n),
 * where v[head] is the first element on a 16-byte boundary of the tensor. */
static float eigen_sum(const float *v, int32_t n, int32_t head)
{
    float p0[LANES], p1[LANES], res;
    int32_t size1, size2, i, k;

    if (head > n) {
        head = n;
    }
    size1 = ((n - head) / LANES) * LANES;
    size2 = ((n - head) / (2 * LANES)) * (2 * LANES);
    if (size1 == 0) {
        res = v[0];
        for (i = 1; i < n; i++) {
            res = res + v[i];
        }
        return res;
    }
    for (k = 0; k < LANES; k++) {
        p0[k] = v[head + k];
    }
    if (size1 > LANES) {
        for (k = 0; k < LANES; k++) {
            p1[k] = v[head + LANES + k];
        }
        for (i = head + 2 * LANES; i < head + size2; i += 2 * LANES) {
            for (k = 0; k < LANES; k++) {
                p0[k] = p0[k] + v[i + k];
                p1[k] = p1[k] + v[i + LANES + k];
            }
        }
        for (k = 0; k < LANES; k++) {
            p0[k] = p0[k] + p1[k];
        }
        if (size1 > size2) {
            for (k = 0; k < LANES; k++) {
                p0[k] = p0[k] + v[head + size2 + k];
            }
        }
    }
    res = (p0[0] + p0[2]) + (p0[1] + p0[3]);
    for (i = 0; i < head; i++) {
        res = res + v[i];
    }
    for (i = head + size1; i < n; i++) {
        res = res + v[i];
    }
    return res;
}

/* Elements from row r's start to the next 16-byte boundary of the tensor. */
static int32_t aligned_head(int32_t row, int32_t length)
{
    int32_t misalign = (int32_t)(((int64_t)row * length) % LANES);
    return misalign == 0 ? 0 : LANES - misalign;
}

void q8_reduce_sum_f32(const q8_reduce_params *params, const float *Q8_RESTRICT input,
                       float *Q8_RESTRICT output)
{
    int32_t r;
    for (r = 0; r < params->rows; r++) {
        output[r] = eigen_sum(input + (size_t)r * (size_t)params->length, params->length,
                              aligned_head(r, params->length));
    }
}

void q8_reduce_mean_f32(const q8_reduce_params *params, const float *Q8_RESTRICT input,
                        float *Q8_RESTRICT output)
{
    const float count = (float)params->length;
    int32_t r;
    for (r = 0; r < params->rows; r++) {
        output[r] = eigen_sum(input + (size_t)r * (size_t)params->length, params->length,
                              aligned_head(r, params->length)) / count;
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
