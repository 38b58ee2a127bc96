"""ArgMax and ArgMin (a classifier's last node): the index of the first largest (or
smallest) value along one axis, or of the last one with select_last_index, as int64, on
uint8, int8 (QOperator models give ArgMax the quantized tensor) and float32 (DQ ->
ArgMax in QDQ models, a float island whose indices are those of the integers). ORT
compares each value with the best so far, `>` (`>=` for the last index) from the first
value: measured on ORT 1.32 with ties on every dtype, equal to numpy's argmax."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from codegen.core.ir import Graph, Node, Tensor
from codegen.core.program import CStruct, KernelCall, Lowered
from codegen.errors import ModelError

from . import Inferred, LoweringOptions, OpDef, register
from ._common import attr_int, input_tensor, kernel_suffix, normalize_axis, reject_unknown_attrs

SOURCES = ("argmax.c",)


@dataclass(frozen=True)
class ArgSpec:
    outer: int  # the product of the axes before the axis
    length: int  # the axis
    inner: int  # the product of the axes after it
    last: bool  # select_last_index


def infer_arg(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, {"axis", "keepdims", "select_last_index"})
    x = input_tensor(node, graph, 0, "data")
    rank = len(x.shape)
    if rank == 0:
        raise ModelError(f"{node.describe()}: the input is a scalar; it needs an axis")
    axis = normalize_axis(node, attr_int(node, "axis", 0), rank)
    keep = attr_int(node, "keepdims", 1)
    shape = tuple(1 if d == axis else n for d, n in enumerate(x.shape)) if keep else \
        tuple(n for d, n in enumerate(x.shape) if d != axis)
    spec = ArgSpec(int(np.prod(x.shape[:axis], dtype=np.int64)), x.shape[axis],
                   int(np.prod(x.shape[axis + 1:], dtype=np.int64)),
                   bool(attr_int(node, "select_last_index", 0)))
    return Inferred([Tensor(node.outputs[0], "int64", shape)], spec=spec)


def lower_arg(node: Node, graph: Graph, spec: ArgSpec,
              options: LoweringOptions) -> Sequence[Lowered]:
    x, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    params = CStruct("q8_arg_params", (("outer", spec.outer), ("length", spec.length),
                                       ("inner", spec.inner), ("last", int(spec.last))))
    function = "q8_argmax" if node.op_type == "ArgMax" else "q8_argmin"
    return [KernelCall(f"{function}_{kernel_suffix(x.dtype)}", node.name, (x.name,),
                       (y.name,), params, (), SOURCES)]


for _op in ("ArgMax", "ArgMin"):
    register(OpDef(_op, "", infer_arg, lower_arg, versions=(1, 11, 12, 13),
                   data_dtypes=frozenset({"uint8", "int8", "float32"}), float_island=True))
