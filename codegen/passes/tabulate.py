"""DQ(x) -> float elementwise operators -> Q becomes one 256-entry table.

ORT computes such a chain (HardSigmoid, HardSwish, x * HardSigmoid(x), Div by a
constant, Tanh, ...) in float between the DequantizeLinear and the QuantizeLinear. x
takes one of 256 values, so the chain is a function of x's byte: the table holds, for
each byte, ORT's own float32 arithmetic (DequantizeLinear, each operator as its OpDef's
`elementwise` computes it, then MLAS's QuantizeLinear), and the C does one load per
element. The chain may read x more than once (x * HardSigmoid(x)); every other operand
must be a scalar constant, and nothing outside the chain may read its inner tensors."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .. import ops
from ..ir import QUANT_RANGE, Graph, Node
from ..numerics import quantize_like_mlas, table_inputs
from ..pattern import (
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
    order, and the tensor each reads."""

    x: Quantized
    nodes: tuple[Node, ...]


def _elementwise(node: Node) -> ops.ElementwiseFn | None:
    opdef = ops.standard(node.op_type) if node.domain == "" else None
    return opdef.elementwise if opdef is not None else None


def _scalar_constant(graph: Graph, name: str) -> bool:
    value = graph.constants.get(name)
    return value is not None and value.size == 1 and value.dtype == np.float32


def find_chain(graph: Graph, index: Index, q: Node) -> Chain | None:
    """The chain ending at QuantizeLinear q, if q's input is computed from one
    dequantized 8-bit tensor by elementwise operators alone."""
    root = index.producer.get(q.inputs[0])
    if root is None or _elementwise(root) is None or index.only_reader(q.inputs[0]) is not q:
        return None
    members: dict[int, Node] = {}
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
                if not _scalar_constant(graph, name):
                    return None
                continue
            x = dequantized(name, graph, index)
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
    for node in members.values():
        if graph.tensors[node.outputs[0]].shape != shape:
            return None  # broadcasting against a constant that is not a scalar
        if node is root:
            continue
        readers = index.readers.get(node.outputs[0], [])
        if node.outputs[0] in index.outputs or any(id(r) not in members for r in readers):
            return None
    ordered = tuple(n for n in graph.nodes if id(n) in members)
    return Chain(source, ordered)


def chain_values(graph: Graph, chain: Chain) -> NDArray[np.float32] | None:
    """The chain's float32 result for each of the 256 bytes of x, in byte order (None
    when an operator's configuration is not reproduced)."""
    scale, zero_point = chain.x.values(graph)
    dtype = graph.tensors[chain.x.q].dtype
    zp = int(zero_point.reshape(-1)[0]) if zero_point is not None else 0
    values: dict[str, NDArray[np.float32]] = {
        chain.x.node.outputs[0]: table_inputs(float(scale.reshape(-1)[0]), zp, dtype)}
    for node in chain.nodes:
        fn = _elementwise(node)
        assert fn is not None
        operands = [values[name] if name in values else
                    np.asarray(graph.constants[name], F32).reshape(())
                    for name in node.inputs if name]
        result = fn(node, operands)
        if result is None:
            return None
        values[node.outputs[0]] = np.asarray(result, F32)
    return values[chain.nodes[-1].outputs[0]]


def chain_table(graph: Graph, chain: Chain, q: Quantized) -> NDArray[Any] | None:
    params = scalar_params(q, graph)
    dtype = graph.tensors[q.q].dtype
    if params is None or dtype != graph.tensors[chain.x.q].dtype:
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
    # The table remembers what it computes, for the CPU profiles (codegen/cpu.py).
    fused = Node(chain.nodes[-1].name, "Table", DOMAIN, (chain.x.q, name, *qparams(y, graph)),
                 (y.q,), {"tabulates": tuple(n.op_type for n in chain.nodes)}, 1)
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
    `convert` writes a Table for ORT, so that its output imports as it was."""
    if not float_node(gather, "Gather") or int(gather.attrs.get("axis", 0)) != 0:
        return None
    table = graph.constants.get(gather.inputs[0])
    if table is None or table.shape != (256,) or str(table.dtype) not in QUANT_RANGE:
        return None
    position = gather.inputs[1]
    cast = index.producer.get(position)
    if cast is None or not float_node(cast, "Cast") or index.only_reader(position) is not gather:
        return None
    x = cast.inputs[0]
    if x not in graph.tensors or graph.tensors[x].dtype != str(table.dtype) or \
            graph.tensors[position].dtype != "int32":
        return None
    fused = Node(gather.name, "Table", DOMAIN, (x, gather.inputs[0]),
                 gather.outputs, {}, 1)
    graph.opsets.setdefault(DOMAIN, 1)
    if not validated(fused, graph):
        return None
    return replace_nodes(graph, [cast, gather], fused)


def gathers_to_tables(graph: Graph) -> tuple[Graph, list[str]]:
    """Cast -> Gather from a constant 256-entry table: one Table."""
    return rewrite_all(graph, _table_lookup)
