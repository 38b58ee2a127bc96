/*
 * q8_requant_rv.h - the integer requantization (Q8_RQ_IREQ) of one output channel on
 * RV32IM cores: q8_requant_int_prepared's result (q8_arith.h) with the product's high
 * word from MULHU.
 *
 * The prepared method truncates t = a m / 2^sh (a = |acc|, m = mult, sh = -exp - 20)
 * from two 32-bit products and three shifts. RV32IM's MULHU gives the high word of a
 * 64-bit product, so with M = m << 8 (m < 2^24) and a shifted left by ja:
 *   t = MULHU(a << ja, M) >> r,   ja + 8 - r = 32 - sh,
 * exact (a floor of a floor) with ja = 24 - sh, r = 0 for sh up to 24 (a_limit keeps
 * a < 2^min(19, 7 + sh), so a << ja < 2^31), and ja = 0, r = sh - 24 above. The test
 * near a half ((w << 12) >> 19 != 0) is a mask, and the zero point is added after the
 * clamp as there. 12 instructions on the common path against about 17.
 */
#ifndef Q8_REQUANT_RV_H
#define Q8_REQUANT_RV_H

#include <string.h>

#include "q8_arith.h"
#include "q8_runtime.h"

#ifndef Q8_LIKELY
#if defined(__GNUC__)
#define Q8_LIKELY(x) __builtin_expect(!!(x), 1)
#else
#define Q8_LIKELY(x) (x)
#endif
#endif

typedef struct {
    uint32_t m8;      /* |mult| << 8 */
    uint32_t a_limit; /* where the product applies (0: nowhere), q8_prepare_int_requant's */
    int32_t ja, r;
    int32_t mult, exp, lo, hi, zero_point;
} q8_rv_requant;

/* Channel ch's constants (lo and hi before the zero point, as q8_layer_constants). */
Q8_INLINE q8_rv_requant q8_rv_requant_constants(const q8_requant_params *rq, int32_t ch)
{
    q8_rv_requant c;
    const int32_t mult = rq->mult[ch], exp = rq->exp[ch];
    const uint32_t m = mult < 0 ? 0u - (uint32_t)mult : (uint32_t)mult;
    const int32_t sh = exp <= -21 && exp >= -62 ? -exp - 20 : 0;
    c.m8 = m << 8;
    c.a_limit = sh == 0 || mult < 0 ? 0u : 1u << (sh < 12 ? 7 + sh : 19);
    c.ja = sh >= 24 ? 0 : 24 - sh;
    c.r = sh >= 24 ? sh - 24 : 0;
    c.mult = mult;
    c.exp = exp;
    c.zero_point = rq->zero_point;
    c.lo = rq->act_min - rq->zero_point;
    c.hi = rq->act_max - rq->zero_point;
    return c;
}

/* Channel ch's constants from the generator's table ([channels][4]: m8, a_limit, ja,
 * r; rv_int_requant in ops/conv/im2col.py). */
Q8_INLINE q8_rv_requant q8_rv_requant_table(const q8_requant_params *rq, const uint32_t *ints,
                                            int32_t ch)
{
    q8_rv_requant c;
    const uint32_t *t = ints + 4 * ch;
    c.m8 = t[0];
    c.a_limit = t[1];
    c.ja = (int32_t)t[2];
    c.r = (int32_t)t[3];
    c.mult = rq->mult[ch];
    c.exp = rq->exp[ch];
    c.zero_point = rq->zero_point;
    c.lo = rq->act_min - rq->zero_point;
    c.hi = rq->act_max - rq->zero_point;
    return c;
}

/* For the float modes, which do not read them. */
Q8_INLINE q8_rv_requant q8_rv_requant_constants_none(void)
{
    q8_rv_requant c;
    memset(&c, 0, sizeof c);
    return c;
}

Q8_INLINE uint8_t q8_rv_requantize(const q8_rv_requant *c, int32_t acc)
{
    const uint32_t sign = (uint32_t)(acc >> 31); /* all ones for acc < 0 */
    const uint32_t a = ((uint32_t)acc ^ sign) - sign;
    if (Q8_LIKELY(a < c->a_limit)) {
        const uint32_t t =
            (uint32_t)(((uint64_t)(a << c->ja) * (uint64_t)c->m8) >> 32) >> c->r;
        const uint32_t w = t + 0x80040u;
        if (Q8_LIKELY((w & 0xfff80u) != 0u)) {
            int32_t v = (int32_t)(((w >> 20) ^ sign) - sign);
            v = v < c->lo ? c->lo : (v > c->hi ? c->hi : v);
            return (uint8_t)(v + c->zero_point);
        }
    }
    return (uint8_t)(q8_requant_int_rare(acc, c->mult, c->exp, c->lo, c->hi) +
                     c->zero_point);
}

#endif /* Q8_REQUANT_RV_H */
