/*
 * dwconv_3x3_rows.c - depthwise QLinearConv with 3x3 kernels and stride 1 for cores with
 * the DSP extension (q8_dwconv_*_3x3_rows_*): two output rows at a time. The generator
 * picks it on those cores; elsewhere q8_dwconv.h's kernel runs.
 *
 * Each channel is taken in bands of four padded input rows (2m .. 2m + 3), which give
 * output rows 2m and 2m + 1. A band holds, per padded column, the four values as int16 in
 * two words: T = (row 2m, row 2m + 1) and U = (row 2m + 2, row 2m + 3). With the weights
 * of kernel column k in pairs W01 = (w[0][k], w[1][k]) and W12 = (w[1][k], w[2][k]):
 *
 *   top(j)    = sum_k  SMLAD(T[j + k], W01) + T'  with T' = U[j + k].lo * W12.hi
 *   bottom(j) = sum_k  T[j + k].hi * W01.lo + SMLAD(U[j + k], W12)
 *
 * eighteen multiply-accumulates in twelve instructions and three 64-bit loads. The pair
 * of accumulators is written back over column j, which no later output reads; the bands
 * are then requantized into their output rows with the bias added. As in q8_dwconv.h, padding taps hold the input zero point, which the generator
 * folded into the bias (modulo 2^32). An odd last row is computed from a padding row and
 * not stored.
 *
 * A pass fills params->bands bands at once: a pair of padded rows is packed once and
 * stored twice, as the U of one band and the T of the next. Each band then runs its OW
 * windows (none straddles two bands).
 *
 * Scratch: the bands (bands * (OW + 2) * 8 bytes, 8-byte aligned) and one row (W bytes)
 * of the padding value, which a band reads for rows above or below the input.
 */
#include <string.h>

#include "q8_dsp.h"
#include "q8_requant_row.h"
#include "q8_runtime.h"

Q8_INLINE uint32_t rows_pack(int32_t lo, int32_t hi)
{
    return q8_pack16((uint32_t)lo, (uint32_t)hi);
}

Q8_INLINE int32_t rows_load(const uint8_t *p, int is_signed)
{
    return is_signed ? (int32_t)(int8_t)*p : (int32_t)*p;
}

Q8_INLINE const uint8_t *row_or_padding(const uint8_t *x_c, int32_t row, int32_t H,
                                         int32_t W, const uint8_t *pad_row)
{
    return (row >= 0 && row < H) ? x_c + (size_t)row * (size_t)W : pad_row;
}

/* n packed pairs of rows r0 and r1, each stored at t and at u (8 bytes apart). */
#if Q8_HAS_DSP && Q8_ASM
/* By hand: GCC 12 packs with two instructions and stores through register offsets,
 * about 14 cycles a word against 9 here. */
#define Q8_PACK_ROWS(LOAD)                                                                 \
    __asm__ volatile(".p2align 2\n"                                                        \
                     "1:\n\t" LOAD " %[a], [%[r0]], #1\n\t" LOAD " %[b], [%[r1]], #1\n\t"  \
                     "pkhbt %[a], %[a], %[b], lsl #16\n\t"                                 \
                     "str %[a], [%[t]], #8\n\t"                                            \
                     "str %[a], [%[u]], #8\n\t"                                            \
                     "subs %[n], %[n], #1\n\t"                                             \
                     "bne 1b\n"                                                            \
                     : [r0] "+r"(r0), [r1] "+r"(r1), [t] "+r"(t), [u] "+r"(u), [n] "+r"(n),\
                       [a] "=&r"(a), [b] "=&r"(b)                                          \
                     :                                                                     \
                     : "cc", "memory")

Q8_INLINE void pack_rows(const uint8_t *r0, const uint8_t *r1, int32_t n, uint32_t *t,
                         uint32_t *u, int is_signed)
{
    uint32_t a, b;
    if (n <= 0) {
        return;
    }
    if (is_signed) {
        Q8_PACK_ROWS("ldrsb");
    } else {
        Q8_PACK_ROWS("ldrb");
    }
}
#else
Q8_INLINE void pack_rows(const uint8_t *r0, const uint8_t *r1, int32_t n, uint32_t *t,
                         uint32_t *u, int is_signed)
{
    int32_t j;
    for (j = 0; j < n; j++) {
        const uint32_t v = rows_pack(rows_load(r0 + j, is_signed), rows_load(r1 + j, is_signed));
        t[2 * j] = v;
        u[2 * j] = v;
    }
}
#endif

/* The padding columns right of the input, in every band of a pass: the kernel's stores
 * (over columns 0 .. OW - 1) never reach them, so once per call. */
Q8_INLINE void pad_right_columns(uint32_t *band, int32_t count, int32_t PW, int32_t from,
                                 uint32_t pad_word)
{
    int32_t i, j;
    for (i = 0; i < count; i++) {
        uint32_t *z = band + (size_t)i * (size_t)PW * 2u;
        for (j = from; j < PW; j++) {
            z[2 * j] = pad_word;
            z[2 * j + 1] = pad_word;
        }
    }
}

/* Pair-row q of a pass: its left padding and its packed input columns, at t and u. */
Q8_INLINE void fill_pair_row(const uint8_t *r0, const uint8_t *r1, uint32_t *t, uint32_t *u,
                             int32_t first, int32_t n, uint32_t pad_word, int is_signed)
{
    int32_t j;
    for (j = 0; j < first; j++) {
        t[2 * j] = pad_word;
        u[2 * j] = pad_word;
    }
    pack_rows(r0, r1, n, t + 2 * first, u + 2 * first, is_signed);
}

/* The `count` bands whose first padded row is first_row (it may be negative). Band i
 * holds pair-rows i (T) and i + 1 (U), so each pair-row is packed once and stored twice:
 * as the U of the band above it and the T of its own (the first and the last store the
 * one slot they have twice). The pair-rows inside the input (most of them) take a loop
 * of their own that steps its pointers; the columns right of the input are
 * pad_right_columns'. */
Q8_INLINE void fill_bands(const uint8_t *x_c, int32_t H, int32_t W, int32_t first_row,
                          int32_t first, int32_t last, int32_t PW, int32_t count,
                          const uint8_t *pad_row, uint32_t pad_word, uint32_t *band,
                          int is_signed)
{
    const size_t stride = (size_t)PW * 2u;
    const int32_t n = last - first;
    /* pair-rows q_lo .. q_hi - 1: both rows inside the input, a band above and below */
    const int32_t q_lo = first_row >= -1 ? 1 : (1 - first_row) / 2;
    const int32_t q_hi = H - first_row < 2 * count ? (H - first_row) / 2 : count;
    int32_t q;
    for (q = 0; q <= count; q++) {
        if (q == q_lo && q < q_hi) {
            const uint8_t *r = x_c + (size_t)(first_row + 2 * q) * (size_t)W;
            uint32_t *t = band + (size_t)q * stride;
            for (; q < q_hi; q++) {
                fill_pair_row(r, r + W, t, t + 1 - stride, first, n, pad_word, is_signed);
                r += 2 * W;
                t += stride;
            }
        }
        {
            const uint8_t *r0 = row_or_padding(x_c, first_row + 2 * q, H, W, pad_row);
            const uint8_t *r1 = row_or_padding(x_c, first_row + 2 * q + 1, H, W, pad_row);
            uint32_t *t =
                band + (q < count ? (size_t)q * stride : (size_t)(q - 1) * stride + 1u);
            uint32_t *u = band + (q > 0 ? (size_t)(q - 1) * stride + 1u : (size_t)q * stride);
            fill_pair_row(r0, r1, t, u, first, n, pad_word, is_signed);
        }
    }
}

#if Q8_HAS_DSP && Q8_ASM
/* The loop by hand (GCC 12 keeps the six weight pairs in registers only this way): 18
 * instructions, about 27 cycles per two outputs on Cortex-M4. The C loop below is the
 * same computation. */
Q8_INLINE void band_macs(uint32_t *band, int32_t OW, const uint32_t w01[3],
                         const uint32_t w12[3])
{
    uint32_t t, u;
    int32_t top, bottom;
    __asm__ volatile(
        ".p2align 2\n"
        "1:\n\t"
        "ldrd %[t], %[u], [%[p]]\n\t"
        "smuad %[top], %[t], %[a]\n\t"
        "smultb %[bottom], %[t], %[a]\n\t"
        "smlabt %[top], %[u], %[d], %[top]\n\t"
        "smlad %[bottom], %[u], %[d], %[bottom]\n\t"
        "ldrd %[t], %[u], [%[p], #8]\n\t"
        "smlad %[top], %[t], %[b], %[top]\n\t"
        "smlatb %[bottom], %[t], %[b], %[bottom]\n\t"
        "smlabt %[top], %[u], %[e], %[top]\n\t"
        "smlad %[bottom], %[u], %[e], %[bottom]\n\t"
        "ldrd %[t], %[u], [%[p], #16]\n\t"
        "smlad %[top], %[t], %[c], %[top]\n\t"
        "smlatb %[bottom], %[t], %[c], %[bottom]\n\t"
        "smlabt %[top], %[u], %[f], %[top]\n\t"
        "smlad %[bottom], %[u], %[f], %[bottom]\n\t"
        "strd %[top], %[bottom], [%[p]], #8\n\t"
        "subs %[n], %[n], #1\n\t"
        "bne 1b\n"
        : [p] "+r"(band), [n] "+r"(OW), [t] "=&r"(t), [u] "=&r"(u), [top] "=&r"(top),
          [bottom] "=&r"(bottom)
        : [a] "r"(w01[0]), [b] "r"(w01[1]), [c] "r"(w01[2]), [d] "r"(w12[0]),
          [e] "r"(w12[1]), [f] "r"(w12[2])
        : "cc", "memory");
}
#else
static void band_macs(uint32_t *band, int32_t OW, const uint32_t w01[3],
                      const uint32_t w12[3])
{
    int32_t j, k;
    for (j = 0; j < OW; j++) {
        uint32_t *z = band + 2 * j;
        int32_t top = 0, bottom = 0;
        for (k = 0; k < 3; k++) {
            const uint32_t t = z[2 * k], u = z[2 * k + 1];
            top = q8_smlad(t, w01[k], top);
            top = q8_smlabt((int32_t)u, (int32_t)w12[k], top);
            bottom = q8_smlatb((int32_t)t, (int32_t)w01[k], bottom);
            bottom = q8_smlad(u, w12[k], bottom);
        }
        z[0] = (uint32_t)top;
        z[1] = (uint32_t)bottom;
    }
}
#endif

/* Output rows 2 * first .. from `count` bands of accumulators plus the bias; an odd last
 * row is not stored. */
Q8_INLINE void requantize_bands_as(const uint32_t *band, int32_t count, int32_t OW,
                                   int32_t OH, int32_t first, int32_t bias,
                                   const q8_row_requant *constants, uint8_t *y_c, int mode)
{
    const q8_row_requant r = *constants; /* in registers: the byte stores may alias it */
    const int32_t PW = OW + 2;
    int32_t b, j;
    for (b = 0; b < count; b++) {
        const uint32_t *z = band + (size_t)b * (size_t)PW * 2u;
        const int32_t oh = 2 * (first + b);
        uint8_t *out = y_c + (size_t)oh * (size_t)OW;
        if (oh + 1 < OH) {
            for (j = 0; j < OW; j++) {
                const uint32_t top = z[2 * j], bottom = z[2 * j + 1];
                q8_requantize_pair(&r, (int32_t)(top + (uint32_t)bias),
                                (int32_t)(bottom + (uint32_t)bias), &out[j], &out[OW + j],
                                mode);
            }
        } else {
            for (j = 0; j < OW; j++) {
                out[j] = q8_requantize(&r, (int32_t)(z[2 * j] + (uint32_t)bias), mode);
            }
        }
    }
}

/* One loop per requantization mode, the saturating ones where the output range allows. */
static void requantize_bands(const uint32_t *band, int32_t count, int32_t OW, int32_t OH,
                             int32_t first, int32_t bias, const q8_row_requant *rq,
                             const q8_requant_params *layer, uint8_t *y_c, int mode)
{
    switch (q8_layer_requant_mode(layer, mode)) {
    Q8_SATURATING_CASES(
        requantize_bands_as(band, count, OW, OH, first, bias, rq, y_c, Q8_RQ_FREQ_BOUNDED_S8),
        requantize_bands_as(band, count, OW, OH, first, bias, rq, y_c, Q8_RQ_FREQ_BOUNDED_U8))
    case Q8_RQ_FREQ_BOUNDED:
        requantize_bands_as(band, count, OW, OH, first, bias, rq, y_c, Q8_RQ_FREQ_BOUNDED);
        break;
    case Q8_RQ_IREQ:
        requantize_bands_as(band, count, OW, OH, first, bias, rq, y_c, Q8_RQ_IREQ);
        break;
    default:
        requantize_bands_as(band, count, OW, OH, first, bias, rq, y_c, Q8_RQ_FREQ);
        break;
    }
}

/*
 * A band of two full output rows in one piece of assembly on cores with VCVTR, in a
 * saturating mode: each window's twelve multiplies start from the bias, the pair is
 * requantized in registers (VCVTR, SSAT/USAT) and stored into both rows, without the
 * round trip through the band (about 48 cycles per pair against 57). The zero point, the
 * output pointer and the row length come from a struct on the stack: the loop's registers
 * are taken. The last band of an odd output height takes the unfused path.
 */
#if Q8_HAS_DSP && Q8_ASM && Q8_HAS_VCVTR
#define Q8_FUSED_BANDS 1

typedef struct {
    int32_t bias, zero_point, row, bands;
    uint8_t *y;
} fused_band_state;

#define Q8_FUSED_BAND_ASM(SAT)                                                             \
    __asm__ volatile(                                                                      \
        "ldr lr, %[biasm]\n"                                                               \
        "1:\n\t"                                                                           \
        "ldr %[n], %[rowm]\n\t"                                                            \
        ".p2align 2\n"                                                                     \
        "2:\n\t"                                                                           \
        "ldrd %[t], %[u], [%[p]]\n\t"                                                      \
        "smlad %[top], %[t], %[a], lr\n\t"                                                 \
        "smlatb %[bottom], %[t], %[a], lr\n\t"                                             \
        "smlabt %[top], %[u], %[d], %[top]\n\t"                                            \
        "smlad %[bottom], %[u], %[d], %[bottom]\n\t"                                       \
        "ldrd %[t], %[u], [%[p], #8]\n\t"                                                  \
        "smlad %[top], %[t], %[b], %[top]\n\t"                                             \
        "smlatb %[bottom], %[t], %[b], %[bottom]\n\t"                                      \
        "smlabt %[top], %[u], %[e], %[top]\n\t"                                            \
        "smlad %[bottom], %[u], %[e], %[bottom]\n\t"                                       \
        "ldrd %[t], %[u], [%[p], #16]\n\t"                                                 \
        "smlad %[top], %[t], %[c], %[top]\n\t"                                             \
        "smlatb %[bottom], %[t], %[c], %[bottom]\n\t"                                      \
        "smlabt %[top], %[u], %[f], %[top]\n\t"                                            \
        "smlad %[bottom], %[u], %[f], %[bottom]\n\t"                                       \
        "add %[p], %[p], #8\n\t"                                                           \
        "vmov s14, s15, %[top], %[bottom]\n\t"                                             \
        "vcvt.f32.s32 s14, s14\n\t"                                                        \
        "vcvt.f32.s32 s15, s15\n\t"                                                        \
        "vmul.f32 s14, s14, %[sc]\n\t"                                                     \
        "vmul.f32 s15, s15, %[sc]\n\t"                                                     \
        "vcvtr.s32.f32 s14, s14\n\t"                                                       \
        "vcvtr.s32.f32 s15, s15\n\t"                                                       \
        "ldr %[t], %[zpm]\n\t"                                                             \
        "ldr %[u], %[ym]\n\t"                                                              \
        "vmov %[top], %[bottom], s14, s15\n\t"                                             \
        "add %[top], %[top], %[t]\n\t"                                                     \
        SAT " %[top], #8, %[top]\n\t"                                                      \
        "add %[bottom], %[bottom], %[t]\n\t"                                               \
        SAT " %[bottom], #8, %[bottom]\n\t"                                                \
        "ldr %[t], %[rowm]\n\t"                                                            \
        "strb %[bottom], [%[u], %[t]]\n\t"                                                 \
        "strb %[top], [%[u]], #1\n\t"                                                      \
        "str %[u], %[ym]\n\t"                                                              \
        "subs %[n], %[n], #1\n\t"                                                          \
        "bne 2b\n\t"                                                                       \
        "add %[p], %[p], #16\n\t"                                                          \
        "ldr %[t], %[rowm]\n\t"                                                            \
        "add %[u], %[u], %[t]\n\t"                                                         \
        "str %[u], %[ym]\n\t"                                                              \
        "ldr %[t], %[bandsm]\n\t"                                                          \
        "subs %[t], %[t], #1\n\t"                                                          \
        "str %[t], %[bandsm]\n\t"                                                          \
        "bne 1b\n"                                                                         \
        : [p] "+r"(band), [n] "=&r"(n), [t] "=&r"(t), [u] "=&r"(u), [top] "=&r"(top),      \
          [bottom] "=&r"(bottom), [ym] "+m"(st.y), [bandsm] "+m"(st.bands)                 \
        : [a] "r"(w01[0]), [b] "r"(w01[1]), [c] "r"(w01[2]), [d] "r"(w12[0]),              \
          [e] "r"(w12[1]), [f] "r"(w12[2]), [sc] "t"(scale), [biasm] "m"(st.bias),         \
          [zpm] "m"(st.zero_point), [rowm] "m"(st.row)                                     \
        : "lr", "s14", "s15", "cc", "memory")

/* Output rows y .. y + 2 * count * OW - 1 from `count` bands (count > 0, PW = OW + 2
 * columns each); mode Q8_RQ_FREQ_BOUNDED_S8 or _U8. */
Q8_INLINE void fused_bands(const uint32_t *band, int32_t count, int32_t OW,
                           const uint32_t w01[3], const uint32_t w12[3], int32_t bias,
                           float scale, int32_t zero_point, uint8_t *y, int mode)
{
    fused_band_state st;
    uint32_t t, u;
    int32_t n, top, bottom;
    st.bias = bias;
    st.zero_point = zero_point;
    st.row = OW;
    st.bands = count;
    st.y = y;
    if (mode == Q8_RQ_FREQ_BOUNDED_S8) {
        Q8_FUSED_BAND_ASM("ssat");
    } else {
        Q8_FUSED_BAND_ASM("usat");
    }
    (void)n;
    (void)t;
    (void)u;
    (void)top;
    (void)bottom;
}
#else
#define Q8_FUSED_BANDS 0
#endif

Q8_INLINE void dwconv_3x3_rows(const q8_dwconv_params *p, const uint8_t *x,
                               uint8_t *y, uint8_t *Q8_RESTRICT scratch,
                               int is_signed, int mode)
{
    const int32_t C = p->input.c, H = p->input.h, W = p->input.w;
    const int32_t OH = p->output.h, OW = p->output.w, PW = OW + 2;
    const int32_t bands = (OH + 1) / 2, per_pass = p->bands;
    uint32_t *band = (uint32_t *)(void *)scratch;
    uint8_t *pad_row = scratch + (size_t)per_pass * (size_t)PW * 8u;
    const uint32_t pad_word = rows_pack(p->pad_value, p->pad_value);
    int32_t n, i_c, b, i, k;
    const size_t stride = (size_t)PW * 2u;
    /* the channels to compute: channel_list's, or all */
    const int32_t count_c = p->channel_list != NULL ? p->channel_count : C;
    const int32_t first = p->pad_left < PW ? p->pad_left : PW;
    const int32_t last = p->pad_left + W < PW ? p->pad_left + W : PW;
#if Q8_FUSED_BANDS
    const int rmode = q8_layer_requant_mode(&p->requant, mode);
    const int fused = rmode == Q8_RQ_FREQ_BOUNDED_S8 || rmode == Q8_RQ_FREQ_BOUNDED_U8;
#endif
    memset(pad_row, (int)(uint8_t)p->pad_value, (size_t)W);
    pad_right_columns(band, per_pass, PW, last, pad_word);
    for (n = 0; n < p->input.n; n++) {
        for (i_c = 0; i_c < count_c; i_c++) {
            const int32_t c = p->channel_list != NULL ? p->channel_list[i_c] : i_c;
            const uint8_t *x_c = x + ((size_t)n * (size_t)C + (size_t)c) * (size_t)(H * W);
            uint8_t *y_c = y + ((size_t)n * (size_t)C + (size_t)c) * (size_t)(OH * OW);
            const int16_t *w = p->weights + (size_t)i_c * 9u;
            const q8_row_requant rq = q8_row_constants(&p->requant, i_c, mode);
            const int32_t bias = p->bias[i_c];
            uint32_t w01[3], w12[3];
            for (k = 0; k < 3; k++) {
                w01[k] = rows_pack(w[k], w[3 + k]);
                w12[k] = rows_pack(w[3 + k], w[6 + k]);
            }
            for (b = 0; b < bands; b += per_pass) {
                const int32_t count = bands - b < per_pass ? bands - b : per_pass;
                fill_bands(x_c, H, W, 2 * b - p->pad_top, first, last, PW, count, pad_row,
                           pad_word, band, is_signed);
                i = 0;
#if Q8_FUSED_BANDS
                if (fused) {
                    /* every band of two full rows */
                    i = OH - 2 * b >= 2 * count ? count : (OH - 2 * b) / 2;
                    if (i > 0) {
                        fused_bands(band, i, OW, w01, w12, bias, rq.scale, rq.zero_point,
                                    y_c + (size_t)(2 * b) * (size_t)OW, rmode);
                    }
                }
#endif
                for (k = i; k < count; k++) {
                    band_macs(band + (size_t)k * stride, OW, w01, w12);
                }
                requantize_bands(band + (size_t)i * stride, count - i, OW, OH, b + i, bias,
                                 &rq, &p->requant, y_c, mode);
            }
        }
    }
}

/* The requantization mode is settled per pass of bands (requantize_bands). */
#define Q8_DEFINE_DWCONV_ROWS(NAME, TX, SIGNED, MODE)                                     \
    void NAME(const q8_dwconv_params *params, const TX *input,                            \
              void *output, void *Q8_RESTRICT scratch)                                    \
    {                                                                                     \
        dwconv_3x3_rows(params, (const uint8_t *)input, (uint8_t *)output,                \
                        (uint8_t *)scratch, SIGNED, MODE);                                \
    }

Q8_DEFINE_DWCONV_ROWS(q8_dwconv_u8_3x3_rows_freq, uint8_t, 0, Q8_RQ_FREQ)
Q8_DEFINE_DWCONV_ROWS(q8_dwconv_s8_3x3_rows_freq, int8_t, 1, Q8_RQ_FREQ)
Q8_DEFINE_DWCONV_ROWS(q8_dwconv_u8_3x3_rows_ireq, uint8_t, 0, Q8_RQ_IREQ)
Q8_DEFINE_DWCONV_ROWS(q8_dwconv_s8_3x3_rows_ireq, int8_t, 1, Q8_RQ_IREQ)
