/*
 * q8_api_matmul.h - integer matrix products: QLinearMatMul, MatMulInteger and QGemm
 * (q8_gemm_*), and the constant-weight fast path (q8_fc_*).
 * (q8_runtime.h includes every family's header.)
 */
#ifndef Q8_API_MATMUL_H
#define Q8_API_MATMUL_H

#include "q8_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Integer matrix products (QLinearMatMul, MatMulInteger, QGemm), batched:
 *   acc[b][i][j] = sum_p (A[i][p] - a_zp) * (B[p][j] - b_zp[j]) + bias[i][j]
 * with A[i][p] = a[a_offset[b] + i*a_stride_m + p*a_stride_k] (transposes are strides)
 * and B[p][j] = b[b_offset[b] + p*b_stride_k + j*b_stride_n]. The output is dense
 * [batches][m][n]. Per-column parameters (b_zero_point, requant scale/mult/exp) are
 * read at param_offset[b] + j when per_column is set, else at param_offset[b].
 * Accumulation is modulo 2^32, as ORT's int32 arithmetic.
 * Variants: q8_gemm_<a><b>_<out>, a and b in {u8, s8}; out is freq/ireq (8-bit,
 * requantized like QLinearConv; uint8 or int8, as act_min/act_max say), i32 (raw
 * accumulator) or f32 (f32((float)acc * scale)).
 */
typedef struct {
    int32_t batches;
    const int32_t *a_offset;
    const int32_t *b_offset;
    const int32_t *param_offset;
    int32_t m;
    int32_t k;
    int32_t n;
    int32_t a_stride_m;
    int32_t a_stride_k;
    int32_t b_stride_k;
    int32_t b_stride_n;
    int32_t a_zero_point;
    const int32_t *b_zero_point;
    int32_t per_column;
    const int32_t *bias; /* NULL, or read at i*bias_stride_m + j*bias_stride_n */
    int32_t bias_stride_m;
    int32_t bias_stride_n;
    q8_requant_params requant;
} q8_gemm_params;

#define Q8_DECLARE_GEMM(A, B, TA, TB)                                                           \
    void q8_gemm_##A##B##_freq(const q8_gemm_params *params, const TA *Q8_RESTRICT a,           \
                               const TB *Q8_RESTRICT b, void *Q8_RESTRICT y);                   \
    void q8_gemm_##A##B##_ireq(const q8_gemm_params *params, const TA *Q8_RESTRICT a,           \
                               const TB *Q8_RESTRICT b, void *Q8_RESTRICT y);                   \
    void q8_gemm_##A##B##_i32(const q8_gemm_params *params, const TA *Q8_RESTRICT a,            \
                              const TB *Q8_RESTRICT b, int32_t *Q8_RESTRICT y);                 \
    void q8_gemm_##A##B##_f32(const q8_gemm_params *params, const TA *Q8_RESTRICT a,            \
                              const TB *Q8_RESTRICT b, float *Q8_RESTRICT y);

Q8_DECLARE_GEMM(u8, u8, uint8_t, uint8_t)
Q8_DECLARE_GEMM(u8, s8, uint8_t, int8_t)
Q8_DECLARE_GEMM(s8, u8, int8_t, uint8_t)
Q8_DECLARE_GEMM(s8, s8, int8_t, int8_t)

/*
 * Matrix products with constant weights, fast path (fully_connected.c): y[m][n] for A
 * [m][k] (dense rows) and weights int8, each group of four stored as w0, w2, w1, w3,
 * zero-padded to k_padded; the rows in blocks of four (the last padded with zero rows)
 * interleaved per group: [n_padded/4][k_padded/4][4][4], 8-byte aligned. bias[n] = C -
 * a_zp * sum(W[n]) (modulo 2^32), one per padded row; requantization per column (or float
 * output, scale only). scratch: k_padded int16, 8-byte aligned.
 */
typedef struct {
    int32_t m;
    int32_t k;
    int32_t k_padded;
    int32_t n;
    const int8_t *weights;
    const int32_t *bias;
    q8_requant_params requant;
} q8_fc_params;

/* The scratch of q8_fc_*, in bytes: the input row widened to int16, k_padded taps. */
static inline size_t q8_fc_scratch_bytes(const q8_fc_params *params)
{
    return (size_t)params->k_padded * sizeof(int16_t);
}

#define Q8_DECLARE_FC(A, TA)                                                                \
    void q8_fc_##A##_freq(const q8_fc_params *params, const TA *Q8_RESTRICT input,         \
                          void *Q8_RESTRICT output, int16_t *Q8_RESTRICT scratch);         \
    void q8_fc_##A##_ireq(const q8_fc_params *params, const TA *Q8_RESTRICT input,         \
                          void *Q8_RESTRICT output, int16_t *Q8_RESTRICT scratch);         \
    void q8_fc_##A##_f32(const q8_fc_params *params, const TA *Q8_RESTRICT input,          \
                         float *Q8_RESTRICT output, int16_t *Q8_RESTRICT scratch);

Q8_DECLARE_FC(u8, uint8_t)
Q8_DECLARE_FC(s8, int8_t)

/*
 * The same parameters on Helium (MVE) cores (fully_connected_mve.c): weights int8, rows of
 * K taps zero-padded to k_padded (a multiple of 16), in blocks of eight rows (the last
 * padded with zero rows, the bias too) interleaved per 16 taps: [n_padded/8][k_padded/16]
 * [8][16]. bias[n] = C - a'_zp * sum(W[n]) (modulo 2^32), a'_zp = a_zp for int8 input and
 * a_zp - 128 for uint8 (the row is taken less 128). scratch: k_padded bytes.
 */
static inline size_t q8_fc_mve_scratch_bytes(const q8_fc_params *params)
{
    return (size_t)params->k_padded;
}

#define Q8_DECLARE_FC_MVE(A, TA)                                                            \
    void q8_fc_##A##_mve_freq(const q8_fc_params *params, const TA *Q8_RESTRICT input,     \
                              void *Q8_RESTRICT output, int8_t *Q8_RESTRICT scratch);      \
    void q8_fc_##A##_mve_ireq(const q8_fc_params *params, const TA *Q8_RESTRICT input,     \
                              void *Q8_RESTRICT output, int8_t *Q8_RESTRICT scratch);      \
    void q8_fc_##A##_mve_f32(const q8_fc_params *params, const TA *Q8_RESTRICT input,      \
                             float *Q8_RESTRICT output, int8_t *Q8_RESTRICT scratch);

Q8_DECLARE_FC_MVE(u8, uint8_t)
Q8_DECLARE_FC_MVE(s8, int8_t)

/*
 * The same with wide weights (fully_connected.c): int16 [n_padded / 4][k_padded / 4][4
 * rows][4 taps], n_padded the next multiple of 4 (zero rows; bias has n_padded entries),
 * k_padded a multiple of 8; weights and scratch 8-byte aligned.
 */
typedef struct {
    int32_t m;
    int32_t k;
    int32_t k_padded;
    int32_t n;
    const int16_t *weights;
    const int32_t *bias;
    q8_requant_params requant;
} q8_fc_w16_params;

/* The scratch of q8_fc_*_w16_*, in bytes: the input row widened to int16, k_padded taps. */
static inline size_t q8_fc_w16_scratch_bytes(const q8_fc_w16_params *params)
{
    return (size_t)params->k_padded * sizeof(int16_t);
}

#define Q8_DECLARE_FC_W16(A, TA)                                                            \
    void q8_fc_##A##_w16_freq(const q8_fc_w16_params *params, const TA *Q8_RESTRICT input,  \
                              void *Q8_RESTRICT output, int16_t *Q8_RESTRICT scratch);      \
    void q8_fc_##A##_w16_ireq(const q8_fc_w16_params *params, const TA *Q8_RESTRICT input,  \
                              void *Q8_RESTRICT output, int16_t *Q8_RESTRICT scratch);      \
    void q8_fc_##A##_w16_f32(const q8_fc_w16_params *params, const TA *Q8_RESTRICT input,   \
                             float *Q8_RESTRICT output, int16_t *Q8_RESTRICT scratch);

Q8_DECLARE_FC_W16(u8, uint8_t)
Q8_DECLARE_FC_W16(s8, int8_t)

#ifdef __cplusplus
}
#endif

#endif /* Q8_API_MATMUL_H */
