"""Pad in every mode, with positive and negative pads, on uint8, int8 and float32, and
in QDQ form (DQ -> Pad -> Q with one quantization runs on the integers, the padding
value quantized), against ONNX Runtime."""

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
from codegen.options import Options
from codegen.pipeline import generate_sources

F32 = np.float32
DTYPES = ("uint8", "int8", "float32")


def pad_model(mode: str, seed: int, opset: int) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    nodes: list[onnx.NodeProto] = []
    inputs: dict[str, tuple[str, list[int]]] = {}
    outputs: dict[str, str] = {}
    inits: dict[str, NDArray[Any]] = {}
    for i in range(9):
        dtype = DTYPES[i % 3]
        rank = int(rng.integers(1, 5))
        shape = [int(d) for d in rng.integers(2 if mode == "reflect" else 1, 6, rank)]
        low = -1 if mode != "reflect" else 0
        high = 3 if mode != "reflect" else 2
        pads = [int(rng.integers(low, high)) if shape[k % rank] > 1 else
                int(rng.integers(0, high)) for k in range(2 * rank)]
        if mode == "reflect":
            pads = [min(p, shape[k % rank] - 1) for k, p in enumerate(pads)]
        names = [f"x{i}", f"pads{i}"]
        inits[f"pads{i}"] = np.array(pads, np.int64)
        if mode == "constant" and rng.random() < 0.7:
            value = rng.integers(-5, 100) if dtype != "float32" else rng.normal()
            inits[f"v{i}"] = np.array(value, dtype)
            names.append(f"v{i}")
        nodes.append(helper.make_node("Pad", names, [f"y{i}"], name=f"pad{i}", mode=mode))
        inputs[f"x{i}"] = (dtype, shape)
        outputs[f"y{i}"] = dtype
    return graph_model(nodes, inputs, outputs, inits, opset=opset)


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
@pytest.mark.parametrize("seed", [0, 1])
def test_pad_matches_ort(mode: str, seed: int) -> None:
    report = codegen.verify(pad_model(mode, seed, 13), samples=2, seed=seed, cflags=SANITIZE)
    assert report.ok, report.outputs


def test_wrap_and_axes_of_pad_19() -> None:
    model = graph_model(
        [helper.make_node("Pad", ["x", "pads", "", "axes"], ["y"], mode="wrap"),
         helper.make_node("Pad", ["x", "pads", "", "axes"], ["z"], mode="constant")],
        {"x": ("int8", [2, 3, 4])}, {"y": "int8", "z": "int8"},
        {"pads": np.array([2, 1, 1, 3], np.int64), "axes": np.array([-1, 1], np.int64)},
        opset=19)
    report = codegen.verify(model, samples=2, cflags=SANITIZE)
    assert report.ok, report.outputs


def test_qdq_pad_runs_on_integers_with_the_value_quantized() -> None:
    inits = {"s": np.array(0.05, F32), "z": np.array(13, np.uint8),
             "pads": np.array([0, 0, 1, 2, 0, 0, 2, 1], np.int64), "v": np.array(0.0, F32)}
    nodes = [helper.make_node("DequantizeLinear", ["q", "s", "z"], ["x"]),
             helper.make_node("Pad", ["x", "pads", "v"], ["p"], mode="constant"),
             helper.make_node("QuantizeLinear", ["p", "s", "z"], ["y"])]
    model = graph_model(nodes, {"q": ("uint8", [1, 3, 4, 4])}, {"y": "uint8"}, inits)
    gen = generate_sources(model, Options())
    assert [n.op_type for n in gen.graph.nodes] == ["Pad"]
    report = codegen.verify(model, samples=3, cflags=SANITIZE)
    assert report.ok, report.outputs
