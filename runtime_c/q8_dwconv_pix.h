/*
 * q8_dwconv_pix.h - the host's depthwise 3x3 (dwconv_3x3_pix.c): outputs in the vector
 * lanes, strides 1 and 2 on either axis.
 *
 * Each channel is copied into the padded plane (PH x PW bytes, its border written once per
 * call), then widened into int16 planes of row pairs: pair row i holds (x[sh * i][c],
 * x[sh * i + 1][c]) per column (a zero row past the plane), at stride 2 across split into
 * the even and odd columns (two phases, each OW + 1 wide). The nine taps of an output are
 * then six pairs, each at a fixed offset from the output's flat index over those rows:
 * window rows 0 and 1 together, row 2 with a zero weight, and per window column its phase
 * and column. One broadcast weight pair against a run of pairs adds two products per lane
 * (q8_pix_dw_products.h, per instruction set as q8_pix.h has it). Outputs are computed at
 * every column of the flat rows and those past OW dropped after requantizing
 * (q8_requant_run.h), in runs of Q8_DW_PIX_RUN.
 *
 * The same sums as q8_dwconv.h's: acc = sum x * (w - w_zp) + bias' (bias' folds x_zp), in
 * int32: |x| <= 255, |w - w_zp| <= 255, nine products and the bias within the generator's
 * bound (ops/_common.py conv_acc_bound); two products per lane sum below 2^17.
 */
#ifndef Q8_DWCONV_PIX_H
#define Q8_DWCONV_PIX_H

#include "q8_dwconv.h"
#include "q8_pix.h"

/* Flat outputs per run, and the pairs past each phase that a run's last vectors may read. */
#define Q8_DW_PIX_RUN 256
#define Q8_DW_PIX_SLACK 64

/* The six tap pairs of a channel: their offsets in pairs from an output's flat index, and
 * their weight pairs (first tap in the low half), as a broadcast takes them. */
typedef struct {
    ptrdiff_t offset[6];
    int32_t weights[6];
} q8_pix_dw_taps;

typedef void q8_pix_dw_products_fn(const int16_t *Q8_RESTRICT planes,
                                   const q8_pix_dw_taps *taps, int32_t n,
                                   int32_t *Q8_RESTRICT sums);

/* The products in plain C: other hosts, and -DQ8_PIX_PORTABLE. */
Q8_UNUSED static void q8_pix_dw_products_c(const int16_t *Q8_RESTRICT planes,
                                           const q8_pix_dw_taps *taps, int32_t n,
                                           int32_t *Q8_RESTRICT sums)
{
    int32_t i, t;
    for (i = 0; i < n; i++) {
        sums[i] = 0;
    }
    for (t = 0; t < 6; t++) {
        const int16_t *pairs = planes + 2 * taps->offset[t];
        const int32_t lo = (int16_t)(uint16_t)((uint32_t)taps->weights[t] & 0xffffu);
        const int32_t hi = (int16_t)(uint16_t)((uint32_t)taps->weights[t] >> 16);
        for (i = 0; i < n; i++) {
            sums[i] += pairs[2 * i] * lo + pairs[2 * i + 1] * hi;
        }
    }
}

#define Q8_PIX_BODY "q8_pix_dw_products.h"
#include "q8_pix_each_isa.h"
#undef Q8_PIX_BODY

Q8_UNUSED static q8_pix_dw_products_fn *q8_pix_dw_products_for(int isa)
{
    Q8_PIX_RETURN_FOR_ISA(isa, q8_pix_dw_products)
}

/* Two int16 weights as the 32 bits of a pair (first in the low half). */
Q8_INLINE int32_t q8_pix_dw_pair(int16_t first, int16_t second)
{
    return (int32_t)((uint32_t)(uint16_t)first | ((uint32_t)(uint16_t)second << 16));
}

/* The geometry of the pair planes (q8_dwconv_3x3_pix_scratch_bytes computes the same). */
typedef struct {
    int32_t ph, pw;    /* the padded plane */
    int32_t rows, len; /* pair rows, and pairs per row (the flat rows' width) */
    size_t phase;      /* pairs per phase, slack included */
    size_t plane_bytes; /* the padded plane's bytes, rounded up to 16 */
} q8_pix_dw_geometry;

Q8_INLINE q8_pix_dw_geometry q8_pix_dw_geometry_of(const q8_dwconv_params *p)
{
    q8_pix_dw_geometry g;
    g.ph = (p->output.h - 1) * p->stride_h + 3;
    g.pw = (p->output.w - 1) * p->stride_w + 3;
    g.rows = p->stride_h == 1 ? g.ph : p->output.h + 1;
    g.len = p->stride_w == 1 ? g.pw : p->output.w + 1;
    g.phase = (size_t)g.rows * (size_t)g.len + Q8_DW_PIX_SLACK;
    g.plane_bytes = ((size_t)g.ph * (size_t)g.pw + 15u) & ~(size_t)15u;
    return g;
}

/* The pair planes of the padded plane: per phase f (the columns f, f + sw, ...), pair row
 * i of (plane row sh * i, plane row sh * i + 1), the second zero past the plane. */
Q8_INLINE void q8_pix_dw_pairs(const q8_dwconv_params *p, const q8_pix_dw_geometry *g,
                               const uint8_t *plane, int16_t *Q8_RESTRICT pairs, int is_signed)
{
    const int32_t sh = p->stride_h, sw = p->stride_w;
    int32_t f, i;
    if (sh == 1 && sw == 1) {
        /* Pair q is (plane[q], plane[q + PW]): one run over all rows but the last, whose
         * partner is past the plane (so narrow planes widen in whole vectors too). */
        const int32_t most = (g->rows - 1) * g->len;
        q8_pix_fill_pairs(pairs, 0, plane, (size_t)g->pw, 2, most, 0, 1, most, 0, most, 0,
                          is_signed);
        q8_pix_fill_pairs(pairs + 2 * (size_t)most, 0, plane + most, 0, 1, g->len, 0, 1,
                          g->len, 0, g->len, 0, is_signed);
        return;
    }
    for (f = 0; f < sw; f++) {
        const int32_t inside = q8_pix_first_at(f, g->pw, sw, g->len);
        for (i = 0; i < g->rows; i++) {
            const int32_t r = sh * i;
            q8_pix_fill_pairs(pairs + 2 * ((size_t)f * g->phase + (size_t)i * (size_t)g->len),
                              0, plane + (size_t)r * (size_t)g->pw, (size_t)g->pw,
                              r + 1 < g->ph ? 2 : 1, g->pw, f, sw, g->len, 0, inside, 0,
                              is_signed);
        }
    }
}

/* Channel c's six tap pairs (weights w[kh * 3 + kw]). */
Q8_INLINE q8_pix_dw_taps q8_pix_dw_taps_of(const q8_dwconv_params *p,
                                           const q8_pix_dw_geometry *g, const int16_t *w)
{
    const int32_t sh = p->stride_h, sw = p->stride_w;
    const ptrdiff_t third_row = (ptrdiff_t)(2 / sh) * g->len;
    q8_pix_dw_taps taps;
    int32_t kw;
    for (kw = 0; kw < 3; kw++) {
        const ptrdiff_t at = (ptrdiff_t)(kw % sw) * (ptrdiff_t)g->phase + kw / sw;
        taps.offset[2 * kw] = at;
        taps.weights[2 * kw] = q8_pix_dw_pair(w[kw], w[3 + kw]);
        taps.offset[2 * kw + 1] = at + third_row;
        taps.weights[2 * kw + 1] = q8_pix_dw_pair(w[6 + kw], 0);
    }
    return taps;
}

Q8_INLINE void q8_dwconv_pix(const q8_dwconv_params *p, const uint8_t *x, uint8_t *y,
                             uint8_t *Q8_RESTRICT scratch, int is_signed, int mode)
{
    const int32_t C = p->input.c, H = p->input.h, W = p->input.w;
    const int32_t OH = p->output.h, OW = p->output.w;
    const q8_pix_dw_geometry g = q8_pix_dw_geometry_of(p);
    const int32_t count = p->channel_list != NULL ? p->channel_count : C;
    const int32_t flat = (OH - 1) * g.len + OW;
    int16_t *pairs = (int16_t *)(void *)(scratch + g.plane_bytes);
    const int isa = q8_pix_isa();
    q8_pix_dw_products_fn *products = q8_pix_dw_products_for(isa);
    /* Runs of whole flat rows where they fit, so every run starts a row: with AVX-512 the
     * outputs are then packed out of each run by one pattern of masks, computed once. */
    const int32_t run_len = g.len <= Q8_DW_PIX_RUN ? Q8_DW_PIX_RUN / g.len * g.len
                                                   : Q8_DW_PIX_RUN;
    const int compress = Q8_PIX_COMPRESS(isa, mode) && g.len <= Q8_DW_PIX_RUN;
    int32_t sums[Q8_DW_PIX_RUN];
    uint8_t run[Q8_DW_PIX_RUN + Q8_PIX_RUN_SLACK];
    uint16_t masks[Q8_DW_PIX_RUN / 16];
    int32_t n, i_c, f, q0;
    q8_pad_border(H, W, p->pad_top, p->pad_left, g.ph, g.pw, (uint8_t)p->pad_value, scratch);
    for (f = 0; f < p->stride_w; f++) {
        /* The slack the last vectors of a run read (their outputs are dropped). */
        memset(pairs + 2 * ((size_t)f * g.phase + (size_t)g.rows * (size_t)g.len), 0,
               Q8_DW_PIX_SLACK * 2 * sizeof(int16_t));
    }
    if (compress) {
        q8_pix_row_masks(g.len, OW, run_len, masks);
    }
    for (n = 0; n < p->input.n; n++) {
        for (i_c = 0; i_c < count; i_c++) {
            const int32_t c = p->channel_list != NULL ? p->channel_list[i_c] : i_c;
            const uint8_t *x_c = x + ((size_t)n * (size_t)C + (size_t)c) * (size_t)(H * W);
            uint8_t *y_c = y + ((size_t)n * (size_t)C + (size_t)c) * (size_t)(OH * OW);
            const q8_pix_dw_taps taps = q8_pix_dw_taps_of(p, &g, p->weights + (size_t)i_c * 9u);
            const q8_row_requant rq = q8_row_constants(&p->requant, i_c, mode);
#if defined(Q8_PIX_X86)
            uint8_t *out = y_c; /* where packed outputs go on */
#endif
            q8_copy_channel(x_c, H, W, p->pad_top, p->pad_left, g.ph, g.pw, 0u, scratch);
            q8_pix_dw_pairs(p, &g, scratch, pairs, is_signed);
            for (q0 = 0; q0 < flat; q0 += run_len) {
                const int32_t k = flat - q0 < run_len ? flat - q0 : run_len;
                /* Whole vectors: k rounded up to 32 lanes, inside the slack. */
                products(pairs + 2 * (size_t)q0, &taps, (k + 31) & ~31, sums);
#if defined(Q8_PIX_X86)
                if (compress) {
                    out += q8_pix_requant_compress_avx512(&rq, sums, p->bias[i_c], k, masks,
                                                          out);
                    continue;
                }
#endif
                q8_pix_requantize_run(&rq, sums, p->bias[i_c], k, run, mode, isa);
                q8_pix_scatter_rows(run, q0, k, g.len, OW, y_c, y_c + (size_t)(OH * OW));
            }
        }
    }
}

/* The exported kernels (dwconv_3x3_pix.c). */
#define Q8_DW_PIX_CALL(RQ)                                                                \
    q8_dwconv_pix(params, (const uint8_t *)input, (uint8_t *)output, (uint8_t *)scratch,  \
                  is_signed, RQ)
#define Q8_DEFINE_DWCONV_PIX(NAME, TX, SIGNED, MODE)                                       \
    void NAME(const q8_dwconv_params *params, const TX *input, void *output,              \
              void *Q8_RESTRICT scratch)                                                  \
    {                                                                                     \
        const int is_signed = SIGNED;                                                     \
        Q8_CALL_FOR_LAYER_MODE(&params->requant, MODE, Q8_DW_PIX_CALL)                    \
    }

#endif /* Q8_DWCONV_PIX_H */
