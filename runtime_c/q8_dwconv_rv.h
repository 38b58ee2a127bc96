/*
 * q8_dwconv_rv.h - the rows of a depthwise 3x3 channel on RV32IM cores (q8_dwconv.h's
 * q8_interior_rows_rv, in the q8_dwconv_*_3x3_* kernels there).
 *
 * The generic rows pack the weights in halfword pairs for SMLABB/SMLABT, which RV32 has
 * not: each tap would take a shift or two to unpack. Here the nine weights sit in nine
 * registers and each tap is a byte load, a MUL and an ADD; two neighbouring outputs load
 * their four columns once (12 loads for 18 products).
 * Q8_DW_RV=1 builds this path on other targets too (the host tests compare it with the
 * generic rows); -DQ8_NO_ASM leaves it out on RISC-V.
 */
#ifndef Q8_DWCONV_RV_H
#define Q8_DWCONV_RV_H

#include "q8_arith.h"
#include "q8_requant_row.h"
#include "q8_requant_rv.h"
#include "q8_runtime.h"

#ifndef Q8_DW_RV
#if defined(__riscv) && !defined(Q8_NO_ASM)
#define Q8_DW_RV 1
#else
#define Q8_DW_RV 0
#endif
#endif

#if Q8_DW_RV
/* Outputs are summed a chunk of rows at a time into a buffer on the stack, then
 * requantized: the nine weights and the requantization constants are more than the
 * registers hold together (GCC spills both in one loop, about 75 instructions an output;
 * apart, about 50). */
#define Q8_DW_RV_CHUNK 128

/* The sums of n outputs (stride sw) in each of `rows` output rows, the first row's
 * windows starting at `at` and each next row's row_step bytes on, in a plane (width W) in
 * which every window lies inside: modulo 2^32 as the generic rows'. */
Q8_INLINE void q8_dw_sums_rv(const uint8_t *at, int32_t W, int32_t rows, int32_t row_step,
                             int32_t sw, int32_t n, const int32_t w[9], int32_t bias,
                             uint32_t *acc, int is_signed)
{
    const uint32_t w0 = (uint32_t)w[0], w1 = (uint32_t)w[1], w2 = (uint32_t)w[2];
    const uint32_t w3 = (uint32_t)w[3], w4 = (uint32_t)w[4], w5 = (uint32_t)w[5];
    const uint32_t w6 = (uint32_t)w[6], w7 = (uint32_t)w[7], w8 = (uint32_t)w[8];
    int32_t row = 0;
#define Q8_DW_X(R, I) ((uint32_t)(is_signed ? (int32_t)(int8_t)(R)[I] : (int32_t)(R)[I]))
    if (row_step == W) {
        /* Stride 1 down: two rows' outputs at a time, one above the other, sharing two
         * of their four input rows (12 loads for 18 products, as the pairs along a row,
         * and no output left alone where a row's count is odd). */
        for (; row + 1 < rows; row += 2, at += 2 * W) {
            const uint8_t *r0 = at, *r1 = at + W, *r2 = at + 2 * W, *r3 = at + 3 * W;
            uint32_t *top = acc + (size_t)row * (size_t)n, *below = top + n;
            int32_t i;
            for (i = 0; i < n; i++) {
                uint32_t a0 = (uint32_t)bias, a1 = (uint32_t)bias, x0, x1, x2;
                x0 = Q8_DW_X(r0, 0);
                x1 = Q8_DW_X(r0, 1);
                x2 = Q8_DW_X(r0, 2);
                a0 += w0 * x0 + w1 * x1 + w2 * x2;
                x0 = Q8_DW_X(r1, 0);
                x1 = Q8_DW_X(r1, 1);
                x2 = Q8_DW_X(r1, 2);
                a0 += w3 * x0 + w4 * x1 + w5 * x2;
                a1 += w0 * x0 + w1 * x1 + w2 * x2;
                x0 = Q8_DW_X(r2, 0);
                x1 = Q8_DW_X(r2, 1);
                x2 = Q8_DW_X(r2, 2);
                a0 += w6 * x0 + w7 * x1 + w8 * x2;
                a1 += w3 * x0 + w4 * x1 + w5 * x2;
                x0 = Q8_DW_X(r3, 0);
                x1 = Q8_DW_X(r3, 1);
                x2 = Q8_DW_X(r3, 2);
                a1 += w6 * x0 + w7 * x1 + w8 * x2;
                top[i] = a0;
                below[i] = a1;
                r0 += sw;
                r1 += sw;
                r2 += sw;
                r3 += sw;
            }
        }
    }
    acc += (size_t)row * (size_t)n;
    for (; row < rows; row++, at += row_step) {
        const uint8_t *r0 = at, *r1 = at + W, *r2 = at + 2 * W;
        int32_t left = n;
        if (sw == 1) {
            for (; left >= 2; left -= 2) {
                uint32_t a0 = (uint32_t)bias, a1 = (uint32_t)bias, x0, x1, x2, x3;
                x0 = Q8_DW_X(r0, 0);
                x1 = Q8_DW_X(r0, 1);
                x2 = Q8_DW_X(r0, 2);
                x3 = Q8_DW_X(r0, 3);
                a0 += w0 * x0 + w1 * x1 + w2 * x2;
                a1 += w0 * x1 + w1 * x2 + w2 * x3;
                x0 = Q8_DW_X(r1, 0);
                x1 = Q8_DW_X(r1, 1);
                x2 = Q8_DW_X(r1, 2);
                x3 = Q8_DW_X(r1, 3);
                a0 += w3 * x0 + w4 * x1 + w5 * x2;
                a1 += w3 * x1 + w4 * x2 + w5 * x3;
                x0 = Q8_DW_X(r2, 0);
                x1 = Q8_DW_X(r2, 1);
                x2 = Q8_DW_X(r2, 2);
                x3 = Q8_DW_X(r2, 3);
                a0 += w6 * x0 + w7 * x1 + w8 * x2;
                a1 += w6 * x1 + w7 * x2 + w8 * x3;
                acc[0] = a0;
                acc[1] = a1;
                acc += 2;
                r0 += 2;
                r1 += 2;
                r2 += 2;
            }
        }
        for (; left > 0; left--) {
            uint32_t a = (uint32_t)bias;
            a += w0 * Q8_DW_X(r0, 0) + w1 * Q8_DW_X(r0, 1) + w2 * Q8_DW_X(r0, 2);
            a += w3 * Q8_DW_X(r1, 0) + w4 * Q8_DW_X(r1, 1) + w5 * Q8_DW_X(r1, 2);
            a += w6 * Q8_DW_X(r2, 0) + w7 * Q8_DW_X(r2, 1) + w8 * Q8_DW_X(r2, 2);
            *acc++ = a;
            r0 += sw;
            r1 += sw;
            r2 += sw;
        }
    }
#undef Q8_DW_X
}

/* All outputs of one channel, as q8_interior_rows (q8_dwconv.h). */
Q8_INLINE void q8_interior_rows_rv(const q8_dwconv_params *p, const uint8_t *plane, int32_t W,
                                   int32_t pad_top, int32_t pad_left, uint8_t *y_c, int32_t c,
                                   const int16_t *w16, int is_signed, int mode)
{
    const q8_row_requant rq = q8_row_constants(&p->requant, c, mode);
    const q8_rv_requant ints = mode == Q8_RQ_IREQ
        ? q8_rv_requant_constants(&p->requant, p->requant.per_channel ? c : 0)
        : q8_rv_requant_constants_none();
    const int32_t OH = p->output.h, OW = p->output.w, sh = p->stride_h, sw = p->stride_w;
    const int32_t bias = p->bias[c];
    int32_t w[9], i, oh;
    for (i = 0; i < 9; i++) {
        w[i] = w16[i];
    }
    /* whole rows per chunk where they fit, else pieces of one row */
    const int32_t rows = OW <= Q8_DW_RV_CHUNK ? Q8_DW_RV_CHUNK / OW : 1;
    const int32_t piece = OW <= Q8_DW_RV_CHUNK ? OW : Q8_DW_RV_CHUNK;
    uint32_t acc[Q8_DW_RV_CHUNK];
    int32_t ow;
    for (oh = 0; oh < OH; oh += rows) {
        const int32_t last = OH - oh < rows ? OH : oh + rows;
        uint8_t *out = y_c + (size_t)oh * (size_t)OW;
        for (ow = 0; ow < OW; ow += piece) {
            const int32_t n = OW - ow < piece ? OW - ow : piece;
            const int32_t total = (last - oh) * n;
            q8_dw_sums_rv(plane + (size_t)(oh * sh - pad_top) * (size_t)W - pad_left +
                              (size_t)ow * (size_t)sw,
                          W, last - oh, sh * W, sw, n, w, bias, acc, is_signed);
            /* whole rows (ow = 0) or a piece of one: consecutive outputs either way */
            if (mode == Q8_RQ_IREQ) {
                for (i = 0; i < total; i++) {
                    out[ow + i] = q8_rv_requantize(&ints, (int32_t)acc[i]);
                }
            } else {
                for (i = 0; i < total; i++) {
                    out[ow + i] = q8_requantize(&rq, (int32_t)acc[i], mode);
                }
            }
        }
    }
}
#endif

#endif /* Q8_DWCONV_RV_H */
