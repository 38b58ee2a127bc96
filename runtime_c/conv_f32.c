/*
 * conv_f32.c - float32 convolution, computed exactly as ONNX Runtime's CPU provider
 * computes Conv<float> (MLAS, one thread, x86-64) when a QDQ model leaves a convolution
 * in float (a "float island").
 *
 * The rounding of a float sum depends on its order, so the order is ORT's:
 *  - per group, the product W[M][K] x cols[K][N] (N = output pixels, K = C/group * taps,
 *    the im2col row order k = (c, ky, kx), padding taps 0.0f);
 *  - pointwise convolutions (stride 1, no padding, 1x1) and those with more filters per
 *    group than output pixels multiply in one product; the others go through output
 *    segments and K blocks of the segmented algorithm (q8_f32_blocking);
 *  - each product splits N and K again by the same rule; with two or more rows each
 *    output accumulates a block with fmaf from 0 and adds it to the previous blocks;
 *    with one row (one filter per group: depthwise) ORT's single-row kernel adds rounded
 *    products four at a time, ((p0 + p1) + p2) + p3, then pairs, then one, into C;
 *  - one output pixel with several filters per group: MLAS's single-row kernel for B
 *    stored [N][K], the operands swapped (single_pixel);
 *  - the bias is added last.
 * The column matrix is never stored: taps are read from the input where they are needed.
 */
#include <math.h>

#include "q8_arith.h"
#include "q8_float.h"
#include "q8_runtime.h"
#include "q8_softfloat.h"

typedef struct {
    const q8_conv_f32_params *p;
    const float *x; /* this image, this group's first channel */
    const float *w; /* this group's first filter */
    float *y;       /* this image, this group's first output channel */
    int32_t rows;   /* filters per group */
    int32_t taps;   /* K */
} conv_group;

/* Element (k, n) of the implicit im2col matrix. */
Q8_INLINE float column_value(const conv_group *g, int32_t k, int32_t n)
{
    const q8_conv_f32_params *p = g->p;
    const q8_window *win = &p->window;
    const int32_t per_channel = win->kernel_h * win->kernel_w;
    const int32_t c = k / per_channel, tap = k % per_channel;
    const int32_t ky = tap / win->kernel_w, kx = tap % win->kernel_w;
    const int32_t oy = n / p->output.w, ox = n % p->output.w;
    const int32_t iy = oy * win->stride_h + ky * win->dilation_h - win->pad_top;
    const int32_t ix = ox * win->stride_w + kx * win->dilation_w - win->pad_left;
    if (iy < 0 || iy >= p->input.h || ix < 0 || ix >= p->input.w) {
        return 0.0f;
    }
    return g->x[((size_t)c * (size_t)p->input.h + (size_t)iy) * (size_t)p->input.w +
                (size_t)ix];
}

Q8_INLINE float product(const conv_group *g, int32_t row, int32_t k, int32_t n)
{
    return q8_mul_unfused(g->w[(size_t)row * (size_t)g->taps + (size_t)k],
                          column_value(g, k, n));
}

/* One output of the single-row kernel over taps [k0, k0 + count), added to c. */
Q8_INLINE float single_row(const conv_group *g, int32_t k0, int32_t count, int32_t n, float c)
{
    int32_t k = k0;
    const int32_t end = k0 + count;
    for (; end - k >= 4; k += 4) {
        float part = (float)(product(g, 0, k, n) + product(g, 0, k + 1, n));
        part = (float)(part + product(g, 0, k + 2, n));
        part = (float)(part + product(g, 0, k + 3, n));
        c = (float)(part + c);
    }
    if (end - k >= 2) {
        const float part = (float)(product(g, 0, k, n) + product(g, 0, k + 1, n));
        c = (float)(part + c);
        k += 2;
    }
    if (end - k == 1) {
        c = (float)(product(g, 0, k, n) + c);
    }
    return c;
}

/* C[rows][n0 : n0 + count_n] (+)= W[:, k0 : k0 + count_k] x cols[k0 : ..][n0 : ..]. */
static void sgemm_block(const conv_group *g, int32_t n0, int32_t count_n, int32_t k0,
                        int32_t count_k, int accumulate)
{
    const size_t pixels = (size_t)g->p->output.h * (size_t)g->p->output.w;
    int32_t stride_n, stride_k, n1, k1, row, n, k;
    if (g->rows == 1) {
        for (n = n0; n < n0 + count_n; n++) {
            g->y[n] = single_row(g, k0, count_k, n, accumulate ? g->y[n] : 0.0f);
        }
        return;
    }
    q8_f32_blocking(count_n, count_k, &stride_n, &stride_k);
    for (n1 = 0; n1 < count_n; n1 += stride_n) {
        const int32_t cn = count_n - n1 < stride_n ? count_n - n1 : stride_n;
        int first = !accumulate;
        for (k1 = 0; k1 < count_k; k1 += stride_k) {
            const int32_t ck = count_k - k1 < stride_k ? count_k - k1 : stride_k;
            for (row = 0; row < g->rows; row++) {
                for (n = n0 + n1; n < n0 + n1 + cn; n++) {
                    float acc = 0.0f;
                    float *out = &g->y[(size_t)row * pixels + (size_t)n];
                    for (k = k0 + k1; k < k0 + k1 + ck; k++) {
                        acc = q8_fmaf(g->w[(size_t)row * (size_t)g->taps + (size_t)k],
                                   column_value(g, k, n), acc);
                    }
                    *out = first ? acc : (float)(*out + acc);
                }
            }
            first = 0;
        }
    }
}

/*
 * One output pixel and several filters: MLAS's SGEMM sees B and C as contiguous
 * columns and swaps the operands into its single-row kernel for B stored [N][K]
 * (KernelM1TransposeBRoutine): per filter, eight lane sums of rounded products over all
 * taps, reduced by the filter's position (q8_mlas_m1t_reduce). The result is stored as
 * it is, before the bias.
 */
static void single_pixel(const conv_group *g)
{
    int32_t row, k;
    for (row = 0; row < g->rows; row++) {
        float l[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
        for (k = 0; k < g->taps; k++) {
            l[k & 7] = (float)(l[k & 7] + product(g, row, k, 0));
        }
        g->y[row] = q8_mlas_m1t_reduce(l, q8_mlas_m1t_group(row, g->rows));
    }
}

Q8_INLINE int is_pointwise(const q8_conv_f32_params *p)
{
    const q8_window *w = &p->window;
    return w->kernel_h == 1 && w->kernel_w == 1 && w->stride_h == 1 && w->stride_w == 1 &&
           w->pad_top == 0 && w->pad_left == 0 && p->pad_bottom == 0 && p->pad_right == 0;
}

/*
 * The NCHWc kernels ORT substitutes for a Conv whose weights are float initializers
 * (its NchwcTransformer, ORT_ENABLE_ALL; measured on ORT 1.32, blocks of 16). Each
 * output adds the group's input channels in batches: per batch, fmaf from 0 over the
 * taps in (ky, kx) order, and for each tap over the batch's channels, taps in the
 * padding skipped; the batch's sum is added to the output of the batches before, and
 * the bias comes last. The batch is one channel for the NCHW-input kernel (fewer input
 * channels than the block) and the depthwise kernel, the 16 channels of a block for the
 * direct NCHWc kernel, and 128 channels for the pointwise kernel (1x1, no padding).
 * With an addend (ORT's fused Add, its Sum input) the output starts as the addend, and
 * every batch is added to it.
 */
static void nchwc_conv(const q8_conv_f32_params *p, const float *input, const float *addend,
                       float *output, int32_t image)
{
    const q8_window *win = &p->window;
    const int32_t group_channels = p->input.c / p->groups;
    const int32_t group_filters = p->output.c / p->groups;
    const int32_t pixels = p->output.h * p->output.w;
    const int32_t taps = win->kernel_h * win->kernel_w;
    const int32_t batch = p->algorithm == Q8_CONV_F32_POINTWISE ? 128
                          : p->algorithm == Q8_CONV_F32_NCHWC ? 16 : 1;
    const size_t in_plane = (size_t)p->input.h * (size_t)p->input.w;
    const float *x = input + (size_t)image * (size_t)p->input.c * in_plane;
    float *y = output + (size_t)image * (size_t)p->output.c * (size_t)pixels;
    const float *sum = addend != NULL
                           ? addend + (size_t)image * (size_t)p->output.c * (size_t)pixels
                           : NULL;
    int32_t m, n, c0, c, t;
    for (m = 0; m < p->output.c; m++) {
        const float *w = p->weights + (size_t)m * (size_t)group_channels * (size_t)taps;
        const float *xg = x + (size_t)(m / group_filters) * (size_t)group_channels * in_plane;
        for (n = 0; n < pixels; n++) {
            const int32_t oy = n / p->output.w, ox = n % p->output.w;
            const size_t at = (size_t)m * (size_t)pixels + (size_t)n;
            float out = sum != NULL ? sum[at] : 0.0f;
            for (c0 = 0; c0 < group_channels; c0 += batch) {
                const int32_t end = group_channels - c0 < batch ? group_channels : c0 + batch;
                float acc = 0.0f;
                for (t = 0; t < taps; t++) {
                    const int32_t ky = t / win->kernel_w, kx = t % win->kernel_w;
                    const int32_t iy = oy * win->stride_h + ky * win->dilation_h - win->pad_top;
                    const int32_t ix = ox * win->stride_w + kx * win->dilation_w -
                                       win->pad_left;
                    if (iy < 0 || iy >= p->input.h || ix < 0 || ix >= p->input.w) {
                        continue;
                    }
                    for (c = c0; c < end; c++) {
                        acc = q8_fmaf(w[(size_t)c * (size_t)taps + (size_t)t],
                                      xg[(size_t)c * in_plane + (size_t)iy * (size_t)p->input.w +
                                         (size_t)ix],
                                      acc);
                    }
                }
                out = c0 == 0 && sum == NULL ? acc : (float)(acc + out);
            }
            if (p->bias != NULL) {
                out = (float)(out + p->bias[m]);
            }
            y[at] = out;
        }
    }
}

void q8_conv_f32(const q8_conv_f32_params *params, const float *Q8_RESTRICT input,
                 float *Q8_RESTRICT output)
{
    const q8_conv_f32_params *p = params;
    const int32_t groups = p->groups;
    const int32_t group_channels = p->input.c / groups;
    const int32_t rows = p->output.c / groups;
    const int32_t taps = group_channels * p->window.kernel_h * p->window.kernel_w;
    const int32_t pixels = p->output.h * p->output.w;
    const size_t in_plane = (size_t)p->input.h * (size_t)p->input.w;
    int32_t image, group, row, n;

    if (p->algorithm != Q8_CONV_F32_SGEMM) {
        for (image = 0; image < p->input.n; image++) {
            nchwc_conv(p, input, NULL, output, image);
        }
        return;
    }
    for (image = 0; image < p->input.n; image++) {
        for (group = 0; group < groups; group++) {
            conv_group g;
            g.p = p;
            g.x = input + ((size_t)image * (size_t)p->input.c +
                           (size_t)group * (size_t)group_channels) * in_plane;
            g.w = p->weights + (size_t)group * (size_t)rows * (size_t)taps;
            g.y = output + ((size_t)image * (size_t)p->output.c +
                            (size_t)group * (size_t)rows) * (size_t)pixels;
            g.rows = rows;
            g.taps = taps;
            if (pixels == 1 && rows > 1) {
                single_pixel(&g);
            } else if (is_pointwise(p) || rows > pixels) {
                sgemm_block(&g, 0, pixels, 0, taps, 0);
            } else {
                int32_t stride_n, stride_k, n0, k0;
                q8_f32_blocking(pixels, taps, &stride_n, &stride_k);
                for (n0 = 0; n0 < pixels; n0 += stride_n) {
                    const int32_t cn = pixels - n0 < stride_n ? pixels - n0 : stride_n;
                    for (k0 = 0; k0 < taps; k0 += stride_k) {
                        const int32_t ck = taps - k0 < stride_k ? taps - k0 : stride_k;
                        sgemm_block(&g, n0, cn, k0, ck, k0 != 0);
                    }
                }
            }
            if (p->bias != NULL) {
                for (row = 0; row < rows; row++) {
                    const float b = p->bias[group * rows + row];
                    float *y_row = g.y + (size_t)row * (size_t)pixels;
                    for (n = 0; n < pixels; n++) {
                        y_row[n] = (float)(y_row[n] + b);
                    }
                }
            }
        }
    }
}

void q8_conv_add_f32(const q8_conv_f32_params *params, const float *Q8_RESTRICT input,
                     const float *Q8_RESTRICT addend, float *Q8_RESTRICT output)
{
    int32_t image;
    for (image = 0; image < params->input.n; image++) {
        nchwc_conv(params, input, addend, output, image);
    }
}
