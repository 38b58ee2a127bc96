/*
 * libm_check.c - runtime_c/q8_libm.h against the host's C library (glibc 2.28+):
 * the integer double FMA against fma() on random, cancelling and subnormal operands;
 * q8_glibc_logf, q8_glibc_powf and q8_glibc_expf against logf, powf and expf on a sweep
 * of float bit
 * patterns. Prints "name count-of-differences" per check.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "q8_libm.h"

static uint64_t state = 88172645463325252u;

static uint64_t next_random(void)
{
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
}

static double random_double(int moderate)
{
    uint64_t bits = next_random();
    double d;
    if (moderate) { /* exponents within 2^+-40 */
        bits = (bits & 0x800fffffffffffffu) | ((uint64_t)(1023 - 40 + next_random() % 80) << 52);
    }
    memcpy(&d, &bits, sizeof d);
    return d;
}

static int same_f64(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0 || (a != a && b != b);
}

static int same_f32(float a, float b)
{
    return memcmp(&a, &b, sizeof a) == 0 || (a != a && b != b);
}

int main(void)
{
    const float exponents[] = {0.5f, -2.2f, 1.7f, -0.5f, 7.3f, 0.1f};
    long i, fma_bad = 0, logf_bad = 0, powf_bad = 0, expf_bad = 0;
    uint32_t bits;
    size_t e;
    for (i = 0; i < 3000000L; i++) {
        double a = random_double(i % 3 != 0), b = random_double(i % 3 != 0);
        double c = random_double(i % 3 != 0);
        if (i % 5 == 0) {
            c = -(a * b) * (1.0 + (double)(next_random() % 7) * 0x1p-52); /* cancels */
        }
        if (i % 7 == 0) {
            const uint64_t tiny = next_random() & 0x000fffffffffffffu; /* subnormal */
            memcpy(&c, &tiny, sizeof c);
        }
        fma_bad += !same_f64(q8_fma_integer(a, b, c), fma(a, b, c));
    }
    for (bits = 0u; bits < 0xffffff00u; bits += 1021u) {
        float x;
        memcpy(&x, &bits, sizeof x);
        logf_bad += !same_f32(q8_glibc_logf(x), logf(x));
        expf_bad += !same_f32(q8_glibc_expf(x), expf(x));
        for (e = 0; e < sizeof exponents / sizeof exponents[0]; e++) {
            powf_bad += !same_f32(q8_glibc_powf(x, exponents[e]), powf(x, exponents[e]));
        }
    }
    printf("fma %ld\nlogf %ld\npowf %ld\nexpf %ld\n", fma_bad, logf_bad, powf_bad, expf_bad);
    return 0;
}
