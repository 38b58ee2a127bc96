/*
 * conv_transpose_f32.c - float32 ConvTranspose as ONNX Runtime's CPU provider computes
 * it (a float island of a QDQ model, or an unquantized layer of a QOperator one):
 *  - per group, the product cols = W^T x X of MLAS's SGEMM with A transposed
 *    (rows m = (filter, ky, kx), columns the input pixels, K = the group's input
 *    channels): N and K cut by MLAS's blocking, each output accumulating a K block with
 *    fmaf from 0 and adding it to the previous blocks (never the single-row kernel,
 *    which MLAS takes only for an untransposed A);
 *  - col2im: the output starts at 0 and each column element is added to the pixel it
 *    lands on, in the order of the rows, then of the input pixels;
 *  - the bias is added last.
 */
#include <string.h>

#include "conv_transpose_f32.h"
#include "q8_float.h"

static void columns(const q8_conv_transpose_f32_params *p, const float *x, const float *w,
                    int32_t channels, int32_t rows, float *cols)
{
    const int32_t pixels = p->input.h * p->input.w;
    int32_t stride_n, stride_k, n0, k0, m, n, k;
    q8_f32_blocking(pixels, channels, &stride_n, &stride_k);
    for (n0 = 0; n0 < pixels; n0 += stride_n) {
        const int32_t cn = pixels - n0 < stride_n ? pixels - n0 : stride_n;
        for (k0 = 0; k0 < channels; k0 += stride_k) {
            const int32_t ck = channels - k0 < stride_k ? channels - k0 : stride_k;
            for (m = 0; m < rows; m++) {
                for (n = n0; n < n0 + cn; n++) {
                    float acc = 0.0f;
                    float *out = &cols[(size_t)m * (size_t)pixels + (size_t)n];
                    for (k = k0; k < k0 + ck; k++) {
                        acc = q8_fmaf(w[(size_t)k * (size_t)rows + (size_t)m],
                                      x[(size_t)k * (size_t)pixels + (size_t)n], acc);
                    }
                    *out = k0 == 0 ? acc : (float)(*out + acc);
                }
            }
        }
    }
}

static void col2im(const q8_conv_transpose_f32_params *p, const float *cols, int32_t filters,
                   float *y)
{
    const q8_window *win = &p->window;
    const int32_t taps = win->kernel_h * win->kernel_w;
    int32_t row, iy, ix;
    for (row = 0; row < filters * taps; row++) {
        const int32_t f = row / taps, ky = (row % taps) / win->kernel_w;
        const int32_t kx = row % win->kernel_w;
        float *plane = y + (size_t)f * (size_t)p->output.h * (size_t)p->output.w;
        for (iy = 0; iy < p->input.h; iy++) {
            const int32_t oy = iy * win->stride_h - win->pad_top + ky * win->dilation_h;
            for (ix = 0; ix < p->input.w; ix++) {
                const int32_t ox = ix * win->stride_w - win->pad_left + kx * win->dilation_w;
                const float v = *cols++;
                if (oy >= 0 && oy < p->output.h && ox >= 0 && ox < p->output.w) {
                    float *out = &plane[(size_t)oy * (size_t)p->output.w + (size_t)ox];
                    *out = (float)(*out + v);
                }
            }
        }
    }
}

void q8_conv_transpose_f32(const q8_conv_transpose_f32_params *params,
                           const float *Q8_RESTRICT input, float *Q8_RESTRICT output,
                           void *Q8_RESTRICT scratch)
{
    const q8_conv_transpose_f32_params *p = params;
    const int32_t channels = p->input.c / p->groups, filters = p->output.c / p->groups;
    const int32_t rows = filters * p->window.kernel_h * p->window.kernel_w;
    const size_t in_plane = (size_t)p->input.h * (size_t)p->input.w;
    const size_t out_plane = (size_t)p->output.h * (size_t)p->output.w;
    float *cols = (float *)scratch;
    int32_t g, f;
    size_t i;

    for (i = 0; i < (size_t)p->output.c * out_plane; i++) {
        output[i] = 0.0f;
    }
    for (g = 0; g < p->groups; g++) {
        columns(p, input + (size_t)g * (size_t)channels * in_plane,
                p->weights + (size_t)g * (size_t)channels * (size_t)rows, channels, rows, cols);
        col2im(p, cols, filters, output + (size_t)g * (size_t)filters * out_plane);
    }
    if (p->bias != NULL) {
        for (f = 0; f < p->output.c; f++) {
            for (i = 0; i < out_plane; i++) {
                output[(size_t)f * out_plane + i] =
                    (float)(output[(size_t)f * out_plane + i] + p->bias[f]);
            }
        }
    }
}
