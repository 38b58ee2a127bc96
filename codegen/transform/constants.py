"""Constant folding for weight chains: an integer initializer passed through Clip (the
narrow ranges of Brevitas' QCDQ export: 4-bit values in 8-bit containers) becomes the
integer constant it computes. (QuantizeLinear of constants folds at import:
frontend/folding.py.)"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from codegen.core.ir import Graph, Node, Tensor
from codegen.core.pattern import float_node


def _constant(graph: Graph, name: str | None) -> NDArray[Any] | None:
    return graph.constants.get(name) if name else None


def fold_clip(node: Node, graph: Graph) -> NDArray[Any] | None:
    x = _constant(graph, node.input(0))
    if x is None or x.dtype.kind not in "iu" or node.opset < 12:
        return None
    lo, hi = _constant(graph, node.input(1)), _constant(graph, node.input(2))
    if (node.input(1) and lo is None) or (node.input(2) and hi is None):
        return None
    out = x
    if lo is not None:
        out = np.maximum(out, lo.reshape(-1)[0])
    if hi is not None:
        out = np.minimum(out, hi.reshape(-1)[0])
    return out.astype(x.dtype)


def fold_constant_chains(graph: Graph) -> tuple[Graph, list[str]]:
    changed: list[str] = []
    kept: list[Node] = []
    for node in graph.nodes:
        value = fold_clip(node, graph) if float_node(node, "Clip") else None
        if value is None:
            kept.append(node)
            continue
        out = node.outputs[0]
        graph.constants[out] = value
        graph.tensors[out] = Tensor(out, str(value.dtype), tuple(int(d) for d in value.shape),
                                    graph.tensors[out].quant if out in graph.tensors else None)
        changed.append(node.name)
    graph.nodes = kept
    return graph, changed
