"""ORT's fusions of float operators that change what a model computes: MatMul + Add
becomes a Gemm (MatMulAddFusion, ORT level 1, before its QDQ fusions), and an Add joins
an NCHWc convolution of float weights (NchwcTransformer, level 3, after them)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from codegen import ops
from codegen.core.ir import Graph, Node
from codegen.core.pattern import Index, float_node, fresh_name

from ._graph import replace_nodes, validated
from .qdq import rewrite_all


def _gemm_bias(graph: Graph, matmul: Node, add: Node) -> str | None:
    """The Add input that becomes Gemm's C, when its shape is one Gemm broadcasts."""
    a, b = (graph.tensors[name] for name in matmul.inputs[:2])
    bias = add.inputs[1] if add.inputs[0] == matmul.outputs[0] else add.inputs[0]
    shape = graph.tensors[bias].shape
    n = b.shape[1]
    if shape == (n,):
        return bias
    if len(a.shape) != 2 or len(shape) != 2:
        return None
    if shape == (1, n) or (shape[0] == a.shape[0] and shape[1] in (1, n)):
        return bias
    return None


def _matmul_add(graph: Graph, index: Index, node: Node) -> Graph | None:
    if not float_node(node, "MatMul"):
        return None
    add = index.only_reader(node.outputs[0])
    if add is None or not float_node(add, "Add"):
        return None
    a, b = (graph.tensors[name] for name in node.inputs[:2])
    if a.dtype != "float32" or b.dtype != "float32" or len(b.shape) != 2:
        return None
    bias = _gemm_bias(graph, node, add)
    if bias is None or graph.tensors[bias].dtype != "float32":
        return None
    opset = graph.opsets[""]
    if len(a.shape) == 2:
        gemm = Node(node.name, "Gemm", "", (a.name, b.name, bias), add.outputs, {}, opset)
        return replace_nodes(graph, [node, add], gemm) if validated(gemm, graph) else None
    # Any other rank: ORT reshapes A to [rows, K], and the product back.
    rows = int(np.prod(a.shape[:-1], dtype=np.int64))
    flat_shape = fresh_name(graph, f"{node.name}_gemm_input_shape")
    graph.constants[flat_shape] = np.array([rows, b.shape[0]], dtype=np.int64)
    out_shape = fresh_name(graph, f"{node.name}_gemm_output_shape")
    graph.constants[out_shape] = np.array([*a.shape[:-1], b.shape[1]], dtype=np.int64)
    flat, product = fresh_name(graph, f"{a.name}_2d"), fresh_name(graph, f"{node.name}_2d")
    nodes = [Node(f"{node.name}_gemm_input", "Reshape", "", (a.name, flat_shape), (flat,), {},
                  opset),
             Node(node.name, "Gemm", "", (flat, b.name, bias), (product,), {}, opset),
             Node(f"{node.name}_gemm_output", "Reshape", "", (product, out_shape), add.outputs,
                  {}, opset)]
    for new in nodes:
        if not validated(new, graph):
            return None
    graph = replace_nodes(graph, [node, add], nodes[0])
    at = graph.nodes.index(nodes[0])
    graph.nodes[at + 1:at + 1] = nodes[1:]
    return graph


def fuse_matmul_add(graph: Graph) -> tuple[Graph, list[str]]:
    """Float MatMul (2-D B) whose only reader is an Add of a bias Gemm can broadcast
    becomes a Gemm, as ORT's MatMulAddFusion does before any QDQ rule: the product then
    starts from the bias, which changes its rounding."""
    return rewrite_all(graph, _matmul_add)


def _conv_add(graph: Graph, index: Index, add: Node) -> Graph | None:
    """Add(Conv(...), other) as ORT's NchwcTransformer fuses it: the Conv of float weights
    runs an NCHWc kernel, has no fused activation and no other reader, and both addends
    are NCHWc tensors of one shape; the first such Conv among the Add's inputs takes the
    other addend as its Sum."""
    if not float_node(add, "Add") or len(add.inputs) != 2 or \
            len({graph.tensors[t].shape for t in add.inputs}) != 1:
        return None
    for n in (0, 1):
        conv = index.producer.get(add.inputs[n])
        if conv is None or not float_node(conv, "Conv") or not ops.runs_nchwc(conv, graph) or \
                index.only_reader(conv.outputs[0]) is not add or \
                conv.outputs[0] in index.outputs:
            continue
        other = add.inputs[1 - n]
        if ops.nchwc_layout(graph, index, other) is not True:
            return None
        inputs = (*conv.inputs[:2], conv.input(2) or "", other)
        fused = Node(add.name, "ConvAdd", ops.OWN_DOMAIN, inputs, add.outputs,
                     dict(conv.attrs), 1)
        graph.opsets.setdefault(ops.OWN_DOMAIN, 1)
        if not validated(fused, graph):
            return None
        nodes = [fused if n_ is add else n_ for n_ in graph.nodes if n_ is not conv]
        return replace(graph, nodes=nodes)
    return None


def fuse_nchwc_conv_add(graph: Graph) -> tuple[Graph, list[str]]:
    """An Add that alone reads an NCHWc convolution of float weights joins it before the
    bias, as ORT's NchwcTransformer fuses it (ConvAdd)."""
    return rewrite_all(graph, _conv_add)
