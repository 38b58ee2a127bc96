/*
 * q8_api_movement.h - kernels that move bytes: Concat, Transpose, row bands and copies.
 * (q8_runtime.h includes every family's header.)
 */
#ifndef Q8_API_MOVEMENT_H
#define Q8_API_MOVEMENT_H

#include "q8_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * One input of a Concat: outer blocks of block bytes, written at out_offset + o *
 * out_stride bytes of the output; through table (1-byte elements) when the input is
 * requantized, copied otherwise.
 */
typedef struct {
    int32_t outer;
    int32_t block;
    int32_t out_stride;
    int32_t out_offset;
    const uint8_t *table;
} q8_concat_params;

void q8_concat_slice(const q8_concat_params *params, const void *Q8_RESTRICT input,
                     void *Q8_RESTRICT output);

/*
 * Transpose of a tensor of up to Q8_MAX_RANK dimensions. For each output axis,
 * in_stride is the input stride (in elements) of the input axis it comes from.
 */
typedef struct {
    int32_t rank;
    int32_t element_size; /* bytes: 1, 2, 4 or 8 */
    int32_t out_shape[Q8_MAX_RANK];
    int32_t in_stride[Q8_MAX_RANK];
} q8_transpose_params;

void q8_transpose(const q8_transpose_params *params, const void *Q8_RESTRICT input,
                  void *Q8_RESTRICT output);

/* Each of `batches` row-major [rows][cols] matrices to [cols][rows] (NHWC <-> NCHW).
 * Output column c = cols - 1 is written after every element of its tile's rows is read
 * (three columns of bytes: of its row),
 * so the output may start up to (cols - 1) * rows elements before the input (codegen
 * plans a model's NHWC input transposed that way); input and output are not
 * restrict-qualified. */
typedef struct {
    int32_t batches;
    int32_t rows;
    int32_t cols;
    int32_t element_size; /* bytes */
} q8_transpose_2d_params;

void q8_transpose_2d(const q8_transpose_2d_params *params, const void *input, void *output);

/*
 * Row bands (generate --memory min, rows.c): a block of layers computed a few rows at a
 * time. Tensors are NCHW with n = 1, `planes` planes of rows of `row_bytes` bytes; the
 * band buffers hold a window of rows of each plane. Source rows
 * [src_first, src_first + count) go to destination rows [dst_first, dst_first + count);
 * the window and fill kernels write `pad` (a zero point) into every other row they
 * own, which is the padding of the convolutions that read them. No pointer is
 * restrict-qualified: a window may be written over rows of its source already read
 * (the planner gives later buffers the read rows of a banded block's input).
 */
typedef struct {
    int32_t planes;
    int32_t row_bytes;
    int32_t src_rows;  /* rows per plane of the source */
    int32_t dst_rows;  /* rows per plane of the destination */
    int32_t src_first;
    int32_t dst_first;
    int32_t count;
    int32_t pad;
} q8_rows_params;

/* dst: the source's rows, pad elsewhere. */
void q8_rows_window(const q8_rows_params *params, const void *src,
                    void *dst);
/* dst: pad. */
void q8_rows_fill(const q8_rows_params *params, void *dst);
/* dst: prev (in place, or copied), with the fresh rows written over it; the first
 * band of a tensor writes into an unset buffer (no prev). */
void q8_rows_place(const q8_rows_params *params, const void *prev,
                   const void *fresh, void *dst);
void q8_rows_place_first(const q8_rows_params *params, const void *fresh,
                         void *dst);

/* Byte copy, for graph outputs that are graph inputs or constants. */
typedef struct {
    size_t bytes;
} q8_copy_params;

void q8_copy(const q8_copy_params *params, const void *Q8_RESTRICT input,
             void *Q8_RESTRICT output);

#ifdef __cplusplus
}
#endif

#endif /* Q8_API_MOVEMENT_H */
