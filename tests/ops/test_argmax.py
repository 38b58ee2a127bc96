"""ArgMax and ArgMin (int64 indices) against ONNX Runtime: random axes, keepdims and
select_last_index on uint8, int8 and float32 inputs full of ties, a QOperator classifier
head (the quantized tensor given to ArgMax) and a QDQ one (DQ -> ArgMax), and in QEMU."""

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
from codegen.errors import ModelError
from codegen.options import Options
from codegen.pipeline import generate_sources

F32 = np.float32


def arg_model(op: str, dtype: str, seed: int) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    nodes, inputs, outputs = [], {}, {}
    for i in range(6):
        rank = int(rng.integers(1, 5))
        shape = [int(d) for d in rng.integers(1, 12, rank)]
        attrs: dict[str, Any] = {"axis": int(rng.integers(-rank, rank)),
                                 "keepdims": int(rng.integers(0, 2)),
                                 "select_last_index": int(rng.integers(0, 2))}
        nodes.append(helper.make_node(op, [f"x{i}"], [f"y{i}"], name=f"a{i}", **attrs))
        inputs[f"x{i}"] = (dtype, shape)
        outputs[f"y{i}"] = "int64"
    return graph_model(nodes, inputs, outputs, {}, opset=13)


def few_values(model: onnx.ModelProto, seed: int) -> list[dict[str, NDArray[Any]]]:
    """Inputs of four distinct values: ties everywhere."""
    rng = np.random.default_rng(seed)
    samples = []
    for _ in range(3):
        sample = {}
        for value in model.graph.input:
            dtype = onnx.helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type)
            shape = [d.dim_value for d in value.type.tensor_type.shape.dim]
            sample[value.name] = rng.integers(0, 4, shape).astype(dtype)
        samples.append(sample)
    return samples


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("dtype", ["uint8", "int8", "float32"])
def test_indices_match_ort_with_ties(op: str, dtype: str) -> None:
    model = arg_model(op, dtype, {"uint8": 1, "int8": 2, "float32": 3}[dtype])
    report = codegen.verify(model, inputs=few_values(model, 0), cflags=SANITIZE)
    assert report.ok, report.outputs
    report = codegen.verify(model, samples=2, cflags=SANITIZE)
    assert report.ok, report.outputs


def classifier(qdq: bool) -> onnx.ModelProto:
    """A quantized classifier's end: logits quantized to uint8, then ArgMax over the
    classes, on the integers (QOperator) or on their dequantized values (QDQ)."""
    rng = np.random.default_rng(7)
    inits: dict[str, NDArray[Any]] = {
        "s": np.array(0.05, F32), "z": np.array(128, np.uint8),
        "w": rng.integers(-127, 128, (12, 10)).astype(np.int8),
        "ws": np.array(0.01, F32), "wz": np.array(0, np.int8),
        "ys": np.array(0.08, F32), "yz": np.array(120, np.uint8)}
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"]),
             helper.make_node("QLinearMatMul", ["xq", "s", "z", "w", "ws", "wz", "ys", "yz"],
                              ["logits"])]
    if qdq:
        nodes += [helper.make_node("DequantizeLinear", ["logits", "ys", "yz"], ["scores"]),
                  helper.make_node("ArgMax", ["scores"], ["label"], axis=-1, keepdims=0)]
    else:
        nodes.append(helper.make_node("ArgMax", ["logits"], ["label"], axis=1, keepdims=1))
    return graph_model(nodes, {"x": ("float32", [4, 12])}, {"label": "int64"}, inits,
                       opset=13)


@pytest.mark.parametrize("qdq", [False, True])
def test_quantized_classifier_head(qdq: bool) -> None:
    model = classifier(qdq)
    calls = [c.function for c in generate_sources(model, Options()).program.calls]
    assert calls[-1] == ("q8_argmax_f32" if qdq else "q8_argmax_u8"), calls
    report = codegen.verify(model, samples=4, cflags=SANITIZE)
    assert report.ok, report.outputs


def test_a_scalar_input_is_refused_naming_the_node() -> None:
    model = graph_model([helper.make_node("ArgMax", ["x"], ["y"], name="pick")],
                        {"x": ("float32", [])}, {"y": "int64"}, {}, opset=13)
    with pytest.raises(ModelError, match="pick"):
        generate_sources(model, Options())


@in_qemu
@pytest.mark.parametrize("board", ["cortex-m4f", "cortex-m0plus"])
def test_classifier_head_in_qemu(board: str) -> None:
    report = codegen.verify(classifier(False), board=board, samples=2)
    assert report.ok, report.outputs
