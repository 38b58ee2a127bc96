/* resize.c - nearest-neighbour Resize (resize.h). */
#include <string.h>

#include "resize.h"

void q8_resize_nearest(const q8_resize_params *params, const void *Q8_RESTRICT input,
                       void *Q8_RESTRICT output)
{
    const unsigned char *in = (const unsigned char *)input;
    unsigned char *out = (unsigned char *)output;
    const size_t esize = (size_t)params->element_size;
    const size_t in_row = (size_t)params->in_w * esize;
    int32_t p, y, x;

    for (p = 0; p < params->planes; p++) {
        const unsigned char *plane = in + (size_t)p * (size_t)params->in_h * in_row;
        for (y = 0; y < params->out_h; y++) {
            const unsigned char *row = plane + (size_t)params->rows[y] * in_row;
            if (esize == 1) {
                for (x = 0; x < params->out_w; x++) {
                    out[x] = row[params->cols[x]];
                }
            } else {
                for (x = 0; x < params->out_w; x++) {
                    memcpy(out + (size_t)x * esize, row + (size_t)params->cols[x] * esize,
                           esize);
                }
            }
            out += (size_t)params->out_w * esize;
        }
    }
}
