/*
 * q8_api_conv.h - QLinearConv and ConvInteger: the reference loop, the im2col paths (int8,
 * int16 and unsigned-byte weights) and the depthwise 3x3 kernels.
 * (q8_runtime.h includes every family's header.)
 */
#ifndef Q8_API_CONV_H
#define Q8_API_CONV_H

#include "q8_types.h"

#ifdef __cplusplus
extern "C" {
#endif

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
    const void *weights; /* int8_t; int16_t for the _w16 and _w16p variants */
    const int32_t *bias;
    q8_requant_params requant;
    int32_t slab;  /* 0: a column per pixel; else taps per input column (see q8_im2col.h) */
    int32_t chunk; /* slab mode: output pixels of a row per fill */
    int32_t band;  /* _w16p: output rows per flat band (stride 1), 0 for gathered tiles */
} q8_conv_im2col_params;

/* The scratch of the int8 and int16 im2col kernels, in bytes: two int16 columns, or in
 * slab mode (slab > 0) the chunk's slabs and the last column's padding taps. */
static inline size_t q8_conv_im2col_scratch_bytes(const q8_conv_im2col_params *params)
{
    const q8_conv_im2col_params *p = params;
    if (p->slab == 0) {
        return 2u * (size_t)p->k_padded * sizeof(int16_t);
    }
    return ((size_t)((p->chunk - 1) * p->window.stride_w + p->window.kernel_w) *
                (size_t)p->slab +
            (size_t)(p->k_padded - p->window.kernel_w * p->slab)) *
           sizeof(int16_t);
}

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
 * The same parameters on Helium (MVE) cores (conv_*_im2col_mve_*.c, q8_im2col_mve.h):
 * int8 weights, rows of k taps zero-padded to k_padded (a multiple of 16), the rows in
 * fours (the count padded with zero rows) interleaved per 16 taps: [M/4][k_padded/16][4][16].
 * The columns are int8: the input (int8) or x - 128 (uint8); pad_value is x_zp or x_zp - 128
 * accordingly, and bias[m] = B[m] - pad_value * sum(W[m]) (modulo 2^32), one per padded
 * row. slab > 0 (kernels at least two taps wide, dilation 1 across): the taps in (kw, c, kh)
 * order, slab = C * KH, chunk output pixels of a row per fill (see q8_im2col_mve.h); the
 * scratch holds the chunk's slabs, the taps past the last column's KW slabs and 16 bytes.
 * slab 0: two columns of k_padded bytes, each followed by 16 bytes of slack.
 */
static inline size_t q8_conv_im2col_mve_scratch_bytes(const q8_conv_im2col_params *params)
{
    const q8_conv_im2col_params *p = params;
    if (p->slab == 0) {
        return 2u * ((size_t)p->k_padded + 16u);
    }
    return (size_t)((p->chunk - 1) * p->window.stride_w + p->window.kernel_w) * (size_t)p->slab +
           (size_t)(p->k_padded - p->window.kernel_w * p->slab) + 16u;
}
void q8_conv_u8_im2col_mve_freq(const q8_conv_im2col_params *params,
                                const uint8_t *input, void *output,
                                int8_t *Q8_RESTRICT scratch);
void q8_conv_s8_im2col_mve_freq(const q8_conv_im2col_params *params,
                                const int8_t *input, void *output,
                                int8_t *Q8_RESTRICT scratch);
void q8_conv_u8_im2col_mve_ireq(const q8_conv_im2col_params *params,
                                const uint8_t *input, void *output,
                                int8_t *Q8_RESTRICT scratch);
void q8_conv_s8_im2col_mve_ireq(const q8_conv_im2col_params *params,
                                const int8_t *input, void *output,
                                int8_t *Q8_RESTRICT scratch);

/*
 * The same parameters with wide weights (conv_*_im2col_w16_*.c): int16, output channels in pairs (an odd
 * count padded with a zero row; bias has one entry per padded row), each pair's rows
 * interleaved per two taps: [m][k, k+1], [m+1][k, k+1], [m][k+2, k+3], ...; k_padded a
 * multiple of 8 (below 2^16); weights and scratch 8-byte aligned.
 */
void q8_conv_u8_im2col_w16_freq(const q8_conv_im2col_params *params,
                                const uint8_t *input, void *output,
                                int16_t *Q8_RESTRICT scratch);
void q8_conv_s8_im2col_w16_freq(const q8_conv_im2col_params *params,
                                const int8_t *input, void *output,
                                int16_t *Q8_RESTRICT scratch);
void q8_conv_u8_im2col_w16_ireq(const q8_conv_im2col_params *params,
                                const uint8_t *input, void *output,
                                int16_t *Q8_RESTRICT scratch);
void q8_conv_s8_im2col_w16_ireq(const q8_conv_im2col_params *params,
                                const int8_t *input, void *output,
                                int16_t *Q8_RESTRICT scratch);
/*
 * The host's variant (conv_*_im2col_w16p_*.c, q8_im2col_pix.h): output pixels in the
 * vector lanes. Weights int16 [M][KH][KW][C padded to even] (k_padded = KH * KW * the
 * even C; a zero weight for an odd C's last channel); bias as above; slab 0; chunk the
 * pixels per tile (32). band > 0 (stride 1, dilation 1 only): output rows per flat band,
 * the scratch each channel pair's plane of the band's input rows over the padded width
 * (OW + KW - 1) and a tile of slack; band 0: gathered tiles, k_padded * chunk int16.
 */
static inline size_t q8_conv_im2col_w16p_scratch_bytes(const q8_conv_im2col_params *params)
{
    const q8_conv_im2col_params *p = params;
    if (p->band > 0) {
        const size_t wp = (size_t)(p->output.w + p->window.kernel_w - 1);
        return (size_t)((p->input.c + 1) / 2) * 2u *
               ((size_t)(p->band + p->window.kernel_h - 1) * wp + (size_t)p->chunk) *
               sizeof(int16_t);
    }
    return (size_t)p->k_padded * (size_t)p->chunk * sizeof(int16_t);
}
void q8_conv_u8_im2col_w16p_freq(const q8_conv_im2col_params *params,
                                 const uint8_t *input, void *output,
                                 int16_t *Q8_RESTRICT scratch);
void q8_conv_s8_im2col_w16p_freq(const q8_conv_im2col_params *params,
                                 const int8_t *input, void *output,
                                 int16_t *Q8_RESTRICT scratch);
void q8_conv_u8_im2col_w16p_ireq(const q8_conv_im2col_params *params,
                                 const uint8_t *input, void *output,
                                 int16_t *Q8_RESTRICT scratch);
void q8_conv_s8_im2col_w16p_ireq(const q8_conv_im2col_params *params,
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

/* The scratch of the unsigned-byte im2col kernels, in bytes: `columns` int16 columns. */
static inline size_t q8_conv_im2col_b8_scratch_bytes(const q8_conv_im2col_b8_params *params)
{
    return (size_t)params->columns * (size_t)params->k_padded * sizeof(int16_t);
}

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
 * The RV32IM variant (conv_*_im2col_rv_*.c, q8_im2col_rv.h): weights W (int8) in groups
 * of four output channels interleaved per tap, [ceil(M/4)][k_padded][4], k_padded a
 * multiple of 4, padding taps and channels 0; bias[ceil(M/4) * 4] = B - x_zp * sum W
 * (modulo 2^32). The columns hold the input as it is, four pixels side by side per tap;
 * direct: a 1x1 layer with stride 1, no padding and C a multiple of 4, read in place.
 * scratch: 4 * k_padded bytes, and 4 * M more for a direct layer's outputs.
 */
typedef struct {
    q8_dims input;
    q8_dims output;
    q8_window window;
    int32_t pad_value; /* x_zp */
    int32_t k_padded;
    int32_t direct;
    const int8_t *weights;
    const int32_t *bias;
    /* --requant int: each channel's |mult| << 8, product limit, ja, r (q8_requant_rv.h) */
    const uint32_t *ints;
    q8_requant_params requant;
} q8_conv_im2col_rv_params;

static inline size_t q8_conv_im2col_rv_scratch_bytes(const q8_conv_im2col_rv_params *params)
{
    return (size_t)params->k_padded * 4u +
           (params->direct ? (size_t)params->output.c * 4u : 0u);
}

void q8_conv_u8_im2col_rv_freq(const q8_conv_im2col_rv_params *params,
                                const uint8_t *input, void *output,
                                uint8_t *Q8_RESTRICT scratch);
void q8_conv_s8_im2col_rv_freq(const q8_conv_im2col_rv_params *params,
                                const int8_t *input, void *output,
                                uint8_t *Q8_RESTRICT scratch);
void q8_conv_u8_im2col_rv_ireq(const q8_conv_im2col_rv_params *params,
                                const uint8_t *input, void *output,
                                uint8_t *Q8_RESTRICT scratch);
void q8_conv_s8_im2col_rv_ireq(const q8_conv_im2col_rv_params *params,
                                const int8_t *input, void *output,
                                uint8_t *Q8_RESTRICT scratch);

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

/* The scratch of the _padded variants, in bytes: one channel's padded plane, and
 * stride_w spare bytes (the Thumb-1 loop computes an odd row's last output as a pair,
 * whose second output reads past the plane and is not stored). The other variants
 * without _rows take none. */
static inline size_t q8_dwconv_3x3_padded_scratch_bytes(const q8_dwconv_params *params)
{
    const q8_dwconv_params *p = params;
    return (size_t)((p->output.h - 1) * p->stride_h + 3) *
               (size_t)((p->output.w - 1) * p->stride_w + 3) +
           (size_t)p->stride_w;
}

/* The scratch of the _rows variants, in bytes: `bands` bands of four padded rows (8
 * bytes per column), then a row of the padding value. */
static inline size_t q8_dwconv_3x3_rows_scratch_bytes(const q8_dwconv_params *params)
{
    return (size_t)params->bands * (size_t)(params->output.w + 2) * 8u +
           (size_t)params->input.w;
}

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
/* The Helium variant (dwconv_3x3_mve.c): any stride and padding, four outputs in the
 * lanes. Scratch: the padded plane PH x PW (as the _padded variants), 16 bytes of slack,
 * then the flat outputs of a channel at stride 1, ((OH - 1) * PW + OW) rounded up to 4. */
static inline size_t q8_dwconv_3x3_mve_scratch_bytes(const q8_dwconv_params *params)
{
    const q8_dwconv_params *p = params;
    const size_t PW = (size_t)((p->output.w - 1) * p->stride_w + 3);
    const size_t PH = (size_t)((p->output.h - 1) * p->stride_h + 3);
    return PH * PW + 16u + ((size_t)(p->output.h - 1) * PW + (size_t)p->output.w + 3u) / 4u * 4u;
}
void q8_dwconv_u8_3x3_mve_freq(const q8_dwconv_params *params, const uint8_t *input,
                               void *output, void *Q8_RESTRICT scratch);
void q8_dwconv_s8_3x3_mve_freq(const q8_dwconv_params *params, const int8_t *input,
                               void *output, void *Q8_RESTRICT scratch);
void q8_dwconv_u8_3x3_mve_ireq(const q8_dwconv_params *params, const uint8_t *input,
                               void *output, void *Q8_RESTRICT scratch);
void q8_dwconv_s8_3x3_mve_ireq(const q8_dwconv_params *params, const int8_t *input,
                               void *output, void *Q8_RESTRICT scratch);
/* The host's variant (dwconv_3x3_pix.c, q8_dwconv_pix.h): strides 1 and 2 on either axis,
 * with or without padding, outputs in the vector lanes. Scratch: the padded plane PH x PW
 * bytes (PH = (OH - 1) * stride_h + 3, PW likewise) rounded up to 16, then per phase
 * (stride_w of them) the int16 pairs of rows R x L and 64 pairs of slack, where R is PH at
 * stride_h 1 and OH + 1 at 2, and L is PW at stride_w 1 and OW + 1 at 2. */
static inline size_t q8_dwconv_3x3_pix_scratch_bytes(const q8_dwconv_params *params)
{
    const q8_dwconv_params *p = params;
    const size_t ph = (size_t)((p->output.h - 1) * p->stride_h + 3);
    const size_t pw = (size_t)((p->output.w - 1) * p->stride_w + 3);
    const size_t rows = p->stride_h == 1 ? ph : (size_t)p->output.h + 1u;
    const size_t len = p->stride_w == 1 ? pw : (size_t)p->output.w + 1u;
    return ((ph * pw + 15u) & ~(size_t)15u) +
           (size_t)p->stride_w * (rows * len + 64u) * 2u * sizeof(int16_t);
}
void q8_dwconv_u8_3x3_pix_freq(const q8_dwconv_params *params, const uint8_t *input,
                               void *output, void *Q8_RESTRICT scratch);
void q8_dwconv_s8_3x3_pix_freq(const q8_dwconv_params *params, const int8_t *input,
                               void *output, void *Q8_RESTRICT scratch);
void q8_dwconv_u8_3x3_pix_ireq(const q8_dwconv_params *params, const uint8_t *input,
                               void *output, void *Q8_RESTRICT scratch);
void q8_dwconv_s8_3x3_pix_ireq(const q8_dwconv_params *params, const int8_t *input,
                               void *output, void *Q8_RESTRICT scratch);
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

/* The scratch of the _gather variants, in bytes: the padded kernel's. */
static inline size_t q8_dwconv_3x3_gather_scratch_bytes(const q8_dwconv_gather_params *params)
{
    return q8_dwconv_3x3_padded_scratch_bytes(&params->conv);
}

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

#ifdef __cplusplus
}
#endif

#endif /* Q8_API_CONV_H */
