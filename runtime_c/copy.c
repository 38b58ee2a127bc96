/* copy.c - q8_copy: a graph output that is a graph input or a constant. */
#include <string.h>

#include "q8_runtime.h"

void q8_copy(const q8_copy_params *params, const void *Q8_RESTRICT input,
             void *Q8_RESTRICT output)
{
    memcpy(output, input, params->bytes);
}
