"""The band buffers of generate --memory min (codegen/transform/bands.py makes these nodes;
no ONNX model has them): windows of rows of 8-bit NCHW tensors gathered from the bands
that computed them, and bands placed into whole tensors (runtime_c/rows.c). Every byte
is a byte of the tensor or its zero point, so the results are exact.

RowsWindow copies rows of its input (or none: a fill) into a new buffer; RowsPlace
copies a band's rows into its first input's buffer, in place. Attributes: src_first,
dst_first, count (the rows copied), pad (the byte RowsWindow writes into every other row) and
rows_axis (2: NCHW planes; 1: NHWC, whose rows are contiguous, as a block's transposed
input is read). The outputs' shapes and quantization are the ones the pass gave them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from codegen.core.ir import Graph, Node, Tensor, itemsize
from codegen.core.program import CStruct, KernelCall, RowsRead
from codegen.errors import ModelError

from . import BAND_DOMAIN, Inferred, LoweringOptions, OpDef, register

SOURCES = ("rows.c",)
FIELDS = ("src_first", "dst_first", "count", "pad")


@dataclass(frozen=True)
class RowsSpec:
    axis: int  # rows_axis
    src_first: int
    dst_first: int
    count: int
    pad: int


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
    values = {k: int(node.attrs.get(k, 0)) for k in FIELDS}
    return Inferred([Tensor(out.name, out.dtype, out.shape, out.quant)],
                    spec=RowsSpec(int(node.attrs.get("rows_axis", 2)), **values))


def rows_function(node: Node) -> str:
    """The kernel for the node's form: with or without the previous buffer / fresh band."""
    inputs = len(node.inputs)
    if node.op_type == "RowsWindow":
        return "q8_rows_window" if inputs else "q8_rows_fill"
    return "q8_rows_place" if inputs == 2 else "q8_rows_place_first"


def lower_rows(node: Node, graph: Graph, spec: RowsSpec,
               options: LoweringOptions) -> Sequence[KernelCall]:
    axis = spec.axis
    planes, dst_rows, row_bytes = rows_shape(graph, node.outputs[0], axis)
    function = rows_function(node)
    # The rows come from the last input (the window's source, the fresh band).
    source = node.inputs[-1] if function != "q8_rows_fill" else node.outputs[0]
    src_rows = rows_shape(graph, source, axis)[1]
    params = CStruct("q8_rows_params", (
        ("planes", planes), ("row_bytes", row_bytes), ("src_rows", src_rows),
        ("dst_rows", dst_rows), ("src_first", spec.src_first),
        ("dst_first", spec.dst_first), ("count", spec.count),
        ("pad", spec.pad)))
    # A window or whole tensor filled band by band keeps its storage.
    in_place = 0 if function == "q8_rows_place" else None
    read = None
    if function == "q8_rows_window":
        read = RowsRead(*rows_shape(graph, source, axis), spec.src_first,
                        spec.src_first + spec.count)
    return [KernelCall(function, node.name, tuple(node.inputs), tuple(node.outputs),
                       params, sources=SOURCES, in_place=in_place, rows_read=read)]


for _op in ("RowsWindow", "RowsPlace"):
    register(OpDef(_op, BAND_DOMAIN, infer_rows, lower_rows))
