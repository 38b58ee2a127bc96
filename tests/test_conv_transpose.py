"""ConvTranspose as a float island in ORT's order (codegen/ops/conv_transpose.py,
runtime_c/conv_transpose_f32.c) against ONNX Runtime: randomized 1-D and 2-D shapes,
strides, dilations, pads, output_padding and groups (overlapping windows, K blocks of
MLAS's SGEMM), with float and with dequantized weights, and a QDQ model."""

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

F32 = np.float32


def conv_transpose_model(seed: int, quantized_weights: bool) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    nodes: list[onnx.NodeProto] = []
    inputs: dict[str, tuple[str, list[int]]] = {}
    outputs: dict[str, str] = {}
    inits: dict[str, NDArray[Any]] = {}
    for i in range(4):
        spatial = int(rng.integers(1, 3))
        groups = int(rng.choice([1, 1, 2]))
        cin = groups * int(rng.integers(1, 4 if i < 3 else 80))  # one with K blocks
        per_group = int(rng.integers(1, 4))
        kernel = [int(k) for k in rng.integers(1, 4, spatial)]
        strides = [int(s) for s in rng.integers(1, 4, spatial)]
        dilations = [int(d) for d in rng.integers(1, 3, spatial)]
        pads = [int(p) for p in rng.integers(0, 2, 2 * spatial)]
        extra = [int(rng.integers(0, s)) if rng.random() < 0.5 else 0 for s in strides]
        size = [int(n) for n in rng.integers(2, 7, spatial)]
        w = rng.normal(0, 0.5, (cin, per_group, *kernel)).astype(F32)
        attrs: dict[str, Any] = {"strides": strides, "dilations": dilations, "pads": pads,
                                 "output_padding": extra, "group": groups}
        names = [f"x{i}"]
        if quantized_weights:
            inits[f"wq{i}"] = rng.integers(-127, 128, w.shape).astype(np.int8)
            inits[f"ws{i}"] = np.array(0.01, F32)
            nodes.append(helper.make_node("DequantizeLinear", [f"wq{i}", f"ws{i}"], [f"w{i}"]))
        else:
            inits[f"w{i}"] = w
        names.append(f"w{i}")
        if rng.random() < 0.7:
            inits[f"b{i}"] = rng.normal(0, 1, per_group * groups).astype(F32)
            names.append(f"b{i}")
        nodes.append(helper.make_node("ConvTranspose", names, [f"y{i}"], name=f"ct{i}",
                                      **attrs))
        inputs[f"x{i}"] = ("float32", [1, cin, *size])
        outputs[f"y{i}"] = "float32"
    return graph_model(nodes, inputs, outputs, inits, opset=13)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("quantized_weights", [False, True])
def test_conv_transpose_matches_ort(seed: int, quantized_weights: bool) -> None:
    model = conv_transpose_model(seed, quantized_weights)
    report = codegen.verify(model, samples=2, seed=seed, cflags=SANITIZE)
    assert report.ok, report.outputs
