/*
 * q8_window.h - which taps of a sliding window fall inside the input, and which layers
 * read their input pixel by pixel.
 * Shared by the convolution and pooling kernels; padded taps are skipped, never read.
 */
#ifndef Q8_WINDOW_H
#define Q8_WINDOW_H

#include <stdint.h>

#include "q8_arith.h"
#include "q8_types.h"

/* First tap k in [0, K) with base + k*dil >= 0 (K when there is none). */
Q8_INLINE int32_t q8_window_first_tap(int32_t base, int32_t dil, int32_t K)
{
    int32_t k = 0;
    while (k < K && base + k * dil < 0) {
        k++;
    }
    return k;
}

/* One past the last tap k with base + k*dil < size. */
Q8_INLINE int32_t q8_window_end_tap(int32_t base, int32_t dil, int32_t size, int32_t K)
{
    int32_t k = K;
    while (k > 0 && base + (k - 1) * dil >= size) {
        k--;
    }
    return k;
}

/* A layer whose output pixel px reads input pixel px alone: 1x1, stride 1, no padding (the
 * pointwise pair fills of q8_im2col_fill.h and q8_im2col_mve_fill.h). */
Q8_INLINE int q8_is_unit_pointwise(const q8_dims *input, const q8_dims *output,
                                const q8_window *win)
{
    return win->kernel_h == 1 && win->kernel_w == 1 && win->stride_h == 1 &&
           win->stride_w == 1 && win->pad_top == 0 && win->pad_left == 0 &&
           input->h == output->h && input->w == output->w;
}

#endif /* Q8_WINDOW_H */
