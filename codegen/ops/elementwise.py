"""com.microsoft QLinearAdd and QLinearMul with numpy broadcasting.

QLinearAdd reproduces ORT's AVX2 kernel: raw values times the ratios to the output
scale, with fused multiply-adds. Which operand the kernel treats as "first" changes the
rounding: ORT's broadcaster passes B first when it decides A is the scalar operand, a
decision made once per operator from the two input shapes (port of its Broadcaster,
measured exhaustively against ORT 1.32)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from codegen.arith.glibc_math import glibc_powf
from codegen.arith.numerics import fma32
from codegen.arith.requant import float32_mult_exp
from codegen.core.ir import Graph, Node, QuantParams, Tensor
from codegen.core.program import Alias, CArray, CFloat, CInts, CRef, CStruct, KernelCall
from codegen.errors import ModelError, UnsupportedError

from . import (
    ELEMENTWISE_ROWS,
    BandRule,
    Fusion,
    Inferred,
    LoweringOptions,
    OpDef,
    RowAccess,
    register,
    requant_suffix,
)
from ._common import (
    check_dtype,
    check_finite_scales,
    input_tensor,
    kernel_suffix,
    per_tensor_quant,
    reject_unknown_attrs,
)
from ._float import FLOAT_TYPES, f32, float_input, lower_only_tabulated, refuse
from ._qdq import build_binary
from .kernels import kernel

SOURCES = ("elementwise.c",)
INT8_TYPES = ("uint8", "int8")
MAX_RANK = 8
F32 = np.float32


@dataclass(frozen=True)
class BinarySpec:
    """A binary elementwise operator: its operands' shapes, the broadcast output shape,
    and for QLinearAdd/QLinearMul the per-tensor quantization of A, B and C."""

    a_shape: tuple[int, ...]
    b_shape: tuple[int, ...]
    shape: tuple[int, ...]
    a_scale: float = 0.0
    a_zero_point: int = 0
    b_scale: float = 0.0
    b_zero_point: int = 0
    c_scale: float = 0.0
    c_zero_point: int = 0


@dataclass(frozen=True)
class PowSpec:
    exponent: float | None  # a scalar constant ORT computes as a kernel does; None: not


def broadcast_shape(node: Node, a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    try:
        return tuple(int(d) for d in np.broadcast_shapes(a, b))
    except ValueError:
        raise ModelError(f"{node.describe()}: shapes {list(a)} and {list(b)} do not "
                         "broadcast") from None


def broadcast_struct(shape: tuple[int, ...], a: tuple[int, ...],
                     b: tuple[int, ...]) -> CStruct:
    """q8_broadcast: per output axis, each input's stride (0 where it is broadcast)."""
    def strides(operand: tuple[int, ...]) -> list[int]:
        padded = (1,) * (len(shape) - len(operand)) + operand
        dense = [int(np.prod(padded[d + 1:], dtype=np.int64)) for d in range(len(padded))]
        return [0 if padded[d] == 1 else dense[d] for d in range(len(padded))]

    pad = [0] * (MAX_RANK - len(shape))
    out = list(shape) or [1]
    return CStruct("q8_broadcast", (
        ("rank", max(len(shape), 1)),
        ("out_shape", CInts(tuple(out + pad[: MAX_RANK - len(out)]))),
        ("a_stride", CInts(tuple((strides(a) or [0]) + pad[: MAX_RANK - max(len(shape), 1)]))),
        ("b_stride", CInts(tuple((strides(b) or [0]) + pad[: MAX_RANK - max(len(shape), 1)]))),
    ))


def ort_input0_is_scalar(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """Whether ORT's Broadcaster runs its 'input 0 is scalar' functor: the first delta of
    A's iterator is 0. That delta is fixed by the innermost axis that is not 1 in both
    inputs (the outermost common axis when all are 1); with a rank-0 input, by the other
    input's last axis."""
    if not a:
        return True
    if not b:
        return a[-1] <= 1
    common = min(len(a), len(b))
    for index in range(common):
        da, db = a[-1 - index], b[-1 - index]
        dim = min(da, db) if min(da, db) == 0 else max(da, db)
        if dim <= 1 and index + 1 < common:
            continue
        return da <= 1
    raise AssertionError("unreachable: the loop returns at its last axis")


def binary_quant(node: Node, graph: Graph, dtype: str) -> tuple[float, int, float, int,
                                                                float, int]:
    """sA, zA, sB, zB, sC, zC of QLinearAdd/QLinearMul (zero points may be omitted)."""
    return (*per_tensor_quant(node, graph, 1, 2, "A", dtype),
            *per_tensor_quant(node, graph, 4, 5, "B", dtype),
            *per_tensor_quant(node, graph, 6, 7, "C", dtype))


def infer_binary(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, set())
    a = input_tensor(node, graph, 0, "A")
    b = input_tensor(node, graph, 3, "B")
    check_dtype(node, "input A", a, INT8_TYPES)
    check_dtype(node, "input B", b, (a.dtype,))
    shape = broadcast_shape(node, a.shape, b.shape)
    if len(shape) > MAX_RANK:
        raise UnsupportedError(f"{node.describe()}: rank {len(shape)} is above {MAX_RANK}")
    sa, za, sb, zb, sc, zc = binary_quant(node, graph, a.dtype)
    y = Tensor(node.outputs[0], a.dtype, shape, QuantParams((sc,), (zc,)))
    return Inferred([y], {a.name: QuantParams((sa,), (za,)), b.name: QuantParams((sb,), (zb,))},
                    BinarySpec(a.shape, b.shape, shape, sa, za, sb, zb, sc, zc))


def qadd_constants(sa: float, za: int, sb: float, zb: int, sc: float, zc: int,
                   b_first: bool) -> tuple[np.float32, np.float32, np.float32]:
    """ORT's ratios and fixed part: r = f32(s / sC) and, with (x, y) the kernel's first
    and second operands, fixed = f32(zC - fma(r_x, z_x, f32(r_y * z_y)))."""
    ra, rb = F32(F32(sa) / F32(sc)), F32(F32(sb) / F32(sc))
    (rx, zx), (ry, zy) = ((rb, zb), (ra, za)) if b_first else ((ra, za), (rb, zb))
    fixed = F32(F32(zc) - fma32(rx, F32(zx), F32(ry * F32(zy))))
    return ra, rb, fixed


def qadd_bounded(ra: np.float32, rb: np.float32, fixed: np.float32) -> bool:
    """|t| < 2^30 for every pair of raw 8-bit values (|x| <= 255), with a factor 2 over the
    float rounding: no sum reaches cvtps2dq's overflow, so VCVTR's saturation agrees."""
    bound = 255.0 * abs(float(ra)) + 255.0 * abs(float(rb)) + abs(float(fixed))
    return 2.0 * bound < 2.0**30


def lower_qadd(node: Node, graph: Graph, spec: BinarySpec,
        options: LoweringOptions) -> Sequence[
        KernelCall | Alias]:
    a, b = graph.tensors[node.inputs[0]], graph.tensors[node.inputs[3]]
    y = graph.tensors[node.outputs[0]]
    sa, za, sb, zb = spec.a_scale, spec.a_zero_point, spec.b_scale, spec.b_zero_point
    sc, zc = spec.c_scale, spec.c_zero_point
    b_first = ort_input0_is_scalar(spec.a_shape, spec.b_shape)
    with np.errstate(over="ignore"):
        ratios = (F32(F32(sa) / F32(sc)), F32(F32(sb) / F32(sc)))
    check_finite_scales(node, "scale ratios A_scale / C_scale and B_scale / C_scale", ratios)
    ra, rb, fixed = qadd_constants(sa, za, sb, zb, sc, zc, b_first)
    check_finite_scales(node, "fixed part of the sum", fixed)
    integer = options.requant == "int"
    bounded = qadd_bounded(ra, rb, fixed)
    arrays: tuple[CArray, ...] = ()
    outer_mult = outer_exp = 0
    if not integer and bounded and options.dsp and not b_first and not options.mve:
        # The bounded float path on FPU+DSP cores reads the inner fused multiply-add of
        # each byte of b from the table instead of converting and multiplying it (Helium
        # cores compute four at a time instead).
        arrays = (CArray("inner_table", "uint32_t", qadd_inner_table(rb, fixed, a.dtype)),)
    # The host's float kernel decides from the integer tables too: two table reads per
    # element instead of two fmaf calls, which x86-64's baseline makes library calls.
    tables = integer or (not options.mcu and options.kernels == "fast")
    if tables:
        # The inner fused multiply-add of each byte value, as float32 bits; the outer one
        # is rounded with integers at run time.
        inner = qadd_inner_table(rb if not b_first else ra, fixed, a.dtype)
        arrays = (CArray("inner_table", "uint32_t", inner),)
        mult, exp = float32_mult_exp(np.array([ra if not b_first else rb], F32))
        outer_mult, outer_exp = int(mult[0]), int(exp[0])
        fast = qadd_fast_table(ra if not b_first else rb, inner, a.dtype)
        if fast is not None:
            arrays += (CArray("fast_table", "int32_t", fast),)
    params = CStruct("q8_qadd_params", (
        ("shape", broadcast_struct(spec.shape, spec.a_shape, spec.b_shape)),
        ("b_first", int(b_first)),
        ("ratio_a", CFloat(float(ra))), ("ratio_b", CFloat(float(rb))),
        ("fixed", CFloat(float(fixed))),
        ("inner_table", CRef("inner_table") if arrays else None),
        ("outer_mult", outer_mult), ("outer_exp", outer_exp), ("bounded", int(bounded)),
        ("fast_table", CRef("fast_table") if len(arrays) > 1 else None)))
    function = kernel("qadd").symbol(x=kernel_suffix(a.dtype),
                                     rq=requant_suffix(options.requant))
    return [KernelCall(function, node.name, (a.name, b.name),
                       (y.name,), params, arrays, SOURCES, in_place=same_shape_input(a, b, y))]


def same_shape_input(a: Tensor, b: Tensor, y: Tensor) -> int | None:
    """The input the output can be written over (in place): one of y's shape, read at the
    index the kernel writes (a broadcast input is read at other indices)."""
    if a.shape == y.shape:
        return 0
    if b.shape == y.shape:
        return 1
    return None


# The fast table's fixed point: 20 fraction bits; entries below 2^29 keep every sum of
# two inside int32 with the bias the kernel adds (2^30).
QADD_FAST_FRACTION_BITS = 20
QADD_FAST_LIMIT = 2**29


def qadd_fast_table(outer_ratio: np.float32, inner_bits: NDArray[Any],
                    dtype: str) -> NDArray[Any] | None:
    """For the integer QLinearAdd: floor(x * outer_ratio * 2^20) for the 256 raw bytes of
    the outer operand, then floor(inner * 2^20) for the inner table's 256 float32 values,
    exactly (a byte times a float32 and a float32 are exact in double, and so is their
    scaling by 2^20). The kernel decides an element from their sum unless it lies near a
    half (elementwise.c), or None when an entry reaches 2^29 (|t| of 512 or more)."""
    raw = np.arange(256, dtype=np.int64)
    values = raw.astype(np.uint8).view(np.int8).astype(np.int64) if dtype == "int8" else raw
    scale = float(2**QADD_FAST_FRACTION_BITS)
    outer = np.floor(values.astype(np.float64) * float(outer_ratio) * scale)
    inner = np.floor(inner_bits.astype(np.uint32).view(F32).astype(np.float64) * scale)
    table = np.concatenate([outer, inner])
    if not np.all(np.isfinite(table)) or np.max(np.abs(table)) >= QADD_FAST_LIMIT:
        return None
    return table.astype(np.int32)


def qadd_inner_table(ratio: np.float32, fixed: np.float32, dtype: str) -> NDArray[Any]:
    """fmaf(x, ratio, fixed) for the 256 raw bytes x (int8 by bit pattern), as bits."""
    raw = np.arange(256, dtype=np.int64)
    values = raw.astype(np.uint8).view(np.int8).astype(np.int64) if dtype == "int8" else raw
    table = np.array([fma32(F32(v), ratio, fixed) for v in values], dtype=F32)
    return table.view(np.uint32)


def lower_qmul(node: Node, graph: Graph, spec: BinarySpec,
        options: LoweringOptions) -> Sequence[
        KernelCall | Alias]:
    a, b = graph.tensors[node.inputs[0]], graph.tensors[node.inputs[3]]
    y = graph.tensors[node.outputs[0]]
    with np.errstate(over="ignore"):
        scale = F32(F32(F32(spec.a_scale) * F32(spec.b_scale)) / F32(spec.c_scale))
    check_finite_scales(node, "output scale A_scale * B_scale / C_scale", scale)
    mult, exp = float32_mult_exp(np.array([scale], F32))
    params = CStruct("q8_qmul_params", (
        ("shape", broadcast_struct(spec.shape, spec.a_shape, spec.b_shape)),
        ("a_zero_point", spec.a_zero_point), ("b_zero_point", spec.b_zero_point),
        ("scale", CFloat(float(scale))), ("y_zero_point", spec.c_zero_point),
        ("scale_mult", int(mult[0])), ("scale_exp", int(exp[0]))))
    function = kernel("qmul").symbol(x=kernel_suffix(a.dtype),
                                     rq=requant_suffix(options.requant))
    return [KernelCall(function, node.name, (a.name, b.name),
                       (y.name,), params, (), SOURCES, y.numel,
                       in_place=same_shape_input(a, b, y))]


BINARY_CONSTANTS = frozenset({1, 2, 4, 5, 6, 7})


def add_row_access(node: Node, graph: Graph) -> dict[int, RowAccess] | None:
    """A sum without broadcasting reads row r of both addends for its row r."""
    y = graph.tensors[node.outputs[0]]
    slots = (0, 3)
    if any(graph.tensors[node.inputs[i]].shape != y.shape for i in slots):
        return None
    return {i: ELEMENTWISE_ROWS for i in slots}


register(OpDef("QLinearAdd", "com.microsoft", infer_binary, lower_qadd,
               constant_inputs=BINARY_CONSTANTS, data_dtypes=frozenset(INT8_TYPES),
               bands=BandRule((0, 3), add_row_access)))
register(OpDef("QLinearMul", "com.microsoft", infer_binary, lower_qmul,
               constant_inputs=BINARY_CONSTANTS, data_dtypes=frozenset(INT8_TYPES)))


def infer_float_binary(node: Node, graph: Graph) -> Inferred:
    a, b = float_input(node, graph, 0, "A"), float_input(node, graph, 1, "B")
    shape = broadcast_shape(node, a.shape, b.shape)
    return Inferred([Tensor(node.outputs[0], "float32", shape)],
                    spec=BinarySpec(a.shape, b.shape, shape))


def lower_float_binary(node: Node, graph: Graph, spec: BinarySpec,
        options: LoweringOptions) -> Sequence[
        KernelCall | Alias]:
    a, b = graph.tensors[node.inputs[0]], graph.tensors[node.inputs[1]]
    y = graph.tensors[node.outputs[0]]
    shape = broadcast_struct(spec.shape, spec.a_shape, spec.b_shape)
    params = CStruct("q8_binary_f32_params", (("shape", shape),))
    function = {"Add": "q8_add_f32", "Mul": "q8_mul_f32", "Sub": "q8_sub_f32",
                "Div": "q8_div_f32", "PRelu": "q8_prelu_f32"}[node.op_type]
    return [KernelCall(function, node.name, (a.name, b.name), (y.name,), params, (),
                       ("elementwise_f32.c",))]


def _add(node: Node, operands: list[NDArray[np.float32]]) -> NDArray[np.float32]:
    return f32(operands[0] + operands[1])


def _sub(node: Node, operands: list[NDArray[np.float32]]) -> NDArray[np.float32]:
    return f32(operands[0] - operands[1])


def _mul(node: Node, operands: list[NDArray[np.float32]]) -> NDArray[np.float32]:
    return f32(operands[0] * operands[1])


def _div(node: Node, operands: list[NDArray[np.float32]]) -> NDArray[np.float32]:
    with np.errstate(divide="ignore", invalid="ignore"):
        return f32(operands[0] / operands[1])


def scalar_exponent(node: Node, graph: Graph) -> float | None:
    """Pow's exponent where it is one float32 constant (or an integer 2 or 3, which ORT
    squares or cubes whatever its type); None otherwise."""
    value = graph.constants.get(node.inputs[1])
    if value is None or value.size != 1:
        return None
    exponent = float(value.reshape(-1)[0])
    if value.dtype == np.float32 or exponent in (2.0, 3.0):
        return exponent
    return None


def _pow(node: Node, operands: list[NDArray[np.float32]]) -> NDArray[np.float32] | None:
    """ORT's Pow by a scalar exponent: x * x for 2, (x * x) * x for 3, otherwise the C
    library's powf (glibc's algorithm, codegen/arith/glibc_math.py). An exponent that varies
    over x takes ORT's broadcasting, which is not reproduced (None)."""
    x, exponent = operands
    if exponent.size != 1:
        return None
    e = F32(exponent.reshape(-1)[0])
    if e in (F32(2.0), F32(3.0)):
        square = f32(x * x)
        return square if e == F32(2.0) else f32(square * x)
    return f32([glibc_powf(v, e) for v in x.reshape(-1)]).reshape(x.shape)


def infer_float_pow(node: Node, graph: Graph) -> Inferred:
    inferred = infer_float_binary(node, graph)
    inferred.spec = PowSpec(scalar_exponent(node, graph))
    return inferred


def lower_float_pow(node: Node, graph: Graph, spec: PowSpec,
                    options: LoweringOptions) -> Sequence[KernelCall | Alias]:
    x, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    exponent = spec.exponent
    if exponent is None or y.shape != x.shape:
        raise refuse(node, "only a scalar constant exponent (float32, or 2 or 3) is "
                     "supported; ORT's broadcast Pow and its double-precision pow for other "
                     "exponent types are not reproduced")
    params = CStruct("q8_unary_f32_params", (("size", x.numel), ("alpha", CFloat(exponent)),
                                             ("beta", CFloat(0.0))))
    return [KernelCall("q8_pow_f32", node.name, (x.name,), (y.name,), params, (),
                       ("activation_f32.c", "libm.c"))]


def _prelu(node: Node, operands: list[NDArray[np.float32]]) -> NDArray[np.float32]:
    """ORT's PRelu: x where x > 0, else x * slope (one slope: torch's PReLU())."""
    x, slope = operands
    return f32(np.where(x > 0, x, f32(x * slope)))


def _max(node: Node, operands: list[NDArray[np.float32]]) -> NDArray[np.float32]:
    return f32(np.maximum(operands[0], operands[1]))


def _min(node: Node, operands: list[NDArray[np.float32]]) -> NDArray[np.float32]:
    return f32(np.minimum(operands[0], operands[1]))


def infer_float_pair(node: Node, graph: Graph) -> Inferred:
    """Max and Min of two operands (the variadic forms with other counts are refused)."""
    if len([name for name in node.inputs if name]) != 2:
        raise UnsupportedError(f"{node.describe()}: {node.op_type} of "
                               f"{len(node.inputs)} inputs; two are supported")
    return infer_float_binary(node, graph)


# One IEEE operation each, as ORT's Eigen kernels compute them.
for _op, _fn in (("Add", _add), ("Mul", _mul)):
    register(OpDef(_op, "", infer_float_binary, lower_float_binary, versions=(7, 13, 14),
                   data_dtypes=FLOAT_TYPES, float_island=True,
                   fusion=Fusion(f"QLinear{_op}", "com.microsoft", build_binary,
                                 dequantized_inputs=2), elementwise=_fn))
# Sub and Div are one IEEE operation too (the input adapter tf2onnx --dequantize writes:
# Cast, Sub, Mul); the others run only inside a table.
for _op, _fn in (("Sub", _sub), ("Div", _div)):
    register(OpDef(_op, "", infer_float_binary, lower_float_binary, versions=(7, 13, 14),
                   data_dtypes=FLOAT_TYPES, float_island=True, elementwise=_fn))
# Pow by a scalar constant: a float kernel (x * x, (x * x) * x or glibc's powf) and the
# same values in tables; the exponent is a constant input.
register(OpDef("Pow", "", infer_float_pow, lower_float_pow, versions=(7, 12, 13, 15),
               data_dtypes=FLOAT_TYPES, float_island=True, elementwise=_pow,
               constant_inputs=frozenset({1})))
# PRelu by a slope broadcast to x (unidirectionally, as ONNX defines it): in tables, and a
# float kernel.
register(OpDef("PRelu", "", infer_float_binary, lower_float_binary, versions=(7, 9, 16),
               data_dtypes=FLOAT_TYPES, float_island=True, elementwise=_prelu))
for _op, _table_fn in (("Max", _max), ("Min", _min)):
    register(OpDef(_op, "", infer_float_pair, lower_only_tabulated, versions=(8, 12, 13),
                   data_dtypes=FLOAT_TYPES, float_island=True, elementwise=_table_fn))
