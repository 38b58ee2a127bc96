"""Weights written as QuantizeLinear(DequantizeLinear(integer constant)): ORT's
constant folding computes them and the unit fuses; so does onnx2mcu, bit-exact, with
the same or different quantizations on the two sides."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from conftest import SANITIZE
from modelgen import graph_model
from onnx import helper

import codegen
from codegen.options import Options
from codegen.pipeline import generate_sources

F32 = np.float32


def requantized_weights_model(second_scale: float) -> onnx.ModelProto:
    rng = np.random.default_rng(3)
    inits = {"xs": np.array(0.02, F32), "xz": np.array(128, np.uint8),
             "wc": rng.integers(-100, 100, (4, 3, 3, 3)).astype(np.int8),
             "ws": np.array(0.01, F32), "wz": np.array(0, np.int8),
             "ws2": np.array(second_scale, F32), "ys": np.array(0.05, F32),
             "yz": np.array(128, np.uint8)}
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             helper.make_node("DequantizeLinear", ["wc", "ws", "wz"], ["w1"]),
             helper.make_node("QuantizeLinear", ["w1", "ws2", "wz"], ["wq"]),
             helper.make_node("DequantizeLinear", ["wq", "ws2", "wz"], ["w"]),
             helper.make_node("Conv", ["xd", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("QuantizeLinear", ["c", "ys", "yz"], ["y"])]
    return graph_model(nodes, {"x": ("float32", [1, 3, 8, 8])}, {"y": "uint8"}, inits,
                       opset=17)


@pytest.mark.parametrize("second_scale", [0.01, 0.013])
def test_requantized_weights_fold_and_fuse(second_scale: float) -> None:
    model = requantized_weights_model(second_scale)
    gen = generate_sources(model, Options())
    assert [n.op_type for n in gen.graph.nodes] == ["QuantizeLinear", "QLinearConv"]
    report = codegen.verify(model, samples=3, cflags=SANITIZE)
    assert report.ok, report.outputs


def qoperator_requantized_weights_model() -> onnx.ModelProto:
    """ORT's quantizer in QOperator format on a model quantized before (tf2onnx's QDQ
    export): the QLinearConv's weights are QuantizeLinear(DequantizeLinear(int8)), per
    channel, with other scales than the DequantizeLinear's."""
    rng = np.random.default_rng(4)
    inits = {"xs": np.array(0.02, F32), "xz": np.array(128, np.uint8),
             "wc": rng.integers(-100, 100, (4, 3, 3, 3)).astype(np.int8),
             "ws": np.array([0.01, 0.02, 0.015, 0.011], F32),
             "wz": np.zeros(4, np.int8), "ws2": np.array([0.012, 0.02, 0.01, 0.011], F32),
             "ys": np.array(0.05, F32), "yz": np.array(128, np.uint8)}
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["wc", "ws", "wz"], ["w1"], axis=0),
             helper.make_node("QuantizeLinear", ["w1", "ws2", "wz"], ["wq"], axis=0),
             helper.make_node("QLinearConv", ["xq", "xs", "xz", "wq", "ws2", "wz", "ys", "yz"],
                              ["yq"], pads=[1, 1, 1, 1]),
             helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])]
    return graph_model(nodes, {"x": ("float32", [1, 3, 8, 8])}, {"y": "float32"}, inits,
                       opset=17)


def test_qoperator_weights_fold_at_import() -> None:
    model = qoperator_requantized_weights_model()
    gen = generate_sources(model, Options())
    assert [n.op_type for n in gen.graph.nodes] == ["QuantizeLinear", "QLinearConv",
                                                     "DequantizeLinear"]
    report = codegen.verify(model, samples=3, cflags=SANITIZE)
    assert report.ok, report.outputs
