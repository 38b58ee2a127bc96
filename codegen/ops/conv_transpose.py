"""ConvTranspose (1-D and 2-D; strides, dilations, pads or auto_pad or output_shape,
output_padding, groups) on float32: ORT has no integer ConvTranspose (its QDQ rules
leave DQ -> ConvTranspose -> Q in float, and its quantizer leaves QOperator
ConvTranspose float), so it is a float island computed in ORT's order
(runtime_c/conv_transpose_f32.c): MLAS's transposed product, col2im, then the bias. The
weights and bias are float initializers or DequantizeLinear of constants, computed at
generation time as ORT computes them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from codegen.core.ir import Graph, Node, Tensor
from codegen.core.program import CArray, CRef, CStruct, KernelCall, Lowered
from codegen.errors import ModelError, UnsupportedError

from . import Inferred, LoweringOptions, OpDef, register
from ._common import attr_int, attr_ints, attr_str, reject_unknown_attrs
from ._float import FLOAT_TYPES, dequantized_weights, float_input
from ._geometry import Window, dims_struct, window_struct
from .kernels import kernel

F32 = np.float32
SOURCES = ("conv_transpose_f32.c",)


@dataclass(frozen=True)
class ConvTransposeSpec:
    window: Window
    groups: int
    output_shape: tuple[int, ...]
    bias: bool  # B is given


def constant_float(node: Node, graph: Graph, index: int, what: str) -> NDArray[Any]:
    """A float initializer (ORT's ConvTranspose takes it as it is, unlike Conv), or the
    values a DequantizeLinear of constants computes."""
    name = node.inputs[index]
    if name in graph.constants:
        value = graph.constants[name]
        if value.dtype != np.float32:
            raise ModelError(f"{node.describe()}: {what} '{name}' is {value.dtype}; expected "
                             "float32")
        return value
    return dequantized_weights(node, graph, index, what)


def transposed_geometry(node: Node, sizes: Sequence[int], kernel: Sequence[int],
                        strides: Sequence[int], dilations: Sequence[int],
                        extra: Sequence[int], pads: Sequence[int]
                        ) -> tuple[list[int], tuple[int, ...]]:
    """The pads and the output size per spatial axis, as ORT derives them
    (ComputeTransposePadAndOutputShape): from output_shape when it is given (the total
    padding that reaches it), from auto_pad SAME_UPPER/SAME_LOWER (the padding that
    makes the output in * stride), else the pads as given. An odd total puts the extra
    element at the tail for SAME_UPPER and at the head otherwise, as the ONNX standard
    says (measured on ORT 1.32)."""
    spatial = len(sizes)
    auto_pad = attr_str(node, "auto_pad", "NOTSET")
    if auto_pad not in ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"):
        raise ModelError(f"{node.describe()}: auto_pad {auto_pad!r} is not an ONNX value")
    wanted = attr_ints(node, "output_shape", None)
    if wanted is not None:
        wanted = list(wanted)[-spatial:]
        if len(wanted) != spatial:
            raise ModelError(f"{node.describe()}: output_shape {wanted} does not fit "
                             f"{spatial} spatial axes")
    full = [s * (n - 1) + e + (k - 1) * d + 1 for n, k, s, d, e in
            zip(sizes, kernel, strides, dilations, extra, strict=True)]
    if wanted is None and auto_pad in ("NOTSET", "VALID"):
        head = list(pads[:spatial]) if auto_pad == "NOTSET" else [0] * spatial
        tail = list(pads[spatial:]) if auto_pad == "NOTSET" else [0] * spatial
        return head + tail, tuple(f - h - t for f, h, t in zip(full, head, tail, strict=True))
    targets = wanted if wanted is not None else [n * s for n, s in zip(sizes, strides,
                                                                       strict=True)]
    head, tail = [], []
    for f, target in zip(full, targets, strict=True):
        if target > f:
            raise UnsupportedError(f"{node.describe()}: output_shape {targets} is larger "
                                   f"than the transposed convolution's {full} (ORT pads "
                                   "the difference itself; not reproduced)")
        total = f - target
        more = total - total // 2
        head.append(total // 2 if auto_pad == "SAME_UPPER" else more)
        tail.append(total - head[-1])
    return head + tail, tuple(f - h - t for f, h, t in zip(full, head, tail, strict=True))


def infer_conv_transpose(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, {"auto_pad", "dilations", "group", "kernel_shape",
                                "output_padding", "output_shape", "pads", "strides"})
    x, w = float_input(node, graph, 0, "X"), float_input(node, graph, 1, "W")
    spatial = len(x.shape) - 2
    if spatial not in (1, 2) or len(w.shape) != len(x.shape):
        raise UnsupportedError(f"{node.describe()}: only 1-D and 2-D ConvTranspose is "
                               "supported")
    if x.shape[0] != 1:
        raise UnsupportedError(f"{node.describe()}: a batch of {x.shape[0]}; 1 is supported")
    groups = attr_int(node, "group", 1)
    if groups < 1 or x.shape[1] % groups or w.shape[0] != x.shape[1]:
        raise ModelError(f"{node.describe()}: W {list(w.shape)} for input channels "
                         f"{x.shape[1]} in {groups} groups")
    kernel = tuple(attr_ints(node, "kernel_shape", None) or w.shape[2:])
    if kernel != tuple(w.shape[2:]):
        raise ModelError(f"{node.describe()}: kernel_shape {list(kernel)} is not W's")
    strides = tuple(attr_ints(node, "strides", None) or [1] * spatial)
    dilations = tuple(attr_ints(node, "dilations", None) or [1] * spatial)
    pads = attr_ints(node, "pads", None) or [0] * (2 * spatial)
    extra = attr_ints(node, "output_padding", None) or [0] * spatial
    if len(strides) != spatial or len(dilations) != spatial or len(pads) != 2 * spatial or \
            len(extra) != spatial or min(*strides, *dilations) < 1 or min(pads) < 0:
        raise ModelError(f"{node.describe()}: strides, dilations, pads or output_padding do "
                         "not fit the kernel")
    if any(e >= s for e, s in zip(extra, strides, strict=True)):
        raise ModelError(f"{node.describe()}: output_padding {extra} must be below the strides "
                         f"{list(strides)} (ONNX Runtime refuses it too)")
    pads, out = transposed_geometry(node, x.shape[2:], kernel, strides, dilations, extra,
                                    pads)
    if min(out) < 1:
        raise ModelError(f"{node.describe()}: the output is empty")
    if node.input(2) is not None:
        bias = float_input(node, graph, 2, "B")
        if bias.shape != (w.shape[1] * groups,):
            raise ModelError(f"{node.describe()}: B has shape {list(bias.shape)}")
    window = Window(kernel, strides, dilations, tuple(pads[:spatial]), tuple(pads[spatial:]),
                    out)
    shape = (1, w.shape[1] * groups, *out)
    return Inferred([Tensor(node.outputs[0], "float32", shape)],
                    spec=ConvTransposeSpec(window, groups, shape, node.input(2) is not None))


def lower_conv_transpose(node: Node, graph: Graph, spec: ConvTransposeSpec,
                         options: LoweringOptions) -> Sequence[Lowered]:
    x, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    w = constant_float(node, graph, 1, "weight").astype(F32)
    arrays = [CArray("weights", "float", w.reshape(-1))]
    if spec.bias:
        arrays.append(CArray("bias", "float", constant_float(node, graph, 2, "bias")
                             .astype(F32).reshape(-1)))
    params = CStruct("q8_conv_transpose_f32_params", (
        ("input", dims_struct(x.shape)), ("output", dims_struct(y.shape)),
        ("window", window_struct(spec.window)), ("groups", spec.groups),
        ("weights", CRef("weights")),
        ("bias", CRef("bias") if spec.bias else None)))
    pixels = int(np.prod(x.shape[2:], dtype=np.int64))
    macs = int(np.prod(w.shape, dtype=np.int64)) * pixels
    return [KernelCall("q8_conv_transpose_f32", node.name, (x.name,), (y.name,), params,
                       tuple(arrays), SOURCES, macs,
                       scratch_bytes=kernel("conv_transpose_f32").scratch_bytes(params))]


register(OpDef("ConvTranspose", "", infer_conv_transpose, lower_conv_transpose,
               versions=(1, 11, 22), data_dtypes=FLOAT_TYPES, float_island=True,
               # [C_in, C_out / group, k...] (measured: ORT 1.32 quantizes the bias)
               weight_bias_axis=lambda node: 1))
