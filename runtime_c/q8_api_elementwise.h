/*
 * q8_api_elementwise.h - elementwise integer kernels: QLinearAdd, QLinearMul, lookup tables
 * and clamps.
 * (q8_runtime.h includes every family's header.)
 */
#ifndef Q8_API_ELEMENTWISE_H
#define Q8_API_ELEMENTWISE_H

#include "q8_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * com.microsoft QLinearAdd, as ORT's AVX2 kernel (bit-exact anywhere through fmaf):
 *   t = fmaf(a, ratio_a, fmaf(b, ratio_b, fixed))          (b_first = 0)
 *   t = fmaf(b, ratio_b, fmaf(a, ratio_a, fixed))          (b_first = 1: ORT's scalar-A path)
 * on the raw 8-bit values, then rounded half to even and saturated. bounded: the
 * generator proved |t| < 2^30, so no value reaches cvtps2dq's overflow (rounded by VCVTR
 * and saturated by SSAT/USAT where the core has them).
 * The _ireq kernels compute the same without floats: the inner fmaf of every byte value
 * is a table of float32 bits (inner_table, indexed by the raw byte of b, or of a when
 * b_first), and the outer one rounds outer * (outer_mult * 2^outer_exp) + inner once,
 * with integers. fast_table (or NULL): the outer term of each byte, then each inner
 * value, as floor(value * 2^20); their sum decides every element not near a half.
 */
typedef struct {
    q8_broadcast shape;
    int32_t b_first;
    float ratio_a;
    float ratio_b;
    float fixed;
    const uint32_t *inner_table;
    int32_t outer_mult;
    int32_t outer_exp;
    int32_t bounded;
    const int32_t *fast_table;
} q8_qadd_params;

void q8_qadd_u8(const q8_qadd_params *params, const uint8_t *a, const uint8_t *b,
                uint8_t *y);
void q8_qadd_s8(const q8_qadd_params *params, const int8_t *a, const int8_t *b, int8_t *y);
void q8_qadd_u8_ireq(const q8_qadd_params *params, const uint8_t *a, const uint8_t *b,
                     uint8_t *y);
void q8_qadd_s8_ireq(const q8_qadd_params *params, const int8_t *a, const int8_t *b,
                     int8_t *y);

/*
 * com.microsoft QLinearMul: t = f32(f32((float)((a - a_zp) * (b - b_zp)) * scale) + y_zp),
 * rounded half to even and saturated (two roundings, never fused). The _ireq kernels do
 * both roundings with integers, from scale = scale_mult * 2^scale_exp.
 */
typedef struct {
    q8_broadcast shape;
    int32_t a_zero_point;
    int32_t b_zero_point;
    float scale;
    int32_t y_zero_point;
    int32_t scale_mult;
    int32_t scale_exp;
} q8_qmul_params;

void q8_qmul_u8(const q8_qmul_params *params, const uint8_t *a, const uint8_t *b,
                uint8_t *y);
void q8_qmul_s8(const q8_qmul_params *params, const int8_t *a, const int8_t *b, int8_t *y);
void q8_qmul_u8_ireq(const q8_qmul_params *params, const uint8_t *a, const uint8_t *b,
                     uint8_t *y);
void q8_qmul_s8_ireq(const q8_qmul_params *params, const int8_t *a, const int8_t *b,
                     int8_t *y);

/* A 256-entry lookup table over raw bytes (int8 by bit pattern): QLinearSigmoid,
   QLinearLeakyRelu, and requantization y = Q(DQ(x)). The tables are computed at
   generation time with ORT's own arithmetic. */
typedef struct {
    int32_t size;
    const uint8_t *table;
} q8_lut_params;

void q8_lut_u8(const q8_lut_params *params, const uint8_t *input, uint8_t *output);
void q8_lut_s8(const q8_lut_params *params, const int8_t *input, int8_t *output);
/* The same over raw bytes, between any two 8-bit types (Requantize int8 -> uint8). */
void q8_lut_bytes(const q8_lut_params *params, const void *input, void *output);

/* A table per channel of [outer, channels, inner]: tables holds channels x 256 bytes. */
typedef struct {
    int32_t outer;
    int32_t channels;
    int32_t inner;
    const uint8_t *tables;
} q8_lut_channels_params;

void q8_lut_channels_u8(const q8_lut_channels_params *params, const uint8_t *input,
                        uint8_t *output);
void q8_lut_channels_s8(const q8_lut_channels_params *params, const int8_t *input,
                        int8_t *output);
/* uint8 in, int8 out or the reverse (a chain quantized to the other type). */
void q8_lut_channels_bytes(const q8_lut_channels_params *params, const void *input,
                           void *output);

/* Elementwise clamp of integer values (Relu and Clip on int8/uint8 tensors). */
typedef struct {
    int32_t size;
    int32_t min;
    int32_t max;
} q8_clamp_params;

void q8_clamp_u8(const q8_clamp_params *params, const uint8_t *input, uint8_t *output);
void q8_clamp_s8(const q8_clamp_params *params, const int8_t *input, int8_t *output);
void q8_clamp_s16(const q8_clamp_params *params, const int16_t *input, int16_t *output);
void q8_clamp_u16(const q8_clamp_params *params, const uint16_t *input, uint16_t *output);

/* Relu and Clip on float32: y = min(max(x, min), max). */
typedef struct {
    int32_t size;
    float min;
    float max;
} q8_clamp_f32_params;

void q8_clamp_f32(const q8_clamp_f32_params *params, const float *input, float *output);

#ifdef __cplusplus
}
#endif

#endif /* Q8_API_ELEMENTWISE_H */
