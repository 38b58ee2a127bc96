/*
 * dwconv_3x3_gather.c - depthwise QLinearConv with 3x3 kernels on a window of rows
 * gathered from up to three bands (q8_dwconv_*_3x3_gather_*, generate --memory min): the
 * bands of rows a layer of a banded block computed, each a tensor of its own. Like the
 * padded kernel (q8_dwconv.h), each channel is copied into the scratch plane with its
 * border before one loop computes every output; here the rows come from the bands, so
 * the window itself is never written: a reader of three rows of a 48-wide, 16-channel
 * tensor needs 2,304 bytes less and copies it once instead of twice.
 */
#include <string.h>

#include "q8_dwconv.h"

/* Channel c of the window into the padded plane: row r from its band, or padding. */
Q8_NO_MEMCPY_LOOPS static void gather_channel(const q8_dwconv_gather_params *g,
                                              const uint8_t *const sources[3], int32_t c,
                                              int32_t PW, uint32_t flip, uint8_t pad,
                                              uint8_t *padded)
{
    const int32_t H = g->conv.input.h, W = g->conv.input.w, pl = g->conv.pad_left;
    const int32_t cols = W < PW - pl ? W : PW - pl;
    int32_t r;
    for (r = 0; r < H; r++) {
        const int32_t s = g->row_source[r];
        uint8_t *dst = padded + (size_t)r * (size_t)PW + pl;
        if (s < 0) {
            memset(dst, pad, (size_t)cols);
        } else {
            const size_t row = (size_t)c * (size_t)g->source_rows[s] + (size_t)g->row_index[r];
            q8_copy_row(sources[s] + row * (size_t)W, cols, flip, dst);
        }
    }
}

Q8_INLINE void dwconv_3x3_gather(const q8_dwconv_gather_params *g,
                                 const uint8_t *const sources[3], uint8_t *y,
                                 uint8_t *Q8_RESTRICT scratch, int is_signed, int mode)
{
    const q8_dwconv_params *p = &g->conv;
    const int32_t H = p->input.h, W = p->input.w;
    const int32_t OH = p->output.h, OW = p->output.w;
    const int32_t PH = (OH - 1) * p->stride_h + 3, PW = (OW - 1) * p->stride_w + 3;
    const int32_t count = p->channel_list != NULL ? p->channel_count : p->input.c;
    /* the offset plane's bytes: int8 as x + 128 */
    const uint32_t flip = Q8_DW_OFFSET_PLANE && is_signed ? 0x80808080u : 0u;
    const uint8_t pad = (uint8_t)((uint32_t)p->pad_value ^ flip);
    int32_t i_c;
    q8_pad_border(H, W, 0, p->pad_left, PH, PW, pad, scratch);
    for (i_c = 0; i_c < count; i_c++) {
        const int32_t c = p->channel_list != NULL ? p->channel_list[i_c] : i_c;
        uint8_t *y_c = y + (size_t)c * (size_t)(OH * OW);
        const int16_t *wc = p->weights + (size_t)i_c * 9u;
        gather_channel(g, sources, c, PW, flip, pad, scratch);
#if Q8_DW_OFFSET_PLANE
        q8_offset_rows(p, scratch, PW, y_c, i_c, wc, is_signed, mode);
#else
        q8_interior_rows(p, scratch, PW, 0, 0, y_c, i_c, wc, is_signed, mode);
#endif
    }
}

/* The requantization mode is settled once per call: the saturating VCVTR forms where
 * the layer's range allows. */
#define Q8_DW_GATHER_CALL(RQ)                                                              \
    dwconv_3x3_gather(params, sources, (uint8_t *)output, (uint8_t *)scratch, is_signed, RQ)
#define Q8_DEFINE_DWCONV_GATHER(NAME, TX, SIGNED, MODE)                                   \
    void NAME(const q8_dwconv_gather_params *params, const TX *x0, const TX *x1,          \
              const TX *x2, void *output, void *Q8_RESTRICT scratch)                      \
    {                                                                                     \
        const uint8_t *const sources[3] = {(const uint8_t *)x0, (const uint8_t *)x1,      \
                                           (const uint8_t *)x2};                          \
        const int is_signed = SIGNED;                                                     \
        Q8_CALL_FOR_LAYER_MODE(&params->conv.requant, MODE, Q8_DW_GATHER_CALL)            \
    }

Q8_DEFINE_DWCONV_GATHER(q8_dwconv_u8_3x3_gather_freq, uint8_t, 0, Q8_RQ_FREQ)
Q8_DEFINE_DWCONV_GATHER(q8_dwconv_s8_3x3_gather_freq, int8_t, 1, Q8_RQ_FREQ)
Q8_DEFINE_DWCONV_GATHER(q8_dwconv_u8_3x3_gather_ireq, uint8_t, 0, Q8_RQ_IREQ)
Q8_DEFINE_DWCONV_GATHER(q8_dwconv_s8_3x3_gather_ireq, int8_t, 1, Q8_RQ_IREQ)
