"""Arithmetic done exactly at generation time, as ONNX Runtime does it: requantization
constants (`requant`), float32 evaluation and 256-entry tables (`numerics`), glibc's
powf (`glibc_math`). Used by the operators and the transforms."""
