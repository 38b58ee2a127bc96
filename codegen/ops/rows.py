"""The band buffers of generate --memory min (codegen/passes/bands.py makes these nodes;
no ONNX model has them): windows of rows of 8-bit NCHW tensors, slid down a tensor a band
at a time, and bands placed into whole tensors (runtime_c/rows.c). Every byte is a byte of
the tensor or its zero point, so the results are exact.

Attributes: src_first, dst_first, count (the rows copied), shift (RowsShift: rows the
buffer drops), pad (the byte written into every other row the kernel owns) and
rows_axis (2: NCHW planes; 1: NHWC, whose rows are contiguous, as a block's transposed
input is read). The outputs' shapes and quantization are the ones the pass gave them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..errors import ModelError
from ..ir import Graph, Node, Tensor, itemsize
from ..program import Alias, CInts, CStruct, CValue, KernelCall, RowsRead
from . import Inferred, LoweringOptions, OpDef, register

DOMAIN = "onnx2mcu"
SOURCES = ("rows.c",)
FIELDS = ("src_first", "dst_first", "count", "shift", "pad")


def rows_shape(graph: Graph, name: str, axis: int = 2) -> tuple[int, int, int]:
    """(planes, rows per plane, bytes per row) of a 4-D tensor with n = 1: NCHW (rows
    on axis 2), or NHWC (axis 1: one plane of rows of W x C values)."""
    t = graph.tensors[name]
    n, a, b, c = t.shape
    if axis == 1:
        return n, a, b * c * itemsize(t.dtype)
    return n * a, b, c * itemsize(t.dtype)


def infer_rows(node: Node, graph: Graph) -> Inferred:
    out = graph.tensors.get(node.outputs[0])
    if out is None or len(out.shape) != 4:
        raise ModelError(f"{node.describe()}: a band buffer needs the 4-D shape the "
                         "banding pass gives it")
    return Inferred([Tensor(out.name, out.dtype, out.shape, out.quant)])


def rows_function(node: Node) -> str:
    """The kernel for the node's form: with or without the previous buffer / fresh band."""
    inputs = len(node.inputs)
    if node.op_type == "RowsWindow":
        return "q8_rows_window" if inputs else "q8_rows_fill"
    if node.op_type == "RowsShift":
        return "q8_rows_shift" if inputs == 2 else "q8_rows_shift_pad"
    return "q8_rows_place" if inputs == 2 else "q8_rows_place_first"


def lower_rows(node: Node, graph: Graph, spec: object,
               options: LoweringOptions) -> Sequence[KernelCall]:
    axis = int(node.attrs.get("rows_axis", 2))
    planes, dst_rows, row_bytes = rows_shape(graph, node.outputs[0], axis)
    function = rows_function(node)
    # The rows come from the last input (the window's source, the fresh band).
    source = node.inputs[-1] if function not in ("q8_rows_fill", "q8_rows_shift_pad") \
        else node.outputs[0]
    src_rows = rows_shape(graph, source, axis)[1]
    values = {k: int(node.attrs.get(k, 0)) for k in FIELDS}
    params = CStruct("q8_rows_params", (
        ("planes", planes), ("row_bytes", row_bytes), ("src_rows", src_rows),
        ("dst_rows", dst_rows), ("src_first", values["src_first"]),
        ("dst_first", values["dst_first"]), ("count", values["count"]),
        ("shift", values["shift"]), ("pad", values["pad"])))
    # A buffer carried from one band to the next keeps its storage.
    carried = node.op_type == "RowsShift" or function == "q8_rows_place"
    in_place = 0 if carried else None
    read = None
    if function == "q8_rows_window":
        read = RowsRead(*rows_shape(graph, source, axis), values["src_first"],
                        values["src_first"] + values["count"])
    return [KernelCall(function, node.name, tuple(node.inputs), tuple(node.outputs),
                       params, sources=SOURCES, in_place=in_place, rows_read=read)]


for _op in ("RowsWindow", "RowsShift", "RowsPlace"):
    register(OpDef(_op, DOMAIN, infer_rows, lower_rows))


# A band of QLinearAdd whose operand `view_slot` is the first rows of each plane of a
# taller history buffer (`view_rows` rows per plane), read in place through the kernel's
# strides rather than copied into a window first: the residual of a block, held until
# the convolutions after it have computed the same rows.
def lower_add_rows(node: Node, graph: Graph, spec: object,
                   options: LoweringOptions) -> Sequence[KernelCall | Alias]:
    from .elementwise import lower_qadd

    slot, held = int(node.attrs["view_slot"]), int(node.attrs["view_rows"])
    buffer = graph.tensors[node.inputs[slot]]
    y = graph.tensors[node.outputs[0]]
    view = replace(buffer, shape=y.shape)
    tensors = {**graph.tensors, buffer.name: view}
    add = replace(node, op_type="QLinearAdd", domain="com.microsoft", attrs={})
    calls = lower_qadd(add, replace(graph, tensors=tensors), spec, options)
    c, w = y.shape[1], y.shape[3]
    field = "a_stride" if slot == 0 else "b_stride"
    other = 1 if slot == 0 else 0
    return [replace(call, params=with_plane_stride(call.params, field, held * w if c > 1 else 0),
                    in_place=other) if isinstance(call, KernelCall) else call
            for call in calls]


def with_plane_stride(params: CStruct | None, field: str, stride: int) -> CStruct | None:
    """q8_qadd_params with one operand's channel stride (axis 1 of NCHW) set."""
    assert params is not None

    def patched(name: str, value: CValue) -> CValue:
        if name != "shape" or not isinstance(value, CStruct):
            return value
        return replace(value, fields=tuple(
            (k, CInts((v.values[0], stride, *v.values[2:]))
             if k == field and isinstance(v, CInts) else v) for k, v in value.fields))

    return replace(params, fields=tuple((k, patched(k, v)) for k, v in params.fields))


register(OpDef("QLinearAddRows", DOMAIN, infer_rows, lower_add_rows))
