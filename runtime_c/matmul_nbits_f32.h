/* matmul_nbits_f32.h - a float product with 8-bit constant weights as ONNX Runtime runs it
 * after rewriting it into com.microsoft MatMulNBits (bits 8, blocks of 32, accuracy level
 * 4): each row of A quantized to int8 per block of 32 at run time, integer dot products,
 * then MLAS's AVX-512 float reduction (matmul_nbits_f32.c). */
#ifndef Q8_MATMUL_NBITS_F32_H
#define Q8_MATMUL_NBITS_F32_H

#include <stddef.h>
#include <stdint.h>

#include "q8_runtime.h"

#define Q8_NBITS_BLOCK 32

typedef struct {
    int32_t m;                /* rows of A */
    int32_t k;                /* columns of A, rows of B */
    int32_t n;                /* columns of B */
    int32_t blocks;           /* ceil(k / 32) */
    const uint8_t *weights;   /* [n][blocks * 32]: B as unsigned (int8 + 128), zero padded */
    const float *scale;       /* [n]: B's scale per column */
    const float *weight_sums; /* [n]: f32(-scale * zero point), the zero point unsigned */
    const float *bias;        /* [n], or NULL */
} q8_matmul_nbits_params;

/* The scratch, in bytes: one row of A quantized (blocks * 32 int8), its block scales and
 * block sums (floats). */
static inline size_t q8_matmul_nbits_scratch_bytes(const q8_matmul_nbits_params *params)
{
    return (size_t)params->blocks * (Q8_NBITS_BLOCK + 2 * sizeof(float));
}

void q8_matmul_nbits_f32(const q8_matmul_nbits_params *params, const float *Q8_RESTRICT input,
                         float *Q8_RESTRICT output, void *Q8_RESTRICT scratch);

#endif /* Q8_MATMUL_NBITS_F32_H */
