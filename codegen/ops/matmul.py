"""Integer matrix products on the gemm.c kernels: QLinearMatMul (batched, numpy
broadcasting, per-column b), MatMulInteger (int32 output) and com.microsoft QGemm
(transA/transB, alpha, int32 bias C, 8-bit or float output)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from codegen.arith.requant import output_scale
from codegen.core.ir import Graph, Node, QuantParams, Tensor
from codegen.core.pattern import Quantized, dtype_of, per_tensor, qparams, scale_axis
from codegen.core.program import Alias, CArray, CFloat, CRef, CStruct, KernelCall
from codegen.errors import ModelError, UnsupportedError

from . import GENERIC_UNFUSED, FloatOutputFusion, Fusion, Inferred, LoweringOptions, OpDef, register
from ._common import (
    attr_float,
    attr_int,
    bounded_requant,
    check_dtype,
    check_scales,
    constant_input,
    conv_acc_bound,
    folded_bias,
    input_tensor,
    kernel_suffix,
    no_requant,
    reject_unknown_attrs,
    requant_params,
    scalar_constant,
)
from ._export import ProductSlots, export_product
from ._float import FLOAT_TYPES, float_bias, float_input, refuse
from ._product import (
    MatmulShape,
    ProductSpec,
    b_quantization,
    column_params,
    matmul_shape,
)
from ._qdq import bias_input
from .clamp import output_range
from .dynamic_quantize import lower_matmul_integer_dynamic, runtime_zero_point
from .kernels import kernel
from .matmul_nbits import lower_matmul_nbits, nbits_traits, nbits_weights
from .product16 import GEMM16_FUSION, MATMUL16_FUSION

# The integer products' kernels (the kernel table).
FC = kernel("fc")
FC_MVE = kernel("fc_mve")
FC_W16 = kernel("fc_w16")
GEMM = kernel("gemm")

SOURCES = ("gemm.c",)
INT8_TYPES = ("uint8", "int8")
MS = "com.microsoft"
F32 = np.float32


def _gemm_struct(shape: MatmulShape, a_strides: tuple[int, int], b_strides: tuple[int, int],
                 a_zp: int, per_column: bool, batched: bool, bias: tuple[int, int] | None,
                 requant: CStruct) -> CStruct:
    return CStruct("q8_gemm_params", (
        ("batches", len(shape.a_offsets)),
        ("a_offset", CRef("a_offset")), ("b_offset", CRef("b_offset")),
        ("param_offset", CRef("param_offset") if batched else None),
        ("m", shape.m), ("k", shape.k), ("n", shape.n),
        ("a_stride_m", a_strides[0]), ("a_stride_k", a_strides[1]),
        ("b_stride_k", b_strides[0]), ("b_stride_n", b_strides[1]),
        ("a_zero_point", a_zp), ("b_zero_point", CRef("b_zero_point")),
        ("per_column", int(per_column)),
        ("bias", CRef("bias") if bias is not None else None),
        ("bias_stride_m", bias[0] if bias else 0), ("bias_stride_n", bias[1] if bias else 0),
        ("requant", requant),
    ))


def _offset_arrays(shape: MatmulShape, batched: bool) -> list[CArray]:
    arrays = [CArray("a_offset", "int32_t", np.array(shape.a_offsets, dtype=np.int32)),
              CArray("b_offset", "int32_t", np.array(shape.b_offsets, dtype=np.int32))]
    if batched:
        arrays.append(CArray("param_offset", "int32_t",
                             np.array(shape.b_matrices, dtype=np.int32) * shape.n))
    return arrays


def _gemm_call(node: Node, a: Tensor, b: Tensor, y: Tensor, out: str, params: CStruct,
               arrays: Sequence[CArray], shape: MatmulShape) -> KernelCall:
    axes = {"ab": kernel_suffix(a.dtype) + kernel_suffix(b.dtype), "out": out}
    macs = len(shape.a_offsets) * shape.m * shape.n * shape.k
    return KernelCall(GEMM.symbol(**axes), node.name, (a.name, b.name), (y.name,), params,
                      tuple(arrays), (GEMM.file(**axes),), macs)


def fc_weights(b: NDArray[Any], b_zp: NDArray[Any], trans_b: bool) -> NDArray[Any] | None:
    """Constant weights as int8 [N][K] for the fast path (fully_connected.c), or None when
    a zero point is not 0 (uint8 weights move to int8 with their zero point, as the
    reference does)."""
    zp = np.asarray(b_zp).astype(np.int64).reshape(-1)
    w = np.asarray(b)
    if w.dtype == np.uint8:
        w, zp = (w.astype(np.int16) - 128).astype(np.int8), zp - 128
    if np.any(zp):
        return None
    return np.ascontiguousarray(w if trans_b else w.T).astype(np.int8)


def fc_call(node: Node, a: Tensor, y: Tensor, weights: NDArray[Any], a_zp: int,
            bias: NDArray[Any] | None, requant: CStruct, arrays: Sequence[CArray], mode: str,
            rows: int, wide: bool, dsp: bool = False, mve: bool = False) -> KernelCall:
    """The fast matrix product: weights [N][K] padded to multiples of 4, each group of
    four taps in the kernel's byte order, four rows interleaved per group; the input zero
    point folded into the bias (modulo 2^32), padded like the rows. On DSP cores K is
    padded to a multiple of 16 for the requantized products: the hand-scheduled loop
    takes four groups a pass (fully_connected.c's fused_fc_blocks)."""
    if wide:
        return fc_w16_call(node, a, y, weights, a_zp, bias, requant, arrays, mode, rows, dsp)
    if mve:
        return fc_mve_call(node, a, y, weights, a_zp, bias, requant, arrays, mode, rows)
    n, k = weights.shape
    tap_multiple = 16 if dsp and mode != "f32" else 4
    k_padded = (k + tap_multiple - 1) // tap_multiple * tap_multiple
    n_padded = (n + 3) // 4 * 4
    padded = np.zeros((n_padded, k_padded), dtype=np.int8)
    padded[:n, :k] = weights
    # [block of 4 rows][group of 4 taps][row in block][tap in group, order 0 2 1 3]
    padded = padded.reshape(n_padded // 4, 4, k_padded // 4, 4)[:, :, :, [0, 2, 1, 3]]
    padded = np.ascontiguousarray(padded.transpose(0, 2, 1, 3))
    wrapped = np.zeros(n_padded, np.int32)
    wrapped[:n] = folded_bias(bias, weights, a_zp)
    if mode != "f32":
        requant = bounded_requant(requant, arrays, conv_acc_bound(weights, bias))
    params = CStruct("q8_fc_params", (
        ("m", rows), ("k", k), ("k_padded", k_padded), ("n", n),
        ("weights", CRef("weights", "v")), ("bias", CRef("bias")), ("requant", requant)))
    # 8-byte aligned: the kernel reads two rows' words with one LDRD.
    all_arrays = (CArray("weights", "int8_t", padded.reshape(-1), aligned8=True),
                  CArray("bias", "int32_t", wrapped), *arrays)
    axes = {"x": kernel_suffix(a.dtype), "out": mode}
    return KernelCall(FC.symbol(**axes), node.name, (a.name,),
                      (y.name,), params, all_arrays, (FC.file(**axes),), rows * n * k,
                      scratch_bytes=FC.scratch_bytes(params))


def fc_mve_call(node: Node, a: Tensor, y: Tensor, weights: NDArray[Any], a_zp: int,
                bias: NDArray[Any] | None, requant: CStruct, arrays: Sequence[CArray],
                mode: str, rows: int) -> KernelCall:
    """The Helium product (fully_connected_mve.c): int8 rows padded to 16 taps, in blocks of
    eight interleaved per 16 taps; the kernel takes a uint8 row less 128, so the bias folds
    a_zp - 128 there."""
    n, k = weights.shape
    k_padded, n_padded = (k + 15) // 16 * 16, (n + 7) // 8 * 8
    padded = np.zeros((n_padded, k_padded), dtype=np.int8)
    padded[:n, :k] = weights
    blocks = padded.reshape(n_padded // 8, 8, k_padded // 16, 16).transpose(0, 2, 1, 3)
    wrapped = np.zeros(n_padded, np.int32)
    wrapped[:n] = folded_bias(bias, weights, a_zp if a.dtype == "int8" else a_zp - 128)
    if mode != "f32":
        requant = bounded_requant(requant, arrays, conv_acc_bound(weights, bias))
    params = CStruct("q8_fc_params", (
        ("m", rows), ("k", k), ("k_padded", k_padded), ("n", n),
        ("weights", CRef("weights", "v")), ("bias", CRef("bias")), ("requant", requant)))
    all_arrays = (CArray("weights", "int8_t", np.ascontiguousarray(blocks).reshape(-1),
                         aligned8=True),
                  CArray("bias", "int32_t", wrapped), *arrays)
    axes = {"x": kernel_suffix(a.dtype), "out": mode}
    return KernelCall(FC_MVE.symbol(**axes), node.name, (a.name,),
                      (y.name,), params, all_arrays, (FC_MVE.file(**axes),), rows * n * k,
                      scratch_bytes=FC_MVE.scratch_bytes(params))


def fc_w16_call(node: Node, a: Tensor, y: Tensor, weights: NDArray[Any], a_zp: int,
                bias: NDArray[Any] | None, requant: CStruct, arrays: Sequence[CArray],
                mode: str, rows: int, dsp: bool = False) -> KernelCall:
    """The fast matrix product with wide weights (fully_connected.c, *_w16_*): int16,
    columns in blocks of four rows interleaved per four taps, K padded to a multiple of
    8 (16 for the requantized products on DSP cores, as fc_call), N to a multiple of 4
    with zero rows, 8-byte aligned."""
    n, k = weights.shape
    tap_multiple = 16 if dsp and mode != "f32" else 8
    k_padded = (k + tap_multiple - 1) // tap_multiple * tap_multiple
    n_padded = (n + 3) // 4 * 4
    padded = np.zeros((n_padded, k_padded), dtype=np.int16)
    padded[:n, :k] = weights
    # [block][row in block][tap group][4] -> [block][tap group][row in block][4]
    interleaved = padded.reshape(n_padded // 4, 4, k_padded // 4, 4).transpose(0, 2, 1, 3)
    wrapped = np.zeros(n_padded, np.int32)
    wrapped[:n] = folded_bias(bias, weights, a_zp)
    if mode != "f32":
        requant = bounded_requant(requant, arrays, conv_acc_bound(weights, bias))
    params = CStruct("q8_fc_w16_params", (
        ("m", rows), ("k", k), ("k_padded", k_padded), ("n", n),
        ("weights", CRef("weights", "v")), ("bias", CRef("bias")), ("requant", requant)))
    all_arrays = (CArray("weights", "int16_t", interleaved.reshape(-1), aligned8=True),
                  CArray("bias", "int32_t", wrapped), *arrays)
    axes = {"x": kernel_suffix(a.dtype), "out": mode}
    return KernelCall(FC_W16.symbol(**axes), node.name, (a.name,),
                      (y.name,), params, all_arrays, (FC_W16.file(**axes),), rows * n * k,
                      scratch_bytes=FC_W16.scratch_bytes(params))


# ------------------------------------------------------------------ QLinearMatMul


def infer_qlinear_matmul(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, set())
    a = input_tensor(node, graph, 0, "a")
    b = input_tensor(node, graph, 3, "b")
    check_dtype(node, "input a", a, INT8_TYPES)
    check_dtype(node, "input b", b, INT8_TYPES)
    shape = matmul_shape(node, a.shape, b.shape)
    a_scale = check_scales(node, "a_scale", scalar_constant(node, graph, 1, "a_scale"))
    check_dtype(node, "a_zero_point", scalar_constant(node, graph, 2, "a_zero_point"), (a.dtype,))
    b_scale = constant_input(node, graph, 4, "b_scale")
    b_zp = constant_input(node, graph, 5, "b_zero_point")
    check_scales(node, "b_scale", b_scale.reshape(-1))
    column_params(node, "b_scale", b_scale, b.shape)
    column_params(node, "b_zero_point", b_zp, b.shape)
    check_dtype(node, "b_zero_point", b_zp, (b.dtype,))
    y_scale = check_scales(node, "y_scale", scalar_constant(node, graph, 6, "y_scale"))
    y_zp = scalar_constant(node, graph, 7, "y_zero_point")
    y_dtype = check_dtype(node, "y_zero_point", y_zp, INT8_TYPES)
    y = Tensor(node.outputs[0], y_dtype, shape.output,
               QuantParams((float(y_scale[0]),), (int(y_zp[0]),)))
    a_zp = int(scalar_constant(node, graph, 2, "a_zp")[0])
    b_sc, b_zp_params = b_quantization(node, b, check_scales(node, "b_scale", b_scale), b_zp)
    spec = ProductSpec(shape, (shape.k, 1), (shape.n, 1), a_zp, b_zp_params,
                       output_scale(float(a_scale[0]), b_sc.values, float(y_scale[0])),
                       int(y_zp[0]))
    return Inferred([y], {a.name: QuantParams((float(a_scale[0]),), (a_zp,))}, spec)


def lower_qlinear_matmul(node: Node, graph: Graph, spec: ProductSpec,
        options: LoweringOptions) -> Sequence[
        KernelCall | Alias]:
    a, b = graph.tensors[node.inputs[0]], graph.tensors[node.inputs[3]]
    y = graph.tensors[node.outputs[0]]
    shape, b_zp = spec.shape, spec.b_zp
    assert spec.scale is not None
    qmin, qmax = output_range(node, graph, y.dtype)
    requant, arrays = requant_params(node, spec.scale, spec.y_zp, qmin, qmax, options.requant,
                                     collapse=not b_zp.per_column)
    mode = options.requant_suffix
    if options.kernels == "fast" and b.name in graph.constants and len(b.shape) == 2 and \
            not b_zp.batched:
        weights = fc_weights(graph.constants[b.name], b_zp.values, trans_b=False)
        if weights is not None:
            rows = int(np.prod(a.shape[:-1], dtype=np.int64)) if len(a.shape) > 1 else 1
            return [fc_call(node, a, y, weights, spec.a_zp, None, requant, arrays, mode, rows,
                            options.wide_for(node.name), options.dsp, options.mve)]
    params = _gemm_struct(shape, spec.a_strides, spec.b_strides, spec.a_zp, b_zp.per_column,
                          b_zp.batched, None, requant)
    arrays += [CArray("b_zero_point", "int32_t", b_zp.values), *_offset_arrays(shape, b_zp.batched)]
    mode = options.requant_suffix
    return [_gemm_call(node, a, b, y, mode, params, arrays, shape)]


MATMUL_SLOTS = ProductSlots(0, 3, 5, 7)


def fully_connected(node: Node) -> str:
    return "fc"


register(OpDef("QLinearMatMul", "", infer_qlinear_matmul, lower_qlinear_matmul,
               versions=(10, 21), constant_inputs=frozenset({1, 2, 4, 5, 6, 7}),
               data_dtypes=frozenset(INT8_TYPES), absorbs_clamp=True,
               product=MATMUL_SLOTS, export=export_product(MATMUL_SLOTS),
               wide_weights=fully_connected))



# ------------------------------------------------------------------ MatMulInteger


def _optional_scalar_zp(node: Node, graph: Graph, index: int, what: str,
                        dtype: str) -> int:
    if node.input(index) is None:
        return 0
    zp = constant_input(node, graph, index, what)
    if zp.size != 1:
        raise UnsupportedError(f"{node.describe()}: {what} of shape {list(zp.shape)} is not "
                               "supported (ONNX Runtime accepts a scalar only)")
    check_dtype(node, what, zp, (dtype,))
    return int(zp.reshape(-1)[0])


def infer_matmul_integer(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, set())
    a = input_tensor(node, graph, 0, "A")
    b = input_tensor(node, graph, 1, "B")
    check_dtype(node, "input A", a, INT8_TYPES)
    check_dtype(node, "input B", b, INT8_TYPES)
    shape = matmul_shape(node, a.shape, b.shape)
    runtime_zp = runtime_zero_point(node, graph, 2, "a_zero_point", a)
    a_zp = 0 if runtime_zp else _optional_scalar_zp(node, graph, 2, "a_zero_point", a.dtype)
    zp = None
    if node.input(3) is not None:
        zp = constant_input(node, graph, 3, "b_zero_point")
        check_dtype(node, "b_zero_point", zp, (b.dtype,))
        column_params(node, "b_zero_point", zp, b.shape)
    _, b_zp = b_quantization(node, b, None, zp)
    return Inferred([Tensor(node.outputs[0], "int32", shape.output)],
                    spec=ProductSpec(shape, (shape.k, 1), (shape.n, 1), a_zp, b_zp,
                                     a_zp_tensor=runtime_zp))


def lower_matmul_integer(node: Node, graph: Graph, spec: ProductSpec,
        options: LoweringOptions) -> Sequence[
        KernelCall | Alias]:
    a, b = graph.tensors[node.inputs[0]], graph.tensors[node.inputs[1]]
    y = graph.tensors[node.outputs[0]]
    shape, b_zp = spec.shape, spec.b_zp
    if spec.a_zp_tensor is not None:
        return [lower_matmul_integer_dynamic(node, graph, a, y, spec.a_zp_tensor)]
    params = _gemm_struct(shape, spec.a_strides, spec.b_strides, spec.a_zp,
                          b_zp.per_column, b_zp.batched, None, no_requant())
    arrays = [CArray("b_zero_point", "int32_t", b_zp.values), *_offset_arrays(shape, b_zp.batched)]
    return [_gemm_call(node, a, b, y, "i32", params, arrays, shape)]


register(OpDef("MatMulInteger", "", infer_matmul_integer, lower_matmul_integer,
               versions=(10,), constant_inputs=frozenset({3}),
               data_dtypes=frozenset(INT8_TYPES), product=ProductSlots(0, 1, 3)))


# ------------------------------------------------------------------ QGemm


@dataclass(frozen=True)
class GemmLayout:
    shape: MatmulShape
    a_strides: tuple[int, int]
    b_strides: tuple[int, int]
    logical_b: Tensor


def gemm_layout(node: Node, a: Tensor, b: Tensor) -> GemmLayout:
    if len(a.shape) != 2 or len(b.shape) != 2:
        raise ModelError(f"{node.describe()}: QGemm needs 2-D A and B, got {list(a.shape)} and "
                         f"{list(b.shape)}")
    trans_a, trans_b = attr_int(node, "transA", 0), attr_int(node, "transB", 0)
    m, k = (a.shape[1], a.shape[0]) if trans_a else a.shape
    k_b, n = (b.shape[1], b.shape[0]) if trans_b else b.shape
    if k != k_b:
        raise ModelError(f"{node.describe()}: inner dimensions differ: {list(a.shape)} x "
                         f"{list(b.shape)} (transA={trans_a}, transB={trans_b})")
    shape = MatmulShape(m, k, n, (0,), (0,), (0,), (m, n))
    a_strides = (1, m) if trans_a else (k, 1)
    b_strides = (1, k) if trans_b else (n, 1)
    # b's per-column parameters follow the logical [K, N] B, whatever its storage.
    return GemmLayout(shape, a_strides, b_strides, Tensor(b.name, b.dtype, (k, n)))


def bias_strides(node: Node, c: NDArray[Any], m: int, n: int) -> tuple[int, int]:
    """How C broadcasts to [M, N], as ORT's GemmHelper allows."""
    if c.size == 1:
        return (0, 0)
    if c.shape in ((n,), (1, n)):
        return (0, 1)
    if c.shape == (m, 1):
        return (1, 0)
    if c.shape == (m, n):
        return (n, 1)
    raise ModelError(f"{node.describe()}: C of shape {list(c.shape)} does not broadcast to "
                     f"[{m}, {n}]")


def infer_qgemm(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, {"transA", "transB", "alpha"})
    a = input_tensor(node, graph, 0, "A")
    b = input_tensor(node, graph, 3, "B")
    check_dtype(node, "input A", a, INT8_TYPES)
    check_dtype(node, "input B", b, INT8_TYPES)
    layout = gemm_layout(node, a, b)
    a_scale = check_scales(node, "a_scale", scalar_constant(node, graph, 1, "a_scale"))
    a_zp = scalar_constant(node, graph, 2, "a_zero_point")
    check_dtype(node, "a_zero_point", a_zp, (a.dtype,))
    b_scale = constant_input(node, graph, 4, "b_scale")
    check_scales(node, "b_scale", b_scale.reshape(-1))
    b_zp = constant_input(node, graph, 5, "b_zero_point")
    check_dtype(node, "b_zero_point", b_zp, (b.dtype,))
    b_sc, b_zp_params = b_quantization(node, layout.logical_b, b_scale, b_zp)
    c, c_strides = None, (0, 0)
    if node.input(6) is not None:
        c = constant_input(node, graph, 6, "C")
        check_dtype(node, "bias C", c, ("int32",))
        c_strides = bias_strides(node, c, layout.shape.m, layout.shape.n)
    quant = None
    y_dtype = "float32"
    if node.input(7) is not None:
        check_scales(node, "y_scale", scalar_constant(node, graph, 7, "y_scale"))
    if node.input(8) is not None:
        y_zp = scalar_constant(node, graph, 8, "y_zero_point")
        y_dtype = check_dtype(node, "y_zero_point", y_zp, INT8_TYPES)
        if node.input(7) is None:
            raise ModelError(f"{node.describe()}: y_zero_point without y_scale")
        y_scale = float(scalar_constant(node, graph, 7, "y_scale")[0])
        quant = QuantParams((y_scale,), (int(y_zp[0]),))
    y = Tensor(node.outputs[0], y_dtype, layout.shape.output, quant)
    spec = ProductSpec(layout.shape, layout.a_strides, layout.b_strides, int(a_zp[0]),
                       b_zp_params, qgemm_scale(node, graph, b_sc.values),
                       quant.zero_point[0] if quant is not None else 0, c, c_strides,
                       bool(attr_int(node, "transA", 0)), bool(attr_int(node, "transB", 0)))
    return Inferred([y], {a.name: QuantParams((float(a_scale[0]),), (int(a_zp[0]),))}, spec)


def qgemm_scale(node: Node, graph: Graph, b_scale: NDArray[Any]) -> NDArray[Any]:
    """ORT: s = f32(f32(alpha * a_scale) * b_scale[n]), then f32(s / y_scale) if given."""
    alpha = np.float32(attr_float(node, "alpha", 1.0))
    a_scale = np.float32(scalar_constant(node, graph, 1, "a_scale")[0])
    s = (np.float32(alpha * a_scale) * b_scale.astype(np.float32)).astype(np.float32)
    if node.input(7) is not None:
        s = (s / np.float32(scalar_constant(node, graph, 7, "y_scale")[0])).astype(np.float32)
    return s


def lower_qgemm(node: Node, graph: Graph, spec: ProductSpec,
        options: LoweringOptions) -> Sequence[
        KernelCall | Alias]:
    a, b = graph.tensors[node.inputs[0]], graph.tensors[node.inputs[3]]
    y = graph.tensors[node.outputs[0]]
    b_zp, scale = spec.b_zp, spec.scale
    assert scale is not None
    if y.dtype == "float32":
        # Float output: y = f32((float)acc * s); no clamp, no zero point.
        requant, arrays = requant_params(node, scale, 0, 0, 0, "float",
                                         collapse=not b_zp.per_column)
        mode = "f32"
    else:
        qmin, qmax = output_range(node, graph, y.dtype)
        requant, arrays = requant_params(node, scale, spec.y_zp, qmin, qmax, options.requant,
                                         collapse=not b_zp.per_column)
        mode = options.requant_suffix
    c_value, shape = spec.bias, spec.shape
    column_bias = c_value is None or c_value.shape in ((), (1,), (shape.n,), (1, shape.n))
    if options.kernels == "fast" and not spec.trans_a and \
            b.name in graph.constants and column_bias:
        weights = fc_weights(graph.constants[b.name], b_zp.values, trans_b=spec.trans_b)
        if weights is not None:
            return [fc_call(node, a, y, weights, spec.a_zp, c_value, requant, arrays, mode,
                            shape.m, options.wide_for(node.name), options.dsp, options.mve)]
    bias = None
    if c_value is not None:
        bias = spec.bias_strides
        arrays.append(CArray("bias", "int32_t", c_value.reshape(-1)))
    params = _gemm_struct(shape, spec.a_strides, spec.b_strides, spec.a_zp, b_zp.per_column,
                          False, bias, requant)
    arrays += [CArray("b_zero_point", "int32_t", b_zp.values),
               *_offset_arrays(shape, False)]
    return [_gemm_call(node, a, b, y, mode, params, arrays, shape)]


QGEMM_SLOTS = ProductSlots(0, 3, 5, 8, bias=6)
register(OpDef("QGemm", "com.microsoft", infer_qgemm, lower_qgemm,
               constant_inputs=frozenset({1, 2, 4, 5, 6, 7, 8}),
               data_dtypes=frozenset(INT8_TYPES), absorbs_clamp=True,
               # y_scale at 7; without it, a float output
               product=QGEMM_SLOTS, export=export_product(QGEMM_SLOTS),
               wide_weights=fully_connected))


# ------------------------------------------------------------------ MatMulIntegerToFloat


def infer_matmul_integer_to_float(node: Node, graph: Graph) -> Inferred:
    """com.microsoft MatMulIntegerToFloat(A, B, a_scale, b_scale, [a_zp], [b_zp], [bias]):
    what ORT fuses DQ(a), DQ(b) -> MatMul into when no QuantizeLinear follows."""
    reject_unknown_attrs(node, set())
    a = input_tensor(node, graph, 0, "A")
    b = input_tensor(node, graph, 1, "B")
    check_dtype(node, "input A", a, INT8_TYPES)
    check_dtype(node, "input B", b, INT8_TYPES)
    shape = matmul_shape(node, a.shape, b.shape)
    a_scale = scalar_constant(node, graph, 2, "a_scale")
    check_scales(node, "a_scale", a_scale)
    b_scale = constant_input(node, graph, 3, "b_scale")
    check_scales(node, "b_scale", b_scale.reshape(-1))
    column_params(node, "b_scale", b_scale, b.shape)
    a_zp = _optional_scalar_zp(node, graph, 4, "a_zero_point", a.dtype)
    zp = None
    if node.input(5) is not None:
        zp = constant_input(node, graph, 5, "b_zero_point")
        check_dtype(node, "b_zero_point", zp, (b.dtype,))
        column_params(node, "b_zero_point", zp, b.shape)
    if node.input(6) is not None:
        raise UnsupportedError(f"{node.describe()}: the bias input is not supported")
    b_sc, b_zp = b_quantization(node, b, b_scale, zp)
    # y = f32((float)acc * f32(a_scale * b_scale[n])), acc the exact int32 sum.
    scale = (np.float32(a_scale[0]) * b_sc.values.astype(np.float32)).astype(np.float32)
    return Inferred([Tensor(node.outputs[0], "float32", shape.output)],
                    spec=ProductSpec(shape, (shape.k, 1), (shape.n, 1), a_zp, b_zp, scale))


def lower_matmul_integer_to_float(node: Node, graph: Graph, spec: ProductSpec,
        options: LoweringOptions) -> Sequence[
        KernelCall | Alias]:
    a, b = graph.tensors[node.inputs[0]], graph.tensors[node.inputs[1]]
    y = graph.tensors[node.outputs[0]]
    shape, b_zp = spec.shape, spec.b_zp
    assert spec.scale is not None
    requant, arrays = requant_params(node, spec.scale, 0, 0, 0, "float",
                                     collapse=not b_zp.per_column)
    params = _gemm_struct(shape, spec.a_strides, spec.b_strides, spec.a_zp,
                          b_zp.per_column, b_zp.batched, None, requant)
    arrays += [CArray("b_zero_point", "int32_t", b_zp.values), *_offset_arrays(shape, b_zp.batched)]
    return [_gemm_call(node, a, b, y, "f32", params, arrays, shape)]


register(OpDef("MatMulIntegerToFloat", "com.microsoft", infer_matmul_integer_to_float,
               lower_matmul_integer_to_float, constant_inputs=frozenset({2, 3, 4, 5, 6}),
               data_dtypes=frozenset(INT8_TYPES), product=ProductSlots(0, 1, 5)))


def build_matmul(graph: Graph, node: Node, dqs: list[Quantized | None], y: Quantized,
                 integer_only: bool) -> list[str] | None:
    a, b = dqs[0], dqs[1]
    if a is None or b is None or not per_tensor(a, graph):
        return None
    if dtype_of(graph, a) == "int8" and dtype_of(graph, b) == "uint8":
        return None  # ORT has no int8 x uint8 QLinearMatMul
    if not integer_only and dtype_of(graph, y) != dtype_of(graph, a):
        return None  # ORT's kernels produce the type of A
    if not per_tensor(b, graph) and scale_axis(b, graph) != len(graph.tensors[b.q].shape) - 1:
        return None
    return [a.q, *qparams(a, graph), b.q, *qparams(b, graph), *qparams(y, graph)]


def build_gemm(graph: Graph, node: Node, dqs: list[Quantized | None], y: Quantized | None,
               integer_only: bool) -> list[str] | None:
    """QGemm's inputs; without y, a QGemm with float output."""
    a, b = dqs[0], dqs[1]
    if a is None or b is None or not per_tensor(a, graph):
        return None
    if dtype_of(graph, a) == "int8" and dtype_of(graph, b) != "int8":
        return None
    if y is not None and not integer_only and dtype_of(graph, y) != dtype_of(graph, a):
        return None  # ORT's kernels produce the type of A
    if not per_tensor(b, graph) and scale_axis(b, graph) != (
            0 if node.attrs.get("transB", 0) else 1):
        return None
    inputs = [a.q, *qparams(a, graph), b.q, *qparams(b, graph)]
    if node.input(2) is not None:
        if float(node.attrs.get("alpha", 1.0)) != 1.0 or float(node.attrs.get("beta", 1.0)) != 1.0:
            return None
        bias = bias_input(graph, node, dqs[2], a, b, integer_only, check_scale=False)
        if bias is None:
            return None
        inputs.append(bias)
    else:
        inputs.append("")
    return [*inputs, *qparams(y, graph)] if y is not None else inputs


def _gemm_attrs(graph: Graph, node: Node) -> dict[str, Any]:
    return {k: v for k, v in node.attrs.items() if k != "beta"}


def _matmul_integer_to_float_inputs(graph: Graph, node: Node, a: Quantized,
                                    b: Quantized) -> list[str] | None:
    if dtype_of(graph, a) == "int8" and dtype_of(graph, b) == "uint8":
        return None
    if not per_tensor(b, graph) and scale_axis(b, graph) != len(graph.tensors[b.q].shape) - 1:
        return None
    (a_scale, a_zp), (b_scale, b_zp) = qparams(a, graph), qparams(b, graph)
    return [a.q, b.q, a_scale, b_scale, a_zp, b_zp]


@dataclass(frozen=True)
class FloatGemmSpec:
    m: int
    k: int
    n: int
    trans_a: bool
    trans_b: bool
    alpha: float
    beta: float


def infer_float_gemm(node: Node, graph: Graph) -> Inferred:
    a, b = float_input(node, graph, 0, "A"), float_input(node, graph, 1, "B")
    if len(a.shape) != 2 or len(b.shape) != 2:
        raise ModelError(f"{node.describe()}: Gemm needs 2-D A and B")
    m = a.shape[1] if attr_int(node, "transA", 0) else a.shape[0]
    k = a.shape[0] if attr_int(node, "transA", 0) else a.shape[1]
    k_b, n = (b.shape[1], b.shape[0]) if attr_int(node, "transB", 0) else b.shape
    if k != k_b:
        raise ModelError(f"{node.describe()}: inner dimensions differ")
    spec = FloatGemmSpec(m, k, n, bool(attr_int(node, "transA", 0)),
                         bool(attr_int(node, "transB", 0)), attr_float(node, "alpha", 1.0),
                         attr_float(node, "beta", 1.0))
    return Inferred([Tensor(node.outputs[0], "float32", (m, n))], spec=spec)


def infer_float_matmul(node: Node, graph: Graph) -> Inferred:
    a, b = float_input(node, graph, 0, "A"), float_input(node, graph, 1, "B")
    shape = matmul_shape(node, a.shape, b.shape)
    return Inferred([Tensor(node.outputs[0], "float32", shape.output)], spec=shape)


def _float_gemm_call(node: Node, a: Tensor, b: Tensor, y: Tensor, dims: tuple[int, int, int, int],
               trans_b: bool, b_batched: bool, bias: NDArray[Any] | None,
               packed: bool = False, alpha: float = 1.0) -> KernelCall:
    batches, m, k, n = dims
    arrays = []
    strides = (0, 0)
    if bias is not None:
        strides = bias_strides(node, bias, m, n)
        arrays.append(CArray("bias", "float", bias.astype(F32).reshape(-1)))
    params = CStruct("q8_gemm_f32_params", (
        ("batches", batches), ("m", m), ("k", k), ("n", n), ("trans_b", int(trans_b)),
        ("b_batched", int(b_batched)), ("packed", int(packed)), ("alpha", CFloat(alpha)),
        ("bias", CRef("bias") if bias is not None else None),
        ("bias_stride_m", strides[0]), ("bias_stride_n", strides[1])))
    return KernelCall("q8_gemm_f32", node.name, (a.name, b.name), (y.name,), params,
                      tuple(arrays), ("gemm_f32.c",), batches * m * n * k)


def check_b_operand(node: Node, graph: Graph) -> tuple[Tensor, bool]:
    """B, and whether ORT prepacks it: a 2-D float initializer (NNCF and Quark leave a
    classifier's last layer so) goes through MLAS's packed SGEMM, whose order of sums
    differs (measured on ORT 1.32); dequantized weights (computed at generation time, as
    ORT computes them at run time) and activations do not."""
    name = node.inputs[1]
    b = graph.tensors[name]
    if name in graph.constants and len(b.shape) != 2:
        raise refuse(node, f"B '{name}' is a float initializer of rank {len(b.shape)}, "
                      "which ONNX Runtime multiplies with kernels not reproduced; quantize "
                      "it (DequantizeLinear of integer weights)")
    return b, name in graph.constants


def lower_float_gemm(node: Node, graph: Graph, spec: FloatGemmSpec,
        options: LoweringOptions) -> Sequence[
        KernelCall | Alias]:
    a, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    b, packed = check_b_operand(node, graph)
    if spec.trans_a:
        raise refuse(node, "transA=1 is not supported")
    if spec.alpha != 1.0:
        raise refuse(node, f"alpha={node.attrs['alpha']} is not supported (1 only)")
    has_bias = node.input(2) is not None
    if has_bias and spec.beta != 1.0:
        raise refuse(node, f"beta={node.attrs['beta']} is not supported (1 only)")
    trans_b, m, k, n = spec.trans_b, spec.m, spec.k, spec.n
    bias = None
    if has_bias:
        # ORT copies C into the output before the product, whatever its origin.
        bias = float_bias(node, graph, 2, "C")
    weights = nbits_weights(node, graph)
    if weights is not None:
        return [lower_matmul_nbits(node, graph, weights, a, y, m, bias)]
    return [_float_gemm_call(node, a, b, y, (1, m, k, n), trans_b, False, bias, packed)]


def lower_float_matmul(node: Node, graph: Graph, spec: MatmulShape,
        options: LoweringOptions) -> Sequence[
        KernelCall | Alias]:
    return _lower_float_product(node, graph, spec, 1.0)


def _lower_float_product(node: Node, graph: Graph, shape: MatmulShape,
                         alpha: float) -> list[KernelCall | Alias]:
    a, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    b, packed = check_b_operand(node, graph)
    if len(b.shape) <= 2:
        # ORT multiplies every row of A by a 2-D B in one product.
        rows = int(np.prod(a.shape[:-1], dtype=np.int64)) if len(a.shape) > 1 else 1
        weights = nbits_weights(node, graph) if node.op_type == "MatMul" else None
        if weights is not None:
            return [lower_matmul_nbits(node, graph, weights, a, y, rows, None)]
        return [_float_gemm_call(node, a, b, y, (1, rows, shape.k, shape.n), False, False, None,
                                 packed, alpha)]
    if a.shape[:-2] != b.shape[:-2]:
        raise refuse(node, "broadcast batch dimensions are not supported")
    dims = (len(shape.a_offsets), shape.m, shape.k, shape.n)
    return [_float_gemm_call(node, a, b, y, dims, False, True, None, False, alpha)]


@dataclass(frozen=True)
class FusedMatmulSpec:
    shape: MatmulShape
    alpha: float  # float32


FUSED_MATMUL_TRANSPOSES = ("transA", "transB", "transBatchA", "transBatchB")


def infer_fused_matmul(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, {"alpha", *FUSED_MATMUL_TRANSPOSES})
    for name in FUSED_MATMUL_TRANSPOSES:
        if attr_int(node, name, 0):
            raise UnsupportedError(f"{node.describe()}: {name}=1 is not supported (0 only)")
    inferred = infer_float_matmul(node, graph)
    assert isinstance(inferred.spec, MatmulShape)
    inferred.spec = FusedMatmulSpec(inferred.spec, float(np.float32(attr_float(node, "alpha",
                                                                                1.0))))
    return inferred


def lower_fused_matmul(node: Node, graph: Graph, spec: FusedMatmulSpec,
                       options: LoweringOptions) -> Sequence[KernelCall | Alias]:
    """com.microsoft FusedMatMul, as ORT's MatMulScaleFusion writes it (a MatMul with the
    scalar Mul/Div of its operands or its product folded into alpha,
    transform/float_fusions.py): the float product, scaled as MLAS stores each K block."""
    return _lower_float_product(node, graph, spec.shape, spec.alpha)


def build_matmul_integer_to_float(graph: Graph, node: Node, dqs: list[Quantized | None],
                                  y: Quantized | None, integer_only: bool) -> list[str] | None:
    a, b = dqs[0], dqs[1]
    if a is None or b is None or not per_tensor(a, graph):
        return None
    return _matmul_integer_to_float_inputs(graph, node, a, b)


def build_gemm_float_output(graph: Graph, node: Node, dqs: list[Quantized | None],
                            y: Quantized | None, integer_only: bool) -> list[str] | None:
    if node.input(2) is not None and dqs[2] is None:
        return None  # a float bias is only quantized for a Gemm followed by a Q
    return build_gemm(graph, node, dqs, None, integer_only)


def gemm_unfused_hint(node: Node) -> str:
    if node.input(2):
        return "its bias is not an int32 DequantizeLinear, or alpha or beta is not 1"
    return GENERIC_UNFUSED


def gemm_weight_axis(node: Node) -> int:
    """B's output-feature axis: 1, or 0 when transB."""
    return 1 if int(node.attrs.get("transB", 0)) == 0 else 0


register(OpDef("Gemm", "", infer_float_gemm, lower_float_gemm, versions=(7, 9, 11, 13),
               data_dtypes=FLOAT_TYPES, float_island=True, weight_bias_axis=gemm_weight_axis,
               ort_traits=nbits_traits,
               fusion=Fusion("QGemm", MS, build_gemm, _gemm_attrs, dequantized_inputs=2,
                             product=True, unfused_hint=gemm_unfused_hint, wide=GEMM16_FUSION,
                             float_output=FloatOutputFusion("QGemm", MS,
                                                            build_gemm_float_output,
                                                            _gemm_attrs))))
register(OpDef("FusedMatMul", MS, infer_fused_matmul, lower_fused_matmul,
               data_dtypes=FLOAT_TYPES, float_island=True))
register(OpDef("MatMul", "", infer_float_matmul, lower_float_matmul, versions=(1, 9, 13),
               data_dtypes=FLOAT_TYPES, float_island=True, ort_traits=nbits_traits,
               fusion=Fusion("QLinearMatMul", "", build_matmul, dequantized_inputs=2,
                             int8_input_refused_on_x86=True, product=True,
                             wide=MATMUL16_FUSION,
                             float_output=FloatOutputFusion(
                                 "MatMulIntegerToFloat", MS,
                                 build_matmul_integer_to_float, lambda g, n: {}))))
