"""GRU as a float island in ONNX Runtime's DeepCPU order (codegen/ops/recurrent.py,
runtime_c/recurrent_f32.c) against ONNX Runtime: randomized sizes (input sizes across
the packed SGEMM's K block of 256, several hidden sizes, 1..50 steps), every direction,
linear_before_reset 0 and 1, with and without B and initial_h, Y and/or Y_h; a QDQ
model; the refusals."""

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
from codegen.options import Options
from codegen.pipeline import generate_sources

F32 = np.float32
DIRECTIONS = ("forward", "reverse", "bidirectional")


def gru_model(seed: int, outputs: str = "both", qdq: bool = False,
              **overrides: Any) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    direction = overrides.pop("direction", DIRECTIONS[seed % 3])
    nd = 2 if direction == "bidirectional" else 1
    seq = int(overrides.pop("seq", rng.integers(1, 51)))
    size = int(overrides.pop("input_size", rng.choice([1, 3, 10, 40, 300])))
    hidden = int(overrides.pop("hidden", rng.choice([1, 2, 5, 8, 16, 33])))
    batch = int(overrides.pop("batch", 1))
    inits: dict[str, NDArray[Any]] = {
        "W": rng.normal(0, 0.5, (nd, 3 * hidden, size)).astype(F32),
        "R": rng.normal(0, 0.5, (nd, 3 * hidden, hidden)).astype(F32)}
    names = ["x", "W", "R", "", "", ""]
    if overrides.pop("bias", rng.random() < 0.7):
        inits["B"] = rng.normal(0, 0.5, (nd, 6 * hidden)).astype(F32)
        names[3] = "B"
    if overrides.pop("initial_h", rng.random() < 0.7):
        inits["h0"] = rng.normal(0, 0.5, (nd, batch, hidden)).astype(F32)
        names[5] = "h0"
    nodes: list[onnx.NodeProto] = []
    source = "x"
    if qdq:
        inits.update(xs=np.array(0.02, F32), xz=np.array(128, np.uint8),
                     ys=np.array(0.008, F32), yz=np.array(128, np.uint8))
        nodes.append(helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["x"]))
    attrs = {"hidden_size": hidden, "direction": direction,
             "linear_before_reset": int(overrides.pop("lbr", rng.integers(0, 2)))}
    attrs.update(overrides)
    gru_outs = {"both": ["y", "y_h"], "y": ["y"], "y_h": ["", "y_h"]}[outputs]
    nodes.append(helper.make_node("GRU", names, gru_outs, name="gru", **attrs))
    outs = {n: "float32" for n in gru_outs if n}
    if qdq:
        for n in list(outs):
            nodes.append(helper.make_node("QuantizeLinear", [n, "ys", "yz"], [n + "_q"]))
        outs = {n + "_q": "uint8" for n in outs}
        source = "xq"
    dtype = "uint8" if qdq else "float32"
    return graph_model(nodes, {source: (dtype, [seq, batch, size])}, outs, inits, opset=14)


@pytest.mark.parametrize("seed", range(12))
def test_gru_matches_ort(seed: int) -> None:
    outputs = ("both", "y", "y_h")[(seed // 3) % 3]
    report = codegen.verify(gru_model(seed, outputs), samples=2, seed=seed, cflags=SANITIZE)
    assert report.ok, report.outputs


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("lbr", [0, 1])
def test_gru_k_blocks(direction: str, lbr: int) -> None:
    model = gru_model(100 + lbr, direction=direction, lbr=lbr, input_size=300, hidden=17,
                      seq=5, bias=True, initial_h=True)
    report = codegen.verify(model, samples=2, seed=lbr, cflags=SANITIZE)
    assert report.ok, report.outputs


@pytest.mark.parametrize("seed", range(3))
def test_gru_qdq(seed: int) -> None:
    model = gru_model(200 + seed, qdq=True, seq=20, input_size=10, hidden=16, lbr=1)
    for requant in ("float", "int"):
        report = codegen.verify(model, samples=3, seed=seed, requant=requant, cflags=SANITIZE)
        assert report.ok, report.outputs


def refused(model: onnx.ModelProto) -> str:
    with pytest.raises(codegen.UnsupportedError) as info:
        generate_sources(model, Options())
    return str(info.value)


# (f, g) per direction, with alphas and betas: every activation ORT takes without exp,
# in every role (ORT's special Sigmoid, Tanh and Relu gate functions and its scalar ones).
GRU_ACTIVATIONS = [
    (["Relu", "Tanh"], [], []),
    (["Sigmoid", "Relu"], [], []),
    (["Tanh", "Sigmoid"], [], []),
    (["HardSigmoid", "Softsign"], [0.3], [0.4]),
    (["LeakyRelu", "Affine"], [0.1, 0.5], [0.2]),
    (["Sigmoid", "ThresholdedRelu"], [0.2], []),
    (["Affine", "LeakyRelu"], [], []),  # ORT's defaults where no alpha/beta is left
    (["Sigmoid", "Elu"], [0.7], []),  # glibc's expf
    (["ScaledTanh", "Softplus"], [0.9], [1.3]),  # expf, and logf
]


@pytest.mark.parametrize("case", range(len(GRU_ACTIVATIONS)))
@pytest.mark.parametrize("lbr", [0, 1])
def test_gru_activations_and_clip(case: int, lbr: int) -> None:
    names, alphas, betas = GRU_ACTIVATIONS[case]
    attrs: dict[str, Any] = {"activations": names + names[::-1], "clip": 1.5 + case}
    if alphas:
        attrs["activation_alpha"] = alphas * 2
    if betas:
        attrs["activation_beta"] = betas * 2
    model = gru_model(400 + case, direction="bidirectional", lbr=lbr, seq=7, input_size=10,
                      hidden=6, bias=case % 2 == 0, **attrs)
    report = codegen.verify(model, samples=2, seed=case, cflags=SANITIZE)
    assert report.ok, (names, report.outputs)


def test_gru_refusals() -> None:
    assert "batch of 2" in refused(gru_model(0, batch=2))
    assert "layout 1" in refused(gru_model(0, layout=1))


def test_gru_computed_weights_refused() -> None:
    model = gru_model(0, direction="forward", hidden=4, input_size=3)
    graph = model.graph
    w = next(i for i in graph.initializer if i.name == "W")
    values = onnx.numpy_helper.to_array(w)
    graph.initializer.remove(w)
    graph.initializer.extend([
        onnx.numpy_helper.from_array(np.round(values / 0.01).clip(-127, 127).astype(np.int8),
                                     "Wq"),
        onnx.numpy_helper.from_array(np.array(0.01, F32), "Ws")])
    graph.node.insert(0, helper.make_node("DequantizeLinear", ["Wq", "Ws"], ["W"]))
    message = refused(model)
    assert "node 'gru'" in message and "pre-packs" in message


def lstm_model(seed: int, outputs: tuple[str, ...], **attrs: Any) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    direction = attrs.pop("direction", DIRECTIONS[seed % 3])
    nd = 2 if direction == "bidirectional" else 1
    seq, size = int(rng.integers(1, 30)), int(rng.choice([1, 3, 10, 40, 300]))
    hidden = int(rng.choice([1, 2, 5, 8, 16, 33]))
    inits: dict[str, NDArray[Any]] = {
        "W": rng.normal(0, 0.5, (nd, 4 * hidden, size)).astype(F32),
        "R": rng.normal(0, 0.5, (nd, 4 * hidden, hidden)).astype(F32)}
    names = ["x", "W", "R", "", "", "", ""]
    for index, name, shape in ((3, "B", (nd, 8 * hidden)), (5, "h0", (nd, 1, hidden)),
                               (6, "c0", (nd, 1, hidden))):
        if rng.random() < 0.7:
            inits[name] = rng.normal(0, 0.5, shape).astype(F32)
            names[index] = name
    node = helper.make_node("LSTM", names, list(outputs), name="lstm", hidden_size=hidden,
                            direction=direction, **attrs)
    return graph_model([node], {"x": ("float32", [seq, 1, size])},
                       {n: "float32" for n in outputs if n}, inits, opset=14)


OUTPUT_SETS = (("y", "y_h", "y_c"), ("y",), ("", "y_h"), ("", "", "y_c"), ("y", "y_h"),
               ("y", "", "y_c"), ("", "y_h", "y_c"))


@pytest.mark.parametrize("seed", range(14))
def test_lstm_matches_ort(seed: int) -> None:
    model = lstm_model(300 + seed, OUTPUT_SETS[seed % len(OUTPUT_SETS)])
    report = codegen.verify(model, samples=2, seed=seed, cflags=SANITIZE)
    assert report.ok, report.outputs


# (f, g, h) with alphas and betas.
LSTM_ACTIVATIONS = [
    (["Relu", "Tanh", "Sigmoid"], [], []),
    (["Sigmoid", "Relu", "Relu"], [], []),
    (["HardSigmoid", "Softsign", "Affine"], [0.25, 0.8], [0.45, -0.1]),
    (["Tanh", "LeakyRelu", "ThresholdedRelu"], [0.05, 0.3], []),
    (["Sigmoid", "Tanh", "Tanh"], [], []),
    (["Sigmoid", "Elu", "Softplus"], [1.2], []),
    (["ScaledTanh", "Tanh", "Elu"], [0.8, 0.5], [1.5]),
]


@pytest.mark.parametrize("case", range(len(LSTM_ACTIVATIONS)))
def test_lstm_activations_and_clip(case: int) -> None:
    names, alphas, betas = LSTM_ACTIVATIONS[case]
    attrs: dict[str, Any] = {"activations": names * 2, "clip": 0.5 + case,
                             "direction": "bidirectional"}
    if alphas:
        attrs["activation_alpha"] = alphas * 2
    if betas:
        attrs["activation_beta"] = betas * 2
    model = lstm_model(500 + case, ("y", "y_h", "y_c"), **attrs)
    report = codegen.verify(model, samples=2, seed=case, cflags=SANITIZE)
    assert report.ok, (names, report.outputs)


def test_lstm_refusals() -> None:
    model = lstm_model(300, ("y",))
    node = model.graph.node[0]
    node.attribute.append(helper.make_attribute("input_forget", 1))
    assert "input_forget" in refused(model)
    model = lstm_model(300, ("y",))
    model.graph.node[0].attribute.append(helper.make_attribute("layout", 1))
    assert "layout 1" in refused(model)


@in_qemu
@pytest.mark.parametrize("board", ["cortex-m4f", "cortex-m0plus"])
def test_recurrent_in_qemu(board: str) -> None:
    """The same bits from soft float (cortex-m0plus) and the FPU (cortex-m4f)."""
    for model in (gru_model(7, "both", seq=6, input_size=10, hidden=8, lbr=0),
                  gru_model(8, "both", seq=5, input_size=4, hidden=5, lbr=1, clip=1.0,
                            direction="forward", activations=["HardSigmoid", "Softsign"]),
                  lstm_model(302, ("y", "y_h", "y_c")),
                  lstm_model(303, ("y",), direction="forward", clip=0.7,
                             activations=["Relu", "Affine", "LeakyRelu"],
                             activation_alpha=[0.5, 0.1], activation_beta=[0.2])):
        report = codegen.verify(model, board=board, samples=1)
        assert report.ok, report.outputs


def test_lstm_qdq() -> None:
    model = lstm_model(305, ("y",))
    graph = model.graph
    x = graph.input[0]
    shape = [d.dim_value for d in x.type.tensor_type.shape.dim]
    graph.input.remove(x)
    graph.input.append(helper.make_tensor_value_info("xq", onnx.TensorProto.UINT8, shape))
    graph.initializer.extend([onnx.numpy_helper.from_array(np.array(0.02, F32), "xs"),
                              onnx.numpy_helper.from_array(np.array(128, np.uint8), "xz"),
                              onnx.numpy_helper.from_array(np.array(0.008, F32), "ys")])
    graph.node.insert(0, helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["x"]))
    graph.node.append(helper.make_node("QuantizeLinear", ["y", "ys", "xz"], ["y_q"]))
    graph.output.pop()
    graph.output.append(helper.make_tensor_value_info("y_q", onnx.TensorProto.UINT8, None))
    for requant in ("float", "int"):
        report = codegen.verify(model, samples=3, seed=1, requant=requant, cflags=SANITIZE)
        assert report.ok, report.outputs
