/*
 * gemm_f32.c - float32 Gemm and MatMul, computed exactly as ONNX Runtime's CPU provider
 * computes Gemm<float>/MatMul<float> (MLAS SGEMM, one thread, x86-64) for a float island.
 *
 * Y starts as the broadcast bias (Gemm's C, beta = 1) or is overwritten. Then:
 *  - one row (M == 1, batch-1 inference): ORT's single-row kernels. With B stored
 *    [K][N], rounded products are added four at a time, ((p0 + p1) + p2) + p3, then a
 *    pair, then one, into C. With B stored [N][K] (transB), eight lane sums
 *    l[k % 8] += a[k] * b[k] (both rounded), reduced in an order that depends on the
 *    output's position: outputs in full groups of four, then a pair, then a last one;
 *  - more rows and a single column of B stored [K][1]: the [N][K] single-row kernel with
 *    A's rows in the place of B's rows;
 *  - more rows otherwise: N and K blocks as q8_f32_blocking chooses; each output accumulates a
 *    block with fmaf from 0 and adds it to the previous blocks (or to the bias);
 *  - B a float initializer (packed): ORT prepacks it, and every product, one row or more,
 *    goes through MLAS's packed SGEMM: K blocks of 256, each by fmaf from 0 and added to
 *    the previous blocks (or to the bias).
 * alpha other than 1 (com.microsoft FusedMatMul, as ORT's MatMulScaleFusion makes it):
 * MLAS skips its single-row kernels and scales each K block as it stores it, the first
 * f32(acc * alpha), the others fmaf(acc, alpha, y) (measured on ORT 1.32, packed and not).
 */
#include <math.h>

#include "q8_arith.h"
#include "q8_float.h"
#include "q8_runtime.h"
#include "q8_softfloat.h"

/* The single-row kernel of B stored [K][N]: one output. */
Q8_INLINE float row_times_columns(const float *a, const float *b, int32_t k_count,
                                  int32_t n_count, int32_t n, float c)
{
    int32_t k = 0;
    for (; k_count - k >= 4; k += 4) {
        float part = (float)(q8_mul_unfused(a[k], b[(size_t)k * (size_t)n_count + (size_t)n]) +
                             q8_mul_unfused(a[k + 1],
                                            b[(size_t)(k + 1) * (size_t)n_count + (size_t)n]));
        part = (float)(part + q8_mul_unfused(a[k + 2],
                                             b[(size_t)(k + 2) * (size_t)n_count + (size_t)n]));
        part = (float)(part + q8_mul_unfused(a[k + 3],
                                             b[(size_t)(k + 3) * (size_t)n_count + (size_t)n]));
        c = (float)(part + c);
    }
    if (k_count - k >= 2) {
        const float part =
            (float)(q8_mul_unfused(a[k], b[(size_t)k * (size_t)n_count + (size_t)n]) +
                    q8_mul_unfused(a[k + 1], b[(size_t)(k + 1) * (size_t)n_count + (size_t)n]));
        c = (float)(part + c);
        k += 2;
    }
    if (k_count - k == 1) {
        c = (float)(q8_mul_unfused(a[k], b[(size_t)k * (size_t)n_count + (size_t)n]) + c);
    }
    return c;
}

/*
 * The single-row kernel of B stored [N][K]: the dot product of a and one row of B in
 * eight lanes. group is 4 for outputs in full groups of four, 2 for the pair after them
 * and 1 for a last odd output: each reduces the lanes in a different order.
 */
Q8_INLINE float row_dot_row(const float *a, const float *b_row, int32_t k_count, int group)
{
    float l[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    int32_t k;
    for (k = 0; k < k_count; k++) {
        l[k & 7] = (float)(l[k & 7] + q8_mul_unfused(a[k], b_row[k]));
    }
    return q8_mlas_m1t_reduce(l, group);
}

/*
 * outputs[i] = vector . rows[i] for count rows of length k, by the [N][K] single-row
 * kernel: the position of i among the count rows picks the lane reduction.
 */
static void dot_rows(const float *vector, const float *rows, int32_t count, int32_t k,
                     float *outputs, int accumulate)
{
    int32_t i = 0, j;
    for (; count - i >= 4; i += 4) {
        for (j = 0; j < 4; j++) {
            const float r = row_dot_row(vector, rows + (size_t)(i + j) * (size_t)k, k, 4);
            outputs[i + j] = (float)(r + (accumulate ? outputs[i + j] : 0.0f));
        }
    }
    if (count - i >= 2) {
        for (j = 0; j < 2; j++) {
            const float r = row_dot_row(vector, rows + (size_t)(i + j) * (size_t)k, k, 2);
            outputs[i + j] = (float)(r + (accumulate ? outputs[i + j] : 0.0f));
        }
        i += 2;
    }
    if (count - i == 1) {
        const float r = row_dot_row(vector, rows + (size_t)i * (size_t)k, k, 1);
        outputs[i] = (float)(r + (accumulate ? outputs[i] : 0.0f));
    }
}

static void single_row(const q8_gemm_f32_params *p, const float *a, const float *b, float *y,
                       int accumulate)
{
    int32_t n;
    if (p->trans_b) {
        dot_rows(a, b, p->n, p->k, y, accumulate);
        return;
    }
    for (n = 0; n < p->n; n++) {
        y[n] = row_times_columns(a, b, p->k, p->n, n, accumulate ? y[n] : 0.0f);
    }
}

Q8_INLINE float b_at(const q8_gemm_f32_params *p, const float *b, int32_t k, int32_t n)
{
    return p->trans_b ? b[(size_t)n * (size_t)p->k + (size_t)k]
                      : b[(size_t)k * (size_t)p->n + (size_t)n];
}

/* N and K blocks of the given strides; each output accumulates a block with fmaf from 0
 * and adds it to the previous blocks (or to the bias), scaled by alpha when it is not 1. */
static void blocked_rows(const q8_gemm_f32_params *p, const float *a, const float *b, float *y,
                         int accumulate, int32_t stride_n, int32_t stride_k)
{
    int32_t n0, k0, m, n, k;
    for (n0 = 0; n0 < p->n; n0 += stride_n) {
        const int32_t cn = p->n - n0 < stride_n ? p->n - n0 : stride_n;
        int first = !accumulate;
        for (k0 = 0; k0 < p->k; k0 += stride_k) {
            const int32_t ck = p->k - k0 < stride_k ? p->k - k0 : stride_k;
            for (m = 0; m < p->m; m++) {
                const float *a_row = a + (size_t)m * (size_t)p->k;
                for (n = n0; n < n0 + cn; n++) {
                    float acc = 0.0f;
                    float *out = &y[(size_t)m * (size_t)p->n + (size_t)n];
                    for (k = k0; k < k0 + ck; k++) {
                        acc = q8_fmaf(a_row[k], b_at(p, b, k, n), acc);
                    }
                    if (p->alpha == 1.0f) {
                        *out = first ? acc : (float)(*out + acc);
                    } else {
                        *out = first ? q8_mul_unfused(acc, p->alpha)
                                     : q8_fmaf(acc, p->alpha, *out);
                    }
                }
            }
            first = 0;
        }
    }
}

void q8_gemm_f32(const q8_gemm_f32_params *params, const float *Q8_RESTRICT a,
                 const float *Q8_RESTRICT b, float *Q8_RESTRICT y)
{
    const q8_gemm_f32_params *p = params;
    const size_t a_size = (size_t)p->m * (size_t)p->k, b_size = (size_t)p->k * (size_t)p->n;
    const size_t y_size = (size_t)p->m * (size_t)p->n;
    int32_t batch, m, n;
    for (batch = 0; batch < p->batches; batch++) {
        const float *a_b = a + (size_t)batch * a_size;
        const float *b_b = b + (p->b_batched ? (size_t)batch * b_size : 0u);
        float *y_b = y + (size_t)batch * y_size;
        if (p->bias != NULL) {
            for (m = 0; m < p->m; m++) {
                for (n = 0; n < p->n; n++) {
                    y_b[(size_t)m * (size_t)p->n + (size_t)n] =
                        p->bias[m * p->bias_stride_m + n * p->bias_stride_n];
                }
            }
        }
        if (p->packed) {
            /* The packed SGEMM: K blocks of 256, no N blocking that changes a sum. */
            blocked_rows(p, a_b, b_b, y_b, p->bias != NULL, p->n, 256);
        } else if (p->m == 1 && p->alpha == 1.0f) {
            single_row(p, a_b, b_b, y_b, p->bias != NULL);
        } else if (p->n == 1 && !p->trans_b && p->alpha == 1.0f) {
            /* B is one contiguous column: ORT swaps the operands into the [N][K] kernel,
               A's rows taking the place of B's. */
            dot_rows(b_b, a_b, p->m, p->k, y_b, p->bias != NULL);
        } else {
            int32_t stride_n, stride_k;
            q8_f32_blocking(p->n, p->k, &stride_n, &stride_k);
            blocked_rows(p, a_b, b_b, y_b, p->bias != NULL, stride_n, stride_k);
        }
    }
}
