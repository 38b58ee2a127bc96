/*
 * average_pool_f32.c - float32 AveragePool and GlobalAveragePool (float islands), summed
 * as ONNX Runtime does. GlobalAveragePool:
 *  - MLAS's NCHW kernel: four lane sums L[i % 4] over the first 4 * floor(n / 4) values,
 *    reduced as (L0 + L2) + (L1 + L3), then the remaining values in order;
 *  - the NCHWc kernel ORT switches to when the channels are a multiple of its block
 *    (params->sequential): one running sum in order;
 * then one division by n.
 */
#include "q8_arith.h"
#include "q8_runtime.h"

void q8_global_avgpool_f32(const q8_global_pool_f32_params *params,
                           const float *Q8_RESTRICT input, float *Q8_RESTRICT output)
{
    const int32_t n = params->size, whole = n - n % 4;
    int32_t plane, i;
    for (plane = 0; plane < params->planes; plane++) {
        const float *x = input + (size_t)plane * (size_t)n;
        float lane[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        float sum = 0.0f;
        if (params->sequential) {
            for (i = 0; i < n; i++) {
                sum = (float)(sum + x[i]);
            }
            output[plane] = (float)(sum / (float)n);
            continue;
        }
        for (i = 0; i < whole; i++) {
            lane[i & 3] = (float)(lane[i & 3] + x[i]);
        }
        sum = (float)((float)(lane[0] + lane[2]) + (float)(lane[1] + lane[3]));
        for (i = whole; i < n; i++) {
            sum = (float)(sum + x[i]);
        }
        output[plane] = (float)(sum / (float)n);
    }
}

/* Sum of input column iw over rows [first, end), started from the first row's value. */
Q8_INLINE float column_sum(const float *x, int32_t w, int32_t iw, int32_t first, int32_t end)
{
    float r = x[(size_t)first * (size_t)w + (size_t)iw];
    int32_t ih;
    for (ih = first + 1; ih < end; ih++) {
        r = (float)(r + x[(size_t)ih * (size_t)w + (size_t)iw]);
    }
    return r;
}

/*
 * MLAS's vector kernel: per output row, the window's rows are summed down each column
 * (a window starting in the top padding, or past the bottom edge, starts at row 0), the
 * columns are then summed across the window, with the padding columns as 0.0f, and
 * divided by the window size or by max(1, columns inside * rows) computed in float.
 */
static void pool_plane_mlas_vector(const q8_avgpool_f32_params *p, const float *x, float *y)
{
    const q8_window *win = &p->window;
    const int32_t H = p->input.h, W = p->input.w, pl = win->pad_left;
    int32_t oh, ow, k;
    for (oh = 0; oh < p->output.h; oh++) {
        const int32_t start = oh * win->stride_h - win->pad_top;
        const int32_t end = start + win->kernel_h < H ? start + win->kernel_h : H;
        const int32_t first = (start < 0 || start >= H) ? 0 : start;
        const float rows = (float)(end - first);
        for (ow = 0; ow < p->output.w; ow++) {
            const int32_t s = ow * win->stride_w;
            float r = 0.0f;
            for (k = 0; k < win->kernel_w; k++) {
                const int32_t iw = s + k - pl;
                const float column = (iw < 0 || iw >= W) ? 0.0f : column_sum(x, W, iw, first, end);
                r = k == 0 ? column : (float)(r + column);
            }
            if (p->count_include_pad) {
                r = (float)(r / (float)(win->kernel_h * win->kernel_w));
            } else {
                const float lo = (float)s > (float)pl ? (float)s : (float)pl;
                const float hi = (float)(s + win->kernel_w) < (float)(pl + W)
                                     ? (float)(s + win->kernel_w) : (float)(pl + W);
                const float size = (float)((float)(hi - lo) * rows);
                r = (float)(r / (size > 1.0f ? size : 1.0f));
            }
            y[(size_t)oh * (size_t)p->output.w + (size_t)ow] = r;
        }
    }
}

/*
 * The other kernels sum the taps inside the input from 0.0f in (row, column) order and
 * differ in the divisor: MLAS's generic kernel and the NCHWc kernel count the whole
 * window with count_include_pad; ORT's own kernel (AveragePool-19 and later) counts
 * the window clipped to the padded input.
 */
static void pool_plane_in_order(const q8_avgpool_f32_params *p, const float *x, float *y)
{
    const q8_window *win = &p->window;
    const int32_t H = p->input.h, W = p->input.w;
    int32_t oh, ow, ih, iw;
    for (oh = 0; oh < p->output.h; oh++) {
        const int32_t hs = oh * win->stride_h - win->pad_top;
        int32_t he = hs + win->kernel_h;
        for (ow = 0; ow < p->output.w; ow++) {
            const int32_t ws = ow * win->stride_w - win->pad_left;
            int32_t we = ws + win->kernel_w;
            int32_t count = 0, divisor;
            float sum = 0.0f;
            for (ih = hs < 0 ? 0 : hs; ih < he && ih < H; ih++) {
                for (iw = ws < 0 ? 0 : ws; iw < we && iw < W; iw++) {
                    sum = (float)(sum + x[(size_t)ih * (size_t)W + (size_t)iw]);
                    count++;
                }
            }
            if (p->algorithm == Q8_AVGPOOL_ORT) {
                he = he < H + p->pad_bottom ? he : H + p->pad_bottom;
                we = we < W + p->pad_right ? we : W + p->pad_right;
                divisor = p->count_include_pad ? (he - hs) * (we - ws) : count;
                if (count == 0) {
                    divisor = 1; /* ORT leaves the 0 */
                }
            } else {
                divisor = p->count_include_pad ? win->kernel_h * win->kernel_w : count;
            }
            y[(size_t)oh * (size_t)p->output.w + (size_t)ow] = (float)(sum / (float)divisor);
        }
    }
}

void q8_avgpool_f32(const q8_avgpool_f32_params *params, const float *Q8_RESTRICT input,
                    float *Q8_RESTRICT output)
{
    const size_t in_plane = (size_t)params->input.h * (size_t)params->input.w;
    const size_t out_plane = (size_t)params->output.h * (size_t)params->output.w;
    const int32_t planes = params->input.n * params->input.c;
    int32_t plane;
    for (plane = 0; plane < planes; plane++) {
        const float *x = input + (size_t)plane * in_plane;
        float *y = output + (size_t)plane * out_plane;
        if (params->algorithm == Q8_AVGPOOL_MLAS_VECTOR) {
            pool_plane_mlas_vector(params, x, y);
        } else {
            pool_plane_in_order(params, x, y);
        }
    }
}
