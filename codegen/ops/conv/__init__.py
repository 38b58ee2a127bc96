"""The convolution family, one concern a module:

- spec.py: QLinearConv parsed once into a ConvSpec (checks, shapes, quantization);
- qlinear.py: QLinearConv's lowering, which chooses the kernel, and its registration;
- im2col.py: the group-1 kernels and their weight layouts (int8, int16, unsigned bytes);
- depthwise.py: the depthwise 3x3 kernels, and their band form (QLinearConvGather);
- channels.py: the output and input channels pruned models leave constant;
- integer.py: ConvInteger;
- float_conv.py: the float Conv and ConvAdd ORT computes, and the QDQ rule for Conv.
"""

from . import depthwise, float_conv, integer, qlinear  # noqa: F401  (each registers its operators)
