"""What the generated C is checked against, and the only stage that imports ONNX
Runtime: bit-exact comparison (`verify`), which of ORT's CPU-dependent kernels the
local ORT runs (`cpu`), accuracy against the float model (`validate`), and ORT's
quantizer (`quantize`)."""
