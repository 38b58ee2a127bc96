"""LayerNormalization as a float island in ORT 1.32's order (codegen/ops/layer_norm.py,
runtime_c/layer_norm_f32.c) against ONNX Runtime: rows shorter than 8 (ORT's Welford
loop) and longer (MLAS's AVX2 kernel, every tail length), several axes and epsilons,
with and without bias, with the Mean and InvStdDev outputs, float and dequantized
scale/bias, and refusals."""

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
from codegen.errors import UnsupportedError

F32 = np.float32


def layer_norm_model(shape: list[int], axis: int, seed: int, *, bias: bool = True,
                     stats: bool = False, quantized: bool = False, epsilon: float = 1e-5,
                     **attrs: Any) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    norm = shape[axis % len(shape):]
    inits: dict[str, NDArray[Any]] = {}
    nodes: list[onnx.NodeProto] = []
    if quantized:
        inits["sq"] = rng.integers(-127, 128, norm).astype(np.int8)
        inits["ss"] = np.array(0.01, F32)
        nodes.append(helper.make_node("DequantizeLinear", ["sq", "ss"], ["s"]))
    else:
        inits["s"] = rng.normal(0, 1, norm).astype(F32)
    names = ["x", "s"]
    if bias:
        inits["b"] = rng.normal(0, 1, norm).astype(F32)
        names.append("b")
    outs = ["y", "mean", "inv"] if stats else ["y"]
    nodes.append(helper.make_node("LayerNormalization", names, outs, name="ln", axis=axis,
                                  epsilon=epsilon, **attrs))
    return graph_model(nodes, {"x": ("float32", shape)}, dict.fromkeys(outs, "float32"),
                       inits, opset=17)


CASES = [([3, 16], -1), ([4, 7], -1), ([2, 64], -1), ([2, 300], -1), ([5, 13], -1),
         ([3, 21], -1), ([2, 3, 4, 5], -2), ([4, 5, 6], 1), ([6, 3], -1), ([2, 3, 5], 0),
         ([3, 12], -1), ([2, 15], -1), ([4, 1], -1), ([2, 9], -1)]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_layer_norm_matches_ort(case: int) -> None:
    shape, axis = CASES[case]
    model = layer_norm_model(shape, axis, case, bias=case % 3 != 2, stats=case % 2 == 0,
                             quantized=case % 4 == 1,
                             epsilon=(1e-5, 1e-3, 1e-12)[case % 3])
    report = codegen.verify(model, samples=3, seed=case, cflags=SANITIZE)
    assert report.ok, report.outputs


def test_qdq_layer_norm_matches_ort() -> None:
    rng = np.random.default_rng(7)
    inits = {"sq": rng.integers(-127, 128, 16).astype(np.int8), "ss": np.array(0.01, F32),
             "b": rng.normal(0, 0.5, 16).astype(F32), "xs": np.array(0.05, F32),
             "xz": np.array(128, np.uint8), "ys": np.array(0.02, F32),
             "yz": np.array(128, np.uint8)}
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             helper.make_node("DequantizeLinear", ["sq", "ss"], ["s"]),
             helper.make_node("LayerNormalization", ["xd", "s", "b"], ["ln"], name="ln",
                              axis=-1, epsilon=1e-5),
             helper.make_node("QuantizeLinear", ["ln", "ys", "yz"], ["yq"]),
             helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])]
    model = graph_model(nodes, {"x": ("float32", [1, 8, 16])}, {"y": "float32"}, inits,
                        opset=17)
    report = codegen.verify(model, samples=4, seed=1, cflags=SANITIZE)
    assert report.ok, report.outputs


@pytest.mark.parametrize("what", ["stash", "broadcast", "one_stat"])
def test_layer_norm_refusals(what: str) -> None:
    if what == "stash":
        model = layer_norm_model([2, 8], -1, 0, stash_type=11)
    elif what == "broadcast":
        model = layer_norm_model([2, 3, 8], -1, 0)
        s = onnx.numpy_helper.from_array(np.ones([1, 8], F32), "s")
        model.graph.initializer[0].CopyFrom(s)
    else:
        model = layer_norm_model([2, 8], -1, 0, stats=True)
        model.graph.node[-1].output[2] = ""
        del model.graph.output[2]
    with pytest.raises(UnsupportedError, match="node 'ln'"):
        codegen.verify(model, samples=1, seed=0)


@in_qemu
@pytest.mark.parametrize("board", ["cortex-m4f", "cortex-m0plus"])
def test_layer_norm_on_cortex_m(board: str) -> None:
    # Both row kernels, with a 4..7 tail, and the statistics, in soft or single-precision
    # hardware float (the double-precision mean is soft float on both).
    model = layer_norm_model([3, 21], -1, 3, stats=True)
    assert codegen.verify(model, board=board, samples=1).ok
    model = layer_norm_model([4, 5], -1, 4, quantized=True)
    assert codegen.verify(model, board=board, samples=1).ok
