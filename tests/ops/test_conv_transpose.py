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


@pytest.mark.parametrize("groups", [1, 2])
def test_qdq_conv_transpose_with_per_channel_weights_and_a_float_bias(groups: int) -> None:
    """DQ(x) -> ConvTranspose(DQ(w) per channel along axis 1, float bias) -> Q, as NNCF
    writes a U-Net's up-convolution: ORT's WeightBiasQuantization quantizes the bias to
    int32 along the weights' output-channel axis (1 for ConvTranspose: measured on ORT
    1.32's optimized graph), then computes the unit in float. With 2 groups the scales
    (one per channel of a group) do not match the bias, which stays float."""
    rng = np.random.default_rng(groups)
    cin, per_group = 4, 3
    inits: dict[str, NDArray[Any]] = {
        "xs": np.array(0.02, F32), "xz": np.array(7, np.int8),
        "wq": rng.integers(-127, 128, (cin, per_group, 2, 2)).astype(np.int8),
        "ws": rng.uniform(0.005, 0.02, per_group).astype(F32),
        "wz": np.zeros(per_group, np.int8),
        "b": rng.normal(0, 0.3, per_group * groups).astype(F32),
        "ys": np.array(0.03, F32), "yz": np.array(-3, np.int8)}
    nodes = [helper.make_node("DequantizeLinear", ["q", "xs", "xz"], ["x"]),
             helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["w"], axis=1),
             helper.make_node("ConvTranspose", ["x", "w", "b"], ["t"], name="up",
                              strides=[2, 2], group=groups),
             helper.make_node("QuantizeLinear", ["t", "ys", "yz"], ["y"])]
    model = graph_model(nodes, {"q": ("int8", [1, cin, 5, 6])}, {"y": "int8"}, inits,
                        opset=13)
    report = codegen.verify(model, samples=3, cflags=SANITIZE)
    assert report.ok, report.outputs


# (input size, kernel, stride, dilation, output_padding, auto_pad, output_shape): odd and
# even total paddings, so that the side that takes the extra element shows.
GEOMETRY_CASES = [
    ([5, 4], [3, 3], [2, 2], [1, 1], [0, 0], "SAME_UPPER", None),
    ([5, 4], [3, 2], [2, 2], [1, 1], [1, 0], "SAME_LOWER", None),
    ([6], [4], [2], [1], [0], "SAME_UPPER", None),
    ([6], [4], [3], [2], [1], "SAME_LOWER", None),
    ([5, 5], [3, 3], [2, 2], [1, 1], [0, 0], "VALID", None),
    ([5, 4], [3, 3], [2, 2], [1, 1], [0, 0], "NOTSET", [9, 8]),
    ([5, 4], [4, 3], [2, 2], [1, 1], [0, 0], "NOTSET", [10, 7]),
    ([5, 4], [4, 3], [2, 2], [1, 1], [0, 0], "SAME_UPPER", [10, 7]),
    ([7], [5], [2], [1], [0], "SAME_LOWER", [14]),
    ([5, 4], [3, 3], [2, 2], [1, 1], [0, 0], "SAME_UPPER", [9, 8]),
]


@pytest.mark.parametrize("case", range(len(GEOMETRY_CASES)))
def test_auto_pad_and_output_shape_as_ort_derives_the_pads(case: int) -> None:
    """auto_pad and output_shape give the pads ORT computes from them (an odd total
    padding puts the extra element at the tail for SAME_UPPER, at the head otherwise)."""
    size, kernel, strides, dilations, extra, auto_pad, out = GEOMETRY_CASES[case]
    rng = np.random.default_rng(case)
    attrs: dict[str, Any] = {"strides": strides, "dilations": dilations,
                             "output_padding": extra, "auto_pad": auto_pad}
    if out is not None:
        attrs["output_shape"] = out
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], name="ct", **attrs)
    inits = {"w": rng.normal(0, 0.5, (3, 2, *kernel)).astype(F32),
             "b": rng.normal(0, 1, 2).astype(F32)}
    model = graph_model([node], {"x": ("float32", [1, 3, *size])}, {"y": "float32"}, inits,
                        opset=13)
    report = codegen.verify(model, samples=2, seed=case, cflags=SANITIZE)
    assert report.ok, report.outputs


def test_output_shape_beyond_the_transposed_size_is_refused() -> None:
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="ct", strides=[2],
                            output_shape=[20])
    model = graph_model([node], {"x": ("float32", [1, 3, 5])}, {"y": "float32"},
                        {"w": np.ones((3, 2, 3), F32)}, opset=13)
    with pytest.raises(codegen.errors.UnsupportedError, match=r"node 'ct'.*output_shape"):
        codegen.verify(model, samples=1)
