"""LayerNormalization (opset 17) on float32, a float island: ORT has no integer
LayerNormalization (its QDQ rules leave DQ -> LayerNormalization -> Q in float, and its
quantizer leaves QOperator models' LayerNormalization float), so it is computed in
ORT 1.32's order (runtime_c/layer_norm_f32.c), over the trailing dimensions from axis.
Rows of fewer than 8 values take ORT's scalar Welford loop; longer ones MLAS's AVX2
kernel (x86-64 with AVX2 and FMA): a double-precision mean, then a float32 centred sum
of squares. Scale and bias are float initializers or DequantizeLinear of constants,
computed at generation time as ORT computes them. The optional Mean and InvStdDev
outputs are reproduced too.

SimplifiedLayerNormalization (RMS normalization: ORT's contrib operator of the ONNX domain,
which its SimplifiedLayerNormFusion writes, transform/float_fusions.py) shares the checks
and the parameters, with its own kernel: no mean, no bias."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from codegen.core.ir import Graph, Node, Tensor
from codegen.core.program import CArray, CFloat, CRef, CStruct, KernelCall, Lowered
from codegen.errors import ModelError, UnsupportedError

from . import Inferred, LoweringOptions, OpDef, register
from ._common import attr_float, attr_int, normalize_axis, reject_unknown_attrs
from ._float import FLOAT_TYPES, float_input
from .conv_transpose import constant_float

F32 = np.float32
SOURCES = ("layer_norm_f32.c",)
# ORT 1.32 computes float32 LayerNormalization in float whatever stash_type says
# (measured for 0 and 1; the other values are not).
STASH_TYPES = (0, 1)


@dataclass(frozen=True)
class LayerNormSpec:
    rows: int  # product of the dimensions before axis
    size: int  # product of the dimensions from axis: one normalized row
    epsilon: float  # float32
    bias: bool
    stats: bool  # Mean and InvStdDev are computed
    simplified: bool = False  # SimplifiedLayerNormalization


def infer_layer_norm(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, {"axis", "epsilon", "stash_type"})
    x = float_input(node, graph, 0, "X")
    rank = len(x.shape)
    if rank == 0:
        raise ModelError(f"{node.describe()}: X is a scalar")
    axis = normalize_axis(node, attr_int(node, "axis", -1), rank)
    epsilon = float(F32(attr_float(node, "epsilon", 1e-5)))
    stash = attr_int(node, "stash_type", 1)
    if stash not in STASH_TYPES:
        raise UnsupportedError(f"{node.describe()}: stash_type {stash} is not supported "
                               f"(only {', '.join(map(str, STASH_TYPES))}, which ONNX Runtime "
                               "computes the same way in float32)")
    norm_shape = tuple(x.shape[axis:])
    simplified = node.op_type == "SimplifiedLayerNormalization"
    if simplified and (node.input(2) is not None or any(node.outputs[1:])):
        raise UnsupportedError(f"{node.describe()}: only the X and scale inputs and the Y "
                               "output are supported")
    for index, what in ((1, "Scale"), (2, "B")):
        if node.input(index) is None:
            if index == 1:
                raise ModelError(f"{node.describe()}: the Scale input is required")
            continue
        t = float_input(node, graph, index, what)
        if tuple(t.shape) != norm_shape:
            raise UnsupportedError(
                f"{node.describe()}: {what} has shape {list(t.shape)}; only the normalized "
                f"shape X.shape[axis:] = {list(norm_shape)} is supported (ONNX Runtime "
                "broadcasts others with another kernel)")
    outputs = list(node.outputs) + [""] * (3 - len(node.outputs))
    wanted = [bool(name) for name in outputs[1:3]]
    if any(wanted) and not all(wanted):
        raise UnsupportedError(f"{node.describe()}: only one of the Mean and InvStdDev "
                               "outputs is used; onnx2mcu computes both or neither")
    rows = int(np.prod(x.shape[:axis], dtype=np.int64))
    size = int(np.prod(norm_shape, dtype=np.int64))
    if size == 0:
        raise ModelError(f"{node.describe()}: the normalized shape {list(norm_shape)} is "
                         "empty")
    stat_shape = tuple(x.shape[:axis]) + (1,) * (rank - axis)
    tensors = [Tensor(outputs[0], "float32", x.shape)]
    if all(wanted):
        tensors += [Tensor(outputs[1], "float32", stat_shape),
                    Tensor(outputs[2], "float32", stat_shape)]
    return Inferred(tensors, spec=LayerNormSpec(rows, size, epsilon,
                                                node.input(2) is not None, all(wanted),
                                                simplified))


def norm_params(node: Node, graph: Graph, spec: LayerNormSpec, scale: tuple[int, str],
                bias: tuple[int, str]) -> tuple[list[CArray], CStruct]:
    """The scale and bias arrays (the inputs at those indexes, so named in messages) and
    the q8_layer_norm_f32_params pointing at them."""
    arrays = [CArray("scale", "float", constant_float(node, graph, *scale)
                     .astype(F32).reshape(-1))]
    if spec.bias:
        arrays.append(CArray("bias", "float", constant_float(node, graph, *bias)
                             .astype(F32).reshape(-1)))
    return arrays, CStruct("q8_layer_norm_f32_params", (
        ("rows", spec.rows), ("size", spec.size), ("epsilon", CFloat(spec.epsilon)),
        ("scale", CRef("scale")), ("bias", CRef("bias") if spec.bias else None)))


def lower_layer_norm(node: Node, graph: Graph, spec: LayerNormSpec,
                     options: LoweringOptions) -> Sequence[Lowered]:
    arrays, params = norm_params(node, graph, spec, (1, "scale"), (2, "bias"))
    outputs = tuple(node.outputs[:3]) if spec.stats else (node.outputs[0],)
    function = "q8_simplified_layer_norm_f32" if spec.simplified else \
        "q8_layer_norm_stats_f32" if spec.stats else "q8_layer_norm_f32"
    return [KernelCall(function, node.name, (node.inputs[0],), outputs, params,
                       tuple(arrays), SOURCES, macs=2 * spec.rows * spec.size)]


register(OpDef("LayerNormalization", "", infer_layer_norm, lower_layer_norm,
               versions=(17,), data_dtypes=FLOAT_TYPES, float_island=True))
# ORT registers it once, in the ONNX domain, for every opset; onnx has no schema of it, so
# its version is the model's opset.
register(OpDef("SimplifiedLayerNormalization", "", infer_layer_norm, lower_layer_norm,
               versions=tuple(range(1, 29)), data_dtypes=FLOAT_TYPES,  # the importer's opsets
               float_island=True))


@dataclass(frozen=True)
class SkipLayerNormSpec:
    norm: LayerNormSpec
    skip_bias: bool


def infer_skip_layer_norm(node: Node, graph: Graph) -> Inferred:
    """com.microsoft SkipLayerNormalization (input, skip, gamma, beta, bias), as ORT's
    SkipLayerNormFusion writes it: 3-D input and skip of one shape, 1-D gamma, beta and
    bias over the last axis; only the first output."""
    reject_unknown_attrs(node, {"epsilon"})
    x = float_input(node, graph, 0, "input")
    skip = float_input(node, graph, 1, "skip")
    if len(x.shape) != 3 or skip.shape != x.shape:
        raise UnsupportedError(f"{node.describe()}: input and skip must be 3-D of one shape "
                               f"(they are {list(x.shape)} and {list(skip.shape)})")
    if any(node.outputs[1:]):
        raise UnsupportedError(f"{node.describe()}: only the first output is supported")
    size = x.shape[-1]
    for index, what in ((2, "gamma"), (3, "beta"), (4, "bias")):
        if node.input(index) is None:
            if index == 2:
                raise ModelError(f"{node.describe()}: gamma is required")
            continue
        if tuple(float_input(node, graph, index, what).shape) != (size,):
            raise UnsupportedError(f"{node.describe()}: {what} must have shape [{size}]")
    rows = x.shape[0] * x.shape[1]
    epsilon = float(F32(attr_float(node, "epsilon", 1e-12)))
    norm = LayerNormSpec(rows, size, epsilon, node.input(3) is not None, False)
    return Inferred([Tensor(node.outputs[0], "float32", x.shape)],
                    spec=SkipLayerNormSpec(norm, node.input(4) is not None))


def lower_skip_layer_norm(node: Node, graph: Graph, spec: SkipLayerNormSpec,
                          options: LoweringOptions) -> Sequence[Lowered]:
    arrays, norm = norm_params(node, graph, spec.norm, (2, "gamma"), (3, "bias"))
    if spec.skip_bias:
        arrays.append(CArray("skip_bias", "float", constant_float(node, graph, 4, "skip_bias")
                             .astype(F32).reshape(-1)))
    params = CStruct("q8_skip_layer_norm_f32_params", (
        ("norm", norm), ("skip_bias", CRef("skip_bias") if spec.skip_bias else None)))
    return [KernelCall("q8_skip_layer_norm_f32", node.name, tuple(node.inputs[:2]),
                       (node.outputs[0],), params, tuple(arrays), SOURCES,
                       macs=2 * spec.norm.rows * spec.norm.size)]


register(OpDef("SkipLayerNormalization", "com.microsoft", infer_skip_layer_norm,
               lower_skip_layer_norm, data_dtypes=FLOAT_TYPES, float_island=True))
