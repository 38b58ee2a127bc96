"""Gather along one axis with constant indices (channel picks and shuffles, sequence
picks, torch's x[:, k]) on any dtype: a scalar index is a view (views.c's strided
copy), a list of indices one gather kernel call. Gather with computed indices is taken
only as a lookup in a constant 256-entry table indexed by an 8-bit tensor (as `convert`
writes onnx2mcu's Table; transform/tabulate.py turns it back into a Table)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from codegen.core.ir import Graph, Node, Tensor, itemsize
from codegen.core.program import CArray, CRef, CStruct, KernelCall, Lowered
from codegen.errors import ModelError, UnsupportedError

from . import Inferred, LoweringOptions, OpDef, register
from ._common import attr_int, input_tensor, normalize_axis, reject_unknown_attrs
from .views import SOURCES, View, carried_quant, check_view, dense_strides, view_call

INDEX_TYPES = ("int32", "int64")


@dataclass(frozen=True)
class GatherSpec:
    axis: int
    indices: NDArray[Any] | None  # normalized (>= 0), or None when computed at run time


def constant_indices(node: Node, graph: Graph, length: int) -> NDArray[Any] | None:
    name = node.inputs[1]
    if name not in graph.constants:
        return None
    values = graph.constants[name].astype(np.int64)
    if values.size and (values.min() < -length or values.max() >= length):
        raise ModelError(f"{node.describe()}: an index is outside [-{length}, {length - 1}]")
    return np.where(values < 0, values + length, values)


def infer_gather(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, {"axis"})
    data = input_tensor(node, graph, 0, "data")
    name = node.input(1)
    if name is None:
        raise ModelError(f"{node.describe()}: required input 1 (indices) is missing")
    index_dtype = str(graph.constants[name].dtype) if name in graph.constants else \
        input_tensor(node, graph, 1, "indices").dtype
    if index_dtype not in INDEX_TYPES:
        raise ModelError(f"{node.describe()}: indices are {index_dtype}; expected int32 "
                         "or int64")
    axis = normalize_axis(node, attr_int(node, "axis", 0), len(data.shape))
    indices = constant_indices(node, graph, data.shape[axis])
    index_shape = tuple(int(d) for d in (graph.constants[name].shape if indices is not None
                                         else graph.tensors[name].shape))
    shape = (*data.shape[:axis], *index_shape, *data.shape[axis + 1:])
    if 0 in shape:
        raise UnsupportedError(f"{node.describe()}: the output is empty, which onnx2mcu does "
                               "not support")
    quant = carried_quant(data) if indices is not None else None
    return Inferred([Tensor(node.outputs[0], data.dtype, shape, quant)],
                    spec=GatherSpec(axis, indices))


def lower_gather(node: Node, graph: Graph, spec: GatherSpec,
                 options: LoweringOptions) -> Sequence[Lowered]:
    x, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    if spec.indices is None:
        raise UnsupportedError(f"{node.describe()}: Gather with indices computed at run time "
                               "is supported only as a lookup in a constant 256-entry table "
                               "indexed by an 8-bit tensor")
    if spec.indices.ndim == 0:
        strides = dense_strides(x.shape)
        keep = [d for d in range(len(x.shape)) if d != spec.axis]
        view = check_view(node, View(int(spec.indices) * strides[spec.axis],
                                     tuple(x.shape[d] for d in keep),
                                     tuple(strides[d] for d in keep)))
        return [view_call(node, x, y.name, view)]
    inner = int(np.prod(x.shape[spec.axis + 1:], dtype=np.int64)) * itemsize(x.dtype)
    params = CStruct("q8_gather_params", (
        ("outer", int(np.prod(x.shape[:spec.axis], dtype=np.int64))),
        ("axis_len", x.shape[spec.axis]), ("count", int(spec.indices.size)),
        ("inner_bytes", inner), ("indices", CRef("indices"))))
    return [KernelCall("q8_gather_axis", node.name, (x.name,), (y.name,), params,
                       (CArray("indices", "int32_t", spec.indices.reshape(-1).astype(np.int32)),),
                       SOURCES)]


# ORT drops the DequantizeLinear/QuantizeLinear around a Gather when both sides share one
# quantization.
register(OpDef("Gather", "", infer_gather, lower_gather, versions=(1, 11, 13),
               moves_values=True))
