"""QLinearMatMul, MatMulInteger, QGemm and ConvInteger against ONNX Runtime on
randomized configurations: batched broadcasting, 1-D operands, constant or computed B,
per-tensor, per-column and batched per-column b parameters, transposes, alpha, bias C,
8-bit and float outputs, in both requantization modes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import SANITIZE
from modelgen import RANGE, ConvConfig, combine, graph_model, random_conv_config
from numpy.typing import NDArray
from onnx import helper

import codegen
from codegen.api import run_generated
from codegen.options import Options
from codegen.oracle.verify import random_inputs
from codegen.pipeline import generate_sources

F32 = np.float32


def q8(rng: np.random.Generator, dtype: str, shape: Any) -> NDArray[Any]:
    lo, hi = RANGE[dtype]
    return rng.integers(lo, hi + 1, size=shape).astype(dtype)


def b_params(rng: np.random.Generator, kind: str, b_shape: tuple[int, ...],
             dtype: str) -> tuple[NDArray[Any], NDArray[Any]]:
    n = b_shape[-1]
    if kind == "tensor":
        shape: tuple[int, ...] = ()
    elif kind == "column":
        shape = (n,)
    else:  # batched per column
        shape = (*b_shape[:-2], 1, n)
    scale = rng.uniform(0.002, 0.03, size=shape).astype(F32)
    zp = q8(rng, dtype, shape) if rng.random() < 0.7 else np.zeros(shape, dtype)
    return scale, zp


def matmul_case(rng: np.random.Generator, i: int, op: str) -> tuple[Any, dict, dict, dict]:
    a_dtype = str(rng.choice(["uint8", "int8"]))
    # ORT implements no int8 x uint8 product.
    b_dtype = str(rng.choice(["uint8", "int8"])) if a_dtype == "uint8" else "int8"
    m, k, n = (int(v) for v in rng.integers(1, 9, 3))
    layout = rng.choice(["2d", "batched", "broadcast", "a1d", "b1d"])
    a_shape: tuple[int, ...] = (m, k)
    b_shape: tuple[int, ...] = (k, n)
    if layout == "batched":
        a_shape, b_shape = (2, 3, m, k), (2, 3, k, n)
    elif layout == "broadcast":
        a_shape, b_shape = (2, 1, m, k), (3, k, n)
    elif layout == "a1d":
        a_shape = (k,)
    elif layout == "b1d":
        b_shape = (k,)
    kinds = ["tensor"]
    if len(b_shape) == 2:
        kinds.append("column")
    if len(b_shape) > 2:
        kinds.append("batched")
    kind = str(rng.choice(kinds))
    b_const = bool(rng.random() < 0.7)
    p = f"m{i}_"
    inputs = {f"{p}a": (a_dtype, list(a_shape))}
    inits: dict[str, NDArray[Any]] = {}
    if b_const:
        inits[f"{p}b"] = q8(rng, b_dtype, b_shape)
    else:
        inputs[f"{p}b"] = (b_dtype, list(b_shape))
    b_scale, b_zp = b_params(rng, kind, b_shape, b_dtype)
    if op == "QLinearMatMul":
        acc = 150.0 * 150.0 * np.sqrt(k)
        inits.update({
            f"{p}as": np.array(rng.uniform(0.005, 0.05), F32), f"{p}az": q8(rng, a_dtype, ()),
            f"{p}bs": b_scale, f"{p}bz": b_zp,
            f"{p}ys": np.array(0.01 * 0.015 * acc / 60, F32), f"{p}yz": q8(rng, a_dtype, ()),
        })
        names = [f"{p}a", f"{p}as", f"{p}az", f"{p}b", f"{p}bs", f"{p}bz", f"{p}ys", f"{p}yz"]
        out_dtype = a_dtype
    else:
        names = [f"{p}a", f"{p}b"]
        if rng.random() < 0.8:
            inits[f"{p}az"] = q8(rng, a_dtype, ())
            names.append(f"{p}az")
            if rng.random() < 0.8:
                inits[f"{p}bz"] = b_zp
                names.append(f"{p}bz")
        out_dtype = "int32"
    node = helper.make_node(op, names, [f"{p}y"], name=f"{p}node")
    return node, inputs, inits, {f"{p}y": out_dtype}


def batch_model(op: str, seed: int, count: int = 12) -> Any:
    rng = np.random.default_rng(seed)
    return combine([matmul_case(rng, i, op) for i in range(count)], ms_domain=False)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("requant", ["float", "int"])
def test_qlinear_matmul(seed: int, requant: str) -> None:
    report = codegen.verify(batch_model("QLinearMatMul", seed), samples=2, seed=seed,
                            requant=requant, cflags=SANITIZE)
    assert report.ok, [o for o in report.outputs if o.mismatches]


@pytest.mark.parametrize("seed", range(3))
def test_matmul_integer(seed: int) -> None:
    report = codegen.verify(batch_model("MatMulInteger", 100 + seed), samples=2,
                            cflags=SANITIZE)
    assert report.ok, [o for o in report.outputs if o.mismatches]


def qgemm_case(rng: np.random.Generator, i: int, sizes: tuple[int, int, int] | None = None,
               fully_connected: bool = False) -> tuple[Any, dict, dict, dict]:
    """A random QGemm; fully_connected: one the fast path takes (B's zero point 0, A not
    transposed, a bias per column or none) with a quantized output."""
    a_dtype = str(rng.choice(["uint8", "int8"]))
    b_dtype = str(rng.choice(["uint8", "int8"])) if a_dtype == "uint8" else "int8"
    b_dtype = "int8" if fully_connected else b_dtype
    m, k, n = sizes if sizes is not None else (int(v) for v in rng.integers(1, 10, 3))
    trans_a, trans_b = int(rng.integers(0, 2)), int(rng.integers(0, 2))
    trans_a = 0 if fully_connected else trans_a
    a_shape = (k, m) if trans_a else (m, k)
    b_shape = (n, k) if trans_b else (k, n)
    p = f"g{i}_"
    per_column = bool(rng.random() < 0.5)
    b_scale = rng.uniform(0.002, 0.03, size=(n,) if per_column else ()).astype(F32)
    b_zp = np.zeros((n,) if per_column else (), b_dtype)
    if rng.random() < 0.5 and not fully_connected:
        b_zp = q8(rng, b_dtype, b_zp.shape)
    inits = {f"{p}as": np.array(rng.uniform(0.005, 0.05), F32), f"{p}az": q8(rng, a_dtype, ()),
             f"{p}b": q8(rng, b_dtype, b_shape), f"{p}bs": b_scale, f"{p}bz": b_zp}
    names = [f"{p}a", f"{p}as", f"{p}az", f"{p}b", f"{p}bs", f"{p}bz"]
    c_shape = [None, (), (n,), (1, n), (m, 1), (m, n)][int(rng.integers(0, 4 if fully_connected
                                                                           else 6))]
    output = ("quantized" if fully_connected
              else str(rng.choice(["quantized", "float", "float_scaled"])))
    if c_shape is not None or output != "float":
        names.append(f"{p}c" if c_shape is not None else "")
        if c_shape is not None:
            inits[f"{p}c"] = rng.integers(-30000, 30000, size=c_shape).astype(np.int32)
    out_dtype = "float32"
    if output != "float":
        inits[f"{p}ys"] = np.array(0.01 * 0.015 * 150 * 150 * np.sqrt(k) / 60, F32)
        names.append(f"{p}ys")
    if output == "quantized":
        inits[f"{p}yz"] = q8(rng, a_dtype, ())
        names.append(f"{p}yz")
        out_dtype = a_dtype
    attrs: dict[str, Any] = {"transA": trans_a, "transB": trans_b}
    if rng.random() < 0.5:
        attrs["alpha"] = float(rng.uniform(0.2, 3.0))
    node = helper.make_node("QGemm", names, [f"{p}y"], name=f"{p}node", domain="com.microsoft",
                            **attrs)
    return node, {f"{p}a": (a_dtype, list(a_shape))}, inits, {f"{p}y": out_dtype}


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("requant", ["float", "int"])
def test_qgemm(seed: int, requant: str) -> None:
    rng = np.random.default_rng(200 + seed)
    cases = [qgemm_case(rng, i) for i in range(12)]
    report = codegen.verify(combine(cases), samples=2, seed=seed, requant=requant,
                            cflags=SANITIZE)
    assert report.ok, [(c[0].name, o) for c, o in zip(cases, report.outputs, strict=True)
                       if o.mismatches]


def conv_integer_model(configs: list[ConvConfig], seed: int) -> Any:
    rng = np.random.default_rng(seed)
    nodes, inputs, inits, outputs = [], {}, {}, {}
    for i, cfg in enumerate(configs):
        p = f"c{i}_"
        w = q8(rng, cfg.w_dtype, (cfg.out_channels, cfg.channels // cfg.group, *cfg.kernel))
        inits[f"{p}w"] = w
        names = [f"{p}x", f"{p}w"]
        if rng.random() < 0.8:
            inits[f"{p}xz"] = q8(rng, cfg.x_dtype, ())
            names.append(f"{p}xz")
            if rng.random() < 0.7:
                inits[f"{p}wz"] = q8(rng, cfg.w_dtype, ())
                names.append(f"{p}wz")
        attrs: dict[str, Any] = {"strides": list(cfg.strides), "group": cfg.group}
        if cfg.auto_pad in ("SAME_UPPER", "SAME_LOWER", "VALID"):
            attrs["auto_pad"] = cfg.auto_pad
        else:
            attrs["dilations"] = list(cfg.dilations)
            if cfg.pads is not None:
                attrs["pads"] = list(cfg.pads)
        nodes.append(helper.make_node("ConvInteger", names, [f"{p}y"], name=f"{p}conv",
                                      **attrs))
        inputs[f"{p}x"] = (cfg.x_dtype, [cfg.batch, cfg.channels, *cfg.spatial])
        outputs[f"{p}y"] = "int32"
    return graph_model(nodes, inputs, outputs, inits, opset=13)


@pytest.mark.parametrize("seed", range(3))
def test_conv_integer(seed: int) -> None:
    rng = np.random.default_rng(300 + seed)
    configs = [random_conv_config(rng, 300 + seed * 100 + i) for i in range(16)]
    report = codegen.verify(conv_integer_model(configs, seed), samples=2, cflags=SANITIZE)
    assert report.ok, [(configs[i].describe(), o) for i, o in enumerate(report.outputs)
                       if o.mismatches]


@pytest.mark.parametrize("op", ["QLinearMatMul", "MatMulInteger"])
def test_exact_reference_rewrite_for_matrix_ops(op: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The exact reference used on CPUs whose ORT saturates u8 x s8 (forced here): B
    constant or computed, it must agree with the generated C bit for bit."""
    monkeypatch.setenv("ONNX2MCU_ORT_U8S8_SATURATES", "1")
    model = batch_model(op, 7)
    report = codegen.verify(model, samples=2, cflags=SANITIZE)
    assert report.reference == "the model with int8 weights moved to uint8"
    assert report.ok, [o for o in report.outputs if o.mismatches]


def test_exact_reference_rewrite_for_qgemm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ONNX2MCU_ORT_U8S8_SATURATES", "1")
    rng = np.random.default_rng(9)
    model = combine([qgemm_case(rng, i) for i in range(10)])
    assert codegen.verify(model, samples=2, cflags=SANITIZE).ok


@pytest.mark.parametrize("weights", ["int8", "int16"])
@pytest.mark.parametrize("requant", ["float", "int"])
def test_fast_matrix_products_are_bit_identical_to_the_reference(requant: str,
                                                                  weights: str) -> None:
    rng = np.random.default_rng(4242)
    model = combine([qgemm_case(rng, i) for i in range(24)] +
                    [matmul_case(rng, 100 + i, "QLinearMatMul") for i in range(24)])
    fast = generate_sources(model, Options(requant=requant, weights=weights))
    reference = generate_sources(model, Options(requant=requant, kernels="reference"))
    fc = [c.function for c in fast.program.calls if c.function.startswith("q8_fc_")]
    assert fc and all(("_w16_" in f) == (weights == "int16") for f in fc), fc
    assert not any(c.function.startswith("q8_fc_") for c in reference.program.calls)
    data = random_inputs(fast.program.inputs, 2, seed=5)
    for ours, theirs in zip(run_generated(fast, data, SANITIZE),
                            run_generated(reference, data, SANITIZE), strict=True):
        for name, value in ours.items():
            assert np.array_equal(value.view(np.uint8), theirs[name].view(np.uint8)), name


def qdq_activation_matmul(a_shape: list[int], b_shape: list[int], dtype: str) -> Any:
    """Attention's Q*K^T and scores*V as a QDQ quantizer writes them: two dequantized
    activations, broadcast over batch and heads."""
    zt = np.uint8 if dtype == "uint8" else np.int8
    inits = {"sa": np.array(0.05, np.float32), "za": np.array(3, zt),
             "sb": np.array(0.04, np.float32), "zb": np.array(-2 if zt is np.int8 else 130, zt),
             "sy": np.array(0.3, np.float32), "zy": np.array(5, zt)}
    nodes = [helper.make_node("DequantizeLinear", ["a", "sa", "za"], ["af"]),
             helper.make_node("DequantizeLinear", ["b", "sb", "zb"], ["bf"]),
             helper.make_node("MatMul", ["af", "bf"], ["yf"]),
             helper.make_node("QuantizeLinear", ["yf", "sy", "zy"], ["y"])]
    return graph_model(nodes, {"a": (dtype, a_shape), "b": (dtype, b_shape)}, {"y": dtype},
                       inits)


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
@pytest.mark.parametrize("shapes", [([2, 3, 4, 5], [2, 3, 5, 6]), ([2, 1, 4, 5], [3, 5, 6]),
                                    ([4, 5], [2, 5, 3]), ([1, 2, 8, 4], [1, 2, 4, 8])])
def test_qdq_batched_matmul_of_activations(dtype: str,
                                           shapes: tuple[list[int], list[int]]) -> None:
    report = codegen.verify(qdq_activation_matmul(*shapes, dtype), samples=2,
                            cflags=SANITIZE)
    assert report.ok, report.outputs
