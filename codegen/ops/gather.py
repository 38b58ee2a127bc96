"""Gather along one axis. Today it is taken only where a pattern absorbs it: a lookup in
a constant 256-entry table indexed by an 8-bit tensor (as `convert` writes onnx2mcu's
Table; passes/tabulate.py turns it back into a Table). Elsewhere it is refused at
lowering, naming the node."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import ModelError, UnsupportedError
from ..ir import Graph, Node, Tensor
from ..program import Lowered
from . import Inferred, LoweringOptions, OpDef, register
from ._common import attr_int, input_tensor, normalize_axis, reject_unknown_attrs

INDEX_TYPES = ("int32", "int64")


def infer_gather(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, {"axis"})
    data = input_tensor(node, graph, 0, "data")
    indices = input_tensor(node, graph, 1, "indices")
    if indices.dtype not in INDEX_TYPES:
        raise ModelError(f"{node.describe()}: indices are {indices.dtype}; expected int32 "
                         "or int64")
    axis = normalize_axis(node, attr_int(node, "axis", 0), len(data.shape))
    shape = (*data.shape[:axis], *indices.shape, *data.shape[axis + 1:])
    return Inferred([Tensor(node.outputs[0], data.dtype, shape)])


def lower_gather(node: Node, graph: Graph, spec: object,
               options: LoweringOptions) -> Sequence[Lowered]:
    raise UnsupportedError(f"{node.describe()}: Gather is supported only as a lookup in a "
                           "constant 256-entry table indexed by an 8-bit tensor")


register(OpDef("Gather", "", infer_gather, lower_gather, versions=(1, 11, 13)))
