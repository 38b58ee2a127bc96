/*
 * Test driver for q8_arith.h: reads records of (int32 acc, float scale, int32 mult,
 * int32 exp, int32 lo, int32 hi) from stdin and writes (int32 float path, int32 integer
 * path, int32 prepared integer path) for each to stdout.
 */
#include <stdio.h>
#include <string.h>

#include "q8_arith.h"

int main(void)
{
    unsigned char rec[24];
    while (fread(rec, 1, sizeof rec, stdin) == sizeof rec) {
        int32_t acc, mult, exp, lo, hi, out[3];
        q8_int_requant prepared;
        float scale;
        memcpy(&acc, rec, 4);
        memcpy(&scale, rec + 4, 4);
        memcpy(&mult, rec + 8, 4);
        memcpy(&exp, rec + 12, 4);
        memcpy(&lo, rec + 16, 4);
        memcpy(&hi, rec + 20, 4);
        out[0] = q8_requant_f32(acc, scale, (float)lo, (float)hi);
        out[1] = q8_requant_int(acc, mult, exp, lo, hi);
        prepared = q8_prepare_int_requant(mult, exp, lo, hi);
        out[2] = q8_requant_int_prepared(&prepared, acc);
        if (fwrite(out, sizeof out, 1, stdout) != 1) {
            return 1;
        }
    }
    return 0;
}
