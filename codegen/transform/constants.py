"""Constant folding for weight chains: an integer initializer passed through Clip (the
narrow ranges of Brevitas' QCDQ export: 4-bit values in 8-bit containers), a float
initializer through QuantizeLinear, or an integer one through DequantizeLinear and
QuantizeLinear, becomes the integer constant it computes."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from codegen.arith.numerics import dequantize_like_ort, quantize_like_mlas
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


def dequantized_constant(node: Node, graph: Graph) -> NDArray[Any] | None:
    """The float values of a DequantizeLinear of constants (ORT's kernel), when every
    input is a constant."""
    if not float_node(node, "DequantizeLinear") or any(
            name not in graph.constants for name in node.inputs if name):
        return None
    x = graph.constants[node.inputs[0]]
    if x.dtype not in (np.uint8, np.int8, np.int32) or node.attrs.get("block_size", 0):
        return None
    scale = graph.constants[node.inputs[1]].astype(np.float32)
    zp_name = node.input(2)
    zp = graph.constants[zp_name] if zp_name else np.zeros((), x.dtype)
    axis = int(node.attrs.get("axis", 1)) % max(x.ndim, 1) if scale.size > 1 else None
    return dequantize_like_ort(x, scale, zp, axis)


def fold_requantized_weights(node: Node, graph: Graph, producers: dict[str, Node],
                             readers: dict[str, int]) -> NDArray[Any] | None:
    """QuantizeLinear(DequantizeLinear(integer constant)), as some exporters write
    weights: ORT's constant folding computes the DequantizeLinear, then the
    QuantizeLinear, and the unit fuses with the integer result (measured on ORT 1.32)."""
    if not float_node(node, "QuantizeLinear") or node.inputs[0] in graph.constants:
        return None
    source = producers.get(node.inputs[0])
    if source is None or readers.get(node.inputs[0], 0) != 1:
        return None
    values = dequantized_constant(source, graph)
    if values is None:
        return None
    graph.constants[node.inputs[0]] = values
    folded = fold_quantize(node, graph)
    del graph.constants[node.inputs[0]]
    return folded


def fold_constant_chains(graph: Graph) -> tuple[Graph, list[str]]:
    changed: list[str] = []
    kept: list[Node] = []
    producers = {out: n for n in graph.nodes for out in n.outputs}
    readers: dict[str, int] = {}
    for n in graph.nodes:
        for name in n.inputs:
            readers[name] = readers.get(name, 0) + 1
    for name in graph.outputs:
        readers[name] = readers.get(name, 0) + 1
    for node in graph.nodes:
        value = None
        if float_node(node, "Clip"):
            value = fold_clip(node, graph)
        elif float_node(node, "QuantizeLinear"):
            value = fold_quantize(node, graph)
            if value is None:
                value = fold_requantized_weights(node, graph, producers, readers)
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
