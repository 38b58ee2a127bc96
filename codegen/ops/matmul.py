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
from codegen.core.program import Alias, CArray, CRef, CStruct, KernelCall
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
    input_tensor,
    kernel_suffix,
    no_requant,
    reject_unknown_attrs,
    requant_params,
    scalar_constant,
)
from ._export import ProductSlots, export_product
from ._float import FLOAT_TYPES, float_bias, float_input, producer, refuse
from ._qdq import bias_input
from .clamp import output_range

SOURCES = ("gemm.c",)
INT8_TYPES = ("uint8", "int8")
MS = "com.microsoft"
F32 = np.float32


@dataclass(frozen=True)
class MatmulShape:
    """A (batched) product [.., M, K] x [.., K, N] with numpy broadcasting."""

    m: int
    k: int
    n: int
    a_offsets: tuple[int, ...]  # element offset of each batch's A matrix
    b_offsets: tuple[int, ...]
    b_matrices: tuple[int, ...]  # which of B's matrices each batch uses
    output: tuple[int, ...]


def _batch_index(batch_dims: tuple[int, ...], index: tuple[int, ...]) -> int:
    """Flat index of a broadcast operand's matrix for one output batch index."""
    own = index[len(index) - len(batch_dims):] if batch_dims else ()
    clipped = tuple(0 if d == 1 else i for d, i in zip(batch_dims, own, strict=True))
    return int(np.ravel_multi_index(clipped, batch_dims)) if batch_dims else 0


def matmul_shape(node: Node, a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> MatmulShape:
    a = a_shape if len(a_shape) >= 2 else (1, *a_shape)
    b = b_shape if len(b_shape) >= 2 else (*b_shape, 1)
    if not a_shape or not b_shape:
        raise ModelError(f"{node.describe()}: matrix product of a scalar")
    m, k = a[-2:]
    k_b, n = b[-2:]
    if k != k_b:
        raise ModelError(f"{node.describe()}: inner dimensions differ: {list(a_shape)} x "
                         f"{list(b_shape)}")
    try:
        batch = tuple(int(d) for d in np.broadcast_shapes(a[:-2], b[:-2]))
    except ValueError:
        raise ModelError(f"{node.describe()}: batch dimensions of {list(a_shape)} and "
                         f"{list(b_shape)} do not broadcast") from None
    a_off, b_off, b_mat = [], [], []
    for index in np.ndindex(*batch) if batch else [()]:
        a_off.append(_batch_index(a[:-2], index) * m * k)
        b_index = _batch_index(b[:-2], index)
        b_off.append(b_index * k * n)
        b_mat.append(b_index)
    out = (*batch, *((m,) if len(a_shape) >= 2 else ()), *((n,) if len(b_shape) >= 2 else ()))
    return MatmulShape(m, k, n, tuple(a_off), tuple(b_off), tuple(b_mat), out)


@dataclass(frozen=True)
class ColumnParams:
    """b's scale or zero point flattened, with how each batch and column indexes it."""

    values: NDArray[Any]
    per_column: bool
    batched: bool  # one row of N values per B matrix


def column_params(node: Node, what: str, value: NDArray[Any],
                  b_shape: tuple[int, ...]) -> ColumnParams:
    """ORT accepts b parameters as a scalar, [N] for 2-D B, or B's shape with 1 rows."""
    if value.size == 1:
        return ColumnParams(value.reshape(-1), False, False)
    if value.ndim == 1 and len(b_shape) == 2 and value.shape[0] == b_shape[1]:
        return ColumnParams(value, True, False)
    if value.ndim == len(b_shape) >= 2 and value.shape[-2] == 1 and \
            value.shape[:-2] == b_shape[:-2] and value.shape[-1] == b_shape[-1]:
        return ColumnParams(value.reshape(-1), True, True)
    raise ModelError(f"{node.describe()}: {what} of shape {list(value.shape)} does not match "
                     f"b of shape {list(b_shape)}")


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
    function = f"q8_gemm_{kernel_suffix(a.dtype)}{kernel_suffix(b.dtype)}_{out}"
    macs = len(shape.a_offsets) * shape.m * shape.n * shape.k
    return KernelCall(function, node.name, (a.name, b.name), (y.name,), params, tuple(arrays),
                      SOURCES, macs)


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
            rows: int, wide: bool, dsp: bool = False) -> KernelCall:
    """The fast matrix product: weights [N][K] padded to multiples of 4, each group of
    four taps in the kernel's byte order, four rows interleaved per group; the input zero
    point folded into the bias (modulo 2^32), padded like the rows. On DSP cores K is
    padded to a multiple of 16 for the requantized products: the hand-scheduled loop
    takes four groups a pass (fully_connected.c's fused_fc_blocks)."""
    if wide:
        return fc_w16_call(node, a, y, weights, a_zp, bias, requant, arrays, mode, rows, dsp)
    n, k = weights.shape
    tap_multiple = 16 if dsp and mode != "f32" else 4
    k_padded = (k + tap_multiple - 1) // tap_multiple * tap_multiple
    n_padded = (n + 3) // 4 * 4
    padded = np.zeros((n_padded, k_padded), dtype=np.int8)
    padded[:n, :k] = weights
    # [block of 4 rows][group of 4 taps][row in block][tap in group, order 0 2 1 3]
    padded = padded.reshape(n_padded // 4, 4, k_padded // 4, 4)[:, :, :, [0, 2, 1, 3]]
    padded = np.ascontiguousarray(padded.transpose(0, 2, 1, 3))
    folded = np.zeros(n_padded, np.int64)
    folded[:n] = (np.broadcast_to(bias.astype(np.int64).reshape(-1), (n,))
                  if bias is not None else 0) - a_zp * weights.astype(np.int64).sum(axis=1)
    wrapped = ((folded + 2**31) % 2**32 - 2**31).astype(np.int32)
    if mode != "f32":
        requant = bounded_requant(requant, arrays, conv_acc_bound(weights, bias))
    params = CStruct("q8_fc_params", (
        ("m", rows), ("k", k), ("k_padded", k_padded), ("n", n),
        ("weights", CRef("weights", "v")), ("bias", CRef("bias")), ("requant", requant)))
    # 8-byte aligned: the kernel reads two rows' words with one LDRD.
    all_arrays = (CArray("weights", "int8_t", padded.reshape(-1), aligned8=True),
                  CArray("bias", "int32_t", wrapped), *arrays)
    return KernelCall(f"q8_fc_{kernel_suffix(a.dtype)}_{mode}", node.name, (a.name,),
                      (y.name,), params, all_arrays, ("fully_connected.c",), rows * n * k,
                      scratch_bytes=2 * k_padded)


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
    folded = (np.broadcast_to(bias.astype(np.int64).reshape(-1), (n,)) if bias is not None
              else np.zeros(n, np.int64)) - a_zp * weights.astype(np.int64).sum(axis=1)
    wrapped = np.zeros(n_padded, np.int32)
    wrapped[:n] = ((folded + 2**31) % 2**32 - 2**31).astype(np.int32)
    if mode != "f32":
        requant = bounded_requant(requant, arrays, conv_acc_bound(weights, bias))
    params = CStruct("q8_fc_w16_params", (
        ("m", rows), ("k", k), ("k_padded", k_padded), ("n", n),
        ("weights", CRef("weights", "v")), ("bias", CRef("bias")), ("requant", requant)))
    all_arrays = (CArray("weights", "int16_t", interleaved.reshape(-1), aligned8=True),
                  CArray("bias", "int32_t", wrapped), *arrays)
    return KernelCall(f"q8_fc_{kernel_suffix(a.dtype)}_w16_{mode}", node.name, (a.name,),
                      (y.name,), params, all_arrays, ("fully_connected.c",), rows * n * k,
                      scratch_bytes=2 * k_padded)


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
    return Inferred([y], {a.name: QuantParams((float(a_scale[0]),),
                                              (int(scalar_constant(node, graph, 2, "a_zp")[0]),))})


def b_quantization(node: Node, b: Tensor, scale: NDArray[Any] | None,
                   zero_point: NDArray[Any] | None) -> tuple[ColumnParams, ColumnParams]:
    """b's scale and zero point, widened to the same length: the kernel indexes both
    (and the requantization constants) with one per-column index."""
    zp = column_params(node, "b_zero_point", zero_point if zero_point is not None
                       else np.zeros(1, dtype=b.dtype), b.shape)
    sc = column_params(node, "b_scale", scale if scale is not None
                       else np.ones(1, dtype=np.float32), b.shape)
    count = max(zp.values.size, sc.values.size)
    per_column, batched = zp.per_column or sc.per_column, zp.batched or sc.batched
    return (ColumnParams(np.broadcast_to(sc.values, (count,)), per_column, batched),
            ColumnParams(np.broadcast_to(zp.values, (count,)).astype(np.int32), per_column,
                         batched))


def lower_qlinear_matmul(node: Node, graph: Graph, spec: object,
        options: LoweringOptions) -> Sequence[
        KernelCall | Alias]:
    a, b = graph.tensors[node.inputs[0]], graph.tensors[node.inputs[3]]
    y = graph.tensors[node.outputs[0]]
    shape = matmul_shape(node, a.shape, b.shape)
    b_scale, b_zp = b_quantization(
        node, b, check_scales(node, "b_scale", constant_input(node, graph, 4, "b_scale")),
        constant_input(node, graph, 5, "b_zero_point"))
    scales = output_scale(float(scalar_constant(node, graph, 1, "a_scale")[0]), b_scale.values,
                          float(scalar_constant(node, graph, 6, "y_scale")[0]))
    qmin, qmax = output_range(node, graph, y.dtype)
    requant, arrays = requant_params(node, scales, int(scalar_constant(node, graph, 7, "y_zp")[0]),
                                     qmin, qmax, options.requant,
                                     collapse=not b_zp.per_column)
    mode = options.requant_suffix
    if options.kernels == "fast" and b.name in graph.constants and len(b.shape) == 2 and \
            not b_zp.batched:
        weights = fc_weights(graph.constants[b.name], b_zp.values, trans_b=False)
        if weights is not None:
            rows = int(np.prod(a.shape[:-1], dtype=np.int64)) if len(a.shape) > 1 else 1
            a_zp = int(scalar_constant(node, graph, 2, "a_zp")[0])
            return [fc_call(node, a, y, weights, a_zp, None, requant, arrays, mode, rows,
                            options.wide_for(node.name), options.dsp)]
    params = _gemm_struct(shape, (shape.k, 1), (shape.n, 1),
                          int(scalar_constant(node, graph, 2, "a_zero_point")[0]), b_zp.per_column,
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
    _optional_scalar_zp(node, graph, 2, "a_zero_point", a.dtype)
    if node.input(3) is not None:
        zp = constant_input(node, graph, 3, "b_zero_point")
        check_dtype(node, "b_zero_point", zp, (b.dtype,))
        column_params(node, "b_zero_point", zp, b.shape)
    return Inferred([Tensor(node.outputs[0], "int32", shape.output)])


def lower_matmul_integer(node: Node, graph: Graph, spec: object,
        options: LoweringOptions) -> Sequence[
        KernelCall | Alias]:
    a, b = graph.tensors[node.inputs[0]], graph.tensors[node.inputs[1]]
    y = graph.tensors[node.outputs[0]]
    shape = matmul_shape(node, a.shape, b.shape)
    b_zp_value = constant_input(node, graph, 3, "b_zp") if node.input(3) is not None else None
    _, b_zp = b_quantization(node, b, None, b_zp_value)
    params = _gemm_struct(shape, (shape.k, 1), (shape.n, 1),
                          _optional_scalar_zp(node, graph, 2, "a_zero_point", a.dtype),
                          b_zp.per_column, b_zp.batched, None, no_requant())
    arrays = [CArray("b_zero_point", "int32_t", b_zp.values), *_offset_arrays(shape, b_zp.batched)]
    return [_gemm_call(node, a, b, y, "i32", params, arrays, shape)]


register(OpDef("MatMulInteger", "", infer_matmul_integer, lower_matmul_integer,
               versions=(10,), constant_inputs=frozenset({2, 3}),
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
    b_quantization(node, layout.logical_b, b_scale, b_zp)
    if node.input(6) is not None:
        c = constant_input(node, graph, 6, "C")
        check_dtype(node, "bias C", c, ("int32",))
        bias_strides(node, c, layout.shape.m, layout.shape.n)
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
    return Inferred([y], {a.name: QuantParams((float(a_scale[0]),), (int(a_zp[0]),))})


def qgemm_scale(node: Node, graph: Graph, b_scale: NDArray[Any]) -> NDArray[Any]:
    """ORT: s = f32(f32(alpha * a_scale) * b_scale[n]), then f32(s / y_scale) if given."""
    alpha = np.float32(attr_float(node, "alpha", 1.0))
    a_scale = np.float32(scalar_constant(node, graph, 1, "a_scale")[0])
    s = (np.float32(alpha * a_scale) * b_scale.astype(np.float32)).astype(np.float32)
    if node.input(7) is not None:
        s = (s / np.float32(scalar_constant(node, graph, 7, "y_scale")[0])).astype(np.float32)
    return s


def lower_qgemm(node: Node, graph: Graph, spec: object,
        options: LoweringOptions) -> Sequence[
        KernelCall | Alias]:
    a, b = graph.tensors[node.inputs[0]], graph.tensors[node.inputs[3]]
    y = graph.tensors[node.outputs[0]]
    layout = gemm_layout(node, a, b)
    b_scale, b_zp = b_quantization(node, layout.logical_b,
                                   constant_input(node, graph, 4, "b_scale"),
                                   constant_input(node, graph, 5, "b_zero_point"))
    scale = qgemm_scale(node, graph, b_scale.values)
    if y.dtype == "float32":
        # Float output: y = f32((float)acc * s); no clamp, no zero point.
        requant, arrays = requant_params(node, scale, 0, 0, 0, "float",
                                         collapse=not b_zp.per_column)
        mode = "f32"
    else:
        qmin, qmax = output_range(node, graph, y.dtype)
        y_zp_value = int(scalar_constant(node, graph, 8, "y_zp")[0])
        requant, arrays = requant_params(node, scale, y_zp_value, qmin, qmax, options.requant,
                                         collapse=not b_zp.per_column)
        mode = options.requant_suffix
    c_value = constant_input(node, graph, 6, "C") if node.input(6) is not None else None
    n = layout.shape.n
    column_bias = c_value is None or c_value.shape in ((), (1,), (n,), (1, n))
    if options.kernels == "fast" and not attr_int(node, "transA", 0) and \
            b.name in graph.constants and column_bias:
        weights = fc_weights(graph.constants[b.name], b_zp.values,
                             trans_b=bool(attr_int(node, "transB", 0)))
        if weights is not None:
            return [fc_call(node, a, y, weights, int(scalar_constant(node, graph, 2, "a_zp")[0]),
                            c_value, requant, arrays, mode, layout.shape.m,
                            options.wide_for(node.name), options.dsp)]
    bias = None
    if c_value is not None:
        bias = bias_strides(node, c_value, layout.shape.m, layout.shape.n)
        arrays.append(CArray("bias", "int32_t", c_value.reshape(-1)))
    params = _gemm_struct(layout.shape, layout.a_strides, layout.b_strides,
                          int(scalar_constant(node, graph, 2, "a_zero_point")[0]), b_zp.per_column,
                          False, bias, requant)
    arrays += [CArray("b_zero_point", "int32_t", b_zp.values),
               *_offset_arrays(layout.shape, False)]
    return [_gemm_call(node, a, b, y, mode, params, arrays, layout.shape)]


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
    check_scales(node, "a_scale", scalar_constant(node, graph, 2, "a_scale"))
    b_scale = constant_input(node, graph, 3, "b_scale")
    check_scales(node, "b_scale", b_scale.reshape(-1))
    column_params(node, "b_scale", b_scale, b.shape)
    _optional_scalar_zp(node, graph, 4, "a_zero_point", a.dtype)
    if node.input(5) is not None:
        zp = constant_input(node, graph, 5, "b_zero_point")
        check_dtype(node, "b_zero_point", zp, (b.dtype,))
        column_params(node, "b_zero_point", zp, b.shape)
    if node.input(6) is not None:
        raise UnsupportedError(f"{node.describe()}: the bias input is not supported")
    return Inferred([Tensor(node.outputs[0], "float32", shape.output)])


def lower_matmul_integer_to_float(node: Node, graph: Graph, spec: object,
        options: LoweringOptions) -> Sequence[
        KernelCall | Alias]:
    """y = f32((float)acc * f32(a_scale * b_scale[n])), acc the exact int32 sum."""
    a, b = graph.tensors[node.inputs[0]], graph.tensors[node.inputs[1]]
    y = graph.tensors[node.outputs[0]]
    shape = matmul_shape(node, a.shape, b.shape)
    b_zp_value = constant_input(node, graph, 5, "b_zp") if node.input(5) is not None else None
    b_scale, b_zp = b_quantization(node, b, constant_input(node, graph, 3, "b_scale"), b_zp_value)
    a_scale = np.float32(scalar_constant(node, graph, 2, "a_scale")[0])
    scale = (a_scale * b_scale.values.astype(np.float32)).astype(np.float32)
    requant, arrays = requant_params(node, scale, 0, 0, 0, "float",
                                     collapse=not b_zp.per_column)
    params = _gemm_struct(shape, (shape.k, 1), (shape.n, 1),
                          _optional_scalar_zp(node, graph, 4, "a_zero_point", a.dtype),
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


def infer_float_gemm(node: Node, graph: Graph) -> Inferred:
    a, b = float_input(node, graph, 0, "A"), float_input(node, graph, 1, "B")
    if len(a.shape) != 2 or len(b.shape) != 2:
        raise ModelError(f"{node.describe()}: Gemm needs 2-D A and B")
    m = a.shape[1] if attr_int(node, "transA", 0) else a.shape[0]
    k = a.shape[0] if attr_int(node, "transA", 0) else a.shape[1]
    k_b, n = (b.shape[1], b.shape[0]) if attr_int(node, "transB", 0) else b.shape
    if k != k_b:
        raise ModelError(f"{node.describe()}: inner dimensions differ")
    return Inferred([Tensor(node.outputs[0], "float32", (m, n))])


def infer_float_matmul(node: Node, graph: Graph) -> Inferred:
    a, b = float_input(node, graph, 0, "A"), float_input(node, graph, 1, "B")
    return Inferred([Tensor(node.outputs[0], "float32", matmul_shape(node, a.shape,
                                                                     b.shape).output)])


def _float_gemm_call(node: Node, a: Tensor, b: Tensor, y: Tensor, dims: tuple[int, int, int, int],
               trans_b: bool, b_batched: bool, bias: NDArray[Any] | None,
               packed: bool = False) -> KernelCall:
    batches, m, k, n = dims
    arrays = []
    strides = (0, 0)
    if bias is not None:
        strides = bias_strides(node, bias, m, n)
        arrays.append(CArray("bias", "float", bias.astype(F32).reshape(-1)))
    params = CStruct("q8_gemm_f32_params", (
        ("batches", batches), ("m", m), ("k", k), ("n", n), ("trans_b", int(trans_b)),
        ("b_batched", int(b_batched)), ("packed", int(packed)),
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


def check_not_matmul_nbits(node: Node, graph: Graph) -> None:
    """ORT_ENABLE_ALL turns a float product with B [K, N] dequantized from constants into
    MatMulNBits (weights quantized in blocks, A on the fly), which onnx2mcu does not
    reproduce. Measured on ORT 1.32, it does not when A is dequantized too (the QDQ
    selectors take the node unit first: MatMulIntegerToFloat, or Gemm left in float) or
    when the product is quantized, directly or through a Relu."""
    dq = producer(graph, node.inputs[1])
    if dq is None or dq.op_type != "DequantizeLinear" or dq.domain or not all(
            i in graph.constants for i in dq.inputs if i):
        return
    a = producer(graph, node.inputs[0])
    if a is not None and a.op_type == "DequantizeLinear" and not a.domain:
        return
    if quantized_after(graph, node.outputs[0], through=("Relu",)):
        return
    raise refuse(node, "ONNX Runtime rewrites this product of dequantized constant "
                  "weights into MatMulNBits, which onnx2mcu does not reproduce; quantize its "
                  "output (QuantizeLinear) or transpose the weights (Gemm transB=1)")


def quantized_after(graph: Graph, tensor: str, through: tuple[str, ...]) -> bool:
    """Is every reader of `tensor` a QuantizeLinear, or one of `through` whose output is
    (one level), and `tensor` not a graph output?"""
    readers = [n for n in graph.nodes if tensor in n.inputs]
    if not readers or tensor in graph.outputs:
        return False
    for reader in readers:
        if reader.domain:
            return False
        if reader.op_type == "QuantizeLinear":
            continue
        if reader.op_type not in through or not quantized_after(graph, reader.outputs[0], ()):
            return False
    return True


def lower_float_gemm(node: Node, graph: Graph, spec: object,
        options: LoweringOptions) -> Sequence[
        KernelCall | Alias]:
    a, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    b, packed = check_b_operand(node, graph)
    if attr_int(node, "transA", 0):
        raise refuse(node, "transA=1 is not supported")
    if attr_float(node, "alpha", 1.0) != 1.0:
        raise refuse(node, f"alpha={node.attrs['alpha']} is not supported (1 only)")
    has_bias = node.input(2) is not None
    if has_bias and attr_float(node, "beta", 1.0) != 1.0:
        raise refuse(node, f"beta={node.attrs['beta']} is not supported (1 only)")
    trans_b = bool(attr_int(node, "transB", 0))
    if not trans_b:
        check_not_matmul_nbits(node, graph)
    m, k = a.shape
    n = b.shape[0] if trans_b else b.shape[1]
    bias = None
    if has_bias:
        # ORT copies C into the output before the product, whatever its origin.
        bias = float_bias(node, graph, 2, "C")
    return [_float_gemm_call(node, a, b, y, (1, m, k, n), trans_b, False, bias, packed)]


def lower_float_matmul(node: Node, graph: Graph, spec: object,
        options: LoweringOptions) -> Sequence[
        KernelCall | Alias]:
    a, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    b, packed = check_b_operand(node, graph)
    check_not_matmul_nbits(node, graph)
    shape = matmul_shape(node, a.shape, b.shape)
    if len(b.shape) <= 2:
        # ORT multiplies every row of A by a 2-D B in one product.
        rows = int(np.prod(a.shape[:-1], dtype=np.int64)) if len(a.shape) > 1 else 1
        return [_float_gemm_call(node, a, b, y, (1, rows, shape.k, shape.n), False, False, None,
                                 packed)]
    if a.shape[:-2] != b.shape[:-2]:
        raise refuse(node, "broadcast batch dimensions are not supported")
    dims = (len(shape.a_offsets), shape.m, shape.k, shape.n)
    return [_float_gemm_call(node, a, b, y, dims, False, True, None)]


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
               fusion=Fusion("QGemm", MS, build_gemm, _gemm_attrs, dequantized_inputs=2,
                             product=True, unfused_hint=gemm_unfused_hint,
                             float_output=FloatOutputFusion("QGemm", MS,
                                                            build_gemm_float_output,
                                                            _gemm_attrs))))
register(OpDef("MatMul", "", infer_float_matmul, lower_float_matmul, versions=(1, 9, 13),
               data_dtypes=FLOAT_TYPES, float_island=True,
               fusion=Fusion("QLinearMatMul", "", build_matmul, dequantized_inputs=2,
                             int8_input_refused_on_x86=True, product=True,
                             float_output=FloatOutputFusion(
                                 "MatMulIntegerToFloat", MS,
                                 build_matmul_integer_to_float, lambda g, n: {}))))
