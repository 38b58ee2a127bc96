/*
 * conv_s16_im2col.c - the fast 16-bit x 8-bit convolution, in the manner of CMSIS-NN's
 * arm_convolve_s16 (a column of int16 taps per output position, SMLAD on pairs of
 * taps, several output channels per pass over the column) with the exact
 * requantization of q8_requant_exact.h, tried first in fixed point (q8_requant_fast).
 * Bit-identical to conv_s16.c.
 *
 * The column holds x - x_offset as int16 (uint16 activations move by 32768, which fits
 * every value in int16), taps in the padding the column value of the zero point, x_pad.
 * Then sum (x - x_zp) * w = sum col * w - x_pad * sum w over every tap, the second
 * term folded into the int64 bias by the generator. Each product is at most 2^15 * 2^7,
 * so a chunk of 256 taps sums in int32 without overflow (2^30), and the chunks in int64.
 *
 * Weights, per group: its channels in blocks of 4, each block's taps by 4 (a quad) with
 * the 4 channels' 4 bytes side by side, then the channels left over one row each; every
 * 4 bytes stored w0 w2 w1 w3, so that SXTB16 gives w0 w1 and SXTB16 ROR 8 gives w2 w3,
 * the pairs of the column's two words.
 */
#include "conv_s16_im2col.h"

#include "q8_dsp.h"

#define Q8_CHUNK 256

/* One quad of one channel into acc. */
#if Q8_HAS_DSP
#define Q8_QUAD(acc, x01, x23, w)                                       \
    do {                                                                \
        const uint32_t packed_ = q8_load32(w);                          \
        acc = q8_smlad(x01, q8_sxtb16(packed_), acc);                   \
        acc = q8_smlad(x23, q8_sxtb16_ror8(packed_), acc);              \
    } while (0)
#else
#define Q8_QUAD(acc, c, unused, w)                                                   \
    do {                                                                             \
        acc += (int32_t)(c)[0] * (w)[0] + (int32_t)(c)[1] * (w)[2] +                 \
               (int32_t)(c)[2] * (w)[1] + (int32_t)(c)[3] * (w)[3];                  \
    } while (0)
#endif

/* The column's words (DSP) or the column itself (plain C) at tap i. */
#if Q8_HAS_DSP
#define Q8_COLUMN_WORDS(col, i, x01, x23)     \
    const uint32_t x01 = q8_load32(col + i);  \
    const uint32_t x23 = q8_load32(col + i + 2)
#else
#define Q8_COLUMN_WORDS(col, i, x01, x23)     \
    const int16_t *const x01 = col + i;       \
    const int32_t x23 = 0
#endif

#if Q8_HAS_MVE
/* Helium: eight taps a step. The column's eight int16 values in one load; each channel's
 * eight weights gathered from two quads (stored w0 w2 w1 w3, 16 bytes a quad for a block,
 * 4 for a single row) and widened to int16 (VLDRB.S16 with offsets); VMLADAVA.S16 adds the
 * eight products. A last step of four taps is predicated (VCTP). The same int32 chunks of
 * 256 taps as the C. */
Q8_INLINE uint16x8_t q8_quad_offsets(uint16_t quad_bytes)
{
    /* taps 0..3 at bytes 0, 2, 1, 3 of a quad; the next quad quad_bytes on */
    const uint16_t at[8] = {0u, 2u, 1u, 3u, quad_bytes, (uint16_t)(quad_bytes + 2u),
                            (uint16_t)(quad_bytes + 1u), (uint16_t)(quad_bytes + 3u)};
    return vld1q_u16(at);
}
#endif

/* Four channels' sums over the column: w a block of 4 channels (16 bytes per quad). */
Q8_INLINE void q8_dot4_s16_s8(const int16_t *col, const int8_t *w, int32_t taps_padded,
                              int64_t sums[4])
{
    int32_t start;
#if Q8_HAS_MVE
    const uint16x8_t offsets = q8_quad_offsets(16u);
#endif
    sums[0] = sums[1] = sums[2] = sums[3] = 0;
    for (start = 0; start < taps_padded; start += Q8_CHUNK) {
        const int32_t end = taps_padded - start < Q8_CHUNK ? taps_padded : start + Q8_CHUNK;
        int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, i;
        const int8_t *wq = w + (size_t)start * 4u;
#if Q8_HAS_MVE
        for (i = start; i < end; i += 8, wq += 32) {
            const mve_pred16_t lanes = vctp16q((uint32_t)(end - i));
            const int16x8_t c = vldrhq_z_s16(col + i, lanes);
            a0 = vmladavaq_p_s16(a0, c, vldrbq_gather_offset_z_s16(wq, offsets, lanes), lanes);
            a1 = vmladavaq_p_s16(a1, c, vldrbq_gather_offset_z_s16(wq + 4, offsets, lanes),
                                 lanes);
            a2 = vmladavaq_p_s16(a2, c, vldrbq_gather_offset_z_s16(wq + 8, offsets, lanes),
                                 lanes);
            a3 = vmladavaq_p_s16(a3, c, vldrbq_gather_offset_z_s16(wq + 12, offsets, lanes),
                                 lanes);
        }
#else
        for (i = start; i < end; i += 4, wq += 16) {
            Q8_COLUMN_WORDS(col, i, x01, x23);
            (void)x23;
            Q8_QUAD(a0, x01, x23, wq);
            Q8_QUAD(a1, x01, x23, wq + 4);
            Q8_QUAD(a2, x01, x23, wq + 8);
            Q8_QUAD(a3, x01, x23, wq + 12);
        }
#endif
        sums[0] += a0;
        sums[1] += a1;
        sums[2] += a2;
        sums[3] += a3;
    }
}

/* One channel's sum over the column: w its row. */
Q8_INLINE int64_t q8_dot_s16_s8(const int16_t *col, const int8_t *w, int32_t taps_padded)
{
    int64_t total = 0;
    int32_t start;
#if Q8_HAS_MVE
    const uint16x8_t offsets = q8_quad_offsets(4u);
#endif
    for (start = 0; start < taps_padded; start += Q8_CHUNK) {
        const int32_t end = taps_padded - start < Q8_CHUNK ? taps_padded : start + Q8_CHUNK;
        int32_t acc = 0, i;
#if Q8_HAS_MVE
        for (i = start; i < end; i += 8) {
            const mve_pred16_t lanes = vctp16q((uint32_t)(end - i));
            acc = vmladavaq_p_s16(acc, vldrhq_z_s16(col + i, lanes),
                                  vldrbq_gather_offset_z_s16(w + i, offsets, lanes), lanes);
        }
#else
        for (i = start; i < end; i += 4) {
            Q8_COLUMN_WORDS(col, i, x01, x23);
            (void)x23;
            Q8_QUAD(acc, x01, x23, w + i);
        }
#endif
        total += acc;
    }
    return total;
}

/* The column of output position (ih0, iw0) of a group whose first channel is x_g. */
#define Q8_FILL_COLUMN(T)                                                                   \
    do {                                                                                    \
        int32_t at = 0, ci, kh, kw;                                                         \
        for (ci = 0; ci < c_group; ci++) {                                                  \
            const T *x_c = x_g + (size_t)ci * (size_t)(H * W);                              \
            for (kh = 0; kh < KH; kh++) {                                                   \
                const int32_t ih = ih0 + kh * win->dilation_h;                              \
                if (ih < 0 || ih >= H) {                                                    \
                    for (kw = 0; kw < KW; kw++) {                                           \
                        col[at++] = x_pad;                                                  \
                    }                                                                       \
                    continue;                                                               \
                }                                                                           \
                {                                                                           \
                    const T *row = x_c + (size_t)ih * (size_t)W;                            \
                    for (kw = 0; kw < KW; kw++) {                                           \
                        const int32_t iw = iw0 + kw * win->dilation_w;                      \
                        col[at++] = iw < 0 || iw >= W ? x_pad                               \
                                    : (int16_t)((int32_t)row[iw] - p->x_offset);            \
                    }                                                                       \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
        while (at < p->taps_padded) {                                                       \
            col[at++] = x_pad;                                                              \
        }                                                                                   \
    } while (0)

/* Requantize channel m's sum and store it at output position `at`. */
#define Q8_STORE(T, m, sum)                                                                 \
    do {                                                                                    \
        int32_t q_ = q8_requant_fast(p->bias[m] + (sum), &p->multiplier[m]) + p->y_zero_point; \
        q_ = q_ < p->y_min ? p->y_min : q_;                                                 \
        q_ = q_ > p->y_max ? p->y_max : q_;                                                 \
        y_n[(size_t)(m) * (size_t)plane + at] = (T)q_;                                      \
    } while (0)

/* The taps [*begin, *end) of a window starting at `base` (stride `dil`, K taps) that
 * fall inside [0, size). */
Q8_INLINE void q8_valid_taps(int32_t base, int32_t dil, int32_t size, int32_t K,
                             int32_t *begin, int32_t *end)
{
    int32_t b, e;
    if (base >= 0 && base + (K - 1) * dil < size) {
        *begin = 0; /* the window inside: no division */
        *end = K;
        return;
    }
    b = base < 0 ? (-base + dil - 1) / dil : 0;
    e = base + (K - 1) * dil < size ? K : (size - base + dil - 1) / dil;
    *begin = b;
    *end = e < b ? b : e;
}

/*
 * Depthwise (one input and one output channel per group, at most 255 taps): no column.
 * Each output sums (x - x_zp) * w over its window's taps inside the input, in int32
 * (255 * 65535 * 128 < 2^31), then adds the model's own bias (the folded bias plus
 * x_pad * sum w). The weights of the channel are read back from their quads into scratch.
 */
#define Q8_DEPTHWISE(T)                                                                     \
    do {                                                                                    \
        const int32_t taps = KH * KW;                                                       \
        const int32_t x_zp = p->x_pad + p->x_offset;                                        \
        int16_t *w_c = scratch;                                                             \
        int32_t c, t, oh_, ow_;                                                             \
        for (c = 0; c < C; c++) {                                                           \
            const T *x_c = x + ((size_t)n * (size_t)C + (size_t)c) * (size_t)(H * W);       \
            const int8_t *w_q = p->weights + (size_t)c * (size_t)p->taps_padded;            \
            int64_t bias = p->bias[c];                                                      \
            for (t = 0; t < taps; t++) {                                                    \
                w_c[t] = w_q[(t & ~3) | ((t & 1) << 1) | ((t >> 1) & 1)];                   \
                bias += (int64_t)p->x_pad * w_c[t];                                         \
            }                                                                               \
            for (oh_ = 0; oh_ < OH; oh_++) {                                                \
                const int32_t ih0 = oh_ * win->stride_h - win->pad_top;                     \
                int32_t kh0, kh1;                                                           \
                q8_valid_taps(ih0, win->dilation_h, H, KH, &kh0, &kh1);                     \
                for (ow_ = 0; ow_ < OW; ow_++) {                                            \
                    const int32_t iw0 = ow_ * win->stride_w - win->pad_left;                \
                    const size_t at = (size_t)(oh_ * OW + ow_);                             \
                    int32_t kw0, kw1, kh, kw, acc = 0;                                      \
                    q8_valid_taps(iw0, win->dilation_w, W, KW, &kw0, &kw1);                 \
                    if (KW == 3 && kw0 == 0 && kw1 == 3 && win->dilation_w == 1) {          \
                        /* a whole row of three taps, unrolled */                           \
                        for (kh = kh0; kh < kh1; kh++) {                                    \
                            const T *row = x_c + (size_t)(ih0 + kh * win->dilation_h) *     \
                                                     (size_t)W + iw0;                       \
                            const int16_t *w_row = w_c + kh * 3;                            \
                            acc += ((int32_t)row[0] - x_zp) * w_row[0] +                    \
                                   ((int32_t)row[1] - x_zp) * w_row[1] +                    \
                                   ((int32_t)row[2] - x_zp) * w_row[2];                     \
                        }                                                                   \
                    } else {                                                                \
                        for (kh = kh0; kh < kh1; kh++) {                                    \
                            const T *row = x_c + (size_t)(ih0 + kh * win->dilation_h) *     \
                                                     (size_t)W + iw0;                       \
                            const int16_t *w_row = w_c + kh * KW;                           \
                            for (kw = kw0; kw < kw1; kw++) {                                \
                                acc += ((int32_t)row[kw * win->dilation_w] - x_zp) *        \
                                       w_row[kw];                                           \
                            }                                                               \
                        }                                                                   \
                    }                                                                       \
                    {                                                                       \
                        int32_t q_ = q8_requant_fast(bias + acc, &p->multiplier[c]) +       \
                                     p->y_zero_point;                                       \
                        q_ = q_ < p->y_min ? p->y_min : q_;                                 \
                        q_ = q_ > p->y_max ? p->y_max : q_;                                 \
                        y_n[(size_t)c * plane + at] = (T)q_;                                \
                    }                                                                       \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
    } while (0)

#define Q8_CONV16_IM2COL(NAME, T)                                                           \
    void NAME(const q8_conv_s16_im2col_params *params, const T *Q8_RESTRICT x,             \
              T *Q8_RESTRICT y, int16_t *Q8_RESTRICT scratch)                               \
    {                                                                                       \
        const q8_conv_s16_im2col_params *p = params;                                        \
        const q8_window *win = &p->window;                                                  \
        const int32_t C = p->input.c, H = p->input.h, W = p->input.w;                       \
        const int32_t M = p->output.c, OH = p->output.h, OW = p->output.w;                  \
        const int32_t KH = win->kernel_h, KW = win->kernel_w;                               \
        const int32_t c_group = C / p->groups, m_group = M / p->groups;                     \
        const int32_t blocks = m_group / 4;                                                 \
        const int16_t x_pad = (int16_t)p->x_pad;                                            \
        const size_t plane = (size_t)(OH * OW);                                             \
        int16_t *col = scratch;                                                             \
        int32_t n, g, oh, ow, b, m;                                                         \
        for (n = 0; n < p->input.n; n++) {                                                  \
            T *y_n = y + (size_t)n * (size_t)M * plane;                                     \
            if (c_group == 1 && m_group == 1 && KH * KW <= 255) {                           \
                Q8_DEPTHWISE(T);                                                            \
                continue;                                                                   \
            }                                                                               \
            for (g = 0; g < p->groups; g++) {                                               \
                const T *x_g = x + ((size_t)n * (size_t)C + (size_t)(g * c_group)) *        \
                                       (size_t)(H * W);                                     \
                const int8_t *w_g = p->weights + (size_t)(g * m_group) * (size_t)p->taps_padded; \
                const int8_t *w_rest = w_g + (size_t)(blocks * 4) * (size_t)p->taps_padded; \
                for (oh = 0; oh < OH; oh++) {                                               \
                    const int32_t ih0 = oh * win->stride_h - win->pad_top;                  \
                    for (ow = 0; ow < OW; ow++) {                                           \
                        const int32_t iw0 = ow * win->stride_w - win->pad_left;             \
                        const size_t at = (size_t)(oh * OW + ow);                           \
                        Q8_FILL_COLUMN(T);                                                  \
                        for (b = 0; b < blocks; b++) {                                      \
                            int64_t sums[4];                                                \
                            const int32_t m0 = g * m_group + 4 * b;                         \
                            q8_dot4_s16_s8(col, w_g + (size_t)(4 * b) * (size_t)p->taps_padded, \
                                           p->taps_padded, sums);                           \
                            Q8_STORE(T, m0, sums[0]);                                       \
                            Q8_STORE(T, m0 + 1, sums[1]);                                   \
                            Q8_STORE(T, m0 + 2, sums[2]);                                   \
                            Q8_STORE(T, m0 + 3, sums[3]);                                   \
                        }                                                                   \
                        for (m = 4 * blocks; m < m_group; m++) {                            \
                            const int8_t *w_m = w_rest + (size_t)(m - 4 * blocks) *          \
                                                             (size_t)p->taps_padded;           \
                            Q8_STORE(T, g * m_group + m, q8_dot_s16_s8(col, w_m, p->taps_padded)); \
                        }                                                                   \
                    }                                                                       \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
    }

Q8_CONV16_IM2COL(q8_conv_s16_im2col, int16_t)
Q8_CONV16_IM2COL(q8_conv_u16_im2col, uint16_t)
