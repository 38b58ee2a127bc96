"""Layout-only operators: Reshape, Flatten, Squeeze, Unsqueeze, Identity. They change
the shape, never the bytes, so they lower to an alias of their input: no copy, no
kernel, no arena space."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from codegen.core.ir import Graph, Node, Tensor
from codegen.core.program import Alias, KernelCall
from codegen.errors import ModelError

from . import Inferred, LoweringOptions, OpDef, register
from ._common import attr_int, attr_ints, constant_input, input_tensor, reject_unknown_attrs


def _axes(node: Node, graph: Graph, required: bool) -> list[int] | None:
    """Squeeze/Unsqueeze axes: an attribute before opset 13, an input from 13 on."""
    if node.opset < 13:
        return attr_ints(node, "axes", None)
    if node.input(1) is None:
        if required:
            raise ModelError(f"{node.describe()}: the axes input is required")
        return None
    return [int(a) for a in constant_input(node, graph, 1, "axes").reshape(-1)]


def reshape_shape(node: Node, graph: Graph, shape: tuple[int, ...]) -> tuple[int, ...]:
    target = [int(d) for d in constant_input(node, graph, 1, "shape").reshape(-1)]
    allow_zero = attr_int(node, "allowzero", 0) if node.opset >= 14 else 0
    out: list[int] = []
    for i, d in enumerate(target):
        if d == 0 and not allow_zero:
            if i >= len(shape):
                raise ModelError(f"{node.describe()}: shape dim {i} is 0 but the input has "
                                 f"rank {len(shape)}")
            d = shape[i]
        out.append(d)
    numel = int(np.prod(shape, dtype=np.int64))
    if out.count(-1) > 1:
        raise ModelError(f"{node.describe()}: more than one -1 in the target shape {target}")
    if -1 in out:
        known = int(np.prod([d for d in out if d != -1], dtype=np.int64))
        if known == 0 or numel % known:
            raise ModelError(f"{node.describe()}: cannot reshape {list(shape)} to {target}")
        out[out.index(-1)] = numel // known
    if any(d < 0 for d in out) or int(np.prod(out, dtype=np.int64)) != numel:
        raise ModelError(f"{node.describe()}: cannot reshape {list(shape)} to {target}")
    return tuple(out)


def flatten_shape(node: Node, graph: Graph, shape: tuple[int, ...]) -> tuple[int, ...]:
    axis = attr_int(node, "axis", 1)
    rank = len(shape)
    if not -rank <= axis <= rank:
        raise ModelError(f"{node.describe()}: axis {axis} is out of range for rank {rank}")
    if axis < 0:
        axis += rank
    outer = int(np.prod(shape[:axis], dtype=np.int64))
    return (outer, int(np.prod(shape[axis:], dtype=np.int64)))


def squeeze_shape(node: Node, graph: Graph, shape: tuple[int, ...]) -> tuple[int, ...]:
    axes = _axes(node, graph, required=False)
    rank = len(shape)
    if axes is None:
        return tuple(d for d in shape if d != 1)
    norm = set()
    for a in axes:
        if not -rank <= a < rank:
            raise ModelError(f"{node.describe()}: axis {a} is out of range for rank {rank}")
        if shape[a % rank] != 1:
            raise ModelError(f"{node.describe()}: cannot squeeze axis {a} of size "
                             f"{shape[a % rank]}")
        norm.add(a % rank)
    return tuple(d for i, d in enumerate(shape) if i not in norm)


def unsqueeze_shape(node: Node, graph: Graph, shape: tuple[int, ...]) -> tuple[int, ...]:
    axes = _axes(node, graph, required=True) or []
    rank = len(shape) + len(axes)
    norm = sorted(a % rank if -rank <= a < rank else -1 for a in axes)
    if -1 in norm or len(set(norm)) != len(norm):
        raise ModelError(f"{node.describe()}: invalid axes {axes} for output rank {rank}")
    out = list(shape)
    for a in norm:
        out.insert(a, 1)
    return tuple(out)


def identity_shape(node: Node, graph: Graph, shape: tuple[int, ...]) -> tuple[int, ...]:
    return shape


ShapeFn = Callable[[Node, Graph, tuple[int, ...]], tuple[int, ...]]


# Versions after these only add element types.
VERSIONS = {
    "Reshape": (5, 13, 14, 19, 21, 23, 24, 25),
    "Flatten": (1, 9, 11, 13, 21, 23, 24, 25),
    "Squeeze": (1, 11, 13, 21, 23, 24, 25),
    "Unsqueeze": (1, 11, 13, 21, 23, 24, 25),
    "Identity": (1, 13, 14, 16, 19, 21, 23, 24, 25),
}
CONSTANT_INPUTS = {"Reshape": frozenset({1}), "Squeeze": frozenset({1}),
                   "Unsqueeze": frozenset({1})}


def _layout_op(op_type: str, attrs: set[str], compute_shape: ShapeFn) -> None:
    def infer(node: Node, graph: Graph) -> Inferred:
        reject_unknown_attrs(node, attrs)
        x = input_tensor(node, graph, 0, "data")
        shape = compute_shape(node, graph, x.shape)
        return Inferred([Tensor(node.outputs[0], x.dtype, shape, x.quant)])

    def lower(node: Node, graph: Graph, spec: object,
              options: LoweringOptions) -> Sequence[KernelCall | Alias]:
        return [Alias(node.outputs[0], node.inputs[0])]

    # ORT's QDQPropagation goes through all but Flatten and Identity; --integer-only
    # through Flatten as well (ORT leaves DQ -> Flatten -> Gemm in float).
    register(OpDef(op_type, "", infer, lower, VERSIONS[op_type],
                   CONSTANT_INPUTS.get(op_type, frozenset()), moves_values=True,
                   ort_propagates=op_type not in ("Flatten", "Identity"),
                   integer_only_propagates=op_type != "Identity"))


_layout_op("Reshape", {"allowzero"}, reshape_shape)
_layout_op("Flatten", {"axis"}, flatten_shape)
_layout_op("Squeeze", {"axes"}, squeeze_shape)
_layout_op("Unsqueeze", {"axes"}, unsqueeze_shape)
_layout_op("Identity", set(), identity_shape)
