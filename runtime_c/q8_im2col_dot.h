/*
 * q8_im2col_dot.h - the products of the im2col convolutions (q8_im2col.h): 2x2 blocks of
 * weight rows by columns for int8 weights and int16 row pairs, the fused assembly row
 * loop of cores with VCVTR, and the row loop every int8 and int16 variant shares.
 */
#ifndef Q8_IM2COL_DOT_H
#define Q8_IM2COL_DOT_H

#include <string.h>

#include "q8_arith.h"
#include "q8_dsp.h"
#include "q8_requant_row.h"
#include "q8_runtime.h"
#include "q8_window.h"
#include "q8_im2col_fill.h"

#if Q8_HAS_DSP
/* acc[r][j] += weight row r . column j for a pair of rows, interleaved per group of four
 * taps (one pointer), and columns c0 and c1: 16 multiply-accumulates per group in 8
 * q8_smlad, each widened weight pair used for both columns. */
#if Q8_ASM
/* The loop scheduled by hand: GCC 12 spills its counter and splits the loads (28
 * instructions per pass); here 20, about 21 cycles per 16 MACs on Cortex-M4 (the
 * pointer post-increments ride on the loads, which run in two pipelined runs of four and
 * two words, lr holding each widened weight pair), unrolled twice so that the counter and the
 * branch cost half as much: an odd count enters at the second copy. The C loop below is
 * the same computation. */
#define Q8_DOT_2X2_GROUP                                                                   \
    "ldr %[x0], [%[c0]], #4\n\t"                                                           \
    "ldr %[x1], [%[c1]], #4\n\t"                                                           \
    "ldr %[wa], [%[w]], #4\n\t"                                                            \
    "ldr %[wb], [%[w]], #4\n\t"                                                            \
    "sxtb16 lr, %[wa]\n\t"                                                                 \
    "smlad %[a00], lr, %[x0], %[a00]\n\t"                                                  \
    "smlad %[a01], lr, %[x1], %[a01]\n\t"                                                  \
    "sxtb16 lr, %[wb]\n\t"                                                                 \
    "smlad %[a10], lr, %[x0], %[a10]\n\t"                                                  \
    "smlad %[a11], lr, %[x1], %[a11]\n\t"                                                  \
    "ldr %[x0], [%[c0]], #4\n\t"                                                           \
    "ldr %[x1], [%[c1]], #4\n\t"                                                           \
    "sxtb16 lr, %[wa], ror #8\n\t"                                                         \
    "smlad %[a00], lr, %[x0], %[a00]\n\t"                                                  \
    "smlad %[a01], lr, %[x1], %[a01]\n\t"                                                  \
    "sxtb16 lr, %[wb], ror #8\n\t"                                                         \
    "smlad %[a10], lr, %[x0], %[a10]\n\t"                                                  \
    "smlad %[a11], lr, %[x1], %[a11]\n\t"

Q8_INLINE void q8_dot_2x2(const int8_t *w, const int16_t *c0, const int16_t *c1,
                       int32_t groups, int32_t acc[4])
{
    int32_t a00 = acc[0], a01 = acc[1], a10 = acc[2], a11 = acc[3];
    uint32_t wa, wb, x0, x1;
    __asm__ volatile(
        "lsrs %[n], %[n], #1\n\t"
        "bcc 1f\n\t"
        "adds %[n], %[n], #1\n\t"
        "b 2f\n"
        ".p2align 2\n"
        "1:\n\t"
        Q8_DOT_2X2_GROUP
        "2:\n\t"
        Q8_DOT_2X2_GROUP
        "subs %[n], %[n], #1\n\t"
        "bne 1b\n"
        : [w] "+r"(w), [c0] "+r"(c0), [c1] "+r"(c1), [n] "+r"(groups), [a00] "+r"(a00),
          [a01] "+r"(a01), [a10] "+r"(a10), [a11] "+r"(a11), [wa] "=&r"(wa), [wb] "=&r"(wb),
          [x0] "=&r"(x0), [x1] "=&r"(x1)
        :
        : "lr", "cc", "memory");
    acc[0] = a00;
    acc[1] = a01;
    acc[2] = a10;
    acc[3] = a11;
}
#else
Q8_UNUSED static void q8_dot_2x2(const int8_t *w, const int16_t *c0, const int16_t *c1,
                              int32_t groups, int32_t acc[4])
{
    const uint32_t *wp = (const uint32_t *)(const void *)w;
    int32_t a00 = acc[0], a01 = acc[1], a10 = acc[2], a11 = acc[3];
    do {
        const uint32_t wa = wp[0], wb = wp[1];
        const uint32_t x0_01 = q8_load32(c0), x1_01 = q8_load32(c1);
        uint32_t t = q8_sxtb16(wa);
        a00 = q8_smlad(t, x0_01, a00);
        a01 = q8_smlad(t, x1_01, a01);
        t = q8_sxtb16(wb);
        a10 = q8_smlad(t, x0_01, a10);
        a11 = q8_smlad(t, x1_01, a11);
        {
            const uint32_t x0_23 = q8_load32(c0 + 2), x1_23 = q8_load32(c1 + 2);
            t = q8_sxtb16_ror8(wa);
            a00 = q8_smlad(t, x0_23, a00);
            a01 = q8_smlad(t, x1_23, a01);
            t = q8_sxtb16_ror8(wb);
            a10 = q8_smlad(t, x0_23, a10);
            a11 = q8_smlad(t, x1_23, a11);
        }
        wp += 2;
        c0 += 4;
        c1 += 4;
    } while (--groups);
    acc[0] = a00;
    acc[1] = a01;
    acc[2] = a10;
    acc[3] = a11;
}
#endif
#else
/*
 * Cores without the DSP extension: one 32-bit multiply-accumulate per tap, four taps per
 * step with the weights in their stored order (w0, w2, w1, w3), modulo 2^32.
 */
Q8_INLINE uint32_t q8_dot_group(const int8_t *w, const int16_t *c)
{
    return (uint32_t)(c[0] * w[0]) + (uint32_t)(c[1] * w[2]) + (uint32_t)(c[2] * w[1]) +
           (uint32_t)(c[3] * w[3]);
}

Q8_UNUSED static void q8_dot_2x2(const int8_t *w, const int16_t *c0, const int16_t *c1,
                              int32_t groups, int32_t acc[4])
{
    uint32_t a00 = (uint32_t)acc[0], a01 = (uint32_t)acc[1];
    uint32_t a10 = (uint32_t)acc[2], a11 = (uint32_t)acc[3];
    do {
        a00 += q8_dot_group(w, c0);
        a01 += q8_dot_group(w, c1);
        a10 += q8_dot_group(w + 4, c0);
        a11 += q8_dot_group(w + 4, c1);
        w += 8;
        c0 += 4;
        c1 += 4;
    } while (--groups);
    acc[0] = (int32_t)a00;
    acc[1] = (int32_t)a01;
    acc[2] = (int32_t)a10;
    acc[3] = (int32_t)a11;
}
#endif

/*
 * The wide-weight variant (q8_conv_*_im2col_w16_*): weights stored as int16, two rows
 * interleaved per pair of taps ([row m: k, k+1][row m+1: k, k+1] ...), so one 64-bit load
 * gives both rows' operands for two taps and no widening is left in the inner loop:
 * 8 taps x 2 rows x 2 columns = 32 multiply-accumulates in 16 q8_smlad and 6 loads.
 * It costs twice the weight bytes of the int8 layout; the generator picks it when the
 * board's flash has room (--weights).
 */
#if Q8_HAS_DSP
#define Q8_W16_STEP(W, X, Y)                                                                   \
    do {                                                                                       \
        a00 = q8_smlad((uint32_t)(W), (X), a00);                                               \
        a01 = q8_smlad((uint32_t)(W), (Y), a01);                                               \
        a10 = q8_smlad((uint32_t)((W) >> 32), (X), a10);                                       \
        a11 = q8_smlad((uint32_t)((W) >> 32), (Y), a11);                                       \
    } while (0)

#if Q8_ASM
/* The loop by hand: per two taps, four word loads in one pipelined run (5 cycles on
 * Cortex-M4) and four SMLAD, 36 instructions and about 39 cycles per 32 MACs (GCC 12
 * splits the 64-bit loads and breaks the runs: about 46). The C loop below is the same
 * computation. */
#define Q8_DOT_W16_STEP                                                                    \
    "ldr %[x0], [%[c0]], #4\n\t"                                                           \
    "ldr %[x1], [%[c1]], #4\n\t"                                                           \
    "ldr %[wa], [%[w]], #4\n\t"                                                            \
    "ldr %[wb], [%[w]], #4\n\t"                                                            \
    "smlad %[a00], %[wa], %[x0], %[a00]\n\t"                                               \
    "smlad %[a01], %[wa], %[x1], %[a01]\n\t"                                               \
    "smlad %[a10], %[wb], %[x0], %[a10]\n\t"                                               \
    "smlad %[a11], %[wb], %[x1], %[a11]\n\t"

Q8_INLINE void q8_dot_w16_2x2(const int16_t *w, const int16_t *c0, const int16_t *c1,
                           int32_t blocks, int32_t acc[4])
{
    int32_t a00 = acc[0], a01 = acc[1], a10 = acc[2], a11 = acc[3];
    uint32_t x0, x1, wa, wb;
    __asm__ volatile(
        ".p2align 2\n"
        "1:\n\t"
        Q8_DOT_W16_STEP
        Q8_DOT_W16_STEP
        Q8_DOT_W16_STEP
        Q8_DOT_W16_STEP
        "subs %[n], %[n], #1\n\t"
        "bne 1b\n"
        : [w] "+r"(w), [c0] "+r"(c0), [c1] "+r"(c1), [n] "+r"(blocks), [a00] "+r"(a00),
          [a01] "+r"(a01), [a10] "+r"(a10), [a11] "+r"(a11), [x0] "=&r"(x0), [x1] "=&r"(x1),
          [wa] "=&r"(wa), [wb] "=&r"(wb)
        :
        : "cc", "memory");
    acc[0] = a00;
    acc[1] = a01;
    acc[2] = a10;
    acc[3] = a11;
}
#else
/* acc[2r + j] += row r . column j over blocks * 8 taps; all pointers 8-byte aligned. */
Q8_INLINE void q8_dot_w16_2x2(const int16_t *w, const int16_t *c0, const int16_t *c1,
                           int32_t blocks, int32_t acc[4])
{
    int32_t a00 = acc[0], a01 = acc[1], a10 = acc[2], a11 = acc[3];
    const uint64_t *wp = (const uint64_t *)(const void *)w;
    const uint64_t *p0 = (const uint64_t *)(const void *)c0;
    const uint64_t *p1 = (const uint64_t *)(const void *)c1;
    do {
        uint64_t x = p0[0], y = p1[0], wv;
        wv = wp[0];
        Q8_W16_STEP(wv, (uint32_t)x, (uint32_t)y);
        wv = wp[1];
        Q8_W16_STEP(wv, (uint32_t)(x >> 32), (uint32_t)(y >> 32));
        x = p0[1];
        y = p1[1];
        wv = wp[2];
        Q8_W16_STEP(wv, (uint32_t)x, (uint32_t)y);
        wv = wp[3];
        Q8_W16_STEP(wv, (uint32_t)(x >> 32), (uint32_t)(y >> 32));
        wp += 4;
        p0 += 2;
        p1 += 2;
    } while (--blocks);
    acc[0] = a00;
    acc[1] = a01;
    acc[2] = a10;
    acc[3] = a11;
}
#endif
#else
/* Plain 32-bit multiply-accumulates over the same layout, modulo 2^32. */
Q8_UNUSED static void q8_dot_w16_2x2(const int16_t *w, const int16_t *c0, const int16_t *c1,
                        int32_t blocks, int32_t acc[4])
{
    uint32_t a00 = (uint32_t)acc[0], a01 = (uint32_t)acc[1];
    uint32_t a10 = (uint32_t)acc[2], a11 = (uint32_t)acc[3];
    int32_t i;
    for (i = blocks * 4; i > 0; i--) {
        const int32_t x0 = c0[0], x1 = c0[1], y0 = c1[0], y1 = c1[1];
        a00 += (uint32_t)(w[0] * x0 + w[1] * x1);
        a01 += (uint32_t)(w[0] * y0 + w[1] * y1);
        a10 += (uint32_t)(w[2] * x0 + w[3] * x1);
        a11 += (uint32_t)(w[2] * y0 + w[3] * y1);
        w += 4;
        c0 += 2;
        c1 += 2;
    }
    acc[0] = (int32_t)a00;
    acc[1] = (int32_t)a01;
    acc[2] = (int32_t)a10;
    acc[3] = (int32_t)a11;
}
#endif

/* The weight layouts of the 2x2 blocks: int8 (q8_dot_2x2), int16 in row pairs
 * (q8_dot_w16_2x2). */
enum { DOT_I8, DOT_W16_PAIRS };

/* One 2x2 block: a pair of weight rows (at w) against columns c0 and c1; count is the
 * layout's loop count (groups of 4 taps for int8, of 8 for int16). */
Q8_INLINE void q8_dot_block(int kind, const uint8_t *w, const int16_t *c0, const int16_t *c1,
                         int32_t count, int32_t acc[4])
{
    if (kind == DOT_I8) {
        q8_dot_2x2((const int8_t *)(const void *)w, c0, c1, count, acc);
    } else {
        q8_dot_w16_2x2((const int16_t *)(const void *)w, c0, c1, count, acc);
    }
}

/*
 * The row loop of the common case (both pixels, rows in full pairs, a saturating float
 * mode) in one piece of assembly, on cores with VCVTR: each block's dot loop, then its
 * four requantizations (two VMOV pairs into the FPU, VCVT, VMUL, VCVTR, back) and byte
 * stores, then the next pair of rows. The dot loop takes every register, so what the
 * block loop keeps (bias and scale pointers, the output pointer, the columns, counts) is
 * read from a small struct on the stack; the weight pointer runs on from one row pair to
 * the next. About 70 cycles a block on Cortex-M4 besides the dot loop, against about 95
 * for the C loop (GCC spills more and reloads the constants of both channels). The C
 * loop in q8_conv_rows is the same computation.
 */
#if Q8_HAS_DSP && Q8_ASM && Q8_HAS_VCVTR
#define Q8_FUSED_ROWS 1

typedef struct {
    const int16_t *c0, *c1;
    int32_t count; /* the dot loop's count */
    const int32_t *bias;
    const float *scale;
    uint8_t *y;
    int32_t row_step;
    int32_t zero_point;
    int32_t pairs; /* row pairs left */
} q8_fused_rows_state;

#define Q8_I8_DOT_LOOP                                                                     \
    "lsrs %[n], %[n], #1\n\t"                                                              \
    "bcc 2f\n\t"                                                                           \
    "adds %[n], %[n], #1\n\t"                                                              \
    "b 3f\n"                                                                               \
    ".p2align 2\n"                                                                         \
    "2:\n\t"                                                                               \
    Q8_DOT_2X2_GROUP                                                                       \
    "3:\n\t"                                                                               \
    Q8_DOT_2X2_GROUP                                                                       \
    "subs %[n], %[n], #1\n\t"                                                              \
    "bne 2b\n\t"

#define Q8_W16_DOT_LOOP                                                                    \
    ".p2align 2\n"                                                                         \
    "2:\n\t"                                                                               \
    Q8_DOT_W16_STEP                                                                        \
    Q8_DOT_W16_STEP                                                                        \
    Q8_DOT_W16_STEP                                                                        \
    Q8_DOT_W16_STEP                                                                        \
    "subs %[n], %[n], #1\n\t"                                                              \
    "bne 2b\n\t"

/* One output byte: plus the zero point (in x0), saturated, stored at ADDR. */
#define Q8_FUSED_STORE(SAT, A, ADDR)                                                       \
    "add " A ", " A ", %[x0]\n\t"                                                          \
    SAT " " A ", #8, " A "\n\t"                                                            \
    "strb " A ", " ADDR "\n\t"

#define Q8_FUSED_ROWS_ASM(DOT_LOOP, SCALES_ONCE, SCALES_PER_BLOCK, SAT)                    \
    __asm__ volatile(                                                                      \
        SCALES_ONCE                                                                        \
        "1:\n\t"                                                                           \
        "ldr %[c0], %[c0m]\n\t"                                                            \
        "ldr %[c1], %[c1m]\n\t"                                                            \
        "ldr %[n], %[biasm]\n\t"                                                           \
        "ldrd %[a00], %[a10], [%[n]], #8\n\t"                                              \
        "str %[n], %[biasm]\n\t"                                                           \
        "mov %[a01], %[a00]\n\t"                                                           \
        "mov %[a11], %[a10]\n\t"                                                           \
        "ldr %[n], %[countm]\n\t"                                                          \
        DOT_LOOP                                                                           \
        SCALES_PER_BLOCK                                                                   \
        "vmov s14, s15, %[a00], %[a01]\n\t"                                                \
        "vmov s10, s11, %[a10], %[a11]\n\t"                                                \
        "vcvt.f32.s32 s14, s14\n\t"                                                        \
        "vcvt.f32.s32 s15, s15\n\t"                                                        \
        "vcvt.f32.s32 s10, s10\n\t"                                                        \
        "vcvt.f32.s32 s11, s11\n\t"                                                        \
        "vmul.f32 s14, s14, s12\n\t"                                                       \
        "vmul.f32 s15, s15, s12\n\t"                                                       \
        "vmul.f32 s10, s10, s13\n\t"                                                       \
        "vmul.f32 s11, s11, s13\n\t"                                                       \
        "vcvtr.s32.f32 s14, s14\n\t"                                                       \
        "vcvtr.s32.f32 s15, s15\n\t"                                                       \
        "vcvtr.s32.f32 s10, s10\n\t"                                                       \
        "vcvtr.s32.f32 s11, s11\n\t"                                                       \
        "vmov %[a00], %[a01], s14, s15\n\t"                                                \
        "vmov %[a10], %[a11], s10, s11\n\t"                                                \
        "ldr %[x0], %[zpm]\n\t"                                                            \
        "ldr %[x1], %[ym]\n\t"                                                             \
        "ldr %[wb], %[rowm]\n\t"                                                           \
        Q8_FUSED_STORE(SAT, "%[a00]", "[%[x1]]")                                           \
        Q8_FUSED_STORE(SAT, "%[a01]", "[%[x1], #1]")                                       \
        "add %[x1], %[x1], %[wb]\n\t"                                                      \
        Q8_FUSED_STORE(SAT, "%[a10]", "[%[x1]]")                                           \
        Q8_FUSED_STORE(SAT, "%[a11]", "[%[x1], #1]")                                       \
        "add %[x1], %[x1], %[wb]\n\t"                                                      \
        "str %[x1], %[ym]\n\t"                                                             \
        "ldr %[n], %[pairsm]\n\t"                                                          \
        "subs %[n], %[n], #1\n\t"                                                          \
        "str %[n], %[pairsm]\n\t"                                                          \
        "bne 1b\n"                                                                         \
        : [w] "+r"(w), [c0] "=&r"(c0), [c1] "=&r"(c1), [n] "=&r"(n), [a00] "=&r"(a00),   \
          [a01] "=&r"(a01), [a10] "=&r"(a10), [a11] "=&r"(a11), [wa] "=&r"(wa),           \
          [wb] "=&r"(wb), [x0] "=&r"(x0), [x1] "=&r"(x1), [biasm] "+m"(st.bias),           \
          [scalem] "+m"(st.scale), [ym] "+m"(st.y), [pairsm] "+m"(st.pairs)                \
        : [c0m] "m"(st.c0), [c1m] "m"(st.c1), [countm] "m"(st.count),                      \
          [zpm] "m"(st.zero_point), [rowm] "m"(st.row_step)                                \
        : "lr", "s10", "s11", "s12", "s13", "s14", "s15", "cc", "memory")

/* Per-channel scales: two a block; one scale: loaded once. */
#define Q8_SCALES_PER_CHANNEL                                                              \
    "ldr %[wa], %[scalem]\n\t"                                                             \
    "vldmia %[wa]!, {s12, s13}\n\t"                                                        \
    "str %[wa], %[scalem]\n\t"
#define Q8_SCALE_ONCE                                                                      \
    "ldr %[wa], %[scalem]\n\t"                                                             \
    "vldr s12, [%[wa]]\n\t"                                                                \
    "vmov.f32 s13, s12\n\t"

#define Q8_FUSED_ROWS_SAT(DOT_LOOP, SAT)                                                   \
    do {                                                                                   \
        if (per_channel) {                                                                 \
            Q8_FUSED_ROWS_ASM(DOT_LOOP, "", Q8_SCALES_PER_CHANNEL, SAT);                   \
        } else {                                                                           \
            Q8_FUSED_ROWS_ASM(DOT_LOOP, Q8_SCALE_ONCE, "", SAT);                           \
        }                                                                                  \
    } while (0)

/* All M / 2 row pairs on columns c0 and c1 (both pixels), in a saturating mode; kind is
 * DOT_I8 or DOT_W16_PAIRS. */
Q8_INLINE void q8_fused_rows(int kind, const uint8_t *weights, const int16_t *col0,
                          const int16_t *col1, uint8_t *y0, int32_t pixels, int32_t count,
                          const int32_t *bias, const float *scale, int per_channel,
                          int32_t zero_point, int32_t pairs, int mode)
{
    q8_fused_rows_state st;
    const uint8_t *w = weights;
    const int16_t *c0, *c1;
    int32_t n, a00, a01, a10, a11;
    uint32_t wa, wb, x0, x1;
    st.c0 = col0;
    st.c1 = col1;
    st.count = count;
    st.bias = bias;
    st.scale = scale;
    st.y = y0;
    st.row_step = pixels;
    st.zero_point = zero_point;
    st.pairs = pairs;
    if (kind == DOT_I8) {
        if (mode == Q8_RQ_FREQ_BOUNDED_S8) {
            Q8_FUSED_ROWS_SAT(Q8_I8_DOT_LOOP, "ssat");
        } else {
            Q8_FUSED_ROWS_SAT(Q8_I8_DOT_LOOP, "usat");
        }
    } else {
        if (mode == Q8_RQ_FREQ_BOUNDED_S8) {
            Q8_FUSED_ROWS_SAT(Q8_W16_DOT_LOOP, "ssat");
        } else {
            Q8_FUSED_ROWS_SAT(Q8_W16_DOT_LOOP, "usat");
        }
    }
    (void)w;
    (void)c0;
    (void)c1;
    (void)n;
    (void)a00;
    (void)a01;
    (void)a10;
    (void)a11;
    (void)wa;
    (void)wb;
    (void)x0;
    (void)x1;
}
#else
#define Q8_FUSED_ROWS 0
#endif

/* The weights of a kernel as the shared row loop reads them. */
typedef struct {
    const uint8_t *weights; /* row pairs, pair_bytes apart */
    size_t pair_bytes;
    int32_t count; /* q8_dot_block's loop count */
    int32_t channels;
    const int32_t *bias;
    const q8_requant_params *requant;
} q8_conv_rows_job;

/*
 * Every output channel, in pairs, on columns col0 and c1 (c1 == col0 and two == 0 for a
 * lone pixel), requantized and stored at y0 + m * pixels. Inlined with kind, two and
 * mode constants. An odd last row is the generator's zero row, a lone last pixel taken
 * twice: their results are not stored.
 */
Q8_INLINE void q8_conv_rows(const q8_conv_rows_job *job, const q8_row_requant *layer,
                         const int16_t *col0, const int16_t *c1, uint8_t *y0, int32_t pixels,
                         int two, int mode, int kind)
{
    /* Loop invariants in locals: the byte stores below may alias the parameters. */
    const int32_t M = job->channels, count = job->count;
    const uint8_t *const weights = job->weights;
    const size_t pair_bytes = job->pair_bytes;
    const int32_t *const bias = job->bias;
    const float *const scale = job->requant->scale;
    const int32_t *const mult = job->requant->mult, *const exp = job->requant->exp;
    const int32_t ch_step = job->requant->per_channel ? 1 : 0;
    int32_t m;
#if Q8_HAS_DSP
    /* The common case without its tests: both pixels, rows in full pairs (on DSP cores,
     * where it saves about 20 cycles a block; elsewhere the copy would only double the
     * code the compiler has to build). */
    if (two && !(M & 1)) {
        const uint8_t *w = weights;
#if Q8_FUSED_ROWS
        if (mode == Q8_RQ_FREQ_BOUNDED_S8 || mode == Q8_RQ_FREQ_BOUNDED_U8) {
            q8_fused_rows(kind, weights, col0, c1, y0, pixels, count, bias, scale, ch_step,
                       layer->zero_point, M / 2, mode);
            return;
        }
#endif
        const int32_t *b = bias;
        const size_t row_step = (size_t)pixels;
        for (m = 0; m < M; m += 2) {
            const q8_row_requant r0 = q8_channel_constants(*layer, scale, mult, exp, m * ch_step,
                                                     mode);
            const q8_row_requant r1 = q8_channel_constants(*layer, scale, mult, exp,
                                                     (m + 1) * ch_step, mode);
            int32_t acc[4];
            acc[0] = acc[1] = b[0];
            acc[2] = acc[3] = b[1];
            q8_dot_block(kind, w, col0, c1, count, acc);
            q8_requantize_pair(&r0, acc[0], acc[1], &y0[0], &y0[1], mode);
            q8_requantize_pair(&r1, acc[2], acc[3], &y0[row_step], &y0[row_step + 1], mode);
            y0 += 2u * row_step;
            w += pair_bytes;
            b += 2;
        }
        return;
    }
#endif
    for (m = 0; m < M; m += 2) {
        const q8_row_requant r0 = q8_channel_constants(*layer, scale, mult, exp, m * ch_step, mode);
        int32_t acc[4];
        acc[0] = acc[1] = bias[m];
        acc[2] = acc[3] = bias[m + 1];
        q8_dot_block(kind, weights + (size_t)(m / 2) * pair_bytes, col0, c1, count, acc);
        if (two) {
            q8_requantize_pair(&r0, acc[0], acc[1], &y0[0], &y0[1], mode);
        } else {
            y0[0] = q8_requantize(&r0, acc[0], mode);
        }
        y0 += pixels;
        if (m + 1 < M) {
            const q8_row_requant r1 = q8_channel_constants(*layer, scale, mult, exp,
                                                     (m + 1) * ch_step, mode);
            if (two) {
                q8_requantize_pair(&r1, acc[2], acc[3], &y0[0], &y0[1], mode);
            } else {
                y0[0] = q8_requantize(&r1, acc[2], mode);
            }
            y0 += pixels;
        }
    }
}

#endif /* Q8_IM2COL_DOT_H */
