/*
 * q8_runtime.h - public API of the onnx2mcu integer kernels.
 *
 * Every kernel is a plain C99 function with a small const parameter struct that the
 * code generator fills at generation time. Kernels never allocate; tensors are NCHW,
 * dense, in the layout ONNX defines.
 *
 * Naming: q8_<family>_<activation type>[_<variant>], for example q8_conv_u8_freq is the
 * reference convolution on uint8 activations with float requantization, and
 * q8_conv_u8_ireq the same with integer-only requantization.
 */
#ifndef Q8_RUNTIME_H
#define Q8_RUNTIME_H

#include "q8_names.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define Q8_RESTRICT __restrict
extern "C" {
#else
#define Q8_RESTRICT restrict
#endif

/*
 * Per-layer instruction counting (onnx2mcu run --count-instructions --per-layer) builds
 * the model with Q8_LAYER_MARKS: every layer then starts with a call to the harness's
 * q8_layer_mark(). Otherwise the marks compile to nothing.
 */
#ifdef Q8_LAYER_MARKS
void q8_layer_mark(void);
#define Q8_LAYER_MARK() q8_layer_mark()
#else
#define Q8_LAYER_MARK() ((void)0)
#endif

/* Shape of a 4-D NCHW tensor. 1-D convolutions use h = 1. */
typedef struct {
    int32_t n;
    int32_t c;
    int32_t h;
    int32_t w;
} q8_dims;

/*
 * A sliding window over an NCHW tensor (convolutions and pools). 1-D windows use
 * kernel_h = stride_h = dilation_h = 1 and pad_top = 0. Leading pads may be negative
 * (ORT's SAME padding when kernel < stride).
 */
typedef struct {
    int32_t kernel_h;
    int32_t kernel_w;
    int32_t stride_h;
    int32_t stride_w;
    int32_t dilation_h;
    int32_t dilation_w;
    int32_t pad_top;
    int32_t pad_left;
} q8_window;

/*
 * Requantization of int32 accumulators to 8 bits, per tensor or per output channel.
 *   freq kernels read scale[] (float32, exactly the scale ORT computes);
 *   ireq kernels read mult[] and exp[] with scale = mult * 2^exp, |mult| < 2^24.
 * The result is clamped to [act_min, act_max] (the full 8-bit range unless an
 * activation was folded in) and offset by zero_point.
 */
typedef struct {
    const float *scale;
    const int32_t *mult;
    const int32_t *exp;
    int32_t per_channel; /* 1: index scale/mult/exp by output channel; 0: one value */
    int32_t zero_point;
    int32_t act_min;
    int32_t act_max;
    /* 1: the generator proved |acc * scale| < 2^21 for all inputs (q8_requant_f32_bounded) */
    int32_t bounded;
} q8_requant_params;

/*
 * QLinearConv (1-D and 2-D, grouped, depthwise, dilated, strided, padded).
 * Weights are int8 [M][C/groups][kernel_h][kernel_w]; uint8 weights are stored shifted
 * by -128 together with their zero points, which leaves every product unchanged.
 */
typedef struct {
    q8_dims input;
    q8_dims output;
    q8_window window;
    int32_t groups;
    int32_t input_zero_point;
    const int8_t *weights;
    const int32_t *weight_zero_point;
    int32_t weight_zero_point_per_channel;
    const int32_t *bias; /* [M] or NULL */
    q8_requant_params requant;
} q8_conv_params;

/* ConvInteger: the same loop, int32 output, no requantization (requant unused). */
void q8_conv_u8_i32(const q8_conv_params *params, const uint8_t *Q8_RESTRICT input,
                    int32_t *Q8_RESTRICT output);
void q8_conv_s8_i32(const q8_conv_params *params, const int8_t *Q8_RESTRICT input,
                    int32_t *Q8_RESTRICT output);
/* The 8-bit output is uint8 or int8 whatever the input type, as act_min/act_max say. */
void q8_conv_u8_freq(const q8_conv_params *params, const uint8_t *Q8_RESTRICT input,
                     void *Q8_RESTRICT output);
void q8_conv_s8_freq(const q8_conv_params *params, const int8_t *Q8_RESTRICT input,
                     void *Q8_RESTRICT output);
void q8_conv_u8_ireq(const q8_conv_params *params, const uint8_t *Q8_RESTRICT input,
                     void *Q8_RESTRICT output);
void q8_conv_s8_ireq(const q8_conv_params *params, const int8_t *Q8_RESTRICT input,
                     void *Q8_RESTRICT output);

/*
 * QLinearConv, fast path (conv_*_im2col_*.c): group 1, weight zero point 0. The input
 * and the output may overlap: a 1x1 convolution with stride 1 and no padding may write
 * its output at the input's address (codegen plans it so: a pixel's input is gathered
 * before its outputs are written), so they are not restrict-qualified. Weights are
 * int8, each row the k = C*KH*KW taps in (c, kh, kw) order, zero-padded to a multiple of
 * 4, each group of four stored as w0, w2, w1, w3; the rows in pairs (an odd count padded
 * with a zero row) interleaved per group: [M/2][k_padded/4][2][4], 8-byte aligned.
 * bias[m] = B[m] - x_zp * sum(W[m]) (modulo 2^32), one per padded row; padding taps read
 * pad_value (x_zp). scratch holds two columns: 2 * k_padded int16, 8-byte aligned.
 */
typedef struct {
    q8_dims input;
    q8_dims output;
    q8_window window;
    int32_t pad_value;
    int32_t k_padded;
    const int8_t *weights;
    const int32_t *bias;
    q8_requant_params requant;
    int32_t slab;  /* 0: a column per pixel; else taps per input column (see q8_im2col.h) */
    int32_t chunk; /* slab mode: output pixels of a row per fill */
} q8_conv_im2col_params;

void q8_conv_u8_im2col_freq(const q8_conv_im2col_params *params,
                            const uint8_t *input, void *output,
                            int16_t *Q8_RESTRICT scratch);
void q8_conv_s8_im2col_freq(const q8_conv_im2col_params *params,
                            const int8_t *input, void *output,
                            int16_t *Q8_RESTRICT scratch);
void q8_conv_u8_im2col_ireq(const q8_conv_im2col_params *params,
                            const uint8_t *input, void *output,
                            int16_t *Q8_RESTRICT scratch);
void q8_conv_s8_im2col_ireq(const q8_conv_im2col_params *params,
                            const int8_t *input, void *output,
                            int16_t *Q8_RESTRICT scratch);

/*
 * The same with wide weights (conv_*_im2col_w16*_*.c): int16, output channels in pairs (an odd
 * count padded with a zero row; bias has one entry per padded row), each pair's rows
 * interleaved per two taps: [m][k, k+1], [m+1][k, k+1], [m][k+2, k+3], ...; k_padded a
 * multiple of 8 (below 2^16); weights and scratch 8-byte aligned. The _w16b_ variants
 * take the rows interleaved in blocks of 8 taps instead: [m][k..k+7], [m+1][k..k+7], ...
 * (for cores without the DSP extension, and vectorizing compilers).
 */
typedef struct {
    q8_dims input;
    q8_dims output;
    q8_window window;
    int32_t pad_value;
    int32_t k_padded;
    const int16_t *weights;
    const int32_t *bias;
    q8_requant_params requant;
    int32_t slab;  /* 0: a column per pixel; else taps per input column (see q8_im2col.h) */
    int32_t chunk; /* slab mode: output pixels of a row per fill */
} q8_conv_im2col_w16_params;

void q8_conv_u8_im2col_w16_freq(const q8_conv_im2col_w16_params *params,
                                const uint8_t *input, void *output,
                                int16_t *Q8_RESTRICT scratch);
void q8_conv_s8_im2col_w16_freq(const q8_conv_im2col_w16_params *params,
                                const int8_t *input, void *output,
                                int16_t *Q8_RESTRICT scratch);
void q8_conv_u8_im2col_w16_ireq(const q8_conv_im2col_w16_params *params,
                                const uint8_t *input, void *output,
                                int16_t *Q8_RESTRICT scratch);
void q8_conv_s8_im2col_w16_ireq(const q8_conv_im2col_w16_params *params,
                                const int8_t *input, void *output,
                                int16_t *Q8_RESTRICT scratch);
void q8_conv_u8_im2col_w16b_freq(const q8_conv_im2col_w16_params *params,
                                 const uint8_t *input, void *output,
                                 int16_t *Q8_RESTRICT scratch);
void q8_conv_s8_im2col_w16b_freq(const q8_conv_im2col_w16_params *params,
                                 const int8_t *input, void *output,
                                 int16_t *Q8_RESTRICT scratch);
void q8_conv_u8_im2col_w16b_ireq(const q8_conv_im2col_w16_params *params,
                                 const uint8_t *input, void *output,
                                 int16_t *Q8_RESTRICT scratch);
void q8_conv_s8_im2col_w16b_ireq(const q8_conv_im2col_w16_params *params,
                                 const int8_t *input, void *output,
                                 int16_t *Q8_RESTRICT scratch);

/*
 * The unsigned-byte variant for cores without the DSP extension (conv_*_im2col_b8_*.c):
 * weights u = W + 128 (uint8) [M][k_padded], padding taps 0; k_padded a multiple of
 * 8; bias[m] = B[m] - (x_zp + off) * sum W[m] (modulo 2^32), off = 128 for int8 inputs,
 * else 0. scratch: columns * k_padded int16.
 */
typedef struct {
    q8_dims input;
    q8_dims output;
    q8_window window;
    int32_t pad_value; /* x_zp + off: the columns hold x + off */
    int32_t k_padded;
    int32_t columns; /* pixels per pass: 2, or 4 (Thumb-1 cores, short enough columns) */
    const uint8_t *weights;
    const int32_t *bias;
    q8_requant_params requant;
} q8_conv_im2col_b8_params;

void q8_conv_u8_im2col_b8_freq(const q8_conv_im2col_b8_params *params,
                                const uint8_t *input, void *output,
                                int16_t *Q8_RESTRICT scratch);
void q8_conv_s8_im2col_b8_freq(const q8_conv_im2col_b8_params *params,
                                const int8_t *input, void *output,
                                int16_t *Q8_RESTRICT scratch);
void q8_conv_u8_im2col_b8_ireq(const q8_conv_im2col_b8_params *params,
                                const uint8_t *input, void *output,
                                int16_t *Q8_RESTRICT scratch);
void q8_conv_s8_im2col_b8_ireq(const q8_conv_im2col_b8_params *params,
                                const int8_t *input, void *output,
                                int16_t *Q8_RESTRICT scratch);

/*
 * Depthwise QLinearConv with 3x3 kernels, fast path (dwconv_3x3*.c): channel by channel,
 * so the output may overlap the input channels already done (and, for the variants that
 * read a channel whole into scratch first, that channel too); input and output are not
 * restrict-qualified. One filter per
 * channel (those of channel_list when it is set), dilation 1. weights[c][9] = W - w_zp (int16); bias[c] = B[c] - x_zp *
 * sum(weights[c]) (modulo 2^32); padding taps read pad_value (x_zp). The _padded
 * variants are for layers with padding: scratch holds one padded channel plane,
 * ((OH - 1) * stride_h + 3) * ((OW - 1) * stride_w + 3) bytes.
 */
typedef struct {
    q8_dims input;
    q8_dims output;
    int32_t stride_h;
    int32_t stride_w;
    int32_t pad_top;
    int32_t pad_left;
    int32_t pad_value;
    const int16_t *weights;
    const int32_t *bias;
    q8_requant_params requant;
    int32_t bands; /* _rows variants: bands of two output rows per pass (0 elsewhere) */
    /* the channels to compute, in order (NULL: all), weights, bias and requantization
     * constants given for those only; the others read a constant channel and
     * q8_fill_planes writes their outputs */
    const int16_t *channel_list;
    int32_t channel_count;
} q8_dwconv_params;

void q8_dwconv_u8_3x3_freq(const q8_dwconv_params *params, const uint8_t *input,
                           void *output);
void q8_dwconv_u8_3x3_padded_freq(const q8_dwconv_params *params,
                                  const uint8_t *input, void *output,
                                  void *Q8_RESTRICT scratch);
void q8_dwconv_s8_3x3_freq(const q8_dwconv_params *params, const int8_t *input,
                           void *output);
void q8_dwconv_s8_3x3_padded_freq(const q8_dwconv_params *params,
                                  const int8_t *input, void *output,
                                  void *Q8_RESTRICT scratch);
void q8_dwconv_u8_3x3_ireq(const q8_dwconv_params *params, const uint8_t *input,
                           void *output);
void q8_dwconv_u8_3x3_padded_ireq(const q8_dwconv_params *params,
                                  const uint8_t *input, void *output,
                                  void *Q8_RESTRICT scratch);
void q8_dwconv_s8_3x3_ireq(const q8_dwconv_params *params, const int8_t *input,
                           void *output);
void q8_dwconv_s8_3x3_padded_ireq(const q8_dwconv_params *params,
                                  const int8_t *input, void *output,
                                  void *Q8_RESTRICT scratch);
/* Stride 1 on cores with the DSP extension: two output rows at a time
 * (dwconv_3x3_rows.c); scratch bands * (OW + 2) * 8 + W bytes, 8-byte aligned. */
void q8_dwconv_u8_3x3_rows_freq(const q8_dwconv_params *params,
                                const uint8_t *input, void *output,
                                void *Q8_RESTRICT scratch);
void q8_dwconv_s8_3x3_rows_freq(const q8_dwconv_params *params,
                                const int8_t *input, void *output,
                                void *Q8_RESTRICT scratch);
void q8_dwconv_u8_3x3_rows_ireq(const q8_dwconv_params *params,
                                const uint8_t *input, void *output,
                                void *Q8_RESTRICT scratch);
void q8_dwconv_s8_3x3_rows_ireq(const q8_dwconv_params *params,
                                const int8_t *input, void *output,
                                void *Q8_RESTRICT scratch);

/*
 * A depthwise 3x3 band of generate --memory min on a window of rows gathered from up to
 * three bands of the layer before (dwconv_3x3_gather.c): window row r is row
 * row_index[r] of band row_source[r] (NCHW planes of source_rows[s] rows, n = 1), or
 * padding (the pad value) where row_source[r] < 0. conv.input is the window's shape; no
 * padding above or below (the window holds it). Scratch as the padded kernel's.
 */
typedef struct {
    q8_dwconv_params conv;
    const int8_t *row_source;
    const int16_t *row_index;
    int32_t source_rows[3];
} q8_dwconv_gather_params;

void q8_dwconv_u8_3x3_gather_freq(const q8_dwconv_gather_params *params, const uint8_t *x0,
                                  const uint8_t *x1, const uint8_t *x2, void *output,
                                  void *Q8_RESTRICT scratch);
void q8_dwconv_s8_3x3_gather_freq(const q8_dwconv_gather_params *params, const int8_t *x0,
                                  const int8_t *x1, const int8_t *x2, void *output,
                                  void *Q8_RESTRICT scratch);
void q8_dwconv_u8_3x3_gather_ireq(const q8_dwconv_gather_params *params, const uint8_t *x0,
                                  const uint8_t *x1, const uint8_t *x2, void *output,
                                  void *Q8_RESTRICT scratch);
void q8_dwconv_s8_3x3_gather_ireq(const q8_dwconv_gather_params *params, const int8_t *x0,
                                  const int8_t *x1, const int8_t *x2, void *output,
                                  void *Q8_RESTRICT scratch);

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

#define Q8_DECLARE_FC_W16(A, TA)                                                            \
    void q8_fc_##A##_w16_freq(const q8_fc_w16_params *params, const TA *Q8_RESTRICT input,  \
                              void *Q8_RESTRICT output, int16_t *Q8_RESTRICT scratch);      \
    void q8_fc_##A##_w16_ireq(const q8_fc_w16_params *params, const TA *Q8_RESTRICT input,  \
                              void *Q8_RESTRICT output, int16_t *Q8_RESTRICT scratch);      \
    void q8_fc_##A##_w16_f32(const q8_fc_w16_params *params, const TA *Q8_RESTRICT input,   \
                             float *Q8_RESTRICT output, int16_t *Q8_RESTRICT scratch);

Q8_DECLARE_FC_W16(u8, uint8_t)
Q8_DECLARE_FC_W16(s8, int8_t)

/*
 * QuantizeLinear and DequantizeLinear, per tensor or per axis.
 * The tensor is viewed as [outer][axis_len][inner]; scale and zero_point hold axis_len
 * values when per_axis is 1, else one value.
 */
typedef struct {
    int32_t outer;
    int32_t axis_len;
    int32_t inner;
    int32_t per_axis;
    const float *scale;
    const int32_t *zero_point;
} q8_qdq_params;

/* y = clamp(rne(x / scale) + zero_point); NaN gives the type's minimum, as in ORT. */
void q8_quantize_linear_u8(const q8_qdq_params *params, const float *Q8_RESTRICT input,
                           uint8_t *Q8_RESTRICT output);
void q8_quantize_linear_s8(const q8_qdq_params *params, const float *Q8_RESTRICT input,
                           int8_t *Q8_RESTRICT output);

/* y = (float)(x - zero_point) * scale, rounded once to float32. */
void q8_dequantize_linear_u8(const q8_qdq_params *params, const uint8_t *Q8_RESTRICT input,
                             float *Q8_RESTRICT output);
void q8_dequantize_linear_s8(const q8_qdq_params *params, const int8_t *Q8_RESTRICT input,
                             float *Q8_RESTRICT output);
void q8_dequantize_linear_s32(const q8_qdq_params *params, const int32_t *Q8_RESTRICT input,
                              float *Q8_RESTRICT output);

/*
 * MaxPool over int8/uint8 (1-D and 2-D); padded taps are ignored. A window with no
 * tap inside the input yields the type's minimum.
 */
typedef struct {
    q8_dims input;
    q8_dims output;
    q8_window window;
} q8_pool_params;

void q8_maxpool_u8(const q8_pool_params *params, const uint8_t *input, uint8_t *output);
void q8_maxpool_s8(const q8_pool_params *params, const int8_t *input, int8_t *output);
/* float32: an all-padding window yields -FLT_MAX, as ORT's lowest(). */
void q8_maxpool_f32(const q8_pool_params *params, const float *input, float *output);

/*
 * QLinearGlobalAveragePool (and QLinearAveragePool whose window is the whole input):
 *   acc = sum(x) - x_zp * size, requantized like QLinearConv with
 *   scale = f32(x_scale / f32(y_scale * (float)size)).
 * Element s of channel c of image o is x[(o * size + s) * channels + c]: NCHW tensors
 * use channels = 1 and outer = N*C, channels-last tensors channels = C and outer = N.
 */
typedef struct {
    int32_t outer;
    int32_t channels;
    int32_t size;
    int32_t input_zero_point;
    q8_requant_params requant;
} q8_global_pool_params;

void q8_global_avgpool_u8_freq(const q8_global_pool_params *params,
                               const uint8_t *Q8_RESTRICT input, uint8_t *Q8_RESTRICT output);
void q8_global_avgpool_s8_freq(const q8_global_pool_params *params,
                               const int8_t *Q8_RESTRICT input, int8_t *Q8_RESTRICT output);
void q8_global_avgpool_u8_ireq(const q8_global_pool_params *params,
                               const uint8_t *Q8_RESTRICT input, uint8_t *Q8_RESTRICT output);
void q8_global_avgpool_s8_ireq(const q8_global_pool_params *params,
                               const int8_t *Q8_RESTRICT input, int8_t *Q8_RESTRICT output);

/*
 * QLinearAveragePool, as ORT computes it in float32: each tap is dequantized as
 * f32(x_scale * (float)(x - x_zp)) and summed in window order, the sum is divided by
 * the count (all taps with count_include_pad, else the taps inside the input), and
 * y = (int32)rne(f32(f32(v / y_scale) + (float)y_zp)), clamped; a NaN or a value
 * beyond the int32 range gives the type's minimum, as ORT's conversion does on x86.
 */
typedef struct {
    q8_dims input;
    q8_dims output;
    q8_window window;
    int32_t count_include_pad;
    float x_scale;
    int32_t x_zero_point;
    float y_scale;
    int32_t y_zero_point;
} q8_avgpool_params;

void q8_avgpool_u8(const q8_avgpool_params *params, const uint8_t *Q8_RESTRICT input,
                   uint8_t *Q8_RESTRICT output);
void q8_avgpool_s8(const q8_avgpool_params *params, const int8_t *Q8_RESTRICT input,
                   int8_t *Q8_RESTRICT output);

/*
 * Numpy broadcasting of two inputs to an output of up to Q8_MAX_RANK dimensions: the
 * element at output index i reads a at sum(i[d] * a_stride[d]) (0 on broadcast axes).
 */
#define Q8_MAX_RANK 8
typedef struct {
    int32_t rank;
    int32_t out_shape[Q8_MAX_RANK];
    int32_t a_stride[Q8_MAX_RANK];
    int32_t b_stride[Q8_MAX_RANK];
} q8_broadcast;

/*
 * com.microsoft QLinearAdd, as ORT's AVX2 kernel (bit-exact anywhere through fmaf):
 *   t = fmaf(a, ratio_a, fmaf(b, ratio_b, fixed))          (b_first = 0)
 *   t = fmaf(b, ratio_b, fmaf(a, ratio_a, fixed))          (b_first = 1: ORT's scalar-A path)
 * on the raw 8-bit values, then rounded half to even and saturated. bounded: the
 * generator proved |t| < 2^30, so no value reaches cvtps2dq's overflow (rounded by VCVTR
 * and saturated by SSAT/USAT where the core has them).
 * The _ireq kernels compute the same without floats: the inner fmaf of every byte value
 * is a table of float32 bits (inner_table, indexed by the raw byte of b, or of a when
 * b_first), and the outer one rounds outer * (outer_mult * 2^outer_exp) + inner once,
 * with integers. fast_table (or NULL): the outer term of each byte, then each inner
 * value, as floor(value * 2^20); their sum decides every element not near a half.
 */
typedef struct {
    q8_broadcast shape;
    int32_t b_first;
    float ratio_a;
    float ratio_b;
    float fixed;
    const uint32_t *inner_table;
    int32_t outer_mult;
    int32_t outer_exp;
    int32_t bounded;
    const int32_t *fast_table;
} q8_qadd_params;

void q8_qadd_u8(const q8_qadd_params *params, const uint8_t *a, const uint8_t *b,
                uint8_t *y);
void q8_qadd_s8(const q8_qadd_params *params, const int8_t *a, const int8_t *b, int8_t *y);
void q8_qadd_u8_ireq(const q8_qadd_params *params, const uint8_t *a, const uint8_t *b,
                     uint8_t *y);
void q8_qadd_s8_ireq(const q8_qadd_params *params, const int8_t *a, const int8_t *b,
                     int8_t *y);

/*
 * com.microsoft QLinearMul: t = f32(f32((float)((a - a_zp) * (b - b_zp)) * scale) + y_zp),
 * rounded half to even and saturated (two roundings, never fused). The _ireq kernels do
 * both roundings with integers, from scale = scale_mult * 2^scale_exp.
 */
typedef struct {
    q8_broadcast shape;
    int32_t a_zero_point;
    int32_t b_zero_point;
    float scale;
    int32_t y_zero_point;
    int32_t scale_mult;
    int32_t scale_exp;
} q8_qmul_params;

void q8_qmul_u8(const q8_qmul_params *params, const uint8_t *a, const uint8_t *b,
                uint8_t *y);
void q8_qmul_s8(const q8_qmul_params *params, const int8_t *a, const int8_t *b, int8_t *y);
void q8_qmul_u8_ireq(const q8_qmul_params *params, const uint8_t *a, const uint8_t *b,
                     uint8_t *y);
void q8_qmul_s8_ireq(const q8_qmul_params *params, const int8_t *a, const int8_t *b,
                     int8_t *y);

/* A 256-entry lookup table over raw bytes (int8 by bit pattern): QLinearSigmoid,
   QLinearLeakyRelu, and requantization y = Q(DQ(x)). The tables are computed at
   generation time with ORT's own arithmetic. */
typedef struct {
    int32_t size;
    const uint8_t *table;
} q8_lut_params;

void q8_lut_u8(const q8_lut_params *params, const uint8_t *input, uint8_t *output);
void q8_lut_s8(const q8_lut_params *params, const int8_t *input, int8_t *output);
/* The same over raw bytes, between any two 8-bit types (Requantize int8 -> uint8). */
void q8_lut_bytes(const q8_lut_params *params, const void *input, void *output);

/* A table per channel of [outer, channels, inner]: tables holds channels x 256 bytes. */
typedef struct {
    int32_t outer;
    int32_t channels;
    int32_t inner;
    const uint8_t *tables;
} q8_lut_channels_params;

void q8_lut_channels_u8(const q8_lut_channels_params *params, const uint8_t *input,
                        uint8_t *output);
void q8_lut_channels_s8(const q8_lut_channels_params *params, const int8_t *input,
                        int8_t *output);
/* uint8 in, int8 out or the reverse (a chain quantized to the other type). */
void q8_lut_channels_bytes(const q8_lut_channels_params *params, const void *input,
                           void *output);

/*
 * One input of a Concat: outer blocks of block bytes, written at out_offset + o *
 * out_stride bytes of the output; through table (1-byte elements) when the input is
 * requantized, copied otherwise.
 */
typedef struct {
    int32_t outer;
    int32_t block;
    int32_t out_stride;
    int32_t out_offset;
    const uint8_t *table;
} q8_concat_params;

void q8_concat_slice(const q8_concat_params *params, const void *Q8_RESTRICT input,
                     void *Q8_RESTRICT output);

/*
 * com.microsoft QLinearSoftmax, as ORT computes it. The tensor is viewed as
 * [outer][length][inner]; each (outer, inner) row is normalized along length. With m
 * the row maximum, e = table[byte offset of x from m], sum = the float32 sum of e in
 * row order, y = clamp(rint((double)e * multiplier / sum) + y_zero_point).
 */
typedef struct {
    int32_t outer;
    int32_t length;
    int32_t inner;
    const float *table;
    double multiplier;
    int32_t multiplier_int; /* the same, an integer below 2^29, for the _ireq kernels */
    int32_t y_zero_point;
} q8_qsoftmax_params;

void q8_qsoftmax_u8(const q8_qsoftmax_params *params, const uint8_t *Q8_RESTRICT input,
                    uint8_t *Q8_RESTRICT output);
void q8_qsoftmax_s8(const q8_qsoftmax_params *params, const int8_t *Q8_RESTRICT input,
                    int8_t *Q8_RESTRICT output);
/* The same with integers only: the float32 row sum and the double-precision scaling and
   rounding are reproduced exactly (q8_softfloat.h). */
void q8_qsoftmax_u8_ireq(const q8_qsoftmax_params *params, const uint8_t *Q8_RESTRICT input,
                         uint8_t *Q8_RESTRICT output);
void q8_qsoftmax_s8_ireq(const q8_qsoftmax_params *params, const int8_t *Q8_RESTRICT input,
                         int8_t *Q8_RESTRICT output);

/* Elementwise clamp of integer values (Relu and Clip on int8/uint8 tensors). */
typedef struct {
    int32_t size;
    int32_t min;
    int32_t max;
} q8_clamp_params;

void q8_clamp_u8(const q8_clamp_params *params, const uint8_t *input, uint8_t *output);
void q8_clamp_s8(const q8_clamp_params *params, const int8_t *input, int8_t *output);

/* Relu and Clip on float32: y = min(max(x, min), max). */
typedef struct {
    int32_t size;
    float min;
    float max;
} q8_clamp_f32_params;

void q8_clamp_f32(const q8_clamp_f32_params *params, const float *input, float *output);

/*
 * Transpose of a tensor of up to Q8_MAX_RANK dimensions. For each output axis,
 * in_stride is the input stride (in elements) of the input axis it comes from.
 */
typedef struct {
    int32_t rank;
    int32_t element_size; /* bytes: 1, 2, 4 or 8 */
    int32_t out_shape[Q8_MAX_RANK];
    int32_t in_stride[Q8_MAX_RANK];
} q8_transpose_params;

void q8_transpose(const q8_transpose_params *params, const void *Q8_RESTRICT input,
                  void *Q8_RESTRICT output);

/* Each of `batches` row-major [rows][cols] matrices to [cols][rows] (NHWC <-> NCHW).
 * Output column c = cols - 1 is written after every element of its tile's rows is read
 * (three columns of bytes: of its row),
 * so the output may start up to (cols - 1) * rows elements before the input (codegen
 * plans a model's NHWC input transposed that way); input and output are not
 * restrict-qualified. */
typedef struct {
    int32_t batches;
    int32_t rows;
    int32_t cols;
    int32_t element_size; /* bytes */
} q8_transpose_2d_params;

void q8_transpose_2d(const q8_transpose_2d_params *params, const void *input, void *output);

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
 * Gemm (alpha = 1, beta = 1, A not transposed) and MatMul on float32, batched:
 * y[b] = bias + a[b] x b[b or 0], a dense [m][k], b dense [k][n] or [n][k] (trans_b).
 * The bias element (i, j) is bias[i * bias_stride_m + j * bias_stride_n].
 */
typedef struct {
    int32_t batches;
    int32_t m;
    int32_t k;
    int32_t n;
    int32_t trans_b;
    int32_t b_batched;
    int32_t packed; /* B a float initializer, which ORT prepacks (gemm_f32.c) */
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

/*
 * Row bands (generate --memory min, rows.c): a block of layers computed a few rows at a
 * time. Tensors are NCHW with n = 1, `planes` planes of rows of `row_bytes` bytes; the
 * band buffers hold a window of rows of each plane. Source rows
 * [src_first, src_first + count) go to destination rows [dst_first, dst_first + count);
 * the window and fill kernels write `pad` (a zero point) into every other row they
 * own, which is the padding of the convolutions that read them. No pointer is
 * restrict-qualified: a window may be written over rows of its source already read
 * (the planner gives later buffers the read rows of a banded block's input).
 */
typedef struct {
    int32_t planes;
    int32_t row_bytes;
    int32_t src_rows;  /* rows per plane of the source */
    int32_t dst_rows;  /* rows per plane of the destination */
    int32_t src_first;
    int32_t dst_first;
    int32_t count;
    int32_t pad;
} q8_rows_params;

/* dst: the source's rows, pad elsewhere. */
void q8_rows_window(const q8_rows_params *params, const void *src,
                    void *dst);
/* dst: pad. */
void q8_rows_fill(const q8_rows_params *params, void *dst);
/* dst: prev (in place, or copied), with the fresh rows written over it; the first
 * band of a tensor writes into an unset buffer (no prev). */
void q8_rows_place(const q8_rows_params *params, const void *prev,
                   const void *fresh, void *dst);
void q8_rows_place_first(const q8_rows_params *params, const void *fresh,
                         void *dst);

/* Byte copy, for graph outputs that are graph inputs or constants. */
typedef struct {
    size_t bytes;
} q8_copy_params;

void q8_copy(const q8_copy_params *params, const void *Q8_RESTRICT input,
             void *Q8_RESTRICT output);

#ifdef __cplusplus
}
#endif

#endif /* Q8_RUNTIME_H */
