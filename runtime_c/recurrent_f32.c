/*
 * recurrent_f32.c - GRU on float32, computed exactly as ONNX Runtime 1.32's DeepCPU GRU
 * (deep_cpu_gru.cc, rnn_helpers.cc; one thread, x86-64 with FMA3) for a float island.
 *
 * ORT pre-packs W and R (MlasGemmPackB), so every product is MLAS's packed SGEMM: per
 * output, K blocks of 256, each an fmaf chain from 0 in k order, added to C (or C = acc
 * for the first block with beta = 0). Per step t, for one direction:
 *   zrh        = X[t] W^T                                   (beta 0)
 *   zrh[z, r] += h R[z, r]^T                                (beta 1)
 *   r_in       = min(max(zrh_r + (Wbr + Rbr), -20), 20)     (bias sums rounded once)
 *   s          = 0.5f * (1 + p/q)(0.5f * r_in)              (ORT's own tanh polynomial)
 *   linear_before_reset: lin = Rbh + h Rh^T (beta 1; 0 without B);
 *                        zrh_h = zrh_h + (lin * 0.5f) * (1 + p/q)
 *   otherwise:           g = (h * 0.5f) * (1 + p/q); zrh_h += g Rh^T (beta 1)
 *   z          = MLAS logistic(zrh_z + (Wbz + Rbz))
 *   h_in       = min(max(zrh_h + Wbh [+ Rbh when not lbr], -10), 10)
 *   h'         = (1 - z) * (p/q)(h_in) + z * h
 * every operation rounded to float32 once, products never fused with the additions.
 * That is for the default activations (f Sigmoid, g Tanh); each gate's pre-activation
 * is first clamped to [-clip, clip] as ORT's clip_add_bias does (FLT_MAX without the
 * attribute), and other activations take ORT's other gate functions (rnn_gate_*).
 */
#include <math.h>
#include <stddef.h>

#include "q8_arith.h"
#include "q8_dynamic_quant.h"
#include "q8_float.h"
#include "q8_libm.h"
#include "q8_runtime.h"
#include "q8_softfloat.h"
#include "recurrent_f32.h"

#define Q8_GRU_PACKED_STRIDE_K 256

/* out[n] (+)= a . rows[n] for n < count: MLAS's packed SGEMM, one row of A. */
static void packed_product(const float *a, const float *rows, int32_t count, int32_t k,
                           float *out, int accumulate)
{
    int32_t n, k0, i;
    for (n = 0; n < count; n++) {
        const float *row = rows + (size_t)n * (size_t)k;
        int first = !accumulate;
        for (k0 = 0; k0 < k; k0 += Q8_GRU_PACKED_STRIDE_K) {
            const int32_t end = k - k0 < Q8_GRU_PACKED_STRIDE_K ? k : k0 + Q8_GRU_PACKED_STRIDE_K;
            float acc = 0.0f;
            for (i = k0; i < end; i++) {
                acc = q8_fmaf(a[i], row[i], acc);
            }
            out[n] = first ? acc : (float)(out[n] + acc);
            first = 0;
        }
    }
}

/* p / q of rnn_helpers.cc's rational tanh, plain float operations in its order. */
Q8_INLINE float gru_tanh_ratio(float x)
{
    const float x2 = q8_mul_unfused(x, x);
    float p = (float)(q8_mul_unfused(x2, -2.76076847742355e-16f) + 2.00018790482477e-13f);
    float q;
    p = (float)(q8_mul_unfused(x2, p) + -8.60467152213735e-11f);
    p = (float)(q8_mul_unfused(x2, p) + 5.12229709037114e-08f);
    p = (float)(q8_mul_unfused(x2, p) + 1.48572235717979e-05f);
    p = (float)(q8_mul_unfused(x2, p) + 6.37261928875436e-04f);
    p = (float)(q8_mul_unfused(x2, p) + 4.89352455891786e-03f);
    p = q8_mul_unfused(x, p);
    q = (float)(q8_mul_unfused(x2, 1.19825839466702e-06f) + 1.18534705686654e-04f);
    q = (float)(q8_mul_unfused(x2, q) + 2.26843463243900e-03f);
    q = (float)(q8_mul_unfused(x2, q) + 4.89352518554385e-03f);
    return (float)(p / q);
}

Q8_INLINE float gru_clip(float x, float bound)
{
    if (x < -bound) {
        return -bound;
    }
    return x > bound ? bound : x;
}

/* One activation of a recurrent operator: its kind and arguments. */
typedef struct {
    int32_t kind; /* Q8_RNN_* */
    float alpha;
    float beta;
} q8_rnn_activation;

static q8_rnn_activation rnn_activation_at(const int32_t *kinds, const float *alphas,
                                           const float *betas, int32_t at)
{
    q8_rnn_activation a;
    a.kind = kinds[at];
    a.alpha = alphas[at];
    a.beta = betas[at];
    return a;
}

/* ORT's clip_add_bias (bias added, then std::min(clip, x), std::max(-clip, x)) or, without
 * a bias, clip_ignore_bias. */
Q8_INLINE float rnn_clip_bias(float x, const float *bias, float clip)
{
    if (bias != NULL) {
        x = (float)(x + *bias);
        x = x < clip ? x : clip;
        return -clip < x ? x : -clip;
    }
    if (x > clip) {
        return clip;
    }
    return x < -clip ? -clip : x;
}

/* rnn_activation_functors.h's Sigmoid, by the C library's expf (through ScaledTanh). */
static float rnn_exp_sigmoid(float x)
{
    float e;
    if (x >= 0.0f) {
        return (float)(1.0f / (float)(1.0f + q8_glibc_expf(-x)));
    }
    e = q8_glibc_expf(x);
    return (float)(e / (float)(1.0f + e));
}

/* The scalar activations of rnn_activation_functors.h (the "composed" gate functions). */
static float rnn_scalar(const q8_rnn_activation *a, float x)
{
    switch (a->kind) {
    case Q8_RNN_AFFINE:
        return (float)(q8_mul_unfused(a->alpha, x) + a->beta);
    case Q8_RNN_LEAKYRELU:
        return x >= 0.0f ? x : q8_mul_unfused(a->alpha, x);
    case Q8_RNN_THRESHOLDEDRELU:
        return x > a->alpha ? x : 0.0f;
    case Q8_RNN_HARDSIGMOID: {
        const float v = (float)(q8_mul_unfused(a->alpha, x) + a->beta);
        const float lower = 0.0f < v ? v : 0.0f;
        return lower < 1.0f ? lower : 1.0f;
    }
    case Q8_RNN_SOFTSIGN:
        return (float)(x / (float)(1.0f + fabsf(x)));
    case Q8_RNN_SCALEDTANH: /* alpha * (2 * sigmoid(2 * beta * x) - 1) */
        return q8_mul_unfused(a->alpha, (float)(q8_mul_unfused(2.0f, rnn_exp_sigmoid(
            q8_mul_unfused(2.0f, q8_mul_unfused(a->beta, x)))) - 1.0f));
    case Q8_RNN_ELU:
        return x >= 0.0f ? x : q8_mul_unfused(a->alpha, (float)(q8_glibc_expf(x) - 1.0f));
    case Q8_RNN_SOFTPLUS:
        return q8_glibc_logf((float)(1.0f + q8_glibc_expf(x)));
    default:
        return x;
    }
}

/* ReLU as MLAS computes it (maxps(x, 0): 0 unless x > 0). */
Q8_INLINE float rnn_relu(float x)
{
    return x > 0.0f ? x : 0.0f;
}

/* ActivationFuncByName: an activation applied in place (LSTM's gates, GRU's z). */
static float rnn_activate(const q8_rnn_activation *a, float x)
{
    switch (a->kind) {
    case Q8_RNN_SIGMOID:
        return q8_mlas_logistic(x);
    case Q8_RNN_TANH:
        return q8_mlas_tanh(x);
    case Q8_RNN_RELU:
        return rnn_relu(x);
    default:
        return rnn_scalar(a, x);
    }
}

/* GruResetGateFuncByName: gate * f(x). */
static float rnn_gate_reset(const q8_rnn_activation *a, float gate, float x)
{
    switch (a->kind) {
    case Q8_RNN_SIGMOID:
        return q8_mul_unfused(q8_mul_unfused(gate, 0.5f),
                              (float)(1.0f + gru_tanh_ratio(q8_mul_unfused(0.5f,
                                                                           gru_clip(x, 20.0f)))));
    case Q8_RNN_TANH: /* gate * (p / q): measured on ORT 1.32 */
        return q8_mul_unfused(gate, gru_tanh_ratio(gru_clip(x, 10.0f)));
    case Q8_RNN_RELU:
        return q8_mul_unfused(gate, rnn_relu(x));
    default:
        return q8_mul_unfused(gate, rnn_scalar(a, x));
    }
}

/* GruOutputGateFuncByName: (1 - z) * g(x) + z * h. */
static float rnn_gate_output(const q8_rnn_activation *a, float x, float z, float h)
{
    const float keep = (float)(1.0f - z), carried = q8_mul_unfused(z, h);
    float value;
    switch (a->kind) {
    case Q8_RNN_SIGMOID:
        value = q8_mul_unfused(q8_mul_unfused(keep, 0.5f),
                               (float)(1.0f + gru_tanh_ratio(q8_mul_unfused(0.5f,
                                                                            gru_clip(x, 20.0f)))));
        break;
    case Q8_RNN_TANH:
        value = q8_mul_unfused(keep, gru_tanh_ratio(gru_clip(x, 10.0f)));
        break;
    case Q8_RNN_RELU:
        value = q8_mul_unfused(keep, rnn_relu(x));
        break;
    default:
        value = q8_mul_unfused(keep, rnn_scalar(a, x));
        break;
    }
    return (float)(value + carried);
}

/* LstmMergeGatesFuncByName: o * h(C). */
static float rnn_gate_merge(const q8_rnn_activation *a, float cell, float out_gate)
{
    return q8_mul_unfused(rnn_activate(a, cell), out_gate);
}

/* One direction over the whole sequence. y (stride y_step) and y_h may be NULL. */
static void gru_direction(const q8_gru_f32_params *p, int32_t d, int reverse,
                          const float *input, float *y, int32_t y_step, float *y_h,
                          float *scratch)
{
    const int32_t hs = p->hidden_size, in = p->input_size;
    const float *w = p->w + (size_t)d * 3u * (size_t)hs * (size_t)in;
    const float *r = p->r + (size_t)d * 3u * (size_t)hs * (size_t)hs;
    const float *b = p->b != NULL ? p->b + (size_t)d * 6u * (size_t)hs : NULL;
    const q8_rnn_activation act_f = rnn_activation_at(p->activations, p->alphas, p->betas, 2 * d);
    const q8_rnn_activation act_g =
        rnn_activation_at(p->activations, p->alphas, p->betas, 2 * d + 1);
    const q8_rnn_activation *f = &act_f, *g = &act_g;
    float *zrh = scratch, *lin = scratch + 3 * hs, *gated = scratch + 4 * hs;
    float *h = scratch + 5 * hs;
    int32_t step, i;
    for (i = 0; i < hs; i++) {
        h[i] = p->initial_h != NULL ? p->initial_h[(size_t)d * (size_t)hs + (size_t)i] : 0.0f;
    }
    for (step = 0; step < p->seq_length; step++) {
        const int32_t t = reverse ? p->seq_length - 1 - step : step;
        packed_product(input + (size_t)t * (size_t)in, w, 3 * hs, in, zrh, 0);
        packed_product(h, r, 2 * hs, hs, zrh, 1);
        if (p->linear_before_reset) {
            for (i = 0; i < hs; i++) {
                lin[i] = b != NULL ? b[5 * hs + i] : 0.0f;
            }
            packed_product(h, r + (size_t)2 * (size_t)hs * (size_t)hs, hs, hs, lin, b != NULL);
        }
        for (i = 0; i < hs; i++) {
            const float bias = b != NULL ? (float)(b[hs + i] + b[4 * hs + i]) : 0.0f;
            const float x = rnn_clip_bias(zrh[hs + i], b != NULL ? &bias : NULL, p->clip);
            const float reset = rnn_gate_reset(f, p->linear_before_reset ? lin[i] : h[i], x);
            if (p->linear_before_reset) {
                zrh[2 * hs + i] = (float)(zrh[2 * hs + i] + reset);
            } else {
                gated[i] = reset;
            }
        }
        if (!p->linear_before_reset) {
            packed_product(gated, r + (size_t)2 * (size_t)hs * (size_t)hs, hs, hs,
                           zrh + 2 * hs, 1);
        }
        for (i = 0; i < hs; i++) {
            float bias_z = 0.0f, bias_h = 0.0f, z;
            if (b != NULL) {
                bias_z = (float)(b[i] + b[3 * hs + i]);
                bias_h = p->linear_before_reset ? b[2 * hs + i]
                                                : (float)(b[2 * hs + i] + b[5 * hs + i]);
            }
            z = rnn_activate(f, rnn_clip_bias(zrh[i], b != NULL ? &bias_z : NULL, p->clip));
            h[i] = rnn_gate_output(g, rnn_clip_bias(zrh[2 * hs + i], b != NULL ? &bias_h : NULL,
                                                    p->clip), z, h[i]);
        }
        if (y != NULL) {
            for (i = 0; i < hs; i++) {
                y[(size_t)t * (size_t)y_step + (size_t)i] = h[i];
            }
        }
    }
    if (y_h != NULL) {
        for (i = 0; i < hs; i++) {
            y_h[i] = h[i];
        }
    }
}

void q8_gru_f32(const q8_gru_f32_params *params, const float *Q8_RESTRICT input,
                float *Q8_RESTRICT y, float *Q8_RESTRICT y_h, void *Q8_RESTRICT scratch)
{
    const q8_gru_f32_params *p = params;
    const int32_t hs = p->hidden_size, step = p->directions * hs;
    int32_t d;
    for (d = 0; d < p->directions; d++) {
        const int reverse = p->directions == 2 ? d == 1 : p->reverse != 0;
        gru_direction(p, d, reverse, input, y != NULL ? y + (size_t)d * (size_t)hs : NULL, step,
                      y_h != NULL ? y_h + (size_t)d * (size_t)hs : NULL, (float *)scratch);
    }
}

void q8_gru_f32_y(const q8_gru_f32_params *params, const float *Q8_RESTRICT input,
                  float *Q8_RESTRICT y, void *Q8_RESTRICT scratch)
{
    q8_gru_f32(params, input, y, NULL, scratch);
}

void q8_gru_f32_h(const q8_gru_f32_params *params, const float *Q8_RESTRICT input,
                  float *Q8_RESTRICT y_h, void *Q8_RESTRICT scratch)
{
    q8_gru_f32(params, input, NULL, y_h, scratch);
}

/*
 * The 8-bit products of com.microsoft DynamicQuantizeLSTM (deep_cpu_lstm.cc's quantized
 * ComputeGemm, measured on ORT 1.32): the row quantized to uint8 with its own scale and
 * zero point (x: those of the whole input, once; h: those of h, each step), the products
 * exact in int32, then per gate row y = f32((float)acc * f32(a_scale * w_scale[n])),
 * or (accumulate) y = f32(y + that).
 */
typedef struct {
    const void *values; /* [n][k] int8 or uint8 */
    int32_t is_signed;
    int32_t zero_point;
    const float *scale; /* [n] */
} quantized_weights;

/* sum_j a_q[j] * row[j] over the raw 8-bit weights (at most 255 * 255 * k in magnitude:
 * k is bounded so that this fits). */
static int32_t raw_dot(const int16_t *a_q, const quantized_weights *w, size_t row, int32_t k)
{
    int32_t acc = 0, j;
    if (w->is_signed) {
        const int8_t *values = (const int8_t *)w->values + row;
        for (j = 0; j < k; j++) {
            acc += (int32_t)a_q[j] * (int32_t)values[j];
        }
    } else {
        const uint8_t *values = (const uint8_t *)w->values + row;
        for (j = 0; j < k; j++) {
            acc += (int32_t)a_q[j] * (int32_t)values[j];
        }
    }
    return acc;
}

static void quantized_product(const float *a, int32_t k, float a_scale, int32_t a_zp,
                              const quantized_weights *w, int32_t n, float *y,
                              int accumulate, int16_t *a_q)
{
    const float *w_scale = w->scale;
    int64_t a_sum = 0;
    int32_t i, j;
    for (j = 0; j < k; j++) {
        a_q[j] = (int16_t)(q8_dynamic_quantize_value(a[j], a_scale, a_zp) - a_zp);
        a_sum += a_q[j];
    }
    for (i = 0; i < n; i++) {
        /* sum (a - a_zp)(w - w_zp): the weights' zero point once per row, exact in int64
           and within int32 in the end (|w - w_zp| <= 255). */
        const int32_t acc = (int32_t)((int64_t)raw_dot(a_q, w, (size_t)i * (size_t)k, k) -
                                      (int64_t)w->zero_point * a_sum);
        float v;
        v = q8_mul_unfused((float)acc, q8_mul_unfused(a_scale, w_scale[i]));
        y[i] = accumulate ? (float)(y[i] + v) : v;
    }
}

/*
 * LSTM (deep_cpu_lstm.cc, uni_directional_lstm.cc), W and R pre-packed as for GRU. Per
 * step: g = x W^T (beta 0); g += h R^T (beta 1); g += f32(Wb + Rb) per gate, clamped to
 * [-clip, clip]; i, o, f = f (MLAS logistic by default); c~ = g (MLAS tanh);
 * C = f32(f32(C * f) + f32(i * c~)); h = f32(h(C) * o) (MLAS tanh). With 8-bit weights
 * (DynamicQuantizeLSTM) the two products are quantized_product's.
 */
static void lstm_direction(const q8_lstm_f32_params *p, int32_t d, int reverse,
                           const float *input, float *y, int32_t y_step, float *y_h,
                           float *y_c, float *scratch)
{
    const int32_t hs = p->hidden_size, in = p->input_size;
    const size_t w_at = (size_t)d * 4u * (size_t)hs * (size_t)in;
    const size_t r_at = (size_t)d * 4u * (size_t)hs * (size_t)hs;
    const float *w = p->w != NULL ? p->w + w_at : NULL;
    const float *r = p->r != NULL ? p->r + r_at : NULL;
    int16_t *row_q = (int16_t *)(void *)(scratch + 6 * hs);
    float x_scale = 1.0f;
    int32_t x_zp = 0;
    const float *b = p->b != NULL ? p->b + (size_t)d * 8u * (size_t)hs : NULL;
    const q8_rnn_activation gates = rnn_activation_at(p->activations, p->alphas, p->betas, 3 * d);
    const q8_rnn_activation block =
        rnn_activation_at(p->activations, p->alphas, p->betas, 3 * d + 1);
    const q8_rnn_activation memory =
        rnn_activation_at(p->activations, p->alphas, p->betas, 3 * d + 2);
    const q8_rnn_activation *act_f = &gates, *act_g = &block, *act_h = &memory;
    float *g = scratch, *h = scratch + 4 * hs, *c = scratch + 5 * hs;
    int32_t step, i;
    for (i = 0; i < hs; i++) {
        const size_t at = (size_t)d * (size_t)hs + (size_t)i;
        h[i] = p->initial_h != NULL ? p->initial_h[at] : 0.0f;
        c[i] = p->initial_c != NULL ? p->initial_c[at] : 0.0f;
    }
    if (p->w_q != NULL) {
        /* The whole input is quantized at once, with one scale and zero point. */
        q8_dynamic_quantization(input, p->seq_length * in, &x_scale, &x_zp);
    }
    for (step = 0; step < p->seq_length; step++) {
        const int32_t t = reverse ? p->seq_length - 1 - step : step;
        if (p->w_q != NULL) {
            const size_t gates_at = (size_t)d * 4u * (size_t)hs;
            /* One byte per weight, int8 and uint8 alike. */
            const quantized_weights wq = {(const uint8_t *)p->w_q + w_at, p->weights_signed,
                                          p->w_zero_point, p->w_scale + gates_at};
            const quantized_weights rq = {(const uint8_t *)p->r_q + r_at, p->weights_signed,
                                          p->r_zero_point, p->r_scale + gates_at};
            float h_scale;
            int32_t h_zp;
            quantized_product(input + (size_t)t * (size_t)in, in, x_scale, x_zp, &wq, 4 * hs,
                              g, 0, row_q);
            q8_dynamic_quantization(h, hs, &h_scale, &h_zp);
            quantized_product(h, hs, h_scale, h_zp, &rq, 4 * hs, g, 1, row_q);
        } else {
            packed_product(input + (size_t)t * (size_t)in, w, 4 * hs, in, g, 0);
            packed_product(h, r, 4 * hs, hs, g, 1);
        }
        for (i = 0; i < 4 * hs; i++) {
            const float bias = b != NULL ? (float)(b[i] + b[4 * hs + i]) : 0.0f;
            g[i] = rnn_clip_bias(g[i], b != NULL ? &bias : NULL, p->clip);
        }
        for (i = 0; i < hs; i++) {
            const float in_gate = rnn_activate(act_f, g[i]);
            const float out_gate = rnn_activate(act_f, g[hs + i]);
            const float forget = rnn_activate(act_f, g[2 * hs + i]);
            const float cell = rnn_activate(act_g, g[3 * hs + i]);
            c[i] = (float)(q8_mul_unfused(c[i], forget) + q8_mul_unfused(in_gate, cell));
            h[i] = rnn_gate_merge(act_h, c[i], out_gate);
        }
        if (y != NULL) {
            for (i = 0; i < hs; i++) {
                y[(size_t)t * (size_t)y_step + (size_t)i] = h[i];
            }
        }
    }
    for (i = 0; i < hs; i++) {
        if (y_h != NULL) {
            y_h[i] = h[i];
        }
        if (y_c != NULL) {
            y_c[i] = c[i];
        }
    }
}

static void lstm(const q8_lstm_f32_params *p, const float *input, float *y, float *y_h,
                 float *y_c, void *scratch)
{
    const int32_t hs = p->hidden_size, step = p->directions * hs;
    int32_t d;
    for (d = 0; d < p->directions; d++) {
        const int reverse = p->directions == 2 ? d == 1 : p->reverse != 0;
        const size_t at = (size_t)d * (size_t)hs;
        lstm_direction(p, d, reverse, input, y != NULL ? y + at : NULL, step,
                       y_h != NULL ? y_h + at : NULL, y_c != NULL ? y_c + at : NULL,
                       (float *)scratch);
    }
}

void q8_lstm_f32(const q8_lstm_f32_params *params, const float *Q8_RESTRICT input,
                 float *Q8_RESTRICT y, float *Q8_RESTRICT y_h, float *Q8_RESTRICT y_c,
                 void *Q8_RESTRICT scratch)
{
    lstm(params, input, y, y_h, y_c, scratch);
}

void q8_lstm_f32_y(const q8_lstm_f32_params *params, const float *Q8_RESTRICT input,
                   float *Q8_RESTRICT y, void *Q8_RESTRICT scratch)
{
    lstm(params, input, y, NULL, NULL, scratch);
}

void q8_lstm_f32_h(const q8_lstm_f32_params *params, const float *Q8_RESTRICT input,
                   float *Q8_RESTRICT y_h, void *Q8_RESTRICT scratch)
{
    lstm(params, input, NULL, y_h, NULL, scratch);
}

void q8_lstm_f32_c(const q8_lstm_f32_params *params, const float *Q8_RESTRICT input,
                   float *Q8_RESTRICT y_c, void *Q8_RESTRICT scratch)
{
    lstm(params, input, NULL, NULL, y_c, scratch);
}

void q8_lstm_f32_yh(const q8_lstm_f32_params *params, const float *Q8_RESTRICT input,
                    float *Q8_RESTRICT y, float *Q8_RESTRICT y_h, void *Q8_RESTRICT scratch)
{
    lstm(params, input, y, y_h, NULL, scratch);
}

void q8_lstm_f32_yc(const q8_lstm_f32_params *params, const float *Q8_RESTRICT input,
                    float *Q8_RESTRICT y, float *Q8_RESTRICT y_c, void *Q8_RESTRICT scratch)
{
    lstm(params, input, y, NULL, y_c, scratch);
}

void q8_lstm_f32_hc(const q8_lstm_f32_params *params, const float *Q8_RESTRICT input,
                    float *Q8_RESTRICT y_h, float *Q8_RESTRICT y_c, void *Q8_RESTRICT scratch)
{
    lstm(params, input, NULL, y_h, y_c, scratch);
}
