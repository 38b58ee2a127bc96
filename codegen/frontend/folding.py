"""Constant subgraphs folded at import, with static shapes: Shape, Size,
ConstantOfShape, Gather/Slice/Concat/Unsqueeze on shapes, Expand, Range, Cast and
arithmetic on constants, as exporters write them (torch's exporters compute reshape
targets and padding from the input's shape at run time). Each foldable node is computed
by onnx's reference evaluator (onnx.reference), not by hand, and its outputs become
constants.

Only what has one exact answer is folded: integer and boolean computations, data
movement, and float arithmetic of one IEEE operation per element (the results of numpy
and of ORT's kernels are then the same bits). Anything whose float result depends on an
order of summation or a library function is left as it is.

QuantizeLinear of a constant folds as ORT's constant folding computes it (MLAS's
rounding, per axis), and so does QuantizeLinear(DequantizeLinear(integer constant)), as
ORT's quantizer writes the weights of a model that was quantized before. A
DequantizeLinear of constants is left to the QDQ recipes (a weight's DequantizeLinear is
what they fuse), except where every reader takes it as a plain float value that no
recipe fuses (OpDef.float_constants: a Pad's constant_value): there it folds to the
float values ORT's DequantizeLinear computes."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import onnx
from numpy.typing import NDArray
from onnx import numpy_helper, shape_inference
from onnx.reference import ReferenceEvaluator

from codegen import ops
from codegen.arith.numerics import dequantize_like_ort, quantize_constant_like_ort
from codegen.core.ir import QDQ_RANGE, Node
from codegen.errors import ModelError

# Exact on any input type: data movement, comparisons, integer and boolean logic.
MOVES_OR_SELECTS = frozenset({
    "Cast", "Concat", "ConstantOfShape", "Equal", "Expand", "Flatten", "Gather",
    "GatherElements", "Greater", "GreaterOrEqual", "Identity", "Less", "LessOrEqual", "Not",
    "And", "Or", "Xor", "Range", "Reshape", "Slice", "Split", "Squeeze", "Tile", "Transpose",
    "Unsqueeze", "Where", "Pad", "Max", "Min", "Abs", "Neg", "Sign", "Floor", "Ceil",
})
# One correctly rounded IEEE operation per element: exact in float too.
ONE_OPERATION = frozenset({"Add", "Sub", "Mul", "Div", "Sqrt", "Reciprocal"})
# Integer only (a float sum or product depends on the order of its terms).
INTEGER_ONLY = frozenset({"ReduceProd", "ReduceSum", "ReduceMax", "ReduceMin", "Mod"})
SHAPE_OPS = frozenset({"Shape", "Size"})
# The integer types a QuantizeLinear of a constant folds to.
QUANTIZED_CONSTANT_TYPES = tuple(QDQ_RANGE)


def _is_float(value: NDArray[Any]) -> bool:
    return value.dtype.kind == "f"


def static_shapes(model: onnx.ModelProto, kept: list[int], folded: Mapping[str, NDArray[Any]],
                  input_shapes: Mapping[str, tuple[int, ...]]) -> dict[str, tuple[int, ...]]:
    """Every tensor's shape that onnx's shape inference finds static, with the graph
    inputs at `input_shapes`, only the `kept` nodes, and the `folded` values as
    initializers (so that a Reshape whose target has folded has a static output)."""
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    g = probe.graph
    nodes = [g.node[i] for i in kept]
    del g.node[:]
    g.node.extend(nodes)
    del g.value_info[:]
    g.initializer.extend(numpy_helper.from_array(value, name) for name, value in folded.items())
    for value in g.input:
        shape = input_shapes.get(value.name)
        if shape is None or not value.type.HasField("tensor_type"):
            continue
        dims = value.type.tensor_type.shape.dim
        del dims[:]
        for d in shape:
            dims.add().dim_value = d
    shapes = dict(input_shapes)
    shapes.update({t.name: tuple(int(d) for d in t.dims) for t in g.initializer})
    # onnx knows no com.microsoft operator: their outputs' shapes are given to it, a round
    # at a time, so that a Shape reading a QOperator model's QLinearAdd folds.
    contrib = sum(1 for node in g.node if node.domain == "com.microsoft")
    for _ in range(contrib + 1):
        try:
            inferred = shape_inference.infer_shapes(probe, data_prop=True)
        except Exception:  # a model onnx cannot infer: nothing is folded from shapes
            return shapes
        types = _elem_types(inferred.graph)
        for value in (*inferred.graph.value_info, *inferred.graph.output):
            t = value.type.tensor_type
            if value.type.HasField("tensor_type") and t.HasField("shape") and all(
                    d.HasField("dim_value") for d in t.shape.dim):
                shapes.setdefault(value.name, tuple(int(d.dim_value) for d in t.shape.dim))
        given = False
        for node in g.node:
            out = node.output[0] if node.output else ""
            if node.domain != "com.microsoft" or not out or out in shapes:
                continue
            shape = contrib_output_shape(node, shapes)
            elem = _contrib_output_type(node, types)
            if shape is not None and elem:
                g.value_info.append(onnx.helper.make_tensor_value_info(out, elem, list(shape)))
                shapes[out], types[out] = shape, elem  # for the next ones in this round
                given = True
        if not given:
            break
    return shapes


def _elem_types(g: onnx.GraphProto) -> dict[str, int]:
    types = {t.name: t.data_type for t in g.initializer}
    for value in (*g.input, *g.value_info, *g.output):
        if value.type.HasField("tensor_type") and value.type.tensor_type.elem_type:
            types[value.name] = value.type.tensor_type.elem_type
    return types


def _contrib_output_type(node: onnx.NodeProto, types: Mapping[str, int]) -> int:
    """The element type of a com.microsoft QLinear operator's output: its y_zero_point's
    (QGemm: float without one), else its first input's."""
    if node.op_type == "QGemm":
        zp = node.input[8] if len(node.input) > 8 and node.input[8] else ""
        return types.get(zp, 0) if zp else onnx.TensorProto.FLOAT
    return types.get(node.input[0], 0) if node.input else 0


def contrib_output_shape(node: onnx.NodeProto,
                         shapes: Mapping[str, tuple[int, ...]]) -> tuple[int, ...] | None:
    """The output shape of ORT's com.microsoft QLinear operators that QOperator models
    hold, from their inputs' shapes (None where unknown)."""
    def shape(i: int) -> tuple[int, ...] | None:
        return shapes.get(node.input[i]) if i < len(node.input) and node.input[i] else None

    attrs = _attributes(node)
    op = node.op_type
    try:
        if op in ("QLinearAdd", "QLinearMul"):
            a, b = shape(0), shape(3)
            return None if a is None or b is None else tuple(np.broadcast_shapes(a, b))
        if op in ("QLinearSigmoid", "QLinearLeakyRelu", "QLinearSoftmax"):
            return shape(0)
        if op == "QGemm":
            a, b = shape(0), shape(3)
            if a is None or b is None or len(a) != 2 or len(b) != 2:
                return None
            return (a[1] if attrs.get("transA", 0) else a[0],
                    b[0] if attrs.get("transB", 0) else b[1])
        if op == "QLinearConcat":
            parts = [shape(i) for i in range(2, len(node.input), 3)]
            if not parts or any(p is None for p in parts):
                return None
            known = [p for p in parts if p is not None]
            axis = int(attrs.get("axis", 0)) % len(known[0])
            out = list(known[0])
            out[axis] = sum(p[axis] for p in known)
            return tuple(out)
        if op == "QLinearGlobalAveragePool":
            x = shape(0)
            if x is None or len(x) < 3:
                return None
            if attrs.get("channels_last", 0):
                return (x[0], *([1] * (len(x) - 2)), x[-1])
            return (*x[:2], *([1] * (len(x) - 2)))
    except ValueError:  # shapes that do not broadcast: the importer names the problem
        return None
    return None


def _shape_value(proto: onnx.NodeProto, shape: tuple[int, ...]) -> NDArray[Any]:
    if proto.op_type == "Size":
        return np.array(int(np.prod(shape, dtype=np.int64)), np.int64)
    attrs = {a.name: a.i for a in proto.attribute}
    rank = len(shape)
    start, end = attrs.get("start", 0), attrs.get("end", rank)
    start = min(max(start + rank if start < 0 else start, 0), rank)
    end = min(max(end + rank if end < 0 else end, 0), rank)
    return np.array(shape[start:end], np.int64)


def foldable(proto: onnx.NodeProto, values: list[NDArray[Any]]) -> bool:
    op = proto.op_type
    if op in MOVES_OR_SELECTS:
        return True
    if op in ONE_OPERATION:
        return True
    return op in INTEGER_ONLY and not any(_is_float(v) for v in values)


def evaluate(proto: onnx.NodeProto, values: list[NDArray[Any] | None],
             opset: int) -> list[NDArray[Any]]:
    """The node's outputs, computed by onnx's reference evaluator."""
    feeds = {name: value for name, value in zip(proto.input, values, strict=True)
             if name and value is not None}
    session = ReferenceEvaluator(proto, opsets={"": opset})
    outputs = session.run(None, feeds)
    return [np.asarray(o) for o in outputs]


def fold_constant_subgraphs(model: onnx.ModelProto, order: list[int],
                            input_shapes: Mapping[str, tuple[int, ...]],
                            constants: dict[str, NDArray[Any]],
                            max_bytes: int) -> tuple[list[int], list[str], dict[str, str]]:
    """The indexes of the nodes left after folding (in `order`), with the folded outputs
    added to `constants`, the names of the folded nodes, and the constants that float
    constant slots read in place of a DequantizeLinear other nodes still read. Passes
    repeat while one folds more: a Reshape whose target folded has a static shape for the
    next."""
    g = model.graph
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    known: dict[str, NDArray[Any]] = dict(constants)
    # The float values of DequantizeLinear nodes of constants (the nodes stay).
    dequantized: dict[str, NDArray[Any]] = {}
    new: dict[str, NDArray[Any]] = {}
    kept = list(order)
    folded: list[str] = []
    outputs = {o.name for o in g.output}
    progress = True
    while progress:
        progress = False
        shapes: dict[str, tuple[int, ...]] | None = None

        def shapes_of(nodes: list[int] = kept) -> dict[str, tuple[int, ...]]:
            nonlocal shapes
            if shapes is None:
                shapes = static_shapes(model, nodes, new, input_shapes)
            return shapes

        remaining: list[int] = []
        for index in kept:
            proto = g.node[index]
            if proto.op_type == "Constant" and proto.domain in ("", "ai.onnx"):
                # Kept for the importer, which checks it; its value feeds the folding.
                remaining.append(index)
                if proto.output[0] not in known:
                    value = _fold_one(proto, known, dequantized, opset, shapes_of)
                    if value:
                        known[proto.output[0]] = value[0]
                continue
            if _is_onnx(proto, "DequantizeLinear"):
                # Kept for the QDQ recipes; its values feed a QuantizeLinear's folding.
                remaining.append(index)
                if proto.output[0] not in dequantized:
                    dq = dequantize_linear_value(
                        proto, known, max(opset, 13) if is_contrib_qdq(proto) else opset)
                    if dq is not None:
                        dequantized[proto.output[0]] = dq
                continue
            value = _fold_one(proto, known, dequantized, opset, shapes_of)
            if value is None or any(v.nbytes > max_bytes for v in value) or \
                    any(name in outputs for name in proto.output):
                remaining.append(index)
                continue
            for name, v in zip(proto.output, value, strict=True):
                if name:
                    known[name] = new[name] = constants[name] = v
            folded.append(proto.name or f"{proto.op_type}_{index}")
            progress = True
        kept = remaining
    kept, slot_values = _fold_float_constant_slots(model, kept, dequantized, constants, outputs)
    return kept, folded, slot_values


def is_contrib_qdq(proto: onnx.NodeProto) -> bool:
    """ORT's com.microsoft QuantizeLinear or DequantizeLinear (AMD Quark writes them for
    16-bit activations): the importer reads them as the standard operators."""
    return proto.domain == "com.microsoft" and proto.op_type in (
        "QuantizeLinear", "DequantizeLinear")


def _is_onnx(proto: onnx.NodeProto, op_type: str) -> bool:
    """The standard operator, or ORT's contrib version of a QuantizeLinear or
    DequantizeLinear."""
    return proto.op_type == op_type and (proto.domain in ("", "ai.onnx") or
                                         is_contrib_qdq(proto))


def _as_node(proto: onnx.NodeProto) -> Node:
    return Node(proto.name, proto.op_type, proto.domain, tuple(proto.input),
                tuple(proto.output))


def _fold_float_constant_slots(model: onnx.ModelProto, kept: list[int],
                               dequantized: Mapping[str, NDArray[Any]],
                               constants: dict[str, NDArray[Any]],
                               outputs: set[str]) -> tuple[list[int], dict[str, str]]:
    """`kept` without the DequantizeLinear nodes of constants that no node reads any more
    (their QuantizeLinear folded), nor those whose every reader takes them in a float
    constant slot (OpDef.float_constants), whose values become constants. Where only some
    readers do (AMD Quark's GhostNet reads ReLU6's quantized 6 in a Clip and a Div), the
    node stays and its values become a constant of their own too: {output: its name},
    for the importer to give those slots."""
    g = model.graph
    slots: dict[str, list[bool]] = {}
    for index in kept:
        proto = g.node[index]
        opdef = ops.lookup(_as_node(proto))
        for slot, name in enumerate(proto.input):
            if name in dequantized:
                slots.setdefault(name, []).append(
                    opdef is not None and slot in opdef.float_constants)
    remaining: list[int] = []
    slot_values: dict[str, str] = {}
    for index in kept:
        proto = g.node[index]
        out = proto.output[0] if _is_onnx(proto, "DequantizeLinear") else ""
        if out not in dequantized or out in outputs or not all(slots.get(out, [])):
            remaining.append(index)
            if out in dequantized and any(slots.get(out, [])):
                name = _unused_name(model, constants, f"{out}_value")
                constants[name] = dequantized[out]
                slot_values[out] = name
        elif slots.get(out):
            constants[out] = dequantized[out]
    return remaining, slot_values


def _unused_name(model: onnx.ModelProto, constants: Mapping[str, Any], base: str) -> str:
    g = model.graph
    taken = set(constants) | {i.name for i in g.input} | {o for n in g.node for o in n.output}
    name = base
    while name in taken:
        name += "_"
    return name


def _attributes(proto: onnx.NodeProto) -> dict[str, Any]:
    return {a.name: onnx.helper.get_attribute_value(a) for a in proto.attribute}


def _quantization_axis(proto: onnx.NodeProto, x: NDArray[Any], scale: NDArray[Any],
                       zero_point: NDArray[Any] | None, opset: int) -> tuple[bool, int | None]:
    """Whether this folding computes the (De)QuantizeLinear of constants (not blocked,
    sizes that match: else the importer names the problem), and its axis (None: per
    tensor)."""
    attrs = _attributes(proto)
    if attrs.get("block_size", 0):
        return False, None
    if scale.size == 1:
        return zero_point is None or zero_point.size == 1, None
    axis = int(attrs.get("axis", 1))
    if opset < 13 or not -x.ndim <= axis < x.ndim:
        return False, None
    axis %= x.ndim
    return x.shape[axis] == scale.size and (
        zero_point is None or zero_point.size == scale.size), axis


def dequantize_linear_value(proto: onnx.NodeProto, known: Mapping[str, NDArray[Any]],
                            opset: int) -> NDArray[Any] | None:
    """The float values of a DequantizeLinear of constants (ORT's kernel), or None."""
    names = [name for name in proto.input if name]
    if len(names) < 2 or any(name not in known for name in names):
        return None
    x, scale = known[proto.input[0]], known[proto.input[1]]
    zp = known[proto.input[2]] if len(proto.input) > 2 and proto.input[2] else None
    if str(x.dtype) not in (*QUANTIZED_CONSTANT_TYPES, "int32") or scale.dtype != np.float32:
        return None
    computed, axis = _quantization_axis(proto, x, scale, zp, opset)
    if not computed:
        return None
    zero = zp if zp is not None else np.zeros((), x.dtype)
    return dequantize_like_ort(x, scale, zero, axis)


def quantize_linear_value(proto: onnx.NodeProto, x: NDArray[Any], scale: NDArray[Any],
                          zero_point: NDArray[Any] | None, opset: int) -> NDArray[Any] | None:
    """QuantizeLinear of float constants as ORT's constant folding computes it, or None
    where this folding does not compute it."""
    dtype = str(zero_point.dtype) if zero_point is not None else "uint8"
    output_dtype = _attributes(proto).get("output_dtype", 0)
    if x.dtype != np.float32 or scale.dtype != np.float32 or \
            dtype not in QUANTIZED_CONSTANT_TYPES or \
            (zero_point is None and output_dtype not in (0, onnx.TensorProto.UINT8)):
        return None
    computed, axis = _quantization_axis(proto, x, scale, zero_point, opset)
    if not computed:
        return None
    return quantize_constant_like_ort(x, scale, zero_point, axis, dtype)


def _fold_quantize(proto: onnx.NodeProto, known: Mapping[str, NDArray[Any]],
                   dequantized: Mapping[str, NDArray[Any]],
                   opset: int) -> list[NDArray[Any]] | None:
    names = list(proto.input) + [""] * 3
    x = known.get(names[0], dequantized.get(names[0]))
    scale = known.get(names[1])
    zp = known.get(names[2]) if names[2] else None
    if x is None or scale is None or (names[2] and zp is None):
        return None
    value = quantize_linear_value(proto, x, scale, zp, opset)
    return None if value is None else [value]


def _fold_one(proto: onnx.NodeProto, known: Mapping[str, NDArray[Any]],
              dequantized: Mapping[str, NDArray[Any]], opset: int,
              shapes: Callable[[], dict[str, tuple[int, ...]]]) -> list[NDArray[Any]] | None:
    """The outputs of the node when it folds, else None."""
    if _is_onnx(proto, "QuantizeLinear"):
        return _fold_quantize(proto, known, dequantized, max(opset, 13)
                              if is_contrib_qdq(proto) else opset)
    if proto.domain not in ("", "ai.onnx"):
        return None
    if proto.op_type == "Constant":
        try:
            return evaluate(proto, [], opset)
        except Exception:  # the importer names what is wrong with it
            return None
    if proto.op_type in SHAPE_OPS:
        if not proto.input or not proto.input[0]:
            return None
        name = proto.input[0]
        shape = tuple(int(d) for d in known[name].shape) if name in known else \
            shapes().get(name)
        return None if shape is None else [_shape_value(proto, shape)]
    inputs = list(proto.input)
    if not inputs or any(name and name not in known for name in inputs):
        return None
    values = [known[name] if name else None for name in inputs]
    present = [v for v in values if v is not None]
    if not foldable(proto, present):
        return None
    try:
        return evaluate(proto, values, opset)
    except Exception as exc:
        raise ModelError(f"node '{proto.name or proto.op_type}' ({proto.op_type}): its "
                         f"constant inputs do not compute ({str(exc).splitlines()[0]})"
                         ) from None
