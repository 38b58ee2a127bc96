"""Transpose of any supported dtype. A permutation that only moves size-1 axes keeps
the bytes in order, so it becomes an alias. One that, once size-1 axes are dropped and
axes that stay together are merged, swaps two blocks (NHWC <-> NCHW, a matrix
transpose, batched or not) is a tiled 2-D transpose; anything else is a strided copy."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from codegen.core.ir import Graph, Node, Tensor, itemsize
from codegen.core.program import Alias, CInts, CStruct, KernelCall, Overlap
from codegen.errors import ModelError, UnsupportedError

from . import ELEMENTWISE_ROWS, BandRule, Inferred, LoweringOptions, OpDef, RowAccess, register
from ._common import attr_ints, input_tensor, reject_unknown_attrs

MAX_RANK = 8


@dataclass(frozen=True)
class TransposeSpec:
    perm: tuple[int, ...]  # normalized (>= 0)


def permutation(node: Node, rank: int) -> list[int]:
    perm = attr_ints(node, "perm", None)
    if perm is None:
        return list(reversed(range(rank)))
    if sorted(a % rank if -rank <= a < rank else -1 for a in perm) != list(range(rank)):
        raise ModelError(f"{node.describe()}: perm {perm} is not a permutation of {rank} axes")
    return [a % rank for a in perm]


def infer_transpose(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, {"perm"})
    x = input_tensor(node, graph, 0, "data")
    if len(x.shape) > MAX_RANK:
        raise UnsupportedError(f"{node.describe()}: rank {len(x.shape)} is above {MAX_RANK}")
    perm = permutation(node, len(x.shape))
    quant = x.quant if x.quant is None or x.quant.axis is None else None
    return Inferred([Tensor(node.outputs[0], x.dtype, tuple(x.shape[a] for a in perm), quant)],
                    spec=TransposeSpec(tuple(perm)))


def keeps_order(shape: tuple[int, ...], perm: list[int]) -> bool:
    """True when the axes of size > 1 stay in the same relative order."""
    moved = [a for a in perm if shape[a] != 1]
    return moved == sorted(moved)


def merged_axes(shape: tuple[int, ...], perm: list[int]) -> tuple[list[int], list[int]]:
    """The permutation on merged axes: size-1 axes dropped, and input axes that follow
    each other in the output merged into one. Returns (merged input shape, merged perm)."""
    kept = [a for a in perm if shape[a] != 1]
    groups: list[list[int]] = []
    for a in kept:
        if groups and groups[-1][-1] + 1 == a:
            groups[-1].append(a)
        else:
            groups.append([a])
    order = sorted(range(len(groups)), key=lambda g: groups[g][0])
    sizes = [int(np.prod([shape[a] for a in groups[g]], dtype=np.int64)) for g in order]
    rank_of = {g: i for i, g in enumerate(order)}
    return sizes, [rank_of[g] for g in range(len(groups))]


def transpose_overlap(batches: int, rows: int, cols: int, esize: int) -> Overlap | None:
    """q8_transpose_2d writes output column cols - 1 (its last rows of the output) after
    reading every element of the tile's input rows, and the columns before it lie below
    it: the output may start (cols - 1) * rows elements before the input, or further.
    An NHWC input transposed to NCHW (tf2onnx's first node) then needs 1/C more bytes
    instead of twice its size."""
    if batches != 1:
        return None
    return Overlap(0, -(cols - 1) * rows * esize)


def lower_transpose(node: Node, graph: Graph, spec: TransposeSpec,
        options: LoweringOptions) -> Sequence[
        KernelCall | Alias]:
    x = graph.tensors[node.inputs[0]]
    y = graph.tensors[node.outputs[0]]
    perm = list(spec.perm)
    if keeps_order(x.shape, perm):
        return [Alias(y.name, x.name)]
    sizes, merged = merged_axes(x.shape, perm)
    if merged in ([1, 0], [0, 2, 1]):
        batches = sizes[0] if len(sizes) == 3 else 1
        rows, cols = sizes[-2], sizes[-1]
        params_2d = CStruct("q8_transpose_2d_params", (
            ("batches", batches), ("rows", rows), ("cols", cols),
            ("element_size", itemsize(x.dtype))))
        return [KernelCall("q8_transpose_2d", node.name, (x.name,), (y.name,), params_2d, (),
                           ("transpose.c",),
                           overlap=transpose_overlap(batches, rows, cols, itemsize(x.dtype)))]
    strides = [int(np.prod(x.shape[a + 1:], dtype=np.int64)) for a in range(len(x.shape))]
    pad = [0] * (MAX_RANK - len(perm))
    params = CStruct("q8_transpose_params", (
        ("rank", len(perm)), ("element_size", itemsize(x.dtype)),
        ("out_shape", CInts(tuple(y.shape) + tuple(pad))),
        ("in_stride", CInts(tuple(strides[a] for a in perm) + tuple(pad))),
    ))
    return [KernelCall("q8_transpose", node.name, (x.name,), (y.name,), params, (),
                       ("transpose.c",))]


# An exporter's input transpose, NHWC -> NCHW: its output row r is its input's row r, a
# contiguous run of W x C values.
NHWC_TO_NCHW = [0, 3, 1, 2]


def transpose_row_access(node: Node, graph: Graph) -> dict[int, RowAccess] | None:
    return {0: ELEMENTWISE_ROWS} if list(node.attrs.get("perm", [])) == NHWC_TO_NCHW else None


register(OpDef("Transpose", "", infer_transpose, lower_transpose,
               versions=(1, 13, 21, 23, 24, 25), moves_values=True, ort_propagates=True,
               integer_only_propagates=True,
               bands=BandRule((0,), transpose_row_access, rows_axis=1)))
