"""IR -> ONNX: the graph after the recipes, as a standard QOperator model (QLinearConv,
QLinearMatMul and ONNX Runtime's com.microsoft QLinear* operators) that ORT runs with the
same results as the generated C. This is `onnx2mcu convert`, and the reference `verify
--integer-only` compares against.

ORT implements its integer products (QLinearConv, QLinearMatMul, QGemm) with the output
in the activation's type, and with int8 weights, or uint8 ones for uint8 activations.
The generated C also computes the others: a product whose output type differs from its
input's (--integer-only fuses those) and int8 activations times uint8 weights (ARM rules
fuse those). The exported model writes them in the types ORT implements, with the same
integer arithmetic:

- q and q + 128 with the zero point + 128 are the same real value, and the requantized
  output clamps relative to its zero point (MLAS clamps round(acc * scale) at
  [qmin - zp, qmax - zp] before adding zp), so a product whose output is int8 but
  computed as uint8 with zero point + 128 gives exactly the int8 result + 128, and the
  other way round;
- the type then changes back with DequantizeLinear -> QuantizeLinear of scale 1 and
  zero points z' and z: q' - z' is an integer of magnitude at most 255, so both steps are
  exact in float32 and nothing saturates;
- uint8 weights of an int8 product become int8 constants w - 128 with zero point - 128:
  w - zp does not change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from numpy.typing import NDArray
from onnx import helper, numpy_helper

from codegen import ops
from codegen.core.ir import DTYPES, Graph, Node
from codegen.ops import ExportFn

# ONNX Runtime 1.32 reads models up to IR version 11.
IR_VERSION = 10
MS = "com.microsoft"
QDQ_RULES_PROPERTY = "onnx2mcu.qdq_rules"


@dataclass(frozen=True)
class ProductSlots:
    """Where an integer product reads its activation A, its weights B (value and zero
    point) and its output zero point."""

    a: int
    b: int
    b_zero_point: int
    y_zero_point: int


def _attribute(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return numpy_helper.from_array(value)
    return value


def _shifted(zero_point: NDArray[Any], to: str) -> NDArray[Any]:
    """The zero point (or values) moved by 128 into the other 8-bit type."""
    wide = zero_point.astype(np.int16)
    return (wide - 128 if to == "int8" else wide + 128).astype(DTYPES[to][0])


@dataclass
class Writer:
    """The ONNX nodes and extra initializers of one export, with fresh names."""

    graph: Graph
    nodes: list[onnx.NodeProto] = field(default_factory=list)
    constants: dict[str, NDArray[Any]] = field(default_factory=dict)
    taken: set[str] = field(default_factory=set)
    unit_scale: str | None = None

    def __post_init__(self) -> None:
        g = self.graph
        self.taken |= set(g.tensors) | set(g.constants) | set(g.inputs) | set(g.outputs)
        self.taken |= {name for n in g.nodes for name in (*n.inputs, *n.outputs, n.name)}

    def fresh(self, base: str) -> str:
        name, k = base, 0
        while name in self.taken:
            k += 1
            name = f"{base}_{k}"
        self.taken.add(name)
        return name

    def constant(self, base: str, value: NDArray[Any]) -> str:
        name = self.fresh(base)
        self.constants[name] = value
        return name

    def dtype(self, name: str) -> str:
        if name in self.graph.constants:
            return str(self.graph.constants[name].dtype)
        return self.graph.tensors[name].dtype

    def zero_point(self, name: str, dtype: str) -> NDArray[Any]:
        """A zero point's values ("" for an omitted one: 0 of `dtype`)."""
        if not name:
            return np.zeros((), DTYPES[dtype][0])
        return self.constants[name] if name in self.constants else self.graph.constants[name]

    def one(self) -> str:
        """The float32 scale 1 of the exact type changes, one initializer for all."""
        if self.unit_scale is None:
            self.unit_scale = self.constant("onnx2mcu_retype_scale", np.array(1.0, np.float32))
        return self.unit_scale

    def add(self, op: str, inputs: list[str], outputs: list[str], name: str) -> None:
        self.nodes.append(helper.make_node(op, inputs, outputs, name=self.fresh(name)))

    def retype(self, value: str, zp: str, out: str, out_zp: str, base: str) -> None:
        """out = value in the other 8-bit type (q +- 128, the zero point moved with it):
        DequantizeLinear -> QuantizeLinear of scale 1, exact."""
        real = self.fresh(f"{base}_retyped")
        self.add("DequantizeLinear", [value, self.one(), zp], [real],
                 f"{base}_retype_dequantize")
        self.add("QuantizeLinear", [real, self.one(), out_zp], [out],
                 f"{base}_retype_quantize")


def _padded(inputs: list[str], index: int) -> list[str]:
    return inputs + [""] * (index + 1 - len(inputs))


def _export_product(node: Node, slots: ProductSlots, w: Writer) -> None:
    """The product in the types ORT implements, with exact type changes around it."""
    inputs, outputs = list(node.inputs), list(node.outputs)
    common = w.dtype(inputs[slots.a])
    if common == "int8" and w.dtype(inputs[slots.b]) == "uint8" and \
            inputs[slots.b] in w.graph.constants:
        # QLinearConv's weights are constants; the fusions make no other int8 x uint8
        # product (a QOperator model's own computed uint8 B is left as ORT reads it).
        inputs = _padded(inputs, slots.b_zero_point)
        weights, zp = inputs[slots.b], inputs[slots.b_zero_point]
        inputs[slots.b] = w.constant(f"{weights}_int8",
                                     _shifted(w.graph.constants[weights], "int8"))
        inputs[slots.b_zero_point] = w.constant(f"{zp or weights + '_zero_point'}_int8",
                                                _shifted(w.zero_point(zp, "uint8"), "int8"))
    y_dtype = w.graph.tensors[outputs[0]].dtype
    retyped = None
    if y_dtype in ("uint8", "int8") and y_dtype != common:
        inputs = _padded(inputs, slots.y_zero_point)
        y_zp = inputs[slots.y_zero_point] or w.constant(
            f"{node.name}_y_zero_point", np.zeros((), DTYPES[y_dtype][0]))
        inputs[slots.y_zero_point] = w.constant(f"{node.name}_y_zero_point_{common}",
                                                _shifted(w.zero_point(y_zp, y_dtype), common))
        retyped = (outputs[0], y_zp)
        outputs[0] = w.fresh(f"{outputs[0]}_{common}")
    attrs = {k: _attribute(v) for k, v in sorted(node.attrs.items())}
    w.nodes.append(helper.make_node(node.op_type, inputs, outputs, name=node.name,
                                    domain=node.domain or None, **attrs))
    if retyped is not None:
        out, y_zp = retyped
        w.retype(outputs[0], inputs[slots.y_zero_point], out, y_zp, f"{node.name}_out")


def export_product(slots: ProductSlots) -> ExportFn:
    """The export of an integer product whose slots are `slots`."""
    def export(node: Node, w: Writer) -> None:
        _export_product(node, slots, w)
    return export


def export_as_is(node: Node, w: Writer) -> None:
    attrs = {k: _attribute(v) for k, v in sorted(node.attrs.items())}
    w.nodes.append(helper.make_node(node.op_type, list(node.inputs), list(node.outputs),
                                    name=node.name, domain=node.domain or None, **attrs))


def export_node(node: Node, w: Writer) -> None:
    """The node as ONNX that ORT runs: as its family's OpDef writes it."""
    opdef = ops.lookup(node)
    (opdef.export if opdef is not None and opdef.export is not None else export_as_is)(node, w)


def _value_info(graph: Graph, name: str) -> onnx.ValueInfoProto:
    tensor = graph.tensors[name]
    return helper.make_tensor_value_info(name, DTYPES[tensor.dtype][2], list(tensor.shape))


def export_graph(graph: Graph, doc: str = "") -> onnx.ModelProto:
    writer = Writer(graph)
    for node in graph.nodes:
        export_node(node, writer)
    used = {name for node in writer.nodes for name in node.input if name}
    used |= set(graph.outputs)
    initializers = [numpy_helper.from_array(np.asarray(graph.constants[name]), name)
                    for name in sorted(used & set(graph.constants))]
    initializers += [numpy_helper.from_array(np.asarray(value), name)
                     for name, value in sorted(writer.constants.items()) if name in used]
    proto = helper.make_graph(
        writer.nodes, graph.name,
        [_value_info(graph, name) for name in graph.inputs],
        [_value_info(graph, name) for name in graph.outputs], initializers, doc_string=doc)
    domains = {n.domain for n in graph.nodes} - {"ai.onnx2mcu"}
    opsets = [helper.make_opsetid(domain, version) for domain, version in
              sorted(graph.opsets.items()) if domain == "" or domain in domains]
    model = helper.make_model(proto, opset_imports=opsets, producer_name="onnx2mcu")
    model.ir_version = IR_VERSION
    return model


def converted_model(graph: Graph, qdq_rules: str) -> onnx.ModelProto:
    """What `convert` writes: the graph after the recipes as a QOperator model, marked
    with the platform whose int8 QDQ rules it follows (ORT must run it with the same)."""
    model = export_graph(graph)
    helper.set_model_props(model, {QDQ_RULES_PROPERTY: qdq_rules})
    return model
