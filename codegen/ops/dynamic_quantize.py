"""DynamicQuantizeLinear (what ORT's quantize_dynamic writes before every MatMulInteger
and ConvInteger): x to uint8 with a scale and zero point computed from x's own range at
run time, exactly as ONNX Runtime computes them (runtime_c/dynamic_quantize_linear.c:
MLAS's min/max lanes, the zero point's clamp and rounding, QuantizeLinear's division).
The scale and zero point are tensors of one value, which the integer products read at
run time."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from codegen.core.ir import Graph, Node, Tensor
from codegen.core.program import CArray, CRef, CStruct, KernelCall, Lowered
from codegen.errors import UnsupportedError

from . import Inferred, LoweringOptions, OpDef, register
from ._common import check_dtype, reject_unknown_attrs
from ._float import FLOAT_TYPES, float_input, refuse

SOURCES = ("dynamic_quantize_linear.c",)


@dataclass(frozen=True)
class DynamicQuantizeSpec:
    size: int


def infer_dynamic_quantize(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, set())
    x = float_input(node, graph, 0, "x")
    names = [*node.outputs, "", "", ""]
    outputs = [Tensor(names[0], "uint8", x.shape)]
    if names[1]:
        outputs.append(Tensor(names[1], "float32", ()))
    if names[2]:
        outputs.append(Tensor(names[2], "uint8", ()))
    return Inferred(outputs, spec=DynamicQuantizeSpec(x.numel))


def lower_dynamic_quantize(node: Node, graph: Graph, spec: DynamicQuantizeSpec,
                           options: LoweringOptions) -> Sequence[Lowered]:
    x = graph.tensors[node.inputs[0]]
    outputs = tuple(node.outputs[:3])
    params = CStruct("q8_dynamic_quantize_params", (("size", spec.size),))
    return [KernelCall("q8_dynamic_quantize_linear", node.name, (x.name,), outputs, params, (),
                       SOURCES, macs=2 * spec.size)]


register(OpDef("DynamicQuantizeLinear", "", infer_dynamic_quantize, lower_dynamic_quantize,
               versions=(11,), data_dtypes=FLOAT_TYPES,
               runtime_quantized=lambda node, graph: graph.tensors[node.inputs[0]].numel))


def runtime_zero_point(node: Node, graph: Graph, index: int, what: str, x: Tensor) -> str | None:
    """The name of a zero point computed at run time (one value of x's type), or None
    where it is absent or a constant."""
    name = node.input(index)
    if name is None or name in graph.constants:
        return None
    zp = graph.tensors[name]
    check_dtype(node, what, zp, (x.dtype,))
    if zp.numel != 1:
        raise UnsupportedError(f"{node.describe()}: {what} of shape {list(zp.shape)} is not "
                               "supported (ONNX Runtime accepts a scalar only)")
    return name


def lower_matmul_integer_dynamic(node: Node, graph: Graph, a: Tensor, y: Tensor,
                                 zero_point: str) -> KernelCall:
    """MatMulInteger of A, whose zero point DynamicQuantizeLinear computes at run time, by
    constant 2-D weights: the exact int32 sums (runtime_c/dynamic_quantize_linear.c)."""
    name = node.inputs[1]
    if name not in graph.constants or graph.constants[name].ndim != 2:
        raise refuse(node, "with a zero point computed at run time, only constant 2-D "
                     "weights B are supported")
    b = graph.constants[name].astype(np.int64)
    zp_name = node.input(3)
    b_zp = graph.constants[zp_name].astype(np.int64).reshape(-1) if zp_name else \
        np.zeros(1, np.int64)
    centred = (b - np.broadcast_to(b_zp, (b.shape[1],))[None, :]).astype(np.int16)
    k, n = b.shape
    rows = a.numel // k
    params = CStruct("q8_matmul_integer_dynamic_params", (
        ("rows", rows), ("k", k), ("n", n), ("a_signed", int(a.dtype == "int8")),
        ("b", CRef("b"))))
    return KernelCall("q8_matmul_integer_dynamic", node.name, (a.name, zero_point),
                      (y.name,), params, (CArray("b", "int16_t", centred.reshape(-1)),),
                      SOURCES, macs=rows * k * n)
