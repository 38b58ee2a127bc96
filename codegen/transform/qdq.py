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

import numpy as np

from codegen import ops
from codegen.arith.numerics import quantize_like_mlas
from codegen.core.ir import QDQ_RANGE, QUANT_RANGE, Graph, Node
from codegen.core.pattern import (
    Index,
    Quantized,
    dequantized,
    dtype_of,
    float_node,
    fresh_name,
    is_quantize,
    new_constant,
    per_tensor,
    qparams,
    quantized_by,
    same_quantization,
    scalar_params,
)
from codegen.ops import Fusion, OpDef

from ._graph import replace_nodes, validated

MS = "com.microsoft"
F32 = np.float32
# The 16-bit activation types (A16W8), which only --integer-only fuses (Fusion.wide).
WIDE_TYPES = frozenset(QDQ_RANGE) - frozenset(QUANT_RANGE)
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
        values = scalar_params(q, graph)
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
        scale = new_constant(graph, f"{q1.name}_merged_scale", np.array(s, dtype=F32))
        zp = new_constant(graph, f"{q1.name}_merged_zero_point",
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
    zp = new_constant(graph, f"{q_zp}_uint8",
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


Through = Callable[[OpDef], bool]


def _ort_propagates(opdef: OpDef) -> bool:
    return opdef.ort_propagates


def _integer_only_propagates(opdef: OpDef) -> bool:
    return opdef.integer_only_propagates


def _goes_through(node: Node, through: Through) -> bool:
    opdef = ops.standard(node.op_type) if not node.domain else None
    return opdef is not None and through(opdef) and bool(node.inputs)


def _propagate_dq(through: Through) -> Rule:
    """DQ(x) -> op -> y where y is not quantized again: op on x, then DQ. The op now
    runs on integers."""
    def rule(graph: Graph, index: Index, node: Node) -> Graph | None:
        if not _goes_through(node, through):
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


def _propagate_q(through: Through) -> Rule:
    """x -> op -> Q, x float and read only by op: Q(x) -> op on integers."""
    def rule(graph: Graph, index: Index, node: Node) -> Graph | None:
        if not _goes_through(node, through):
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
    the operators whose OpDef says ORT does (MaxPool, Reshape, Transpose, Squeeze,
    Unsqueeze)."""
    graph, forward = rewrite_all(graph, _propagate_dq(_ort_propagates))
    graph, backward = rewrite_all(graph, _propagate_q(_ort_propagates))
    return graph, forward + backward


def propagate_qdq_integer_only(graph: Graph) -> tuple[Graph, list[str]]:
    """Integer-only: the same through Flatten as well (ORT leaves DQ -> Flatten -> Gemm
    in float)."""
    graph, forward = rewrite_all(graph, _propagate_dq(_integer_only_propagates))
    graph, backward = rewrite_all(graph, _propagate_q(_integer_only_propagates))
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
    params = scalar_params(y, graph)
    if bounds is None or params is None:
        return False
    s, z = params
    qmin, qmax = QDQ_RANGE[graph.tensors[y.q].dtype]
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


def _fuse(integer_only: bool, int8_activations: bool = True) -> Rule:
    def rule(graph: Graph, index: Index, node: Node) -> Graph | None:
        fusion = ops.fusion_of(node)
        if fusion is None:
            return None
        dqs = [dequantized(name, graph, index) if name else None for name in node.inputs]
        if integer_only and fusion.wide is not None and dqs[0] is not None and \
                dtype_of(graph, dqs[0]) in WIDE_TYPES:
            fusion = fusion.wide
        if not int8_activations and fusion.int8_input_refused_on_x86 and \
                dqs[0] is not None and dtype_of(graph, dqs[0]) == "int8":
            return None
        y = quantized_by(node.outputs[0], graph, index)
        if y is None:
            return _fuse_float_output(graph, index, node, fusion, dqs, integer_only)
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


def _fuse_float_output(graph: Graph, index: Index, node: Node, fusion: Fusion,
                       dqs: list[Quantized | None], integer_only: bool) -> Graph | None:
    """DQ inputs -> op with no QuantizeLinear after: what ORT still fuses it into
    (Gemm and MatMul: a QGemm with float output, a MatMulIntegerToFloat)."""
    rule = fusion.float_output
    if rule is None or any(is_quantize(reader) for reader in
                           index.readers.get(node.outputs[0], [])):
        return None
    inputs = rule.build(graph, node, dqs, None, integer_only)
    if inputs is None:
        return None
    while inputs and not inputs[-1]:
        inputs.pop()
    fused = Node(node.name, rule.target, rule.domain, tuple(inputs), node.outputs,
                 rule.attrs(graph, node), 1)
    graph.opsets.setdefault(rule.domain, 1)
    if not validated(fused, graph):
        return None
    return replace_nodes(graph, [node], fused)


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


def _pass_through(graph: Graph, index: Index, node: Node) -> Graph | None:
    if not _goes_through(node, lambda opdef: opdef.moves(node)):
        return None
    x = dequantized(node.inputs[0], graph, index)
    if x is None:
        return None
    ys = [quantized_by(out, graph, index) for out in node.outputs]  # Split: several
    if any(y is None or not same_quantization(x, y, graph) for y in ys):
        return None
    quantized = [y for y in ys if y is not None]
    moved = Node(node.name, node.op_type, "", (x.q, *node.inputs[1:]),
                 tuple(y.q for y in quantized), dict(node.attrs), node.opset)
    if not validated(moved, graph):
        return None
    return replace_nodes(graph, [node, *(y.node for y in quantized)], moved)


def pass_quantized_through(graph: Graph) -> tuple[Graph, list[str]]:
    """DQ(x) -> an operator that moves values (MaxPool, Reshape, Flatten, Transpose,
    Squeeze, Unsqueeze, Slice, Split, Gather, Expand, Tile, ...) -> Q on each output, with
    identical quantization: run the op on x and drop the DQ and the Qs (ORT's DropQDQ
    actions)."""
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
    params = scalar_params(y, graph)
    if params is None:
        return None
    dtype = graph.tensors[y.q].dtype
    lo, hi = (int(quantize_like_mlas(np.array([b], F32), params[0], params[1], dtype)[0])
              for b in bounds)
    names = [new_constant(graph, f"{node.name}_bound", np.array(v, dtype=dtype))
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
        inputs = (*qparams(y, graph), x.q, *qparams(x, graph))
        new = Node(node.name, "QLinearConcat", MS, inputs, (y.q,), {"axis": 0}, 1)
        graph.opsets.setdefault(MS, 1)
    else:
        new = Node(node.name, "Requantize", "ai.onnx2mcu",
                   (x.q, *qparams(x, graph), *qparams(y, graph)), (y.q,), {}, 1)
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
    params = scalar_params(y, graph)
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
    names = [new_constant(graph, f"{node.name}_bound", np.array(v, dtype=dtype))
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


def fusion_refusal(graph: Graph, node: Node, x86: bool) -> str:
    """Why ORT's QDQ rules leave this float operator unfused (for inspect)."""
    index = Index.of(graph)
    fusion = ops.fusion_of(node)
    if ops.runtime_quantized(node, graph):
        return "its products are quantized at run time (dynamic quantization), the rest float"
    if fusion is None:
        return f"ONNX Runtime has no integer {node.op_type}"
    count = len(node.inputs) if fusion.dequantized_inputs is None else \
        fusion.dequantized_inputs
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
    x = dequantized(node.inputs[0], graph, index) if count else None
    if x is not None and dtype_of(graph, x) in WIDE_TYPES:
        hint = "; --integer-only computes it with onnx2mcu's exact 16-bit x 8-bit kernel" \
            if fusion.wide is not None else ""
        return (f"its activation is {dtype_of(graph, x)}, which ONNX Runtime fuses into no "
                f"integer kernel{hint}")
    if x is not None and x86 and fusion.int8_input_refused_on_x86 and \
            dtype_of(graph, x) == "int8":
        return ("its input is int8, which ONNX Runtime on x86 fuses into no Conv or MatMul "
                "(--qdq-rules arm follows ARM, which does)")
    if x is not None and fusion.product and dtype_of(graph, y) != dtype_of(graph, x):
        return (f"its input is {dtype_of(graph, x)} and its output {dtype_of(graph, y)}: ONNX "
                "Runtime's integer kernel produces its input's type")
    types = {dtype_of(graph, y)} | {dtype_of(graph, d) for d in (
        dequantized(name, graph, index) for name in node.inputs[:count] if name)
        if d is not None and not fusion.product}
    if len(types) > 1:
        return (f"its inputs and output mix {' and '.join(sorted(types))}: ONNX Runtime "
                "fuses it only when they share one type")
    return fusion.unfused_hint(node)
