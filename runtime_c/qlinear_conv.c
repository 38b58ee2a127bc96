/*
 * qlinear_conv.c - QLinearConv, reference path (NCHW, direct convolution).
 *
 * The arithmetic follows ONNX exactly: acc = sum (x - x_zp) * (w - w_zp) + bias over
 * the valid (unpadded) kernel taps, which equals ORT's x_zp padding. The accumulation
 * is done modulo 2^32, as ORT's int32 arithmetic is, so no input can overflow a signed
 * type. Requantization is q8_requant_f32 / q8_requant_int from q8_arith.h.
 */
#include "q8_arith.h"
#include "q8_runtime.h"
#include "q8_window.h"

Q8_INLINE int32_t load_act(const uint8_t *p, int is_signed)
{
    return is_signed ? (int32_t)(int8_t)*p : (int32_t)*p;
}

/*
 * The one convolution loop nest, instantiated for each activation type and
 * requantization mode below. Activations are read and written as bytes; int8 data is
 * reinterpreted through a character type, which C allows.
 */

Q8_INLINE void conv_reference(const q8_conv_params *p, const uint8_t *Q8_RESTRICT x,
                              void *Q8_RESTRICT y, int is_signed, int out)
{
    const int32_t C = p->input.c, H = p->input.h, W = p->input.w;
    const int32_t M = p->output.c, OH = p->output.h, OW = p->output.w;
    const q8_window *win = &p->window;
    const int32_t KH = win->kernel_h, KW = win->kernel_w;
    const int32_t c_per_group = C / p->groups;
    const int32_t m_per_group = M / p->groups;
    const int32_t x_zp = p->input_zero_point;
    const q8_requant_params *rq = &p->requant;
    const int32_t lo = rq->act_min - rq->zero_point;
    const int32_t hi = rq->act_max - rq->zero_point;
    int32_t n, m;

    for (n = 0; n < p->input.n; n++) {
        for (m = 0; m < M; m++) {
            const int32_t g = m / m_per_group;
            const int8_t *w_m = p->weights + (size_t)m * (size_t)(c_per_group * KH * KW);
            const int32_t w_zp = p->weight_zero_point[p->weight_zero_point_per_channel ? m : 0];
            const int32_t bias = p->bias ? p->bias[m] : 0;
            const int32_t ch = rq->per_channel ? m : 0;
            const uint8_t *x_g = x + ((size_t)n * (size_t)C + (size_t)(g * c_per_group)) *
                                         (size_t)(H * W);
            const size_t y_m = ((size_t)n * (size_t)M + (size_t)m) * (size_t)(OH * OW);
            int32_t oh, ow;

            for (oh = 0; oh < OH; oh++) {
                const int32_t ih0 = oh * win->stride_h - win->pad_top;
                const int32_t kh_begin = q8_window_first_tap(ih0, win->dilation_h, KH);
                const int32_t kh_end = q8_window_end_tap(ih0, win->dilation_h, H, KH);
                for (ow = 0; ow < OW; ow++) {
                    const int32_t iw0 = ow * win->stride_w - win->pad_left;
                    const int32_t kw_begin = q8_window_first_tap(iw0, win->dilation_w, KW);
                    const int32_t kw_end = q8_window_end_tap(iw0, win->dilation_w, W, KW);
                    uint32_t acc = 0u;
                    int32_t ci, kh, kw, v;

                    for (ci = 0; ci < c_per_group; ci++) {
                        const uint8_t *x_c = x_g + (size_t)ci * (size_t)(H * W);
                        const int8_t *w_c = w_m + (size_t)ci * (size_t)(KH * KW);
                        for (kh = kh_begin; kh < kh_end; kh++) {
                            const uint8_t *x_row = x_c + (size_t)(ih0 + kh * win->dilation_h) * (size_t)W;
                            for (kw = kw_begin; kw < kw_end; kw++) {
                                const int32_t xv = load_act(x_row + iw0 + kw * win->dilation_w, is_signed) - x_zp;
                                const int32_t wv = (int32_t)w_c[kh * KW + kw] - w_zp;
                                acc += (uint32_t)(xv * wv);
                            }
                        }
                    }
                    acc += (uint32_t)bias;
                    {
                        /* Two's complement reinterpretation, as ORT's int32 wraps. */
                        const int32_t acc_s = (acc > 0x7fffffffu) ? -(int32_t)(0xffffffffu - acc) - 1
                                                                  : (int32_t)acc;
                        const size_t at = y_m + (size_t)(oh * OW + ow);
                        if (out == Q8_RQ_I32) {
                            ((int32_t *)y)[at] = acc_s;
                            continue;
                        }
                        if (out == Q8_RQ_IREQ) {
                            v = q8_requant_int(acc_s, rq->mult[ch], rq->exp[ch], lo, hi);
                        } else {
                            v = q8_requant_f32(acc_s, rq->scale[ch], (float)lo, (float)hi);
                        }
                        /* Modular conversion: int8 results land as their two's complement byte. */
                        ((uint8_t *)y)[at] = (uint8_t)(v + rq->zero_point);
                    }
                }
            }
        }
    }
}

#define Q8_DEFINE_CONV(NAME, TX, TY, SIGNED, OUT)                                                \
    void NAME(const q8_conv_params *params, const TX *Q8_RESTRICT input, TY *Q8_RESTRICT output) \
    {                                                                                            \
        conv_reference(params, (const uint8_t *)input, output, SIGNED, OUT);                     \
    }

Q8_DEFINE_CONV(q8_conv_u8_freq, uint8_t, void, 0, Q8_RQ_FREQ)
Q8_DEFINE_CONV(q8_conv_s8_freq, int8_t, void, 1, Q8_RQ_FREQ)
Q8_DEFINE_CONV(q8_conv_u8_ireq, uint8_t, void, 0, Q8_RQ_IREQ)
Q8_DEFINE_CONV(q8_conv_s8_ireq, int8_t, void, 1, Q8_RQ_IREQ)
Q8_DEFINE_CONV(q8_conv_u8_i32, uint8_t, int32_t, 0, Q8_RQ_I32)
Q8_DEFINE_CONV(q8_conv_s8_i32, int8_t, int32_t, 1, Q8_RQ_I32)
