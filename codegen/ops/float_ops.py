"""Float operators as QDQ models write them between DequantizeLinear and QuantizeLinear.

They are imported (validated, shapes inferred) so that the QDQ recipes in passes/ can
fuse them into integer operators. One that survives the recipes is a float island: ORT
computes it in float, and so does the generated C, with kernels that follow ORT's x86-64
order of operations (runtime_c/*_f32.c). Configurations those kernels do not reproduce
are refused at lowering, naming the node."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import FloatIslandError, ModelError, UnsupportedError
from ..importer import operator_version
from ..ir import Graph, Node, Tensor
from ..numerics import dequantize_like_ort
from ..program import Alias, CArray, CFloat, CRef, CStruct, KernelCall
from . import Inferred, LoweringOptions, OpDef, register
from ._common import attr_float, attr_int, check_dtype, input_tensor, normalize_axis
from ._geometry import Window, ceil_mode, dims_struct, pool_kernel, sliding_window, window_struct
from .elementwise import broadcast_shape, broadcast_struct
from .matmul import bias_strides, matmul_shape
from .qlinear_conv import conv_groups, conv_window

FLOAT = ("float32",)
F32 = np.float32


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


# ------------------------------------------------------------------ lowering

# ORT computes a float island with its x86-64 MLAS kernels; the C kernels follow their
# order of operations, which only holds for the configurations listed in each check.


def _refuse(node: Node, why: str) -> FloatIslandError:
    # Whether --integer-only would take the model is for the pipeline to check
    # (codegen/refusal.py): many of these it does not fuse either.
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
        raise _refuse(node, f"{what} '{name}' is a float initializer, which ONNX Runtime "
                      "computes with kernels of its own (NCHWc, prepacked weights); "
                      "quantize it (DequantizeLinear of integer weights)")
    dq = producer(graph, name)
    if dq is None or dq.op_type != "DequantizeLinear" or dq.domain or not all(
            i in graph.constants for i in dq.inputs if i):
        raise _refuse(node, f"{what} '{name}' is computed at run time; only dequantized "
                      "constant weights are supported")
    x = graph.tensors[dq.inputs[0]]
    quant = graph.tensors[name].quant
    assert quant is not None
    return dequantize_like_ort(graph.constants[x.name], np.array(quant.scale, np.float32),
                               np.array(quant.zero_point), quant.axis)


def lower_conv(node: Node, graph: Graph, options: LoweringOptions) -> Sequence[
        KernelCall | Alias]:
    x, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    w = dequantized_weights(node, graph, 1, "weight")
    window = conv_window(node, x.shape, w.shape)
    if min(window.pads_begin) < 0:
        raise _refuse(node, "negative padding (SAME with a kernel smaller than the stride)")
    bias = dequantized_weights(node, graph, 2, "bias") if node.input(2) else None
    pads_end = (0, *window.pads_end) if len(window.pads_end) == 1 else window.pads_end
    arrays = [CArray("weights", "float", w.astype(F32).reshape(-1))]
    if bias is not None:
        arrays.append(CArray("bias", "float", bias.astype(F32).reshape(-1)))
    params = CStruct("q8_conv_f32_params", (
        ("input", dims_struct(x.shape)), ("output", dims_struct(y.shape)),
        ("window", window_struct(window)), ("pad_bottom", pads_end[0]),
        ("pad_right", pads_end[1]), ("groups", conv_groups(node, x.shape, w.shape)),
        ("weights", CRef("weights")), ("bias", CRef("bias") if bias is not None else None)))
    macs = y.numel * int(np.prod(w.shape[1:]))
    return [KernelCall("q8_conv_f32", node.name, (x.name,), (y.name,), params, tuple(arrays),
                       ("conv_f32.c",), macs)]


def _gemm_call(node: Node, a: Tensor, b: Tensor, y: Tensor, dims: tuple[int, int, int, int],
               trans_b: bool, b_batched: bool, bias: NDArray[Any] | None) -> KernelCall:
    batches, m, k, n = dims
    arrays = []
    strides = (0, 0)
    if bias is not None:
        strides = bias_strides(node, bias, m, n)
        arrays.append(CArray("bias", "float", bias.astype(F32).reshape(-1)))
    params = CStruct("q8_gemm_f32_params", (
        ("batches", batches), ("m", m), ("k", k), ("n", n), ("trans_b", int(trans_b)),
        ("b_batched", int(b_batched)),
        ("bias", CRef("bias") if bias is not None else None),
        ("bias_stride_m", strides[0]), ("bias_stride_n", strides[1])))
    return KernelCall("q8_gemm_f32", node.name, (a.name, b.name), (y.name,), params,
                      tuple(arrays), ("gemm_f32.c",), batches * m * n * k)


def check_b_operand(node: Node, graph: Graph) -> Tensor:
    """B is read as a tensor: dequantized weights (computed at generation time, as ORT
    computes them at run time) or an activation. ORT prepacks a float initializer B,
    which changes the order of the sums, so that is refused."""
    name = node.inputs[1]
    if name in graph.constants:
        raise _refuse(node, f"B '{name}' is a float initializer, which ONNX Runtime "
                      "multiplies with prepacked kernels; quantize it (DequantizeLinear "
                      "of integer weights)")
    return graph.tensors[name]


def check_not_matmul_nbits(node: Node, graph: Graph) -> None:
    """ORT_ENABLE_ALL turns a float product with B [K, N] dequantized from constants and
    no QuantizeLinear after it into MatMulNBits (weights quantized in blocks, A on the
    fly), which onnx2mcu does not reproduce."""
    dq = producer(graph, node.inputs[1])
    if dq is None or dq.op_type != "DequantizeLinear" or dq.domain or not all(
            i in graph.constants for i in dq.inputs if i):
        return
    readers = [n for n in graph.nodes if node.outputs[0] in n.inputs]
    if readers and all(r.op_type == "QuantizeLinear" and not r.domain for r in readers) and \
            node.outputs[0] not in graph.outputs:
        return
    raise _refuse(node, "ONNX Runtime rewrites this product of dequantized constant "
                  "weights into MatMulNBits, which onnx2mcu does not reproduce; quantize its "
                  "output (QuantizeLinear) or transpose the weights (Gemm transB=1)")


def lower_gemm(node: Node, graph: Graph, options: LoweringOptions) -> Sequence[
        KernelCall | Alias]:
    a, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    b = check_b_operand(node, graph)
    if attr_int(node, "transA", 0):
        raise _refuse(node, "transA=1 is not supported")
    if attr_float(node, "alpha", 1.0) != 1.0:
        raise _refuse(node, f"alpha={node.attrs['alpha']} is not supported (1 only)")
    has_bias = node.input(2) is not None
    if has_bias and attr_float(node, "beta", 1.0) != 1.0:
        raise _refuse(node, f"beta={node.attrs['beta']} is not supported (1 only)")
    trans_b = bool(attr_int(node, "transB", 0))
    if not trans_b:
        check_not_matmul_nbits(node, graph)
    m, k = a.shape
    n = b.shape[0] if trans_b else b.shape[1]
    bias = None
    if has_bias:
        # ORT copies C into the output before the product, whatever its origin.
        c = node.inputs[2]
        bias = graph.constants[c] if c in graph.constants else dequantized_weights(
            node, graph, 2, "C")
    return [_gemm_call(node, a, b, y, (1, m, k, n), trans_b, False, bias)]


def lower_matmul(node: Node, graph: Graph, options: LoweringOptions) -> Sequence[
        KernelCall | Alias]:
    a, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    b = check_b_operand(node, graph)
    check_not_matmul_nbits(node, graph)
    shape = matmul_shape(node, a.shape, b.shape)
    if len(b.shape) <= 2:
        # ORT multiplies every row of A by a 2-D B in one product.
        rows = int(np.prod(a.shape[:-1], dtype=np.int64)) if len(a.shape) > 1 else 1
        return [_gemm_call(node, a, b, y, (1, rows, shape.k, shape.n), False, False, None)]
    if a.shape[:-2] != b.shape[:-2]:
        raise _refuse(node, "broadcast batch dimensions are not supported")
    dims = (len(shape.a_offsets), shape.m, shape.k, shape.n)
    return [_gemm_call(node, a, b, y, dims, False, True, None)]


def lower_binary(node: Node, graph: Graph, options: LoweringOptions) -> Sequence[
        KernelCall | Alias]:
    a, b = graph.tensors[node.inputs[0]], graph.tensors[node.inputs[1]]
    y = graph.tensors[node.outputs[0]]
    params = CStruct("q8_binary_f32_params", (("shape", broadcast_struct(y.shape, a.shape,
                                                                         b.shape)),))
    function = {"Add": "q8_add_f32", "Mul": "q8_mul_f32"}[node.op_type]
    return [KernelCall(function, node.name, (a.name, b.name), (y.name,), params, (),
                       ("elementwise_f32.c",))]


def lower_activation(node: Node, graph: Graph, options: LoweringOptions) -> Sequence[
        KernelCall | Alias]:
    x, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    alpha = attr_float(node, "alpha", 0.01) if node.op_type == "LeakyRelu" else 0.0
    params = CStruct("q8_unary_f32_params", (("size", x.numel), ("alpha", CFloat(alpha))))
    function = {"Sigmoid": "q8_sigmoid_f32", "Tanh": "q8_tanh_f32",
                "LeakyRelu": "q8_leakyrelu_f32"}[node.op_type]
    return [KernelCall(function, node.name, (x.name,), (y.name,), params, (),
                       ("activation_f32.c",))]


# ORT_ENABLE_ALL runs float AveragePool on channel counts that are a multiple of the
# NCHWc block (16 floats with AVX-512F, the CPU these kernels follow) with NCHWc kernels,
# and keeps their outputs in that layout through Relu and Sigmoid. GlobalAveragePool
# goes NCHWc only on such an input or on a graph input (measured on ORT 1.32).
NCHWC_BLOCK = 16
NCHWC_PASS_THROUGH = ("Relu", "Sigmoid")


def nchwc_pool(x: Tensor) -> bool:
    return len(x.shape) == 4 and x.shape[1] % NCHWC_BLOCK == 0


def nchwc_average_pool(node: Node, graph: Graph) -> bool:
    include_pad = attr_int(node, "count_include_pad", 0) == 1
    return nchwc_pool(graph.tensors[node.inputs[0]]) and not (ceil_mode(node) and include_pad)


def nchwc_layout(node: Node, graph: Graph, tensor: str) -> bool:
    """Whether ORT holds `tensor` in NCHWc layout; refuses layouts not measured."""
    while True:
        source = producer(graph, tensor)
        if source is None or source.domain:
            return False
        if source.op_type == "AveragePool":
            return nchwc_average_pool(source, graph)
        if source.op_type not in NCHWC_PASS_THROUGH and any(
                nchwc_layout(node, graph, t) for t in source.inputs if t and
                graph.tensors[t].dtype == "float32" and t not in graph.constants):
            raise _refuse(node, f"its input comes through {source.op_type} from an NCHWc "
                          "pool, a layout whose summation order onnx2mcu has not measured")
        if source.op_type not in NCHWC_PASS_THROUGH:
            return False
        tensor = source.inputs[0]


def global_pool_is_sequential(node: Node, graph: Graph) -> bool:
    x = graph.tensors[node.inputs[0]]
    return nchwc_pool(x) and (x.name in graph.inputs or nchwc_layout(node, graph, x.name))


def lower_global_average_pool(node: Node, graph: Graph, options: LoweringOptions) -> Sequence[
        KernelCall | Alias]:
    x, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    params = CStruct("q8_global_pool_f32_params", (
        ("planes", x.shape[0] * x.shape[1]),
        ("size", int(np.prod(x.shape[2:], dtype=np.int64))),
        ("sequential", int(global_pool_is_sequential(node, graph)))))
    return [KernelCall("q8_global_avgpool_f32", node.name, (x.name,), (y.name,), params, (),
                       ("average_pool_f32.c",))]


def lower_softmax(node: Node, graph: Graph, options: LoweringOptions) -> Sequence[
        KernelCall | Alias]:
    x, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    version = operator_version(node)
    axis = normalize_axis(node, attr_int(node, "axis", -1 if version >= 13 else 1),
                          len(x.shape))
    outer = int(np.prod(x.shape[:axis], dtype=np.int64))
    if version < 13:  # flattened to 2-D at axis
        layout = (outer, int(np.prod(x.shape[axis:], dtype=np.int64)), 1)
    else:  # along axis only (ORT moves it last, which orders each row the same)
        layout = (outer, x.shape[axis], int(np.prod(x.shape[axis + 1:], dtype=np.int64)))
    params = CStruct("q8_softmax_f32_params", (("outer", layout[0]), ("length", layout[1]),
                                               ("inner", layout[2])))
    return [KernelCall("q8_softmax_f32", node.name, (x.name,), (y.name,), params, (),
                       ("softmax_f32.c",))]


AVGPOOL_ALGORITHMS = {"mlas_vector": 0, "in_order": 1, "ort": 2}


def average_pool_algorithm(node: Node, graph: Graph, x: Tensor, window: Window) -> str:
    """Which of ORT's AveragePool kernels runs, as measured on ORT 1.32 at
    ORT_ENABLE_ALL: NCHWc (channels a multiple of the block), ORT's own kernel
    (AveragePool-19 and later, or ceil_mode with count_include_pad), else MLAS's:
    the global kernel, the vector kernel, or the generic one."""
    include_pad = attr_int(node, "count_include_pad", 0) == 1
    ceil = ceil_mode(node)
    if nchwc_average_pool(node, graph):
        return "in_order"
    if operator_version(node) >= 19 or (ceil and include_pad):
        return "ort"
    kernel_h, kernel_w = window.kernel[-2:] if len(window.kernel) == 2 else (1, window.kernel[0])
    pads = (*window.pads_begin, *window.pads_end)
    if tuple(window.kernel) == tuple(x.shape[2:]) and set(window.strides) == {1} and \
            not any(pads):
        return "global"
    stride_w = window.strides[-1]
    if stride_w <= 2 and kernel_h <= 32 and kernel_w <= 32 and \
            window.pads_begin[-1] + window.pads_end[-1] + x.shape[-1] <= 2045:
        return "mlas_vector"
    return "in_order"


def lower_average_pool(node: Node, graph: Graph, options: LoweringOptions) -> Sequence[
        KernelCall | Alias]:
    x, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    if len(x.shape) != 4:
        raise _refuse(node, "only 2-D float average pooling is supported")
    window = sliding_window(node, x.shape, pool_kernel(node, x.shape), ceil_mode(node))
    if set(window.dilations) != {1}:
        raise _refuse(node, "dilations are not supported")
    if min(window.pads_begin) < 0:
        raise _refuse(node, "negative padding (SAME with a kernel smaller than the stride)")
    algorithm = average_pool_algorithm(node, graph, x, window)
    if algorithm == "global":
        params = CStruct("q8_global_pool_f32_params", (
            ("planes", x.shape[0] * x.shape[1]), ("size", x.shape[2] * x.shape[3]),
            ("sequential", 0)))
        return [KernelCall("q8_global_avgpool_f32", node.name, (x.name,), (y.name,), params,
                           (), ("average_pool_f32.c",))]
    params = CStruct("q8_avgpool_f32_params", (
        ("input", dims_struct(x.shape)), ("output", dims_struct(y.shape)),
        ("window", window_struct(window)), ("pad_bottom", window.pads_end[0]),
        ("pad_right", window.pads_end[1]),
        ("count_include_pad", attr_int(node, "count_include_pad", 0)),
        ("algorithm", AVGPOOL_ALGORITHMS[algorithm])))
    return [KernelCall("q8_avgpool_f32", node.name, (x.name,), (y.name,), params, (),
                       ("average_pool_f32.c",))]


FLOAT_OPS = {
    "Conv": (infer_conv, lower_conv, (1, 11, 22)),
    "Gemm": (infer_gemm, lower_gemm, (7, 9, 11, 13)),
    "MatMul": (infer_matmul, lower_matmul, (1, 9, 13)),
    "Add": (infer_binary, lower_binary, (7, 13, 14)),
    "Mul": (infer_binary, lower_binary, (7, 13, 14)),
    "Sigmoid": (infer_same_shape, lower_activation, (6, 13)),
    "Tanh": (infer_same_shape, lower_activation, (6, 13)),
    "LeakyRelu": (infer_same_shape, lower_activation, (6, 16)),
    "Softmax": (infer_same_shape, lower_softmax, (1, 11, 13)),
    "AveragePool": (infer_average_pool, lower_average_pool, (7, 10, 11, 19, 22)),
    "GlobalAveragePool": (infer_global_average_pool, lower_global_average_pool, (1, 22)),
}
for _op, (_infer, _lower, _versions) in FLOAT_OPS.items():
    register(OpDef(_op, "", _infer, _lower, versions=_versions,
                   data_dtypes=frozenset(FLOAT), float_island=True))
