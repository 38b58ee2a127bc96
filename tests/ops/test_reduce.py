"""ReduceMean and ReduceSum as float islands (over trailing axes ORT's Eigen summation
order; over leading axes rows added in order; over inner axes ORT's ones-vector SGEMM;
runtime_c/reduce.c), and ReduceMax/ReduceMin on every dtype over any adjacent axes,
against ONNX Runtime: randomized shapes (row lengths of every residue modulo the SIMD
width and rows starting at every alignment), float models and QDQ models."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest
from conftest import SANITIZE
from modelgen import graph_model
from numpy.typing import NDArray
from onnx import helper

import codegen
from codegen.errors import UnsupportedError
from codegen.options import Options
from codegen.pipeline import generate_sources

F32 = np.float32


def reduce_model(op: str, seed: int, dtype: str, opset: int) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    nodes, inputs, outputs, inits = [], {}, {}, {}
    for i in range(8):
        rank = int(rng.integers(1, 5))
        shape = [int(d) for d in rng.integers(1, 13, rank)]
        count = int(rng.integers(1, rank + 1))
        axes = list(range(rank - count, rank))
        if rng.random() < 0.3:
            axes = [a - rank for a in axes]
        keep = int(rng.integers(0, 2))
        ins = [f"x{i}"]
        attrs: dict[str, Any] = {"keepdims": keep}
        if opset >= (13 if op == "ReduceSum" else 18):
            inits[f"axes{i}"] = np.array(axes, np.int64)
            ins.append(f"axes{i}")
        else:
            attrs["axes"] = axes
        nodes.append(helper.make_node(op, ins, [f"y{i}"], name=f"r{i}", **attrs))
        inputs[f"x{i}"] = (dtype, shape)
        outputs[f"y{i}"] = dtype
    return graph_model(nodes, inputs, outputs, inits, opset=opset)


@pytest.mark.parametrize("op", ["ReduceMean", "ReduceSum"])
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("opset", [13, 18])
def test_float_sums_in_ort_order(op: str, seed: int, opset: int) -> None:
    model = reduce_model(op, seed, "float32", opset)
    report = codegen.verify(model, samples=3, seed=seed, cflags=SANITIZE)
    assert report.ok, report.outputs


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin"])
@pytest.mark.parametrize("dtype", ["uint8", "int8", "float32"])
def test_extremes_on_every_dtype(op: str, dtype: str) -> None:
    model = reduce_model(op, 4, dtype, 18)
    report = codegen.verify(model, samples=2, cflags=SANITIZE)
    assert report.ok, report.outputs


def test_qdq_spatial_mean_is_a_float_island_exact_against_ort() -> None:
    """DQ -> ReduceMean over H, W -> Q, as a squeeze-and-excitation block's pooling."""
    inits: dict[str, NDArray[Any]] = {"s": np.array(0.04, F32), "z": np.array(120, np.uint8),
                                      "s2": np.array(0.01, F32), "z2": np.array(3, np.uint8)}
    nodes = [helper.make_node("DequantizeLinear", ["q", "s", "z"], ["x"]),
             helper.make_node("ReduceMean", ["x"], ["m"], axes=[2, 3], keepdims=1),
             helper.make_node("QuantizeLinear", ["m", "s2", "z2"], ["y"])]
    model = graph_model(nodes, {"q": ("uint8", [1, 19, 7, 9])}, {"y": "uint8"}, inits)
    gen = generate_sources(model, Options())
    assert "ReduceMean" in {n.op_type for n in gen.graph.nodes}
    report = codegen.verify(model, samples=4, cflags=SANITIZE)
    assert report.ok, report.outputs


def adjacent_axes_model(op: str, seed: int, dtype: str) -> onnx.ModelProto:
    """Reductions over runs of adjacent axes that are not trailing: leading ones (ORT adds
    rows in order) and inner ones (ORT's ones-vector SGEMM, values in groups of four)."""
    rng = np.random.default_rng(seed)
    nodes, inputs, outputs, inits = [], {}, {}, {}
    for i in range(8):
        rank = int(rng.integers(2, 5))
        shape = [int(d) for d in rng.integers(1, 9, rank)]
        shape[int(rng.integers(0, rank))] = int(rng.integers(9, 40))  # long sums too
        first = int(rng.integers(0, rank - 1))
        last = int(rng.integers(first, rank - 1))  # the last axis stays: not trailing
        axes = list(range(first, last + 1))
        inits[f"axes{i}"] = np.array(axes, np.int64)
        nodes.append(helper.make_node(op, [f"x{i}", f"axes{i}"], [f"y{i}"], name=f"r{i}",
                                      keepdims=int(rng.integers(0, 2))))
        inputs[f"x{i}"] = (dtype, shape)
        outputs[f"y{i}"] = dtype
    return graph_model(nodes, inputs, outputs, inits, opset=18)


@pytest.mark.parametrize("op", ["ReduceMean", "ReduceSum"])
@pytest.mark.parametrize("seed", [5, 6, 7])
def test_float_sums_over_leading_and_inner_axes(op: str, seed: int) -> None:
    model = adjacent_axes_model(op, seed, "float32")
    calls = [c.function for c in generate_sources(model, Options()).program.calls]
    assert any(f.endswith("strided_f32") for f in calls), calls
    report = codegen.verify(model, samples=3, seed=seed, cflags=SANITIZE)
    assert report.ok, report.outputs


def test_qdq_channel_mean_is_a_float_island_exact_against_ort() -> None:
    """DQ -> ReduceMean over channels -> Q, as CBAM's spatial attention pools (batch 1:
    ORT adds the channel planes in order; batch 2: its ones-vector SGEMM)."""
    for batch in (1, 2):
        inits: dict[str, NDArray[Any]] = {
            "s": np.array(0.04, F32), "z": np.array(120, np.uint8),
            "s2": np.array(0.011, F32), "z2": np.array(100, np.uint8),
            "axes": np.array([1], np.int64)}
        nodes = [helper.make_node("DequantizeLinear", ["q", "s", "z"], ["x"]),
                 helper.make_node("ReduceMean", ["x", "axes"], ["m"], keepdims=1),
                 helper.make_node("QuantizeLinear", ["m", "s2", "z2"], ["y"])]
        model = graph_model(nodes, {"q": ("uint8", [batch, 23, 6, 5])}, {"y": "uint8"},
                            inits, opset=18)
        report = codegen.verify(model, samples=4, cflags=SANITIZE)
        assert report.ok, report.outputs


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin"])
@pytest.mark.parametrize("dtype", ["uint8", "int8", "float32"])
def test_extremes_over_adjacent_axes(op: str, dtype: str) -> None:
    model = adjacent_axes_model(op, 5, dtype)
    calls = [c.function for c in generate_sources(model, Options()).program.calls]
    assert any(f.endswith(f"strided_{dict(uint8='u8', int8='s8', float32='f32')[dtype]}")
               for f in calls), calls
    report = codegen.verify(model, samples=3, cflags=SANITIZE)
    assert report.ok, report.outputs


def test_qdq_channel_max_keeps_the_integers() -> None:
    """DQ -> ReduceMax over channels -> Q with one quantization, as CBAM's spatial
    attention: ORT drops the pair; onnx2mcu reduces the uint8 values."""
    inits: dict[str, NDArray[Any]] = {"s": np.array(0.04, F32), "z": np.array(120, np.uint8),
                                      "axes": np.array([1], np.int64)}
    nodes = [helper.make_node("DequantizeLinear", ["q", "s", "z"], ["x"]),
             helper.make_node("ReduceMax", ["x", "axes"], ["m"], keepdims=1),
             helper.make_node("QuantizeLinear", ["m", "s", "z"], ["y"])]
    model = graph_model(nodes, {"q": ("uint8", [1, 6, 5, 7])}, {"y": "uint8"}, inits,
                        opset=18)
    calls = [c.function for c in generate_sources(model, Options()).program.calls]
    assert calls == ["q8_reduce_max_strided_u8"], calls
    report = codegen.verify(model, samples=4, cflags=SANITIZE)
    assert report.ok, report.outputs


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMean"])
def test_reducing_axes_apart_is_refused_naming_the_node(op: str) -> None:
    model = graph_model([helper.make_node(op, ["x"], ["y"], axes=[0, 2], name="apart")],
                        {"x": ("float32", [3, 4, 5])}, {"y": "float32"}, {})
    with pytest.raises(UnsupportedError, match=r"apart.*adjacent axes"):
        generate_sources(model, Options())
