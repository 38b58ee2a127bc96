"""What the float-island kernels of every family share.

A float operator of a QDQ model that the recipes leave is a float island: ORT computes
it in float, and so does the generated C, with kernels that follow ORT's x86-64 order of
operations (runtime_c/*_f32.c). Configurations those kernels do not reproduce are
refused at lowering, naming the node."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from codegen.arith.numerics import dequantize_like_ort
from codegen.core.ir import Graph, Node, Tensor
from codegen.errors import FloatIslandError

from . import Inferred
from ._common import attr_int, check_dtype, input_tensor, normalize_axis

FLOAT = ("float32",)
FLOAT_TYPES = frozenset(FLOAT)


def float_input(node: Node, graph: Graph, index: int, what: str) -> Tensor:
    t = input_tensor(node, graph, index, what)
    check_dtype(node, f"input {what}", t, FLOAT)
    return t


def refuse(node: Node, why: str) -> FloatIslandError:
    # Whether --integer-only would take the model is for the pipeline to check
    # (codegen/views/refusal.py): many of these it does not fuse either.
    return FloatIslandError(f"{node.describe()}: float island: {why}")


def producer(graph: Graph, tensor: str) -> Node | None:
    for node in graph.nodes:
        if tensor in node.outputs:
            return node
    return None


def dequantized_weights(node: Node, graph: Graph, index: int, what: str) -> NDArray[Any]:
    """The float values of a weight that a DequantizeLinear of constants computes at
    run time. ORT treats float initializers differently (prepacked or NCHWc kernels,
    bias quantization), so those are refused."""
    name = node.inputs[index]
    if name in graph.constants:
        raise refuse(node, f"{what} '{name}' is a float initializer, which ONNX Runtime "
                      "computes with kernels of its own (NCHWc, prepacked weights); "
                      "quantize it (DequantizeLinear of integer weights)")
    dq = producer(graph, name)
    if dq is None or dq.op_type != "DequantizeLinear" or dq.domain or not all(
            i in graph.constants for i in dq.inputs if i):
        raise refuse(node, f"{what} '{name}' is computed at run time; only dequantized "
                      "constant weights are supported")
    x = graph.tensors[dq.inputs[0]]
    quant = graph.tensors[name].quant
    assert quant is not None
    return dequantize_like_ort(graph.constants[x.name], np.array(quant.scale, np.float32),
                               np.array(quant.zero_point), quant.axis)


def float_bias(node: Node, graph: Graph, index: int, what: str) -> NDArray[Any]:
    """A bias: a float initializer or dequantized constants. Unlike weights, a constant
    bias does not change ORT's kernel (it adds the bias tensor as given; only constant
    weights are prepacked or turned to NCHWc), so either is computed the same way."""
    name = node.inputs[index]
    value = graph.constants.get(name)
    if value is None:
        return dequantized_weights(node, graph, index, what)
    check_dtype(node, what, value, FLOAT)
    return value


def infer_float_unary(node: Node, graph: Graph) -> Inferred:
    x = float_input(node, graph, 0, "X")
    if node.op_type in ("Softmax", "LogSoftmax"):
        normalize_axis(node, attr_int(node, "axis", -1), len(x.shape))
    return Inferred([Tensor(node.outputs[0], "float32", x.shape)])


def lower_only_tabulated(node: Node, graph: Graph, spec: object,
                         options: Any) -> list[Any]:
    """The lowering of an elementwise float operator that onnx2mcu computes only inside
    a table (DQ -> elementwise operators -> Q, transform/tabulate.py)."""
    raise refuse(node, f"onnx2mcu has no float {node.op_type} kernel; it computes "
                 f"{node.op_type} only between a DequantizeLinear and a QuantizeLinear (of "
                 "one 8-bit tensor, with scalar constants), where it becomes a 256-entry "
                 "table")


def f32(values: Any) -> NDArray[np.float32]:
    return np.asarray(values, dtype=np.float32)
