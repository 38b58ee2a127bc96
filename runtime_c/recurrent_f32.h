/* recurrent_f32.h - GRU and LSTM on float32 (layout 0, batch 1), in ONNX Runtime's
 * order (recurrent_f32.c). */
#ifndef Q8_RECURRENT_F32_H
#define Q8_RECURRENT_F32_H

#include <stdint.h>

#include "q8_runtime.h"

/* An activation of ORT's DeepCPU recurrent kernels (rnn_helpers.cc), by ONNX name. */
enum {
    Q8_RNN_SIGMOID,
    Q8_RNN_TANH,
    Q8_RNN_RELU,
    Q8_RNN_AFFINE,
    Q8_RNN_LEAKYRELU,
    Q8_RNN_THRESHOLDEDRELU,
    Q8_RNN_HARDSIGMOID,
    Q8_RNN_SOFTSIGN,
    Q8_RNN_SCALEDTANH,
    Q8_RNN_ELU,
    Q8_RNN_SOFTPLUS
};

typedef struct {
    int32_t seq_length;
    int32_t input_size;
    int32_t hidden_size;
    int32_t directions;          /* 1 or 2 */
    int32_t reverse;             /* with one direction: 1 for direction=reverse */
    int32_t linear_before_reset; /* 0 or 1 */
    const float *w;              /* [directions][3 * hidden][input] (z, r, h) */
    const float *r;              /* [directions][3 * hidden][hidden] */
    const float *b;              /* [directions][6 * hidden] (Wb z r h, Rb z r h) or NULL */
    const float *initial_h;      /* [directions][hidden] or NULL (zeros) */
    float clip;                  /* the clip attribute; FLT_MAX without it, as in ORT */
    const int32_t *activations;  /* [directions][2] Q8_RNN_*: f (z, r), g (h) */
    const float *alphas;         /* [directions][2] their alpha and beta */
    const float *betas;
} q8_gru_f32_params;

/* The scratch, in bytes: six rows of hidden_size floats. */
static inline size_t q8_gru_f32_scratch_bytes(const q8_gru_f32_params *params)
{
    return 6u * (size_t)params->hidden_size * sizeof(float);
}

/* scratch: 6 * hidden floats. y: [seq][directions][1][hidden]; y_h: [directions][1][hidden]. */
void q8_gru_f32(const q8_gru_f32_params *params, const float *Q8_RESTRICT input,
                float *Q8_RESTRICT y, float *Q8_RESTRICT y_h, void *Q8_RESTRICT scratch);
void q8_gru_f32_y(const q8_gru_f32_params *params, const float *Q8_RESTRICT input,
                  float *Q8_RESTRICT y, void *Q8_RESTRICT scratch);
void q8_gru_f32_h(const q8_gru_f32_params *params, const float *Q8_RESTRICT input,
                  float *Q8_RESTRICT y_h, void *Q8_RESTRICT scratch);

typedef struct {
    int32_t seq_length;
    int32_t input_size;
    int32_t hidden_size;
    int32_t directions;     /* 1 or 2 */
    int32_t reverse;        /* with one direction: 1 for direction=reverse */
    const float *w;         /* [directions][4 * hidden][input] (i, o, f, c) */
    const float *r;         /* [directions][4 * hidden][hidden] */
    const float *b;         /* [directions][8 * hidden] (Wb i o f c, Rb i o f c) or NULL */
    const float *initial_h; /* [directions][hidden] or NULL (zeros) */
    const float *initial_c; /* [directions][hidden] or NULL (zeros) */
    float clip;             /* the clip attribute; FLT_MAX without it, as in ORT */
    const int32_t *activations; /* [directions][3] Q8_RNN_*: f (i, o, f), g (c~), h (C) */
    const float *alphas;        /* [directions][3] their alpha and beta */
    const float *betas;
    /* com.microsoft DynamicQuantizeLSTM (w and r NULL): the 8-bit weights,
     * [directions][4 * hidden][input] and [directions][4 * hidden][hidden], int8 or uint8
     * (weights_signed), each with its one zero point, and their scales per gate row
     * [directions][4 * hidden]; w_q NULL for a float LSTM. */
    const void *w_q;
    const void *r_q;
    int32_t weights_signed;
    int32_t w_zero_point;
    int32_t r_zero_point;
    const float *w_scale;
    const float *r_scale;
} q8_lstm_f32_params;

/* The scratch, in bytes: six rows of hidden_size floats, and with 8-bit weights the
 * quantized input and hidden rows (int16 each). */
static inline size_t q8_lstm_f32_scratch_bytes(const q8_lstm_f32_params *params)
{
    const size_t quantized = params->w_q != NULL
        ? ((size_t)params->input_size + (size_t)params->hidden_size) * sizeof(int16_t) : 0u;
    return 6u * (size_t)params->hidden_size * sizeof(float) + quantized;
}

/* scratch: q8_lstm_f32_scratch_bytes. y: [seq][directions][1][hidden]; y_h, y_c:
 * [directions][1][hidden]. The suffix names the outputs written, in that order. */
#define Q8_LSTM_F32_DECLARE(suffix, ...)                                                  \
    void q8_lstm_f32##suffix(const q8_lstm_f32_params *params,                            \
                             const float *Q8_RESTRICT input, __VA_ARGS__,                 \
                             void *Q8_RESTRICT scratch);
Q8_LSTM_F32_DECLARE(, float *Q8_RESTRICT y, float *Q8_RESTRICT y_h, float *Q8_RESTRICT y_c)
Q8_LSTM_F32_DECLARE(_y, float *Q8_RESTRICT y)
Q8_LSTM_F32_DECLARE(_h, float *Q8_RESTRICT y_h)
Q8_LSTM_F32_DECLARE(_c, float *Q8_RESTRICT y_c)
Q8_LSTM_F32_DECLARE(_yh, float *Q8_RESTRICT y, float *Q8_RESTRICT y_h)
Q8_LSTM_F32_DECLARE(_yc, float *Q8_RESTRICT y, float *Q8_RESTRICT y_c)
Q8_LSTM_F32_DECLARE(_hc, float *Q8_RESTRICT y_h, float *Q8_RESTRICT y_c)

#endif /* Q8_RECURRENT_F32_H */
