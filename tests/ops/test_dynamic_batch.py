"""Exports with dynamic axes: a graph input whose only dynamic dimension is a leading batch
axis (as torch.onnx.export with dynamic_axes and tf2onnx write them) is taken with batch
1, with one note in Graph.notes saying so; any other dynamic dimension is still refused.

The models are built the way those exporters write them (torch: NCHW, Gemm with transB,
the batch axis named as the user named it; tf2onnx: NHWC input, Transposes around the
convolutions, Dense as MatMul + Add, 'unk__N' or 'N' batch axes, on outputs too), then
quantized by ONNX Runtime's quantize_static in QOperator and QDQ format; and a real
torch.onnx.export of a tiny CNN, quantized the same way, committed under tests/models/."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
import zoo
from numpy.typing import NDArray
from onnx import TensorProto, helper, numpy_helper

import codegen
from codegen.errors import ShapeError
from codegen.frontend.importer import import_model
from codegen.options import Options
from codegen.pipeline import generate_sources

REPO = Path(__file__).resolve().parents[2]
TORCH_MODELS = REPO / "tests" / "models"
F32 = np.float32
Dim = int | str | None


def weights(rng: np.random.Generator, shape: tuple[int, ...], fan_in: int) -> NDArray[np.float32]:
    return rng.normal(0.0, np.sqrt(2.0 / fan_in), shape).astype(F32)


def value(name: str, dims: list[Dim]) -> onnx.ValueInfoProto:
    """A float value_info; None is a dimension with neither dim_value nor dim_param."""
    info = helper.make_tensor_value_info(name, TensorProto.FLOAT, [d or 0 for d in dims])
    for dim, declared in zip(info.type.tensor_type.shape.dim, dims, strict=True):
        if declared is None:
            dim.Clear()
    return info


def float_model(nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto],
                outputs: list[onnx.ValueInfoProto],
                initializers: dict[str, NDArray[Any]]) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "main_graph", inputs, outputs,
                              [numpy_helper.from_array(v, k) for k, v in initializers.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def torch_style(batch: Dim = "batch_size") -> onnx.ModelProto:
    """What torch.onnx.export(..., dynamic_axes={'input': {0: batch}, 'output': {0: batch}})
    writes for Conv-ReLU-MaxPool-Conv-ReLU-Flatten-Linear."""
    rng = np.random.default_rng(1)
    inits = {"conv1.weight": weights(rng, (8, 3, 3, 3), 27),
             "conv1.bias": np.zeros(8, F32) + 0.01,
             "conv2.weight": weights(rng, (8, 8, 3, 3), 72),
             "conv2.bias": np.zeros(8, F32) - 0.01,
             "fc.weight": weights(rng, (10, 8 * 4 * 4), 128),
             "fc.bias": np.zeros(10, F32) + 0.02}
    conv = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [1, 1]}
    nodes = [
        helper.make_node("Conv", ["input", "conv1.weight", "conv1.bias"],
                         ["/conv1/Conv_output_0"], name="/conv1/Conv", **conv),
        helper.make_node("Relu", ["/conv1/Conv_output_0"], ["/relu/Relu_output_0"],
                         name="/relu/Relu"),
        helper.make_node("MaxPool", ["/relu/Relu_output_0"], ["/pool/MaxPool_output_0"],
                         name="/pool/MaxPool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["/pool/MaxPool_output_0", "conv2.weight", "conv2.bias"],
                         ["/conv2/Conv_output_0"], name="/conv2/Conv", **conv),
        helper.make_node("Relu", ["/conv2/Conv_output_0"], ["/relu_1/Relu_output_0"],
                         name="/relu_1/Relu"),
        helper.make_node("MaxPool", ["/relu_1/Relu_output_0"], ["/pool_1/MaxPool_output_0"],
                         name="/pool_1/MaxPool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["/pool_1/MaxPool_output_0"], ["/Flatten_output_0"],
                         name="/Flatten", axis=1),
        helper.make_node("Gemm", ["/Flatten_output_0", "fc.weight", "fc.bias"], ["output"],
                         name="/fc/Gemm", alpha=1.0, beta=1.0, transB=1),
    ]
    return float_model(nodes, [value("input", [batch, 3, 16, 16])],
                       [value("output", [batch, 10])], inits)


def tf2onnx_style(batch: Dim = "unk__21", output_batch: Dim = "unk__22") -> onnx.ModelProto:
    """What tf2onnx writes for a Keras Conv2D-Conv2D-Flatten-Dense on NHWC images with a
    None batch: Transposes into and out of NCHW, Dense as MatMul + Add."""
    rng = np.random.default_rng(2)
    inits = {"model/conv2d/Conv2D/ReadVariableOp:0": weights(rng, (8, 3, 3, 3), 27),
             "model/conv2d/BiasAdd/ReadVariableOp:0": np.zeros(8, F32) + 0.01,
             "model/conv2d_1/Conv2D/ReadVariableOp:0": weights(rng, (4, 8, 3, 3), 72),
             "model/conv2d_1/BiasAdd/ReadVariableOp:0": np.zeros(4, F32),
             "const_fold_opt__12": np.array([-1, 4 * 8 * 8], np.int64),
             "model/dense/MatMul/ReadVariableOp:0": weights(rng, (256, 10), 256),
             "model/dense/BiasAdd/ReadVariableOp:0": np.zeros(10, F32) + 0.02}
    conv = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [1, 1]}
    nodes = [
        helper.make_node("Transpose", ["input_1"], ["model/conv2d/Conv2D__6:0"],
                         name="model/conv2d/Conv2D__6", perm=[0, 3, 1, 2]),
        helper.make_node("Conv", ["model/conv2d/Conv2D__6:0",
                                  "model/conv2d/Conv2D/ReadVariableOp:0",
                                  "model/conv2d/BiasAdd/ReadVariableOp:0"],
                         ["model/conv2d/BiasAdd:0"], name="model/conv2d/BiasAdd", **conv),
        helper.make_node("Relu", ["model/conv2d/BiasAdd:0"], ["model/conv2d/Relu:0"],
                         name="model/conv2d/Relu"),
        helper.make_node("Conv", ["model/conv2d/Relu:0",
                                  "model/conv2d_1/Conv2D/ReadVariableOp:0",
                                  "model/conv2d_1/BiasAdd/ReadVariableOp:0"],
                         ["model/conv2d_1/BiasAdd:0"], name="model/conv2d_1/BiasAdd",
                         strides=[2, 2], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["model/conv2d_1/BiasAdd:0"], ["model/conv2d_1/Relu:0"],
                         name="model/conv2d_1/Relu"),
        helper.make_node("Transpose", ["model/conv2d_1/Relu:0"],
                         ["model/conv2d_1/Relu__14:0"], name="model/conv2d_1/Relu__14",
                         perm=[0, 2, 3, 1]),
        helper.make_node("Reshape", ["model/conv2d_1/Relu__14:0", "const_fold_opt__12"],
                         ["model/flatten/Reshape:0"], name="model/flatten/Reshape"),
        helper.make_node("MatMul", ["model/flatten/Reshape:0",
                                    "model/dense/MatMul/ReadVariableOp:0"],
                         ["model/dense/MatMul:0"], name="model/dense/MatMul"),
        helper.make_node("Add", ["model/dense/MatMul:0",
                                 "model/dense/BiasAdd/ReadVariableOp:0"], ["dense"],
                         name="model/dense/BiasAdd"),
    ]
    return float_model(nodes, [value("input_1", [batch, 16, 16, 3])],
                       [value("dense", [output_batch, 10])], inits)


def quantized(model: onnx.ModelProto, qdq: bool, calibration_shape: tuple[int, ...],
              activations: str = "uint8") -> onnx.ModelProto:
    """quantize_static on batch-1 calibration data, as a user of these exports does."""
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

    reader = zoo.CalibrationReader(model.graph.input[0].name, zoo.random_inputs(
        calibration_shape, (-1.0, 1.0), 8, zoo.CALIBRATION_SEED))
    with tempfile.TemporaryDirectory() as tmp, zoo.quiet_quantizer():
        source, target = Path(tmp) / "float.onnx", Path(tmp) / "quantized.onnx"
        onnx.save(model, source)
        quantize_static(source, target, reader,
                        quant_format=QuantFormat.QDQ if qdq else QuantFormat.QOperator,
                        activation_type=QuantType.QUInt8 if activations == "uint8"
                        else QuantType.QInt8, weight_type=QuantType.QInt8)
        return onnx.load(str(target))


def batch_dim(model: onnx.ModelProto) -> onnx.TensorShapeProto.Dimension:
    return model.graph.input[0].type.tensor_type.shape.dim[0]


# (builder, calibration shape, the note)
EXPORTS: dict[str, tuple[Callable[[], onnx.ModelProto], tuple[int, ...], str]] = {
    "torch-batch_size": (torch_style, (1, 3, 16, 16),
                         "input 'input': dynamic batch axis 'batch_size' taken as 1 (pass "
                         "--input-shape input=4x3x16x16 for another)"),
    "torch-unnamed": (lambda: torch_style(None), (1, 3, 16, 16),
                      "input 'input': dynamic batch axis taken as 1 (pass --input-shape "
                      "input=4x3x16x16 for another)"),
    "tf2onnx-unk": (tf2onnx_style, (1, 16, 16, 3),
                    "input 'input_1': dynamic batch axis 'unk__21' taken as 1 (pass "
                    "--input-shape input_1=4x16x16x3 for another)"),
    "tf2onnx-N": (lambda: tf2onnx_style("N", "N"), (1, 16, 16, 3),
                  "input 'input_1': dynamic batch axis 'N' taken as 1 (pass --input-shape "
                  "input_1=4x16x16x3 for another)"),
}


@pytest.mark.parametrize("qdq", [False, True], ids=["qoperator", "qdq"])
@pytest.mark.parametrize("export", sorted(EXPORTS))
def test_dynamic_batch_generates_and_verifies(export: str, qdq: bool) -> None:
    build, calibration_shape, note = EXPORTS[export]
    model = quantized(build(), qdq, calibration_shape)
    assert not batch_dim(model).HasField("dim_value")  # still dynamic after quantization
    gen = generate_sources(model, Options())
    assert gen.graph.notes == [note]
    assert [t.shape for t in gen.program.inputs] == [calibration_shape]
    # ORT runs the model as given, dynamic axis and all, on the batch-1 inputs.
    report = codegen.verify(model, samples=2, seed=0)
    assert report.ok, report.outputs
    assert sum(o.elements for o in report.outputs) == 2 * 10


def test_passes_keep_the_notes() -> None:
    """Every graph the passes, the scheduler and --per-layer build carries the notes."""
    model = quantized(torch_style(), True, (1, 3, 16, 16))
    imported = import_model(model)
    assert len(imported.notes) == 1
    for options in (Options(), Options(integer_only=True), Options(qdq_rules="x86"),
                    Options(expose_intermediates=True)):
        assert generate_sources(model, options).graph.notes == imported.notes


def test_input_shape_takes_another_batch_without_a_note() -> None:
    model = quantized(torch_style(), False, (1, 3, 16, 16))
    gen = generate_sources(model, Options(input_shapes={"input": (4, 3, 16, 16)}))
    assert gen.graph.notes == []
    assert [t.shape for t in gen.program.inputs] == [(4, 3, 16, 16)]
    report = codegen.verify(model, samples=1, input_shapes={"input": (4, 3, 16, 16)})
    assert report.ok and report.outputs[0].elements == 40


@pytest.mark.parametrize("dims,message", [
    # A dynamic axis other than the batch is the user's to choose, batch or not.
    (["batch_size", 3, "height", 16], "graph input 'input' has dynamic dimension 'height' "
                                      "(axis 2); pass --input-shape input=1x3x1x16"),
    ([1, 3, 16, "width"], "graph input 'input' has dynamic dimension 'width' (axis 3); "
                          "pass --input-shape input=1x3x16x1"),
])
def test_other_dynamic_dimensions_are_refused(dims: list[Dim], message: str) -> None:
    model = torch_style()
    model.graph.input[0].CopyFrom(value("input", dims))
    with pytest.raises(ShapeError) as raised:
        import_model(model)
    assert str(raised.value) == f"node '/conv1/Conv' (Conv, domain ai.onnx): {message}"


def test_a_rank_1_input_is_not_a_batch() -> None:
    """The only axis of a vector is its data, not a batch of it: refused as before."""
    x = value("x", ["N"])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "g", [x],
                              [value("y", ["N"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(ShapeError, match=r"dynamic dimension 'N' \(axis 0\); pass "
                                         r"--input-shape x=1$"):
        import_model(model)


def test_dynamic_output_dims_are_accepted_and_static_ones_still_checked() -> None:
    model = quantized(tf2onnx_style("N", "M"), False, (1, 16, 16, 3))
    assert import_model(model).notes  # output dim 'M' is not the input's: fine
    wrong = onnx.ModelProto()
    wrong.CopyFrom(model)
    wrong.graph.output[0].type.tensor_type.shape.dim[1].dim_value = 11
    with pytest.raises(ShapeError, match=r"graph output 'dense' is declared with shape "
                                         r"\[None, 11\] but computes \[1, 10\]"):
        import_model(wrong)


@pytest.mark.parametrize("quant_format", ["qdq", "qop"])
def test_real_torch_export_with_dynamic_batch(quant_format: str) -> None:
    """A CNN exported by torch 2.13's torch.onnx.export with dynamic_axes and quantized by
    quantize_static (tests/models/make_torch_cnn.py made the files; torch is not needed
    here)."""
    model = onnx.load(str(TORCH_MODELS / f"torch_cnn_dynamic_batch_{quant_format}.onnx"))
    assert model.producer_name == "onnx.quantize"
    assert batch_dim(model).dim_param == "batch_size"
    gen = generate_sources(model, Options())
    assert gen.graph.notes == ["input 'input': dynamic batch axis 'batch_size' taken as 1 "
                               "(pass --input-shape input=4x3x16x16 for another)"]
    report = codegen.verify(model, samples=3, seed=0)
    assert report.ok, report.outputs
    assert report.outputs[0].elements == 30


def test_every_command_prints_the_batch_note(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """generate, run, verify, inspect and report say once, on one line, that they took
    the dynamic batch as 1."""
    from codegen import cli

    path = TORCH_MODELS / "torch_cnn_dynamic_batch_qop.onnx"
    note = ("note: input 'input': dynamic batch axis 'batch_size' taken as 1 (pass "
            "--input-shape input=4x3x16x16 for another)")
    np.savez(tmp_path / "in.npz", input=np.zeros((1, 3, 16, 16), np.float32))
    for args in (["generate", str(path), "-o", str(tmp_path / "out")],
                 ["run", str(path), "--inputs", str(tmp_path / "in.npz"), "--output",
                  str(tmp_path / "out.npz")],
                 ["verify", str(path), "--samples", "1"],
                 ["inspect", str(path)],
                 ["report", str(path)]):
        assert cli.main(args) == 0, args
        out = capsys.readouterr().out
        assert out.splitlines().count(note) == 1, (args, out)
