/*
 * q8_dwconv.h - depthwise QLinearConv with 3x3 kernels (one filter per channel, any
 * stride and padding, dilation 1): the fast path beside the reference in qlinear_conv.c.
 *
 * Each channel's nine weights (minus their zero point, int16) stay in registers. Every output
 * is acc = bias' + sum of nine x * w over raw inputs, with bias' = bias - x_zp * sum(w)
 * precomputed and padding taps reading x_zp, which is the same sum modulo 2^32 as
 * sum (x - x_zp) * w + bias. A layer with padding copies each channel into a scratch
 * plane with its border of x_zp first, so that one loop without bounds checks does every
 * output. Instantiated by q8_dwconv_3x3.c (layers without padding) and dwconv_3x3_padded.c.
 */
#ifndef Q8_DWCONV_H
#define Q8_DWCONV_H

#include "q8_arith.h"
#include "q8_dsp.h"
#include "q8_requant_row.h"
#include "q8_requant_run.h"
#include "q8_runtime.h"
#include "q8_dwconv_rv.h"

Q8_INLINE int32_t q8_load_x(const uint8_t *p, int is_signed)
{
    return is_signed ? (int32_t)(int8_t)*p : (int32_t)*p;
}


/* Two int16 weights in one word: lo, hi. */
Q8_INLINE int32_t q8_weight_pair(const int16_t *w)
{
    return (int32_t)(((uint32_t)(uint16_t)w[0]) | ((uint32_t)(uint16_t)w[1] << 16));
}

/*
 * All outputs of one channel, from a plane (width W) in which every window lies inside:
 * row by row, three row pointers walk along, the nine weights sit in five registers as
 * halfword pairs, each tap is one 16 x 16 multiply-accumulate (SMLABB/SMLABT on DSP
 * cores). Loop invariants are read into locals first: the byte stores may alias anything.
 */
Q8_INLINE void q8_interior_rows(const q8_dwconv_params *p, const uint8_t *plane, int32_t W,
                             int32_t pad_top, int32_t pad_left, uint8_t *y_c, int32_t c,
                             const int16_t *w, int is_signed, int mode)
{
    const q8_row_requant rq = q8_row_constants(&p->requant, c, mode);
    const int32_t OH = p->output.h, OW = p->output.w, sh = p->stride_h, sw = p->stride_w;
    const int32_t w01 = q8_weight_pair(w), w23 = q8_weight_pair(w + 2), w45 = q8_weight_pair(w + 4);
    const int32_t w67 = q8_weight_pair(w + 6), w8 = (int32_t)w[8];
    const int32_t bias = p->bias[c];
    uint8_t *out = y_c;
    int32_t oh, ow;
    for (oh = 0; oh < OH; oh++) {
        const uint8_t *r0 = plane + (size_t)(oh * sh - pad_top) * (size_t)W - pad_left;
        const uint8_t *r1 = r0 + W, *r2 = r1 + W;
        ow = OW;
        if (sw == 1) {
            /* Two neighbouring outputs share two of their three columns: 12 loads for 18
             * multiply-accumulates. */
            for (; ow >= 2; ow -= 2) {
                int32_t x0 = q8_load_x(r0, is_signed), x1 = q8_load_x(r0 + 1, is_signed);
                int32_t x2 = q8_load_x(r0 + 2, is_signed), x3 = q8_load_x(r0 + 3, is_signed);
                int32_t a0 = q8_smlabb(x0, w01, bias), a1 = q8_smlabb(x1, w01, bias);
                a0 = q8_smlabt(x1, w01, a0);
                a1 = q8_smlabt(x2, w01, a1);
                a0 = q8_smlabb(x2, w23, a0);
                a1 = q8_smlabb(x3, w23, a1);
                x0 = q8_load_x(r1, is_signed);
                x1 = q8_load_x(r1 + 1, is_signed);
                x2 = q8_load_x(r1 + 2, is_signed);
                x3 = q8_load_x(r1 + 3, is_signed);
                a0 = q8_smlabt(x0, w23, a0);
                a1 = q8_smlabt(x1, w23, a1);
                a0 = q8_smlabb(x1, w45, a0);
                a1 = q8_smlabb(x2, w45, a1);
                a0 = q8_smlabt(x2, w45, a0);
                a1 = q8_smlabt(x3, w45, a1);
                x0 = q8_load_x(r2, is_signed);
                x1 = q8_load_x(r2 + 1, is_signed);
                x2 = q8_load_x(r2 + 2, is_signed);
                x3 = q8_load_x(r2 + 3, is_signed);
                a0 = q8_smlabb(x0, w67, a0);
                a1 = q8_smlabb(x1, w67, a1);
                a0 = q8_smlabt(x1, w67, a0);
                a1 = q8_smlabt(x2, w67, a1);
                a0 = q8_smlabb(x2, w8, a0);
                a1 = q8_smlabb(x3, w8, a1);
                out[0] = q8_requantize(&rq, a0, mode);
                out[1] = q8_requantize(&rq, a1, mode);
                out += 2;
                r0 += 2;
                r1 += 2;
                r2 += 2;
            }
        }
        for (; ow > 0; ow--) {
            int32_t acc = bias;
            acc = q8_smlabb(q8_load_x(r0, is_signed), w01, acc);
            acc = q8_smlabt(q8_load_x(r0 + 1, is_signed), w01, acc);
            acc = q8_smlabb(q8_load_x(r0 + 2, is_signed), w23, acc);
            acc = q8_smlabt(q8_load_x(r1, is_signed), w23, acc);
            acc = q8_smlabb(q8_load_x(r1 + 1, is_signed), w45, acc);
            acc = q8_smlabt(q8_load_x(r1 + 2, is_signed), w45, acc);
            acc = q8_smlabb(q8_load_x(r2, is_signed), w67, acc);
            acc = q8_smlabt(q8_load_x(r2 + 1, is_signed), w67, acc);
            acc = q8_smlabb(q8_load_x(r2 + 2, is_signed), w8, acc);
            *out++ = q8_requantize(&rq, acc, mode);
            r0 += sw;
            r1 += sw;
            r2 += sw;
        }
    }
}

/*
 * Hosts with a vector unit: a run of outputs at a time (a row, or at stride 1 several
 * rows of a narrow plane), up to Q8_DW_RUN of them, each of the nine taps one loop over
 * the run (a widening multiply-add the compiler vectorizes), then the run requantized at
 * once (q8_requant_run.h). The same sums as
 * q8_interior_rows, in int32 (|x * w| <= 255 * 32768 and nine of them).
 */
#if (defined(__x86_64__) || defined(__aarch64__)) && !defined(Q8_PIX_PORTABLE)
#define Q8_DW_ROW_VECTORS 1
#else
#define Q8_DW_ROW_VECTORS 0
#endif

#if Q8_DW_ROW_VECTORS
#define Q8_DW_RUN 256

/* sums[i] += x[i * stride] * w for a run of n, x widened by type. */
Q8_INLINE void q8_dw_tap(int32_t *Q8_RESTRICT sums, const uint8_t *Q8_RESTRICT x, int32_t w,
                         int32_t n, int32_t stride, int is_signed)
{
    int32_t i;
    if (stride == 1) {
        if (is_signed) {
            for (i = 0; i < n; i++) {
                sums[i] += (int32_t)(int8_t)x[i] * w;
            }
        } else {
            for (i = 0; i < n; i++) {
                sums[i] += (int32_t)x[i] * w;
            }
        }
    } else {
        for (i = 0; i < n; i++) {
            sums[i] += q8_load_x(x + (size_t)i * (size_t)stride, is_signed) * w;
        }
    }
}

/* The nine taps in turn, each its own loop over the run (written out: GCC would otherwise
 * fuse two taps' loops into one it does not vectorize). */
Q8_INLINE void q8_dw_taps9(int32_t *Q8_RESTRICT sums, const uint8_t *x0, size_t W,
                           const int16_t *w, int32_t n, int32_t stride, int is_signed)
{
    q8_dw_tap(sums, x0, w[0], n, stride, is_signed);
    q8_dw_tap(sums, x0 + 1, w[1], n, stride, is_signed);
    q8_dw_tap(sums, x0 + 2, w[2], n, stride, is_signed);
    q8_dw_tap(sums, x0 + W, w[3], n, stride, is_signed);
    q8_dw_tap(sums, x0 + W + 1, w[4], n, stride, is_signed);
    q8_dw_tap(sums, x0 + W + 2, w[5], n, stride, is_signed);
    q8_dw_tap(sums, x0 + 2 * W, w[6], n, stride, is_signed);
    q8_dw_tap(sums, x0 + 2 * W + 1, w[7], n, stride, is_signed);
    q8_dw_tap(sums, x0 + 2 * W + 2, w[8], n, stride, is_signed);
}

Q8_INLINE void q8_interior_rows_vec(const q8_dwconv_params *p, const uint8_t *plane, int32_t W,
                                    int32_t pad_top, int32_t pad_left, uint8_t *y_c, int32_t c,
                                    const int16_t *w, int is_signed, int mode)
{
    const q8_row_requant rq = q8_row_constants(&p->requant, c, mode);
    const int32_t OH = p->output.h, OW = p->output.w, sh = p->stride_h, sw = p->stride_w;
    const int32_t bias = p->bias[c];
    int32_t sums[Q8_DW_RUN];
    int32_t oh, ow, i, t;
    if (sh == 1 && sw == 1 && W <= Q8_DW_RUN) {
        uint8_t run[Q8_DW_RUN];
        /* Stride 1, narrow planes (DS-CNN's are 5 wide): several rows as one run over the
         * plane, the sums between rows computed and dropped, so the loops stay long. */
        const int32_t rows = Q8_DW_RUN / W;
        for (oh = 0; oh < OH; oh += rows) {
            const int32_t k = OH - oh < rows ? OH - oh : rows, n = (k - 1) * W + OW;
            const uint8_t *x0 = plane + (size_t)(oh - pad_top) * (size_t)W - pad_left;
            for (i = 0; i < n; i++) {
                sums[i] = 0;
            }
            q8_dw_taps9(sums, x0, (size_t)W, w, n, 1, is_signed);
            /* The whole run requantized at once (the dropped sums are sums of nine
             * in-range products too, inside the same bound), then its rows copied. */
            q8_requantize_run(&rq, sums, bias, n, run, mode);
            for (i = 0; i < k; i++) {
                q8_copy_short(y_c + (size_t)(oh + i) * (size_t)OW, run + (size_t)i * (size_t)W,
                              OW);
            }
        }
        return;
    }
    for (oh = 0; oh < OH; oh++) {
        const uint8_t *r0 = plane + (size_t)(oh * sh - pad_top) * (size_t)W - pad_left;
        for (ow = 0; ow < OW; ow += Q8_DW_RUN) {
            const int32_t n = OW - ow < Q8_DW_RUN ? OW - ow : Q8_DW_RUN;
            const uint8_t *x0 = r0 + (size_t)ow * (size_t)sw;
            for (i = 0; i < n; i++) {
                sums[i] = 0;
            }
            if (sw == 2) {
                /* Each row's even and odd columns apart first: the three taps of a row
                 * then read runs (even, odd, even from the next). */
                uint8_t even[Q8_DW_RUN + 1], odd[Q8_DW_RUN];
                for (t = 0; t < 3; t++) {
                    const uint8_t *row = x0 + (size_t)t * (size_t)W;
                    for (i = 0; i < n; i++) {
                        even[i] = row[2 * i];
                        odd[i] = row[2 * i + 1];
                    }
                    even[n] = row[2 * n];
                    q8_dw_tap(sums, even, w[3 * t], n, 1, is_signed);
                    q8_dw_tap(sums, odd, w[3 * t + 1], n, 1, is_signed);
                    q8_dw_tap(sums, even + 1, w[3 * t + 2], n, 1, is_signed);
                }
            } else {
                q8_dw_taps9(sums, x0, (size_t)W, w, n, sw, is_signed);
            }
            q8_requantize_run(&rq, sums, bias, n, y_c + (size_t)oh * (size_t)OW + (size_t)ow,
                              mode);
        }
    }
}
#endif

/*
 * The padded plane (PH x PW) around an H x W channel at (pt, pl): its border, the same for
 * every channel, is written once per call; each channel then only copies its rows in,
 * a word at a time where it can (short rows make library calls too costly).
 */
Q8_INLINE void q8_pad_border(int32_t H, int32_t W, int32_t pt, int32_t pl, int32_t PH,
                          int32_t PW, uint8_t pad, uint8_t *padded)
{
    int32_t r, i;
    for (r = 0; r < PH; r++) {
        uint8_t *row = padded + (size_t)r * (size_t)PW;
        const int inside = r >= pt && r - pt < H;
        for (i = 0; i < PW; i++) {
            if (!inside || i < pl || i - pl >= W) {
                row[i] = pad;
            }
        }
    }
}

/* GCC would turn these short copy loops back into memcpy calls, which cost more than the
 * copy itself on rows of a few bytes. `flip` (0x80808080 or 0) turns int8 bytes into
 * x + 128 for the offset plane below. */
#if defined(__GNUC__) && !defined(__clang__)
#define Q8_NO_MEMCPY_LOOPS __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define Q8_NO_MEMCPY_LOOPS
#endif
Q8_NO_MEMCPY_LOOPS Q8_UNUSED static void q8_copy_row(const uint8_t *src, int32_t cols,
                                                   uint32_t flip, uint8_t *dst)
{
    int32_t i;
#if defined(__ARM_FEATURE_UNALIGNED) || !defined(__arm__)
    for (i = 0; i + 4 <= cols; i += 4) {
        q8_store32(dst + i, q8_load32(src + i) ^ flip);
    }
#else
    /* No unaligned word access (Cortex-M0/M0+): memcpy calls, not single loads. */
    for (i = 0; i + 4 <= cols; i += 4) {
        dst[i] = (uint8_t)(src[i] ^ flip);
        dst[i + 1] = (uint8_t)(src[i + 1] ^ flip);
        dst[i + 2] = (uint8_t)(src[i + 2] ^ flip);
        dst[i + 3] = (uint8_t)(src[i + 3] ^ flip);
    }
#endif
    for (; i < cols; i++) {
        dst[i] = (uint8_t)(src[i] ^ flip);
    }
}

#if Q8_HAS_MVE
/* rows rows of n bytes from src to dst (pitches src_pitch and dst_pitch), by predicated
 * vector copies of 16 bytes: on Helium cores the plane copies of the depthwise kernel
 * (rows of a few bytes would cost a library call each). */
Q8_INLINE void q8_copy_rows_mve(const uint8_t *src, int32_t src_pitch, uint8_t *dst,
                                int32_t dst_pitch, int32_t n, int32_t rows)
{
    int32_t r, i;
    if (n <= 16) { /* a row one predicated vector */
        const mve_pred16_t lanes = vctp8q((uint32_t)n);
        for (r = 0; r < rows; r++) {
            vstrbq_p_u8(dst, vldrbq_z_u8(src, lanes), lanes);
            src += src_pitch;
            dst += dst_pitch;
        }
        return;
    }
    for (r = 0; r < rows; r++) {
        for (i = 0; i < n; i += 16) {
            const mve_pred16_t lanes = vctp8q((uint32_t)(n - i));
            vstrbq_p_u8(dst + i, vldrbq_z_u8(src + i, lanes), lanes);
        }
        src += src_pitch;
        dst += dst_pitch;
    }
}
#endif

Q8_NO_MEMCPY_LOOPS Q8_UNUSED static void q8_copy_channel(const uint8_t *x_c, int32_t H,
                                                      int32_t W, int32_t pt, int32_t pl,
                                                      int32_t PH, int32_t PW, uint32_t flip,
                                                      uint8_t *padded)
{
    const int32_t rows = H < PH - pt ? H : PH - pt, cols = W < PW - pl ? W : PW - pl;
    int32_t r;
#if Q8_HAS_MVE
    if (flip == 0u) {
        q8_copy_rows_mve(x_c, W, padded + (size_t)pt * (size_t)PW + (size_t)pl, PW, cols, rows);
        return;
    }
#endif
    for (r = 0; r < rows; r++) {
#if Q8_DW_ROW_VECTORS
        if (flip == 0u) {
            /* Hosts: short rows copied inline. */
            q8_copy_short(padded + (size_t)(r + pt) * (size_t)PW + pl,
                          x_c + (size_t)r * (size_t)W, cols);
            continue;
        }
#endif
        q8_copy_row(x_c + (size_t)r * (size_t)W, cols, flip,
                    padded + (size_t)(r + pt) * (size_t)PW + pl);
    }
}

/*
 * Thumb-1 cores (Cortex-M0/M0+, q8_dwconv_*_3x3_padded_* there): LDRB and LDR take
 * immediate offsets but LDRSB and LDRSH do not, MULS multiplies low registers only and
 * overwrites one of them, and there is no multiply-accumulate. So the padded copy of an
 * int8 channel holds x + 128 (one EOR per word; the padding x_zp + 128 likewise), every tap
 * is an unsigned byte load, the nine weights are sign-extended once per channel into
 * words, and the bias absorbs 128 * sum(w) (modulo 2^32, as the zero point's fold). Two
 * neighbouring outputs share a column: 7 loads for 6 multiply-accumulates per kernel row
 * at stride 1, 8 at stride 2. Elsewhere Q8_DW_OFFSET_PLANE=1 builds the same computation
 * from C, which is how the host tests it.
 */
#ifndef Q8_DW_OFFSET_PLANE
#if defined(__thumb__) && !defined(__thumb2__)
#define Q8_DW_OFFSET_PLANE 1
#else
#define Q8_DW_OFFSET_PLANE 0
#endif
#endif

#if Q8_DW_OFFSET_PLANE && defined(__GNUC__) && defined(__thumb__) && !defined(__thumb2__) && \
    defined(__OPTIMIZE__) && !defined(__OPTIMIZE_SIZE__) && !defined(Q8_NO_ASM)
/* One kernel row of two outputs at stride 1: x0..x3 at p, weights k0..k2 at w + J. The
 * accumulators and the row step sit in high registers ("h"), which ADD takes, so five low
 * registers suffice beside a frame pointer. */
#define Q8_DW_T1_ROW_S1(J0, J1, J2)                                                         \
    "ldr %[k], [%[w], #" #J0 "]\n\t"                                                       \
    "ldrb %[x], [%[p], #0]\n\t"                                                             \
    "muls %[x], %[k]\n\t"                                                                  \
    "add %[a0], %[x]\n\t"                                                                  \
    "ldrb %[x], [%[p], #1]\n\t"                                                             \
    "movs %[t], %[x]\n\t"                                                                  \
    "muls %[t], %[k]\n\t"                                                                  \
    "add %[a1], %[t]\n\t"                                                                  \
    "ldr %[k], [%[w], #" #J1 "]\n\t"                                                       \
    "muls %[x], %[k]\n\t"                                                                  \
    "add %[a0], %[x]\n\t"                                                                  \
    "ldrb %[x], [%[p], #2]\n\t"                                                             \
    "movs %[t], %[x]\n\t"                                                                  \
    "muls %[t], %[k]\n\t"                                                                  \
    "add %[a1], %[t]\n\t"                                                                  \
    "ldr %[k], [%[w], #" #J2 "]\n\t"                                                       \
    "muls %[x], %[k]\n\t"                                                                  \
    "add %[a0], %[x]\n\t"                                                                  \
    "ldrb %[x], [%[p], #3]\n\t"                                                             \
    "muls %[x], %[k]\n\t"                                                                  \
    "add %[a1], %[x]\n\t"

/* The same at stride 2: x0..x4, x2 shared. */
#define Q8_DW_T1_ROW_S2(J0, J1, J2)                                                         \
    "ldr %[k], [%[w], #" #J0 "]\n\t"                                                       \
    "ldrb %[x], [%[p], #0]\n\t"                                                             \
    "muls %[x], %[k]\n\t"                                                                  \
    "add %[a0], %[x]\n\t"                                                                  \
    "ldrb %[x], [%[p], #2]\n\t"                                                             \
    "movs %[t], %[x]\n\t"                                                                  \
    "muls %[t], %[k]\n\t"                                                                  \
    "add %[a1], %[t]\n\t"                                                                  \
    "ldr %[k], [%[w], #" #J2 "]\n\t"                                                       \
    "muls %[x], %[k]\n\t"                                                                  \
    "add %[a0], %[x]\n\t"                                                                  \
    "ldrb %[x], [%[p], #4]\n\t"                                                             \
    "muls %[x], %[k]\n\t"                                                                  \
    "add %[a1], %[x]\n\t"                                                                  \
    "ldr %[k], [%[w], #" #J1 "]\n\t"                                                       \
    "ldrb %[x], [%[p], #1]\n\t"                                                             \
    "muls %[x], %[k]\n\t"                                                                  \
    "add %[a0], %[x]\n\t"                                                                  \
    "ldrb %[x], [%[p], #3]\n\t"                                                             \
    "muls %[x], %[k]\n\t"                                                                  \
    "add %[a1], %[x]\n\t"

#define Q8_DW_T1_PAIR(ROW)                                                                  \
    __asm__ volatile(".syntax unified\n\t" ROW(0, 4, 8) "add %[p], %[W]\n\t"          \
                     ROW(12, 16, 20) "add %[p], %[W]\n\t" ROW(24, 28, 32)        \
                     : [p] "+l"(p), [a0] "+h"(a0), [a1] "+h"(a1), [x] "=&l"(x),            \
                       [t] "=&l"(t), [k] "=&l"(k)                                          \
                     : [w] "l"(w), [W] "h"(W)                                              \
                     : "cc", "memory")

Q8_INLINE void q8_offset_pair(const uint8_t *p, const int32_t *w, int32_t W, int32_t stride,
                           int32_t acc[2])
{
    int32_t a0 = acc[0], a1 = acc[1], x, t, k;
    if (stride == 1) {
        Q8_DW_T1_PAIR(Q8_DW_T1_ROW_S1);
    } else if (stride == 2) {
        Q8_DW_T1_PAIR(Q8_DW_T1_ROW_S2);
    } else {
        int32_t r;
        for (r = 0; r < 3; r++, p += W) {
            for (k = 0; k < 3; k++) {
                a0 = (int32_t)((uint32_t)a0 + (uint32_t)w[3 * r + k] * p[k]);
                a1 = (int32_t)((uint32_t)a1 + (uint32_t)w[3 * r + k] * p[stride + k]);
            }
        }
        (void)x;
        (void)t;
    }
    acc[0] = a0;
    acc[1] = a1;
}
#else
Q8_INLINE void q8_offset_pair(const uint8_t *p, const int32_t *w, int32_t W, int32_t stride,
                           int32_t acc[2])
{
    uint32_t a0 = (uint32_t)acc[0], a1 = (uint32_t)acc[1];
    int32_t r, k;
    for (r = 0; r < 3; r++) {
        const uint8_t *row = p + (size_t)r * (size_t)W;
        for (k = 0; k < 3; k++) {
            a0 += (uint32_t)w[3 * r + k] * row[k];
            a1 += (uint32_t)w[3 * r + k] * row[stride + k];
        }
    }
    acc[0] = (int32_t)a0;
    acc[1] = (int32_t)a1;
}
#endif

/* The outputs of one channel from its offset plane (width W), two at a time, at stride
 * sw (a constant where the caller passes one); an odd row's last output is computed as a
 * pair too, whose second lies past the row (the generator gives the plane stride_w spare
 * bytes for the last row's) and is not stored. */
Q8_INLINE void q8_offset_plane_rows(const q8_row_requant *rq, const uint8_t *x, int32_t W,
                                 int32_t sw, size_t row_step, int32_t OH, int32_t OW,
                                 const int32_t w[9], uint32_t bias, uint8_t *out, int mode)
{
    const size_t pairs_step = (size_t)(OW / 2) * (size_t)(2 * sw);
    int32_t oh;
    for (oh = 0; oh < OH; oh++, x += row_step) {
        const uint8_t *p = x;
        const uint8_t *const pairs_end = x + pairs_step;
        int32_t acc[2];
        for (; p < pairs_end; p += 2 * sw, out += 2) {
            acc[0] = acc[1] = (int32_t)bias;
            q8_offset_pair(p, w, W, sw, acc);
            out[0] = q8_requantize(rq, acc[0], mode);
            out[1] = q8_requantize(rq, acc[1], mode);
        }
        if (OW & 1) {
            acc[0] = acc[1] = (int32_t)bias;
            q8_offset_pair(p, w, W, sw, acc);
            *out++ = q8_requantize(rq, acc[0], mode);
        }
    }
}

/* All outputs of one channel: its weights as words, its bias offset by 128 * sum(w) for
 * int8 inputs. */
Q8_INLINE void q8_offset_rows(const q8_dwconv_params *p, const uint8_t *plane, int32_t W,
                           uint8_t *y_c, int32_t c, const int16_t *w16, int is_signed,
                           int mode)
{
    const q8_row_requant rq = q8_row_constants(&p->requant, c, mode);
    const int32_t OH = p->output.h, OW = p->output.w, sw = p->stride_w;
    const size_t row_step = (size_t)p->stride_h * (size_t)W;
    int32_t w[9];
    uint32_t sum = 0u, bias;
    int32_t k;
    for (k = 0; k < 9; k++) {
        w[k] = w16[k];
        sum += (uint32_t)w[k];
    }
    bias = (uint32_t)p->bias[c] - (is_signed ? sum << 7 : 0u);
    if (sw == 1) {
        q8_offset_plane_rows(&rq, plane, W, 1, row_step, OH, OW, w, bias, y_c, mode);
    } else if (sw == 2) {
        q8_offset_plane_rows(&rq, plane, W, 2, row_step, OH, OW, w, bias, y_c, mode);
    } else {
        q8_offset_plane_rows(&rq, plane, W, sw, row_step, OH, OW, w, bias, y_c, mode);
    }
}

/*
 * Channels one at a time. Without padding, or when the window never leaves the input,
 * the outputs read the input directly; otherwise the channel is first copied into the
 * scratch plane with its padding, so no output needs bounds checks.
 */
Q8_INLINE void q8_dwconv_3x3(const q8_dwconv_params *p, const uint8_t *x,
                          uint8_t *y, uint8_t *Q8_RESTRICT scratch, int padded,
                          int is_signed, int mode)
{
    const int32_t C = p->input.c, H = p->input.h, W = p->input.w;
    const int32_t OH = p->output.h, OW = p->output.w;
    const int32_t PH = (OH - 1) * p->stride_h + 3, PW = (OW - 1) * p->stride_w + 3;
    /* the channels to compute: channel_list's, or all */
    const int32_t count = p->channel_list != NULL ? p->channel_count : C;
    int32_t n, i_c;
    /* the offset plane's bytes: int8 as x + 128 */
    const uint32_t flip = Q8_DW_OFFSET_PLANE && is_signed ? 0x80808080u : 0u;
    if (padded) {
        q8_pad_border(H, W, p->pad_top, p->pad_left, PH, PW,
                   (uint8_t)((uint32_t)p->pad_value ^ flip), scratch);
    }
    for (n = 0; n < p->input.n; n++) {
        for (i_c = 0; i_c < count; i_c++) {
            const int32_t c = p->channel_list != NULL ? p->channel_list[i_c] : i_c;
            const uint8_t *x_c = x + ((size_t)n * (size_t)C + (size_t)c) * (size_t)(H * W);
            uint8_t *y_c = y + ((size_t)n * (size_t)C + (size_t)c) * (size_t)(OH * OW);
            const int16_t *wc = p->weights + (size_t)i_c * 9u;
            if (padded) {
                q8_copy_channel(x_c, H, W, p->pad_top, p->pad_left, PH, PW, flip, scratch);
#if Q8_DW_OFFSET_PLANE
                q8_offset_rows(p, scratch, PW, y_c, i_c, wc, is_signed, mode);
#elif Q8_DW_RV
                q8_interior_rows_rv(p, scratch, PW, 0, 0, y_c, i_c, wc, is_signed, mode);
#elif Q8_DW_ROW_VECTORS
                q8_interior_rows_vec(p, scratch, PW, 0, 0, y_c, i_c, wc, is_signed, mode);
#else
                q8_interior_rows(p, scratch, PW, 0, 0, y_c, i_c, wc, is_signed, mode);
#endif
            } else {
#if Q8_DW_RV
                q8_interior_rows_rv(p, x_c, W, p->pad_top, p->pad_left, y_c, i_c, wc,
                                    is_signed, mode);
#elif Q8_DW_ROW_VECTORS
                q8_interior_rows_vec(p, x_c, W, p->pad_top, p->pad_left, y_c, i_c, wc,
                                     is_signed, mode);
#else
                q8_interior_rows(p, x_c, W, p->pad_top, p->pad_left, y_c, i_c, wc, is_signed,
                              mode);
#endif
            }
        }
    }
}

#endif /* Q8_DWCONV_H */
