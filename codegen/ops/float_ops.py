"""Float operators as QDQ models write them between DequantizeLinear and QuantizeLinear.

They are imported (validated, shapes inferred) so that the QDQ recipes in passes.py can
fuse them into integer operators. One that survives the recipes is a float island;
those without a bit-exact float kernel yet are refused at lowering, naming the node."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import ModelError, UnsupportedError
from ..ir import Graph, Node, Tensor
from ..program import Alias, KernelCall
from . import Inferred, LoweringOptions, OpDef, register
from ._common import attr_int, check_dtype, input_tensor, normalize_axis
from ._geometry import ceil_mode, pool_kernel, sliding_window
from .elementwise import broadcast_shape
from .matmul import matmul_shape
from .qlinear_conv import conv_groups, conv_window

FLOAT = ("float32",)


def _float_input(node: Node, graph: Graph, index: int, what: str) -> Tensor:
    t = input_tensor(node, graph, index, what)
    check_dtype(node, f"input {what}", t, FLOAT)
    return t


def infer_conv(node: Node, graph: Graph) -> Inferred:
    x, w = _float_input(node, graph, 0, "X"), _float_input(node, graph, 1, "W")
    if len(x.shape) not in (3, 4) or len(w.shape) != len(x.shape):
        raise UnsupportedError(f"{node.describe()}: only 1-D and 2-D convolutions are "
                               "supported")
    window = conv_window(node, x.shape, w.shape)
    conv_groups(node, x.shape, w.shape)
    return Inferred([Tensor(node.outputs[0], "float32", (x.shape[0], w.shape[0],
                                                          *window.output))])


def infer_gemm(node: Node, graph: Graph) -> Inferred:
    a, b = _float_input(node, graph, 0, "A"), _float_input(node, graph, 1, "B")
    if len(a.shape) != 2 or len(b.shape) != 2:
        raise ModelError(f"{node.describe()}: Gemm needs 2-D A and B")
    m = a.shape[1] if attr_int(node, "transA", 0) else a.shape[0]
    k = a.shape[0] if attr_int(node, "transA", 0) else a.shape[1]
    k_b, n = (b.shape[1], b.shape[0]) if attr_int(node, "transB", 0) else b.shape
    if k != k_b:
        raise ModelError(f"{node.describe()}: inner dimensions differ")
    return Inferred([Tensor(node.outputs[0], "float32", (m, n))])


def infer_matmul(node: Node, graph: Graph) -> Inferred:
    a, b = _float_input(node, graph, 0, "A"), _float_input(node, graph, 1, "B")
    return Inferred([Tensor(node.outputs[0], "float32", matmul_shape(node, a.shape,
                                                                     b.shape).output)])


def infer_binary(node: Node, graph: Graph) -> Inferred:
    a, b = _float_input(node, graph, 0, "A"), _float_input(node, graph, 1, "B")
    return Inferred([Tensor(node.outputs[0], "float32", broadcast_shape(node, a.shape,
                                                                        b.shape))])


def infer_same_shape(node: Node, graph: Graph) -> Inferred:
    x = _float_input(node, graph, 0, "X")
    if node.op_type == "Softmax":
        normalize_axis(node, attr_int(node, "axis", -1), len(x.shape))
    return Inferred([Tensor(node.outputs[0], "float32", x.shape)])


def infer_average_pool(node: Node, graph: Graph) -> Inferred:
    x = _float_input(node, graph, 0, "X")
    window = sliding_window(node, x.shape, pool_kernel(node, x.shape), ceil_mode(node))
    return Inferred([Tensor(node.outputs[0], "float32", (*x.shape[:2], *window.output))])


def infer_global_average_pool(node: Node, graph: Graph) -> Inferred:
    x = _float_input(node, graph, 0, "X")
    if len(x.shape) < 3:
        raise ModelError(f"{node.describe()}: input of rank {len(x.shape)}; expected >= 3")
    return Inferred([Tensor(node.outputs[0], "float32",
                            (*x.shape[:2], *np.ones(len(x.shape) - 2, dtype=int).tolist()))])


def lower_float_island(node: Node, graph: Graph, options: LoweringOptions) -> Sequence[
        KernelCall | Alias]:
    raise UnsupportedError(f"{node.describe()}: {FLOAT_ISLAND_REASON}")


FLOAT_ISLAND_REASON = (
    "stays in float (a float island): ONNX Runtime computes it in float here and onnx2mcu "
    "has no bit-exact float kernel for it; --integer-only fuses it into integer kernels "
    "(verify then reports any difference)")


FLOAT_OPS = {
    "Conv": (infer_conv, (1, 11, 22)),
    "Gemm": (infer_gemm, (7, 9, 11, 13)),
    "MatMul": (infer_matmul, (1, 9, 13)),
    "Add": (infer_binary, (7, 13, 14)),
    "Mul": (infer_binary, (7, 13, 14)),
    "Sigmoid": (infer_same_shape, (6, 13)),
    "LeakyRelu": (infer_same_shape, (6, 16)),
    "Softmax": (infer_same_shape, (13,)),
    "AveragePool": (infer_average_pool, (7, 10, 11, 19, 22)),
    "GlobalAveragePool": (infer_global_average_pool, (1, 22)),
}
for _op, (_infer, _versions) in FLOAT_OPS.items():
    register(OpDef(_op, "", _infer, lower_float_island, versions=_versions,
                   data_dtypes=frozenset(FLOAT), needs_fusion=True))
