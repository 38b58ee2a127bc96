"""How an operator writes itself as ONNX (`OpDef.export`, for `convert`): the writer of
one export's nodes and initializers, and the export of integer products in the types ORT
implements. The model's doc in codegen/views/exporter.py says why the type changes are
exact."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from numpy.typing import NDArray
from onnx import helper, numpy_helper

from codegen.core.ir import DTYPES, Graph, Node

# The model property `convert` sets to the names of the units it wrote as int64
# operators; the importer refuses such a model with the way back.
INT64_UNITS_PROPERTY = "onnx2mcu.int64_units"


@dataclass(frozen=True)
class ProductSlots:
    """Where an integer product reads its activation A, its weights B (value and zero
    point) and its output zero point."""

    a: int
    b: int
    b_zero_point: int
    y_zero_point: int | None = None  # None: an int32 or float output
    bias: int | None = None  # its int32 bias, if it takes one


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
    # The 16-bit units written as int64 operators (ops/product16.py): the model is then
    # a reference for ORT that onnx2mcu does not import again (INT64_UNITS_PROPERTY).
    int64_units: list[str] = field(default_factory=list)

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
        assert slots.y_zero_point is not None
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
        assert slots.y_zero_point is not None
        out, y_zp = retyped
        w.retype(outputs[0], inputs[slots.y_zero_point], out, y_zp, f"{node.name}_out")


def export_product(slots: ProductSlots) -> Callable[[Node, Writer], None]:
    """The export of an integer product whose slots are `slots`."""
    def export(node: Node, w: Writer) -> None:
        _export_product(node, slots, w)
    return export


def export_as_is(node: Node, w: Writer) -> None:
    attrs = {k: _attribute(v) for k, v in sorted(node.attrs.items())}
    w.nodes.append(helper.make_node(node.op_type, list(node.inputs), list(node.outputs),
                                    name=node.name, domain=node.domain or None, **attrs))


# ONNX types (TensorProto) of the casts below.
INT32 = 6
FLOAT32 = 1
WIDE_TYPES = {"int16": 5, "uint16": 4}
# ai.onnx QuantizeLinear and DequantizeLinear take 16-bit integers from opset 21; ORT's
# com.microsoft ones (what AMD Quark writes) at any opset.
WIDE_QDQ_OPSET = 21
MS_DOMAIN = "com.microsoft"


def export_wide_qdq(node: Node, w: Writer) -> None:
    """A 16-bit QuantizeLinear/DequantizeLinear below opset 21 as ORT's com.microsoft
    operator of the same arithmetic (an importer reads both as one)."""
    integer = node.outputs[0] if node.op_type == "QuantizeLinear" else node.inputs[0]
    if w.graph.opsets.get("", 0) >= WIDE_QDQ_OPSET or w.dtype(integer) not in WIDE_TYPES:
        export_as_is(node, w)
        return
    attrs = {k: _attribute(v) for k, v in sorted(node.attrs.items())}
    w.nodes.append(helper.make_node(node.op_type, list(node.inputs), list(node.outputs),
                                    name=node.name, domain=MS_DOMAIN, **attrs))


def export_through_int32(data: int, values: tuple[int, ...] = ()) -> Callable[[Node, Writer],
                                                                               None]:
    """An operator that only moves or compares values (Pad, Resize, Clip), written on
    int32 where its data is a 16-bit type ORT does not implement it for: its data input
    and the constant inputs `values` cast to int32, its output cast back (exact both
    ways)."""
    return export_through_type(data, values, "int32")


def export_through_type(data: int, values: tuple[int, ...] = (),
                        via: str = "int32") -> Callable[[Node, Writer], None]:
    """The same through `via` ("int32", or "float32" for operators ORT implements on
    floats and 8-bit types only, as MaxPool: 16-bit integers are exact in float32)."""
    to = {"int32": INT32, "float32": FLOAT32}[via]
    cast = {"int32": np.int32, "float32": np.float32}[via]

    def export(node: Node, w: Writer) -> None:
        dtype = w.dtype(node.inputs[data])
        if dtype not in WIDE_TYPES:
            export_as_is(node, w)
            return
        inputs = list(node.inputs)
        wide = w.fresh(f"{inputs[data]}_{via}")
        w.nodes.append(helper.make_node("Cast", [inputs[data]], [wide], to=to,
                                        name=w.fresh(f"{node.name}_to_{via}")))
        inputs[data] = wide
        for slot in values:
            if slot < len(inputs) and inputs[slot]:
                inputs[slot] = w.constant(f"{inputs[slot]}_{via}",
                                          w.zero_point(inputs[slot], dtype).astype(cast))
        out = w.fresh(f"{node.outputs[0]}_{via}")
        attrs = {k: _attribute(v) for k, v in sorted(node.attrs.items())}
        w.nodes.append(helper.make_node(node.op_type, inputs, [out], name=node.name,
                                        domain=node.domain or None, **attrs))
        w.nodes.append(helper.make_node("Cast", [out], list(node.outputs),
                                        to=WIDE_TYPES[dtype],
                                        name=w.fresh(f"{node.name}_from_{via}")))
    return export
