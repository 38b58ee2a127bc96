"""ORT's fusions of float operators that change what a model computes: MatMul + Add
becomes a Gemm (MatMulAddFusion, ORT level 1, before its QDQ fusions), and an Add joins
an NCHWc convolution of float weights (NchwcTransformer, level 3, after them)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from codegen import ops
from codegen.core.ir import Graph, Node
from codegen.core.pattern import Index, float_node, fresh_name, is_op
from codegen.errors import UnsupportedError

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


# ------------------------------------------------- ORT's level-2 fusions of float chains
# LayerNormFusion, SimplifiedLayerNormFusion, GeluFusion and MatMulScaleFusion, with the
# conditions of ORT 1.32's source (onnxruntime/core/optimizer/*_fusion.cc) and what its
# optimized graphs show. They match only float chains: in QDQ models the Q/DQ pairs
# between the operators stop them. Where ORT would fuse a chain onnx2mcu cannot compute
# fused, the fused node refuses it (naming it), never the unfused chain computed otherwise.

F32 = np.float32
SQRT2_VALUES = (F32(1.4142099618911743), F32(np.sqrt(2.0)))  # GeluFusion's divisors


def _edges(index: Index, tensor: str) -> int:
    """ORT's output edge count of a tensor: the inputs reading it."""
    return sum(reader.inputs.count(tensor) for reader in index.readers.get(tensor, []))


def _only_edges(index: Index, tensor: str, count: int) -> bool:
    """ORT's CheckOutputEdges: `count` edges and not a graph output."""
    return tensor not in index.outputs and _edges(index, tensor) == count


def _first_reader(index: Index, tensor: str, op_type: str) -> Node | None:
    """ORT's FirstChildByType."""
    return next((n for n in index.readers.get(tensor, []) if float_node(n, op_type)), None)


def _first_parent(index: Index, node: Node, op_type: str) -> Node | None:
    """ORT's FirstParentByType."""
    for name in node.inputs:
        parent = index.producer.get(name) if name else None
        if parent is not None and float_node(parent, op_type):
            return parent
    return None


def _split_by_ort(index: Index, tensor: str) -> bool:
    """A DequantizeLinear's output with several readers: ORT gives each reader its own
    DequantizeLinear first (EnsureUniqueDQForNodeUnit), so a pattern needing one tensor
    in two places does not match it (measured: no GeluFusion, and a LayerNorm of it
    becomes a SimplifiedLayerNormalization of its Sub)."""
    source = index.producer.get(tensor)
    return source is not None and float_node(source, "DequantizeLinear") and \
        len(index.readers.get(tensor, [])) > 1


def _first_inputs_float32(graph: Graph, *nodes: Node) -> bool:
    return all(graph.tensors[name].dtype == "float32"
               for node in nodes for name in node.inputs[:1] if name)


def _scalar(graph: Graph, name: str) -> float | None:
    """A float32 constant of one element and rank 0 or 1 (ORT's IsScalar)."""
    value = graph.constants.get(name)
    if value is None or value.dtype != F32 or value.size != 1 or value.ndim > 1:
        return None
    return float(value.reshape(-1)[0])


def _is_value(graph: Graph, name: str, expected: float) -> bool:
    """ORT's IsInitializerWithExpectedValue: a scalar constant within its tolerance."""
    value = _scalar(graph, name)
    return value is not None and abs(value - expected) <= 1e-8 + 1e-5 * abs(expected)


def _reduce_axes(graph: Graph, node: Node) -> list[int]:
    if "axes" in node.attrs:
        return [int(a) for a in node.attrs["axes"]]
    axes = node.input(1)
    if axes is not None and axes in graph.constants:
        return [int(a) for a in graph.constants[axes].reshape(-1)]
    return []


def _normalized(axes: list[int], rank: int) -> list[int]:
    return sorted(a - rank if a >= 0 else a for a in axes)


def _last_axis_only(axes: list[int], rank: int) -> bool:
    """ORT's CheckAxesOnReduceMean (consecutive axes ending at the last), and the one axis
    its inference build fuses."""
    return _normalized(axes, rank) == [-1]


def _replace_at_last(graph: Graph, removed: list[Node], new: Node) -> Graph:
    """`new` takes the place of the last of `removed` (after all its inputs); the others
    are dropped."""
    gone = {id(n) for n in removed}
    last = max(i for i, n in enumerate(graph.nodes) if id(n) in gone)
    nodes = [new if i == last else n for i, n in enumerate(graph.nodes)
             if i == last or id(n) not in gone]
    return replace(graph, nodes=nodes)


def _fused(graph: Graph, index: Index, removed: list[Node], new: Node) -> Graph | None:
    """Put the fused node in place and infer it; its own checks refuse it in one line.
    None where a removed node's output is still read outside the match (ORT's checks
    leave a few such cases open; its own graph would then be broken)."""
    gone = {id(n) for n in removed}
    for node in removed:
        for name in node.outputs:
            if name and name not in new.outputs and (name in index.outputs or any(
                    id(r) not in gone for r in index.readers.get(name, []))):
                return None
    opdef = ops.lookup(new)
    assert opdef is not None
    for tensor in opdef.infer(new, graph).outputs:
        graph.tensors[tensor.name] = tensor
    return _replace_at_last(graph, removed, new)


def _epsilon(graph: Graph, add: Node) -> float:
    """The Add's second input if it is a float constant (its first value), else 1e-5."""
    value = graph.constants.get(add.inputs[1]) if len(add.inputs) > 1 else None
    if value is None or value.dtype != F32 or value.size == 0:
        return float(F32(1e-5))
    return float(value.reshape(-1)[0])


def _rank1_input(graph: Graph, node: Node) -> str | None:
    """The last input of rank 1 (how ORT picks a LayerNorm's scale and bias)."""
    found = None
    for name in node.inputs:
        if name and len(graph.tensors[name].shape) == 1:
            found = name
    return found


def _layer_norm(graph: Graph, index: Index, mean: Node) -> Graph | None:
    """ReduceMean -> Sub -> Pow -> ReduceMean -> Add(eps) -> Sqrt -> Div(d, .) -> Mul(scale)
    -> Add(bias) over the last axis, as ORT's LayerNormFusion matches it (without its
    Cast variants), becomes LayerNormalization(x, scale, bias)."""
    if not float_node(mean, "ReduceMean") or not _first_inputs_float32(graph, mean) or \
            mean.outputs[0] in index.outputs or _edges(index, mean.outputs[0]) not in (1, 2):
        return None
    x = mean.inputs[0]
    if _split_by_ort(index, x):
        return None
    children = index.readers.get(mean.outputs[0], [])
    if not all(float_node(c, "Sub") for c in children) or len(children) not in (1, 2):
        return None
    subs = list(children)
    for sub in subs:
        others = [i for i in sub.inputs if i != mean.outputs[0]]
        if not others or others[0] != x:
            return None
    sub = subs[0]
    if not _only_edges(index, sub.outputs[0], 2 if len(subs) == 1 else 1):
        return None
    div = _first_reader(index, sub.outputs[0], "Div")
    if div is None and len(subs) == 2:
        div = _first_reader(index, subs[1].outputs[0], "Div")
    if div is None or not _only_edges(index, div.outputs[0], 1):
        return None
    sqrt = _first_parent(index, div, "Sqrt")
    if sqrt is None or not _only_edges(index, sqrt.outputs[0], 1):
        return None
    add_eps = index.producer.get(sqrt.inputs[0])
    if add_eps is None or not float_node(add_eps, "Add") or \
            not _only_edges(index, add_eps.outputs[0], 1):
        return None
    variance = _first_parent(index, add_eps, "ReduceMean")
    if variance is None or not _only_edges(index, variance.outputs[0], 1):
        return None
    power = index.producer.get(variance.inputs[0])
    if power is None or not float_node(power, "Pow") or \
            not _only_edges(index, power.outputs[0], 1):
        return None
    if _first_parent(index, power, "Sub") not in subs:
        return None
    mul = index.readers[div.outputs[0]][0]
    if not float_node(mul, "Mul") or not _only_edges(index, mul.outputs[0], 1):
        return None
    add_bias = index.readers[mul.outputs[0]][0]
    if not float_node(add_bias, "Add"):
        return None
    rank = len(graph.tensors[x].shape)
    axes, variance_axes = _reduce_axes(graph, mean), _reduce_axes(graph, variance)
    if not axes or not variance_axes or not _last_axis_only(axes, rank) or \
            _normalized(axes, rank) != _normalized(variance_axes, rank):
        return None
    scale, bias = _rank1_input(graph, mul), _rank1_input(graph, add_bias)
    if scale is None or bias is None or \
            graph.tensors[scale].shape != graph.tensors[bias].shape:
        return None
    fused = Node(f"{mul.name}/LayerNormFusion/", "LayerNormalization", "", (x, scale, bias),
                 add_bias.outputs, {"axis": -1, "epsilon": _epsilon(graph, add_eps)}, 17)
    removed = [mean, *subs, div, sqrt, add_eps, variance, power, mul, add_bias]
    return _fused(graph, index, removed, fused)


def _simplified_layer_norm(graph: Graph, index: Index, power: Node) -> Graph | None:
    """Pow(x) -> ReduceMean -> Add(eps) -> Sqrt -> Div(x, .) -> Mul(scale) over the last
    axis, as ORT's SimplifiedLayerNormFusion matches it, becomes
    SimplifiedLayerNormalization(x, scale) (what is left of a LayerNorm without its bias
    too: then x is the Sub's output)."""
    if not float_node(power, "Pow") or not _first_inputs_float32(graph, power) or \
            not _only_edges(index, power.outputs[0], 1):
        return None
    chain = [power]
    for op_type in ("ReduceMean", "Add", "Sqrt", "Div"):
        step = _first_reader(index, chain[-1].outputs[0], op_type)
        if step is None or not _only_edges(index, step.outputs[0], 1):
            return None
        chain.append(step)
    _, mean, add_eps, _, div = chain
    x = power.inputs[0]
    if div.inputs[0] != x or _split_by_ort(index, x):
        return None
    mul = index.readers[div.outputs[0]][0]
    if not float_node(mul, "Mul"):
        return None
    axes = _reduce_axes(graph, mean)
    if not axes or not _last_axis_only(axes, len(graph.tensors[mean.inputs[0]].shape)):
        return None
    scale = _rank1_input(graph, mul)
    if scale is None:
        return None
    fused = Node(f"{mul.name}/SimplifiedLayerNormFusion/", "SimplifiedLayerNormalization", "",
                 (x, scale), mul.outputs, {"axis": -1, "epsilon": _epsilon(graph, add_eps)},
                 graph.opsets.get("", 1))
    return _fused(graph, index, [*chain, mul], fused)


def _gelu(graph: Graph, index: Index, div: Node) -> Graph | None:
    """x / sqrt(2) -> Erf -> + 1 -> * x -> * 0.5 (or 0.5 x * (...)), as ORT's GeluFusion
    matches it, becomes Gelu(x) (com.microsoft's; ONNX's from opset 20). Measured on ORT
    1.32: x * (1 / sqrt 2) is left alone."""
    if not float_node(div, "Div") or not _first_inputs_float32(graph, div) or \
            not _only_edges(index, div.outputs[0], 1):
        return None
    if not any(_is_value(graph, div.inputs[1], float(v)) for v in SQRT2_VALUES):
        return None
    root = div.inputs[0]
    if _split_by_ort(index, root):
        return None
    erf = index.readers[div.outputs[0]][0]
    if not float_node(erf, "Erf") or not _only_edges(index, erf.outputs[0], 1):
        return None
    add = index.readers[erf.outputs[0]][0]
    if not float_node(add, "Add") or not _only_edges(index, add.outputs[0], 1):
        return None
    one = add.inputs[1] if add.inputs[0] == erf.outputs[0] else add.inputs[0]
    if not _is_value(graph, one, 1.0):
        return None
    mul = index.readers[add.outputs[0]][0]
    if not float_node(mul, "Mul"):
        return None
    half = _first_parent(index, mul, "Mul")
    if half is not None:  # (0.5 * x) * (erf + 1)
        if not _only_edges(index, half.outputs[0], 1) or root not in half.inputs:
            return None
        other = half.inputs[1] if half.inputs[0] == root else half.inputs[0]
        last = mul
    else:  # (x * (erf + 1)) * 0.5
        if not _only_edges(index, mul.outputs[0], 1) or root not in mul.inputs:
            return None
        half = index.readers[mul.outputs[0]][0]
        if not float_node(half, "Mul"):
            return None
        other = half.inputs[1] if half.inputs[0] == mul.outputs[0] else half.inputs[0]
        last = half
    if not _is_value(graph, other, 0.5):
        return None
    onnx_gelu = graph.opsets.get("", 1) >= 20
    domain = "" if onnx_gelu else "com.microsoft"
    graph.opsets.setdefault(domain, 1)
    fused = Node(f"{last.name}/GeluFusion/", "Gelu", domain, (root,), last.outputs, {},
                 graph.opsets[""] if onnx_gelu else 1)
    return _fused(graph, index, [div, erf, add, mul, half], fused)


def _first_add(graph: Graph, index: Index, add: Node | None) -> bool:
    """SkipLayerNormFusion's first Add: one reader, two 3-D inputs of one shape."""
    if add is None or not float_node(add, "Add") or not _first_inputs_float32(graph, add) or \
            not _only_edges(index, add.outputs[0], 1) or len(add.inputs) != 2:
        return False
    a, b = (graph.tensors[name].shape for name in add.inputs)
    return len(a) == 3 and a == b


def _second_add(graph: Graph, index: Index, add: Node | None) -> bool:
    """Its second Add: one reader, a 3-D input and a constant 1-D bias of its last axis."""
    if add is None or not float_node(add, "Add") or not _only_edges(index, add.outputs[0], 1) \
            or len(add.inputs) != 2 or add.inputs[1] not in graph.constants:
        return False
    x, bias = (graph.tensors[name].shape for name in add.inputs)
    return len(x) == 3 and len(bias) == 1 and x[2] == bias[0]


def _skip_layer_norm(graph: Graph, index: Index, norm: Node) -> Graph | None:
    """Add(input, skip) (with Add(., constant bias) before it on either side) feeding a
    LayerNormalization over the last axis, as ORT's SkipLayerNormFusion matches it,
    becomes com.microsoft SkipLayerNormalization, which adds input + skip + bias in that
    order and normalizes with the scalar loop (measured)."""
    if not float_node(norm, "LayerNormalization") or not _first_inputs_float32(graph, norm):
        return None
    x = graph.tensors[norm.inputs[0]]
    axis = int(norm.attrs.get("axis", -1))
    if (axis if axis >= 0 else axis + len(x.shape)) != len(x.shape) - 1 or \
            len(graph.tensors[norm.inputs[1]].shape) != 1:
        return None
    add1 = index.producer.get(norm.inputs[0])
    if add1 is None or not _first_add(graph, index, add1):
        return None
    if any(norm.outputs[1:]):
        raise UnsupportedError(f"{norm.describe()}: ONNX Runtime fuses it with the Add "
                               "before it (SkipLayerNormFusion), which onnx2mcu reproduces "
                               "without the Mean and InvStdDev outputs")
    gamma, beta = norm.inputs[1], norm.input(2) or ""
    inputs: tuple[str, ...] = (add1.inputs[0], add1.inputs[1], gamma, beta)
    removed = [add1, norm]
    for side in (0, 1):  # ORT's format 1, then format 2
        add2 = index.producer.get(add1.inputs[side])
        if add2 is not None and _second_add(graph, index, add2):
            pair = [add1.inputs[0], add1.inputs[1]]
            pair[side] = add2.inputs[0]
            inputs = (pair[0], pair[1], gamma, beta, add2.inputs[1])
            removed.append(add2)
            break
    graph.opsets.setdefault("com.microsoft", 1)
    # ORT takes the LayerNormalization's epsilon attribute, or its own default of 1e-12.
    epsilon = float(norm.attrs.get("epsilon", 1e-12))
    fused = Node(f"{norm.name}/SkipLayerNormFusion/", "SkipLayerNormalization",
                 "com.microsoft", inputs, norm.outputs[:1], {"epsilon": epsilon}, 1)
    return _fused(graph, index, removed, fused)


def _scale_of(graph: Graph, node: Node) -> tuple[F32, int] | None:
    """ORT's GetScaleFromNode: a Mul or Div by a scalar constant of rank at most the other
    input's: (the factor it applies, the index of the other input)."""
    if len(node.inputs) != 2:
        return None
    if float_node(node, "Div"):
        divisor = _scalar_scale(graph, node.inputs[1], node.inputs[0])
        return (F32(F32(1.0) / divisor), 0) if divisor is not None else None
    if float_node(node, "Mul"):
        for at in (0, 1):
            factor = _scalar_scale(graph, node.inputs[at], node.inputs[1 - at])
            if factor is not None:
                return factor, 1 - at
    return None


def _scalar_scale(graph: Graph, name: str, other: str) -> F32 | None:
    value = graph.constants.get(name)
    if value is None or value.dtype != F32 or value.size != 1 or \
            value.ndim > len(graph.tensors[other].shape):
        return None
    return F32(value.reshape(-1)[0])


def _matmul_scale(graph: Graph, index: Index, node: Node) -> Graph | None:
    """The scalar Mul/Div of a float MatMul's operands and of its product, as ORT's
    MatMulScaleFusion finds them, fold into FusedMatMul's alpha (their float32 product)."""
    fused_before = is_op(node, "FusedMatMul", "com.microsoft")
    if fused_before:  # ORT repeats its level-2 rules: a FusedMatMul takes more scales
        if any(int(node.attrs.get(t, 0)) for t in
               ("transA", "transB", "transBatchA", "transBatchB")):
            return None
    elif not float_node(node, "MatMul") or "matmul-nbits" in ops.ort_traits(node, graph):
        return None
    if not _first_inputs_float32(graph, node):
        return None
    inputs = list(node.inputs)
    alpha = F32(node.attrs.get("alpha", 1.0))
    merged: list[Node] = []
    for at, name in enumerate(node.inputs[:2]):
        scaling = index.producer.get(name)
        found = _scale_of(graph, scaling) if scaling is not None else None
        if scaling is None or found is None:
            continue
        unscaled = scaling.inputs[found[1]]
        if not graph.tensors[unscaled].shape:
            continue
        inputs[at] = unscaled
        alpha = F32(alpha * found[0])
        merged.append(scaling)
    outputs = node.outputs
    removed = [node]
    if _only_edges(index, node.outputs[0], 1):
        reader = index.readers[node.outputs[0]][0]
        found = _scale_of(graph, reader)
        if found is not None:
            alpha = F32(alpha * found[0])
            outputs = reader.outputs
            removed.append(reader)
    if not merged and len(removed) == 1:
        return None
    for scaling in merged:
        readers = sum(1 for r in index.readers[scaling.outputs[0]] if r is not node)
        if readers == 0 and scaling.outputs[0] not in index.outputs and scaling not in removed:
            removed.append(scaling)
    graph.opsets.setdefault("com.microsoft", 1)
    name = node.name if fused_before else f"{node.name}/MatMulScaleFusion/"
    fused = Node(name, "FusedMatMul", "com.microsoft", tuple(inputs), outputs,
                 {**node.attrs, "alpha": float(alpha)}, 1)
    return _fused(graph, index, removed, fused)


def fuse_layer_norm_level1(graph: Graph) -> tuple[Graph, list[str]]:
    """LayerNormFusion where ONNX has LayerNormalization (opset 17 on): ORT runs it at
    level 1, before its QDQ rules."""
    if graph.opsets.get("", 1) < 17:
        return graph, []
    return rewrite_all(graph, _layer_norm)


def fuse_layer_norm_level2(graph: Graph) -> tuple[Graph, list[str]]:
    """LayerNormFusion below opset 17: ORT runs it at level 2, after its QDQ rules."""
    if graph.opsets.get("", 1) >= 17:
        return graph, []
    return rewrite_all(graph, _layer_norm)


def fuse_simplified_layer_norm(graph: Graph) -> tuple[Graph, list[str]]:
    return rewrite_all(graph, _simplified_layer_norm)


def fuse_skip_layer_norm(graph: Graph) -> tuple[Graph, list[str]]:
    return rewrite_all(graph, _skip_layer_norm)


def fuse_gelu(graph: Graph) -> tuple[Graph, list[str]]:
    return rewrite_all(graph, _gelu)


def fuse_matmul_scale(graph: Graph) -> tuple[Graph, list[str]]:
    return rewrite_all(graph, _matmul_scale)
