/*
 * Checks the integer-only kernels against their float twins on the host's FPU:
 *   - q8_sf_round_sum and the integer q8_fmaf (built with Q8_SOFT_FMA) against the C
 *     library's fmaf, q8_sf_add_positive against float addition,
 *     q8_sf_round_saturate against q8_round_saturate, on random and boundary values;
 *   - q8_qadd_u8_ireq / _s8_ireq against q8_qadd_u8 / _s8 on all 65536 byte pairs, for
 *     random ratios and fixed parts, and q8_qmul_*_ireq likewise;
 *   - q8_qsoftmax_*_ireq against q8_qsoftmax_* on random tables and rows, including
 *     sums that land next to half-integers.
 * Prints the number of mismatches per check; exit code 1 when any.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "q8_arith.h"
#include "q8_runtime.h"
#include "q8_softfloat.h"

static uint64_t state = 0x9E3779B97F4A7C15u;

static uint32_t next32(void)
{
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return (uint32_t)(state >> 16);
}

static float random_float(int min_exp, int max_exp)
{
    const int e = min_exp + (int)(next32() % (uint32_t)(max_exp - min_exp + 1));
    const float m = 1.0f + (float)(next32() & 0x7fffffu) / 8388608.0f;
    const float v = ldexpf(m, e);
    return (next32() & 1u) ? -v : v;
}

static uint32_t bits_of(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

static float float_of(uint32_t b)
{
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

static q8_sf sf_of(float f)
{
    return q8_sf_from_bits(bits_of(f));
}

static uint32_t bits_of_sf(q8_sf v)
{
    return bits_of(v.m == 0 ? 0.0f : ldexpf((float)v.m, v.e));
}

static long check_round_sum(void)
{
    long bad = 0, i;
    for (i = 0; i < 2000000; i++) {
        const int32_t x = (int32_t)(next32() % 511u) - 255;
        const float r = random_float(-30, 4), c = random_float(-20, 10);
        const q8_sf rs = sf_of(r), cs = sf_of(c);
        const float want = fmaf((float)x, r, c);
        const q8_sf got = q8_sf_round_sum((int64_t)x * rs.m, rs.e, cs.m, cs.e);
        if (bits_of_sf(got) != bits_of(want) && !(want == 0.0f && got.m == 0)) {
            bad++;
        }
    }
    return bad;
}

static long check_fmaf(void)
{
    long bad = 0, i;
    for (i = 0; i < 2000000; i++) {
        const float a = random_float(-60, 60), b = random_float(-60, 60);
        float c = random_float(-120, 120);
        if (i % 3 == 0) {
            c = -a * b + random_float(-80, -20) * a; /* near cancellation */
        }
        if (bits_of(q8_fmaf(a, b, c)) != bits_of(fmaf(a, b, c))) {
            bad++;
        }
    }
    return bad;
}

static long check_add_positive(void)
{
    long bad = 0, i;
    for (i = 0; i < 2000000; i++) {
        uint32_t a = next32() & 0x7f7fffffu, b = next32() & 0x7f7fffffu;
        if (i % 4 == 1) {
            b = (a & 0x7f800000u) | (next32() & 0x7fffffu); /* same binade */
        } else if (i % 4 == 2) {
            a &= 0x007fffffu; /* subnormal */
        } else if (i % 4 == 3) {
            b = a + (next32() % 64u) - 32u;
            b &= 0x7f7fffffu;
        }
        if (q8_sf_add_positive(a, b) != bits_of(float_of(a) + float_of(b))) {
            bad++;
        }
    }
    return bad;
}

static long check_round_saturate(void)
{
    long bad = 0, i;
    for (i = 0; i < 2000000; i++) {
        float t = random_float(-30, 33);
        if (i % 3 == 0) {
            t = (float)((int32_t)(next32() % 600u) - 300) + 0.5f;
        }
        if (q8_sf_round_saturate(sf_of(t), -128, 255) != q8_round_saturate(t, -128, 255)) {
            bad++;
        }
    }
    return bad;
}

static long check_qadd(int is_signed)
{
    static uint32_t table[256];
    static double fast_table[512];
    static int32_t fast_ints[512];
    int fast, fast_trials = 0;
    static uint8_t a[256 * 256], b[256 * 256], y_float[256 * 256], y_int[256 * 256];
    long bad = 0;
    int trial, i;
    for (i = 0; i < 256 * 256; i++) {
        a[i] = (uint8_t)(i >> 8);
        b[i] = (uint8_t)(i & 0xff);
    }
    for (trial = 0; trial < 200; trial++) {
        q8_qadd_params p;
        q8_sf outer;
        memset(&p, 0, sizeof p);
        p.shape.rank = 1;
        p.shape.out_shape[0] = 256 * 256;
        p.shape.a_stride[0] = 1;
        p.shape.b_stride[0] = 1;
        p.b_first = trial & 1;
        p.ratio_a = fabsf(random_float(-8, 3));
        p.ratio_b = fabsf(random_float(-8, 3));
        p.fixed = random_float(-4, 9);
        for (i = 0; i < 256; i++) {
            const float v = is_signed ? (float)(int8_t)i : (float)i;
            table[i] = bits_of(p.b_first ? fmaf(v, p.ratio_a, p.fixed)
                                         : fmaf(v, p.ratio_b, p.fixed));
        }
        outer = sf_of(p.b_first ? p.ratio_b : p.ratio_a);
        p.inner_table = table;
        p.outer_mult = outer.m;
        p.outer_exp = outer.e;
        for (fast = 0; fast < 2; fast++) {
            /* fast: the generator's fast table (elementwise.py, qadd_fast_table), when
             * every entry stays below 2^29 */
            p.fast_table = NULL;
            if (fast) {
                double most = 0.0;
                for (i = 0; i < 256; i++) {
                    const double v = is_signed ? (double)(int8_t)i : (double)i;
                    fast_table[i] = floor(v * (double)(p.b_first ? p.ratio_b : p.ratio_a) *
                                          1048576.0);
                    fast_table[256 + i] = floor((double)float_of(table[i]) * 1048576.0);
                }
                for (i = 0; i < 512; i++) {
                    most = fabs(fast_table[i]) > most ? fabs(fast_table[i]) : most;
                }
                if (most >= 536870912.0) {
                    continue;
                }
                for (i = 0; i < 512; i++) {
                    fast_ints[i] = (int32_t)fast_table[i];
                }
                p.fast_table = fast_ints;
                fast_trials++;
            }
            if (is_signed) {
                q8_qadd_s8(&p, (const int8_t *)a, (const int8_t *)b, (int8_t *)y_float);
                q8_qadd_s8_ireq(&p, (const int8_t *)a, (const int8_t *)b, (int8_t *)y_int);
            } else {
                q8_qadd_u8(&p, a, b, y_float);
                q8_qadd_u8_ireq(&p, a, b, y_int);
            }
            for (i = 0; i < 256 * 256; i++) {
                bad += y_float[i] != y_int[i];
            }
        }
    }
    /* most random trials must take the fast table, or it goes untested */
    return bad + (fast_trials < 100);
}

static long check_qmul(int is_signed)
{
    static uint8_t a[256 * 256], b[256 * 256], y_float[256 * 256], y_int[256 * 256];
    long bad = 0;
    int trial, i;
    for (i = 0; i < 256 * 256; i++) {
        a[i] = (uint8_t)(i >> 8);
        b[i] = (uint8_t)(i & 0xff);
    }
    for (trial = 0; trial < 100; trial++) {
        q8_qmul_params p;
        q8_sf scale;
        memset(&p, 0, sizeof p);
        p.shape.rank = 1;
        p.shape.out_shape[0] = 256 * 256;
        p.shape.a_stride[0] = 1;
        p.shape.b_stride[0] = 1;
        p.a_zero_point = (int32_t)(next32() % 256u) - (is_signed ? 128 : 0);
        p.b_zero_point = (int32_t)(next32() % 256u) - (is_signed ? 128 : 0);
        p.y_zero_point = (int32_t)(next32() % 256u) - (is_signed ? 128 : 0);
        p.scale = fabsf(random_float(-16, 0));
        scale = sf_of(p.scale);
        p.scale_mult = scale.m;
        p.scale_exp = scale.e;
        if (is_signed) {
            q8_qmul_s8(&p, (const int8_t *)a, (const int8_t *)b, (int8_t *)y_float);
            q8_qmul_s8_ireq(&p, (const int8_t *)a, (const int8_t *)b, (int8_t *)y_int);
        } else {
            q8_qmul_u8(&p, a, b, y_float);
            q8_qmul_u8_ireq(&p, a, b, y_int);
        }
        for (i = 0; i < 256 * 256; i++) {
            bad += y_float[i] != y_int[i];
        }
    }
    return bad;
}

static long check_qsoftmax(int is_signed)
{
    static float table[256];
    static uint8_t x[64 * 40], y_float[64 * 40], y_int[64 * 40];
    long bad = 0;
    int trial, i;
    for (trial = 0; trial < 3000; trial++) {
        q8_qsoftmax_params p;
        const int length = 1 + (int)(next32() % 40u);
        const int top = (int)(next32() % 60u) - 30;
        const float step = 0.01f + (float)(next32() % 1000u) / 100.0f;
        memset(&p, 0, sizeof p);
        for (i = 0; i < 256; i++) {
            /* positive, increasing, over many binades (subnormals when step is large) */
            table[i] = expf(((float)i - 255.0f) * step / 8.0f) * ldexpf(1.0f, top);
        }
        p.outer = 64;
        p.length = length;
        p.inner = 1;
        p.table = table;
        p.multiplier_int = (trial % 5 == 0) ? (int32_t)(next32() % (1u << 28)) + 1
                                            : 255 + (int32_t)(next32() % 3u);
        p.multiplier = (double)p.multiplier_int;
        p.y_zero_point = is_signed ? -128 + (int32_t)(next32() % 20u) : (int32_t)(next32() % 20u);
        for (i = 0; i < 64 * length; i++) {
            x[i] = (uint8_t)(i % 7 == 0 ? x[i > 0 ? i - 1 : 0] : next32());
        }
        if (is_signed) {
            q8_qsoftmax_s8(&p, (const int8_t *)x, (int8_t *)y_float);
            q8_qsoftmax_s8_ireq(&p, (const int8_t *)x, (int8_t *)y_int);
        } else {
            q8_qsoftmax_u8(&p, x, y_float);
            q8_qsoftmax_u8_ireq(&p, x, y_int);
        }
        for (i = 0; i < 64 * length; i++) {
            bad += y_float[i] != y_int[i];
        }
    }
    return bad;
}

int main(void)
{
    const long results[10] = {check_round_sum(), check_fmaf(), check_add_positive(),
                              check_round_saturate(), check_qadd(0), check_qadd(1),
                              check_qmul(0), check_qmul(1), check_qsoftmax(0),
                              check_qsoftmax(1)};
    static const char *const names[10] = {"round_sum", "fmaf", "add_positive",
                                          "round_saturate", "qadd_u8", "qadd_s8", "qmul_u8",
                                          "qmul_s8", "qsoftmax_u8", "qsoftmax_s8"};
    long total = 0;
    int i;
    for (i = 0; i < 10; i++) {
        printf("%s %ld\n", names[i], results[i]);
        total += results[i];
    }
    return total != 0;
}
