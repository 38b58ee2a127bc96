/*
 * quantize_linear.c - QuantizeLinear, float32 to uint8/int8/uint16/int16, per tensor or
 * per axis.
 *
 * ORT computes y = rne(clamp(f32(x / scale), qmin - zp, qmax - zp)) + zp with a true
 * division (multiplying by 1/scale differs on ~10% of rounding boundaries), clamps
 * with maxps/minps (a NaN becomes qmin) and rounds half to even; the same for 16-bit
 * outputs (measured on ORT 1.32, ai.onnx and com.microsoft domains).
 */
#include "q8_arith.h"
#include "q8_runtime.h"

/* One (outer, axis) slice's parameters: its scale, the clamp bounds offset by its zero
 * point, and the zero point less the rounding offset. */
typedef struct {
    float scale;
    float lo;
    float hi;
    int32_t zp_bits;
} qdq_slice;

Q8_INLINE qdq_slice quantize_slice(const q8_qdq_params *p, int32_t a, int32_t qmin,
                                   int32_t qmax)
{
    const int32_t k = p->per_axis ? a : 0;
    qdq_slice s;
    s.scale = p->scale[k];
    s.lo = (float)(qmin - p->zero_point[k]);
    s.hi = (float)(qmax - p->zero_point[k]);
    s.zp_bits = p->zero_point[k] - Q8_ROUNDING_BITS;
    return s;
}

/* Clamped, |v| <= 65535 < 2^22: its rounding is read from the representation of
 * v + 1.5 * 2^23, whose offset zp_bits removes. */
Q8_INLINE int32_t quantize_value(float x, const qdq_slice *s)
{
    const float v = q8_fclamp((float)(x / s->scale), s->lo, s->hi);
    const float shifted = (float)(v + 12582912.0f);
    uint32_t bits;
    memcpy(&bits, &shifted, sizeof bits);
    return (int32_t)bits + s->zp_bits;
}

#define Q8_DEFINE_QUANTIZE(NAME, TYPE, STORE, QMIN, QMAX)                                        \
    void NAME(const q8_qdq_params *p, const float *Q8_RESTRICT x, TYPE *Q8_RESTRICT y)           \
    {                                                                                            \
        int32_t o, a, i;                                                                         \
        for (o = 0; o < p->outer; o++) {                                                         \
            for (a = 0; a < p->axis_len; a++) {                                                  \
                const qdq_slice s = quantize_slice(p, a, QMIN, QMAX);                            \
                const size_t base =                                                              \
                    ((size_t)o * (size_t)p->axis_len + (size_t)a) * (size_t)p->inner;            \
                for (i = 0; i < p->inner; i++) {                                                 \
                    y[base + (size_t)i] = STORE(quantize_value(x[base + (size_t)i], &s));        \
                }                                                                                \
            }                                                                                    \
        }                                                                                        \
    }

/* The value is in the type's range: the conversions are exact. */
#define Q8_STORE_U8(v) ((uint8_t)(v))
#define Q8_STORE_S8(v) ((int8_t)(v))
#define Q8_STORE_U16(v) ((uint16_t)(v))
#define Q8_STORE_S16(v) ((int16_t)(v))

Q8_DEFINE_QUANTIZE(q8_quantize_linear_u8, uint8_t, Q8_STORE_U8, 0, 255)
Q8_DEFINE_QUANTIZE(q8_quantize_linear_s8, int8_t, Q8_STORE_S8, -128, 127)
Q8_DEFINE_QUANTIZE(q8_quantize_linear_u16, uint16_t, Q8_STORE_U16, 0, 65535)
Q8_DEFINE_QUANTIZE(q8_quantize_linear_s16, int16_t, Q8_STORE_S16, -32768, 32767)
