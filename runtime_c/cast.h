/* cast.h - Cast to float32 (cast.c). */
#ifndef Q8_CAST_H
#define Q8_CAST_H

#include "q8_runtime.h"

typedef struct {
    int32_t size;
} q8_cast_params;

/* Input and output may not overlap (their element sizes differ). */
void q8_cast_u8_f32(const q8_cast_params *params, const uint8_t *Q8_RESTRICT input,
                    float *Q8_RESTRICT output);
void q8_cast_s8_f32(const q8_cast_params *params, const int8_t *Q8_RESTRICT input,
                    float *Q8_RESTRICT output);
void q8_cast_s32_f32(const q8_cast_params *params, const int32_t *Q8_RESTRICT input,
                     float *Q8_RESTRICT output);

#endif /* Q8_CAST_H */
