/*
 * q8_im2col_mve.h - the im2col convolution for cores with Helium (MVE: Cortex-M55, M85),
 * exported one function per file (conv_s8_im2col_mve_freq.c holds
 * q8_conv_s8_im2col_mve_freq). QLinearConv, group 1, weight zero point 0.
 *
 * Both operands stay bytes: each output pixel's window is gathered into a column of int8
 * (the input itself for int8, x - 128 = x ^ 0x80 for uint8; the pad value outside), and
 * one VMLADAVA.S8 multiplies 16 weights by 16 taps and adds the 16 products to a scalar
 * accumulator. A block of 4 output channels x 2 pixels loads 4 weight vectors and 2 column
 * vectors per 16 taps for 8 VMLADAVA: 128 multiply-accumulates in 14 instructions, against
 * 16 in about 20 for the DSP extension's 2x2 block (q8_im2col_dot.h).
 *
 * Weights: rows of k = C * KH * KW taps in (c, kh, kw) order, zero-padded to k_padded (a
 * multiple of 16); rows in fours (the count padded with zero rows) interleaved per 16
 * taps: [M/4][k_padded/16][4][16], each block of four rows after a head of 48 bytes
 * (Q8_MVE_HEAD_BYTES): the block's four biases twice (int32, one per accumulator of the
 * 4 x 2 block) and its four float32 scales (the layer's one four times; 0 in --requant
 * int), which the fused row loop loads from the weight stream instead of from three
 * pointers of its own. bias[m] = B[m] - pad * sum(W[m]) (modulo 2^32) where
 * pad = x_zp for int8 input and x_zp - 128 for uint8 (the column's own zero), one per
 * padded row: sum (col - pad) * w + B, the same sum modulo 2^32 as the model's.
 * pad_value holds that pad. scratch: two columns of k_padded bytes.
 *
 * Without MVE (the host, or Q8_NO_MVE or Q8_NO_ASM) the same layout runs plain C loops: the reference
 * this file's tests hold the vector path to, bit for bit. Requantization as the other
 * fast kernels (q8_requant_row.h).
 */
#ifndef Q8_IM2COL_MVE_H
#define Q8_IM2COL_MVE_H

#include <string.h>

#include "q8_arith.h"
#include "q8_dsp.h"
#include "q8_requant_row.h"
#include "q8_runtime.h"
#include "q8_window.h"
#include "q8_im2col_mve_fill.h"

/* Each block's head in the weight stream: 8 biases and 4 scales. */
#define Q8_MVE_HEAD_BYTES 48


/* acc[4j + r] += weight row r (of the block's four) . column j, over blocks of 16 taps:
 * the first pixel's four sums, then the second's. */
#if Q8_HAS_MVE && Q8_ASM && !defined(__ARM_RWPI)
/* By hand: VMLADAVA's accumulator must be an even register, and eight of them are r0 .. r12
 * and lr; GCC 12 keeps six there and spills the rest (26 instructions a pass). Here 16:
 * six vector loads, eight VMLADAVA, the count and the branch. The weights, columns and count
 * sit in r1, r3, r5 and r9, the accumulators' address on the stack while r0 accumulates.
 * Rows 0..3 accumulate in r0, r4, r8, r12 (first pixel) and r2, r6, r10, lr (second). */
Q8_INLINE void q8_dot_mve_4x2(const int8_t *w, const int8_t *c0, const int8_t *c1,
                           int32_t blocks, int32_t acc[8])
{
    register int32_t *r_acc __asm__("r0") = acc;
    register const int8_t *r_w __asm__("r1") = w;
    register const int8_t *r_c0 __asm__("r3") = c0;
    register const int8_t *r_c1 __asm__("r5") = c1;
    register int32_t r_n __asm__("r9") = blocks;
    __asm__ volatile(
        "ldrd r4, r8, [r0, #4]\n\t"
        "ldrd r12, r2, [r0, #12]\n\t"
        "ldrd r6, r10, [r0, #20]\n\t"
        "ldr lr, [r0, #28]\n\t"
        "push {r0}\n\t"
        "ldr r0, [r0]\n"
        "1:\n\t"
        "vldrb.8 q0, [r3], #16\n\t"
        "vldrb.8 q1, [r5], #16\n\t"
        "vldrb.8 q2, [r1], #16\n\t"
        "vmladava.s8 r0, q2, q0\n\t"
        "vmladava.s8 r2, q2, q1\n\t"
        "vldrb.8 q3, [r1], #16\n\t"
        "vmladava.s8 r4, q3, q0\n\t"
        "vmladava.s8 r6, q3, q1\n\t"
        "vldrb.8 q2, [r1], #16\n\t"
        "vmladava.s8 r8, q2, q0\n\t"
        "vmladava.s8 r10, q2, q1\n\t"
        "vldrb.8 q3, [r1], #16\n\t"
        "vmladava.s8 r12, q3, q0\n\t"
        "vmladava.s8 lr, q3, q1\n\t"
        "subs r9, r9, #1\n\t"
        "bne 1b\n\t"
        "pop {r9}\n\t"
        "str r0, [r9]\n\t"
        "strd r4, r8, [r9, #4]\n\t"
        "strd r12, r2, [r9, #12]\n\t"
        "strd r6, r10, [r9, #20]\n\t"
        "str lr, [r9, #28]\n\t"
        : "+r"(r_acc), "+r"(r_w), "+r"(r_c0), "+r"(r_c1), "+r"(r_n)
        :
        : "r2", "r4", "r6", "r8", "r10", "r12", "lr", "s0", "s1", "s2", "s3", "s4", "s5",
          "s6", "s7", "s8", "s9", "s10", "s11", "s12", "s13", "s14", "s15", "cc", "memory");
}
#elif Q8_HAS_MVE
Q8_INLINE void q8_dot_mve_4x2(const int8_t *w, const int8_t *c0, const int8_t *c1,
                           int32_t blocks, int32_t acc[8])
{
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
    int32_t a4 = acc[4], a5 = acc[5], a6 = acc[6], a7 = acc[7];
    do {
        const int8x16_t x0 = vld1q_s8(c0), x1 = vld1q_s8(c1);
        const int8x16_t w0 = vld1q_s8(w), w1 = vld1q_s8(w + 16);
        const int8x16_t w2 = vld1q_s8(w + 32), w3 = vld1q_s8(w + 48);
        a0 = vmladavaq_s8(a0, w0, x0);
        a4 = vmladavaq_s8(a4, w0, x1);
        a1 = vmladavaq_s8(a1, w1, x0);
        a5 = vmladavaq_s8(a5, w1, x1);
        a2 = vmladavaq_s8(a2, w2, x0);
        a6 = vmladavaq_s8(a6, w2, x1);
        a3 = vmladavaq_s8(a3, w3, x0);
        a7 = vmladavaq_s8(a7, w3, x1);
        w += 64;
        c0 += 16;
        c1 += 16;
    } while (--blocks);
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
    acc[4] = a4;
    acc[5] = a5;
    acc[6] = a6;
    acc[7] = a7;
}
#else
Q8_UNUSED static void q8_dot_mve_4x2(const int8_t *w, const int8_t *c0, const int8_t *c1,
                                  int32_t blocks, int32_t acc[8])
{
    uint32_t a[8];
    int32_t i, r, t;
    for (i = 0; i < 8; i++) {
        a[i] = (uint32_t)acc[i];
    }
    do {
        for (r = 0; r < 4; r++) {
            for (t = 0; t < 16; t++) {
                a[r] += (uint32_t)(w[16 * r + t] * c0[t]);
                a[4 + r] += (uint32_t)(w[16 * r + t] * c1[t]);
            }
        }
        w += 64;
        c0 += 16;
        c1 += 16;
    } while (--blocks);
    for (i = 0; i < 8; i++) {
        acc[i] = (int32_t)a[i];
    }
}
#endif

#if Q8_HAS_MVE
/* The saturating float modes four rows at a time, as q8_requantize: (float)acc * scale
 * (VCVT, VMUL: the same float32 operations), rounded to nearest with ties to even
 * (VCVTN, as VCVTR in the default mode), plus the zero point, clamped to the type's range;
 * the bytes go out by a predicated scatter (rows past M are not stored). */
Q8_INLINE void q8_mve_requant_block(const int32_t acc[8], float32x4_t scale, int32_t zero_point,
                                 int32_t lo, int32_t hi, uint8_t *y0, uint32x4_t offsets,
                                 mve_pred16_t rows, int two)
{
    const int32x4_t low = vdupq_n_s32(lo), high = vdupq_n_s32(hi);
    int32x4_t v = vcvtnq_s32_f32(vmulq_f32(vcvtq_f32_s32(vld1q_s32(acc)), scale));
    v = vminq_s32(vmaxq_s32(vaddq_n_s32(v, zero_point), low), high);
    vstrbq_scatter_offset_p_s32((int8_t *)y0, offsets, v, rows);
    if (two) {
        v = vcvtnq_s32_f32(vmulq_f32(vcvtq_f32_s32(vld1q_s32(acc + 4)), scale));
        v = vminq_s32(vmaxq_s32(vaddq_n_s32(v, zero_point), low), high);
        vstrbq_scatter_offset_p_s32((int8_t *)y0 + 1, offsets, v, rows);
    }
}
#endif

#if Q8_HAS_MVE && Q8_ASM && !defined(__ARM_RWPI)
/*
 * The row loop of the common case (both pixels, full blocks of four rows, a saturating
 * float mode) in one piece of assembly: per block the bias into the eight accumulators,
 * the dot loop above, the eight sums into two vectors (through memory: no lane moves),
 * their requantization (VCVT, VMUL,
 * VCVTN, VADD, VMAX, VMIN) and two byte scatters, then the next block. The weights run on
 * from block to block in r1; y and the zero point stay in r11 and r7, the offsets of the four
 * rows' outputs, the scale (one, or the block's four) and the range in q4 .. q7; the rest
 * is read from a struct on the stack. About 40 instructions a block besides the dot loop,
 * against about 80 for the C loop around it.
 */
#define Q8_MVE_FUSED_ROWS 1

typedef struct {
    const int8_t *c0, *c1;
    int32_t count; /* dot loop passes */
    const int8_t *end; /* the weight stream after the last block */
    uint8_t *y;
    int32_t step; /* 4 * pixels */
    int32_t zero_point, lo, hi;
    const uint32_t *offsets;
    int32_t *sums; /* the block's eight sums on their way from r0 .. lr to q0, q1 */
} q8_mve_fused_state;

#define Q8_MVE_FUSED_ASM(DOT_BODY)                                                         \
    __asm__ volatile(                                                                      \
        "ldr r11, %[ym]\n\t"                                                               \
        "ldr r7, %[zpm]\n\t"                                                               \
        "ldr r3, %[offm]\n\t"                                                              \
        "vldrw.32 q4, [r3]\n\t"                                                            \
        "ldr r3, %[lom]\n\t"                                                               \
        "vdup.32 q6, r3\n\t"                                                               \
        "ldr r3, %[him]\n\t"                                                               \
        "vdup.32 q7, r3\n\t"                                                               \
        "1:\n\t"                                                                           \
        "ldrd r0, r4, [r1], #8\n\t"                                                        \
        "ldrd r8, r12, [r1], #8\n\t"                                                       \
        "ldrd r2, r6, [r1], #8\n\t"                                                        \
        "ldrd r10, lr, [r1], #8\n\t"                                                       \
        "vldrw.32 q5, [r1], #16\n\t"                                                       \
        "ldr r3, %[c0m]\n\t"                                                               \
        "ldr r5, %[c1m]\n\t"                                                               \
        "ldr r9, %[countm]\n"                                                              \
        "2:\n\t"                                                                           \
        DOT_BODY                                                                           \
        "subs r9, r9, #1\n\t"                                                              \
        "bne 2b\n\t"                                                                       \
        "ldr r3, %[sumsm]\n\t"                                                             \
        "strd r0, r4, [r3]\n\t"                                                            \
        "strd r8, r12, [r3, #8]\n\t"                                                       \
        "strd r2, r6, [r3, #16]\n\t"                                                       \
        "strd r10, lr, [r3, #24]\n\t"                                                      \
        "vldrw.32 q0, [r3]\n\t"                                                            \
        "vldrw.32 q1, [r3, #16]\n\t"                                                       \
        "vcvt.f32.s32 q0, q0\n\t"                                                          \
        "vcvt.f32.s32 q1, q1\n\t"                                                          \
        "vmul.f32 q0, q0, q5\n\t"                                                          \
        "vmul.f32 q1, q1, q5\n\t"                                                          \
        "vcvtn.s32.f32 q0, q0\n\t"                                                         \
        "vcvtn.s32.f32 q1, q1\n\t"                                                         \
        "vadd.i32 q0, q0, r7\n\t"                                                          \
        "vadd.i32 q1, q1, r7\n\t"                                                          \
        "vmax.s32 q0, q0, q6\n\t"                                                          \
        "vmax.s32 q1, q1, q6\n\t"                                                          \
        "vmin.s32 q0, q0, q7\n\t"                                                          \
        "vmin.s32 q1, q1, q7\n\t"                                                          \
        "vstrb.32 q0, [r11, q4]\n\t"                                                       \
        "adds r3, r11, #1\n\t"                                                             \
        "vstrb.32 q1, [r3, q4]\n\t"                                                        \
        "ldr r3, %[stepm]\n\t"                                                             \
        "add r11, r11, r3\n\t"                                                             \
        "ldr r3, %[endm]\n\t"                                                              \
        "cmp r1, r3\n\t"                                                                   \
        "bne 1b\n\t"                                                                       \
        : "+r"(r_w)                                                                        \
        : [endm] "m"(st.end), [c0m] "m"(st.c0), [c1m] "m"(st.c1), [countm] "m"(st.count), [ym] "m"(st.y),       \
          [zpm] "m"(st.zero_point), [offm] "m"(st.offsets), [lom] "m"(st.lo),              \
          [him] "m"(st.hi), [stepm] "m"(st.step), [sumsm] "m"(st.sums)                     \
        : "r0", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12", "lr", \
          "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12",   \
          "s13", "s14", "s15", "s16", "s17", "s18", "s19", "s20", "s21", "s22", "s23",     \
          "s24", "s25", "s26", "s27", "s28", "s29", "s30", "s31", "cc", "memory")

/* One pass of the dot loop: 16 taps of the four rows against both columns (count passes
 * a block; the unrolled bodies below run count / 2 or count / 4 times, two or six loop
 * instructions fewer per four passes: K = 64 layers, DS-CNN's pointwise ones, take one
 * pass of four). */
#define Q8_MVE_DOT_16                                                                      \
    "vldrb.8 q0, [r3], #16\n\t"                                                            \
    "vldrb.8 q1, [r5], #16\n\t"                                                            \
    "vldrb.8 q2, [r1], #16\n\t"                                                            \
    "vmladava.s8 r0, q2, q0\n\t"                                                           \
    "vmladava.s8 r2, q2, q1\n\t"                                                           \
    "vldrb.8 q3, [r1], #16\n\t"                                                            \
    "vmladava.s8 r4, q3, q0\n\t"                                                           \
    "vmladava.s8 r6, q3, q1\n\t"                                                           \
    "vldrb.8 q2, [r1], #16\n\t"                                                            \
    "vmladava.s8 r8, q2, q0\n\t"                                                           \
    "vmladava.s8 r10, q2, q1\n\t"                                                          \
    "vldrb.8 q3, [r1], #16\n\t"                                                            \
    "vmladava.s8 r12, q3, q0\n\t"                                                          \
    "vmladava.s8 lr, q3, q1\n\t"
#define Q8_MVE_DOT_32 Q8_MVE_DOT_16 Q8_MVE_DOT_16
#define Q8_MVE_DOT_64 Q8_MVE_DOT_32 Q8_MVE_DOT_32

/* `blocks` full blocks of four rows from w (each after its head) on columns c0 and c1,
 * stored at y0 (row m at y0 + m * pixels); returns the weights after them. */
Q8_INLINE const int8_t *q8_mve_fused_rows(const int8_t *w, const int8_t *c0, const int8_t *c1,
                                       int32_t count, int32_t zero_point, int32_t lo,
                                       uint8_t *y0, int32_t pixels, int32_t blocks)
{
    register const int8_t *r_w __asm__("r1") = w;
    q8_mve_fused_state st;
    uint32_t offsets[4];
    int32_t sums[8];
    offsets[0] = 0u;
    offsets[1] = (uint32_t)pixels;
    offsets[2] = 2u * (uint32_t)pixels;
    offsets[3] = 3u * (uint32_t)pixels;
    st.c0 = c0;
    st.c1 = c1;
    st.count = count;
    st.end = w + (size_t)blocks * (Q8_MVE_HEAD_BYTES + 64u * (size_t)count);
    st.y = y0;
    st.step = 4 * pixels;
    st.zero_point = zero_point;
    st.lo = lo;
    st.hi = lo + 255;
    st.offsets = offsets;
    st.sums = sums;
    if (count % 4 == 0) {
        st.count = count / 4;
        Q8_MVE_FUSED_ASM(Q8_MVE_DOT_64);
    } else if (count % 2 == 0) {
        st.count = count / 2;
        Q8_MVE_FUSED_ASM(Q8_MVE_DOT_32);
    } else {
        Q8_MVE_FUSED_ASM(Q8_MVE_DOT_16);
    }
    return r_w;
}
#else
#define Q8_MVE_FUSED_ROWS 0
#endif

/* Every output channel, four at a time, on columns c0 and c1 (c1 == c0 and two == 0 for a
 * lone pixel), requantized and stored at y0 + m * pixels; padded rows are not stored. */
Q8_INLINE void q8_mve_rows(const q8_conv_im2col_params *p, const q8_row_requant *layer,
                        const int8_t *c0, const int8_t *c1, uint8_t *y0, int32_t pixels,
                        int two, int mode)
{
    const int32_t M = p->output.c, blocks = p->k_padded / 16;
    const int8_t *w = (const int8_t *)p->weights;
    const int32_t *bias = p->bias;
    const float *const scale = p->requant.scale;
    const int32_t *const mult = p->requant.mult, *const exp = p->requant.exp;
    const int32_t ch_step = p->requant.per_channel ? 1 : 0;
    const size_t block_bytes = Q8_MVE_HEAD_BYTES + 4u * (size_t)p->k_padded;
    int32_t m, r;
#if Q8_HAS_MVE
    if (mode == Q8_RQ_FREQ_BOUNDED_S8 || mode == Q8_RQ_FREQ_BOUNDED_U8) {
        const int32_t lo = mode == Q8_RQ_FREQ_BOUNDED_S8 ? -128 : 0;
        const uint32x4_t offsets = vmulq_n_u32(vidupq_n_u32(0u, 1), (uint32_t)pixels);
        const float32x4_t one_scale = vdupq_n_f32(scale[0]);
        m = 0;
#if Q8_MVE_FUSED_ROWS
        if (two && M >= 4) {
            w = q8_mve_fused_rows(w, c0, c1, blocks, layer->zero_point, lo, y0, pixels,
                                  M / 4);
            m = M / 4 * 4;
        }
#endif
        for (; m < M; m += 4) {
            const mve_pred16_t rows = vctp32q((uint32_t)(M - m));
            int32_t acc[8];
            const int32x4_t b = vldrwq_z_s32(bias + m, rows);
            vst1q_s32(acc, b);
            vst1q_s32(acc + 4, b);
            q8_dot_mve_4x2(w + Q8_MVE_HEAD_BYTES, c0, c1, blocks, acc);
            q8_mve_requant_block(acc, ch_step ? vldrwq_z_f32(scale + m, rows) : one_scale,
                                 layer->zero_point, lo, lo + 255,
                                 y0 + (size_t)m * (size_t)pixels, offsets, rows, two);
            w += block_bytes;
        }
        return;
    }
#endif
    for (m = 0; m < M; m += 4) {
        int32_t acc[8];
        for (r = 0; r < 4; r++) {
            acc[r] = acc[4 + r] = bias[m + r];
        }
        q8_dot_mve_4x2(w + Q8_MVE_HEAD_BYTES, c0, c1, blocks, acc);
        for (r = 0; r < 4 && m + r < M; r++) {
            const q8_row_requant rq = q8_channel_constants(*layer, scale, mult, exp,
                                                        (m + r) * ch_step, mode);
            uint8_t *out = y0 + (size_t)(m + r) * (size_t)pixels;
            if (two) {
                q8_requantize_pair(&rq, acc[r], acc[4 + r], &out[0], &out[1], mode);
            } else {
                out[0] = q8_requantize(&rq, acc[r], mode);
            }
        }
        w += block_bytes;
    }
}

Q8_INLINE void q8_conv_im2col_mve_slabs(const q8_conv_im2col_params *p, const uint8_t *x,
                                     uint8_t *y, int8_t *Q8_RESTRICT scratch, int is_signed,
                                     int mode)
{
    const int32_t M = p->output.c, OH = p->output.h, OW = p->output.w;
    const int32_t sw = p->window.stride_w, KW = p->window.kernel_w, chunk = p->chunk;
    const size_t step = (size_t)sw * (size_t)p->slab;
    const int32_t pixels = OH * OW;
    const size_t in_image = (size_t)p->input.c * (size_t)(p->input.h * p->input.w);
    const q8_row_requant layer = q8_layer_constants(&p->requant);
    int32_t n, oh, ow0, j;
    memset(scratch, 0, q8_mve_slab_bytes(p));
    for (n = 0; n < p->input.n; n++) {
        const uint8_t *x_n = x + (size_t)n * in_image;
        uint8_t *y_n = y + (size_t)n * (size_t)M * (size_t)pixels;
        for (oh = 0; oh < OH; oh++) {
            for (ow0 = 0; ow0 < OW; ow0 += chunk) {
                const int32_t count = OW - ow0 < chunk ? OW - ow0 : chunk;
                if (is_signed) {
                    q8_fill_slabs_i8_s8(p, x_n, oh, ow0 * sw, (count - 1) * sw + KW, scratch);
                } else {
                    q8_fill_slabs_i8_u8(p, x_n, oh, ow0 * sw, (count - 1) * sw + KW, scratch);
                }
                for (j = 0; j < count; j += 2) {
                    const int8_t *c0 = scratch + (size_t)j * step;
                    const int two = j + 1 < count;
                    q8_mve_rows(p, &layer, c0, two ? c0 + step : c0,
                                y_n + (size_t)oh * (size_t)OW + (size_t)(ow0 + j), pixels, two,
                                mode);
                }
            }
        }
    }
}

Q8_INLINE void q8_conv_im2col_mve(const q8_conv_im2col_params *p, const uint8_t *x,
                               uint8_t *y, int8_t *Q8_RESTRICT scratch, int is_signed,
                               int mode)
{
    const int32_t M = p->output.c, OW = p->output.w, k_padded = p->k_padded;
    const int32_t pixels = p->output.h * OW;
    const int32_t k = p->input.c * p->window.kernel_h * p->window.kernel_w;
    const size_t in_image = (size_t)p->input.c * (size_t)(p->input.h * p->input.w);
    const q8_row_requant layer = q8_layer_constants(&p->requant);
    int8_t *col0 = scratch, *col1 = scratch + k_padded + Q8_MVE_COLUMN_SLACK;
    int32_t n, px;
    if (p->slab > 0) {
        q8_conv_im2col_mve_slabs(p, x, y, scratch, is_signed, mode);
        return;
    }
    /* The columns' padding taps meet zero weights: any byte would do; zero them once. */
    memset(col0 + k, 0, (size_t)(k_padded - k) + Q8_MVE_COLUMN_SLACK);
    memset(col1 + k, 0, (size_t)(k_padded - k) + Q8_MVE_COLUMN_SLACK);
    for (n = 0; n < p->input.n; n++) {
        const uint8_t *x_n = x + (size_t)n * in_image;
        uint8_t *y_n = y + (size_t)n * (size_t)M * (size_t)pixels;
        for (px = 0; px < pixels; px += 2) {
            const int two = px + 1 < pixels;
            q8_fill_pixels_i8(p, x_n, px, two, col0, col1, is_signed);
            q8_mve_rows(p, &layer, col0, two ? col1 : col0, y_n + (size_t)px, pixels, two,
                        mode);
        }
    }
}

/* The exported kernels, one per file named after the function: the bounded float
 * requantization is chosen per call, from the parameters. */
#define Q8_IM2COL_MVE_CALL(RQ) q8_conv_im2col_mve(params, x, y, scratch, is_signed, RQ)
#define Q8_DEFINE_IM2COL_MVE(NAME, TX, SIGNED, MODE)                                         \
    void NAME(const q8_conv_im2col_params *params, const TX *input, void *output,             \
              int8_t *Q8_RESTRICT scratch)                                                   \
    {                                                                                        \
        enum { is_signed = SIGNED };                                                         \
        const uint8_t *x = (const uint8_t *)input;                                           \
        uint8_t *y = (uint8_t *)output;                                                      \
        Q8_CALL_FOR_LAYER_MODE(&params->requant, MODE, Q8_IM2COL_MVE_CALL)                   \
    }

#endif /* Q8_IM2COL_MVE_H */
