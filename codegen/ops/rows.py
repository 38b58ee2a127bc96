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
from dataclasses import replace

import numpy as np

from codegen.core.ir import Graph, Node, Tensor, itemsize
from codegen.core.program import CArray, CInts, CRef, CStruct, KernelCall, RowsRead
from codegen.errors import ModelError

from . import Inferred, LoweringOptions, OpDef, register
from ._common import kernel_suffix

DOMAIN = "onnx2mcu"
SOURCES = ("rows.c",)
FIELDS = ("src_first", "dst_first", "count", "pad")


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
    return "q8_rows_place" if inputs == 2 else "q8_rows_place_first"


def lower_rows(node: Node, graph: Graph, spec: object,
               options: LoweringOptions) -> Sequence[KernelCall]:
    axis = int(node.attrs.get("rows_axis", 2))
    planes, dst_rows, row_bytes = rows_shape(graph, node.outputs[0], axis)
    function = rows_function(node)
    # The rows come from the last input (the window's source, the fresh band).
    source = node.inputs[-1] if function != "q8_rows_fill" else node.outputs[0]
    src_rows = rows_shape(graph, source, axis)[1]
    values = {k: int(node.attrs.get(k, 0)) for k in FIELDS}
    params = CStruct("q8_rows_params", (
        ("planes", planes), ("row_bytes", row_bytes), ("src_rows", src_rows),
        ("dst_rows", dst_rows), ("src_first", values["src_first"]),
        ("dst_first", values["dst_first"]), ("count", values["count"]),
        ("pad", values["pad"])))
    # A window or whole tensor filled band by band keeps its storage.
    in_place = 0 if function == "q8_rows_place" else None
    read = None
    if function == "q8_rows_window":
        read = RowsRead(*rows_shape(graph, source, axis), values["src_first"],
                        values["src_first"] + values["count"])
    return [KernelCall(function, node.name, tuple(node.inputs), tuple(node.outputs),
                       params, sources=SOURCES, in_place=in_place, rows_read=read)]


for _op in ("RowsWindow", "RowsPlace"):
    register(OpDef(_op, DOMAIN, infer_rows, lower_rows))


# A depthwise 3x3 band reading its window's rows straight from the bands of the layer
# before (codegen/transform/bands.py gathers no window buffer for it): QLinearConv's inputs
# with the first band in place of x and the others after B, and the attributes of its
# band plus GATHER_ATTRS: window_rows, and per window row its band (row_source, -1:
# padding) and its row in that band (row_index).
GATHER_ATTRS = ("window_rows", "row_source", "row_index")
GATHER_SOURCES = 3
CONV_INPUTS = 9


def gather_sources(node: Node) -> tuple[str, ...]:
    return (node.inputs[0], *node.inputs[CONV_INPUTS:])


def lower_conv_gather(node: Node, graph: Graph, spec: object,
                      options: LoweringOptions) -> Sequence[KernelCall]:
    from .qlinear_conv import lower_qlinear_conv, padded_scratch_bytes

    sources = gather_sources(node)
    band = graph.tensors[sources[0]]
    n, c, _, w = band.shape
    window = Tensor(f"{node.outputs[0]}@window", band.dtype,
                    (n, c, int(node.attrs["window_rows"]), w), band.quant)
    conv = replace(node, op_type="QLinearConv", domain="",
                   inputs=(window.name, *node.inputs[1:CONV_INPUTS]),
                   attrs={k: v for k, v in node.attrs.items() if k not in GATHER_ATTRS})
    # Without the DSP choice: the two-row kernel's parameters are not the padded one's.
    calls = lower_qlinear_conv(conv, replace(graph, tensors={**graph.tensors,
                                                             window.name: window}),
                               spec, replace(options, dsp=False))
    if len(calls) != 1 or not isinstance(calls[0], KernelCall) or \
            "_3x3_" not in calls[0].function:
        raise ModelError(f"{node.describe()}: a gathered window needs the depthwise 3x3 "
                         f"kernel, not {[getattr(c, 'function', c) for c in calls]}")
    call = calls[0]
    assert call.params is not None
    rows_of = [graph.tensors[s].shape[2] for s in sources]
    params = CStruct("q8_dwconv_gather_params", (
        ("conv", call.params), ("row_source", CRef("row_source")),
        ("row_index", CRef("row_index")),
        ("source_rows", CInts(tuple(rows_of + [0] * (GATHER_SOURCES - len(rows_of)))))))
    arrays = (*call.arrays,
              CArray("row_source", "int8_t", np.asarray(node.attrs["row_source"], np.int8)),
              CArray("row_index", "int16_t", np.asarray(node.attrs["row_index"], np.int16)))
    fields = dict(call.params.fields)
    strides = (int(fields["stride_h"]), int(fields["stride_w"]))  # type: ignore[arg-type]
    mode = "ireq" if options.requant == "int" else "freq"
    padded_sources = (*sources, *[sources[0]] * (GATHER_SOURCES - len(sources)))
    return [replace(call, function=f"q8_dwconv_{kernel_suffix(band.dtype)}_3x3_gather_{mode}",
                    inputs=padded_sources, params=params, arrays=arrays,
                    sources=("dwconv_3x3_gather.c",),
                    scratch_bytes=padded_scratch_bytes(graph.tensors[node.outputs[0]].shape,
                                                       strides),
                    overlap=None)]


register(OpDef("QLinearConvGather", DOMAIN, infer_rows, lower_conv_gather,
               band_of=("QLinearConv", "")))
