/*
 * activation_f32.c - float32 Sigmoid, Tanh, Exp, Erf, Gelu, Sqrt, Neg, Abs, Pow, LeakyRelu,
 * HardSigmoid and HardSwish (float islands), as ONNX Runtime's CPU provider computes
 * them: MLAS's logistic approximation, Eigen's tanh approximation, MLAS's exp and erf
 * (q8_float.h), the correctly rounded square root, exact negation and absolute value, glibc's
 * powf (q8_libm.h), x or f32(alpha * x), and Eigen's
 * min(f32(f32(alpha * x) + beta), 1) then max(., 0) (no FMA); HardSwish is the function
 * ORT inlines, x * HardSigmoid(x) with alpha 1/6 and beta 0.5.
 */
#include "q8_arith.h"
#include "q8_float.h"
#include "q8_libm.h"
#include "q8_runtime.h"

/*
 * The exact GELU as ORT 1.32 computes com.microsoft Gelu (what its GeluFusion makes of
 * x / sqrt(2) -> Erf -> + 1 -> * x -> * 0.5) and ONNX Gelu: f32(x * f32(1/sqrt(2))),
 * MLAS's erf, then f32(f32(0.5 * x) * f32(erf + 1)) (measured: 0 of 300,001 values differ).
 */
static float gelu_value(float x)
{
    const float e = q8_mlas_erf(q8_mul_unfused(x, 0x1.6a09e6p-1f));
    return q8_mul_unfused(q8_mul_unfused(0.5f, x), (float)(e + 1.0f));
}

/* The kernels that compute one value at a time, by the function of each. */
#define Q8_DEFINE_UNARY_F32(NAME, VALUE)                                                         \
    void NAME(const q8_unary_f32_params *params, const float *Q8_RESTRICT input,                 \
              float *Q8_RESTRICT output)                                                         \
    {                                                                                            \
        int32_t i;                                                                               \
        for (i = 0; i < params->size; i++) {                                                     \
            const float x = input[i];                                                            \
            output[i] = VALUE;                                                                   \
        }                                                                                        \
    }

Q8_DEFINE_UNARY_F32(q8_sigmoid_f32, q8_mlas_logistic(x))
Q8_DEFINE_UNARY_F32(q8_tanh_f32, q8_mlas_tanh(x))
Q8_DEFINE_UNARY_F32(q8_exp_f32, q8_mlas_exp(x))
Q8_DEFINE_UNARY_F32(q8_erf_f32, q8_mlas_erf(x))
Q8_DEFINE_UNARY_F32(q8_gelu_f32, gelu_value(x))
Q8_DEFINE_UNARY_F32(q8_neg_f32, -x)
Q8_DEFINE_UNARY_F32(q8_abs_f32, fabsf(x))

/*
 * IEEE square root (Eigen's sqrtps in ORT): one correct rounding on every target. A
 * negative x gives x86's default NaN (sign set, 0xffc00000), which ARM's VSQRT and
 * soft-float libraries would give otherwise.
 */
void q8_sqrt_f32(const q8_unary_f32_params *params, const float *Q8_RESTRICT input,
                 float *Q8_RESTRICT output)
{
    static const uint32_t x86_default_nan = 0xffc00000u;
    int32_t i;
    for (i = 0; i < params->size; i++) {
        if (input[i] < 0.0f) {
            memcpy(&output[i], &x86_default_nan, sizeof x86_default_nan);
        } else {
            output[i] = sqrtf(input[i]);
        }
    }
}

/*
 * Pow by a scalar exponent (alpha), as ORT computes it: x * x for 2 and (x * x) * x for 3
 * (its own special cases), otherwise the C library's powf (glibc's, q8_libm.h).
 */
void q8_pow_f32(const q8_unary_f32_params *params, const float *Q8_RESTRICT input,
                float *Q8_RESTRICT output)
{
    const float exponent = params->alpha;
    int32_t i;
    for (i = 0; i < params->size; i++) {
        const float x = input[i];
        if (exponent == 2.0f) {
            output[i] = q8_mul_unfused(x, x);
        } else if (exponent == 3.0f) {
            output[i] = q8_mul_unfused(q8_mul_unfused(x, x), x);
        } else {
            output[i] = q8_glibc_powf(x, exponent);
        }
    }
}

void q8_leakyrelu_f32(const q8_unary_f32_params *params, const float *Q8_RESTRICT input,
                      float *Q8_RESTRICT output)
{
    int32_t i;
    for (i = 0; i < params->size; i++) {
        const float x = input[i];
        output[i] = x >= 0.0f ? x : q8_mul_unfused(params->alpha, x);
    }
}

Q8_INLINE float hard_sigmoid(float alpha, float beta, float x)
{
    float v = (float)(q8_mul_unfused(alpha, x) + beta);
    v = v < 1.0f ? v : 1.0f;
    return v > 0.0f ? v : 0.0f;
}

void q8_hardsigmoid_f32(const q8_unary_f32_params *params, const float *Q8_RESTRICT input,
                        float *Q8_RESTRICT output)
{
    int32_t i;
    for (i = 0; i < params->size; i++) {
        output[i] = hard_sigmoid(params->alpha, params->beta, input[i]);
    }
}

void q8_hardswish_f32(const q8_unary_f32_params *params, const float *Q8_RESTRICT input,
                      float *Q8_RESTRICT output)
{
    int32_t i;
    for (i = 0; i < params->size; i++) {
        const float x = input[i];
        output[i] = q8_mul_unfused(x, hard_sigmoid(params->alpha, params->beta, x));
    }
}
