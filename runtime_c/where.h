/* where.h - Where with a constant condition on 8-bit tensors (ORT's QLinearWhere):
 * each element takes one branch, through a 256-entry requantization table to the
 * output's quantization (NULL: the branch's bytes as they are). The mask repeats every
 * `period` elements of the output. */
#ifndef Q8_WHERE_H
#define Q8_WHERE_H

#include <stdint.h>

#include "q8_runtime.h"

/* Both branches vary: mask 1 takes x, 0 takes y. */
typedef struct {
    int32_t size;
    int32_t period;
    const uint8_t *mask;
    const uint8_t *table0; /* x's table, or NULL */
    const uint8_t *table1; /* y's table, or NULL */
} q8_where_params;

/* One branch varies: mask 1 takes the input, 0 the constant (already requantized). */
typedef struct {
    int32_t size;
    int32_t period;
    const uint8_t *mask;
    const uint8_t *table0; /* the input's table, or NULL */
    int32_t constant;      /* the output byte of the constant branch */
} q8_where_constant_params;

void q8_where_select(const q8_where_params *params, const void *x,
                     const void *y, void *output);
void q8_where_constant(const q8_where_constant_params *params, const void *input,
                       void *output);

#endif /* Q8_WHERE_H */
