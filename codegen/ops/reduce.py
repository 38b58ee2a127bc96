"""ReduceMean, ReduceSum, ReduceMax and ReduceMin over any run of adjacent axes, as
[outer, length, inner] (a spatial ReduceMean is what torch's default exporter writes for
AdaptiveAvgPool2d(1), which the squeeze-and-excitation blocks of MobileNetV3 and MnasNet
use; a channel mean or max is CBAM's spatial attention).

ReduceMean and ReduceSum are float islands: ORT has no integer kernel for them. Over the
trailing axes it computes each row with Eigen's vectorized sum (SSE packets from the
tensor's first 16-byte boundary), then divides by the count; over the leading axes it
adds the rows one after the other; over inner axes it multiplies a vector of ones by
each [length, inner] block with MLAS's single-row SGEMM kernel (measured on ORT 1.32,
exact on every shape tried); runtime_c/reduce.c follows those orders. ReduceMax and
ReduceMin are exact on any type, and ORT drops the DequantizeLinear/QuantizeLinear
around them when both sides share one quantization."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from codegen.core.ir import Graph, Node, Tensor
from codegen.core.program import CStruct, KernelCall, Lowered
from codegen.errors import ModelError, UnsupportedError

from . import Inferred, LoweringOptions, OpDef, register
from ._common import (
    attr_int,
    attr_ints,
    constant_input,
    input_tensor,
    kernel_suffix,
    normalize_axis,
    reject_unknown_attrs,
)
from ._float import FLOAT_TYPES, float_input
from .views import carried_quant

SOURCES = ("reduce.c",)
# Opset where the axes move from an attribute to an input.
AXES_INPUT_SINCE = {"ReduceMean": 18, "ReduceSum": 13, "ReduceMax": 18, "ReduceMin": 18}


@dataclass(frozen=True)
class ReduceSpec:
    rows: int  # the product of the axes before the reduced ones
    length: int  # the product of the reduced axes
    inner: int  # the product of the axes after them
    # The reduced axes end with the last one: contiguous rows. ORT chooses its order by
    # the axes, not by the sizes: [33, 7, 1] over axis 1 is not a row sum (measured).
    trailing: bool


def reduced_axes(node: Node, graph: Graph, rank: int) -> list[int]:
    if node.opset >= AXES_INPUT_SINCE[node.op_type]:
        if node.input(1) is None:
            if attr_int(node, "noop_with_empty_axes", 0):
                raise UnsupportedError(f"{node.describe()}: noop_with_empty_axes is not "
                                       "supported")
            return list(range(rank))
        axes = [int(a) for a in constant_input(node, graph, 1, "axes").reshape(-1)]
    else:
        given = attr_ints(node, "axes", None)
        axes = list(range(rank)) if given is None else given
    normalized = sorted({normalize_axis(node, a, rank) for a in axes})
    if len(normalized) != len(axes):
        raise ModelError(f"{node.describe()}: an axis is repeated in {axes}")
    return normalized


def infer_reduce(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, {"axes", "keepdims", "noop_with_empty_axes"})
    if node.op_type in ("ReduceMean", "ReduceSum"):
        x = float_input(node, graph, 0, "data")
    else:
        x = input_tensor(node, graph, 0, "data")
    rank = len(x.shape)
    axes = reduced_axes(node, graph, rank)
    adjacent = axes == list(range(axes[0], axes[0] + len(axes))) if axes else True
    if not adjacent:
        raise UnsupportedError(f"{node.describe()}: reducing axes {axes} of a rank-{rank} "
                               "tensor; only adjacent axes are supported")
    keep = attr_int(node, "keepdims", 1)
    shape = tuple(1 if d in axes else n for d, n in enumerate(x.shape)) if keep else \
        tuple(n for d, n in enumerate(x.shape) if d not in axes)
    first = axes[0] if axes else rank
    after = axes[-1] + 1 if axes else rank
    length = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    rows = int(np.prod(x.shape[:first], dtype=np.int64))
    inner = int(np.prod(x.shape[after:], dtype=np.int64))
    quant = carried_quant(x) if node.op_type in ("ReduceMax", "ReduceMin") else None
    return Inferred([Tensor(node.outputs[0], x.dtype, shape, quant)],
                    spec=ReduceSpec(rows, length, inner, after == rank))


def summation_order(node: Node, graph: Graph) -> str:
    """How ORT adds a ReduceMean/ReduceSum: "rows" (trailing axes: Eigen's vectorized row
    sums), "leading" (rows added in order) or "inner" (MLAS's single-row SGEMM); the
    CPU profiles (codegen/oracle/cpu.py) tell which of them depend on the CPU."""
    x = graph.tensors[node.inputs[0]]
    rank = len(x.shape)
    axes = reduced_axes(node, graph, rank)
    if not axes or axes[-1] == rank - 1:
        return "rows"
    return "leading" if int(np.prod(x.shape[:axes[0]], dtype=np.int64)) == 1 else "inner"


def lower_reduce(node: Node, graph: Graph, spec: ReduceSpec,
                 options: LoweringOptions) -> Sequence[Lowered]:
    x, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    function = {"ReduceMean": "q8_reduce_mean", "ReduceSum": "q8_reduce_sum",
                "ReduceMax": "q8_reduce_max", "ReduceMin": "q8_reduce_min"}[node.op_type]
    if spec.trailing:
        params = CStruct("q8_reduce_params", (("rows", spec.rows), ("length", spec.length)))
    else:
        params = CStruct("q8_reduce_strided_params", (
            ("outer", spec.rows), ("length", spec.length), ("inner", spec.inner)))
        function += "_strided"
    return [KernelCall(f"{function}_{kernel_suffix(x.dtype)}", node.name, (x.name,),
                       (y.name,), params, (), SOURCES)]


def summation_traits(node: Node, graph: Graph) -> frozenset[str]:
    return frozenset({f"sums-{summation_order(node, graph)}"})


for _op, _versions in (("ReduceMean", (1, 11, 13, 18)), ("ReduceSum", (1, 11, 13))):
    register(OpDef(_op, "", infer_reduce, lower_reduce, versions=_versions,
                   constant_inputs=frozenset({1}), data_dtypes=FLOAT_TYPES, float_island=True,
                   ort_traits=summation_traits))
for _op in ("ReduceMax", "ReduceMin"):
    register(OpDef(_op, "", infer_reduce, lower_reduce, versions=(1, 11, 12, 13, 18, 20),
                   constant_inputs=frozenset({1}),
                   data_dtypes=frozenset({"uint8", "int8", "float32"}), moves_values=True))
