"""InstanceNormalization as a float island in ORT's order (codegen/ops/instance_norm.py,
runtime_c/instance_norm_f32.c) against ONNX Runtime: 1-D, 2-D and 3-D planes of sizes
that cross Eigen's packet and alignment boundaries, float and dequantized scale and
bias, a QDQ model in both requantization modes, and a Cortex-M run."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest
from conftest import SANITIZE, in_qemu
from modelgen import graph_model
from numpy.typing import NDArray
from onnx import helper

import codegen

F32 = np.float32
SHAPES = ([1, 3, 5, 5], [2, 4, 7], [1, 2, 16], [1, 3, 33], [1, 5, 3, 3], [1, 2, 1],
          [1, 3, 2, 3, 2], [1, 2, 6, 6], [1, 8, 9])


def instance_norm_model(shape: list[int], seed: int, dequantized: bool,
                        qdq: bool = False) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    channels = shape[1]
    inits: dict[str, NDArray[Any]] = {}
    nodes = []
    if dequantized:
        inits |= {"sq": rng.integers(-127, 128, channels).astype(np.int8),
                  "ss": np.array(0.01, F32), "bq": rng.integers(-127, 128, channels)
                  .astype(np.int8), "bs": np.array(0.02, F32)}
        nodes += [helper.make_node("DequantizeLinear", ["sq", "ss"], ["scale"]),
                  helper.make_node("DequantizeLinear", ["bq", "bs"], ["bias"])]
    else:
        inits |= {"scale": rng.normal(0, 1, channels).astype(F32),
                  "bias": rng.normal(0, 1, channels).astype(F32)}
    epsilon = float(rng.choice([1e-5, 1e-3, 0.1]))
    if qdq:
        inits |= {"xs": np.array(0.04, F32), "xz": np.array(100, np.uint8),
                  "ys": np.array(0.03, F32), "yz": np.array(128, np.uint8)}
        nodes = [helper.make_node("DequantizeLinear", ["q", "xs", "xz"], ["x"]), *nodes,
                 helper.make_node("InstanceNormalization", ["x", "scale", "bias"], ["yf"],
                                  epsilon=epsilon, name="norm"),
                 helper.make_node("QuantizeLinear", ["yf", "ys", "yz"], ["y"])]
        return graph_model(nodes, {"q": ("uint8", shape)}, {"y": "uint8"}, inits, opset=17)
    nodes.append(helper.make_node("InstanceNormalization", ["x", "scale", "bias"], ["y"],
                                  epsilon=epsilon, name="norm"))
    return graph_model(nodes, {"x": ("float32", shape)}, {"y": "float32"}, inits, opset=17)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dequantized", [False, True])
def test_instance_norm_matches_ort(shape: list[int], dequantized: bool) -> None:
    model = instance_norm_model(shape, len(shape) * 7 + shape[-1], dequantized)
    report = codegen.verify(model, samples=3, cflags=SANITIZE)
    assert report.ok, report.outputs


@pytest.mark.parametrize("requant", ["float", "int"])
def test_qdq_instance_norm(requant: str) -> None:
    model = instance_norm_model([1, 4, 6, 5], 3, True, qdq=True)
    report = codegen.verify(model, samples=4, requant=requant, cflags=SANITIZE)
    assert report.ok, report.outputs


@in_qemu
@pytest.mark.parametrize("board", ["cortex-m4f", "cortex-m0plus"])
def test_instance_norm_on_cortex_m(board: str) -> None:
    report = codegen.verify(instance_norm_model([1, 3, 7, 5], 5, True, qdq=True), board=board,
                            samples=2)
    assert report.ok, report.outputs
