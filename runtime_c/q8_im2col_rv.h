/*
 * q8_im2col_rv.h - the RV32IM im2col convolution (q8_conv_*_im2col_rv_*): four output
 * channels by four output pixels per pass, 16 products for 8 byte loads.
 *
 * RV32IM has 31 registers, byte loads with any 12-bit offset, a 32-bit MUL and no
 * multiply-accumulate, no SIMD and no saturation. What costs instructions is then the
 * loads: one weight and one input byte per product in the plain loop. Here the weights of
 * four channels are interleaved per tap (w[g][k][4]: one pointer, offsets 0..15 over four
 * taps) and the inputs of four pixels lie side by side per tap (c[k * stride + p]), so a
 * tap is 8 loads, 16 MUL and 16 ADD: 41 instructions with the column pointer's step, 2.59
 * per product over four taps with the loop's two.
 *
 * The columns hold the input bytes as they are (lb for int8, lbu for uint8; padding taps
 * the zero point) and the bias takes the zero point out:
 *   bias[m] = B[m] - x_zp * sum W[m] (modulo 2^32), acc = bias[m] + sum W x.
 * Every sum is computed modulo 2^32 and equals ORT's int32 accumulator. A 1x1 layer with
 * stride 1, no padding and C a multiple of 4 is read in place (`direct`): tap k of four
 * neighbouring pixels is four neighbouring bytes of input channel k (stride H*W); the last
 * pass of fewer than four pixels, and every other layer, is gathered into the scratch
 * columns (stride 4). A direct pass holds its outputs in scratch until it has read its
 * pixels (the output may overlap the input there, ops/conv/im2col.py pointwise_overlap).
 */
#ifndef Q8_IM2COL_RV_H
#define Q8_IM2COL_RV_H

#include <string.h>

#include "q8_arith.h"
#include "q8_requant_row.h"
#include "q8_requant_rv.h"
#include "q8_runtime.h"

#if defined(__GNUC__) && defined(__riscv) && defined(__riscv_mul) && __riscv_xlen == 32 && \
    defined(__OPTIMIZE__) && !defined(Q8_NO_ASM)
#define Q8_RV_ASM 1
#else
#define Q8_RV_ASM 0
#endif

#if Q8_RV_ASM
/* By hand: GCC 12 hoists the 32 loads of an unrolled block ahead of the products and
 * spills the accumulators (about 4.7 instructions per product), and 16 accumulators in
 * and out are more operands than an asm statement takes. So the loop is a whole function
 * in assembly (naked: no frame of the compiler's): w in a0, c in a1, stride in a2, taps
 * in a3, acc in a4. The 16 accumulators are t0-t6, a5-a7, s0-s5; the four weights s6-s9,
 * the input byte s10, the product s11 (s0-s11 saved on the stack). One input byte is
 * loaded and multiplied by the four weights in registers. */
#define Q8_RV_PIXEL(LX, P, A0, A1, A2, A3)                                               \
    LX " s10, " #P "(a1)\n\t"                                                            \
    "mul s11, s10, s6\n\t"                                                               \
    "add " #A0 ", " #A0 ", s11\n\t"                                                      \
    "mul s11, s10, s7\n\t"                                                               \
    "add " #A1 ", " #A1 ", s11\n\t"                                                      \
    "mul s11, s10, s8\n\t"                                                               \
    "add " #A2 ", " #A2 ", s11\n\t"                                                      \
    "mul s11, s10, s9\n\t"                                                               \
    "add " #A3 ", " #A3 ", s11\n\t"

#define Q8_RV_TAP(LX, J0, J1, J2, J3)                                                    \
    "lb s6, " #J0 "(a0)\n\t"                                                             \
    "lb s7, " #J1 "(a0)\n\t"                                                             \
    "lb s8, " #J2 "(a0)\n\t"                                                             \
    "lb s9, " #J3 "(a0)\n\t"                                                             \
    Q8_RV_PIXEL(LX, 0, t0, t4, a6, s2)                                                   \
    Q8_RV_PIXEL(LX, 1, t1, t5, a7, s3)                                                   \
    Q8_RV_PIXEL(LX, 2, t2, t6, s0, s4)                                                   \
    Q8_RV_PIXEL(LX, 3, t3, a5, s1, s5)                                                   \
    "add a1, a1, a2\n\t"

/* acc[i] <-> register, i = 4 r + p */
#define Q8_RV_ACC(OP)                                                                    \
    OP " t0, 0(a4)\n\t"                                                                  \
    OP " t1, 4(a4)\n\t"                                                                  \
    OP " t2, 8(a4)\n\t"                                                                  \
    OP " t3, 12(a4)\n\t"                                                                 \
    OP " t4, 16(a4)\n\t"                                                                 \
    OP " t5, 20(a4)\n\t"                                                                 \
    OP " t6, 24(a4)\n\t"                                                                 \
    OP " a5, 28(a4)\n\t"                                                                 \
    OP " a6, 32(a4)\n\t"                                                                 \
    OP " a7, 36(a4)\n\t"                                                                 \
    OP " s0, 40(a4)\n\t"                                                                 \
    OP " s1, 44(a4)\n\t"                                                                 \
    OP " s2, 48(a4)\n\t"                                                                 \
    OP " s3, 52(a4)\n\t"                                                                 \
    OP " s4, 56(a4)\n\t"                                                                 \
    OP " s5, 60(a4)\n\t"

#define Q8_RV_SAVED(OP)                                                                  \
    OP " s0, 0(sp)\n\t"                                                                  \
    OP " s1, 4(sp)\n\t"                                                                  \
    OP " s2, 8(sp)\n\t"                                                                  \
    OP " s3, 12(sp)\n\t"                                                                 \
    OP " s4, 16(sp)\n\t"                                                                 \
    OP " s5, 20(sp)\n\t"                                                                 \
    OP " s6, 24(sp)\n\t"                                                                 \
    OP " s7, 28(sp)\n\t"                                                                 \
    OP " s8, 32(sp)\n\t"                                                                 \
    OP " s9, 36(sp)\n\t"                                                                 \
    OP " s10, 40(sp)\n\t"                                                                \
    OP " s11, 44(sp)\n\t"

#define Q8_RV_DOT_4X4(NAME, LX)                                                          \
    Q8_UNUSED __attribute__((naked, noinline)) static void NAME(                         \
        Q8_UNUSED const int8_t *w, Q8_UNUSED const uint8_t *c, Q8_UNUSED int32_t stride,    \
        Q8_UNUSED int32_t taps, Q8_UNUSED uint32_t acc[16])                              \
    {                                                                                    \
        __asm__ volatile("addi sp, sp, -48\n\t"                                          \
                         Q8_RV_SAVED("sw")                                               \
                         Q8_RV_ACC("lw")                                                 \
                         "slli a3, a3, 2\n\t"                                            \
                         "add a3, a3, a0\n"                                              \
                         "1:\n\t"                                                        \
                         Q8_RV_TAP(LX, 0, 1, 2, 3)                                       \
                         Q8_RV_TAP(LX, 4, 5, 6, 7)                                       \
                         Q8_RV_TAP(LX, 8, 9, 10, 11)                                     \
                         Q8_RV_TAP(LX, 12, 13, 14, 15)                                   \
                         "addi a0, a0, 16\n\t"                                           \
                         "bne a0, a3, 1b\n\t"                                            \
                         Q8_RV_ACC("sw")                                                 \
                         Q8_RV_SAVED("lw")                                               \
                         "addi sp, sp, 48\n\t"                                           \
                         "ret");                                                         \
    }

Q8_RV_DOT_4X4(q8_rv_dot_4x4_u8, "lbu")
Q8_RV_DOT_4X4(q8_rv_dot_4x4_s8, "lb")
#endif

/* The same sums in C (other targets, -DQ8_NO_ASM): acc[4 r + p] += sum over the taps of
 * w[4 k + r] * c[k * stride + p], modulo 2^32. taps is a positive multiple of 4. */
Q8_INLINE void q8_rv_dot_4x4_c(const int8_t *w, const uint8_t *c, int32_t stride,
                               int32_t taps, int is_signed, uint32_t acc[16])
{
    int32_t k, r, px;
    for (k = 0; k < taps; k++) {
        for (px = 0; px < 4; px++) {
            const int32_t x = is_signed ? (int32_t)(int8_t)c[px] : (int32_t)c[px];
            for (r = 0; r < 4; r++) {
                acc[4 * r + px] += (uint32_t)((int32_t)w[r] * x);
            }
        }
        w += 4;
        c += stride;
    }
}

Q8_INLINE void q8_rv_dot_4x4(const int8_t *w, const uint8_t *c, int32_t stride, int32_t taps,
                             int is_signed, uint32_t acc[16])
{
#if Q8_RV_ASM
    if (is_signed) {
        q8_rv_dot_4x4_s8(w, c, stride, taps, acc);
    } else {
        q8_rv_dot_4x4_u8(w, c, stride, taps, acc);
    }
#else
    q8_rv_dot_4x4_c(w, c, stride, taps, is_signed, acc);
#endif
}

/* Output pixel (oh, ow)'s taps into column slot `col` (every fourth byte from it), in the
 * weights' order (c, kh, kw); taps outside the input take the zero point. */
Q8_INLINE void q8_rv_fill(const q8_conv_im2col_rv_params *p, const uint8_t *x_n, int32_t oh,
                          int32_t ow, uint8_t *col)
{
    const int32_t H = p->input.h, W = p->input.w, KH = p->window.kernel_h;
    const int32_t KW = p->window.kernel_w, dh = p->window.dilation_h;
    const int32_t dw = p->window.dilation_w;
    const int32_t ih0 = oh * p->window.stride_h - p->window.pad_top;
    const int32_t iw0 = ow * p->window.stride_w - p->window.pad_left;
    const uint8_t pad = (uint8_t)p->pad_value;
    /* The whole window's columns inside the input: no test per tap. */
    const int inside_w = iw0 >= 0 && iw0 + (KW - 1) * dw < W;
    int32_t c, kh, kw;
    for (c = 0; c < p->input.c; c++) {
        const uint8_t *plane = x_n + (size_t)c * (size_t)H * (size_t)W;
        for (kh = 0; kh < KH; kh++) {
            const int32_t ih = ih0 + kh * dh;
            if ((uint32_t)ih >= (uint32_t)H) {
                for (kw = 0; kw < KW; kw++) {
                    *col = pad;
                    col += 4;
                }
            } else if (inside_w) {
                const uint8_t *src = plane + (size_t)ih * (size_t)W + iw0;
                for (kw = 0; kw < KW; kw++) {
                    *col = *src;
                    src += dw;
                    col += 4;
                }
            } else {
                const uint8_t *row = plane + (size_t)ih * (size_t)W;
                for (kw = 0; kw < KW; kw++) {
                    const int32_t iw = iw0 + kw * dw;
                    *col = (uint32_t)iw < (uint32_t)W ? row[iw] : pad;
                    col += 4;
                }
            }
        }
    }
}

/* A block's outputs, rows m0 .. m0 + rows - 1 by `count` pixels, requantized to
 * out[r * step + i]. Out of line: the requantization constants then have the registers
 * to themselves (inside the pixel loop GCC spills them, about 31 instructions an output
 * against 25). */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
Q8_UNUSED static void q8_rv_store_block(const q8_conv_im2col_rv_params *p, int32_t m0,
                                        int32_t rows, int32_t count, const uint32_t acc[16],
                                        uint8_t *out, int32_t step, int mode)
{
    const q8_requant_params *rq = &p->requant;
    int32_t r, i;
    if (mode == Q8_RQ_IREQ) {
        for (r = 0; r < rows; r++) {
            const q8_rv_requant c = q8_rv_requant_table(rq, p->ints,
                                                        rq->per_channel ? m0 + r : 0);
            for (i = 0; i < count; i++) {
                out[i] = q8_rv_requantize(&c, (int32_t)acc[4 * r + i]);
            }
            out += step;
        }
        return;
    }
    const q8_row_requant layer = q8_layer_constants(rq);
    for (r = 0; r < rows; r++) {
        const q8_row_requant c = q8_channel_constants(layer, rq->scale, rq->mult, rq->exp,
                                                      rq->per_channel ? m0 + r : 0, mode);
        for (i = 0; i < count; i++) {
            out[i] = q8_requantize(&c, (int32_t)acc[4 * r + i], mode);
        }
        out += step;
    }
}

Q8_INLINE void q8_conv_im2col_rv(const q8_conv_im2col_rv_params *p, const uint8_t *x,
                                 uint8_t *y, uint8_t *Q8_RESTRICT scratch, int is_signed,
                                 int mode)
{
    const int32_t M = p->output.c, OW = p->output.w, k_padded = p->k_padded;
    const int32_t pixels = p->output.h * OW, plane = p->input.h * p->input.w;
    const int32_t K = p->input.c * p->window.kernel_h * p->window.kernel_w;
    const size_t in_image = (size_t)p->input.c * (size_t)plane;
    const int8_t *const weights = p->weights;
    const int32_t *const bias = p->bias;
    /* a direct pass's outputs, [M][4], held until it has read its inputs */
    uint8_t *const held = scratch + (size_t)k_padded * 4u;
    int32_t n, px, g, r, i;
    /* The padding taps' columns: zero (their weights are zero too). */
    memset(scratch + (size_t)K * 4u, 0, (size_t)(k_padded - K) * 4u);
    for (n = 0; n < p->input.n; n++) {
        const uint8_t *x_n = x + (size_t)n * in_image;
        uint8_t *y_n = y + (size_t)n * (size_t)M * (size_t)pixels;
        for (px = 0; px < pixels; px += 4) {
            const int32_t count = pixels - px < 4 ? pixels - px : 4;
            const uint8_t *cols = scratch;
            int32_t stride = 4;
            const int in_place = p->direct && count == 4;
            if (in_place) {
                cols = x_n + px;
                stride = plane;
            } else {
                for (i = 0; i < 4; i++) {
                    /* a last pass of fewer than four pixels repeats its first (not
                       stored); RV32IM divides in one instruction */
                    if (i < count) {
                        q8_rv_fill(p, x_n, (px + i) / OW, (px + i) % OW, scratch + i);
                    } else {
                        int32_t k;
                        for (k = 0; k < K; k++) {
                            scratch[4 * k + i] = scratch[4 * k];
                        }
                    }
                }
            }
            for (g = 0; 4 * g < M; g++) {
                const int32_t rows = M - 4 * g < 4 ? M - 4 * g : 4;
                uint32_t acc[16];
                for (r = 0; r < 4; r++) {
                    const uint32_t b = (uint32_t)bias[4 * g + r];
                    acc[4 * r] = b;
                    acc[4 * r + 1] = b;
                    acc[4 * r + 2] = b;
                    acc[4 * r + 3] = b;
                }
                q8_rv_dot_4x4(weights + (size_t)g * (size_t)k_padded * 4u, cols, stride,
                              k_padded, is_signed, acc);
                if (in_place) {
                    q8_rv_store_block(p, 4 * g, rows, 4, acc, held + 16 * g, 4,
                                      mode);
                } else {
                    q8_rv_store_block(p, 4 * g, rows, count, acc,
                                      y_n + (size_t)(4 * g) * (size_t)pixels + (size_t)px,
                                      pixels, mode);
                }
            }
            if (in_place) {
                /* The pass has read its four pixels' inputs: their outputs may now take
                   their place (the planner lets output channel m of pixel p overlap input
                   channel m of pixel p, which no later pass reads). */
                for (r = 0; r < M; r++) {
                    memcpy(y_n + (size_t)r * (size_t)pixels + (size_t)px, held + 4 * r, 4);
                }
            }
        }
    }
}

#define Q8_DEFINE_IM2COL_RV(NAME, TX, SIGNED, MODE)                                      \
    void NAME(const q8_conv_im2col_rv_params *params, const TX *input, void *output,     \
              uint8_t *Q8_RESTRICT scratch)                                              \
    {                                                                                    \
        if (MODE == Q8_RQ_FREQ && params->requant.bounded) {                             \
            q8_conv_im2col_rv(params, (const uint8_t *)input, (uint8_t *)output, scratch, \
                              SIGNED, Q8_RQ_FREQ_BOUNDED);                               \
        } else {                                                                         \
            q8_conv_im2col_rv(params, (const uint8_t *)input, (uint8_t *)output, scratch, \
                              SIGNED, MODE);                                             \
        }                                                                                \
    }

#endif /* Q8_IM2COL_RV_H */
