/* maxpool.c - MaxPool on 8-bit, 16-bit and float32 NCHW tensors, exact (no arithmetic). One
 * plane at a time: the output may overlap the input planes already done (codegen plans
 * it so), so input and output are not restrict-qualified. */
#include <float.h>

#include "q8_runtime.h"
#include "q8_window.h"

Q8_INLINE void maxpool(const q8_pool_params *p, const uint8_t *x, uint8_t *y, int is_signed)
{
    const q8_window *win = &p->window;
    const int32_t H = p->input.h, W = p->input.w;
    const int32_t OH = p->output.h, OW = p->output.w;
    const int32_t planes = p->input.n * p->input.c;
    const int32_t lowest = is_signed ? -128 : 0;
    int32_t plane, oh, ow, kh, kw;

    for (plane = 0; plane < planes; plane++) {
        const uint8_t *x_p = x + (size_t)plane * (size_t)(H * W);
        uint8_t *y_p = y + (size_t)plane * (size_t)(OH * OW);
        for (oh = 0; oh < OH; oh++) {
            const int32_t ih0 = oh * win->stride_h - win->pad_top;
            const int32_t kh_begin = q8_window_first_tap(ih0, win->dilation_h, win->kernel_h);
            const int32_t kh_end = q8_window_end_tap(ih0, win->dilation_h, H, win->kernel_h);
            for (ow = 0; ow < OW; ow++) {
                const int32_t iw0 = ow * win->stride_w - win->pad_left;
                const int32_t kw_begin = q8_window_first_tap(iw0, win->dilation_w, win->kernel_w);
                const int32_t kw_end = q8_window_end_tap(iw0, win->dilation_w, W, win->kernel_w);
                int32_t best = lowest;
                for (kh = kh_begin; kh < kh_end; kh++) {
                    const uint8_t *row = x_p + (size_t)(ih0 + kh * win->dilation_h) * (size_t)W;
                    for (kw = kw_begin; kw < kw_end; kw++) {
                        const uint8_t raw = row[iw0 + kw * win->dilation_w];
                        const int32_t v = is_signed ? (int32_t)(int8_t)raw : (int32_t)raw;
                        best = v > best ? v : best;
                    }
                }
                y_p[oh * OW + ow] = (uint8_t)best;
            }
        }
    }
}

void q8_maxpool_u8(const q8_pool_params *params, const uint8_t *input,
                   uint8_t *output)
{
    maxpool(params, input, output, 0);
}

void q8_maxpool_s8(const q8_pool_params *params, const int8_t *input,
                   int8_t *output)
{
    maxpool(params, (const uint8_t *)input, (uint8_t *)output, 1);
}

/* 16-bit: an empty window (all padding) gives the type's lowest value, as the 8-bit
 * kernels give theirs (ORT's float MaxPool gives -FLT_MAX, which quantizes to it). */
#define Q8_MAXPOOL16(NAME, T, LOWEST)                                                          \
    void NAME(const q8_pool_params *params, const T *input, T *output)                        \
    {                                                                                          \
        const q8_window *win = &params->window;                                                \
        const int32_t H = params->input.h, W = params->input.w;                                \
        const int32_t OH = params->output.h, OW = params->output.w;                            \
        const int32_t planes = params->input.n * params->input.c;                              \
        int32_t plane, oh, ow, kh, kw;                                                         \
        for (plane = 0; plane < planes; plane++) {                                             \
            const T *x_p = input + (size_t)plane * (size_t)(H * W);                            \
            T *y_p = output + (size_t)plane * (size_t)(OH * OW);                               \
            for (oh = 0; oh < OH; oh++) {                                                      \
                const int32_t ih0 = oh * win->stride_h - win->pad_top;                         \
                const int32_t kh0 = q8_window_first_tap(ih0, win->dilation_h, win->kernel_h);  \
                const int32_t kh1 = q8_window_end_tap(ih0, win->dilation_h, H, win->kernel_h); \
                for (ow = 0; ow < OW; ow++) {                                                  \
                    const int32_t iw0 = ow * win->stride_w - win->pad_left;                    \
                    const int32_t kw0 = q8_window_first_tap(iw0, win->dilation_w, win->kernel_w); \
                    const int32_t kw1 = q8_window_end_tap(iw0, win->dilation_w, W, win->kernel_w); \
                    int32_t best = LOWEST;                                                     \
                    for (kh = kh0; kh < kh1; kh++) {                                           \
                        const T *row = x_p + (size_t)(ih0 + kh * win->dilation_h) * (size_t)W; \
                        for (kw = kw0; kw < kw1; kw++) {                                       \
                            const int32_t v = (int32_t)row[iw0 + kw * win->dilation_w];        \
                            best = v > best ? v : best;                                        \
                        }                                                                      \
                    }                                                                          \
                    y_p[oh * OW + ow] = (T)best;                                               \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
    }

Q8_MAXPOOL16(q8_maxpool_s16, int16_t, -32768)
Q8_MAXPOOL16(q8_maxpool_u16, uint16_t, 0)

void q8_maxpool_f32(const q8_pool_params *params, const float *input,
                    float *output)
{
    const q8_window *win = &params->window;
    const int32_t H = params->input.h, W = params->input.w;
    const int32_t OH = params->output.h, OW = params->output.w;
    const int32_t planes = params->input.n * params->input.c;
    int32_t plane, oh, ow, kh, kw;

    for (plane = 0; plane < planes; plane++) {
        const float *x_p = input + (size_t)plane * (size_t)(H * W);
        float *y_p = output + (size_t)plane * (size_t)(OH * OW);
        for (oh = 0; oh < OH; oh++) {
            const int32_t ih0 = oh * win->stride_h - win->pad_top;
            const int32_t kh_begin = q8_window_first_tap(ih0, win->dilation_h, win->kernel_h);
            const int32_t kh_end = q8_window_end_tap(ih0, win->dilation_h, H, win->kernel_h);
            for (ow = 0; ow < OW; ow++) {
                const int32_t iw0 = ow * win->stride_w - win->pad_left;
                const int32_t kw_begin = q8_window_first_tap(iw0, win->dilation_w, win->kernel_w);
                const int32_t kw_end = q8_window_end_tap(iw0, win->dilation_w, W, win->kernel_w);
                float best = -FLT_MAX;
                for (kh = kh_begin; kh < kh_end; kh++) {
                    const float *row = x_p + (size_t)(ih0 + kh * win->dilation_h) * (size_t)W;
                    for (kw = kw_begin; kw < kw_end; kw++) {
                        const float v = row[iw0 + kw * win->dilation_w];
                        best = v > best ? v : best;
                    }
                }
                y_p[oh * OW + ow] = best;
            }
        }
    }
}
