"""ORT's MatMulNBits rewrite of a float product with 8-bit constant weights (its
DQMatMulToMatMulNBits fusion at ORT_ENABLE_EXTENDED and above, 1.32): B =
DequantizeLinear(int8 or uint8 constant [K, N]) per tensor (a scalar scale) or per
column (scale [N], axis 1), read only by this MatMul or Gemm (alpha 1, A and B not
transposed, a bias [N] with beta 1; a MatMul + Add ORT fused into one), becomes
com.microsoft MatMulNBits with bits 8, blocks of 32 and accuracy level 4: A is quantized
to int8 per row and block at run time and the products are summed in integers
(runtime_c/matmul_nbits_f32.c, MLAS's AVX-512 kernels). Measured on ORT 1.32, the rewrite
does not happen when A is dequantized from 8 bits too (the QDQ selectors take the unit
first: MatMulIntegerToFloat, or Gemm left in float), when the product is quantized to
8 bits (directly or through a Relu), for a scale of shape [1], an axis other than 1, or
a DequantizeLinear with another reader; it does with 16-bit activations (A16W8)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from codegen.core.ir import Graph, Node, Tensor
from codegen.core.program import CArray, CRef, CStruct, KernelCall

from ._float import producer, refuse
from .kernels import kernel

F32 = np.float32
BLOCK = 32
SOURCES = ("matmul_nbits_f32.c",)
INT8_TYPES = ("uint8", "int8")


@dataclass(frozen=True)
class NbitsWeights:
    """B as MatMulNBits holds it: unsigned values [K, N], scale and zero point per column."""

    values: NDArray[Any]  # uint8 [K, N]: int8 weights + 128
    scale: NDArray[np.float32]  # [N]
    zero_point: NDArray[np.int64]  # [N], unsigned likewise


def quantized_after(graph: Graph, tensor: str, through: tuple[str, ...]) -> bool:
    """Is every reader of `tensor` a QuantizeLinear to 8 bits, or one of `through` whose
    output is (one level), and `tensor` not a graph output?"""
    readers = [n for n in graph.nodes if tensor in n.inputs]
    if not readers or tensor in graph.outputs:
        return False
    for reader in readers:
        if reader.domain:
            return False
        if reader.op_type == "QuantizeLinear":
            if graph.tensors[reader.outputs[0]].dtype not in INT8_TYPES:
                return False
            continue
        if reader.op_type not in through or not quantized_after(graph, reader.outputs[0], ()):
            return False
    return True


def _gemm_takes(node: Node, graph: Graph, n: int) -> bool:
    """A Gemm that is a MatMul (plus a bias [N]) for ORT's rewrite."""
    attrs = node.attrs
    if float(attrs.get("alpha", 1.0)) != 1.0 or attrs.get("transA", 0) or \
            attrs.get("transB", 0):
        return False
    bias = node.input(2)
    return bias is None or (float(attrs.get("beta", 1.0)) == 1.0 and
                            graph.tensors[bias].shape == (n,))


def nbits_weights(node: Node, graph: Graph) -> NbitsWeights | None:
    """B as MatMulNBits holds it, where ORT 1.32 rewrites this float MatMul or Gemm."""
    dq = producer(graph, node.inputs[1])
    if dq is None or dq.op_type != "DequantizeLinear" or dq.domain or not all(
            i in graph.constants for i in dq.inputs if i):
        return None
    readers = [n for n in graph.nodes if dq.outputs[0] in n.inputs]
    if len(readers) != 1 or dq.outputs[0] in graph.outputs or dq.attrs.get("block_size", 0):
        return None
    w = graph.constants[dq.inputs[0]]
    scale = graph.constants[dq.inputs[1]]
    zp_name = dq.input(2)
    zp = graph.constants[zp_name] if zp_name else None
    if str(w.dtype) not in INT8_TYPES or w.ndim != 2 or scale.dtype != np.float32:
        return None
    n = w.shape[1]
    per_column = scale.ndim == 1 and scale.size == n and int(dq.attrs.get("axis", 1)) == 1
    if not (scale.ndim == 0 or per_column) or (zp is not None and zp.shape != scale.shape):
        return None
    a = producer(graph, node.inputs[0])
    if a is not None and a.op_type == "DequantizeLinear" and not a.domain and \
            graph.tensors[a.inputs[0]].dtype in INT8_TYPES:
        return None
    if node.op_type == "Gemm" and not _gemm_takes(node, graph, n):
        return None
    if quantized_after(graph, node.outputs[0], through=("Relu",)):
        return None
    offset = 128 if w.dtype == np.int8 else 0
    zeros = np.zeros(n, np.int64) if zp is None else \
        np.broadcast_to(zp.astype(np.int64).reshape(-1), (n,))
    return NbitsWeights((w.astype(np.int64) + offset).astype(np.uint8),
                        np.broadcast_to(scale.astype(F32).reshape(-1), (n,)).astype(F32),
                        zeros + offset)


def nbits_traits(node: Node, graph: Graph) -> frozenset[str]:
    """"matmul-nbits" where ORT runs the float product as MatMulNBits (its kernel is chosen
    by the CPU: codegen/oracle/cpu.py)."""
    return frozenset({"matmul-nbits"}) if nbits_weights(node, graph) is not None else \
        frozenset()


def lower_matmul_nbits(node: Node, graph: Graph, weights: NbitsWeights, a: Tensor, y: Tensor,
                       rows: int, bias: NDArray[Any] | None) -> KernelCall:
    """The kernel call of a product ORT runs as MatMulNBits (A [rows, K], y [rows, N])."""
    k, n = weights.values.shape
    if bias is not None and bias.shape != (n,):
        raise refuse(node, f"a bias of shape {list(bias.shape)} (ORT's MatMulNBits takes [N])")
    blocks = -(-k // BLOCK)
    padded = np.zeros((blocks * BLOCK, n), np.uint8)
    padded[:k] = weights.values
    sums = (-weights.scale * weights.zero_point.astype(F32)).astype(F32)
    arrays = [CArray("weights", "uint8_t", np.ascontiguousarray(padded.T).reshape(-1)),
              CArray("scale", "float", weights.scale),
              CArray("weight_sums", "float", sums)]
    if bias is not None:
        arrays.append(CArray("bias", "float", bias.astype(F32).reshape(-1)))
    params = CStruct("q8_matmul_nbits_params", (
        ("m", rows), ("k", k), ("n", n), ("blocks", blocks), ("weights", CRef("weights")),
        ("scale", CRef("scale")), ("weight_sums", CRef("weight_sums")),
        ("bias", CRef("bias") if bias is not None else None)))
    return KernelCall("q8_matmul_nbits_f32", node.name, (a.name,), (y.name,), params,
                      tuple(arrays), SOURCES, rows * n * k,
                      scratch_bytes=kernel("matmul_nbits_f32").scratch_bytes(params))
