/*
 * q8_runtime.h - public API of the onnx2mcu integer kernels.
 *
 * Every kernel is a plain C99 function with a small const parameter struct that the
 * code generator fills at generation time. Kernels never allocate; tensors are NCHW,
 * dense, in the layout ONNX defines.
 *
 * Naming: q8_<family>_<activation type>[_<variant>], for example q8_conv_u8_freq is the
 * reference convolution on uint8 activations with float requantization, and
 * q8_conv_u8_ireq the same with integer-only requantization.
 *
 * The declarations are by family, one header each (q8_api_*.h, over the shared
 * q8_types.h); this header includes them all.
 */
#ifndef Q8_RUNTIME_H
#define Q8_RUNTIME_H

#include "q8_types.h"

#include "q8_api_conv.h"
#include "q8_api_matmul.h"
#include "q8_api_quantize.h"
#include "q8_api_pool.h"
#include "q8_api_elementwise.h"
#include "q8_api_softmax.h"
#include "q8_api_movement.h"
#include "q8_api_float.h"

#endif /* Q8_RUNTIME_H */
