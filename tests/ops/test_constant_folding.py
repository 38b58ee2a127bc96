"""Constant subgraphs (Shape, Gather/Slice/Concat/Unsqueeze on shapes, ConstantOfShape,
Expand, Range, Cast, arithmetic on constants) are folded at import by onnx's reference
evaluator with static shapes (codegen/frontend/folding.py), and the model is exact against ORT."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest
from conftest import SANITIZE
from modelgen import graph_model
from numpy.typing import NDArray
from onnx import TensorProto, helper

import codegen
from codegen.errors import UnsupportedError
from codegen.frontend.importer import import_model

F32 = np.float32


def flatten_by_shape() -> onnx.ModelProto:
    """torch.flatten(x, 1) as the TorchScript exporter writes it with dynamic shapes:
    Shape -> Gather(0) -> Unsqueeze, concatenated with -1, then Reshape; and a
    ConstantOfShape -> Expand -> Cast offset added with QLinearAdd."""
    consts: dict[str, NDArray[Any]] = {
        "zero": np.array(0, np.int64), "minus_one": np.array([-1], np.int64),
        "axes0": np.array([0], np.int64), "xs": np.array(0.05, F32),
        "xz": np.array(128, np.uint8), "ys": np.array(0.07, F32), "yz": np.array(120, np.uint8),
        "bs": np.array(0.03, F32), "bz": np.array(100, np.uint8),
        "fill_shape": np.array([1, 1], np.int64), "range_start": np.array(0, np.int64),
        "range_delta": np.array(1, np.int64),
    }
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "zero"], ["batch"], axis=0),
        helper.make_node("Unsqueeze", ["batch", "axes0"], ["batch1"]),
        helper.make_node("Concat", ["batch1", "minus_one"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["flat"]),
        # B of the add: a [1, 36] tensor filled with 7, built from the flat shape.
        helper.make_node("Shape", ["flat"], ["flat_shape"]),
        helper.make_node("ConstantOfShape", ["fill_shape"], ["fill"],
                         value=helper.make_tensor("v", TensorProto.FLOAT, [1], [7.0])),
        helper.make_node("Expand", ["fill", "flat_shape"], ["wide"]),
        helper.make_node("Cast", ["wide"], ["b"], to=TensorProto.UINT8),
        helper.make_node("QLinearAdd", ["flat", "xs", "xz", "b", "bs", "bz", "ys", "yz"],
                         ["sum"], domain="com.microsoft"),
        # A Range-built index picks the first 8 columns.
        helper.make_node("Gather", ["flat_shape", "minus_one"], ["columns"], axis=0),
        helper.make_node("Div", ["columns", "four"], ["eighth"]),
        helper.make_node("Squeeze", ["eighth"], ["eighth0"]),
        helper.make_node("Range", ["range_start", "eighth0", "range_delta"], ["picks"]),
        helper.make_node("Shape", ["picks"], ["picks_shape"]),
        helper.make_node("Concat", ["batch1", "picks_shape"], ["cut_shape"], axis=0),
        helper.make_node("Slice", ["sum", "axes0_start", "cut_shape", "slice_axes"], ["y"]),
    ]
    consts["four"] = np.array([4], np.int64)
    consts["axes0_start"] = np.array([0, 0], np.int64)
    consts["slice_axes"] = np.array([0, 1], np.int64)
    model = graph_model(nodes, {"x": ("uint8", [1, 4, 3, 3])}, {"y": "uint8"}, consts,
                        opset=13, ms_domain=True)
    return model


def test_shape_subgraphs_fold_and_the_model_is_exact() -> None:
    model = flatten_by_shape()
    graph = import_model(model)
    assert sorted(n.op_type for n in graph.nodes) == ["QLinearAdd", "Reshape", "Slice"]
    report = codegen.verify(model, samples=3, cflags=SANITIZE)
    assert report.ok, report.outputs


def test_shapes_of_qoperator_outputs_fold() -> None:
    """TorchScript's multi-head attention in a QOperator model: Shape reads a tensor that
    a com.microsoft QLinearAdd computes, which onnx's shape inference does not know; its
    shape comes from the QLinear operators' own rules, and the head split folds."""
    consts: dict[str, NDArray[Any]] = {
        "xs": np.array(0.05, F32), "xz": np.array(128, np.uint8),
        "bs": np.array(0.03, F32), "bz": np.array(100, np.uint8),
        "b": np.arange(24, dtype=np.uint8).reshape(1, 24), "ys": np.array(0.07, F32),
        "yz": np.array(120, np.uint8), "zero": np.array(0, np.int64),
        "axes0": np.array([0], np.int64), "split": np.array([4, 6], np.int64),
    }
    nodes = [
        helper.make_node("QLinearAdd", ["x", "xs", "xz", "b", "bs", "bz", "ys", "yz"],
                         ["sum"], domain="com.microsoft"),
        helper.make_node("DequantizeLinear", ["sum", "ys", "yz"], ["sum_f"]),
        helper.make_node("Shape", ["sum_f"], ["shape"], name="head_shape"),
        helper.make_node("Gather", ["shape", "zero"], ["tokens"], axis=0),
        helper.make_node("Unsqueeze", ["tokens", "axes0"], ["tokens1"]),
        helper.make_node("Concat", ["tokens1", "split"], ["heads"], axis=0),
        helper.make_node("Reshape", ["sum_f", "heads"], ["y"]),
    ]
    model = graph_model(nodes, {"x": ("uint8", [3, 24])}, {"y": "float32"}, consts,
                        opset=17, ms_domain=True)
    graph = import_model(model)
    assert "Shape" not in [n.op_type for n in graph.nodes]
    report = codegen.verify(model, samples=3, cflags=SANITIZE)
    assert report.ok, report.outputs


def test_only_exact_float_arithmetic_folds() -> None:
    """Log of a constant has no one exact float32 answer (it depends on the library),
    so it is not folded: the model is refused, naming the Log. A Div of constants is
    one IEEE operation and folds."""
    consts = {"c": np.array([0.5, 2.0], F32), "two": np.array(2.0, F32)}
    nodes = [helper.make_node("Div", ["c", "two"], ["half"]),
             helper.make_node("Log", ["half"], ["e"], name="log_of_constant"),
             helper.make_node("Add", ["x", "e"], ["y"])]
    model = graph_model(nodes, {"x": ("float32", [2])}, {"y": "float32"}, consts)
    with pytest.raises(UnsupportedError, match="log_of_constant"):
        import_model(model)


def test_weight_dequantization_is_left_to_the_recipes() -> None:
    """A DequantizeLinear of constant weights is what the QDQ recipes fuse: it is not
    folded into float weights."""
    consts = {"w": np.ones((2, 2), np.int8), "s": np.array(0.1, F32), "z": np.array(0, np.int8)}
    nodes = [helper.make_node("DequantizeLinear", ["w", "s", "z"], ["wf"]),
             helper.make_node("MatMul", ["x", "wf"], ["y"])]
    graph = import_model(graph_model(nodes, {"x": ("float32", [1, 2])}, {"y": "float32"},
                                     consts))
    assert [n.op_type for n in graph.nodes] == ["DequantizeLinear", "MatMul"]


def test_a_dequantized_bound_shared_with_a_float_op() -> None:
    """AMD Quark's ReLU6 in GhostNet's gate: Clip(x + 3, 0, DQ(48 * 0.125)) / DQ(...), the
    quantized 6 read as Clip's bound and by the Div. The Clip reads its value (as ORT's
    DequantizeLinear computes it); the DequantizeLinear stays for the Div; exact."""
    consts = {"six_q": np.array(48, np.int8), "six_s": np.array(0.125, F32),
              "six_z": np.array(0, np.int8), "zero": np.array(0.0, F32),
              "three": np.array(3.0, F32)}
    nodes = [helper.make_node("DequantizeLinear", ["six_q", "six_s", "six_z"], ["six"]),
             helper.make_node("Add", ["x", "three"], ["x3"]),
             helper.make_node("Clip", ["x3", "zero", "six"], ["c"]),
             helper.make_node("Div", ["c", "six"], ["y"])]
    model = graph_model(nodes, {"x": ("float32", [2, 8])}, {"y": "float32"}, consts)
    graph = import_model(model)
    assert [n.op_type for n in graph.nodes] == ["DequantizeLinear", "Add", "Clip", "Div"]
    clip, div = graph.nodes[2], graph.nodes[3]
    assert clip.inputs[2] != "six" and clip.inputs[2] in graph.constants
    assert float(graph.constants[clip.inputs[2]]) == 6.0 and div.inputs[1] == "six"
    report = codegen.verify(model, samples=4, cflags=SANITIZE)
    assert report.ok, report.outputs


def test_a_dequantized_value_read_as_data_and_as_a_bound_by_one_node() -> None:
    """Clip(six, zero, six): the data input keeps the DequantizeLinear's output, the bound
    reads its value."""
    consts = {"six_q": np.array(48, np.int8), "six_s": np.array(0.125, F32),
              "zero": np.array(0.0, F32)}
    nodes = [helper.make_node("DequantizeLinear", ["six_q", "six_s"], ["six"]),
             helper.make_node("Clip", ["six", "zero", "six"], ["c"]),
             helper.make_node("Add", ["x", "c"], ["y"])]
    model = graph_model(nodes, {"x": ("float32", [2, 8])}, {"y": "float32"}, consts)
    clip = next(n for n in import_model(model).nodes if n.op_type == "Clip")
    assert clip.inputs[0] == "six" and clip.inputs[2] != "six"
    report = codegen.verify(model, samples=2, cflags=SANITIZE)
    assert report.ok, report.outputs
