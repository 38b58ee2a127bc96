/*
 * average_pool.c - QLinearGlobalAveragePool (integer sum, requantized) and
 * QLinearAveragePool (ORT's float32 path).
 */
#include <string.h>

#include "q8_arith.h"
#include "q8_dsp.h"
#include "q8_runtime.h"
#include "q8_window.h"

Q8_INLINE int32_t load8(const uint8_t *p, int is_signed)
{
    return is_signed ? (int32_t)(int8_t)*p : (int32_t)*p;
}

/* The sum of n consecutive int8 or uint8 values. With Helium, 16 bytes a step. With the
 * DSP extension, whole aligned
 * words by USADA8 (the four bytes' distances from zero, summed in one instruction), int8
 * bytes moved by 128 first: about 3 cycles per 4 bytes on Cortex-M4 against 6 per byte. */
Q8_INLINE int32_t sum_bytes(const uint8_t *p, int32_t n, int is_signed)
{
    int32_t sum = 0;
#if Q8_HAS_MVE
    /* Helium: VADDVA adds 16 bytes to the sum a step, the last step's lanes past the end
     * predicated off (VCTP), so there is no scalar tail. |sum| <= 255 n < 2^31. */
    if (is_signed) {
        for (; n > 0; n -= 16, p += 16) {
            const mve_pred16_t lanes = vctp8q((uint32_t)n);
            sum = vaddvaq_p_s8(sum, vldrbq_z_s8((const int8_t *)p, lanes), lanes);
        }
    } else {
        uint32_t total = 0u;
        for (; n > 0; n -= 16, p += 16) {
            const mve_pred16_t lanes = vctp8q((uint32_t)n);
            total = vaddvaq_p_u8(total, vldrbq_z_u8(p, lanes), lanes);
        }
        sum = (int32_t)total;
    }
    return sum;
#elif Q8_HAS_DSP
    uint32_t total = 0;
    int32_t words, i;
    for (; n > 0 && ((uintptr_t)p & 3u) != 0; n--) {
        sum += load8(p++, is_signed);
    }
    words = n >> 2;
    for (i = 0; i < words; i++) {
        uint32_t w;
        memcpy(&w, p, sizeof w);
        p += 4;
        total = __usada8(is_signed ? w ^ 0x80808080u : w, 0u, total);
    }
    /* total <= 1020 * words < 2^31: the generator refuses sizes of 2^23 or more. */
    sum += (int32_t)total - (is_signed ? 512 * words : 0);
    n &= 3;
#endif
    for (; n > 0; n--) {
        sum += load8(p++, is_signed);
    }
    return sum;
}

Q8_INLINE void global_avgpool(const q8_global_pool_params *p, const uint8_t *Q8_RESTRICT x,
                              uint8_t *Q8_RESTRICT y, int is_signed, int int_requant)
{
    const q8_requant_params *rq = &p->requant;
    const int32_t lo = rq->act_min - rq->zero_point;
    const int32_t hi = rq->act_max - rq->zero_point;
    int32_t o, c, s, v;

    for (o = 0; o < p->outer; o++) {
        for (c = 0; c < p->channels; c++) {
            const uint8_t *x_oc = x + (size_t)o * (size_t)p->size * (size_t)p->channels + c;
            /* |acc| <= 255 * size < 2^31: the generator refuses sizes of 2^23 or more. */
            int32_t acc = -p->input_zero_point * p->size;
            if (p->channels == 1) {
                acc += sum_bytes(x_oc, p->size, is_signed);
            } else {
                for (s = 0; s < p->size; s++) {
                    acc += load8(x_oc + (size_t)s * (size_t)p->channels, is_signed);
                }
            }
            if (int_requant) {
                v = q8_requant_int(acc, rq->mult[0], rq->exp[0], lo, hi);
            } else {
                v = q8_requant_f32(acc, rq->scale[0], (float)lo, (float)hi);
            }
            y[(size_t)o * (size_t)p->channels + (size_t)c] = (uint8_t)(v + rq->zero_point);
        }
    }
}

#define Q8_DEFINE_GLOBAL(NAME, T, SIGNED, INT_REQUANT)                                           \
    void NAME(const q8_global_pool_params *params, const T *Q8_RESTRICT input,                  \
              T *Q8_RESTRICT output)                                                             \
    {                                                                                            \
        global_avgpool(params, (const uint8_t *)input, (uint8_t *)output, SIGNED, INT_REQUANT);  \
    }

Q8_DEFINE_GLOBAL(q8_global_avgpool_u8_freq, uint8_t, 0, 0)
Q8_DEFINE_GLOBAL(q8_global_avgpool_s8_freq, int8_t, 1, 0)
Q8_DEFINE_GLOBAL(q8_global_avgpool_u8_ireq, uint8_t, 0, 1)
Q8_DEFINE_GLOBAL(q8_global_avgpool_s8_ireq, int8_t, 1, 1)

Q8_INLINE void avgpool(const q8_avgpool_params *p, const uint8_t *Q8_RESTRICT x,
                       uint8_t *Q8_RESTRICT y, int is_signed)
{
    const q8_window *win = &p->window;
    const int32_t H = p->input.h, W = p->input.w;
    const int32_t OH = p->output.h, OW = p->output.w;
    const int32_t planes = p->input.n * p->input.c;
    const int32_t qmin = is_signed ? -128 : 0, qmax = is_signed ? 127 : 255;
    int32_t plane, oh, ow, kh, kw;

    for (plane = 0; plane < planes; plane++) {
        const uint8_t *x_p = x + (size_t)plane * (size_t)(H * W);
        uint8_t *y_p = y + (size_t)plane * (size_t)(OH * OW);
        for (oh = 0; oh < OH; oh++) {
            const int32_t ih0 = oh * win->stride_h - win->pad_top;
            const int32_t kh_begin = q8_window_first_tap(ih0, 1, win->kernel_h);
            const int32_t kh_end = q8_window_end_tap(ih0, 1, H, win->kernel_h);
            for (ow = 0; ow < OW; ow++) {
                const int32_t iw0 = ow * win->stride_w - win->pad_left;
                const int32_t kw_begin = q8_window_first_tap(iw0, 1, win->kernel_w);
                const int32_t kw_end = q8_window_end_tap(iw0, 1, W, win->kernel_w);
                const int32_t taps = (kh_end - kh_begin) * (kw_end - kw_begin);
                const int32_t count = p->count_include_pad ? win->kernel_h * win->kernel_w
                                                           : taps;
                float acc = 0.0f, v, t;
                for (kh = kh_begin; kh < kh_end; kh++) {
                    const uint8_t *row = x_p + (size_t)(ih0 + kh) * (size_t)W;
                    for (kw = kw_begin; kw < kw_end; kw++) {
                        const int32_t q = load8(row + iw0 + kw, is_signed) - p->x_zero_point;
                        acc = (float)(acc + q8_mul_unfused(p->x_scale, (float)q));
                    }
                }
                v = (float)(acc / (float)count);
                t = (float)((float)(v / p->y_scale) + (float)p->y_zero_point);
                /* ORT: (int32)nearbyintf(t), then clamp. */
                y_p[oh * OW + ow] = (uint8_t)q8_round_saturate(t, qmin, qmax);
            }
        }
    }
}

void q8_avgpool_u8(const q8_avgpool_params *params, const uint8_t *Q8_RESTRICT input,
                   uint8_t *Q8_RESTRICT output)
{
    avgpool(params, input, output, 0);
}

void q8_avgpool_s8(const q8_avgpool_params *params, const int8_t *Q8_RESTRICT input,
                   int8_t *Q8_RESTRICT output)
{
    avgpool(params, (const uint8_t *)input, (uint8_t *)output, 1);
}
