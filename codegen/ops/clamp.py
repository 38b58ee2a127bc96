"""Relu and Clip: integer clamps of raw 8-bit or 16-bit values, or float32 clamps (exact
either way)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from codegen.core.ir import QDQ_RANGE, Graph, Node, Tensor
from codegen.core.program import Alias, CFloat, CStruct, KernelCall
from codegen.errors import ModelError

from . import Inferred, LoweringOptions, OpDef, lookup, register
from ._common import (
    attr_float,
    check_dtype,
    constant_input,
    input_tensor,
    kernel_suffix,
    reject_unknown_attrs,
)
from ._export import export_through_int32

SOURCES = ("clamp.c",)


@dataclass(frozen=True)
class ClampSpec:
    lo: float  # [lo, hi]: ints for 8-bit tensors, floats for float32
    hi: float


def clamp_bounds(node: Node, graph: Graph, dtype: str) -> tuple[float, float]:
    """[min, max] of a Relu or Clip: ints for integer tensors, floats for float32."""
    lo, hi = QDQ_RANGE.get(dtype, (-math.inf, math.inf))
    if node.op_type == "Relu":
        return max(lo, 0), hi
    if node.opset < 11:  # Clip-6: float attributes
        return (attr_float(node, "min", -3.4028234663852886e38),
                attr_float(node, "max", 3.4028234663852886e38))
    for index, what in ((1, "min"), (2, "max")):
        if node.input(index) is None:
            continue
        value = constant_input(node, graph, index, what)
        if value.size != 1 or str(value.dtype) != dtype:
            raise ModelError(f"{node.describe()}: {what} must be a {dtype} scalar")
        bound = value.reshape(-1)[0]
        bound = float(bound) if dtype == "float32" else int(bound)
        if index == 1:
            lo = max(lo, bound)
        else:
            hi = min(hi, bound)
    return lo, hi


def infer_clamp(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, {"min", "max"} if node.opset < 11 else set())
    x = input_tensor(node, graph, 0, "X")
    check_dtype(node, "input X", x, ("int8", "uint8", "int16", "uint16", "float32"))
    lo, hi = clamp_bounds(node, graph, x.dtype)
    return Inferred([Tensor(node.outputs[0], x.dtype, x.shape, x.quant)], spec=ClampSpec(lo, hi))


def absorbed_clamp(node: Node, graph: Graph) -> tuple[int, int] | None:
    """The bounds of the integer Relu/Clip that `node` applies for its only reader:
    operators whose OpDef says they absorb a clamp (they clamp their own integer output,
    in a requantization to [act_min, act_max] or a lookup table) fold a Relu/Clip that
    alone reads their output into that clamp (exact: rounding is monotone and the
    bounds are integers), and it costs nothing."""
    out = node.outputs[0]
    opdef = lookup(node)
    if opdef is None or not opdef.absorbs_clamp or out in graph.outputs or \
            graph.tensors[out].dtype not in QDQ_RANGE:
        return None
    readers = graph.readers(out)
    if len(readers) != 1 or readers[0].domain or readers[0].op_type not in ("Relu", "Clip") \
            or readers[0].inputs[0] != out:
        return None
    lo, hi = clamp_bounds(readers[0], graph, graph.tensors[out].dtype)
    return int(lo), int(hi)


def output_range(node: Node, graph: Graph, dtype: str) -> tuple[int, int]:
    """[act_min, act_max] of an integer output, narrowed by an absorbed Relu/Clip."""
    qmin, qmax = QDQ_RANGE[dtype]
    bounds = absorbed_clamp(node, graph)
    if bounds is None:
        return qmin, qmax
    return max(qmin, bounds[0]), min(qmax, bounds[1])


def clamp_output_table(table: NDArray[Any], node: Node, graph: Graph) -> NDArray[Any]:
    """A lookup table with an absorbed Relu/Clip applied to its entries."""
    bounds = absorbed_clamp(node, graph)
    if bounds is None:
        return table
    clamped: NDArray[Any] = np.minimum(np.maximum(table, bounds[0]), bounds[1])
    return clamped.astype(table.dtype)


def is_absorbed(node: Node, graph: Graph) -> bool:
    source = graph.producer(node.inputs[0])
    return source is not None and absorbed_clamp(source, graph) is not None


def lower_clamp(node: Node, graph: Graph, spec: ClampSpec,
        options: LoweringOptions) -> Sequence[
        KernelCall | Alias]:
    x = graph.tensors[node.inputs[0]]
    if is_absorbed(node, graph):
        return [Alias(node.outputs[0], x.name)]
    lo, hi = spec.lo, spec.hi
    if x.dtype == "float32":
        params = CStruct("q8_clamp_f32_params", (
            ("size", x.numel), ("min", CFloat(max(lo, -FLT_MAX))),
            ("max", CFloat(min(hi, FLT_MAX)))))
    else:
        params = CStruct("q8_clamp_params", (("size", x.numel), ("min", int(lo)),
                                              ("max", int(hi))))
    return [KernelCall(f"q8_clamp_{kernel_suffix(x.dtype)}", node.name, (x.name,),
                       (node.outputs[0],), params, (), SOURCES, in_place=0)]


FLT_MAX = 3.4028234663852886e38


# Integer types arrive in Relu-14 and Clip-12; earlier versions take floats only.
TYPES = frozenset({"uint8", "int8", "uint16", "int16", "float32"})
def relu_values(node: Node, operands: list[NDArray[np.float32]]) -> NDArray[np.float32]:
    return np.maximum(operands[0], np.float32(0.0)).astype(np.float32)


def clip_values(node: Node, operands: list[NDArray[np.float32]]) -> NDArray[np.float32]:
    """Clip-6's attribute bounds; from Clip-11 the bounds are inputs, which the table
    pass hands over as scalar operands."""
    v = operands[0]
    if node.opset < 11:
        lo = np.float32(attr_float(node, "min", -FLT_MAX))
        hi = np.float32(attr_float(node, "max", FLT_MAX))
    else:
        present = [i for i in (1, 2) if node.input(i) is not None]
        bounds = dict(zip(present, operands[1:], strict=True))
        lo = np.float32(bounds[1]) if 1 in bounds else np.float32(-FLT_MAX)
        hi = np.float32(bounds[2]) if 2 in bounds else np.float32(FLT_MAX)
    return np.minimum(np.maximum(v, lo), hi).astype(np.float32)


register(OpDef("Relu", "", infer_clamp, lower_clamp, versions=(6, 13, 14), data_dtypes=TYPES,
               elementwise=relu_values))
# AMD Quark quantizes a Clip's bounds (GhostNet's ReLU6) as int8 constants: their
# DequantizeLinear's values are read as ORT computes them (frontend/folding.py).
register(OpDef("Clip", "", infer_clamp, lower_clamp, versions=(6, 11, 12, 13),
               constant_inputs=frozenset({1, 2}), float_constants=frozenset({1, 2}),
               data_dtypes=TYPES, elementwise=clip_values,
               export=export_through_int32(0, (1, 2))))
