"""Data movement as views of the input: Slice (steps of any sign), Split, Expand, Tile,
DepthToSpace and SpaceToDepth, on any dtype (int8/uint8 activations of QOp and QDQ
models, float32 in float islands). Each output element is an input element, so the
result is exact for every dtype, with no requantization: each is one strided copy
(runtime_c/views.c) whose offset, shape and strides are computed here. ORT drops the
DequantizeLinear/QuantizeLinear around Slice, Split, Expand and Tile when both sides
share one quantization (its DropQDQ rules); the same holds for DepthToSpace, which ORT
computes in float, since Q(DQ(x)) is x."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from codegen.core.ir import Graph, Node, QuantParams, Tensor, itemsize
from codegen.core.program import CInts, CStruct, KernelCall, Lowered
from codegen.errors import ModelError, UnsupportedError

from . import Inferred, LoweringOptions, OpDef, register
from ._common import (
    attr_int,
    attr_ints,
    attr_str,
    constant_input,
    input_tensor,
    normalize_axis,
    reject_unknown_attrs,
)

MAX_RANK = 8
SOURCES = ("views.c",)


@dataclass(frozen=True)
class View:
    """Output element i reads input element offset + sum(i[d] * strides[d])."""

    offset: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]


@dataclass(frozen=True)
class ViewSpec:
    views: tuple[View, ...]  # one per output


def dense_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(int(np.prod(shape[d + 1:], dtype=np.int64)) for d in range(len(shape)))


def carried_quant(x: Tensor) -> QuantParams | None:
    """A per-tensor quantization moves with the values; a per-axis one may not."""
    return x.quant if x.quant is not None and x.quant.axis is None else None


def check_view(node: Node, view: View) -> View:
    if any(d == 0 for d in view.shape):
        raise UnsupportedError(f"{node.describe()}: the output is empty, which onnx2mcu does "
                               "not support")
    if len(view.shape) > MAX_RANK:
        raise UnsupportedError(f"{node.describe()}: the copy needs {len(view.shape)} axes; "
                               f"at most {MAX_RANK} are supported")
    return view


def view_call(node: Node, x: Tensor, out: str, view: View) -> KernelCall:
    shape, strides = view.shape or (1,), view.strides or (0,)
    pad = (0,) * (MAX_RANK - len(shape))
    params = CStruct("q8_view_params", (
        ("rank", len(shape)), ("element_size", itemsize(x.dtype)), ("offset", view.offset),
        ("out_shape", CInts(tuple(shape) + pad)), ("in_stride", CInts(tuple(strides) + pad))))
    return KernelCall("q8_view_copy", node.name, (x.name,), (out,), params, (), SOURCES)


def lower_views(node: Node, graph: Graph, spec: ViewSpec,
                options: LoweringOptions) -> Sequence[Lowered]:
    x = graph.tensors[node.inputs[0]]
    return [view_call(node, x, out, view)
            for out, view in zip(node.outputs, spec.views, strict=True)]


def inferred_views(node: Node, x: Tensor, views: list[View],
                   shapes: list[tuple[int, ...]] | None = None) -> Inferred:
    """The outputs of `views` (with their own shapes where a view has more axes than
    its output, as Tile's and DepthToSpace's do)."""
    checked = tuple(check_view(node, v) for v in views)
    out_shapes = shapes or [v.shape for v in checked]
    outputs = [Tensor(name, x.dtype, shape, carried_quant(x))
               for name, shape in zip(node.outputs, out_shapes, strict=True)]
    return Inferred(outputs, spec=ViewSpec(checked))


# ------------------------------------------------------------------ Slice


def _slice_arguments(node: Node, graph: Graph, rank: int) -> tuple[list[int], list[int],
                                                                   list[int], list[int]]:
    if node.opset < 10:
        starts = attr_ints(node, "starts", None)
        ends = attr_ints(node, "ends", None)
        if starts is None or ends is None:
            raise ModelError(f"{node.describe()}: Slice-1 needs 'starts' and 'ends'")
        axes = attr_ints(node, "axes", None) or list(range(len(starts)))
        return starts, ends, axes, [1] * len(starts)

    def ints(index: int, what: str) -> list[int] | None:
        if node.input(index) is None:
            return None
        return [int(v) for v in constant_input(node, graph, index, what).reshape(-1)]

    starts, ends = ints(1, "starts"), ints(2, "ends")
    assert starts is not None and ends is not None
    axes = ints(3, "axes") or list(range(len(starts)))
    steps = ints(4, "steps") or [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ModelError(f"{node.describe()}: starts, ends, axes and steps differ in length")
    return starts, ends, axes, steps


def slice_view(node: Node, shape: tuple[int, ...], starts: list[int], ends: list[int],
               axes: list[int], steps: list[int]) -> View:
    """ONNX Slice's clamping (Python's slice semantics on each axis)."""
    strides = dense_strides(shape)
    out = list(shape)
    in_strides = list(strides)
    offset = 0
    seen: set[int] = set()
    for start, end, axis, step in zip(starts, ends, axes, steps, strict=True):
        axis = normalize_axis(node, axis, len(shape))
        if axis in seen:
            raise ModelError(f"{node.describe()}: axis {axis} is sliced twice")
        seen.add(axis)
        if step == 0:
            raise ModelError(f"{node.describe()}: a step of 0")
        first, _, _ = slice(start, end, step).indices(shape[axis])
        count = len(range(*slice(start, end, step).indices(shape[axis])))
        out[axis] = count
        in_strides[axis] = strides[axis] * step
        offset += first * strides[axis] if count else 0
    return View(offset, tuple(out), tuple(in_strides))


def infer_slice(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, {"starts", "ends", "axes"} if node.opset < 10 else set())
    x = input_tensor(node, graph, 0, "data")
    view = slice_view(node, x.shape, *_slice_arguments(node, graph, len(x.shape)))
    return inferred_views(node, x, [view])


# ------------------------------------------------------------------ Split


def split_sizes(node: Node, graph: Graph, length: int) -> list[int]:
    count = len(node.outputs)
    if node.opset >= 13 and node.input(1) is not None:
        sizes = [int(v) for v in constant_input(node, graph, 1, "split").reshape(-1)]
    elif node.opset < 13 and "split" in node.attrs:
        sizes = list(attr_ints(node, "split", None) or [])
    elif node.opset >= 18 and "num_outputs" in node.attrs:
        count = attr_int(node, "num_outputs", count)
        part = -(-length // count)
        sizes = [min(part, length - k * part) for k in range(count)]
    else:
        if length % count:
            raise ModelError(f"{node.describe()}: {length} does not split evenly into {count}")
        sizes = [length // count] * count
    if len(sizes) != len(node.outputs) or sum(sizes) != length or min(sizes) < 0:
        raise ModelError(f"{node.describe()}: split sizes {sizes} do not cover length {length} "
                         f"with {len(node.outputs)} outputs")
    return sizes


def infer_split(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, {"axis", "split", "num_outputs"})
    x = input_tensor(node, graph, 0, "input")
    axis = normalize_axis(node, attr_int(node, "axis", 0), len(x.shape))
    views = []
    begin = 0
    for size in split_sizes(node, graph, x.shape[axis]):
        views.append(slice_view(node, x.shape, [begin], [begin + size], [axis], [1]))
        begin += size
    return inferred_views(node, x, views)


# ------------------------------------------------------------------ Expand, Tile


def infer_expand(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, set())
    x = input_tensor(node, graph, 0, "input")
    target = tuple(int(v) for v in constant_input(node, graph, 1, "shape").reshape(-1))
    try:
        shape = tuple(int(d) for d in np.broadcast_shapes(x.shape, target))
    except ValueError:
        raise ModelError(f"{node.describe()}: shape {list(target)} does not broadcast with "
                         f"the input's {list(x.shape)}") from None
    padded = (1,) * (len(shape) - len(x.shape)) + x.shape
    strides = (0,) * (len(shape) - len(x.shape)) + dense_strides(x.shape)
    view = View(0, shape, tuple(0 if padded[d] == 1 and shape[d] != 1 else strides[d]
                                for d in range(len(shape))))
    return inferred_views(node, x, [view])


def infer_tile(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, set())
    x = input_tensor(node, graph, 0, "input")
    repeats = [int(v) for v in constant_input(node, graph, 1, "repeats").reshape(-1)]
    if len(repeats) != len(x.shape) or min(repeats, default=1) < 1:
        raise ModelError(f"{node.describe()}: repeats {repeats} for a rank-{len(x.shape)} "
                         "input")
    strides = dense_strides(x.shape)
    shape = tuple(d for r, n in zip(repeats, x.shape, strict=True) for d in (r, n))
    view = View(0, shape, tuple(s for st in strides for s in (0, st)))
    out = tuple(r * n for r, n in zip(repeats, x.shape, strict=True))
    return inferred_views(node, x, [view], [out])


# ------------------------------------------------------------------ DepthToSpace


def reshape_transpose_view(shape: tuple[int, ...], perm: list[int]) -> View:
    """The view of a tensor reshaped (densely) to `shape`, then transposed by `perm`."""
    strides = dense_strides(shape)
    return View(0, tuple(shape[p] for p in perm), tuple(strides[p] for p in perm))


def infer_depth_to_space(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, {"blocksize", "mode"})
    x = input_tensor(node, graph, 0, "input")
    b = attr_int(node, "blocksize", 0)
    if len(x.shape) != 4 or b < 1 or x.shape[1] % (b * b):
        raise ModelError(f"{node.describe()}: needs a 4-D input whose channels divide by "
                         f"blocksize^2 (blocksize {b}, input {list(x.shape)})")
    n, c, h, w = x.shape
    mode = attr_str(node, "mode", "DCR")
    if mode == "DCR":
        view = reshape_transpose_view((n, b, b, c // (b * b), h, w), [0, 3, 4, 1, 5, 2])
    elif mode == "CRD":
        view = reshape_transpose_view((n, c // (b * b), b, b, h, w), [0, 1, 4, 2, 5, 3])
    else:
        raise ModelError(f"{node.describe()}: mode '{mode}' is not DCR or CRD")
    return inferred_views(node, x, [view], [(n, c // (b * b), h * b, w * b)])


def infer_space_to_depth(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, {"blocksize"})
    x = input_tensor(node, graph, 0, "input")
    b = attr_int(node, "blocksize", 0)
    if len(x.shape) != 4 or b < 1 or x.shape[2] % b or x.shape[3] % b:
        raise ModelError(f"{node.describe()}: needs a 4-D input whose height and width "
                         f"divide by blocksize (blocksize {b}, input {list(x.shape)})")
    n, c, h, w = x.shape
    view = reshape_transpose_view((n, c, h // b, b, w // b, b), [0, 3, 5, 1, 2, 4])
    return inferred_views(node, x, [view], [(n, c * b * b, h // b, w // b)])


# Operators that ORT's QDQ rules move values through: DQ -> op -> Q with one
# quantization on both sides runs on the integers.
for _op, _infer, _versions, _constants in (
        ("Slice", infer_slice, (1, 10, 11, 13), frozenset({1, 2, 3, 4})),
        ("Split", infer_split, (2, 11, 13, 18), frozenset({1})),
        ("Expand", infer_expand, (8, 13), frozenset({1})),
        ("Tile", infer_tile, (6, 13), frozenset({1})),
        ("DepthToSpace", infer_depth_to_space, (1, 11, 13), frozenset()),
        ("SpaceToDepth", infer_space_to_depth, (1, 13), frozenset())):
    register(OpDef(_op, "", _infer, lower_views, versions=_versions, constant_inputs=_constants,
                   data_dtypes=frozenset({"uint8", "int8", "float32"}), moves_values=True))
