/*
 * softmax.c - com.microsoft QLinearSoftmax, ORT's arithmetic: a float32 table of
 * exponentials indexed by each value's byte distance from its row maximum, a float32
 * row sum in order, then a double-precision scaling rounded half to even.
 */
#include "q8_arith.h"
#include "q8_runtime.h"

/* rint(v) for |v| < 2^51: the double-precision form of q8_round_half_even. */
Q8_INLINE double round_half_even_f64(double v)
{
    const double magic = 6755399441055744.0;
    double r = (double)(v + magic);
    return (double)(r - magic);
}

Q8_INLINE void qsoftmax(const q8_qsoftmax_params *p, const uint8_t *Q8_RESTRICT x,
                        uint8_t *Q8_RESTRICT y, int is_signed)
{
    const int32_t qmin = is_signed ? -128 : 0, qmax = is_signed ? 127 : 255;
    int32_t o, i, d;
    for (o = 0; o < p->outer; o++) {
        for (i = 0; i < p->inner; i++) {
            const size_t base = (size_t)o * (size_t)p->length * (size_t)p->inner + (size_t)i;
            int32_t max = qmin;
            float sum = 0.0f;
            for (d = 0; d < p->length; d++) {
                const uint8_t raw = x[base + (size_t)d * (size_t)p->inner];
                const int32_t v = is_signed ? (int32_t)(int8_t)raw : (int32_t)raw;
                max = v > max ? v : max;
            }
            /* The byte offset 255 - (max - v) indexes the table; int8 tables are stored in
               bit-pattern order, which the signed form of the same offset reaches. */
            for (d = 0; d < p->length; d++) {
                const uint8_t raw = x[base + (size_t)d * (size_t)p->inner];
                const int32_t v = is_signed ? (int32_t)(int8_t)raw : (int32_t)raw;
                const uint8_t index = (uint8_t)(is_signed ? (127 - max + v) & 0xff : 255 - max + v);
                sum = (float)(sum + p->table[index]);
            }
            for (d = 0; d < p->length; d++) {
                const size_t at = base + (size_t)d * (size_t)p->inner;
                const int32_t v = is_signed ? (int32_t)(int8_t)x[at] : (int32_t)x[at];
                const uint8_t index = (uint8_t)(is_signed ? (127 - max + v) & 0xff : 255 - max + v);
                double t = ((double)p->table[index] * p->multiplier) / (double)sum;
                int32_t q;
                if (t != t) {
                    q = 0;
                } else if (t >= 2251799813685248.0) {
                    q = qmax;
                } else {
                    t = round_half_even_f64(t) + (double)p->y_zero_point;
                    q = t < (double)qmin ? qmin : (t > (double)qmax ? qmax : (int32_t)t);
                }
                y[at] = (uint8_t)q;
            }
        }
    }
}

void q8_qsoftmax_u8(const q8_qsoftmax_params *params, const uint8_t *Q8_RESTRICT input,
                    uint8_t *Q8_RESTRICT output)
{
    qsoftmax(params, input, output, 0);
}

void q8_qsoftmax_s8(const q8_qsoftmax_params *params, const int8_t *Q8_RESTRICT input,
                    int8_t *Q8_RESTRICT output)
{
    qsoftmax(params, (const uint8_t *)input, (uint8_t *)output, 1);
}
