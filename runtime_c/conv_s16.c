/*
 * conv_s16.c - the reference 16-bit x 8-bit convolution, in the manner of CMSIS-NN's
 * arm_convolve_s16 (int64 accumulation) but with activations of any zero point (ORT's
 * uint16 A16W8 is asymmetric), any group, and the exact requantization of
 * q8_requant_exact.h: every output is the exact value rounded as QuantizeLinear rounds.
 * Taps in the padding are skipped: they read x_zero_point, whose term is 0. Each term
 * is at most 65535 * 128 in magnitude, so the int64 sum is exact for any window.
 */
#include "conv_s16.h"

#include "q8_window.h"

#define Q8_CONV16(NAME, T)                                                                    \
    void NAME(const q8_conv_s16_params *params, const T *Q8_RESTRICT x, T *Q8_RESTRICT y)    \
    {                                                                                         \
        const q8_conv_s16_params *p = params;                                                 \
        const q8_window *win = &p->window;                                                    \
        const int32_t C = p->input.c, H = p->input.h, W = p->input.w;                         \
        const int32_t M = p->output.c, OH = p->output.h, OW = p->output.w;                    \
        const int32_t KH = win->kernel_h, KW = win->kernel_w;                                 \
        const int32_t c_group = C / p->groups, m_group = M / p->groups;                       \
        int32_t n, m, oh, ow, ci, kh, kw;                                                     \
        for (n = 0; n < p->input.n; n++) {                                                    \
            for (m = 0; m < M; m++) {                                                         \
                const int8_t *w_m = p->weights + (size_t)m * (size_t)(c_group * KH * KW);     \
                const T *x_g = x + ((size_t)n * (size_t)C + (size_t)(m / m_group * c_group)) * \
                                       (size_t)(H * W);                                       \
                T *y_m = y + ((size_t)n * (size_t)M + (size_t)m) * (size_t)(OH * OW);         \
                for (oh = 0; oh < OH; oh++) {                                                 \
                    const int32_t ih0 = oh * win->stride_h - win->pad_top;                    \
                    const int32_t kh0 = q8_window_first_tap(ih0, win->dilation_h, KH);        \
                    const int32_t kh1 = q8_window_end_tap(ih0, win->dilation_h, H, KH);       \
                    for (ow = 0; ow < OW; ow++) {                                             \
                        const int32_t iw0 = ow * win->stride_w - win->pad_left;               \
                        const int32_t kw0 = q8_window_first_tap(iw0, win->dilation_w, KW);    \
                        const int32_t kw1 = q8_window_end_tap(iw0, win->dilation_w, W, KW);   \
                        int64_t acc = p->bias != NULL ? (int64_t)p->bias[m] : 0;              \
                        int64_t q;                                                            \
                        for (ci = 0; ci < c_group; ci++) {                                    \
                            const T *x_c = x_g + (size_t)ci * (size_t)(H * W);                \
                            const int8_t *w_c = w_m + (size_t)ci * (size_t)(KH * KW);         \
                            for (kh = kh0; kh < kh1; kh++) {                                  \
                                const T *row = x_c + (size_t)(ih0 + kh * win->dilation_h) *   \
                                                         (size_t)W;                           \
                                for (kw = kw0; kw < kw1; kw++) {                              \
                                    const int32_t v = (int32_t)row[iw0 + kw * win->dilation_w] \
                                                      - p->x_zero_point;                      \
                                    acc += (int64_t)v * (int64_t)w_c[kh * KW + kw];           \
                                }                                                             \
                            }                                                                 \
                        }                                                                     \
                        q = q8_requant_fast(acc, &p->multiplier[m]) + p->y_zero_point;        \
                        q = q < p->y_min ? p->y_min : q;                                      \
                        q = q > p->y_max ? p->y_max : q;                                      \
                        y_m[(size_t)(oh * OW + ow)] = (T)q;                                   \
                    }                                                                         \
                }                                                                             \
            }                                                                                 \
        }                                                                                     \
    }

Q8_CONV16(q8_conv_s16, int16_t)
Q8_CONV16(q8_conv_u16, uint16_t)
