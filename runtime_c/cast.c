/* cast.c - Cast to float32: exact for 8-bit values; an int32 beyond 2^24 rounds to
 * nearest even, as C's conversion and ORT's static_cast<float> do. */
#include "cast.h"

#define Q8_CAST_DEFINE(name, type)                                                      \
    void name(const q8_cast_params *params, const type *Q8_RESTRICT input,              \
              float *Q8_RESTRICT output)                                                \
    {                                                                                   \
        int32_t i;                                                                      \
        for (i = 0; i < params->size; i++) {                                            \
            output[i] = (float)input[i];                                                \
        }                                                                               \
    }

Q8_CAST_DEFINE(q8_cast_u8_f32, uint8_t)
Q8_CAST_DEFINE(q8_cast_s8_f32, int8_t)
Q8_CAST_DEFINE(q8_cast_s32_f32, int32_t)
