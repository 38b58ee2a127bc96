/* channels.h - a convolution's output assembled from the channels it computed and the
 * channels whose weights are all zero, constant over every pixel (the generator proves
 * their value: the requantized bias). The convolution then runs on the live rows only. */
#ifndef Q8_CHANNELS_H
#define Q8_CHANNELS_H

#include <stdint.h>

#include "q8_runtime.h"

typedef struct {
    int32_t batch;
    int32_t channels; /* of the output */
    int32_t live;     /* channels of the input: the computed ones, in output order */
    int32_t pixels;   /* H * W */
    const int16_t *source; /* per output channel: its input channel, or -1 */
    const uint8_t *fill;   /* per output channel: the byte of a constant channel */
} q8_fill_channels_params;

void q8_fill_channels(const q8_fill_channels_params *params, const void *Q8_RESTRICT input,
                      void *Q8_RESTRICT output);

/*
 * A depthwise convolution's output channels that read a constant channel: each such plane
 * takes one byte per class of its pixels, row class (first, inner, last) by column class
 * (first, inner, last), which the generator computed and checked against the whole
 * plane. The other planes are the computed ones (copied first when the output is not
 * written over the input).
 */
typedef struct {
    int32_t batch;
    int32_t channels;
    int32_t height;
    int32_t width;
    int32_t count;          /* constant channels */
    const int16_t *list;    /* their indices */
    const uint8_t *classes; /* 9 bytes for each */
} q8_fill_planes_params;

void q8_fill_planes(const q8_fill_planes_params *params, const void *input, void *output);

/*
 * The channels a pointwise convolution reads, when the others hold one value at every
 * pixel and the generator took their contribution into its bias: list[k] is the input
 * channel of output channel k.
 */
typedef struct {
    int32_t batch;
    int32_t channels; /* of the input */
    int32_t count;    /* of the output */
    int32_t pixels;   /* H * W */
    const int16_t *list;
} q8_select_channels_params;

void q8_select_channels(const q8_select_channels_params *params,
                        const void *Q8_RESTRICT input, void *Q8_RESTRICT output);

#endif /* Q8_CHANNELS_H */
