/*
 * q8_requant_row.h - requantization constants of one output channel, read once per row of
 * outputs, and the requantization of an accumulator with them: shared by the fast
 * convolution kernels (q8_im2col.h, q8_dwconv.h). Modes: float32 as ORT (Q8_RQ_FREQ), the
 * exact integer method (Q8_RQ_IREQ), and float32 where the generator proved
 * |acc * scale| < 2^21 (Q8_RQ_FREQ_BOUNDED, q8_requant_bits). Bounded layers whose output
 * range is the whole int8 or uint8 range may take Q8_RQ_FREQ_BOUNDED_S8/_U8
 * (q8_layer_requant_mode): on cores with a single-precision FPU and the DSP extension
 * the value is rounded by VCVTR and clamped by SSAT/USAT, 2 instructions instead of 7;
 * elsewhere they are Q8_RQ_FREQ_BOUNDED.
 */
#ifndef Q8_REQUANT_ROW_H
#define Q8_REQUANT_ROW_H

#include <string.h>

#include "q8_arith.h"
#include "q8_dsp.h"
#include "q8_runtime.h"

/* (float)acc * scale rounded to the nearest integer, ties to even (the FPSCR's default
 * mode, which the float path's magic-number addition relies on too). */
#if Q8_HAS_VCVTR
Q8_INLINE int32_t q8_round_scaled(int32_t acc, float scale)
{
    return q8_vcvtr((float)((float)acc * scale));
}
#endif

/* An output channel's requantization constants, read once per row. */
typedef struct {
    float scale, lo_f, hi_f;
    int32_t lo, hi, zero_point;
    int32_t lo_bits, hi_bits, zero_point_bits; /* offset by Q8_ROUNDING_BITS */
    q8_int_requant ints;                       /* Q8_RQ_IREQ's */
} q8_row_requant;

/*
 * Loop invariants are copied into locals first: the kernels store bytes, and a byte store
 * may alias anything, so fields read through the params pointer would be reloaded after
 * every output.
 */
Q8_INLINE q8_row_requant q8_layer_constants(const q8_requant_params *rq)
{
    q8_row_requant r;
    r.lo = rq->act_min - rq->zero_point;
    r.hi = rq->act_max - rq->zero_point;
    r.lo_f = (float)r.lo;
    r.hi_f = (float)r.hi;
    r.zero_point = rq->zero_point;
    r.lo_bits = r.lo + Q8_ROUNDING_BITS;
    r.hi_bits = r.hi + Q8_ROUNDING_BITS;
    r.zero_point_bits = r.zero_point - Q8_ROUNDING_BITS;
    r.scale = 0.0f;
    r.ints = q8_prepare_int_requant(0, 0, r.lo, r.hi);
    return r;
}

Q8_INLINE q8_row_requant q8_channel_constants(q8_row_requant r, const float *scale, const int32_t *mult,
                                        const int32_t *exp, int32_t ch, int mode)
{
    if (mode == Q8_RQ_IREQ) {
        r.ints = q8_prepare_int_requant(mult[ch], exp[ch], r.lo, r.hi);
    } else {
        r.scale = scale[ch];
    }
    return r;
}

Q8_INLINE q8_row_requant q8_row_constants(const q8_requant_params *rq, int32_t m, int mode)
{
    q8_row_requant r = q8_layer_constants(rq);
    const int32_t ch = rq->per_channel ? m : 0;
    r.scale = mode != Q8_RQ_IREQ ? rq->scale[ch] : 0.0f;
    if (mode == Q8_RQ_IREQ) {
        r.ints = q8_prepare_int_requant(rq->mult[ch], rq->exp[ch], r.lo, r.hi);
    }
    return r;
}

/* The switch cases of the saturating modes, where they exist: elsewhere
 * q8_layer_requant_mode never returns them, and leaving them out spares the compiler two
 * more copies of a kernel. S8 and U8 are the calls for each. */
#if Q8_HAS_VCVTR
#define Q8_SATURATING_CASES(S8, U8)                                                        \
    case Q8_RQ_FREQ_BOUNDED_S8:                                                            \
        S8;                                                                                \
        break;                                                                             \
    case Q8_RQ_FREQ_BOUNDED_U8:                                                            \
        U8;                                                                                \
        break;
#else
#define Q8_SATURATING_CASES(S8, U8)
#endif

/* The saturating variant of a bounded float mode when the layer's output range allows it
 * (for kernels that choose their mode once per call). */
Q8_INLINE int q8_layer_requant_mode(const q8_requant_params *rq, int mode)
{
    if (mode != Q8_RQ_FREQ || !rq->bounded) {
        return mode;
    }
    if (Q8_HAS_VCVTR && rq->act_min == -128 && rq->act_max == 127) {
        return Q8_RQ_FREQ_BOUNDED_S8;
    }
    if (Q8_HAS_VCVTR && rq->act_min == 0 && rq->act_max == 255) {
        return Q8_RQ_FREQ_BOUNDED_U8;
    }
    return Q8_RQ_FREQ_BOUNDED;
}

/* A kernel that chooses its mode once per call, called with the mode as a compile-time
 * constant in each case the layer can take: CALL(mode) is a function-like macro, MODE
 * the kernel's own mode (a constant, Q8_RQ_FREQ or Q8_RQ_IREQ). */
#define Q8_CALL_FOR_LAYER_MODE(LAYER, MODE, CALL)                                         \
    switch (q8_layer_requant_mode(LAYER, MODE)) {                                            \
    Q8_SATURATING_CASES(CALL(Q8_RQ_FREQ_BOUNDED_S8), CALL(Q8_RQ_FREQ_BOUNDED_U8))         \
    case Q8_RQ_FREQ_BOUNDED:                                                              \
        CALL(Q8_RQ_FREQ_BOUNDED);                                                         \
        break;                                                                            \
    default:                                                                              \
        CALL(MODE);                                                                       \
        break;                                                                            \
    }

Q8_INLINE uint8_t q8_requantize(const q8_row_requant *r, int32_t acc, int mode)
{
#if Q8_HAS_VCVTR
    /* |q| < 2^21: adding the zero point cannot overflow. */
    if (mode == Q8_RQ_FREQ_BOUNDED_S8) {
        return (uint8_t)__ssat(q8_round_scaled(acc, r->scale) + r->zero_point, 8);
    }
    if (mode == Q8_RQ_FREQ_BOUNDED_U8) {
        return (uint8_t)__usat(q8_round_scaled(acc, r->scale) + r->zero_point, 8);
    }
#endif
    if (mode == Q8_RQ_FREQ_BOUNDED || mode == Q8_RQ_FREQ_BOUNDED_S8 ||
        mode == Q8_RQ_FREQ_BOUNDED_U8) {
        int32_t b = q8_requant_bits(acc, r->scale);
        b = b < r->lo_bits ? r->lo_bits : b;
        b = b > r->hi_bits ? r->hi_bits : b;
        return (uint8_t)(b + r->zero_point_bits);
    }
    return (uint8_t)((mode == Q8_RQ_IREQ ? q8_requant_int_prepared(&r->ints, acc)
                                          : q8_requant_f32(acc, r->scale, r->lo_f, r->hi_f)) +
                     r->zero_point);
}

/* Two accumulators of one channel (two pixels), stored at ya and yb. */
Q8_INLINE void q8_requantize_pair(const q8_row_requant *r, int32_t a, int32_t b, uint8_t *ya,
                               uint8_t *yb, int mode)
{
#if Q8_HAS_VCVTR
    if (mode == Q8_RQ_FREQ_BOUNDED_S8 || mode == Q8_RQ_FREQ_BOUNDED_U8) {
        q8_vcvtr_pair(&a, &b, r->scale);
        /* |q| < 2^21: adding the zero point cannot overflow. */
        if (mode == Q8_RQ_FREQ_BOUNDED_S8) {
            *ya = (uint8_t)__ssat(a + r->zero_point, 8);
            *yb = (uint8_t)__ssat(b + r->zero_point, 8);
        } else {
            *ya = (uint8_t)__usat(a + r->zero_point, 8);
            *yb = (uint8_t)__usat(b + r->zero_point, 8);
        }
        return;
    }
#endif
    *ya = q8_requantize(r, a, mode);
    *yb = q8_requantize(r, b, mode);
}

/* Output column n's value of an accumulator at y[at], in any mode (the matrix products:
 * float32 output, integer, float and bounded float, the saturating ones as bounded): the
 * column's constants read from the parameters. */
Q8_INLINE void q8_store_requantized(const q8_requant_params *rq, int32_t n, int32_t acc,
                                  void *y, size_t at, int mode)
{
    const int32_t ch = rq->per_channel ? n : 0;
    if (mode == Q8_RQ_F32) {
        ((float *)y)[at] = (float)((float)acc * rq->scale[ch]);
    } else {
        const int32_t lo = rq->act_min - rq->zero_point, hi = rq->act_max - rq->zero_point;
        const int32_t v = mode == Q8_RQ_IREQ ? q8_requant_int(acc, rq->mult[ch], rq->exp[ch], lo, hi)
                          : (mode == Q8_RQ_FREQ_BOUNDED || mode == Q8_RQ_FREQ_BOUNDED_S8 ||
                             mode == Q8_RQ_FREQ_BOUNDED_U8)
                              ? q8_requant_f32_bounded(acc, rq->scale[ch], lo, hi)
                              : q8_requant_f32(acc, rq->scale[ch], (float)lo, (float)hi);
        ((uint8_t *)y)[at] = (uint8_t)(v + rq->zero_point);
    }
}

#endif /* Q8_REQUANT_ROW_H */
