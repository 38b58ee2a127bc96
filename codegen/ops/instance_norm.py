"""InstanceNormalization on float32, a float island: ORT has no integer kernel for it
(DQ -> InstanceNormalization -> Q stays in float), so it is computed in the order of
ORT's CPU kernel (nn/instance_norm.cc, Eigen on x86-64's SSE packets;
runtime_c/instance_norm_f32.c): per (n, c) plane the Eigen mean, the Eigen sum of the
squared deviations, `inv = 1 / sqrtf(ss / W + eps)`, `s' = inv * scale[c]`,
`b' = bias[c] - mean * s'`, `y = x * s' + b'` (measured: 0 ULP on ORT 1.32). Scale and
bias are float initializers or DequantizeLinear of constants."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from codegen.core.ir import Graph, Node, Tensor
from codegen.core.program import CArray, CFloat, CRef, CStruct, KernelCall, Lowered
from codegen.errors import ModelError, UnsupportedError

from . import Inferred, LoweringOptions, OpDef, register
from ._common import attr_float, reject_unknown_attrs
from ._float import FLOAT_TYPES, float_input
from .conv_transpose import constant_float
from .kernels import kernel

F32 = np.float32
SOURCES = ("instance_norm_f32.c",)


@dataclass(frozen=True)
class InstanceNormSpec:
    planes: int
    channels: int
    size: int
    epsilon: float


def infer_instance_norm(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, {"epsilon"})
    x = float_input(node, graph, 0, "input")
    if len(x.shape) < 3:
        raise ModelError(f"{node.describe()}: the input has rank {len(x.shape)}; "
                         "InstanceNormalization needs (N, C, D1, ...)")
    channels = x.shape[1]
    for index, what in ((1, "scale"), (2, "B")):
        if node.input(index) is None:
            raise ModelError(f"{node.describe()}: input {what} is missing")
        shape = graph.tensors[node.inputs[index]].shape
        if shape != (channels,):
            raise ModelError(f"{node.describe()}: {what} has shape {list(shape)}; expected "
                             f"[{channels}]")
    size = int(np.prod(x.shape[2:], dtype=np.int64))
    if size < 1:
        raise UnsupportedError(f"{node.describe()}: an empty input")
    spec = InstanceNormSpec(x.shape[0] * channels, channels, size,
                            float(F32(attr_float(node, "epsilon", 1e-5))))
    return Inferred([Tensor(node.outputs[0], "float32", x.shape)], spec=spec)


def lower_instance_norm(node: Node, graph: Graph, spec: InstanceNormSpec,
                        options: LoweringOptions) -> Sequence[Lowered]:
    x, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    scale = constant_float(node, graph, 1, "scale").astype(F32).reshape(-1)
    bias = constant_float(node, graph, 2, "B").astype(F32).reshape(-1)
    params = CStruct("q8_instance_norm_f32_params", (
        ("planes", spec.planes), ("channels", spec.channels), ("size", spec.size),
        ("epsilon", CFloat(spec.epsilon)), ("scale", CRef("scale")), ("bias", CRef("bias"))))
    return [KernelCall("q8_instance_norm_f32", node.name, (x.name,), (y.name,), params,
                       (CArray("scale", "float", scale), CArray("bias", "float", bias)),
                       SOURCES, macs=3 * x.numel,
                       scratch_bytes=kernel("instance_norm_f32").scratch_bytes(params))]


register(OpDef("InstanceNormalization", "", infer_instance_norm, lower_instance_norm,
               versions=(6, 22), data_dtypes=FLOAT_TYPES,
               float_island=True))
