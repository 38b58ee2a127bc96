"""BatchNormalization (inference) on float32, a float island: ORT has no integer kernel
for it, and a BatchNormalization that no exporter folded (MixNet's after the Concat of
its mixed-kernel convolutions, a TCN's after a causal Slice) stays between
DequantizeLinear and QuantizeLinear. ORT's CPU kernel (nn/batch_norm.h, Eigen) computes
`inv = 1 / sqrt(var + eps)`, `s = inv * scale`, `b = bias - mean * s` per channel, then
`y = x * s + b` with a rounded product and a rounded sum (measured: 0 ULP on ORT 1.32);
s and b are computed here in the same float32 operations, the kernel does the rest
(runtime_c/batch_norm_f32.c). Scale, bias, mean and variance are float initializers or
DequantizeLinear of constants.

ORT folds a BatchNormalization into the Conv, ConvTranspose, MatMul or Gemm before it
when that operator's weights are a float initializer (its ConvBNFusion and
MatMulBNFusion, another arithmetic), so such a one is refused (a DequantizeLinear's
weights are not folded: measured); training mode (and the old spatial=0 form) too."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from codegen.core.ir import Graph, Node, Tensor
from codegen.core.program import CArray, CRef, CStruct, KernelCall, Lowered
from codegen.errors import ModelError, UnsupportedError

from . import Inferred, LoweringOptions, OpDef, register
from ._common import attr_float, attr_int, reject_unknown_attrs
from ._float import FLOAT_TYPES, float_input, producer, refuse
from .conv_transpose import constant_float

F32 = np.float32
SOURCES = ("batch_norm_f32.c",)
# The producers ORT's graph optimizations fold a following BatchNormalization into.
FOLDED_INTO = ("Conv", "ConvTranspose", "MatMul", "Gemm")
PARAMETERS = ((1, "scale"), (2, "B"), (3, "input_mean"), (4, "input_var"))


@dataclass(frozen=True)
class BatchNormSpec:
    batch: int
    channels: int
    size: int  # values per (n, c) plane
    epsilon: float


def infer_batch_norm(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, {"epsilon", "momentum", "training_mode", "spatial"})
    if attr_int(node, "training_mode", 0):
        raise UnsupportedError(f"{node.describe()}: training_mode=1 is not supported "
                               "(inference only)")
    if attr_int(node, "spatial", 1) != 1:
        raise UnsupportedError(f"{node.describe()}: spatial=0 is not supported")
    if len(node.outputs) > 1 and any(node.outputs[1:]):
        raise UnsupportedError(f"{node.describe()}: the running mean and variance outputs "
                               "(training) are not supported")
    x = float_input(node, graph, 0, "X")
    if len(x.shape) < 2:
        raise ModelError(f"{node.describe()}: the input has rank {len(x.shape)}; "
                         "BatchNormalization needs (N, C, ...)")
    channels = x.shape[1]
    for index, what in PARAMETERS:
        name = node.input(index)
        if name is None:
            raise ModelError(f"{node.describe()}: input {what} is missing")
        shape = graph.tensors[name].shape
        if shape != (channels,):
            raise ModelError(f"{node.describe()}: {what} has shape {list(shape)}; expected "
                             f"[{channels}]")
    size = int(np.prod(x.shape[2:], dtype=np.int64))
    spec = BatchNormSpec(x.shape[0], channels, size,
                         float(F32(attr_float(node, "epsilon", 1e-5))))
    return Inferred([Tensor(node.outputs[0], "float32", x.shape)], spec=spec)


def folded_scale_and_bias(scale: np.ndarray, bias: np.ndarray, mean: np.ndarray,
                          var: np.ndarray, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """ORT's per-channel s and b, each step one float32 operation as Eigen does it."""
    inv = (F32(1.0) / np.sqrt((var + F32(epsilon)).astype(F32))).astype(F32)
    s = (inv * scale).astype(F32)
    return s, (bias - (mean * s).astype(F32)).astype(F32)


def lower_batch_norm(node: Node, graph: Graph, spec: BatchNormSpec,
                     options: LoweringOptions) -> Sequence[Lowered]:
    source = producer(graph, node.inputs[0])
    if source is not None and not source.domain and source.op_type in FOLDED_INTO \
            and len(source.inputs) > 1 and source.inputs[1] in graph.constants:
        raise refuse(node, f"ONNX Runtime folds it into the {source.op_type} before it, "
                     "whose weights are float constants (another arithmetic), which onnx2mcu "
                     "does not reproduce")
    scale, bias, mean, var = (constant_float(node, graph, i, what).astype(F32).reshape(-1)
                              for i, what in PARAMETERS)
    s, b = folded_scale_and_bias(scale, bias, mean, var, spec.epsilon)
    x, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    params = CStruct("q8_batch_norm_f32_params", (
        ("batch", spec.batch), ("channels", spec.channels), ("size", spec.size),
        ("scale", CRef("scale")), ("bias", CRef("bias"))))
    return [KernelCall("q8_batch_norm_f32", node.name, (x.name,), (y.name,), params,
                       (CArray("scale", "float", s), CArray("bias", "float", b)),
                       SOURCES, macs=x.numel)]


register(OpDef("BatchNormalization", "", infer_batch_norm, lower_batch_norm,
               versions=(7, 9, 14, 15), data_dtypes=FLOAT_TYPES, float_island=True,
               float_constants=frozenset({1, 2, 3, 4})))
