"""DQ(x) -> float elementwise operators -> Q becomes one 256-entry table.

ORT computes such a chain (HardSigmoid, HardSwish, x * HardSigmoid(x), Div by a
constant, Tanh, ...) in float between the DequantizeLinear and the QuantizeLinear. x
takes one of 256 values, so the chain is a function of x's byte: the table holds, for
each byte, ORT's own float32 arithmetic (DequantizeLinear, each operator as its OpDef's
`elementwise` computes it, then MLAS's QuantizeLinear), and the C does one load per
element. The chain may read x more than once (x * HardSigmoid(x)); every other operand
must be a constant, and nothing outside the chain may read its inner tensors. Constants
are scalars, or vary along one axis of x only (PRelu's per-channel slopes, a BatchNorm
left as Mul and Add): then each channel gets its own table."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from codegen import ops
from codegen.arith.numerics import dequantize_like_ort, quantize_like_mlas, table_inputs
from codegen.core.ir import QUANT_RANGE, Graph, Node
from codegen.core.pattern import (
    Index,
    Quantized,
    dequantized,
    float_node,
    new_constant,
    per_tensor,
    qparams,
    scalar_params,
)

from ._graph import replace_nodes, validated
from .qdq import rewrite_all

DOMAIN = "ai.onnx2mcu"
F32 = np.float32


@dataclass(frozen=True)
class Chain:
    """The operators between x's DequantizeLinear and the QuantizeLinear, in graph
    order, and x's axis along which its constants vary (-1: all are scalars)."""

    x: Quantized
    nodes: tuple[Node, ...]
    constants: dict[str, NDArray[np.float32]]  # the other operands' float values
    axis: int = -1


def _elementwise(node: Node) -> ops.ElementwiseFn | None:
    opdef = ops.standard(node.op_type) if node.domain == "" else None
    return opdef.elementwise if opdef is not None else None


def _float_constant(graph: Graph, name: str) -> bool:
    value = graph.constants.get(name)
    return value is not None and value.dtype == np.float32


def varying_axis(value: NDArray[Any], shape: tuple[int, ...]) -> int | None:
    """-1 for a scalar; the axis of `shape` along which a constant broadcast to it varies
    (it has that axis's full length there and 1 elsewhere); None otherwise."""
    if value.size == 1:
        return -1
    if value.ndim > len(shape):
        return None
    padded = (1,) * (len(shape) - value.ndim) + tuple(value.shape)
    axes = [i for i, d in enumerate(padded) if d != 1]
    if len(axes) != 1 or padded[axes[0]] != shape[axes[0]]:
        return None
    return axes[0]


def dequantized_constant(graph: Graph, x: Quantized) -> NDArray[np.float32] | None:
    """The float values of a DequantizeLinear of a constant (AMD Quark quantizes the
    constants of GELU's Div, Add and Mul too), as ORT computes them at run time."""
    value = graph.constants.get(x.q)
    if value is None or str(value.dtype) not in QUANT_RANGE:
        return None
    scale, zero_point = x.values(graph)
    if int(x.node.attrs.get("block_size", 0)):
        return None
    axis = int(x.node.attrs.get("axis", 1)) % max(value.ndim, 1) if scale.size > 1 else None
    zp = zero_point if zero_point is not None else np.zeros(scale.shape, np.int64)
    return np.asarray(dequantize_like_ort(value, scale, zp, axis), F32)


def find_chain(graph: Graph, index: Index, q: Node) -> Chain | None:
    """The chain ending at QuantizeLinear q, if q's input is computed from one
    dequantized 8-bit tensor by elementwise operators alone."""
    root = index.producer.get(q.inputs[0])
    if root is None or _elementwise(root) is None or index.only_reader(q.inputs[0]) is not q:
        return None
    members: dict[int, Node] = {}
    constants: dict[str, NDArray[np.float32]] = {}
    source: Quantized | None = None
    pending = [root]
    while pending:
        node = pending.pop()
        if id(node) in members:
            continue
        if _elementwise(node) is None or len(node.outputs) != 1:
            return None
        members[id(node)] = node
        for name in node.inputs:
            if not name:
                continue
            if name in graph.constants:
                if not _float_constant(graph, name):
                    return None
                constants[name] = graph.constants[name]
                continue
            x = dequantized(name, graph, index)
            if x is not None and x.q in graph.constants:
                value = dequantized_constant(graph, x)
                if value is None:
                    return None
                constants[name] = value
                continue
            if x is not None:
                if source is not None and source.node is not x.node:
                    return None
                source = x
                continue
            producer = index.producer.get(name)
            if producer is None:
                return None
            pending.append(producer)
    if source is None or not per_tensor(source, graph) or \
            graph.tensors[source.q].dtype not in QUANT_RANGE:
        return None
    shape = graph.tensors[source.q].shape
    found = {varying_axis(value, shape) for value in constants.values()}
    axes = {a for a in found if a is not None and a >= 0}
    if None in found or len(axes) > 1:
        return None
    axis = axes.pop() if axes else -1
    for node in members.values():
        if graph.tensors[node.outputs[0]].shape != shape:
            return None  # a constant that broadcasts x to a larger shape
        if node is root:
            continue
        readers = index.readers.get(node.outputs[0], [])
        if node.outputs[0] in index.outputs or any(id(r) not in members for r in readers):
            return None
    ordered = tuple(n for n in graph.nodes if id(n) in members)
    return Chain(source, ordered, constants, axis)


def chain_values(graph: Graph, chain: Chain) -> NDArray[np.float32] | None:
    """The chain's float32 result for each of the 256 bytes of x, in byte order, per
    channel of chain.axis when its constants vary along it ([channels, 256]); None when
    an operator's configuration is not reproduced."""
    if chain.axis < 0:
        return channel_values(graph, chain, None)
    channels = graph.tensors[chain.x.q].shape[chain.axis]
    rows = [channel_values(graph, chain, c) for c in range(channels)]
    if any(row is None for row in rows):
        return None
    return np.stack([row for row in rows if row is not None])


def channel_values(graph: Graph, chain: Chain, channel: int | None) -> NDArray[np.float32] | None:
    """The chain's result for the 256 bytes of x, each constant taken at `channel`."""
    scale, zero_point = chain.x.values(graph)
    dtype = graph.tensors[chain.x.q].dtype
    zp = int(zero_point.reshape(-1)[0]) if zero_point is not None else 0
    values: dict[str, NDArray[np.float32]] = {
        chain.x.node.outputs[0]: table_inputs(float(scale.reshape(-1)[0]), zp, dtype)}
    for node in chain.nodes:
        fn = _elementwise(node)
        assert fn is not None
        operands = [values[name] if name in values else
                    constant_at(chain.constants[name], channel) for name in node.inputs if name]
        result = fn(node, operands)
        if result is None:
            return None
        values[node.outputs[0]] = np.asarray(result, F32)
    return values[chain.nodes[-1].outputs[0]]


def constant_at(value: NDArray[Any], channel: int | None) -> NDArray[np.float32]:
    flat = np.asarray(value, F32).reshape(-1)
    return np.asarray(flat[0 if flat.size == 1 or channel is None else channel], F32)


def chain_table(graph: Graph, chain: Chain, q: Quantized) -> NDArray[Any] | None:
    params = scalar_params(q, graph)
    dtype = graph.tensors[q.q].dtype
    if params is None or dtype not in QUANT_RANGE:
        return None
    values = chain_values(graph, chain)
    if values is None:
        return None
    return quantize_like_mlas(values, params[0], params[1], dtype)


def _tabulate(graph: Graph, index: Index, node: Node) -> Graph | None:
    if not float_node(node, "QuantizeLinear"):
        return None
    y = Quantized(node, node.outputs[0], node.inputs[1], node.input(2))
    if y.scale not in graph.constants or (y.zero_point and y.zero_point not in graph.constants):
        return None
    chain = find_chain(graph, index, node)
    if chain is None:
        return None
    table = chain_table(graph, chain, y)
    if table is None:
        return None
    name = new_constant(graph, f"{chain.nodes[-1].name}_table", table)
    # The table remembers what it computes, for the CPU profiles (codegen/oracle/cpu.py).
    attrs: dict[str, Any] = {"tabulates": tuple(n.op_type for n in chain.nodes)}
    if chain.axis >= 0:
        attrs["axis"] = chain.axis
    fused = Node(chain.nodes[-1].name, "Table", DOMAIN, (chain.x.q, name, *qparams(y, graph)),
                 (y.q,), attrs, 1)
    graph.opsets.setdefault(DOMAIN, 1)
    if not validated(fused, graph):
        return None
    return replace_nodes(graph, [*chain.nodes, node], fused)


def tabulate_elementwise_chains(graph: Graph) -> tuple[Graph, list[str]]:
    """DQ(x) -> elementwise float operators -> Q: one table lookup."""
    return rewrite_all(graph, _tabulate)


def _table_lookup(graph: Graph, index: Index, gather: Node) -> Graph | None:
    """Cast(x: 8-bit -> int32) -> Gather(constant [256] table of x's type, axis 0): a
    Table (an int8 value v < 0 indexes from the end, which is v's byte). This is how
    `convert` writes a Table for ORT, so that its output imports as it was; a
    per-channel table is written Cast -> Add(offsets) -> Cast -> Gather
    (tables.export_table)."""
    if not float_node(gather, "Gather") or int(gather.attrs.get("axis", 0)) != 0:
        return None
    table = graph.constants.get(gather.inputs[0])
    if table is None or table.ndim != 1 or str(table.dtype) not in QUANT_RANGE:
        return None
    position = gather.inputs[1]
    cast = index.producer.get(position)
    if cast is None or not float_node(cast, "Cast") or index.only_reader(position) is not gather:
        return None
    replaced = [cast, gather]
    offsets = None
    if table.size != 256:
        # Cast(Cast(x, float) + offsets, int32): a per-channel table.
        add = index.producer.get(cast.inputs[0])
        if add is None or not float_node(add, "Add") or \
                index.only_reader(cast.inputs[0]) is not cast:
            return None
        offsets = next((graph.constants[n] for n in add.inputs if n in graph.constants), None)
        value = next((n for n in add.inputs if n not in graph.constants), None)
        to_float = index.producer.get(value) if value else None
        if offsets is None or value is None or to_float is None or \
                not float_node(to_float, "Cast") or index.only_reader(value) is not add:
            return None
        replaced = [to_float, add, cast, gather]
        cast = to_float
    x = cast.inputs[0]
    if x not in graph.tensors or graph.tensors[x].dtype not in QUANT_RANGE or \
            graph.tensors[position].dtype != "int32":
        return None
    attrs: dict[str, Any] = {}
    inputs = (x, gather.inputs[0])
    if offsets is not None:
        per_channel = per_channel_table(table, offsets, graph.tensors[x])
        if per_channel is None:
            return None
        tables, attrs["axis"] = per_channel
        inputs = (x, new_constant(graph, f"{gather.name}_tables", tables))
    fused = Node(gather.name, "Table", DOMAIN, inputs, gather.outputs, attrs, 1)
    graph.opsets.setdefault(DOMAIN, 1)
    if not validated(fused, graph):
        return None
    return replace_nodes(graph, replaced, fused)


def per_channel_table(flat: NDArray[Any], offsets: NDArray[Any],
                      x: Any) -> tuple[NDArray[Any], int] | None:
    """The [channels, 256] byte-order tables and x's axis of a flat value-order table
    indexed at x + offsets (float), offsets[c] = 256 c (+ 128 for int8) along one axis."""
    axis = varying_axis(offsets, x.shape)
    if axis is None or axis < 0 or offsets.dtype != np.float32:
        return None
    channels = x.shape[axis]
    signed = x.dtype == "int8"
    expected = np.arange(channels, dtype=np.int64) * 256 + (128 if signed else 0)
    if flat.size != channels * 256 or not np.array_equal(offsets.reshape(-1).astype(np.int64),
                                                         expected):
        return None
    by_value = flat.reshape(channels, 256)
    return (np.roll(by_value, -128, axis=1) if signed else by_value), axis


def gathers_to_tables(graph: Graph) -> tuple[Graph, list[str]]:
    """Cast -> Gather from a constant 256-entry table: one Table."""
    return rewrite_all(graph, _table_lookup)
