/*
 * matmul_nbits_f32.c - MatMulNBits (8-bit weights, blocks of 32, accuracy level 4) as
 * ONNX Runtime 1.32's MLAS computes it on x86-64 with AVX-512 (the VNNI and BW kernels
 * compute alike; measured bit-exact on 2,798 random products), in these steps:
 *
 * 1. Each row of A, per block of 32 values (the last padded with zeros): amax = max |a|,
 *    sa = f32(amax / 127), inv = f32(127 / amax) (0 when amax is 0), q = rne(f32(a * inv))
 *    as int8 (0 where the conversion fails: only when 127 / amax overflows), and the
 *    block sum f32(sa * f32(sum q)).
 * 2. B is unsigned (int8 + 128) with its zero point likewise; per column, the generator
 *    computed f32(-sb * zp).
 * 3. Per column and block j, the int32 dot products of 4 consecutive values (one VNNI
 *    lane), D[j][g] for g < 8, and c[j] = f32(sa[j] * sb).
 * 4. Groups of 4 blocks fill 16 float lanes: lane l (L = l / 4, p = l % 4) takes
 *    src[4L + p % 2] + src[4L + p % 2 + 2] of the 16 dot products of blocks (0, 1) when
 *    p < 2, else of blocks (2, 3); acc16[l] = fma(f32(that), c[its block], acc16[l]).
 * 5. acc8[i] = acc16[i] + acc16[i + 8]; each leftover block j (fewer than 4):
 *    acc8[i] = fma(f32(D[j][i]), c[j], acc8[i]).
 * 6. The 8 lanes reduced as (((x0+x1)+x2)+x3) + (((x4+x5)+x6)+x7) for the columns of
 *    4-column tiles, as ((x0+x4)+(x2+x6)) + ((x1+x5)+(x3+x7)) for the last n % 4.
 * 7. + bias[n]; then t = fma(block sum[j], f32(-sb * zp), t) over the blocks from 0, and
 *    y = f32(t + r).
 */
#include "matmul_nbits_f32.h"

#include "q8_arith.h"
#include "q8_float.h"

/* The block of each of the 16 lanes of a group of 4 blocks. */
static const uint8_t lane_block[16] = {0, 0, 2, 2, 0, 0, 2, 2, 1, 1, 3, 3, 1, 1, 3, 3};

/* rne(f32(a * inv)) as int8: |a * inv| <= 127 unless inv overflowed (then 0, as ORT's
 * conversion to 0x80000000 truncated to its low byte). */
static int8_t quantize_value(float a, float inv)
{
    const float v = q8_mul_unfused(a, inv);
    if (!(v > -128.5f && v < 127.5f)) {
        return 0;
    }
    return (int8_t)q8_round_half_even(v);
}

static void quantize_row(const q8_matmul_nbits_params *p, const float *row, int8_t *q,
                         float *scales, float *sums)
{
    int32_t j, e;
    for (j = 0; j < p->blocks; j++) {
        const int32_t start = j * Q8_NBITS_BLOCK;
        const int32_t len = p->k - start < Q8_NBITS_BLOCK ? p->k - start : Q8_NBITS_BLOCK;
        float amax = 0.0f;
        float inv;
        int32_t sum = 0;
        for (e = 0; e < len; e++) {
            const float a = fabsf(row[start + e]);
            amax = a > amax ? a : amax;
        }
        scales[j] = amax / 127.0f;
        inv = amax != 0.0f ? 127.0f / amax : 0.0f;
        for (e = 0; e < Q8_NBITS_BLOCK; e++) {
            q[start + e] = e < len ? quantize_value(row[start + e], inv) : 0;
            sum += q[start + e];
        }
        sums[j] = q8_mul_unfused(scales[j], (float)sum);
    }
}

/* The dot product of 4 consecutive values from `at`: one VNNI lane, exact in int32. */
static int32_t quad(const int8_t *q, const uint8_t *u, int32_t at)
{
    return (int32_t)q[at] * u[at] + (int32_t)q[at + 1] * u[at + 1] +
           (int32_t)q[at + 2] * u[at + 2] + (int32_t)q[at + 3] * u[at + 3];
}

static float column(const q8_matmul_nbits_params *p, const int8_t *q, const float *scales,
                    const float *sums, int32_t col)
{
    const uint8_t *u = p->weights + (size_t)col * (size_t)p->blocks * Q8_NBITS_BLOCK;
    const float sb = p->scale[col];
    const int32_t groups = p->blocks / 4;
    float acc16[16] = {0.0f};
    float acc8[8];
    float r, t = 0.0f;
    int32_t g, l, j, i;
    for (g = 0; g < groups; g++) {
        float c[4];
        for (j = 0; j < 4; j++) {
            c[j] = q8_mul_unfused(scales[4 * g + j], sb);
        }
        for (l = 0; l < 16; l++) {
            /* 16 dot products of blocks (0, 1) or (2, 3) of the group; this lane adds
             * two of them two apart. */
            const int32_t pair = 4 * g + ((l % 4) < 2 ? 0 : 2);
            const int32_t src = 4 * (l / 4) + (l % 2);
            const int32_t first = (pair + src / 8) * Q8_NBITS_BLOCK + 4 * (src % 8);
            const int32_t second = (pair + (src + 2) / 8) * Q8_NBITS_BLOCK + 4 * ((src + 2) % 8);
            acc16[l] = q8_fmaf((float)(quad(q, u, first) + quad(q, u, second)),
                               c[lane_block[l]], acc16[l]);
        }
    }
    for (i = 0; i < 8; i++) {
        acc8[i] = acc16[i] + acc16[i + 8];
    }
    for (j = 4 * groups; j < p->blocks; j++) {
        const float c = q8_mul_unfused(scales[j], sb);
        for (i = 0; i < 8; i++) {
            acc8[i] = q8_fmaf((float)quad(q, u, j * Q8_NBITS_BLOCK + 4 * i), c, acc8[i]);
        }
    }
    if (col < p->n - p->n % 4) {
        r = (((acc8[0] + acc8[1]) + acc8[2]) + acc8[3]) +
            (((acc8[4] + acc8[5]) + acc8[6]) + acc8[7]);
    } else {
        r = ((acc8[0] + acc8[4]) + (acc8[2] + acc8[6])) +
            ((acc8[1] + acc8[5]) + (acc8[3] + acc8[7]));
    }
    if (p->bias != NULL) {
        r = r + p->bias[col];
    }
    for (j = 0; j < p->blocks; j++) {
        t = q8_fmaf(sums[j], p->weight_sums[col], t);
    }
    return t + r;
}

void q8_matmul_nbits_f32(const q8_matmul_nbits_params *params, const float *Q8_RESTRICT input,
                         float *Q8_RESTRICT output, void *Q8_RESTRICT scratch)
{
    int8_t *q = (int8_t *)scratch;
    float *scales = (float *)(void *)(q + (size_t)params->blocks * Q8_NBITS_BLOCK);
    float *sums = scales + params->blocks;
    int32_t row, col;
    for (row = 0; row < params->m; row++) {
        quantize_row(params, input + (size_t)row * (size_t)params->k, q, scales, sums);
        for (col = 0; col < params->n; col++) {
            output[(size_t)row * (size_t)params->n + (size_t)col] =
                column(params, q, scales, sums, col);
        }
    }
}
