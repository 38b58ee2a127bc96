/*
 * q8_types.h - what every kernel family of the runtime shares: the restrict keyword,
 * the per-layer marks, tensor shapes, sliding windows, requantization parameters and
 * numpy broadcasting.
 */
#ifndef Q8_TYPES_H
#define Q8_TYPES_H

#include "q8_names.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define Q8_RESTRICT __restrict
#else
#define Q8_RESTRICT restrict
#endif

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Per-layer instruction counting (onnx2mcu run --count-instructions --per-layer) builds
 * the model with Q8_LAYER_MARKS: every layer then starts with a call to the harness's
 * q8_layer_mark(). Otherwise the marks compile to nothing.
 */
#ifdef Q8_LAYER_MARKS
void q8_layer_mark(void);
#if defined(__GNUC__) && defined(__riscv)
/* On RV32 a call that clobbers only ra (q8_layer_mark is a bare ret): a C call would
   make the compiler keep the model function's values in other registers around the
   marks, and the marked build would run instructions the unmarked one does not. */
#define Q8_LAYER_MARK() __asm__ volatile("call q8_layer_mark" : : : "ra", "memory")
#else
#define Q8_LAYER_MARK() q8_layer_mark()
#endif
#else
#define Q8_LAYER_MARK() ((void)0)
#endif

/* Shape of a 4-D NCHW tensor. 1-D convolutions use h = 1. */
typedef struct {
    int32_t n;
    int32_t c;
    int32_t h;
    int32_t w;
} q8_dims;

/*
 * A sliding window over an NCHW tensor (convolutions and pools). 1-D windows use
 * kernel_h = stride_h = dilation_h = 1 and pad_top = 0. Leading pads may be negative
 * (ORT's SAME padding when kernel < stride).
 */
typedef struct {
    int32_t kernel_h;
    int32_t kernel_w;
    int32_t stride_h;
    int32_t stride_w;
    int32_t dilation_h;
    int32_t dilation_w;
    int32_t pad_top;
    int32_t pad_left;
} q8_window;

/*
 * Requantization of int32 accumulators to 8 bits, per tensor or per output channel.
 *   freq kernels read scale[] (float32, exactly the scale ORT computes);
 *   ireq kernels read mult[] and exp[] with scale = mult * 2^exp, |mult| < 2^24.
 * The result is clamped to [act_min, act_max] (the full 8-bit range unless an
 * activation was folded in) and offset by zero_point.
 */
typedef struct {
    const float *scale;
    const int32_t *mult;
    const int32_t *exp;
    int32_t per_channel; /* 1: index scale/mult/exp by output channel; 0: one value */
    int32_t zero_point;
    int32_t act_min;
    int32_t act_max;
    /* 1: the generator proved |acc * scale| < 2^21 for all inputs (q8_requant_f32_bounded) */
    int32_t bounded;
} q8_requant_params;

/*
 * Numpy broadcasting of two inputs to an output of up to Q8_MAX_RANK dimensions: the
 * element at output index i reads a at sum(i[d] * a_stride[d]) (0 on broadcast axes).
 */
#define Q8_MAX_RANK 8
typedef struct {
    int32_t rank;
    int32_t out_shape[Q8_MAX_RANK];
    int32_t a_stride[Q8_MAX_RANK];
    int32_t b_stride[Q8_MAX_RANK];
} q8_broadcast;

#ifdef __cplusplus
}
#endif

#endif /* Q8_TYPES_H */
