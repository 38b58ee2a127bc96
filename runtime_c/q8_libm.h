/*
 * q8_libm.h - the C library's logf, powf and expf as ONNX Runtime calls them on Linux.
 *
 * ORT calls std::log for a few scalars (LogSoftmax's log of each row's sum) and std::pow
 * for every element of Pow (an exponent other than 2 and 3), and std::exp for the GRU/LSTM
 * activations that need it (Elu, Softplus, ScaledTanh). glibc 2.28
 * and later compute logf with Arm's optimized-routines algorithm, in double precision:
 * x = 2^k * z with z in [0x1.66p-1, 0x1.66p0), a 16-entry table of 1/c and log(c) for
 * the subinterval of z, and log(x) = k*ln2 + log(c) + log1p(z/c - 1), the last by a
 * degree-4 polynomial. The result is not always correctly rounded, so onnx2mcu runs the
 * same algorithm with the same constants (Arm Limited's, MIT licence: the table is data
 * that decides every rounding). Measured against glibc 2.36's logf on all 2^32 inputs,
 * with and without fused multiply-adds (its FMA build): 0 differences. Doubles are IEEE
 * operations, in software on a single-precision FPU: exact there too.
 */
#ifndef Q8_LIBM_H
#define Q8_LIBM_H

#include "q8_names.h"

/* logf(x), powf(x, y) and expf(x) with glibc 2.28+'s algorithms and roundings (powf and
 * expf as its FMA build computes them); runtime_c/libm.c. */
float q8_glibc_logf(float x);
float q8_glibc_powf(float x, float y);
float q8_glibc_expf(float x);

/* fma(a, b, c) in double with one rounding, by integer arithmetic (for cores without a
 * double-precision FMA, whose C library's fma may round twice). */
double q8_fma_integer(double a, double b, double c);

#endif /* Q8_LIBM_H */
