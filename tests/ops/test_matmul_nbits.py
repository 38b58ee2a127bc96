"""Float products that ONNX Runtime 1.32 rewrites into MatMulNBits (8-bit constant
weights, A quantized to int8 per block of 32 at run time; codegen/ops/matmul_nbits.py,
runtime_c/matmul_nbits_f32.c) against ORT, bit for bit: K across the block boundaries
(1 to 257: groups of 4 blocks, leftover blocks, padding), N with and without a tail of
n % 4 columns, per-tensor and per-column scales, int8 and uint8 weights with zero
points, Gemm biases, rank-3 A, rows of zeros and of tiny values; and where ORT does not
rewrite (it then stays a float product)."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from conftest import SANITIZE, in_qemu, skip_where_ort_differs
from modelgen import graph_model
from onnx import helper

import codegen
from codegen.options import Options
from codegen.pipeline import generate_sources

F32 = np.float32


def nbits_model(k: int, n: int, seed: int, op: str = "MatMul", per_column: bool = True,
                dtype: str = "int8", zero_point: bool = False, a_shape: tuple[int, ...] = (3,),
                scale_shape: tuple[int, ...] | None = None) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    lo, hi = (-128, 127) if dtype == "int8" else (0, 255)
    shape = (n,) if per_column else ()
    inits = {"w": rng.integers(lo, hi + 1, (k, n)).astype(dtype),
             "s": rng.uniform(0.001, 0.05, scale_shape or shape).astype(F32)}
    inputs = ["w", "s"]
    if zero_point:
        inits["z"] = rng.integers(lo, hi + 1, scale_shape or shape).astype(dtype)
        inputs.append("z")
    nodes = [helper.make_node("DequantizeLinear", inputs, ["wf"], axis=1)]
    if op == "Gemm":
        inits["b"] = rng.normal(0, 1, n).astype(F32)
        nodes.append(helper.make_node("Gemm", ["x", "wf", "b"], ["y"], name="product"))
    else:
        nodes.append(helper.make_node("MatMul", ["x", "wf"], ["y"], name="product"))
    return graph_model(nodes, {"x": ("float32", [*a_shape, k])}, {"y": "float32"}, inits,
                       opset=17)


def inputs_for(model: onnx.ModelProto, seed: int) -> dict[str, np.ndarray]:
    """Rows of ordinary values, one of zeros, one of tiny values and one with a single
    large value (each block's amax decides its scale)."""
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 1.5, shape).astype(F32)
    flat = x.reshape(-1, shape[-1])
    if flat.shape[0] >= 3:
        flat[1] = 0.0
        flat[2] *= F32(1e-30)
    flat[0, rng.integers(shape[-1])] = F32(60.0)
    return {"x": x}


def runs_as_nbits(model: onnx.ModelProto, tmp_path: object) -> bool:
    options = ort.SessionOptions()
    options.optimized_model_filepath = str(tmp_path / "optimized.onnx")  # type: ignore[operator]
    ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return any(n.op_type == "MatMulNBits" for n in onnx.load(options.optimized_model_filepath)
               .graph.node)


CASES = [(1, 1), (7, 5), (16, 8), (31, 4), (32, 3), (33, 9), (64, 16), (100, 7), (128, 12),
         (160, 6), (257, 13)]


@pytest.mark.ort_kernels("matmul-nbits-avx512")
@pytest.mark.parametrize("k,n", CASES)
def test_matmul_nbits_matches_ort(k: int, n: int) -> None:
    model = nbits_model(k, n, seed=k * 31 + n, per_column=n % 2 == 1)
    calls = generate_sources(model, Options()).program.calls
    assert [c.function for c in calls] == ["q8_matmul_nbits_f32"]
    report = codegen.verify(model, inputs=inputs_for(model, k + n), cflags=SANITIZE)
    assert report.ok, report.outputs


@pytest.mark.ort_kernels("matmul-nbits-avx512")
@pytest.mark.parametrize("case", ["gemm bias", "uint8 zero points", "int8 zero points",
                                  "rank-3 A"])
def test_matmul_nbits_variants(case: str) -> None:
    model = {"gemm bias": lambda: nbits_model(70, 10, 1, op="Gemm"),
             "uint8 zero points": lambda: nbits_model(45, 6, 2, dtype="uint8",
                                                      zero_point=True),
             "int8 zero points": lambda: nbits_model(129, 5, 3, zero_point=True,
                                                     per_column=False),
             "rank-3 A": lambda: nbits_model(40, 4, 4, a_shape=(2, 3))}[case]()
    report = codegen.verify(model, inputs=inputs_for(model, 9), cflags=SANITIZE)
    assert report.ok, report.outputs


def test_a_scale_of_shape_one_is_a_float_product(tmp_path: object) -> None:
    """A scale of shape [1] (neither a scalar nor one per column): ORT keeps the float
    product, and so does onnx2mcu."""
    model = nbits_model(20, 3, 5, scale_shape=(1,))
    assert not runs_as_nbits(model, tmp_path)
    calls = generate_sources(model, Options()).program.calls
    assert [c.function for c in calls] == ["q8_gemm_f32"]
    assert codegen.verify(model, cflags=SANITIZE).ok


def test_the_cases_are_rewritten_by_ort(tmp_path: object) -> None:
    assert runs_as_nbits(nbits_model(33, 9, 1), tmp_path)
    assert runs_as_nbits(nbits_model(70, 10, 1, op="Gemm"), tmp_path)


@in_qemu
@pytest.mark.parametrize("board", ["cortex-m4f", "cortex-m0plus"])
def test_matmul_nbits_on_cortex_m(board: str) -> None:
    model = nbits_model(150, 7, 8, op="Gemm", zero_point=True)
    skip_where_ort_differs(model)
    report = codegen.verify(model, inputs=inputs_for(model, 3), board=board)
    assert report.ok, report.outputs
