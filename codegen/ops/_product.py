"""The integer and float matrix products parsed once (ops/matmul.py): their shapes with
numpy broadcasting, b's per-column quantization, and the typed spec that their lowering
consumes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from codegen.core.ir import Node, Tensor
from codegen.errors import ModelError


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


@dataclass(frozen=True)
class ProductSpec:
    """An integer product, parsed: its shape and operand strides, the zero points of A and
    (per column, widened to b_scale's length) of B, the scale of the requantization or
    float output per column (None: int32), the output zero point, and QGemm's bias C."""

    shape: MatmulShape
    a_strides: tuple[int, int]
    b_strides: tuple[int, int]
    a_zp: int
    b_zp: ColumnParams
    scale: NDArray[Any] | None = None
    y_zp: int = 0
    bias: NDArray[Any] | None = None
    bias_strides: tuple[int, int] = (0, 0)
    trans_a: bool = False
    trans_b: bool = False
    # The tensor holding A's zero point when it is computed at run time (by a
    # DynamicQuantizeLinear); a_zp is then 0.
    a_zp_tensor: str | None = None
