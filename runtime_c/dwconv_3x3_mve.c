/*
 * dwconv_3x3_mve.c - depthwise QLinearConv with 3x3 kernels on cores with Helium (MVE:
 * Cortex-M55, M85), any stride and padding (q8_dwconv_*_3x3_mve_*).
 *
 * Four output pixels of a row in the lanes of a vector of int32: per tap one widening load
 * of four input bytes (VLDRB.S32 or .U32; a gather at other strides than 1) and one
 * VMLA by the tap's weight, the accumulators starting at the folded bias
 * (bias - x_zp * sum(w), modulo 2^32, as the other depthwise kernels). A layer with padding
 * reads each channel from a plane with its border (q8_pad_border, q8_copy_channel: the
 * padded kernel's scratch); the last four of a row are predicated, so nothing past the row
 * is read or written. The saturating float modes requantize the four at once with the
 * reference's float32 operations (VCVT, VMUL, VCVTN); the others lane by lane as the
 * reference. Without MVE (the host, Q8_NO_MVE or Q8_NO_ASM) plain C loops over the same
 * planes.
 */
#include <string.h>

#include "q8_dwconv.h"

#if Q8_HAS_MVE
/* The four pixels' taps at row + ow * stride + kw: contiguous bytes at stride 1, gathered
 * otherwise; inactive lanes read nothing. */
static inline int32x4_t load_taps(const uint8_t *at, uint32x4_t offsets, int stride,
                                  mve_pred16_t lanes, int is_signed)
{
    if (is_signed) {
        return stride == 1 ? vldrbq_z_s32((const int8_t *)at, lanes)
                           : vldrbq_gather_offset_z_s32((const int8_t *)at, offsets, lanes);
    }
    return vreinterpretq_s32_u32(stride == 1 ? vldrbq_z_u32(at, lanes)
                                             : vldrbq_gather_offset_z_u32(at, offsets, lanes));
}
#endif

/* Output rows of channel i_c from `plane` (row stride `pitch`; its first row and column
 * are the window's first at output (0, 0)), stored at y_c. */
static void mve_rows(const q8_dwconv_params *p, const uint8_t *plane, int32_t pitch,
                     uint8_t *y_c, int32_t i_c, int is_signed, int mode)
{
    const int32_t OH = p->output.h, OW = p->output.w, sh = p->stride_h, sw = p->stride_w;
    const int16_t *w = p->weights + (size_t)i_c * 9u;
    const int32_t bias = p->bias[i_c];
    const q8_row_requant layer = q8_layer_constants(&p->requant);
    const q8_row_requant rq = q8_channel_constants(layer, p->requant.scale, p->requant.mult,
                                                 p->requant.exp,
                                                 p->requant.per_channel ? i_c : 0, mode);
    int32_t oh, ow, t, j;
#if Q8_HAS_MVE
    const int32_t w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], w4 = w[4];
    const int32_t w5 = w[5], w6 = w[6], w7 = w[7], w8 = w[8];
    const uint32x4_t offsets = vmulq_n_u32(vidupq_n_u32(0u, 1), (uint32_t)sw);
    const int saturating = mode == Q8_RQ_FREQ_BOUNDED_S8 || mode == Q8_RQ_FREQ_BOUNDED_U8;
    const int32_t lo = mode == Q8_RQ_FREQ_BOUNDED_S8 ? -128 : 0;
    for (oh = 0; oh < OH; oh++) {
        const uint8_t *r0 = plane + (size_t)(oh * sh) * (size_t)pitch;
        const uint8_t *r1 = r0 + pitch, *r2 = r1 + pitch;
        uint8_t *out = y_c + (size_t)oh * (size_t)OW;
        for (ow = 0; ow < OW; ow += 4) {
            const mve_pred16_t lanes = vctp32q((uint32_t)(OW - ow));
            const size_t at = (size_t)(ow * sw);
            int32x4_t acc = vdupq_n_s32(bias);
            acc = vmlaq_n_s32(acc, load_taps(r0 + at, offsets, sw, lanes, is_signed), w0);
            acc = vmlaq_n_s32(acc, load_taps(r0 + at + 1, offsets, sw, lanes, is_signed), w1);
            acc = vmlaq_n_s32(acc, load_taps(r0 + at + 2, offsets, sw, lanes, is_signed), w2);
            acc = vmlaq_n_s32(acc, load_taps(r1 + at, offsets, sw, lanes, is_signed), w3);
            acc = vmlaq_n_s32(acc, load_taps(r1 + at + 1, offsets, sw, lanes, is_signed), w4);
            acc = vmlaq_n_s32(acc, load_taps(r1 + at + 2, offsets, sw, lanes, is_signed), w5);
            acc = vmlaq_n_s32(acc, load_taps(r2 + at, offsets, sw, lanes, is_signed), w6);
            acc = vmlaq_n_s32(acc, load_taps(r2 + at + 1, offsets, sw, lanes, is_signed), w7);
            acc = vmlaq_n_s32(acc, load_taps(r2 + at + 2, offsets, sw, lanes, is_signed), w8);
            if (saturating) {
                int32x4_t v = vcvtnq_s32_f32(vmulq_n_f32(vcvtq_f32_s32(acc), rq.scale));
                v = vaddq_n_s32(v, rq.zero_point);
                v = vminq_s32(vmaxq_s32(v, vdupq_n_s32(lo)), vdupq_n_s32(lo + 255));
                vstrbq_p_s32((int8_t *)out + ow, v, lanes);
            } else {
                int32_t sums[4];
                vst1q_s32(sums, acc);
                for (j = 0; j < 4 && ow + j < OW; j++) {
                    out[ow + j] = q8_requantize(&rq, sums[j], mode);
                }
            }
        }
    }
    (void)t;
#else
    for (oh = 0; oh < OH; oh++) {
        for (ow = 0; ow < OW; ow++) {
            const uint8_t *at = plane + (size_t)(oh * sh) * (size_t)pitch + (size_t)(ow * sw);
            uint32_t acc = (uint32_t)bias;
            for (t = 0; t < 9; t++) {
                const uint8_t b = at[(size_t)(t / 3) * (size_t)pitch + (size_t)(t % 3)];
                const int32_t v = is_signed ? (int32_t)(int8_t)b : (int32_t)b;
                acc += (uint32_t)(v * w[t]);
            }
            y_c[(size_t)oh * (size_t)OW + (size_t)ow] = q8_requantize(&rq, (int32_t)acc, mode);
        }
    }
    (void)j;
#endif
}

#if Q8_HAS_MVE && Q8_ASM
/*
 * Stride 1 in a saturating float mode, by hand: the padded plane read as one run. The four
 * outputs at flat positions i .. i + 3 of the plane (row pitch PW) take their taps at
 * i + kh * PW + kw, so every tap is one widening load however short the rows; positions
 * past a row's last output are computed and dropped when the rows are copied out. 27
 * instructions per four outputs: nine loads, nine VMLA by the weights (in r4 .. r12), the
 * requantization (VCVT, VMUL, VCVTN, VADD, VMAX, VMIN) and a narrowing store. The widening
 * loads need low base registers: the rows in r0 .. r2, the output in r3.
 */
typedef struct {
    int32_t w[9];
    const uint8_t *rows[3];
    uint8_t *out;
    int32_t groups;
    int32_t bias;
    float scale;
    int32_t zero_point, lo, hi;
} q8_dw_flat_job;

#define Q8_DW_FLAT_ASM(LOAD)                                                               \
    __asm__ volatile(                                                                      \
        "mov r12, %[job]\n\t"                                                              \
        "push {r4-r12, lr}\n\t"                                                            \
        "ldr r0, [r12, #56]\n\t"                                                           \
        "vdup.32 q3, r0\n\t"                                                               \
        "ldr r0, [r12, #60]\n\t"                                                           \
        "vdup.32 q4, r0\n\t"                                                               \
        "ldr r0, [r12, #64]\n\t"                                                           \
        "vdup.32 q5, r0\n\t"                                                               \
        "ldr r0, [r12, #68]\n\t"                                                           \
        "vdup.32 q6, r0\n\t"                                                               \
        "ldr r0, [r12, #72]\n\t"                                                           \
        "vdup.32 q7, r0\n\t"                                                               \
        "ldr lr, [r12, #52]\n\t"                                                           \
        "ldrd r0, r1, [r12, #36]\n\t"                                                      \
        "ldrd r2, r3, [r12, #44]\n\t"                                                      \
        "ldrd r4, r5, [r12, #0]\n\t"                                                       \
        "ldrd r6, r7, [r12, #8]\n\t"                                                       \
        "ldrd r8, r9, [r12, #16]\n\t"                                                      \
        "ldrd r10, r11, [r12, #24]\n\t"                                                    \
        "ldr r12, [r12, #32]\n\t"                                                          \
        "dls lr, lr\n"                                                                     \
        "1:\n\t"                                                                           \
        LOAD " q0, [r0, #1]\n\t"                                                           \
        "vorr q2, q3, q3\n\t"                                                              \
        LOAD " q1, [r0, #2]\n\t"                                                           \
        "vmla.s32 q2, q0, r5\n\t"                                                          \
        LOAD " q0, [r0], #4\n\t"                                                           \
        "vmla.s32 q2, q1, r6\n\t"                                                          \
        LOAD " q1, [r1, #1]\n\t"                                                           \
        "vmla.s32 q2, q0, r4\n\t"                                                          \
        LOAD " q0, [r1, #2]\n\t"                                                           \
        "vmla.s32 q2, q1, r8\n\t"                                                          \
        LOAD " q1, [r1], #4\n\t"                                                           \
        "vmla.s32 q2, q0, r9\n\t"                                                          \
        LOAD " q0, [r2, #1]\n\t"                                                           \
        "vmla.s32 q2, q1, r7\n\t"                                                          \
        LOAD " q1, [r2, #2]\n\t"                                                           \
        "vmla.s32 q2, q0, r11\n\t"                                                         \
        LOAD " q0, [r2], #4\n\t"                                                           \
        "vmla.s32 q2, q1, r12\n\t"                                                         \
        "vmla.s32 q2, q0, r10\n\t"                                                         \
        "vcvt.f32.s32 q2, q2\n\t"                                                          \
        "vmul.f32 q2, q2, q4\n\t"                                                          \
        "vcvtn.s32.f32 q2, q2\n\t"                                                         \
        "vadd.i32 q2, q2, q5\n\t"                                                          \
        "vmax.s32 q2, q2, q6\n\t"                                                          \
        "vmin.s32 q2, q2, q7\n\t"                                                          \
        "vstrb.32 q2, [r3], #4\n\t"                                                        \
        "le lr, 1b\n\t"                                                                    \
        "pop {r4-r12, lr}\n\t"                                                             \
        :                                                                                  \
        : [job] "r"(&job)                                                                  \
        : "r0", "r1", "r2", "r3", "r12", "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7",   \
          "s8", "s9", "s10", "s11", "s12", "s13", "s14", "s15", "s16", "s17", "s18",       \
          "s19", "s20", "s21", "s22", "s23", "s24", "s25", "s26", "s27", "s28", "s29",     \
          "s30", "s31", "cc", "memory")

/* Channel i_c from its padded plane (PW bytes a row, 16 bytes of slack after it) into
 * `flat`, then its rows out to y_c. */
static void flat_rows(const q8_dwconv_params *p, const uint8_t *plane, int32_t PW,
                      uint8_t *flat, uint8_t *y_c, int32_t i_c, int is_signed, int mode)
{
    const int32_t OH = p->output.h, OW = p->output.w;
    const q8_row_requant rq = q8_channel_constants(q8_layer_constants(&p->requant),
                                                 p->requant.scale, p->requant.mult,
                                                 p->requant.exp,
                                                 p->requant.per_channel ? i_c : 0, mode);
    q8_dw_flat_job job;
    int32_t t;
    for (t = 0; t < 9; t++) {
        job.w[t] = p->weights[(size_t)i_c * 9u + (size_t)t];
    }
    job.rows[0] = plane;
    job.rows[1] = plane + PW;
    job.rows[2] = plane + 2 * PW;
    job.out = flat;
    job.groups = ((OH - 1) * PW + OW + 3) / 4;
    job.bias = p->bias[i_c];
    job.scale = rq.scale;
    job.zero_point = rq.zero_point;
    job.lo = mode == Q8_RQ_FREQ_BOUNDED_S8 ? -128 : 0;
    job.hi = job.lo + 255;
    if (is_signed) {
        Q8_DW_FLAT_ASM("vldrb.s32");
    } else {
        Q8_DW_FLAT_ASM("vldrb.u32");
    }
    q8_copy_rows_mve(flat, PW, y_c, OW, OW, OH);
}
#define Q8_DW_FLAT 1
#else
#define Q8_DW_FLAT 0
#endif

static void dwconv_3x3_mve(const q8_dwconv_params *p, const uint8_t *x, uint8_t *y,
                           uint8_t *Q8_RESTRICT scratch, int is_signed, int mode)
{
    const int32_t C = p->input.c, H = p->input.h, W = p->input.w;
    const int32_t OH = p->output.h, OW = p->output.w;
    const int32_t PH = (OH - 1) * p->stride_h + 3, PW = (OW - 1) * p->stride_w + 3;
    /* Layers with padding and every stride-1 layer copy each channel into the padded
     * plane before writing its outputs (the generator lets output plane c take input
     * plane c's place there); the others read the channel where it is. */
    const int padded = p->pad_top > 0 || p->pad_left > 0 || PH > H || PW > W ||
                       (p->stride_h == 1 && p->stride_w == 1);
    const int32_t count = p->channel_list != NULL ? p->channel_count : C;
    /* stride 1 in a saturating mode: the flat run by hand, from the padded plane */
    const int flat = Q8_DW_FLAT && p->stride_h == 1 && p->stride_w == 1 &&
                     (mode == Q8_RQ_FREQ_BOUNDED_S8 || mode == Q8_RQ_FREQ_BOUNDED_U8);
    int32_t n, i_c;
    if (padded || flat) {
        q8_pad_border(H, W, p->pad_top, p->pad_left, PH, PW, (uint8_t)p->pad_value, scratch);
    }
    for (n = 0; n < p->input.n; n++) {
        for (i_c = 0; i_c < count; i_c++) {
            const int32_t c = p->channel_list != NULL ? p->channel_list[i_c] : i_c;
            const uint8_t *x_c = x + ((size_t)n * (size_t)C + (size_t)c) * (size_t)(H * W);
            uint8_t *y_c = y + ((size_t)n * (size_t)C + (size_t)c) * (size_t)(OH * OW);
#if Q8_DW_FLAT
            if (flat) {
                q8_copy_channel(x_c, H, W, p->pad_top, p->pad_left, PH, PW, 0u, scratch);
                flat_rows(p, scratch, PW, scratch + (size_t)(PH * PW) + 16u, y_c, i_c,
                          is_signed, mode);
                continue;
            }
#endif
            if (padded) {
                q8_copy_channel(x_c, H, W, p->pad_top, p->pad_left, PH, PW, 0u, scratch);
                mve_rows(p, scratch, PW, y_c, i_c, is_signed, mode);
            } else {
                mve_rows(p, x_c, W, y_c, i_c, is_signed, mode);
            }
        }
    }
}

#define Q8_DW_MVE_CALL(RQ)                                                                 \
    dwconv_3x3_mve(params, (const uint8_t *)input, (uint8_t *)output, (uint8_t *)scratch,  \
                   is_signed, RQ)
#define Q8_DEFINE_DWCONV_MVE(NAME, TX, SIGNED, MODE)                                       \
    void NAME(const q8_dwconv_params *params, const TX *input, void *output,              \
              void *Q8_RESTRICT scratch)                                                  \
    {                                                                                     \
        const int is_signed = SIGNED;                                                     \
        Q8_CALL_FOR_LAYER_MODE(&params->requant, MODE, Q8_DW_MVE_CALL)                    \
    }

Q8_DEFINE_DWCONV_MVE(q8_dwconv_u8_3x3_mve_freq, uint8_t, 0, Q8_RQ_FREQ)
Q8_DEFINE_DWCONV_MVE(q8_dwconv_s8_3x3_mve_freq, int8_t, 1, Q8_RQ_FREQ)
Q8_DEFINE_DWCONV_MVE(q8_dwconv_u8_3x3_mve_ireq, uint8_t, 0, Q8_RQ_IREQ)
Q8_DEFINE_DWCONV_MVE(q8_dwconv_s8_3x3_mve_ireq, int8_t, 1, Q8_RQ_IREQ)
