/*
 * q8_pix_dw_products.h - the products of the host's depthwise 3x3 (q8_dwconv_pix.h), once
 * per x86-64 instruction set (included by q8_pix_each_isa.h; no include guard, by design).
 *
 * sums[i] for the n flat outputs i (n a multiple of 2 * Q8_PX_LANES): six pairs of taps,
 * each a run of (a, b) int16 pairs at planes + 2 * (offset + i) against the weight pair of
 * its taps. Q8_PX_MAC adds both products per lane, so a lane holds one output's sum.
 */

Q8_PX_TARGET Q8_UNUSED static void Q8_PX_FN(q8_pix_dw_products)(
    const int16_t *Q8_RESTRICT planes, const q8_pix_dw_taps *taps, int32_t n,
    int32_t *Q8_RESTRICT sums)
{
    const Q8_PX_VEC w0 = Q8_PX_SPLAT(taps->weights[0]), w1 = Q8_PX_SPLAT(taps->weights[1]),
                    w2 = Q8_PX_SPLAT(taps->weights[2]), w3 = Q8_PX_SPLAT(taps->weights[3]),
                    w4 = Q8_PX_SPLAT(taps->weights[4]), w5 = Q8_PX_SPLAT(taps->weights[5]);
    const int16_t *t0 = planes + 2 * taps->offset[0], *t1 = planes + 2 * taps->offset[1],
                  *t2 = planes + 2 * taps->offset[2], *t3 = planes + 2 * taps->offset[3],
                  *t4 = planes + 2 * taps->offset[4], *t5 = planes + 2 * taps->offset[5];
    int32_t v;
    for (v = 0; v < n; v += 2 * Q8_PX_LANES) {
        const int32_t at = 2 * v, next = 2 * v + 2 * Q8_PX_LANES;
        Q8_PX_VEC a = Q8_PX_ZERO(), b = Q8_PX_ZERO();
        a = Q8_PX_MAC(a, Q8_PX_LOAD(t0 + at), w0);
        b = Q8_PX_MAC(b, Q8_PX_LOAD(t0 + next), w0);
        a = Q8_PX_MAC(a, Q8_PX_LOAD(t1 + at), w1);
        b = Q8_PX_MAC(b, Q8_PX_LOAD(t1 + next), w1);
        a = Q8_PX_MAC(a, Q8_PX_LOAD(t2 + at), w2);
        b = Q8_PX_MAC(b, Q8_PX_LOAD(t2 + next), w2);
        a = Q8_PX_MAC(a, Q8_PX_LOAD(t3 + at), w3);
        b = Q8_PX_MAC(b, Q8_PX_LOAD(t3 + next), w3);
        a = Q8_PX_MAC(a, Q8_PX_LOAD(t4 + at), w4);
        b = Q8_PX_MAC(b, Q8_PX_LOAD(t4 + next), w4);
        a = Q8_PX_MAC(a, Q8_PX_LOAD(t5 + at), w5);
        b = Q8_PX_MAC(b, Q8_PX_LOAD(t5 + next), w5);
        Q8_PX_STORE(sums + v, a);
        Q8_PX_STORE(sums + v + Q8_PX_LANES, b);
    }
}
