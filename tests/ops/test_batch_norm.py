"""BatchNormalization (inference) as a float island in ORT's order
(codegen/ops/batch_norm.py, runtime_c/batch_norm_f32.c) against ONNX Runtime: 2-D, 3-D
and 4-D inputs, float and dequantized parameters, after a Concat in a QDQ model (as
MixNet leaves it) in both requantization modes, 16-bit activations, a Cortex-M run, and
the refusals: after a Conv (ORT folds it there), training mode."""

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
from codegen.errors import Onnx2McuError

F32 = np.float32
SHAPES = ([2, 6], [1, 3, 17], [2, 4, 5, 5], [1, 16, 3, 7], [1, 5, 1, 1])


def parameters(channels: int, rng: np.random.Generator, dequantized: bool,
               nodes: list[onnx.NodeProto]) -> dict[str, NDArray[Any]]:
    """scale, B, mean and var as float initializers, or as DequantizeLinear of int8."""
    values = {"scale": rng.uniform(0.3, 2.0, channels), "bias": rng.normal(0, 1, channels),
              "mean": rng.normal(0, 0.4, channels), "var": rng.uniform(0.05, 3.0, channels)}
    if not dequantized:
        return {k: v.astype(F32) for k, v in values.items()}
    inits: dict[str, NDArray[Any]] = {}
    for name, v in values.items():
        step = F32(np.abs(v).max() / 127)
        inits[f"{name}_q"] = np.rint(v / step).astype(np.int8)
        inits[f"{name}_s"] = np.array(step, F32)
        nodes.append(helper.make_node("DequantizeLinear", [f"{name}_q", f"{name}_s"], [name]))
    return inits


def batch_norm_model(shape: list[int], seed: int, dequantized: bool, qdq: str = "",
                     epsilon: float = 1e-5) -> onnx.ModelProto:
    """BatchNormalization of x, or with qdq "uint8"/"int16": DQ -> Concat -> BN -> Q."""
    rng = np.random.default_rng(seed)
    nodes: list[onnx.NodeProto] = []
    inits = parameters(shape[1], rng, dequantized, nodes)
    bn = helper.make_node("BatchNormalization", ["x", "scale", "bias", "mean", "var"],
                          ["yf" if qdq else "y"], epsilon=epsilon, name="bn")
    if not qdq:
        return graph_model([*nodes, bn], {"x": ("float32", shape)}, {"y": "float32"}, inits,
                           opset=15)
    half = [shape[0], shape[1] // 2, *shape[2:]]
    rest = [shape[0], shape[1] - half[1], *shape[2:]]
    zp = np.array(100 if qdq == "uint8" else -300, qdq)
    inits |= {"xs": np.array(0.04 if qdq == "uint8" else 4e-4, F32), "xz": zp,
              "ys": np.array(0.05 if qdq == "uint8" else 5e-4, F32), "yz": zp}
    nodes = [helper.make_node("DequantizeLinear", ["a", "xs", "xz"], ["af"]),
             helper.make_node("DequantizeLinear", ["b", "xs", "xz"], ["bf"]),
             helper.make_node("Concat", ["af", "bf"], ["x"], axis=1), *nodes, bn,
             helper.make_node("QuantizeLinear", ["yf", "ys", "yz"], ["y"])]
    return graph_model(nodes, {"a": (qdq, half), "b": (qdq, rest)}, {"y": qdq}, inits,
                       opset=21 if qdq == "int16" else 17)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dequantized", [False, True])
def test_batch_norm_matches_ort(shape: list[int], dequantized: bool) -> None:
    model = batch_norm_model(shape, len(shape) * 5 + shape[1], dequantized,
                             epsilon=1e-3 if dequantized else 1e-5)
    report = codegen.verify(model, samples=3, cflags=SANITIZE)
    assert report.ok, report.outputs


@pytest.mark.parametrize("qdq,requant", [("uint8", "float"), ("uint8", "int"),
                                         ("int16", "float")])
def test_qdq_batch_norm_after_a_concat(qdq: str, requant: str) -> None:
    model = batch_norm_model([1, 6, 5, 4], 3, True, qdq=qdq)
    report = codegen.verify(model, samples=4, requant=requant, cflags=SANITIZE)
    assert report.ok, report.outputs


@pytest.mark.parametrize("float_weights", [True, False])
def test_batch_norm_after_a_conv(float_weights: bool) -> None:
    """DQ -> Conv -> BN -> Q: ORT folds the BN into a Conv of float weights (refused),
    not into one of dequantized weights (two float islands, exact)."""
    rng = np.random.default_rng(1)
    nodes: list[onnx.NodeProto] = [helper.make_node("DequantizeLinear", ["x", "xs", "xz"],
                                                    ["xf"])]
    inits = parameters(4, rng, False, nodes)
    inits |= {"xs": np.array(0.04, F32), "xz": np.array(128, np.uint8),
              "ys": np.array(0.05, F32), "yz": np.array(128, np.uint8)}
    if float_weights:
        inits["w"] = rng.normal(0, 0.5, (4, 3, 1, 1)).astype(F32)
    else:
        inits |= {"wq": rng.integers(-100, 100, (4, 3, 1, 1)).astype(np.int8),
                  "ws": np.array(0.01, F32)}
        nodes.append(helper.make_node("DequantizeLinear", ["wq", "ws"], ["w"]))
    nodes += [helper.make_node("Conv", ["xf", "w"], ["c"]),
              helper.make_node("BatchNormalization", ["c", "scale", "bias", "mean", "var"],
                               ["yf"], name="bn"),
              helper.make_node("QuantizeLinear", ["yf", "ys", "yz"], ["y"])]
    model = graph_model(nodes, {"x": ("uint8", [1, 3, 4, 4])}, {"y": "uint8"}, inits,
                        opset=17)
    if float_weights:
        with pytest.raises(Onnx2McuError, match=r"node 'bn' .*folds it into the Conv"):
            codegen.verify(model, samples=1)
    else:
        report = codegen.verify(model, samples=3, cflags=SANITIZE)
        assert report.ok, report.outputs


def test_training_mode_is_refused() -> None:
    model = batch_norm_model([1, 3, 4], 2, False)
    for node in model.graph.node:
        if node.op_type == "BatchNormalization":
            node.attribute.append(helper.make_attribute("training_mode", 1))
    with pytest.raises(Onnx2McuError, match=r"node 'bn' .*training_mode=1"):
        codegen.verify(model, samples=1)


@in_qemu
@pytest.mark.parametrize("board", ["cortex-m4f", "cortex-m0plus"])
def test_batch_norm_on_cortex_m(board: str) -> None:
    report = codegen.verify(batch_norm_model([1, 6, 5, 3], 5, True, qdq="uint8"),
                            board=board, samples=2)
    assert report.ok, report.outputs
