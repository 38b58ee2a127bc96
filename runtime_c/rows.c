/*
 * rows.c - the band buffers of generate --memory min: windows of rows of NCHW planes
 * gathered from the bands that computed them, and the bands placed into whole tensors.
 * Plain memmove/memcpy/memset per plane: the data moved is a few percent of what the
 * convolutions between them read.
 */
#include <string.h>

#include "q8_runtime.h"

static void copy_band(const q8_rows_params *p, const uint8_t *src, uint8_t *dst)
{
    const size_t bytes = (size_t)p->count * (size_t)p->row_bytes;
    int32_t c;
    if (p->count <= 0) {
        return;
    }
    for (c = 0; c < p->planes; ++c) {
        const uint8_t *from = src + ((size_t)c * (size_t)p->src_rows + (size_t)p->src_first) *
                                        (size_t)p->row_bytes;
        uint8_t *to = dst + ((size_t)c * (size_t)p->dst_rows + (size_t)p->dst_first) *
                                (size_t)p->row_bytes;
        memcpy(to, from, bytes);
    }
}

/* Destination rows [from, to) of every plane that the band does not cover: pad. */
static void pad_rows(const q8_rows_params *p, int32_t from, int32_t to, uint8_t *dst)
{
    const int32_t band_end = p->dst_first + p->count;
    int32_t c;
    for (c = 0; c < p->planes; ++c) {
        uint8_t *plane = dst + (size_t)c * (size_t)p->dst_rows * (size_t)p->row_bytes;
        const int32_t before = p->count > 0 && p->dst_first < to ? p->dst_first : to;
        const int32_t after = p->count > 0 && band_end > from ? band_end : from;
        if (before > from) {
            memset(plane + (size_t)from * (size_t)p->row_bytes, p->pad & 0xff,
                   (size_t)(before - from) * (size_t)p->row_bytes);
        }
        if (to > after) {
            memset(plane + (size_t)after * (size_t)p->row_bytes, p->pad & 0xff,
                   (size_t)(to - after) * (size_t)p->row_bytes);
        }
    }
}

void q8_rows_window(const q8_rows_params *params, const void *src,
                    void *dst)
{
    pad_rows(params, 0, params->dst_rows, (uint8_t *)dst);
    copy_band(params, (const uint8_t *)src, (uint8_t *)dst);
}

void q8_rows_fill(const q8_rows_params *params, void *dst)
{
    pad_rows(params, 0, params->dst_rows, (uint8_t *)dst);
}

void q8_rows_place(const q8_rows_params *params, const void *prev,
                   const void *fresh, void *dst)
{
    if (dst != prev) {
        memmove(dst, prev, (size_t)params->planes * (size_t)params->dst_rows *
                               (size_t)params->row_bytes);
    }
    copy_band(params, (const uint8_t *)fresh, (uint8_t *)dst);
}

void q8_rows_place_first(const q8_rows_params *params, const void *fresh,
                         void *dst)
{
    copy_band(params, (const uint8_t *)fresh, (uint8_t *)dst);
}
