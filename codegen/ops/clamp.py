"""Relu and Clip on int8/uint8 tensors: integer clamps of the raw values, exact."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import ModelError
from ..ir import QUANT_RANGE, Graph, Node, Tensor
from ..program import Alias, CStruct, KernelCall
from . import Inferred, LoweringOptions, OpDef, register
from ._common import check_dtype, constant_input, input_tensor, reject_unknown_attrs

SOURCES = ("clamp.c",)


def clamp_bounds(node: Node, graph: Graph, dtype: str) -> tuple[int, int]:
    lo, hi = QUANT_RANGE[dtype]
    if node.op_type == "Relu":
        return max(lo, 0), hi
    for index, what in ((1, "min"), (2, "max")):
        if node.input(index) is None:
            continue
        value = constant_input(node, graph, index, what)
        if value.size != 1 or str(value.dtype) != dtype:
            raise ModelError(f"{node.describe()}: {what} must be a {dtype} scalar")
        if index == 1:
            lo = max(lo, int(value.reshape(-1)[0]))
        else:
            hi = min(hi, int(value.reshape(-1)[0]))
    return lo, hi


def infer_clamp(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, set())
    x = input_tensor(node, graph, 0, "X")
    check_dtype(node, "input X", x, ("int8", "uint8"))
    clamp_bounds(node, graph, x.dtype)
    return Inferred([Tensor(node.outputs[0], x.dtype, x.shape, x.quant)])


def lower_clamp(node: Node, graph: Graph, options: LoweringOptions) -> Sequence[
        KernelCall | Alias]:
    x = graph.tensors[node.inputs[0]]
    lo, hi = clamp_bounds(node, graph, x.dtype)
    params = CStruct("q8_clamp_params", (("size", x.numel), ("min", lo), ("max", hi)))
    suffix = "u8" if x.dtype == "uint8" else "s8"
    return [KernelCall(f"q8_clamp_{suffix}", node.name, (x.name,), (node.outputs[0],), params,
                       (), SOURCES)]


# Integer types arrive in Relu-14 and Clip-12; earlier versions are float-only.
INT8_TYPES = frozenset({"uint8", "int8"})
register(OpDef("Relu", "", infer_clamp, lower_clamp, versions=(14,), data_dtypes=INT8_TYPES))
register(OpDef("Clip", "", infer_clamp, lower_clamp, versions=(12, 13),
               constant_inputs=frozenset({1, 2}), data_dtypes=INT8_TYPES))
