/*
 * quantize_linear.c - QuantizeLinear, float32 to uint8/int8, per tensor or per axis.
 *
 * ORT computes y = rne(clamp(f32(x / scale), qmin - zp, qmax - zp)) + zp with a true
 * division (multiplying by 1/scale differs on ~10% of rounding boundaries), clamps
 * with maxps/minps (a NaN becomes qmin) and rounds half to even.
 */
#include "q8_arith.h"
#include "q8_runtime.h"

Q8_INLINE void quantize_linear(const q8_qdq_params *p, const float *Q8_RESTRICT x,
                               uint8_t *Q8_RESTRICT y, int32_t qmin, int32_t qmax)
{
    int32_t o, a, i;
    for (o = 0; o < p->outer; o++) {
        for (a = 0; a < p->axis_len; a++) {
            const int32_t k = p->per_axis ? a : 0;
            const float scale = p->scale[k];
            const int32_t zp = p->zero_point[k];
            const float lo = (float)(qmin - zp);
            const float hi = (float)(qmax - zp);
            const int32_t zp_bits = zp - Q8_ROUNDING_BITS;
            const size_t base = ((size_t)o * (size_t)p->axis_len + (size_t)a) * (size_t)p->inner;
            for (i = 0; i < p->inner; i++) {
                const float v = q8_fclamp((float)(x[base + (size_t)i] / scale), lo, hi);
                /* Clamped, |v| <= 255: its rounding is read from the representation of
                 * v + 1.5 * 2^23, whose offset zp_bits removes. Modular conversion: int8
                 * results land as their two's complement byte. */
                const float shifted = (float)(v + 12582912.0f);
                uint32_t bits;
                memcpy(&bits, &shifted, sizeof bits);
                y[base + (size_t)i] = (uint8_t)((int32_t)bits + zp_bits);
            }
        }
    }
}

void q8_quantize_linear_u8(const q8_qdq_params *params, const float *Q8_RESTRICT input,
                           uint8_t *Q8_RESTRICT output)
{
    quantize_linear(params, input, output, 0, 255);
}

void q8_quantize_linear_s8(const q8_qdq_params *params, const float *Q8_RESTRICT input,
                           int8_t *Q8_RESTRICT output)
{
    quantize_linear(params, input, (uint8_t *)output, -128, 127);
}
