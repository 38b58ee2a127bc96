"""Refusals of models with float weights or biases say what would work, and only that:
a float model is told to be quantized, and a float island suggests --integer-only only
when that option really takes the model. The models are built by hand with onnx.helper
in the patterns the tools write (documented at each builder)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from cli_inprocess import run_cli
from numpy.typing import NDArray
from onnx import TensorProto, helper, numpy_helper
from roundtrip import check_round_trip

import codegen
from codegen.options import Options
from codegen.oracle.verify import SATURATION_ENV
from codegen.pipeline import generate_sources

F32 = np.float32
SHAPE = [1, 3, 8, 8]


class Builder:
    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.rng = np.random.default_rng(0)

    def const(self, name: str, value: NDArray[Any]) -> str:
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(self, op: str, inputs: list[str], out: str, **attrs: Any) -> str:
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def qdq(self, x: str, name: str, scale: float, zp: int, dtype: Any) -> str:
        """An activation's QuantizeLinear -> DequantizeLinear pair."""
        s = self.const(f"{name}_scale", np.array(scale, F32))
        z = self.const(f"{name}_zero_point", np.array(zp, dtype))
        q = self.node("QuantizeLinear", [x, s, z], f"{name}_q")
        return self.node("DequantizeLinear", [q, s, z], f"{name}_dq")

    def weights(self, shape: tuple[int, ...]) -> NDArray[Any]:
        fan_in = int(np.prod(shape[1:]))
        return self.rng.normal(0, np.sqrt(2 / fan_in), shape).astype(F32)

    def model(self, name: str, out: str, out_shape: list[int], in_type: int = TensorProto.FLOAT,
              in_shape: list[int] | None = None, out_type: int = TensorProto.FLOAT
              ) -> onnx.ModelProto:
        graph = helper.make_graph(
            self.nodes, name, [helper.make_tensor_value_info("x", in_type, in_shape or SHAPE)],
            [helper.make_tensor_value_info(out, out_type, out_shape)], self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        model.ir_version = 8
        onnx.checker.check_model(model)
        return model


def plain_float_cnn() -> onnx.ModelProto:
    """A float CNN as a PyTorch or Keras export writes it: no quantization at all. Its
    grouped convolution of float weights is one onnx2mcu does not reproduce (ORT's
    other float kernels it does, and it then generates a float model)."""
    b = Builder()
    y = b.node("Conv", ["x", b.const("w1", b.weights((4, 3, 3, 3))),
                        b.const("b1", np.zeros(4, F32))], "conv1", pads=[1] * 4)
    y = b.node("Relu", [y], "relu1")
    y = b.node("Conv", [y, b.const("w_grouped", b.weights((4, 2, 3, 3)))], "grouped",
               pads=[1] * 4, group=2)
    y = b.node("MaxPool", [y], "pool1", kernel_shape=[2, 2], strides=[2, 2])
    y = b.node("Flatten", [y], "flatten", axis=1)
    y = b.node("Gemm", [y, b.const("w2", b.weights((10, 64))), b.const("b2", np.zeros(10, F32))],
               "y", transB=1)
    return b.model("float_cnn", y, [1, 10])


def tf2onnx_dequantized(io: str) -> onnx.ModelProto:
    """What `tf2onnx --tflite M.tflite --dequantize` writes for a fully quantized TFLite
    CNN (tf2onnx/tflite_utils.py, tflite_rewriters/tfl_qdq_rewriter.py,
    tflite_handlers/tfl_math.py): every constant DEQUANTIZE folded into a float
    initializer (weights and biases), every QUANTIZE -> DEQUANTIZE pair between operators
    removed (a Relu added where the range started at 0), NHWC kept with Transposes
    around the convolution. With float I/O ("float") nothing quantized is left; with
    int8 I/O ("int8") the input's DEQUANTIZE becomes Cast -> Sub -> Mul and the output
    keeps its QuantizeLinear."""
    b = Builder()
    x = "x"
    if io == "int8":
        x = b.node("Cast", [x], "x_cast", to=TensorProto.FLOAT)
        x = b.node("Sub", [x, b.const("x_zero_point", np.array(-1, F32))], "x_sub")
        x = b.node("Mul", [x, b.const("x_scale", np.array(0.02, F32))], "x_dequant")
    y = b.node("Transpose", [x], "to_nchw", perm=[0, 3, 1, 2])
    y = b.node("Conv", [y, b.const("conv_w", b.weights((4, 3, 3, 3))),
                        b.const("conv_b", np.full(4, 0.1, F32))], "conv", pads=[1] * 4)
    y = b.node("Relu", [y], "conv_relu")
    # A grouped convolution: ORT's kernel for its float weights is not reproduced.
    y = b.node("Conv", [y, b.const("grouped_w", b.weights((4, 2, 3, 3)))], "grouped",
               pads=[1] * 4, group=2)
    y = b.node("Transpose", [y], "to_nhwc", perm=[0, 2, 3, 1])
    y = b.node("Reshape", [y, b.const("shape", np.array([1, -1], np.int64))], "flat")
    fc_w = b.rng.normal(0, 0.06, (256, 10)).astype(F32)
    y = b.node("MatMul", [y, b.const("fc_w", fc_w)], "fc")
    y = b.node("Add", [y, b.const("fc_b", np.zeros(10, F32))], "logits")
    out_type = TensorProto.FLOAT
    if io == "int8":
        y = b.node("QuantizeLinear", [y, b.const("y_scale", np.array(0.1, F32)),
                                      b.const("y_zero_point", np.array(0, np.int8))], "y")
        out_type = TensorProto.INT8
    return b.model(f"tf2onnx_dequantized_{io}", y, [1, 10],
                   in_type=TensorProto.INT8 if io == "int8" else TensorProto.FLOAT,
                   in_shape=[1, 8, 8, 3], out_type=out_type)


def qdq_with_float_weights() -> onnx.ModelProto:
    """Activations quantized with Q/DQ pairs, the convolution's weights and bias left as
    float initializers (weights kept float, as tf2onnx --dequantize leaves them, inside
    a QDQ network)."""
    b = Builder()
    x = b.qdq("x", "x", 0.02, 128, np.uint8)
    y = b.node("Conv", [x, b.const("w", b.weights((4, 3, 3, 3))),
                        b.const("b", np.full(4, 0.1, F32))], "conv", pads=[1] * 4)
    y = b.qdq(y, "conv", 0.05, 128, np.uint8)
    b.nodes[-1].output[0] = "y"
    return b.model("qdq_float_weights", "y", [1, 4, 8, 8])


def nncf_style(activations: Any, weights: str = "float") -> onnx.ModelProto:
    """The pattern NNCF's ONNX post-training quantization writes: activations as
    QuantizeLinear -> DequantizeLinear pairs, symmetric (zero point 0, its default
    preset), uint8 or int8 throughout; weights int8, symmetric,
    per output channel (axis 0), either as the float initializer -> QuantizeLinear ->
    DequantizeLinear it inserts ("float") or, after its
    compress_quantize_weights_transformation, as an int8 initializer -> DequantizeLinear
    ("int8"); and every Conv bias left a float initializer read by the Conv directly."""
    b = Builder()
    signed = activations is np.int8
    zp = 0
    x = b.qdq("x", "x", 0.02, zp, activations)
    for i, (cin, cout) in enumerate(((3, 8), (8, 8))):
        w = b.weights((cout, cin, 3, 3))
        scale = (np.abs(w).reshape(cout, -1).max(axis=1) / 127).astype(F32)
        params = [b.const(f"w{i}_scale", scale),
                  b.const(f"w{i}_zero_point", np.zeros(cout, np.int8))]
        if weights == "float":
            wq = b.node("QuantizeLinear", [b.const(f"w{i}", w), *params], f"w{i}_q", axis=0)
        else:
            wq = b.const(f"w{i}_q", np.rint(w / scale.reshape(-1, 1, 1, 1)).astype(np.int8))
        wdq = b.node("DequantizeLinear", [wq, *params], f"w{i}_dq", axis=0)
        bias = b.const(f"b{i}", b.rng.normal(0, 0.2, cout).astype(F32))
        y = b.node("Conv", [x, wdq, bias], f"conv{i}", pads=[1] * 4)
        y = b.node("Relu", [y], f"relu{i}")
        x = b.qdq(y, f"act{i}", 0.03, zp, activations)
    b.nodes[-1].output[0] = "y"
    return b.model(f"nncf_{'int8' if signed else 'uint8'}", "y", [1, 8, 8, 8])


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "codegen.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=600, check=False)


def refusal(result: subprocess.CompletedProcess[str]) -> str:
    """The one line of a clean refusal: exit code 2, no traceback, nothing on stdout."""
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("onnx2mcu: error: "), result.stderr
    return lines[0].removeprefix("onnx2mcu: error: ")


def float_model(path: Path) -> str:
    return ("is a float model, not quantized: quantize it with `onnx2mcu quantize "
            f"{path} -o {path.with_name(path.stem + '_int8.onnx')} --calibration DATA` (ONNX "
            "Runtime's quantizer, with samples of your data)")


@pytest.mark.parametrize("build,name", [(plain_float_cnn, "float_cnn"),
                                        (lambda: tf2onnx_dequantized("float"), "m")])
def test_a_float_model_is_told_to_be_quantized(build: Any, name: str, tmp_path: Path) -> None:
    path = tmp_path / f"{name}.onnx"
    onnx.save(build(), path)
    # The first through a real interpreter, the others in this process.
    for run, command in ((cli, ["generate", path, "-o", tmp_path / "out"]),
                         (run_cli, ["verify", path]),
                         (run_cli, ["generate", path, "-o", tmp_path / "out",
                                    "--integer-only"])):
        assert refusal(run(*command)) == f"model '{name}' {float_model(path)}"
    assert not (tmp_path / "out").exists()
    inspected = run_cli("inspect", path)
    assert inspected.returncode == 2, inspected.stderr
    assert inspected.stdout.splitlines()[-2:] == [
        "unsupported: 1 node(s)", f"  model '{name}' {float_model(path)}"], inspected.stdout


def generatable_float_cnn() -> onnx.ModelProto:
    """A float model onnx2mcu generates (every kernel reproduces ORT's float one)."""
    b = Builder()
    y = b.node("Conv", ["x", b.const("w1", b.weights((4, 3, 3, 3))),
                        b.const("b1", np.zeros(4, F32))], "conv1", pads=[1] * 4)
    y = b.node("Relu", [y], "relu1")
    return b.model("float_cnn", y, [1, 4, 8, 8])


def test_a_generated_float_model_is_noted_once_on_every_command(tmp_path: Path) -> None:
    """A float model is accepted (bit-exact with ORT), and every command that builds it
    says once what that costs and how to quantize it; inspect and verify count its float
    nodes alike."""
    path = tmp_path / "float_cnn.onnx"
    onnx.save(generatable_float_cnn(), path)
    np.savez(tmp_path / "in.npz", x=np.ones(SHAPE, F32))
    command = f"onnx2mcu quantize {path} -o {tmp_path / 'float_cnn_int8.onnx'} " \
              "--calibration DATA"
    runs = {"inspect": run_cli("inspect", path),
            "generate": run_cli("generate", path, "-o", tmp_path / "out"),
            "verify": run_cli("verify", path, "--samples", "2"),
            "report": run_cli("report", path),
            "run": run_cli("run", path, "--inputs", tmp_path / "in.npz", "--output",
                           tmp_path / "out.npz")}
    for name, result in runs.items():
        assert result.returncode == 0, (name, result.stderr)
        notes = [line for line in result.stdout.splitlines() if "is not quantized" in line]
        assert len(notes) == 1, (name, result.stdout)
        assert notes[0].startswith("note: model 'float_cnn' is not quantized: its 2 node(s) "
                                   "run in float32 (arena "), notes[0]
        assert notes[0].endswith(command), notes[0]
    assert "float islands: 2 node(s)" in runs["inspect"].stdout
    assert "note: float islands: 2 node(s) computed in float32" in runs["verify"].stdout
    soft = run_cli("inspect", path, "--board", "cortex-m0plus")
    assert "this board has no FPU, so each float operation is a software floating-point " \
           "call" in soft.stdout
    quantized = run_cli("inspect", Path(__file__).parents[2] / "examples" / "tiny_cnn_qop.onnx")
    assert "is not quantized" not in quantized.stdout


def test_tf2onnx_dequantized_with_int8_io_is_refused_as_a_float_model(tmp_path: Path) -> None:
    """Its input's dequantization (Cast, Sub, Mul) and output QuantizeLinear are adapters
    around a float network: refused as a float model, saying so, with or without
    --integer-only (the real conversions are in the corpus, tests/networks/test_corpus.py)."""
    onnx.save(tf2onnx_dequantized("int8"), tmp_path / "m.onnx")
    for extra in ([], ["--integer-only"]):
        message = refusal(run_cli("generate", tmp_path / "m.onnx", "-o", tmp_path / "out",
                                  *extra))
        assert message.startswith("model 'm' is a float model with 8-bit I/O adapters "
                                  "(Cast/Sub/Mul on its inputs"), message
        assert "tf2onnx --dequantize" in message and "--integer-only" not in message
    assert not (tmp_path / "out").exists()


def test_float_weights_in_a_qdq_model_are_quantized_as_ort_does(tmp_path: Path) -> None:
    """A Conv between DequantizeLinear and QuantizeLinear with float weights and bias:
    ORT 1.32 quantizes them (WeightBiasQuantization: int8 per tensor, int32 bias) and
    fuses the unit into a QLinearConv; so does onnx2mcu, bit-exact, in both modes."""
    model = qdq_with_float_weights()
    for integer_only in (False, True):
        gen = generate_sources(model, Options(integer_only=integer_only))
        assert [n.op_type for n in gen.graph.nodes].count("QLinearConv") == 1
        report = codegen.verify(model, samples=3, integer_only=integer_only)
        assert report.ok, report.outputs
    check_round_trip(model, tmp_path, integer_only=False, samples=2)


def test_float_weights_are_those_ort_quantizes(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The int8 weights and int32 bias onnx2mcu computes from float weights are those in
    ORT's own optimized graph (WeightBiasQuantization), on any CPU; and where ORT
    saturates u8 x s8 (forced here), the reference gives ORT those integers as uint8
    (+128) so that it computes them exactly, and the C matches it."""
    import onnxruntime as ort

    model = qdq_with_float_weights()
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    ort.InferenceSession(model.SerializeToString(), options,
                         providers=["CPUExecutionProvider"])
    optimized = onnx.load(tmp_path / "optimized.onnx")
    theirs = {i.name: numpy_helper.to_array(i) for i in optimized.graph.initializer}
    int8 = [v for v in theirs.values() if v.dtype == np.int8 and v.ndim == 4]
    int32 = [v for v in theirs.values() if v.dtype == np.int32 and v.ndim == 1]
    graph = generate_sources(model, Options()).graph
    conv = next(n for n in graph.nodes if n.op_type == "QLinearConv")
    assert len(int8) == 1 and np.array_equal(int8[0], graph.constants[conv.inputs[3]])
    assert len(int32) == 1 and np.array_equal(int32[0], graph.constants[conv.inputs[8]])
    monkeypatch.setenv(SATURATION_ENV, "1")
    report = codegen.verify(model, samples=3)
    assert report.ok, report.outputs
    assert report.reference == "the model with int8 weights moved to uint8", report.reference


def test_gemm_alpha_with_a_bias_does_not_suggest_integer_only() -> None:
    """QGemm has no alpha with a bias, in integer-only mode too."""
    b = Builder()
    x = b.qdq("x", "x", 0.05, 128, np.uint8)
    w = b.node("DequantizeLinear", [b.const("w", np.ones((5, 16), np.int8)),
                                    b.const("ws", np.array(0.02, F32))], "w_dq")
    bias = b.node("DequantizeLinear", [b.const("b", np.ones(5, np.int32)),
                                       b.const("bs", np.array(0.001, F32))], "b_dq")
    y = b.node("Gemm", [x, w, bias], "gemm", transB=1, alpha=0.5)
    y = b.qdq(y, "y", 0.1, 128, np.uint8)
    model = b.model("alpha", y, [2, 5], in_shape=[2, 16])
    for integer_only in (False, True):
        with pytest.raises(codegen.UnsupportedError, match=r"alpha=0\.5") as error:
            generate_sources(model, Options(integer_only=integer_only))
        assert "--integer-only" not in str(error.value)


@pytest.mark.parametrize("weights", ["float", "int8"])
def test_nncf_float_bias_is_quantized_as_ort_does(weights: str, tmp_path: Path) -> None:
    """NNCF's float biases: ORT quantizes each one to int32 round(bias / (x_scale *
    w_scale)) and fuses the Conv (WeightBiasQuantization); so does onnx2mcu, in both
    modes, bit-exact, and the converted model carries that int32 bias exactly."""
    model = nncf_style(np.uint8, weights)
    for integer_only in (False, True):
        gen = generate_sources(model, Options(integer_only=integer_only))
        assert [n.op_type for n in gen.graph.nodes].count("QLinearConv") == 2
        report = codegen.verify(model, samples=2, integer_only=integer_only)
        assert report.ok, report.outputs
        check_round_trip(model, tmp_path, integer_only=integer_only, samples=2)


def test_nncf_float_bias_on_a_float_island_is_quantized_as_ort_does() -> None:
    """int8 activations after a Relu: the Relu is not redundant before the int8
    QuantizeLinear, so ORT keeps each Conv in float; its WeightBiasQuantization still
    quantizes the float bias (the path to the QuantizeLinear goes through the Relu), and
    the float island computes with that int32 bias, as onnx2mcu does. --integer-only
    fuses the units into integer kernels."""
    model = nncf_style(np.int8)
    gen = generate_sources(model, Options())
    assert [n.op_type for n in gen.graph.nodes].count("Conv") == 2
    report = codegen.verify(model, samples=3)
    assert report.ok, report.outputs
    report = codegen.verify(model, samples=2, integer_only=True)
    assert report.ok, report.outputs
