"""The float Conv ORT computes, as a float island (DequantizeLinear -> Conv ->
QuantizeLinear units ORT leaves in float, and float-initializer weights): its SGEMM,
NCHW and NCHWc kernels as measured (ops/_nchwc.py), Conv + Add fused as ORT's NCHWc
transformer fuses it (ConvAdd, onnx2mcu's own operator), and ORT's QDQ rule that makes
a quantized unit a QLinearConv."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from onnx import helper

from codegen.core.ir import Graph, Node, Tensor
from codegen.core.pattern import Quantized, dtype_of, per_tensor, qparams, scale_axis
from codegen.core.program import Alias, CArray, CRef, CStruct, KernelCall
from codegen.errors import ModelError, UnsupportedError

from .. import GENERIC_UNFUSED, OWN_DOMAIN, Fusion, Inferred, LoweringOptions, OpDef, register
from .._common import check_dtype
from .._export import Writer
from .._float import FLOAT_TYPES, dequantized_weights, float_bias, float_input, refuse
from .._geometry import Window, conv_groups, conv_window, dims_struct, window_struct
from .._nchwc import check_nchwc_readers, nchwc_algorithm
from .._qdq import bias_input
from ..product16 import CONV16_FUSION

F32 = np.float32

def build_conv(graph: Graph, node: Node, dqs: list[Quantized | None], y: Quantized,
               integer_only: bool) -> list[str] | None:
    x, w = dqs[0], dqs[1]
    if x is None or w is None or not per_tensor(x, graph) or scale_axis(w, graph) not in (
            None, 0):
        return None
    if not integer_only and dtype_of(graph, y) != dtype_of(graph, x):
        return None  # ORT's QLinearConv produces the input's type
    inputs = [x.q, *qparams(x, graph), w.q, *qparams(w, graph), *qparams(y, graph)]
    if node.input(2) is not None:
        bias = bias_input(graph, node, dqs[2], x, w, integer_only, check_scale=True)
        if bias is None:
            return None
        inputs.append(bias)
    return inputs


@dataclass(frozen=True)
class FloatConvSpec:
    window: Window
    groups: int


def infer_float_conv(node: Node, graph: Graph) -> Inferred:
    x, w = float_input(node, graph, 0, "X"), float_input(node, graph, 1, "W")
    if len(x.shape) not in (3, 4) or len(w.shape) != len(x.shape):
        raise UnsupportedError(f"{node.describe()}: only 1-D and 2-D convolutions are "
                               "supported")
    window = conv_window(node, x.shape, w.shape)
    groups = conv_groups(node, x.shape, w.shape)
    return Inferred([Tensor(node.outputs[0], "float32", (x.shape[0], w.shape[0],
                                                          *window.output))],
                    spec=FloatConvSpec(window, groups))


ALGORITHMS = {"sgemm": 0, "nchw": 1, "pointwise": 2, "nchwc": 3}


def float_conv_algorithm(node: Node, graph: Graph, x_shape: tuple[int, ...],
                         w_shape: tuple[int, ...]) -> str:
    """The kernel for this Conv (nchwc_algorithm), refusing what is not reproduced."""
    algorithm = nchwc_algorithm(node, graph, x_shape, w_shape)
    if algorithm is None:
        raise refuse(node, "a grouped convolution of float-initializer weights, which "
                     "ONNX Runtime computes with kernels not reproduced yet; quantize the "
                     "weights (DequantizeLinear of integers)")
    if algorithm != "sgemm" and node.op_type == "Conv":
        check_nchwc_readers(node, graph)
    return algorithm


def float_conv_weights(node: Node, graph: Graph) -> NDArray[Any]:
    """Float-initializer weights, or the values of dequantized constants."""
    value = graph.constants.get(node.inputs[1])
    if value is not None:
        check_dtype(node, "weight", value, ("float32",))
        return value
    return dequantized_weights(node, graph, 1, "weight")


def lower_float_conv(node: Node, graph: Graph, spec: FloatConvSpec,
        options: LoweringOptions) -> Sequence[
        KernelCall | Alias]:
    x, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    addend = node.input(3) if node.op_type == "ConvAdd" else None
    w = float_conv_weights(node, graph)
    algorithm = float_conv_algorithm(node, graph, x.shape, w.shape)
    window = spec.window
    if min(window.pads_begin) < 0:
        raise refuse(node, "negative padding (SAME with a kernel smaller than the stride)")
    bias = float_bias(node, graph, 2, "bias") if node.input(2) else None
    pads_end = (0, *window.pads_end) if len(window.pads_end) == 1 else window.pads_end
    arrays = [CArray("weights", "float", w.astype(F32).reshape(-1))]
    if bias is not None:
        arrays.append(CArray("bias", "float", bias.astype(F32).reshape(-1)))
    params = CStruct("q8_conv_f32_params", (
        ("input", dims_struct(x.shape)), ("output", dims_struct(y.shape)),
        ("window", window_struct(window)), ("pad_bottom", pads_end[0]),
        ("pad_right", pads_end[1]), ("groups", spec.groups),
        ("algorithm", ALGORITHMS[algorithm]),
        ("weights", CRef("weights")), ("bias", CRef("bias") if bias is not None else None)))
    macs = y.numel * int(np.prod(w.shape[1:]))
    if addend is not None:
        return [KernelCall("q8_conv_add_f32", node.name, (x.name, addend), (y.name,), params,
                           tuple(arrays), ("conv_f32.c",), macs)]
    return [KernelCall("q8_conv_f32", node.name, (x.name,), (y.name,), params, tuple(arrays),
                       ("conv_f32.c",), macs)]


# ------------------------------------------------------------------ ConvAdd

# onnx2mcu's own operator (domain ai.onnx2mcu): Conv(X, W, B) + Sum as ORT's NCHWc
# convolution computes it when it fuses the Add that alone reads a convolution of
# float-initializer weights (its fourth, Sum input): the output starts as Sum, each batch
# of input channels is added to it, then the bias. Inputs X, W, B (or ""), Sum.


def infer_conv_add(node: Node, graph: Graph) -> Inferred:
    inferred = infer_float_conv(node, graph)
    addend = float_input(node, graph, 3, "Sum")
    if addend.shape != inferred.outputs[0].shape:
        raise ModelError(f"{node.describe()}: Sum has shape {list(addend.shape)}; expected "
                         f"{list(inferred.outputs[0].shape)}")
    return inferred


def export_conv_add(node: Node, w: Writer) -> None:
    """Standard ONNX: the Conv and the Add, which ORT fuses back the same way."""
    product = w.fresh(f"{node.outputs[0]}__conv")
    conv = [name for name in node.inputs[:3] if name]
    w.nodes.append(helper.make_node("Conv", conv, [product], name=w.fresh(f"{node.name}_conv"),
                                    **node.attrs))
    w.nodes.append(helper.make_node("Add", [product, node.inputs[3]], list(node.outputs),
                                    name=node.name))


register(OpDef("ConvAdd", OWN_DOMAIN, infer_conv_add, lower_float_conv,
               constant_inputs=frozenset({1, 2}), data_dtypes=FLOAT_TYPES, float_island=True,
               export=export_conv_add))


def conv_unfused_hint(node: Node) -> str:
    if node.input(2):
        return "its bias is not an int32 DequantizeLinear with scale x_scale * w_scale (1%)"
    return GENERIC_UNFUSED


register(OpDef("Conv", "", infer_float_conv, lower_float_conv, versions=(1, 11, 22),
               data_dtypes=FLOAT_TYPES, float_island=True, weight_bias_axis=lambda node: 0,
               fusion=Fusion("QLinearConv", "", build_conv, dequantized_inputs=2,
                             int8_input_refused_on_x86=True, product=True,
                             unfused_hint=conv_unfused_hint, wide=CONV16_FUSION)))
