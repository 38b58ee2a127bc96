/*
 * softmax.c - com.microsoft QLinearSoftmax, ORT's arithmetic: a float32 table of
 * exponentials indexed by each value's byte distance from its row maximum, a float32
 * row sum in order, then a double-precision scaling rounded half to even.
 */
#include <string.h>

#include "q8_arith.h"
#include "q8_runtime.h"
#include "q8_softfloat.h"

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

/*
 * The integer form of rint((double)e * M / (double)sum) + y_zero_point, clamped, for
 * e = me * 2^ee and sum = ms * 2^es (positive) and an integer M < 2^29: the quotient
 * q = N / D exactly, with N and D in 64 bits. Rounding q to double first changes rint's
 * result only when that rounding lands on n + 0.5 exactly, which happens when q is within
 * half a double ulp of it; then the tie goes to the even integer.
 */
Q8_INLINE int32_t softmax_output(uint32_t me, int32_t ee, uint32_t multiplier, uint32_t ms,
                                 int32_t es, int32_t zero_point, int32_t qmin, int32_t qmax)
{
    const uint64_t product = (uint64_t)me * multiplier; /* exact: below 2^53 */
    int32_t shift = ee - es, k, j;
    uint64_t num, den, n, rest, twice, diff, rounded;
    int64_t t;
    if (product == 0u) {
        rounded = 0u;
    } else {
        if (shift >= 0) {
            /* q >= 2^(bits(product) + shift - 1 - bits(ms)): past 2^20 it saturates */
            if (q8_sf_bits(product) + shift - 1 - q8_sf_bits(ms) >= 20) {
                return qmax;
            }
            num = product << shift;
            den = ms;
        } else {
            if (q8_sf_bits(ms) - shift > 63) {
                /* q < 2^53 / 2^63: rounds to 0 */
                num = 0u;
                den = 1u;
            } else {
                num = product;
                den = (uint64_t)ms << (-shift);
            }
        }
        n = num / den;
        rest = num % den;
        twice = rest << 1;
        diff = twice > den ? twice - den : den - twice;
        k = n == 0u ? -1 : q8_sf_bits(n) - 1; /* the binade of n + 0.5 */
        j = 52 - k;
        if (n == 0u && twice < den) {
            j = 54; /* just below 0.5 the doubles are twice as dense */
        }
        if (diff == 0u || (j < 64 && diff <= (den >> j))) {
            rounded = n + (n & 1u); /* the double is n + 0.5: ties to even */
        } else {
            rounded = twice < den ? n : n + 1u;
        }
    }
    t = (int64_t)rounded + zero_point;
    return t < qmin ? qmin : (t > qmax ? qmax : (int32_t)t);
}

Q8_INLINE uint32_t float_bits(const float *table, uint8_t index)
{
    uint32_t bits;
    memcpy(&bits, &table[index], sizeof bits);
    return bits;
}

Q8_INLINE void qsoftmax_int(const q8_qsoftmax_params *p, const uint8_t *Q8_RESTRICT x,
                            uint8_t *Q8_RESTRICT y, int is_signed)
{
    const int32_t qmin = is_signed ? -128 : 0, qmax = is_signed ? 127 : 255;
    int32_t o, i, d;
    for (o = 0; o < p->outer; o++) {
        for (i = 0; i < p->inner; i++) {
            const size_t base = (size_t)o * (size_t)p->length * (size_t)p->inner + (size_t)i;
            int32_t max = qmin;
            uint32_t sum = 0u;
            q8_sf total;
            for (d = 0; d < p->length; d++) {
                const uint8_t raw = x[base + (size_t)d * (size_t)p->inner];
                const int32_t v = is_signed ? (int32_t)(int8_t)raw : (int32_t)raw;
                max = v > max ? v : max;
            }
            for (d = 0; d < p->length; d++) {
                const uint8_t raw = x[base + (size_t)d * (size_t)p->inner];
                const int32_t v = is_signed ? (int32_t)(int8_t)raw : (int32_t)raw;
                const uint8_t index = (uint8_t)(is_signed ? (127 - max + v) & 0xff : 255 - max + v);
                sum = q8_sf_add_positive(sum, float_bits(p->table, index));
            }
            total = q8_sf_from_bits(sum);
            for (d = 0; d < p->length; d++) {
                const size_t at = base + (size_t)d * (size_t)p->inner;
                const int32_t v = is_signed ? (int32_t)(int8_t)x[at] : (int32_t)x[at];
                const uint8_t index = (uint8_t)(is_signed ? (127 - max + v) & 0xff : 255 - max + v);
                const q8_sf e = q8_sf_from_bits(float_bits(p->table, index));
                int32_t q;
                if (sum == 0u) {
                    q = 0; /* 0 / 0: the float kernel's NaN (no ORT table gets here) */
                } else if (sum == 0x7f800000u) {
                    q = p->y_zero_point; /* e * M / inf = 0 */
                    q = q < qmin ? qmin : (q > qmax ? qmax : q);
                } else {
                    q = softmax_output((uint32_t)e.m, e.e, (uint32_t)p->multiplier_int,
                                       (uint32_t)total.m, total.e, p->y_zero_point, qmin,
                                       qmax);
                }
                y[at] = (uint8_t)q;
            }
        }
    }
}

void q8_qsoftmax_u8_ireq(const q8_qsoftmax_params *params, const uint8_t *Q8_RESTRICT input,
                         uint8_t *Q8_RESTRICT output)
{
    qsoftmax_int(params, input, output, 0);
}

void q8_qsoftmax_s8_ireq(const q8_qsoftmax_params *params, const int8_t *Q8_RESTRICT input,
                         int8_t *Q8_RESTRICT output)
{
    qsoftmax_int(params, (const uint8_t *)input, (uint8_t *)output, 1);
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
