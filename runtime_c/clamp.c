/* clamp.c - Relu and Clip on int8/uint8/int16/uint16 tensors: exact integer clamps. Input and output
 * may be the same buffer (written in place): nothing is restrict-qualified. */
#include "q8_arith.h"
#include "q8_runtime.h"

Q8_INLINE void clamp(const q8_clamp_params *p, const uint8_t *x, uint8_t *y, int is_signed)
{
    const int32_t size = p->size, lo = p->min, hi = p->max;
    int32_t i;
    for (i = 0; i < size; i++) {
        int32_t v = is_signed ? (int32_t)(int8_t)x[i] : (int32_t)x[i];
        v = v < lo ? lo : v;
        v = v > hi ? hi : v;
        y[i] = (uint8_t)v;
    }
}

void q8_clamp_u8(const q8_clamp_params *params, const uint8_t *input, uint8_t *output)
{
    clamp(params, input, output, 0);
}

void q8_clamp_s8(const q8_clamp_params *params, const int8_t *input, int8_t *output)
{
    clamp(params, (const uint8_t *)input, (uint8_t *)output, 1);
}

#define Q8_CLAMP16(NAME, T)                                                    \
    void NAME(const q8_clamp_params *params, const T *input, T *output)       \
    {                                                                          \
        const int32_t size = params->size, lo = params->min, hi = params->max; \
        int32_t i;                                                             \
        for (i = 0; i < size; i++) {                                           \
            int32_t v = (int32_t)input[i];                                     \
            v = v < lo ? lo : v;                                               \
            v = v > hi ? hi : v;                                               \
            output[i] = (T)v;                                                  \
        }                                                                      \
    }

Q8_CLAMP16(q8_clamp_s16, int16_t)
Q8_CLAMP16(q8_clamp_u16, uint16_t)

void q8_clamp_f32(const q8_clamp_f32_params *params, const float *input, float *output)
{
    const int32_t size = params->size;
    const float lo = params->min, hi = params->max;
    int32_t i;
    for (i = 0; i < size; i++) {
        float v = input[i];
        v = v < lo ? lo : v;
        v = v > hi ? hi : v;
        output[i] = v;
    }
}
