/*
 * q8_window.h - which taps of a sliding window fall inside the input.
 * Shared by the convolution and pooling kernels; padded taps are skipped, never read.
 */
#ifndef Q8_WINDOW_H
#define Q8_WINDOW_H

#include <stdint.h>

#include "q8_arith.h"

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

#endif /* Q8_WINDOW_H */
