/*
 * q8_pix_products.h - the block products of the host's convolution (q8_im2col_pix.h), once
 * per x86-64 instruction set (included by q8_pix_each_isa.h, which defines the vector
 * operations; no include guard, by design).
 *
 * sums[j][i] = sum over the taps k of w[m + j][k] * tap k of pixel i, from zero, for the
 * tile's Q8_PIX_TILE pixels (lanes past the pixels a caller stores are computed and
 * dropped). Per pair of taps, one broadcast of (w_k, w_k+1) meets two vectors of the pixels'
 * (tap k, tap k + 1) pairs: Q8_PX_MAC adds both products per lane (PMADDWD and PADDD, or
 * VNNI's VPDPWSSD, which adds the same two products without saturation), so a lane holds
 * one pixel's sum and no reduction across lanes is needed.
 */

Q8_PX_TARGET Q8_UNUSED static void Q8_PX_FN(q8_pix_products)(
    const int16_t *Q8_RESTRICT weights, int32_t k_padded, const int16_t *Q8_RESTRICT base,
    const q8_pix_taps *taps, int32_t channels, int32_t sums[Q8_PIX_CHANNELS][Q8_PIX_TILE])
{
    int32_t v, j, kh, kw, c, kp;
    for (v = 0; v < Q8_PIX_TILE; v += 2 * Q8_PX_LANES) {
        const int16_t *origin = base + 2 * v;
        if (channels == Q8_PIX_CHANNELS) {
            /* Four channels, two vectors: eight sums in registers. */
            Q8_PX_VEC s00 = Q8_PX_ZERO(), s01 = Q8_PX_ZERO(), s10 = Q8_PX_ZERO(),
                      s11 = Q8_PX_ZERO(), s20 = Q8_PX_ZERO(), s21 = Q8_PX_ZERO(),
                      s30 = Q8_PX_ZERO(), s31 = Q8_PX_ZERO();
            const int16_t *r0 = weights, *r1 = r0 + k_padded, *r2 = r1 + k_padded,
                          *r3 = r2 + k_padded;
            kp = 0;
            for (kh = 0; kh < taps->kernel_h; kh++) {
                for (kw = 0; kw < taps->kernel_w; kw++) {
                    const int16_t *t = origin + kh * taps->row_step + kw * taps->col_step;
                    for (c = 0; c < taps->pairs; c++, kp++, t += taps->pair_step) {
                        const Q8_PX_VEC a = Q8_PX_LOAD(t), b = Q8_PX_LOAD(t + 2 * Q8_PX_LANES);
                        Q8_PX_VEC w = Q8_PX_SPLAT(q8_pix_weight_pair(r0, kp));
                        s00 = Q8_PX_MAC(s00, a, w);
                        s01 = Q8_PX_MAC(s01, b, w);
                        w = Q8_PX_SPLAT(q8_pix_weight_pair(r1, kp));
                        s10 = Q8_PX_MAC(s10, a, w);
                        s11 = Q8_PX_MAC(s11, b, w);
                        w = Q8_PX_SPLAT(q8_pix_weight_pair(r2, kp));
                        s20 = Q8_PX_MAC(s20, a, w);
                        s21 = Q8_PX_MAC(s21, b, w);
                        w = Q8_PX_SPLAT(q8_pix_weight_pair(r3, kp));
                        s30 = Q8_PX_MAC(s30, a, w);
                        s31 = Q8_PX_MAC(s31, b, w);
                    }
                }
            }
            Q8_PX_STORE(&sums[0][v], s00);
            Q8_PX_STORE(&sums[0][v + Q8_PX_LANES], s01);
            Q8_PX_STORE(&sums[1][v], s10);
            Q8_PX_STORE(&sums[1][v + Q8_PX_LANES], s11);
            Q8_PX_STORE(&sums[2][v], s20);
            Q8_PX_STORE(&sums[2][v + Q8_PX_LANES], s21);
            Q8_PX_STORE(&sums[3][v], s30);
            Q8_PX_STORE(&sums[3][v + Q8_PX_LANES], s31);
        } else {
            for (j = 0; j < channels; j++) {
                Q8_PX_VEC s0 = Q8_PX_ZERO(), s1 = Q8_PX_ZERO();
                const int16_t *r = weights + (size_t)j * (size_t)k_padded;
                kp = 0;
                for (kh = 0; kh < taps->kernel_h; kh++) {
                    for (kw = 0; kw < taps->kernel_w; kw++) {
                        const int16_t *t = origin + kh * taps->row_step + kw * taps->col_step;
                        for (c = 0; c < taps->pairs; c++, kp++, t += taps->pair_step) {
                            const Q8_PX_VEC w = Q8_PX_SPLAT(q8_pix_weight_pair(r, kp));
                            s0 = Q8_PX_MAC(s0, Q8_PX_LOAD(t), w);
                            s1 = Q8_PX_MAC(s1, Q8_PX_LOAD(t + 2 * Q8_PX_LANES), w);
                        }
                    }
                }
                Q8_PX_STORE(&sums[j][v], s0);
                Q8_PX_STORE(&sums[j][v + Q8_PX_LANES], s1);
            }
        }
    }
}

