"""MaxPool on 8-bit, 16-bit and float32 tensors: 1-D and 2-D, pads, strides, dilations,
ceil_mode, auto_pad. Exact: a maximum of the values. ORT has no 16-bit MaxPool: `convert`
writes one on float32 (16-bit integers convert exactly both ways)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from codegen.core.ir import Graph, Node, Tensor
from codegen.core.program import Alias, CStruct, KernelCall
from codegen.errors import UnsupportedError

from . import Inferred, LoweringOptions, OpDef, register
from ._common import (
    attr_int,
    check_dtype,
    input_tensor,
    kernel_suffix,
    plane_overlap,
    reject_unknown_attrs,
)
from ._export import export_through_type
from ._geometry import Window, ceil_mode, dims_struct, pool_kernel, sliding_window, window_struct
from .kernels import kernel

TYPES = ("uint8", "int8", "uint16", "int16", "float32")
ATTRS = {"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order",
         "strides"}


@dataclass(frozen=True)
class MaxPoolSpec:
    window: Window


def maxpool_window(node: Node, x: Tensor) -> Window:
    return sliding_window(node, x.shape, pool_kernel(node, x.shape), ceil_mode(node))


def infer_maxpool(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, ATTRS)
    x = input_tensor(node, graph, 0, "X")
    check_dtype(node, "input X", x, TYPES)
    if len([o for o in node.outputs if o]) > 1:
        raise UnsupportedError(f"{node.describe()}: the Indices output is not supported")
    if attr_int(node, "storage_order", 0) != 0:
        raise UnsupportedError(f"{node.describe()}: storage_order=1 is not supported")
    window = maxpool_window(node, x)
    y = Tensor(node.outputs[0], x.dtype, (*x.shape[:2], *window.output), x.quant)
    return Inferred([y], spec=MaxPoolSpec(window))


def lower_maxpool(node: Node, graph: Graph, spec: MaxPoolSpec,
        options: LoweringOptions) -> Sequence[
        KernelCall | Alias]:
    x = graph.tensors[node.inputs[0]]
    y = graph.tensors[node.outputs[0]]
    params = CStruct("q8_pool_params", (
        ("input", dims_struct(x.shape)), ("output", dims_struct(y.shape)),
        ("window", window_struct(spec.window))))
    # One plane at a time: an output plane may overwrite the input planes before it.
    function = kernel("maxpool").symbol(x=kernel_suffix(x.dtype))
    return [KernelCall(function, node.name, (x.name,), (y.name,), params, (),
                       ("maxpool.c",), overlap=plane_overlap(x, y, whole_plane_first=False))]


# MaxPool-22 only adds types and clarifies that windows starting in the right padding
# are dropped, which ORT did before; 8-bit types arrive in MaxPool-12.
register(OpDef("MaxPool", "", infer_maxpool, lower_maxpool, versions=(8, 10, 11, 12, 22),
               data_dtypes=frozenset(TYPES), moves_values=True,
               # Quantization is monotone, so MaxPool commutes with it.
               ort_propagates=True, integer_only_propagates=True,
               export=export_through_type(0, via="float32")))
