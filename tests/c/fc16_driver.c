/* fc16_driver.c - runs q8_fully_connected_s16/u16 and q8_requant_exact on cases read
 * from stdin (tests/kernels/test_fully_connected_s16.py writes them), prints the results.
 *
 * "R count" then count lines "acc num den shift mult rshift": one q8_requant_fast each
 * (mult 0: q8_requant_exact).
 * "F signed rows k n xzp yzp ymin ymax has_bias" then k*n weights, n biases (if any),
 * n multipliers "num den shift mult rshift", rows*k inputs: one product, its outputs
 * printed. */
#include <stdio.h>
#include <stdlib.h>

#include "fully_connected_s16.h"

static int fail(const char *what)
{
    fprintf(stderr, "fc16_driver: bad %s\n", what);
    return 2;
}

/* Reads the inputs as T, runs KERNEL, prints its outputs (in run_product's scope). */
#define RUN_PRODUCT(T, KERNEL)                                                  \
    do {                                                                        \
        T *x = malloc((size_t)rows * (size_t)k * sizeof *x);                    \
        T *y = malloc((size_t)rows * (size_t)n * sizeof *y);                    \
        if (x == NULL || y == NULL) {                                           \
            return fail("allocation");                                          \
        }                                                                       \
        for (i = 0; i < rows * k; i++) {                                        \
            int v;                                                              \
            if (scanf("%d", &v) != 1) {                                         \
                return fail("input");                                           \
            }                                                                   \
            x[i] = (T)v;                                                        \
        }                                                                       \
        KERNEL(&p, x, y);                                                       \
        for (i = 0; i < rows * n; i++) {                                        \
            printf("%d\n", (int)y[i]);                                          \
        }                                                                       \
        free(x);                                                                \
        free(y);                                                                \
    } while (0)

static int run_product(void)
{
    int is_signed, rows, k, n, xzp, yzp, ymin, ymax, has_bias, i;
    q8_fully_connected_s16_params p;
    int8_t *w;
    int32_t *bias;
    q8_exact_multiplier *m;
    if (scanf("%d %d %d %d %d %d %d %d %d", &is_signed, &rows, &k, &n, &xzp, &yzp, &ymin,
              &ymax, &has_bias) != 9 || rows < 1 || k < 1 || n < 1) {
        return fail("product header");
    }
    w = malloc((size_t)k * (size_t)n);
    bias = malloc((size_t)n * sizeof *bias);
    m = malloc((size_t)n * sizeof *m);
    if (w == NULL || bias == NULL || m == NULL) {
        return fail("allocation");
    }
    for (i = 0; i < k * n; i++) {
        int v;
        if (scanf("%d", &v) != 1) {
            return fail("weight");
        }
        w[i] = (int8_t)v;
    }
    for (i = 0; has_bias && i < n; i++) {
        long v;
        if (scanf("%ld", &v) != 1) {
            return fail("bias");
        }
        bias[i] = (int32_t)v;
    }
    for (i = 0; i < n; i++) {
        unsigned long long num;
        unsigned long den;
        long shift, mult, rshift;
        if (scanf("%llu %lu %ld %ld %ld", &num, &den, &shift, &mult, &rshift) != 5) {
            return fail("multiplier");
        }
        m[i].num = num;
        m[i].den = (uint32_t)den;
        m[i].shift = (int32_t)shift;
        m[i].mult = (int32_t)mult;
        m[i].rshift = (int32_t)rshift;
    }
    p.rows = rows;
    p.k = k;
    p.n = n;
    p.x_zero_point = xzp;
    p.y_zero_point = yzp;
    p.y_min = ymin;
    p.y_max = ymax;
    p.w = w;
    p.bias = has_bias ? bias : NULL;
    p.multiplier = m;
    if (is_signed) {
        RUN_PRODUCT(int16_t, q8_fully_connected_s16);
    } else {
        RUN_PRODUCT(uint16_t, q8_fully_connected_u16);
    }
    free(w);
    free(bias);
    free(m);
    return 0;
}

int main(void)
{
    char kind[2];
    while (scanf("%1s", kind) == 1) {
        if (kind[0] == 'R') {
            long count, i;
            if (scanf("%ld", &count) != 1) {
                return fail("count");
            }
            for (i = 0; i < count; i++) {
                long long acc;
                unsigned long long num;
                unsigned long den;
                long shift, mult, rshift;
                q8_exact_multiplier m;
                if (scanf("%lld %llu %lu %ld %ld %ld", &acc, &num, &den, &shift, &mult,
                          &rshift) != 6) {
                    return fail("requant case");
                }
                m.num = num;
                m.den = (uint32_t)den;
                m.shift = (int32_t)shift;
                m.mult = (int32_t)mult;
                m.rshift = (int32_t)rshift;
                printf("%lld\n", (long long)q8_requant_fast(acc, &m));
            }
        } else if (kind[0] == 'F') {
            const int status = run_product();
            if (status != 0) {
                return status;
            }
        } else {
            return fail("record kind");
        }
    }
    return 0;
}
