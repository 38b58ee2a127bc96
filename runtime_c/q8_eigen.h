/* q8_eigen.h - Eigen's vectorized float sum as ONNX Runtime's x86-64 build runs it
 * (redux, linear vectorized traversal, SSE Packet4f), shared by the float islands that
 * reduce with Eigen (ReduceSum/ReduceMean, InstanceNormalization). */
#ifndef Q8_EIGEN_H
#define Q8_EIGEN_H

#include "q8_names.h"

#include <stdint.h>

#define Q8_EIGEN_LANES 4

/* Eigen's vectorized sum (redux, linear vectorized traversal, SSE Packet4f) of v[0..n),
 * where v[head] is the first element on a 16-byte boundary of the tensor. */
static inline float q8_eigen_sum(const float *v, int32_t n, int32_t head)
{
    float p0[Q8_EIGEN_LANES], p1[Q8_EIGEN_LANES], res;
    int32_t size1, size2, i, k;

    if (head > n) {
        head = n;
    }
    size1 = ((n - head) / Q8_EIGEN_LANES) * Q8_EIGEN_LANES;
    size2 = ((n - head) / (2 * Q8_EIGEN_LANES)) * (2 * Q8_EIGEN_LANES);
    if (size1 == 0) {
        res = v[0];
        for (i = 1; i < n; i++) {
            res = res + v[i];
        }
        return res;
    }
    for (k = 0; k < Q8_EIGEN_LANES; k++) {
        p0[k] = v[head + k];
    }
    if (size1 > Q8_EIGEN_LANES) {
        for (k = 0; k < Q8_EIGEN_LANES; k++) {
            p1[k] = v[head + Q8_EIGEN_LANES + k];
        }
        for (i = head + 2 * Q8_EIGEN_LANES; i < head + size2; i += 2 * Q8_EIGEN_LANES) {
            for (k = 0; k < Q8_EIGEN_LANES; k++) {
                p0[k] = p0[k] + v[i + k];
                p1[k] = p1[k] + v[i + Q8_EIGEN_LANES + k];
            }
        }
        for (k = 0; k < Q8_EIGEN_LANES; k++) {
            p0[k] = p0[k] + p1[k];
        }
        if (size1 > size2) {
            for (k = 0; k < Q8_EIGEN_LANES; k++) {
                p0[k] = p0[k] + v[head + size2 + k];
            }
        }
    }
    res = (p0[0] + p0[2]) + (p0[1] + p0[3]);
    for (i = 0; i < head; i++) {
        res = res + v[i];
    }
    for (i = head + size1; i < n; i++) {
        res = res + v[i];
    }
    return res;
}

/* Elements from row r's start to the next 16-byte boundary of the tensor. */
static inline int32_t q8_eigen_head(int32_t row, int32_t length)
{
    int32_t misalign = (int32_t)(((int64_t)row * length) % Q8_EIGEN_LANES);
    return misalign == 0 ? 0 : Q8_EIGEN_LANES - misalign;
}

#endif /* Q8_EIGEN_H */
