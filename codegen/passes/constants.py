"""Constant folding for weight chains: an integer initializer passed through Clip (the
narrow ranges of Brevitas' QCDQ export: 4-bit values in 8-bit containers), or a float
initializer through QuantizeLinear, becomes the integer constant it computes."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..ir import Graph, Node, Tensor
from ..numerics import quantize_like_mlas
from ..pattern import float_node


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


def fold_quantize(node: Node, graph: Graph) -> NDArray[Any] | None:
    """QuantizeLinear of a float constant, per tensor or per axis (weights quantized in
    the graph, as NNCF leaves them): ORT's constant folding runs MlasQuantizeLinear on
    each axis slice with its own scale and zero point."""
    x, scale = _constant(graph, node.input(0)), _constant(graph, node.input(1))
    zp = _constant(graph, node.input(2))
    if x is None or scale is None or x.dtype != np.float32 or (node.input(2) and zp is None):
        return None
    dtype = str(zp.dtype) if zp is not None else "uint8"
    if dtype not in ("uint8", "int8"):
        return None
    scales = scale.reshape(-1)
    zeros = zp.reshape(-1).astype(np.int64) if zp is not None else np.zeros(1, np.int64)
    if scales.size == 1:
        if zeros.size != 1:
            return None
        return quantize_like_mlas(x, float(scales[0]), int(zeros[0]), dtype).reshape(x.shape)
    axis = int(node.attrs.get("axis", 1))
    if node.opset < 13 or not -x.ndim <= axis < x.ndim or node.attrs.get("block_size", 0) \
            or x.shape[axis] != scales.size or (zp is not None and zeros.size != scales.size):
        return None
    zeros = np.broadcast_to(zeros, scales.shape)
    slices = np.moveaxis(x, axis, 0)
    folded = [quantize_like_mlas(s, float(c), int(z), dtype)
              for s, c, z in zip(slices, scales, zeros, strict=True)]
    return np.moveaxis(np.stack(folded), 0, axis).reshape(x.shape)


def fold_constant_chains(graph: Graph) -> tuple[Graph, list[str]]:
    changed: list[str] = []
    kept: list[Node] = []
    for node in graph.nodes:
        value = None
        if float_node(node, "Clip"):
            value = fold_clip(node, graph)
        elif float_node(node, "QuantizeLinear"):
            value = fold_quantize(node, graph)
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
