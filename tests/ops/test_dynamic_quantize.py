"""quantize_dynamic's arithmetic against ONNX Runtime, bit for bit: DynamicQuantizeLinear
(MLAS's min/max lanes, with NaN in every position of short and long tensors, all-zero,
constant, one-signed, huge and tiny inputs, the zero point's clamp and rounding) and
MatMulInteger and ConvInteger with the zero point it computes at run time, followed by
the float scaling (ORT fuses the MatMul's into MatMulIntegerToFloat or
DynamicQuantizeMatMul: the same bits as the graph)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from conftest import SANITIZE, in_qemu
from modelgen import graph_model
from onnx import helper

import codegen

F32 = np.float32


def dql_model(n: int) -> onnx.ModelProto:
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"], name="dql")]
    return graph_model(nodes, {"x": ("float32", [n])},
                       {"y": "uint8", "s": "float32", "z": "uint8"}, {}, opset=13)


def dql_inputs(n: int, rng: np.random.Generator) -> list[np.ndarray]:
    base = rng.normal(0, 3, n).astype(F32)
    cases = [base, np.zeros(n, F32), np.full(n, F32(2.5)), np.abs(base), -np.abs(base),
             (base * F32(1e30)).astype(F32), (base * F32(1e-38)).astype(F32)]
    for at in sorted({0, n // 3, n - 1, max(n - 9, 0)}):  # NaN in lanes, chunks and tails
        nan = base.copy()
        nan[at] = np.nan
        cases.append(nan)
    inf = base.copy()
    inf[n // 2] = np.inf
    cases.append(inf)
    return cases


@pytest.mark.parametrize("n", [1, 5, 8, 13, 32, 45, 77, 200])
def test_dynamic_quantize_linear_matches_ort(n: int) -> None:
    rng = np.random.default_rng(n)
    model = dql_model(n)
    for x in dql_inputs(n, rng):
        report = codegen.verify(model, inputs={"x": x}, cflags=SANITIZE)
        assert report.ok, (x, report.outputs)


def dynamic_matmul_model(k: int, n: int, seed: int, weights: str) -> onnx.ModelProto:
    """quantize_dynamic's MatMul: DQL(x) -> MatMulInteger -> Cast -> Mul(scales) -> Add."""
    rng = np.random.default_rng(seed)
    lo, hi = (-127, 127) if weights == "int8" else (0, 255)
    inits = {"w": rng.integers(lo, hi + 1, (k, n)).astype(weights),
             "ws": np.array(rng.uniform(0.001, 0.02), F32),
             "wz": np.array(0 if weights == "int8" else 131, weights),
             "bias": rng.normal(0, 1, n).astype(F32)}
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
             helper.make_node("MatMulInteger", ["xq", "w", "xz", "wz"], ["acc"]),
             helper.make_node("Cast", ["acc"], ["accf"], to=onnx.TensorProto.FLOAT),
             helper.make_node("Mul", ["xs", "ws"], ["scale"]),
             helper.make_node("Mul", ["accf", "scale"], ["prod"]),
             helper.make_node("Add", ["prod", "bias"], ["y"])]
    return graph_model(nodes, {"x": ("float32", [2, 3, k])}, {"y": "float32"}, inits,
                       opset=13)


@pytest.mark.parametrize("k,n,weights", [(16, 8, "int8"), (45, 11, "uint8"), (7, 1, "int8")])
def test_dynamic_matmul_matches_ort(k: int, n: int, weights: str) -> None:
    model = dynamic_matmul_model(k, n, k + n, weights)
    report = codegen.verify(model, samples=4, cflags=SANITIZE)
    assert report.ok, report.outputs


@in_qemu
@pytest.mark.parametrize("board", ["cortex-m4f", "cortex-m0plus"])
def test_dynamic_matmul_on_cortex_m(board: str) -> None:
    report = codegen.verify(dynamic_matmul_model(40, 6, 2, "int8"), board=board, samples=2)
    assert report.ok, report.outputs


def dynamic_conv_model(weights: str, group: int) -> onnx.ModelProto:
    """quantize_dynamic's Conv: DQL(x) -> ConvInteger (padding holds the run-time zero
    point) -> Cast -> Mul(Mul(scales)) -> Add(bias), which ORT leaves unfused."""
    rng = np.random.default_rng(group)
    lo, hi = (-127, 127) if weights == "int8" else (0, 255)
    inits = {"w": rng.integers(lo, hi + 1, (6, 6 // group, 3, 3)).astype(weights),
             "ws": np.array(0.01, F32), "wz": np.array(0 if weights == "int8" else 120, weights),
             "bias": rng.normal(0, 1, (1, 6, 1, 1)).astype(F32)}
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
             helper.make_node("ConvInteger", ["xq", "w", "xz", "wz"], ["acc"],
                              pads=[1, 1, 1, 1], strides=[2, 1], group=group),
             helper.make_node("Cast", ["acc"], ["accf"], to=onnx.TensorProto.FLOAT),
             helper.make_node("Mul", ["xs", "ws"], ["scale"]),
             helper.make_node("Mul", ["accf", "scale"], ["prod"]),
             helper.make_node("Add", ["prod", "bias"], ["y"])]
    return graph_model(nodes, {"x": ("float32", [1, 6, 7, 5])}, {"y": "float32"}, inits,
                       opset=13)


@pytest.mark.parametrize("weights,group", [("int8", 1), ("uint8", 1), ("int8", 6)])
def test_dynamic_conv_matches_ort(weights: str, group: int) -> None:
    model = dynamic_conv_model(weights, group)
    report = codegen.verify(model, samples=4, cflags=SANITIZE)
    assert report.ok, report.outputs


def dynamic_lstm_model(seq: int, k: int, hidden: int, direction: str, weights: str,
                       per_row: bool, states: bool, clip: float | None,
                       int8_zero_point: int = 0) -> onnx.ModelProto:
    """com.microsoft DynamicQuantizeLSTM as quantize_dynamic writes it: W [dirs, k, 4h],
    R [dirs, h, 4h] 8-bit with scales and zero points per direction or per gate row."""
    rng = np.random.default_rng(seq * k + hidden)
    nd = 2 if direction == "bidirectional" else 1
    lo, hi = (-127, 127) if weights == "int8" else (0, 255)
    scale_shape = (nd, 4 * hidden) if per_row else (nd,)

    def zero_point() -> np.ndarray:
        if weights == "int8":
            return np.full(scale_shape, int8_zero_point, np.int8)
        return np.full(scale_shape, rng.integers(100, 156), np.uint8)  # ORT: one value

    inits = {"w": rng.integers(lo, hi + 1, (nd, k, 4 * hidden)).astype(weights),
             "r": rng.integers(lo, hi + 1, (nd, hidden, 4 * hidden)).astype(weights),
             "b": rng.normal(0, 0.3, (nd, 8 * hidden)).astype(F32),
             "ws": rng.uniform(0.002, 0.02, scale_shape).astype(F32), "wz": zero_point(),
             "rs": rng.uniform(0.002, 0.02, scale_shape).astype(F32), "rz": zero_point()}
    inputs = ["x", "w", "r", "b", "", "", "", "", "ws", "wz", "rs", "rz"]
    if states:
        inits["h0"] = rng.normal(0, 0.5, (nd, 1, hidden)).astype(F32)
        inits["c0"] = rng.normal(0, 0.5, (nd, 1, hidden)).astype(F32)
        inputs[5:7] = ["h0", "c0"]
    attrs: dict[str, object] = {"hidden_size": hidden, "direction": direction}
    if clip is not None:
        attrs["clip"] = clip
    nodes = [helper.make_node("DynamicQuantizeLSTM", inputs, ["y", "y_h", "y_c"],
                              domain="com.microsoft", **attrs)]
    return graph_model(nodes, {"x": ("float32", [seq, 1, k])},
                       {"y": "float32", "y_h": "float32", "y_c": "float32"}, inits, opset=13,
                       ms_domain=True)


@pytest.mark.parametrize("seq,k,hidden,direction,weights,per_row,states,clip", [
    (5, 10, 16, "forward", "int8", False, False, None),
    (3, 7, 5, "reverse", "uint8", True, True, None),
    (6, 33, 12, "bidirectional", "int8", True, True, 1.5),
    (1, 4, 3, "forward", "uint8", False, False, None)])
def test_dynamic_quantize_lstm_matches_ort(seq: int, k: int, hidden: int, direction: str,
                                           weights: str, per_row: bool, states: bool,
                                           clip: float | None) -> None:
    """The input quantized once for the whole sequence, h each step, the products exact in
    int32, scaled per gate row, then the float LSTM's gates."""
    model = dynamic_lstm_model(seq, k, hidden, direction, weights, per_row, states, clip)
    report = codegen.verify(model, samples=4, cflags=SANITIZE)
    assert report.ok, report.outputs


def test_dynamic_quantize_lstm_where_ort_saturates(monkeypatch: pytest.MonkeyPatch) -> None:
    """On x86 without VNNI ORT adds u8 x s8 products in saturating int16 pairs: verify
    then compares with the same model's int8 W and R moved to uint8 (exact in ORT)."""
    monkeypatch.setenv("ONNX2MCU_ORT_U8S8_SATURATES", "1")
    model = dynamic_lstm_model(4, 12, 8, "bidirectional", "int8", True, False, None)
    report = codegen.verify(model, samples=3, cflags=SANITIZE)
    assert report.ok, report.outputs


def test_inspect_says_what_run_time_quantization_costs(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    """On an MCU the min/max pass and the divisions are the price of dynamic quantization:
    inspect counts them (the LSTM: its input once and h at each step, per direction)."""
    from codegen import cli

    path = tmp_path / "lstm.onnx"
    onnx.save(dynamic_lstm_model(5, 10, 16, "bidirectional", "int8", False, False, None), path)
    assert cli.main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "run-time quantization: 1 node(s) find the min/max of 260 float values per " \
        "inference" in out, out


def test_dynamic_quantize_lstm_int8_weights_with_a_zero_point_are_refused() -> None:
    """ORT: "InputWeight zero point must be zero" for int8 weights (uint8 ones take any:
    the cases above)."""
    model = dynamic_lstm_model(4, 9, 6, "forward", "int8", True, True, None,
                               int8_zero_point=-5)
    with pytest.raises(codegen.errors.ModelError, match="requires 0 for int8 weights"):
        codegen.verify(model, samples=1)
