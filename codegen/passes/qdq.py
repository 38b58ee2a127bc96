"""QDQ and QCDQ recipes: DequantizeLinear -> float op -> QuantizeLinear becomes the
integer operator ONNX Runtime fuses it into at ORT_ENABLE_ALL (QLinearConv, QGemm,
QLinearMatMul, the com.microsoft QLinear* operators), so that no float arithmetic is
left between the first QuantizeLinear and the last DequantizeLinear.

The rules and their conditions are ORT 1.32's, measured one by one (docs/ort-arithmetic.md,
"QDQ models"); a pattern ORT leaves in float is left in float here too, unless
integer-only mode asks for the integer version anyway. Each recipe matches one pattern,
builds the replacement, and lets the target operator's own checks accept or refuse it
(`validated`): a refused match is left as it was."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..importer import operator_version
from ..ir import QUANT_RANGE, Graph, Node
from ..numerics import quantize_like_mlas
from ._graph import (
    Index,
    Quantized,
    dequantized,
    float_node,
    fresh_name,
    per_tensor,
    quantized_by,
    replace_nodes,
    same_quantization,
    validated,
    zero_point_name,
)

MS = "com.microsoft"
F32 = np.float32
Rule = Callable[[Graph, Index, Node], Graph | None]


def rewrite_all(graph: Graph, rule: Rule) -> tuple[Graph, list[str]]:
    """Apply `rule` at every node until nothing matches; returns the rewritten names."""
    changed: list[str] = []
    progress = True
    while progress:
        progress = False
        index = Index.of(graph)
        for node in graph.nodes:
            rewritten = rule(graph, index, node)
            if rewritten is not None:
                graph = rewritten
                changed.append(node.name)
                progress = True
                break
    return graph, changed


def _qparams(q: Quantized, graph: Graph) -> list[str]:
    return [q.scale, zero_point_name(q, graph, graph.tensors[q.q].dtype)]


def _scalar_params(q: Quantized, graph: Graph) -> tuple[float, int] | None:
    scale, zp = q.values(graph)
    if scale.size != 1 or (zp is not None and zp.size != 1):
        return None
    return float(scale.reshape(-1)[0]), int(zp.reshape(-1)[0]) if zp is not None else 0


def _new_constant(graph: Graph, base: str, value: NDArray[Any]) -> str:
    name = fresh_name(graph, base)
    graph.constants[name] = value
    return name


# ------------------------------------------------------------ Q -> DQ -> Q -> DQ


def _merge_double_qdq(graph: Graph, index: Index, q1: Node) -> Graph | None:
    """ORT's DoubleQDQPairsRemover: Q1 -> DQ1 -> Q2 -> DQ2, single consumers, constant
    scalar parameters equal within each pair: DQ1 and Q2 go, and Q1/DQ2 take the
    quantization covering both ranges. One rounding instead of two: this changes the
    result, as it does in ORT."""
    if not float_node(q1, "QuantizeLinear"):
        return None
    chain = [q1]
    for op in ("DequantizeLinear", "QuantizeLinear", "DequantizeLinear"):
        nxt = index.only_reader(chain[-1].outputs[0])
        if nxt is None or not float_node(nxt, op):
            return None
        chain.append(nxt)
    params = []
    for node in chain:
        q = Quantized(node, node.outputs[0], node.inputs[1], node.input(2))
        if q.scale not in graph.constants or (q.zero_point and
                                              q.zero_point not in graph.constants):
            return None
        values = _scalar_params(q, graph)
        if values is None:
            return None
        params.append((values, q))
    (p1, a), (p1b, _), (p2, b), (p2b, _) = params
    dtype = graph.tensors[a.q].dtype
    if p1 != p1b or p2 != p2b or dtype != graph.tensors[b.q].dtype or dtype not in QUANT_RANGE:
        return None
    (s1, z1), (s2, z2) = p1, p2
    if (s1, z1) == (s2, z2):
        scale, zp = a.scale, chain[0].input(2)
    else:
        qmin, qmax = QUANT_RANGE[dtype]
        rmin = max(F32(F32(qmin - z1) * F32(s1)), F32(F32(qmin - z2) * F32(s2)))
        rmax = min(F32(F32(qmax - z1) * F32(s1)), F32(F32(qmax - z2) * F32(s2)))
        s = F32(F32(rmax - rmin) / F32(qmax - qmin))
        value = float(F32(F32(qmin) - F32(rmin / s)))
        z = math.floor(abs(value) + 0.5) * (1 if value >= 0 else -1)  # std::round
        scale = _new_constant(graph, f"{q1.name}_merged_scale", np.array(s, dtype=F32))
        zp = _new_constant(graph, f"{q1.name}_merged_zero_point",
                           np.array(z, dtype=np.int64).astype(dtype))
    first = Node(q1.name, "QuantizeLinear", "", (q1.inputs[0], scale, zp or ""),
                 q1.outputs, dict(q1.attrs), q1.opset)
    last = chain[3]
    second = Node(last.name, "DequantizeLinear", "", (q1.outputs[0], scale, zp or ""),
                  last.outputs, dict(last.attrs), last.opset)
    graph = replace_nodes(graph, [q1, chain[1], chain[2]], first)
    return replace_nodes(graph, [last], second)


def merge_double_qdq(graph: Graph) -> tuple[Graph, list[str]]:
    return rewrite_all(graph, _merge_double_qdq)


# ------------------------------------------------------------ int8 -> uint8


def _int8_pair_to_uint8(graph: Graph, index: Index, q: Node) -> Graph | None:
    """ORT's QDQS8ToU8Transformer: an int8 Q -> DQ pair whose Q feeds only that DQ, which
    feeds one node, and whose parameters are constant scalars with equal zero points
    becomes uint8 with zero points + 128. The real values do not change (q + 128 with
    zp + 128); units of mixed types then fuse, as they do in ORT on x86."""
    if not float_node(q, "QuantizeLinear") or graph.tensors[q.outputs[0]].dtype != "int8":
        return None
    dq = index.only_reader(q.outputs[0])
    if dq is None or not float_node(dq, "DequantizeLinear"):
        return None
    readers = len(index.readers.get(dq.outputs[0], []))
    if readers > 1 or (readers == 1 and dq.outputs[0] in index.outputs):
        # ORT first gives every reader of a DQ its own copy (EnsureUniqueDQForNodeUnit,
        # a graph output counting as one): a DQ read twice means a Q read twice, which
        # stays int8.
        return None
    params = [(n.input(1), n.input(2)) for n in (q, dq)]
    for scale, zp in params:
        if scale is None or zp is None or scale not in graph.constants or \
                zp not in graph.constants or graph.constants[zp].size != 1 or \
                graph.constants[scale].size != 1:
            return None
    (_, q_zp), (_, dq_zp) = params
    assert q_zp is not None and dq_zp is not None
    if int(graph.constants[q_zp].item()) != int(graph.constants[dq_zp].item()):
        return None
    zp = _new_constant(graph, f"{q_zp}_uint8",
                       np.array(int(graph.constants[q_zp].item()) + 128, dtype=np.uint8))
    new_q = Node(q.name, "QuantizeLinear", "", (q.inputs[0], q.inputs[1], zp), q.outputs,
                 dict(q.attrs), q.opset)
    new_dq = Node(dq.name, "DequantizeLinear", "", (q.outputs[0], dq.inputs[1], zp),
                  dq.outputs, dict(dq.attrs), dq.opset)
    retyped = graph.tensors.pop(q.outputs[0])
    if not validated(new_q, graph) or not validated(new_dq, graph):
        graph.tensors[q.outputs[0]] = retyped
        return None
    graph = replace_nodes(graph, [q], new_q)
    return replace_nodes(graph, [dq], new_dq)


def int8_pairs_to_uint8(graph: Graph) -> tuple[Graph, list[str]]:
    return rewrite_all(graph, _int8_pair_to_uint8)


# ------------------------------------------------------------ propagation

# Operators that move values without arithmetic and commute with a per-tensor
# (de)quantization (MaxPool too: quantization is monotone). Flatten is not among the
# ones ORT propagates through.
PROPAGATE_THROUGH = ("MaxPool", "Reshape", "Transpose", "Squeeze", "Unsqueeze")
INTEGER_ONLY_PROPAGATE = (*PROPAGATE_THROUGH, "Flatten")


def _propagate_dq(ops: tuple[str, ...]) -> Rule:
    """DQ(x) -> op -> y where y is not quantized again: op on x, then DQ. The op now
    runs on integers."""
    def rule(graph: Graph, index: Index, node: Node) -> Graph | None:
        if node.domain or node.op_type not in ops or not node.inputs:
            return None
        x = dequantized(node.inputs[0], graph, index)
        if x is None or not per_tensor(x, graph) or any(
                float_node(r, "QuantizeLinear") for r in index.readers.get(node.outputs[0], [])):
            return None
        moved_out = fresh_name(graph, f"{node.outputs[0]}_quantized")
        moved = Node(node.name, node.op_type, "", (x.q, *node.inputs[1:]), (moved_out,),
                     dict(node.attrs), node.opset)
        if not validated(moved, graph):
            return None
        dq = Node(f"{node.name}_dequantize", "DequantizeLinear", "",
                  (moved_out, x.scale, x.zero_point or ""), node.outputs, {}, graph.opsets[""])
        graph = replace_nodes(graph, [node], moved)
        nodes = list(graph.nodes)
        nodes.insert(nodes.index(moved) + 1, dq)
        graph.nodes = nodes
        return graph
    return rule


def _propagate_q(ops: tuple[str, ...]) -> Rule:
    """x -> op -> Q, x float and read only by op: Q(x) -> op on integers."""
    def rule(graph: Graph, index: Index, node: Node) -> Graph | None:
        if node.domain or node.op_type not in ops or not node.inputs:
            return None
        y = quantized_by(node.outputs[0], graph, index)
        x = node.inputs[0]
        if y is None or not per_tensor(y, graph) or index.only_reader(x) is not node or \
                graph.tensors[x].dtype != "float32" or dequantized(x, graph, index):
            return None
        quantized_in = fresh_name(graph, f"{x}_quantized")
        q = Node(f"{node.name}_quantize", "QuantizeLinear", "",
                 (x, y.scale, y.zero_point or ""), (quantized_in,), {}, graph.opsets[""])
        if not validated(q, graph):
            return None
        moved = Node(node.name, node.op_type, "", (quantized_in, *node.inputs[1:]), (y.q,),
                     dict(node.attrs), node.opset)
        if not validated(moved, graph):
            return None
        graph = replace_nodes(graph, [node, y.node], moved)
        nodes = list(graph.nodes)
        nodes.insert(nodes.index(moved), q)
        graph.nodes = nodes
        return graph
    return rule


def propagate_qdq(graph: Graph) -> tuple[Graph, list[str]]:
    """ORT's QDQPropagation: DequantizeLinear forward and QuantizeLinear backward through
    MaxPool, Reshape, Transpose, Squeeze and Unsqueeze."""
    graph, forward = rewrite_all(graph, _propagate_dq(PROPAGATE_THROUGH))
    graph, backward = rewrite_all(graph, _propagate_q(PROPAGATE_THROUGH))
    return graph, forward + backward


def propagate_qdq_integer_only(graph: Graph) -> tuple[Graph, list[str]]:
    """Integer-only: the same through Flatten as well (ORT leaves DQ -> Flatten -> Gemm
    in float)."""
    graph, forward = rewrite_all(graph, _propagate_dq(INTEGER_ONLY_PROPAGATE))
    graph, backward = rewrite_all(graph, _propagate_q(INTEGER_ONLY_PROPAGATE))
    return graph, forward + backward


# ------------------------------------------------------------ Relu/Clip before Q


def _activation_bounds(node: Node, graph: Graph) -> tuple[float, float] | None:
    big = float(np.finfo(np.float32).max)
    if float_node(node, "Relu"):
        return 0.0, big
    if not float_node(node, "Clip"):
        return None
    if node.opset < 11:
        return float(node.attrs.get("min", -big)), float(node.attrs.get("max", big))
    bounds = [-big, big]
    for slot in (1, 2):
        name = node.input(slot)
        if name is None:
            continue
        if name not in graph.constants or graph.constants[name].size != 1:
            return None
        bounds[slot - 1] = float(graph.constants[name].reshape(-1)[0])
    return bounds[0], bounds[1]


def redundant_before(node: Node, y: Quantized, graph: Graph) -> bool:
    """ORT's ReluQuantFusion/ClipQuantFusion condition: the Q's own clamping already does
    what the Relu/Clip does."""
    bounds = _activation_bounds(node, graph)
    params = _scalar_params(y, graph)
    if bounds is None or params is None:
        return False
    s, z = params
    qmin, qmax = QUANT_RANGE[graph.tensors[y.q].dtype]
    if float_node(node, "Relu"):
        return z == qmin
    lo = int(np.rint(F32(F32(bounds[0]) / F32(s)))) + z
    hi = int(np.rint(F32(F32(bounds[1]) / F32(s)))) + z
    return lo <= qmin and hi >= qmax


def _drop_redundant_activation(graph: Graph, index: Index, node: Node) -> Graph | None:
    if not (float_node(node, "Relu") or float_node(node, "Clip")):
        return None
    y = quantized_by(node.outputs[0], graph, index)
    if y is None or not redundant_before(node, y, graph):
        return None
    q = Node(y.node.name, "QuantizeLinear", "", (node.inputs[0], *y.node.inputs[1:]),
             y.node.outputs, dict(y.node.attrs), y.node.opset)
    return replace_nodes(graph, [node, y.node], q)


def drop_redundant_activations(graph: Graph) -> tuple[Graph, list[str]]:
    """Relu/Clip -> Q where Q's clamping makes the activation redundant: remove it."""
    return rewrite_all(graph, _drop_redundant_activation)


# ------------------------------------------------------------ fusions


@dataclass(frozen=True)
class Fusion:
    """DQ inputs -> float `op` -> Q becomes `target`; `build` returns its inputs."""

    op: str
    target: str
    domain: str
    build: Callable[[Graph, Node, list[Quantized | None], Quantized, bool], list[str] | None]
    attrs: Callable[[Graph, Node], dict[str, Any]] = field(default=lambda g, n: dict(n.attrs))


def _dtype(graph: Graph, q: Quantized) -> str:
    return graph.tensors[q.q].dtype


def _scale_axis(q: Quantized, graph: Graph) -> int | None:
    """The normalized axis of a per-axis DequantizeLinear (None when per tensor)."""
    if graph.constants[q.scale].size == 1:
        return None
    rank = len(graph.tensors[q.q].shape)
    return int(q.node.attrs.get("axis", 1)) % rank


def _bias_input(graph: Graph, node: Node, bias: Quantized | None, x: Quantized, w: Quantized,
                integer_only: bool, check_scale: bool) -> str | None:
    """The int32 bias of a fused Conv/Gemm, or None when ORT would not fuse it.
    An int32 DQ bias with zero point 0 adds to the accumulator raw (ORT checks its scale
    against x_scale * w_scale within 1% for Conv, not at all for Gemm); a float 1-D bias
    initializer is quantized with that scale (ORT's WeightBiasQuantization)."""
    name = node.input(2)
    assert name is not None
    expected = (F32(graph.constants[x.scale].reshape(-1)[0]) *
                graph.constants[w.scale].astype(F32).reshape(-1)).astype(F32)
    if bias is None:
        value = graph.constants.get(name)
        if value is None or value.dtype != np.float32 or value.ndim != 1:
            return None
        quantized = np.rint((value / np.broadcast_to(expected, value.shape)).astype(F32))
        return _new_constant(graph, f"{name}_quantized", quantized.astype(np.int32))
    if bias.q not in graph.constants or _dtype(graph, bias) != "int32":
        return None
    b_scale, b_zp = bias.values(graph)
    if b_zp is not None and np.any(b_zp):
        return None
    if check_scale:
        scales = np.broadcast_to(b_scale.astype(F32).reshape(-1), expected.shape)
        tolerance = 1e-6 + 0.01 * np.abs(expected.astype(np.float64))
        if np.any(np.abs(scales.astype(np.float64) - expected) > tolerance):
            if not integer_only:
                return None
            # Integer-only: requantize the bias to the accumulator's scale.
            raw = graph.constants[bias.q].astype(np.float64) * scales / expected
            return _new_constant(graph, f"{bias.q}_rescaled",
                                 np.rint(raw).astype(np.int32))
    return bias.q


def build_conv(graph: Graph, node: Node, dqs: list[Quantized | None], y: Quantized,
               integer_only: bool) -> list[str] | None:
    x, w = dqs[0], dqs[1]
    if x is None or w is None or not per_tensor(x, graph) or _scale_axis(w, graph) not in (
            None, 0):
        return None
    if not integer_only and _dtype(graph, y) != _dtype(graph, x):
        return None  # ORT's QLinearConv produces the input's type
    inputs = [x.q, *_qparams(x, graph), w.q, *_qparams(w, graph), *_qparams(y, graph)]
    if node.input(2) is not None:
        bias = _bias_input(graph, node, dqs[2], x, w, integer_only, check_scale=True)
        if bias is None:
            return None
        inputs.append(bias)
    return inputs


def build_matmul(graph: Graph, node: Node, dqs: list[Quantized | None], y: Quantized,
                 integer_only: bool) -> list[str] | None:
    a, b = dqs[0], dqs[1]
    if a is None or b is None or not per_tensor(a, graph):
        return None
    if _dtype(graph, a) == "int8" and _dtype(graph, b) == "uint8":
        return None  # ORT has no int8 x uint8 QLinearMatMul
    if not integer_only and _dtype(graph, y) != _dtype(graph, a):
        return None  # ORT's kernels produce the type of A
    if not per_tensor(b, graph) and _scale_axis(b, graph) != len(graph.tensors[b.q].shape) - 1:
        return None
    return [a.q, *_qparams(a, graph), b.q, *_qparams(b, graph), *_qparams(y, graph)]


def build_gemm(graph: Graph, node: Node, dqs: list[Quantized | None], y: Quantized | None,
               integer_only: bool) -> list[str] | None:
    """QGemm's inputs; without y, a QGemm with float output."""
    a, b = dqs[0], dqs[1]
    if a is None or b is None or not per_tensor(a, graph):
        return None
    if _dtype(graph, a) == "int8" and _dtype(graph, b) != "int8":
        return None
    if y is not None and not integer_only and _dtype(graph, y) != _dtype(graph, a):
        return None  # ORT's kernels produce the type of A
    if not per_tensor(b, graph) and _scale_axis(b, graph) != (
            0 if node.attrs.get("transB", 0) else 1):
        return None
    inputs = [a.q, *_qparams(a, graph), b.q, *_qparams(b, graph)]
    if node.input(2) is not None:
        if float(node.attrs.get("alpha", 1.0)) != 1.0 or float(node.attrs.get("beta", 1.0)) != 1.0:
            return None
        bias = _bias_input(graph, node, dqs[2], a, b, integer_only, check_scale=False)
        if bias is None:
            return None
        inputs.append(bias)
    else:
        inputs.append("")
    return [*inputs, *_qparams(y, graph)] if y is not None else inputs


def build_binary(graph: Graph, node: Node, dqs: list[Quantized | None], y: Quantized,
                 integer_only: bool) -> list[str] | None:
    a, b = dqs[0], dqs[1]
    if a is None or b is None or not per_tensor(a, graph) or not per_tensor(b, graph):
        return None
    return [a.q, *_qparams(a, graph), b.q, *_qparams(b, graph), *_qparams(y, graph)]


def build_unary(graph: Graph, node: Node, dqs: list[Quantized | None], y: Quantized,
                integer_only: bool) -> list[str] | None:
    x = dqs[0]
    if x is None or not per_tensor(x, graph):
        return None
    return [x.q, *_qparams(x, graph), *_qparams(y, graph)]


def build_concat(graph: Graph, node: Node, dqs: list[Quantized | None], y: Quantized,
                 integer_only: bool) -> list[str] | None:
    if any(d is None or not per_tensor(d, graph) for d in dqs):
        return None
    inputs = _qparams(y, graph)
    for d in dqs:
        assert d is not None
        inputs += [d.q, *_qparams(d, graph)]
    return inputs


def _gemm_attrs(graph: Graph, node: Node) -> dict[str, Any]:
    return {k: v for k, v in node.attrs.items() if k != "beta"}


def _softmax_attrs(graph: Graph, node: Node) -> dict[str, Any]:
    # QLinearSoftmax's 'opset' attribute is the Softmax version: before 13 the tensor
    # is flattened at axis (default 1), from 13 each slice along axis (default -1).
    version = operator_version(node)
    return {"axis": node.attrs.get("axis", 1 if version < 13 else -1), "opset": version}


FUSIONS = {f.op: f for f in [
    Fusion("Conv", "QLinearConv", "", build_conv),
    Fusion("MatMul", "QLinearMatMul", "", build_matmul),
    Fusion("Gemm", "QGemm", MS, build_gemm, _gemm_attrs),
    Fusion("Add", "QLinearAdd", MS, build_binary),
    Fusion("Mul", "QLinearMul", MS, build_binary),
    Fusion("AveragePool", "QLinearAveragePool", MS, build_unary),
    Fusion("GlobalAveragePool", "QLinearGlobalAveragePool", MS, build_unary),
    Fusion("Concat", "QLinearConcat", MS, build_concat),
    Fusion("Sigmoid", "QLinearSigmoid", MS, build_unary),
    Fusion("LeakyRelu", "QLinearLeakyRelu", MS, build_unary),
    Fusion("Softmax", "QLinearSoftmax", MS, build_unary, _softmax_attrs),
]}


# On x86 (QDQIsInt8Allowed false) ORT fuses no Conv or MatMul whose activation input
# is int8: its int8 -> uint8 conversion is meant to have removed them all.
INT8_INPUT_REFUSED_ON_X86 = ("Conv", "MatMul")


def _fuse(integer_only: bool, int8_activations: bool = True) -> Rule:
    def rule(graph: Graph, index: Index, node: Node) -> Graph | None:
        fusion = FUSIONS.get(node.op_type) if node.domain == "" else None
        if fusion is None:
            return None
        dqs = [dequantized(name, graph, index) if name else None for name in node.inputs]
        if not int8_activations and node.op_type in INT8_INPUT_REFUSED_ON_X86 and \
                dqs[0] is not None and _dtype(graph, dqs[0]) == "int8":
            return None
        y = quantized_by(node.outputs[0], graph, index)
        if y is None:
            return _fuse_float_output(graph, index, node, dqs, integer_only)
        if not per_tensor(y, graph):
            return None
        inputs = fusion.build(graph, node, dqs, y, integer_only)
        if inputs is None:
            return None
        while inputs and not inputs[-1]:
            inputs.pop()
        fused = Node(name=node.name, op_type=fusion.target, domain=fusion.domain,
                     inputs=tuple(inputs), outputs=(y.q,), attrs=fusion.attrs(graph, node),
                     opset=1 if fusion.domain == MS else graph.opsets[""])
        if fusion.domain == MS:
            graph.opsets.setdefault(MS, 1)
        if not validated(fused, graph):
            return None
        return replace_nodes(graph, [node, y.node], fused)
    return rule


def _fuse_float_output(graph: Graph, index: Index, node: Node, dqs: list[Quantized | None],
                       integer_only: bool) -> Graph | None:
    """DQ(a), DQ(b) -> Gemm/MatMul with no QuantizeLinear after: ORT still fuses them,
    into a QGemm with float output and a MatMulIntegerToFloat."""
    if node.op_type not in ("Gemm", "MatMul") or any(
            reader.op_type == "QuantizeLinear" for reader in index.readers.get(
                node.outputs[0], [])):
        return None
    a, b = dqs[0], dqs[1]
    if a is None or b is None or not per_tensor(a, graph):
        return None
    if node.op_type == "Gemm":
        if node.input(2) is not None and dqs[2] is None:
            return None  # a float bias is only quantized for a Gemm followed by a Q
        inputs = build_gemm(graph, node, dqs, None, integer_only)
        target, attrs = "QGemm", _gemm_attrs(graph, node)
    else:
        inputs = _matmul_integer_to_float_inputs(graph, node, a, b)
        target, attrs = "MatMulIntegerToFloat", {}
    if inputs is None:
        return None
    while inputs and not inputs[-1]:
        inputs.pop()
    fused = Node(node.name, target, MS, tuple(inputs), node.outputs, attrs, 1)
    graph.opsets.setdefault(MS, 1)
    if not validated(fused, graph):
        return None
    return replace_nodes(graph, [node], fused)


def _matmul_integer_to_float_inputs(graph: Graph, node: Node, a: Quantized,
                                    b: Quantized) -> list[str] | None:
    if _dtype(graph, a) == "int8" and _dtype(graph, b) == "uint8":
        return None
    if not per_tensor(b, graph) and _scale_axis(b, graph) != len(graph.tensors[b.q].shape) - 1:
        return None
    (a_scale, a_zp), (b_scale, b_zp) = _qparams(a, graph), _qparams(b, graph)
    return [a.q, b.q, a_scale, b_scale, a_zp, b_zp]


def fuse_qdq_operators(graph: Graph) -> tuple[Graph, list[str]]:
    """DQ -> Conv/MatMul/Gemm/Add/Mul/pools/Concat/Sigmoid/LeakyRelu/Softmax -> Q into
    the integer operator ORT fuses them into, under ORT's conditions (on ARM, where
    int8 activations are allowed)."""
    return rewrite_all(graph, _fuse(integer_only=False))


def fuse_qdq_operators_x86(graph: Graph) -> tuple[Graph, list[str]]:
    """The same under x86 ORT's conditions: no Conv or MatMul on int8 activations."""
    return rewrite_all(graph, _fuse(integer_only=False, int8_activations=False))


def fuse_qdq_operators_integer_only(graph: Graph) -> tuple[Graph, list[str]]:
    """Integer-only: also fuse where ORT keeps float (a bias whose scale is not the
    accumulator's is requantized to it)."""
    return rewrite_all(graph, _fuse(integer_only=True))


# Operators that move quantized values without arithmetic: DQ -> op -> Q with one
# quantization on both sides is the op on the integers.
PASS_THROUGH = ("MaxPool", "Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze",
                "Identity")


def _pass_through(graph: Graph, index: Index, node: Node) -> Graph | None:
    if node.domain or node.op_type not in PASS_THROUGH:
        return None
    x = dequantized(node.inputs[0], graph, index)
    y = quantized_by(node.outputs[0], graph, index)
    if x is None or y is None or not same_quantization(x, y, graph):
        return None
    moved = Node(node.name, node.op_type, "", (x.q, *node.inputs[1:]), (y.q,),
                 dict(node.attrs), node.opset)
    if not validated(moved, graph):
        return None
    return replace_nodes(graph, [node, y.node], moved)


def pass_quantized_through(graph: Graph) -> tuple[Graph, list[str]]:
    """DQ(x) -> MaxPool/Reshape/Flatten/Transpose/Squeeze/Unsqueeze -> Q with identical
    quantization: run the op on x and drop the DQ and the Q (ORT's DropQDQ actions)."""
    return rewrite_all(graph, _pass_through)


# ------------------------------------------------------------ what is left between DQ and Q


def _activation_table(graph: Graph, index: Index, node: Node) -> Graph | None:
    """DQ(x) -> Relu/Clip -> Q, which ORT computes in float: with one quantization on
    both sides that is an integer clamp of x at the quantized bounds (Q o DQ is the
    identity on integers, and both are monotone); with two, a requantization followed
    by that clamp."""
    bounds = _activation_bounds(node, graph)
    if bounds is None:
        return None
    x = dequantized(node.inputs[0], graph, index)
    y = quantized_by(node.outputs[0], graph, index)
    if x is None or y is None:
        return None
    if not same_quantization(x, y, graph):
        # Q(clamp(v)) == clamp(Q(v), Q(lo), Q(hi)) for monotone Q: the DQ -> Q left
        # behind becomes a requantizing table (cancel_dequantize_quantize).
        return _integer_activation(graph, index, node)
    params = _scalar_params(y, graph)
    if params is None:
        return None
    dtype = graph.tensors[y.q].dtype
    lo, hi = (int(quantize_like_mlas(np.array([b], F32), params[0], params[1], dtype)[0])
              for b in bounds)
    names = [_new_constant(graph, f"{node.name}_bound", np.array(v, dtype=dtype))
             for v in (lo, hi)]
    clamp = Node(node.name, "Clip", "", (x.q, *names), (y.q,), {}, max(graph.opsets[""], 13))
    if not validated(clamp, graph):
        return None
    return replace_nodes(graph, [node, y.node], clamp)


def fold_relu_clip(graph: Graph) -> tuple[Graph, list[str]]:
    return rewrite_all(graph, _activation_table)


def _cancel(graph: Graph, index: Index, node: Node) -> Graph | None:
    if not float_node(node, "QuantizeLinear"):
        return None
    x = dequantized(node.inputs[0], graph, index)
    if x is None or index.only_reader(node.inputs[0]) is None:
        return None
    y = Quantized(node, node.outputs[0], node.inputs[1], node.input(2))
    if y.scale not in graph.constants or (y.zero_point and y.zero_point not in graph.constants):
        return None
    if same_quantization(x, y, graph):
        new = Node(node.name, "Identity", "", (x.q,), (y.q,), {}, graph.opsets[""])
    elif not per_tensor(x, graph) or not per_tensor(y, graph):
        return None
    elif graph.tensors[x.q].dtype == graph.tensors[y.q].dtype:
        inputs = (*_qparams(y, graph), x.q, *_qparams(x, graph))
        new = Node(node.name, "QLinearConcat", MS, inputs, (y.q,), {"axis": 0}, 1)
        graph.opsets.setdefault(MS, 1)
    else:
        new = Node(node.name, "Requantize", "ai.onnx2mcu",
                   (x.q, *_qparams(x, graph), *_qparams(y, graph)), (y.q,), {}, 1)
        graph.opsets.setdefault("ai.onnx2mcu", 1)
    if not validated(new, graph):
        return None
    return replace_nodes(graph, [x.node, node], new)


def cancel_dequantize_quantize(graph: Graph) -> tuple[Graph, list[str]]:
    """DQ(x) -> Q: the same quantization on both sides leaves x (an Identity, which
    costs nothing); different ones are ORT's float requantization, Q(DQ(x)), computed
    exactly by a table: a single-input QLinearConcat, or a Requantize when the type
    changes too."""
    return rewrite_all(graph, _cancel)


def _integer_activation(graph: Graph, index: Index, node: Node) -> Graph | None:
    """Integer-only: op -> Relu/Clip -> Q that ORT keeps in float (the activation is not
    redundant) becomes op -> Q -> integer Clip at Q(bounds): Q is monotone."""
    bounds = _activation_bounds(node, graph)
    if bounds is None:
        return None
    y = quantized_by(node.outputs[0], graph, index)
    if y is None:
        return None
    params = _scalar_params(y, graph)
    if params is None:
        return None
    dtype = graph.tensors[y.q].dtype
    lo, hi = (int(quantize_like_mlas(np.array([b], F32), params[0], params[1], dtype)[0])
              for b in bounds)
    unclamped = fresh_name(graph, f"{y.q}_unclamped")
    q = Node(y.node.name, "QuantizeLinear", "", (node.inputs[0], *y.node.inputs[1:]),
             (unclamped,), dict(y.node.attrs), y.node.opset)
    if not validated(q, graph):
        return None
    names = [_new_constant(graph, f"{node.name}_bound", np.array(v, dtype=dtype))
             for v in (lo, hi)]
    clamp = Node(node.name, "Clip", "", (unclamped, *names), (y.q,), {},
                 max(graph.opsets[""], 13))
    if not validated(clamp, graph):
        return None
    graph = replace_nodes(graph, [node, y.node], q)
    nodes = list(graph.nodes)
    nodes.insert(nodes.index(q) + 1, clamp)
    graph.nodes = nodes
    return graph


def integer_activations(graph: Graph) -> tuple[Graph, list[str]]:
    return rewrite_all(graph, _integer_activation)


# ------------------------------------------------------------ diagnosis

# Inputs that must come from a DequantizeLinear for a fusion (the rest may be absent).
DEQUANTIZED_INPUTS = {"Conv": 2, "MatMul": 2, "Gemm": 2, "Add": 2, "Mul": 2}


def fusion_refusal(graph: Graph, node: Node, x86: bool) -> str:
    """Why ORT's QDQ rules leave this float operator unfused (for inspect)."""
    index = Index.of(graph)
    fusion = FUSIONS.get(node.op_type)
    if fusion is None:
        return f"ONNX Runtime has no integer {node.op_type}"
    count = len(node.inputs) if node.op_type == "Concat" else DEQUANTIZED_INPUTS.get(
        node.op_type, 1)
    for name in node.inputs[:count]:
        if name and dequantized(name, graph, index) is None:
            source = index.producer.get(name)
            origin = f"computed by {source.describe()}" if source else "a float input or constant"
            return f"input '{name}' is not dequantized from integers ({origin})"
    out = node.outputs[0]
    y = quantized_by(out, graph, index)
    if y is None:
        if out in graph.outputs:
            return f"its output '{out}' is a float output of the model"
        readers = ", ".join(r.describe() for r in index.readers.get(out, []))
        return f"its output '{out}' is not quantized by one QuantizeLinear (read by {readers})"
    x = dequantized(node.inputs[0], graph, index)
    assert x is not None
    if x86 and node.op_type in INT8_INPUT_REFUSED_ON_X86 and _dtype(graph, x) == "int8":
        return ("its input is int8, which ONNX Runtime on x86 fuses into no Conv or MatMul "
                "(--qdq-rules arm follows ARM, which does)")
    if node.op_type in ("Conv", "MatMul", "Gemm") and _dtype(graph, y) != _dtype(graph, x):
        return (f"its input is {_dtype(graph, x)} and its output {_dtype(graph, y)}: ONNX "
                "Runtime's integer kernel produces its input's type")
    types = {_dtype(graph, y)} | {_dtype(graph, d) for d in (
        dequantized(name, graph, index) for name in node.inputs[:count] if name)
        if d is not None and node.op_type not in ("Conv", "MatMul", "Gemm")}
    if len(types) > 1:
        return (f"its inputs and output mix {' and '.join(sorted(types))}: ONNX Runtime "
                "fuses it only when they share one type")
    if node.op_type == "Conv" and node.input(2):
        return "its bias is not an int32 DequantizeLinear with scale x_scale * w_scale (1%)"
    if node.op_type == "Gemm" and node.input(2):
        return "its bias is not an int32 DequantizeLinear, or alpha or beta is not 1"
    return "ONNX Runtime's fusion conditions for it do not hold (quantization axes or types)"
