/*
 * q8_im2col_b8.h - the unsigned-byte im2col convolution (q8_conv_*_im2col_b8_*), for cores
 * without the DSP extension (q8_im2col.h).
 */
#ifndef Q8_IM2COL_B8_H
#define Q8_IM2COL_B8_H

#include <string.h>

#include "q8_arith.h"
#include "q8_dsp.h"
#include "q8_requant_row.h"
#include "q8_runtime.h"
#include "q8_window.h"
#include "q8_im2col_fill.h"

/*
 * The unsigned-byte variant (q8_conv_*_im2col_b8_*), for cores without the DSP extension
 * (Cortex-M0/M0+/M3): weights stored as u = w + 128 (one byte each, row by row) and
 * the columns as x' = x + 128 for
 * int8 inputs (x for uint8), both non-negative, so every operand is an unsigned load
 * with an immediate offset, which is all Thumb-1 has. With S = sum x' over the column:
 *   sum u x' - 128 S = sum w x + off * sum w        (off = 128 for int8 inputs, else 0)
 * and bias[m] = B[m] - (x_zp + off) * sum w[m] (modulo 2^32) completes the accumulator.
 */
#if defined(__GNUC__) && defined(__thumb__) && !defined(__thumb2__) && \
    defined(__OPTIMIZE__) && !defined(__OPTIMIZE_SIZE__) && !defined(Q8_NO_ASM) && \
    !defined(__ARM_RWPI)
/* Thumb-1 by hand (GCC 12 spills in this loop: 68 instructions per 16 MACs; at -Os GCC
 * keeps the high registers out of use, and the C loop runs): per tap one
 * byte and two halfword loads with immediate offsets, two MULS, two ADDs; 60 instructions
 * and about 87 cycles per 16 MACs on Cortex-M0+. The accumulators and the end sit in
 * high registers ("h": ADD and CMP take them; in Thumb-1 "r" means r0-r7), so six low
 * registers suffice even beside a frame pointer.
 * The C loop below is the same computation. */
#define Q8_B8_TAP_ASM(J, J2)                                                                \
    "ldrb %[u], [%[w], #" #J "]\n\t"                                                        \
    "ldrh %[x0], [%[c0], #" #J2 "]\n\t"                                                     \
    "ldrh %[x1], [%[c1], #" #J2 "]\n\t"                                                     \
    "muls %[x0], %[u]\n\t"                                                                 \
    "muls %[x1], %[u]\n\t"                                                                 \
    "add %[a0], %[x0]\n\t"                                                                 \
    "add %[a1], %[x1]\n\t"

Q8_UNUSED static void q8_dot_b8_1x2(const uint8_t *w, const int16_t *c0, const int16_t *c1,
                                 int32_t blocks, uint32_t acc[2])
{
    uint32_t a0 = acc[0], a1 = acc[1], u, x0, x1;
    const uint8_t *const end = w + (size_t)blocks * 8u;
    /* GCC hands Thumb-1 inline assembly over in divided syntax. */
    __asm__ volatile(
        ".syntax unified\n"
        "1:\n\t"
        Q8_B8_TAP_ASM(0, 0)
        Q8_B8_TAP_ASM(1, 2)
        Q8_B8_TAP_ASM(2, 4)
        Q8_B8_TAP_ASM(3, 6)
        Q8_B8_TAP_ASM(4, 8)
        Q8_B8_TAP_ASM(5, 10)
        Q8_B8_TAP_ASM(6, 12)
        Q8_B8_TAP_ASM(7, 14)
        "adds %[w], #8\n\t"
        "adds %[c0], #16\n\t"
        "adds %[c1], #16\n\t"
        "cmp %[w], %[end]\n\t"
        "bne 1b\n"
        : [w] "+l"(w), [c0] "+l"(c0), [c1] "+l"(c1), [a0] "+h"(a0), [a1] "+h"(a1),
          [u] "=&l"(u), [x0] "=&l"(x0), [x1] "=&l"(x1)
        : [end] "h"(end)
        : "cc", "memory");
    acc[0] = a0;
    acc[1] = a1;
}
#else
Q8_UNUSED static void q8_dot_b8_1x2(const uint8_t *w, const int16_t *c0, const int16_t *c1,
                       int32_t blocks, uint32_t acc[2])
{
    uint32_t a0 = acc[0], a1 = acc[1];
    /* Written out, so that every load takes an immediate offset; one row and two
     * columns keep all values in the eight low registers Thumb-1 multiplies with. */
#define Q8_B8_TAP(J)                                                                           \
    do {                                                                                       \
        const uint32_t u = w[J];                                                               \
        a0 += u * (uint16_t)c0[J];                                                             \
        a1 += u * (uint16_t)c1[J];                                                             \
    } while (0)
    for (; blocks > 0; blocks--) {
        Q8_B8_TAP(0);
        Q8_B8_TAP(1);
        Q8_B8_TAP(2);
        Q8_B8_TAP(3);
        Q8_B8_TAP(4);
        Q8_B8_TAP(5);
        Q8_B8_TAP(6);
        Q8_B8_TAP(7);
        w += 8;
        c0 += 8;
        c1 += 8;
    }
#undef Q8_B8_TAP
    acc[0] = a0;
    acc[1] = a1;
}
#endif

/* One row by four columns (Thumb-1 cores, columns == 4): the weight byte is loaded once
 * for four taps, 13 instructions per four multiply-accumulates against 14 for two
 * passes of the 1 x 2 loop, and the per-row work of the caller (requantization constants,
 * bias, call) is shared by four outputs. Seven low registers: all of r0-r6 beside the
 * frame pointer; the accumulators and the end in high ones. */
#if defined(__GNUC__) && defined(__thumb__) && !defined(__thumb2__) && \
    defined(__OPTIMIZE__) && !defined(__OPTIMIZE_SIZE__) && !defined(Q8_NO_ASM) && \
    !defined(__ARM_RWPI)
#define Q8_B8_TAP4_ASM(J, J2)                                                               \
    "ldrb %[u], [%[w], #" #J "]\n\t"                                                        \
    "ldrh %[x], [%[c0], #" #J2 "]\n\t"                                                      \
    "muls %[x], %[u]\n\t"                                                                  \
    "add %[a0], %[x]\n\t"                                                                  \
    "ldrh %[x], [%[c1], #" #J2 "]\n\t"                                                      \
    "muls %[x], %[u]\n\t"                                                                  \
    "add %[a1], %[x]\n\t"                                                                  \
    "ldrh %[x], [%[c2], #" #J2 "]\n\t"                                                      \
    "muls %[x], %[u]\n\t"                                                                  \
    "add %[a2], %[x]\n\t"                                                                  \
    "ldrh %[x], [%[c3], #" #J2 "]\n\t"                                                      \
    "muls %[x], %[u]\n\t"                                                                  \
    "add %[a3], %[x]\n\t"

Q8_INLINE void q8_dot_b8_1x4(const uint8_t *w, const int16_t *const cols[4],
                          int32_t blocks, uint32_t acc[4])
{
    const int16_t *c0 = cols[0], *c1 = cols[1], *c2 = cols[2], *c3 = cols[3];
    uint32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3], u, x;
    const uint8_t *const end = w + (size_t)blocks * 8u;
    /* Sixteen taps a pass; an odd count of 8-tap blocks (bit 3 of end - w, shifted out
     * into the carry) enters at the second half with the pointers 8 taps back. The loop
     * is too long for a conditional branch back. */
    __asm__ volatile(
        ".syntax unified\n\t"
        "mov %[u], %[end]\n\t"
        "subs %[u], %[u], %[w]\n\t"
        "lsrs %[u], %[u], #4\n\t"
        "bcc 1f\n\t"
        "subs %[w], #8\n\t"
        "subs %[c0], #16\n\t"
        "subs %[c1], #16\n\t"
        "subs %[c2], #16\n\t"
        "subs %[c3], #16\n\t"
        "b 2f\n"
        "1:\n\t"
        Q8_B8_TAP4_ASM(0, 0)
        Q8_B8_TAP4_ASM(1, 2)
        Q8_B8_TAP4_ASM(2, 4)
        Q8_B8_TAP4_ASM(3, 6)
        Q8_B8_TAP4_ASM(4, 8)
        Q8_B8_TAP4_ASM(5, 10)
        Q8_B8_TAP4_ASM(6, 12)
        Q8_B8_TAP4_ASM(7, 14)
        "2:\n\t"
        Q8_B8_TAP4_ASM(8, 16)
        Q8_B8_TAP4_ASM(9, 18)
        Q8_B8_TAP4_ASM(10, 20)
        Q8_B8_TAP4_ASM(11, 22)
        Q8_B8_TAP4_ASM(12, 24)
        Q8_B8_TAP4_ASM(13, 26)
        Q8_B8_TAP4_ASM(14, 28)
        Q8_B8_TAP4_ASM(15, 30)
        "adds %[w], #16\n\t"
        "adds %[c0], #32\n\t"
        "adds %[c1], #32\n\t"
        "adds %[c2], #32\n\t"
        "adds %[c3], #32\n\t"
        "cmp %[w], %[end]\n\t"
        "beq 3f\n\t"
        "b 1b\n"
        "3:\n"
        : [w] "+l"(w), [c0] "+l"(c0), [c1] "+l"(c1), [c2] "+l"(c2), [c3] "+l"(c3),
          [a0] "+h"(a0), [a1] "+h"(a1), [a2] "+h"(a2), [a3] "+h"(a3), [u] "=&l"(u),
          [x] "=&l"(x)
        : [end] "h"(end)
        : "cc", "memory");
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}
#else
Q8_UNUSED static void q8_dot_b8_1x4(const uint8_t *w, const int16_t *const cols[4],
                                 int32_t blocks, uint32_t acc[4])
{
    const int32_t k_padded = blocks * 8;
    int32_t k, i;
    for (i = 0; i < 4; i++) {
        uint32_t a = acc[i];
        for (k = 0; k < k_padded; k++) {
            a += (uint32_t)w[k] * (uint16_t)cols[i][k];
        }
        acc[i] = a;
    }
}
#endif

/* Two rows (k_padded apart) by two columns, for Thumb-2 cores (M3), whose registers
 * hold the four accumulators and whose MLA multiplies and adds in one instruction. */
Q8_UNUSED static void q8_dot_b8_2x2(const uint8_t *w0, int32_t k_padded, const int16_t *c0,
                       const int16_t *c1, int32_t blocks, uint32_t acc[4])
{
    const uint8_t *w1 = w0 + k_padded;
    uint32_t a00 = acc[0], a01 = acc[1], a10 = acc[2], a11 = acc[3];
#define Q8_B8_TAP2(J)                                                                          \
    do {                                                                                       \
        const uint32_t u0 = w0[J], u1 = w1[J];                                                 \
        const uint32_t x0 = (uint16_t)c0[J], x1 = (uint16_t)c1[J];                             \
        a00 += u0 * x0;                                                                        \
        a01 += u0 * x1;                                                                        \
        a10 += u1 * x0;                                                                        \
        a11 += u1 * x1;                                                                        \
    } while (0)
    for (; blocks > 0; blocks--) {
        Q8_B8_TAP2(0);
        Q8_B8_TAP2(1);
        Q8_B8_TAP2(2);
        Q8_B8_TAP2(3);
        Q8_B8_TAP2(4);
        Q8_B8_TAP2(5);
        Q8_B8_TAP2(6);
        Q8_B8_TAP2(7);
        w0 += 8;
        w1 += 8;
        c0 += 8;
        c1 += 8;
    }
#undef Q8_B8_TAP2
    acc[0] = a00;
    acc[1] = a01;
    acc[2] = a10;
    acc[3] = a11;
}

/* Rows in pairs where the core has the registers for it (not Thumb-1). */
#if defined(__ARM_ARCH_ISA_THUMB) && __ARM_ARCH_ISA_THUMB == 1
#define Q8_B8_ROW_PAIRS 0
#else
#define Q8_B8_ROW_PAIRS 1
#endif

/* Output pixel (oh, ow)'s column and the sum of its taps, in one pass over them
 * (fill_mode 2: int8 stored as x + 128; 0: uint8); then (oh, ow) one pixel on along the
 * rows (the kernels fill every pixel once, in order: no division per pixel, which Thumb-1
 * makes a library call). */
Q8_INLINE uint32_t q8_fill_sum(const q8_conv_im2col_b8_params *p, const uint8_t *x_n,
                               int32_t *oh, int32_t *ow, int16_t *col, int fill_mode)
{
    const uint32_t sum = fill_mode == 2
        ? q8_fill_sum_s8_offset(&p->input, &p->window, p->pad_value, x_n, *oh, *ow, col)
        : q8_fill_sum_u8(&p->input, &p->window, p->pad_value, x_n, *oh, *ow, col);
    if (++*ow == p->output.w) {
        *ow = 0;
        ++*oh;
    }
    return sum;
}

/* Four pixels per pass (columns == 4, Thumb-1 cores): their columns filled and summed,
 * then every output channel's row against all four, with the channel's requantization
 * prepared once per pass. A last pass of three repeats the first column as the fourth
 * (its output is not stored); one of one or two pixels takes the 1 x 2 loop. */
Q8_INLINE void q8_conv_b8_quads(const q8_conv_im2col_b8_params *p, const uint8_t *x,
                             uint8_t *y, int16_t *Q8_RESTRICT scratch,
                             int fill_mode, int mode)
{
    const int32_t M = p->output.c, OW = p->output.w, k_padded = p->k_padded;
    const int32_t pixels = p->output.h * OW, blocks = k_padded / 8;
    const size_t in_image = (size_t)p->input.c * (size_t)(p->input.h * p->input.w);
    const uint8_t *const weights = p->weights;
    const int32_t *const bias = p->bias;
    const float *const scale = p->requant.scale;
    const int32_t *const mult = p->requant.mult, *const exp = p->requant.exp;
    const int32_t ch_step = p->requant.per_channel ? 1 : 0;
    const q8_row_requant layer = q8_layer_constants(&p->requant);
    int32_t n, px, m, i;
    q8_zero_tails_of(scratch, 4, p->input.c * p->window.kernel_h * p->window.kernel_w, k_padded);
    for (n = 0; n < p->input.n; n++) {
        const uint8_t *x_n = x + (size_t)n * in_image;
        uint8_t *y_n = y + (size_t)n * (size_t)M * (size_t)pixels;
        int32_t oh = 0, ow = 0;
        for (px = 0; px < pixels; px += 4) {
            const int32_t count = pixels - px < 4 ? pixels - px : 4;
            const int16_t *cols[4];
            uint32_t sums[4];
            uint8_t *out = y_n + (size_t)px;
            for (i = 0; i < 4; i++) {
                int16_t *col = scratch + (size_t)(i < count ? i : 0) * (size_t)k_padded;
                if (i < count) {
                    sums[i] = q8_fill_sum(p, x_n, &oh, &ow, col, fill_mode) << 7;
                } else {
                    sums[i] = sums[0];
                }
                cols[i] = col;
            }
            for (m = 0; m < M; m++) {
                const q8_row_requant r = q8_channel_constants(layer, scale, mult, exp, m * ch_step,
                                                        mode);
                const uint32_t b = (uint32_t)bias[m];
                uint32_t acc[4];
                acc[0] = b - sums[0];
                acc[1] = b - sums[1];
                if (count <= 2) {
                    q8_dot_b8_1x2(weights + (size_t)m * (size_t)k_padded, cols[0], cols[1],
                               blocks, acc);
                } else {
                    acc[2] = b - sums[2];
                    acc[3] = b - sums[3];
                    q8_dot_b8_1x4(weights + (size_t)m * (size_t)k_padded, cols, blocks, acc);
                }
                for (i = 0; i < count; i++) {
                    out[i] = q8_requantize(&r, (int32_t)acc[i], mode);
                }
                out += pixels;
            }
        }
    }
}

Q8_INLINE void q8_conv_im2col_b8(const q8_conv_im2col_b8_params *p, const uint8_t *x,
                              uint8_t *y, int16_t *Q8_RESTRICT scratch,
                              int is_signed, int mode)
{
    const int32_t M = p->output.c, OW = p->output.w, k_padded = p->k_padded;
    const int32_t pixels = p->output.h * OW, blocks = k_padded / 8;
    const size_t in_image = (size_t)p->input.c * (size_t)(p->input.h * p->input.w);
    const uint8_t *const weights = p->weights;
    const int32_t *const bias = p->bias;
    const float *const scale = p->requant.scale;
    const int32_t *const mult = p->requant.mult, *const exp = p->requant.exp;
    const int32_t ch_step = p->requant.per_channel ? 1 : 0;
    const q8_row_requant layer = q8_layer_constants(&p->requant);
    const int fill_mode = is_signed ? 2 : 0;
    int16_t *col0 = scratch, *col1 = scratch + k_padded;
    int32_t n, px, m;
    if (p->columns == 4) {
        q8_conv_b8_quads(p, x, y, scratch, fill_mode, mode);
        return;
    }
    q8_zero_column_tails(scratch, p->input.c * p->window.kernel_h * p->window.kernel_w, k_padded);
    for (n = 0; n < p->input.n; n++) {
        const uint8_t *x_n = x + (size_t)n * in_image;
        uint8_t *y_n = y + (size_t)n * (size_t)M * (size_t)pixels;
        int32_t oh = 0, ow = 0;
        for (px = 0; px < pixels; px += 2) {
            const int two = px + 1 < pixels;
            const int16_t *c1 = two ? col1 : col0;
            uint8_t *y0 = y_n + (size_t)px;
            uint32_t s0, s1;
            s0 = q8_fill_sum(p, x_n, &oh, &ow, col0, fill_mode) << 7;
            s1 = two ? q8_fill_sum(p, x_n, &oh, &ow, col1, fill_mode) << 7 : s0;
            for (m = 0; Q8_B8_ROW_PAIRS && m + 1 < M; m += 2) {
                const q8_row_requant r0 = q8_channel_constants(layer, scale, mult, exp, m * ch_step,
                                                         mode);
                const q8_row_requant r1 = q8_channel_constants(layer, scale, mult, exp,
                                                         (m + 1) * ch_step, mode);
                uint32_t acc[4];
                acc[0] = (uint32_t)bias[m] - s0;
                acc[1] = (uint32_t)bias[m] - s1;
                acc[2] = (uint32_t)bias[m + 1] - s0;
                acc[3] = (uint32_t)bias[m + 1] - s1;
                q8_dot_b8_2x2(weights + (size_t)m * (size_t)k_padded, k_padded, col0, c1, blocks,
                           acc);
                y0[0] = q8_requantize(&r0, (int32_t)acc[0], mode);
                y0[pixels] = q8_requantize(&r1, (int32_t)acc[2], mode);
                if (two) {
                    y0[1] = q8_requantize(&r0, (int32_t)acc[1], mode);
                    y0[pixels + 1] = q8_requantize(&r1, (int32_t)acc[3], mode);
                }
                y0 += 2 * pixels;
            }
            for (; m < M; m++) {
                const q8_row_requant r = q8_channel_constants(layer, scale, mult, exp, m * ch_step,
                                                        mode);
                uint32_t acc[2];
                acc[0] = (uint32_t)bias[m] - s0;
                acc[1] = (uint32_t)bias[m] - s1;
                q8_dot_b8_1x2(weights + (size_t)m * (size_t)k_padded, col0, c1, blocks, acc);
                y0[0] = q8_requantize(&r, (int32_t)acc[0], mode);
                if (two) {
                    y0[1] = q8_requantize(&r, (int32_t)acc[1], mode);
                }
                y0 += pixels;
            }
        }
    }
}

#endif /* Q8_IM2COL_B8_H */
