/*
 * q8_api_float.h - the float32 kernels of float islands (Conv, Gemm, elementwise,
 * pools, Softmax) in the order of ORT's x86-64 CPU kernels.
 * (q8_runtime.h includes every family's header.)
 */
#ifndef Q8_API_FLOAT_H
#define Q8_API_FLOAT_H

#include "q8_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Float islands: operators a QDQ model leaves in float (ONNX Runtime computes them in
 * float32 too). Each kernel reproduces the order of ORT's x86-64 CPU kernels (MLAS, one
 * thread), so the results are bit-identical to ORT's there; see the kernel files.
 */

/* Conv on float32 NCHW (1-D as h = 1): weights [M][C/groups][kernel_h][kernel_w].
 * algorithm: which of ORT's kernels it follows (conv_f32.c). */
#define Q8_CONV_F32_SGEMM 0     /* MlasConv: im2col products by SGEMM */
#define Q8_CONV_F32_NCHW 1      /* NCHWc output from NCHW input, channel by channel */
#define Q8_CONV_F32_POINTWISE 2 /* NCHWc pointwise: batches of 128 input channels */
#define Q8_CONV_F32_NCHWC 3     /* NCHWc direct (and depthwise: one channel per group) */
typedef struct {
    q8_dims input;
    q8_dims output;
    q8_window window;
    int32_t pad_bottom;
    int32_t pad_right;
    int32_t groups;
    int32_t algorithm;
    const float *weights;
    const float *bias; /* [M] or NULL */
} q8_conv_f32_params;

void q8_conv_f32(const q8_conv_f32_params *params, const float *Q8_RESTRICT input,
                 float *Q8_RESTRICT output);
/* An NCHWc convolution (algorithm not SGEMM) with ORT's fused Add: addend + conv + bias. */
void q8_conv_add_f32(const q8_conv_f32_params *params, const float *Q8_RESTRICT input,
                     const float *Q8_RESTRICT addend, float *Q8_RESTRICT output);

/*
 * Gemm (beta = 1, A not transposed), MatMul and com.microsoft FusedMatMul on float32,
 * batched: y[b] = bias + alpha * (a[b] x b[b or 0]), a dense [m][k], b dense [k][n] or
 * [n][k] (trans_b). The bias element (i, j) is bias[i * bias_stride_m + j * bias_stride_n].
 */
typedef struct {
    int32_t batches;
    int32_t m;
    int32_t k;
    int32_t n;
    int32_t trans_b;
    int32_t b_batched;
    int32_t packed; /* B a float initializer, which ORT prepacks (gemm_f32.c) */
    float alpha; /* 1: a plain product */
    const float *bias; /* NULL: no bias */
    int32_t bias_stride_m;
    int32_t bias_stride_n;
} q8_gemm_f32_params;

void q8_gemm_f32(const q8_gemm_f32_params *params, const float *Q8_RESTRICT a,
                 const float *Q8_RESTRICT b, float *Q8_RESTRICT y);

/* Add and Mul on float32 with numpy broadcasting. */
typedef struct {
    q8_broadcast shape;
} q8_binary_f32_params;

void q8_add_f32(const q8_binary_f32_params *params, const float *a, const float *b, float *y);
void q8_mul_f32(const q8_binary_f32_params *params, const float *a, const float *b, float *y);
void q8_sub_f32(const q8_binary_f32_params *params, const float *a, const float *b, float *y);
void q8_div_f32(const q8_binary_f32_params *params, const float *a, const float *b, float *y);
void q8_prelu_f32(const q8_binary_f32_params *params, const float *a, const float *b, float *y);

/* Sigmoid, Tanh, Exp, Pow, LeakyRelu, HardSigmoid and HardSwish on float32 (alpha:
 * LeakyRelu's slope, Pow's scalar exponent, or HardSigmoid's alpha with beta). */
typedef struct {
    int32_t size;
    float alpha;
    float beta;
} q8_unary_f32_params;

void q8_sigmoid_f32(const q8_unary_f32_params *params, const float *Q8_RESTRICT input,
                    float *Q8_RESTRICT output);
void q8_tanh_f32(const q8_unary_f32_params *params, const float *Q8_RESTRICT input,
                 float *Q8_RESTRICT output);
void q8_exp_f32(const q8_unary_f32_params *params, const float *Q8_RESTRICT input,
                float *Q8_RESTRICT output);
void q8_erf_f32(const q8_unary_f32_params *params, const float *Q8_RESTRICT input,
                float *Q8_RESTRICT output);
void q8_gelu_f32(const q8_unary_f32_params *params, const float *Q8_RESTRICT input,
                 float *Q8_RESTRICT output);
void q8_sqrt_f32(const q8_unary_f32_params *params, const float *Q8_RESTRICT input,
                 float *Q8_RESTRICT output);
void q8_neg_f32(const q8_unary_f32_params *params, const float *Q8_RESTRICT input,
                float *Q8_RESTRICT output);
void q8_abs_f32(const q8_unary_f32_params *params, const float *Q8_RESTRICT input,
                float *Q8_RESTRICT output);
void q8_pow_f32(const q8_unary_f32_params *params, const float *Q8_RESTRICT input,
                float *Q8_RESTRICT output);
void q8_leakyrelu_f32(const q8_unary_f32_params *params, const float *Q8_RESTRICT input,
                      float *Q8_RESTRICT output);
void q8_hardsigmoid_f32(const q8_unary_f32_params *params, const float *Q8_RESTRICT input,
                        float *Q8_RESTRICT output);
void q8_hardswish_f32(const q8_unary_f32_params *params, const float *Q8_RESTRICT input,
                      float *Q8_RESTRICT output);

/* GlobalAveragePool on float32: planes (N * C) of size values each, summed in four
   lanes or (sequential) in one running sum. */
typedef struct {
    int32_t planes;
    int32_t size;
    int32_t sequential;
} q8_global_pool_f32_params;

void q8_global_avgpool_f32(const q8_global_pool_f32_params *params,
                           const float *Q8_RESTRICT input, float *Q8_RESTRICT output);

/*
 * AveragePool on float32 (2-D; 1-D as h = 1). ORT sums in an order that depends on the
 * kernel it picks, which the generator decides: MLAS's vector kernel (column sums, then
 * across), or the taps in (row, column) order (MLAS's generic kernel, the NCHWc kernel,
 * and ORT's own kernel, which counts padding differently).
 */
#define Q8_AVGPOOL_MLAS_VECTOR 0
#define Q8_AVGPOOL_IN_ORDER 1
#define Q8_AVGPOOL_ORT 2
typedef struct {
    q8_dims input;
    q8_dims output;
    q8_window window;
    int32_t pad_bottom;
    int32_t pad_right;
    int32_t count_include_pad;
    int32_t algorithm;
} q8_avgpool_f32_params;

void q8_avgpool_f32(const q8_avgpool_f32_params *params, const float *Q8_RESTRICT input,
                    float *Q8_RESTRICT output);

/* Softmax on float32, the tensor viewed as [outer][length][inner], normalized along length. */
typedef struct {
    int32_t outer;
    int32_t length;
    int32_t inner;
} q8_softmax_f32_params;

void q8_softmax_f32(const q8_softmax_f32_params *params, const float *Q8_RESTRICT input,
                    float *Q8_RESTRICT output);
void q8_logsoftmax_f32(const q8_softmax_f32_params *params, const float *Q8_RESTRICT input,
                       float *Q8_RESTRICT output);

#ifdef __cplusplus
}
#endif

#endif /* Q8_API_FLOAT_H */
