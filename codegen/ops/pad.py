"""Pad in every mode (constant, edge, reflect, wrap; negative pads crop) on any dtype:
tf2onnx writes it before a stride-2 convolution with SAME padding, torch for its
reflect and replicate padding modes. Each output element is an input element or the
padding value, so the result is exact for every type (runtime_c/pad.c, one index table
per axis).

In QDQ models ORT computes DQ -> Pad -> Q in float. With one quantization on both
sides that is Pad on the integers with the padding value quantized (Q(DQ(x)) is x), the
rule this family declares."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from codegen.arith.numerics import quantize_like_mlas
from codegen.core.ir import DTYPES, Graph, Node, Tensor, itemsize
from codegen.core.pattern import (
    Quantized,
    new_constant,
    per_tensor,
    same_quantization,
    scalar_params,
)
from codegen.core.program import CArray, CInts, CRef, CStruct, KernelCall, Lowered
from codegen.errors import ModelError, UnsupportedError

from . import Fusion, Inferred, LoweringOptions, OpDef, register
from ._common import (
    attr_float,
    attr_ints,
    attr_str,
    check_output_shape,
    constant_input,
    input_tensor,
    normalize_axis,
    reject_unknown_attrs,
)
from ._export import export_through_int32
from .views import carried_quant, dense_strides

SOURCES = ("pad.c",)
MAX_RANK = 6
MODES = ("constant", "reflect", "edge", "wrap")


@dataclass(frozen=True)
class PadSpec:
    tables: tuple[NDArray[Any], ...]  # per axis: the input index of each output index
    value: NDArray[Any]  # the padding value, as bytes


def pads_and_value(node: Node, graph: Graph, x: Tensor) -> tuple[list[int], list[int], Any]:
    rank = len(x.shape)
    if node.opset < 11:
        pads = attr_ints(node, "pads", None)
        if pads is None:
            raise ModelError(f"{node.describe()}: Pad-2 needs 'pads'")
        value: Any = attr_float(node, "value", 0.0)
        axes = list(range(rank))
    else:
        pads = [int(v) for v in constant_input(node, graph, 1, "pads").reshape(-1)]
        value = 0
        if node.input(2) is not None:
            constant = constant_input(node, graph, 2, "constant_value")
            if str(constant.dtype) != x.dtype or constant.size != 1:
                raise ModelError(f"{node.describe()}: constant_value must be one {x.dtype}")
            value = constant.reshape(-1)[0]
        axes = list(range(rank))
        if node.input(3) is not None:
            axes = [normalize_axis(node, int(a), rank)
                    for a in constant_input(node, graph, 3, "axes").reshape(-1)]
    if len(pads) != 2 * len(axes):
        raise ModelError(f"{node.describe()}: {len(pads)} pads for {len(axes)} axes")
    begin, end = [0] * rank, [0] * rank
    for k, axis in enumerate(axes):
        begin[axis], end[axis] = pads[k], pads[k + len(axes)]
    return begin, end, value


def axis_table(mode: str, n: int, before: int, after: int) -> NDArray[Any]:
    """The input index of each output index along one axis (-1: the constant), computed
    on whole arrays (infer_pad checks the output's length first: not empty, within the
    limits)."""
    out = n + before + after
    i = np.arange(-before, n + after, dtype=np.int64)
    inside = (i >= 0) & (i < n)
    if mode == "constant":
        outside = np.full(out, -1, np.int64)
    elif mode == "edge":
        outside = np.clip(i, 0, n - 1)
    elif mode == "wrap":
        outside = i % n
    elif n == 1:  # reflect, without repeating the edge
        outside = np.zeros(out, np.int64)
    else:
        period = 2 * (n - 1)
        k = i % period
        outside = np.where(k < n, k, period - k)
    return np.where(inside, i, outside).astype(np.int32)


def infer_pad(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, {"mode", "pads", "value"} if node.opset < 11 else {"mode"})
    x = input_tensor(node, graph, 0, "data")
    mode = attr_str(node, "mode", "constant")
    if mode not in MODES:
        raise ModelError(f"{node.describe()}: mode '{mode}' is not one of {', '.join(MODES)}")
    if len(x.shape) > MAX_RANK or not x.shape:
        raise UnsupportedError(f"{node.describe()}: rank {len(x.shape)}; 1 to {MAX_RANK} "
                               "are supported")
    begin, end, value = pads_and_value(node, graph, x)
    if mode == "reflect" and any(n == 1 and (b or e) for n, b, e in
                                 zip(x.shape, begin, end, strict=True)):
        raise ModelError(f"{node.describe()}: reflect padding of an axis of length 1")
    lengths = [n + b + e for n, b, e in zip(x.shape, begin, end, strict=True)]
    if min(lengths) < 1:
        raise UnsupportedError(f"{node.describe()}: the output is empty")
    check_output_shape(node, graph, lengths, x.dtype)
    tables = tuple(axis_table(mode, n, b, e)
                   for n, b, e in zip(x.shape, begin, end, strict=True))
    shape = tuple(int(t.size) for t in tables)
    raw = np.array(value, DTYPES[x.dtype][0]).reshape(1).view(np.uint8)
    return Inferred([Tensor(node.outputs[0], x.dtype, shape, carried_quant(x))],
                    spec=PadSpec(tables, raw))


def lower_pad(node: Node, graph: Graph, spec: PadSpec,
              options: LoweringOptions) -> Sequence[Lowered]:
    x, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    rank = len(x.shape)
    strides = dense_strides(x.shape)
    starts = np.cumsum([0] + [t.size for t in spec.tables[:-1]]).astype(int).tolist()
    pad = (0,) * (MAX_RANK - rank)
    params = CStruct("q8_pad_params", (
        ("rank", rank), ("element_size", itemsize(x.dtype)),
        ("out_shape", CInts(tuple(y.shape) + pad)), ("in_stride", CInts(tuple(strides) + pad)),
        ("table_start", CInts(tuple(starts) + pad)), ("index", CRef("index")),
        ("value", CRef("value"))))
    index = np.concatenate(spec.tables).astype(np.int32)
    return [KernelCall("q8_pad", node.name, (x.name,), (y.name,), params,
                       (CArray("index", "int32_t", index), CArray("value", "uint8_t", spec.value)),
                       SOURCES)]


def build_integer_pad(graph: Graph, node: Node, dqs: list[Quantized | None], y: Quantized,
                      integer_only: bool) -> list[str] | None:
    """DQ(x) -> Pad -> Q(y), one quantization: Pad of x with the value quantized."""
    x = dqs[0]
    if x is None or not per_tensor(x, graph) or not same_quantization(x, y, graph):
        return None
    params = scalar_params(y, graph)
    if params is None:
        return None
    inputs = [x.q, *node.inputs[1:2]]
    if node.opset < 11:
        return None  # Pad-2's float value attribute: left in float
    value_name = node.input(2)
    value = graph.constants.get(value_name, np.zeros((), np.float32)) if value_name else \
        np.zeros((), np.float32)
    dtype = graph.tensors[x.q].dtype
    quantized = quantize_like_mlas(np.asarray(value, np.float32).reshape(1), params[0],
                                   params[1], dtype).reshape(())
    inputs.append(new_constant(graph, f"{node.name}_value", quantized))
    if node.input(3) is not None:
        inputs.append(node.inputs[3])
    return inputs


register(OpDef("Pad", "", infer_pad, lower_pad, versions=(2, 11, 13, 18, 19, 21, 23, 24, 25),
               constant_inputs=frozenset({1, 2, 3}), float_constants=frozenset({2}),
               data_dtypes=frozenset({"uint8", "int8", "float32"}),
               fusion=Fusion("Pad", "", build_integer_pad),
               export=export_through_int32(0, (2,))))
