/* argmax.c - ArgMax and ArgMin (argmax.h), in ORT's order: each value against the best
 * so far from the first one, strictly better (or better or equal for the last index),
 * so a NaN first stays the answer and later NaNs are never taken. */
#include "argmax.h"

#define Q8_ARG_DEFINE(name, type, better)                                               \
    void name(const q8_arg_params *params, const type *Q8_RESTRICT input,               \
              int64_t *Q8_RESTRICT output)                                              \
    {                                                                                   \
        const size_t inner = (size_t)params->inner;                                     \
        int32_t o, l, i;                                                                \
        for (o = 0; o < params->outer; o++) {                                           \
            const type *block = input + (size_t)o * (size_t)params->length * inner;     \
            for (i = 0; i < params->inner; i++) {                                       \
                type best = block[i];                                                   \
                int32_t at = 0;                                                         \
                for (l = 1; l < params->length; l++) {                                  \
                    const type v = block[(size_t)l * inner + (size_t)i];                \
                    if ((v better best) || (params->last && v == best)) {               \
                        best = v;                                                       \
                        at = l;                                                         \
                    }                                                                   \
                }                                                                       \
                output[(size_t)o * inner + (size_t)i] = (int64_t)at;                    \
            }                                                                           \
        }                                                                               \
    }

Q8_ARG_DEFINE(q8_argmax_u8, uint8_t, >)
Q8_ARG_DEFINE(q8_argmax_s8, int8_t, >)
Q8_ARG_DEFINE(q8_argmax_f32, float, >)
Q8_ARG_DEFINE(q8_argmin_u8, uint8_t, <)
Q8_ARG_DEFINE(q8_argmin_s8, int8_t, <)
Q8_ARG_DEFINE(q8_argmin_f32, float, <)
