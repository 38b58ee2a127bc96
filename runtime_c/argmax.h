/* argmax.h - ArgMax and ArgMin along one axis, as int64 indices. */
#ifndef Q8_ARGMAX_H
#define Q8_ARGMAX_H

#include "q8_runtime.h"

/* Input [outer, length, inner]; output [outer, inner]: the index along length of the
 * first best value, or of the last one when last is set. */
typedef struct {
    int32_t outer;
    int32_t length;
    int32_t inner;
    int32_t last;
} q8_arg_params;

#define Q8_ARG(name, type)                                                               \
    void name(const q8_arg_params *params, const type *Q8_RESTRICT input,                \
              int64_t *Q8_RESTRICT output);
Q8_ARG(q8_argmax_u8, uint8_t)
Q8_ARG(q8_argmax_s8, int8_t)
Q8_ARG(q8_argmax_f32, float)
Q8_ARG(q8_argmin_u8, uint8_t)
Q8_ARG(q8_argmin_s8, int8_t)
Q8_ARG(q8_argmin_f32, float)
#undef Q8_ARG

#endif /* Q8_ARGMAX_H */
