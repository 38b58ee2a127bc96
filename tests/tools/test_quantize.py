"""onnx2mcu quantize: a float model and calibration samples through ONNX Runtime's
quantizer (quant_pre_process, quantize_static) to a model onnx2mcu generates bit-exact,
for every zoo architecture, on the host and on a Cortex-M0+ in QEMU."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import onnx
import pytest
import zoo

from codegen import api
from codegen.cli import main
from codegen.oracle.quantize import QuantizeSettings, quantize
from codegen.target.firmware import cross_toolchain_available
from codegen.target.qemu import qemu_available

CALIBRATION_SAMPLES = 8
STRIPES = Path(__file__).resolve().parents[2] / "examples" / "stripes"


@functools.cache
def quantized_zoo_model(name: str, folder: str) -> bytes:
    """The zoo float model quantized by `onnx2mcu quantize` with its defaults."""
    where = Path(folder)
    onnx.save(zoo.float_model(name), where / f"{name}.onnx")
    np.savez(where / f"{name}.npz",
             input=np.stack(zoo.sample_inputs(name, CALIBRATION_SAMPLES, seed=5)))
    result = quantize(where / f"{name}.onnx", where / f"{name}_q.onnx", str(where / f"{name}.npz"))
    assert result.samples == CALIBRATION_SAMPLES
    return (where / f"{name}_q.onnx").read_bytes()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("quantize"))


@pytest.mark.parametrize("name", zoo.MODEL_NAMES)
def test_every_zoo_architecture_quantizes_to_a_bit_exact_model(name: str, workdir: str) -> None:
    model = onnx.load_from_string(quantized_zoo_model(name, workdir))
    ops = {n.op_type for n in model.graph.node}
    assert {"QuantizeLinear", "DequantizeLinear"} <= ops  # QDQ by default
    weights = [i for i in model.graph.initializer if i.data_type == onnx.TensorProto.INT8
               and len(i.dims) >= 2]
    assert weights, "int8 weights expected"
    report = api.verify(model, samples=3, seed=1)
    assert report.ok, [(o.name, o.mismatches) for o in report.outputs]
    assert not any("float island" in n for n in report.notes), report.notes


@pytest.mark.skipif(not (cross_toolchain_available() and qemu_available()),
                    reason="needs arm-none-eabi-gcc and QEMU")
@pytest.mark.parametrize("name", zoo.MODEL_NAMES)
def test_every_zoo_architecture_is_bit_exact_on_cortex_m0plus(
        name: str, workdir: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`quantize --board cortex-m0plus` (the same model as the default's, its summary
    for the board), then verify in QEMU."""
    default = quantized_zoo_model(name, workdir)
    out = Path(workdir) / f"{name}_m0.onnx"
    assert main(["quantize", str(Path(workdir) / f"{name}.onnx"), "-o", str(out),
                 "--calibration", str(Path(workdir) / f"{name}.npz"),
                 "--board", "cortex-m0plus"]) == 0
    assert "board cortex-m0plus, requant int" in capsys.readouterr().out
    assert out.read_bytes() == default
    report = api.verify(str(out), samples=2, seed=2, board="cortex-m0plus")
    assert report.ok, [(o.name, o.mismatches) for o in report.outputs]
    assert report.requant == "int"


def test_the_board_changes_the_summary_not_the_model(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data, model = str(STRIPES / "stripes.npz"), str(STRIPES / "stripes_cnn.onnx")
    assert main(["quantize", model, "-o", str(tmp_path / "host.onnx"),
                 "--calibration", data, "--samples", "40"]) == 0
    host = capsys.readouterr().out
    assert main(["quantize", model, "-o", str(tmp_path / "m0.onnx"), "--calibration", data,
                 "--samples", "40", "--board", "cortex-m0plus"]) == 0
    m0 = capsys.readouterr().out
    assert (tmp_path / "host.onnx").read_bytes() == (tmp_path / "m0.onnx").read_bytes()
    assert "QDQ, int8 activations, per-channel int8 weights, int32 biases, MinMax " \
           "calibration on 40 sample(s)" in host
    assert "board host, requant float" in host and "board cortex-m0plus, requant int" in m0
    assert "float islands: none (every operator runs in integer kernels)" in host
    assert "board cortex-m0plus: arena" in m0 and "(fits" in m0


@pytest.mark.parametrize("settings", [
    QuantizeSettings(method="percentile"), QuantizeSettings(quant_format="qoperator"),
    QuantizeSettings(per_channel=False), QuantizeSettings(activations="uint8"),
], ids=["percentile", "qoperator", "per-tensor", "uint8"])
def test_every_setting_gives_a_bit_exact_model(settings: QuantizeSettings,
                                               tmp_path: Path) -> None:
    out = tmp_path / "q.onnx"
    quantize(STRIPES / "stripes_cnn.onnx", out, str(STRIPES / "stripes.npz"), settings,
             max_samples=40)
    model = onnx.load(out)
    ops = {n.op_type for n in model.graph.node}
    assert ("QLinearConv" in ops) == (settings.quant_format == "qoperator")
    report = api.verify(str(out), samples=4)
    assert report.ok, [(o.name, o.mismatches) for o in report.outputs]


def test_entropy_calibration_is_bit_exact_and_not_minmax_in_disguise(tmp_path: Path) -> None:
    """ORT's quantize_static alone runs Entropy with as many histogram bins as quantized
    bins, which leaves the full range (MinMax's) as the only candidate."""
    scales = {}
    for method in ("minmax", "entropy"):
        out = tmp_path / f"{method}.onnx"
        quantize(STRIPES / "stripes_cnn.onnx", out, str(STRIPES / "stripes.npz"),
                 QuantizeSettings(method=method), max_samples=16)
        scales[method] = {i.name: onnx.numpy_helper.to_array(i).tolist()
                          for i in onnx.load(out).graph.initializer
                          if i.name.endswith("_scale") and not i.dims}
    assert scales["minmax"].keys() == scales["entropy"].keys()
    assert scales["minmax"] != scales["entropy"]
    assert api.verify(str(tmp_path / "entropy.onnx"), samples=4).ok


def test_calibration_data_that_does_not_fit_is_refused_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = str(STRIPES / "stripes_cnn.onnx")
    cases = {
        "name": ({"pixels": np.zeros((4, 1, 12, 12), np.float32)},
                 "no array for model input 'image' (float32 [1, 1, 12, 12]); the data has "
                 "pixels"),
        "shape": ({"image": np.zeros((4, 1, 12, 11), np.float32)},
                  "model input 'image' expects samples of shape float32 [1, 1, 12, 12]; "
                  "array 'image' has [4, 1, 12, 11], samples of [1, 12, 11] (the first axis "
                  "counts the samples)"),
        "dtype": ({"image": np.zeros((4, 1, 12, 12), np.complex64)},
                  "model input 'image' expects float32 [1, 1, 12, 12]; array 'image' "
                  "holds complex64"),
    }
    for what, (arrays, message) in cases.items():
        data = tmp_path / f"{what}.npz"
        np.savez(data, **arrays)  # type: ignore[arg-type]
        assert main(["quantize", model, "-o", str(tmp_path / "q.onnx"),
                     "--calibration", str(data)]) == 2
        captured = capsys.readouterr()
        assert captured.err.strip() == f"onnx2mcu: error: {data}: {message}", captured.err
        assert not (tmp_path / "q.onnx").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dtype.npz", "name.npz", "shape.npz"]


def test_samples_without_their_batch_axis_are_taken(tmp_path: Path) -> None:
    images = np.load(STRIPES / "stripes.npz")["image"][:20, 0]  # [N, 12, 12]
    data = tmp_path / "data.npz"
    np.savez(data, image=images)
    result = quantize(STRIPES / "stripes_cnn.onnx", tmp_path / "q.onnx", str(data))
    assert result.samples == 20


def test_existing_files_and_quantized_models_are_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "q.onnx"
    out.write_bytes(b"mine")
    args = ["quantize", str(STRIPES / "stripes_cnn.onnx"), "-o", str(out),
            "--calibration", str(STRIPES / "stripes.npz"), "--samples", "10"]
    assert main(args) == 2
    assert capsys.readouterr().err.strip() == \
        f"onnx2mcu: error: {out} exists; pass --force to replace it"
    assert out.read_bytes() == b"mine"
    assert main([*args, "--force"]) == 0
    capsys.readouterr()
    assert main(["quantize", str(out), "-o", str(tmp_path / "again.onnx"),
                 "--calibration", str(STRIPES / "stripes.npz")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("onnx2mcu: error: model 'q' is already quantized (it has "
                          "DequantizeLinear, QuantizeLinear)"), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q.onnx"]


def conv_bn_relu_model() -> onnx.ModelProto:
    """Conv -> BatchNormalization -> Relu -> GlobalAveragePool -> Flatten -> Gemm, as
    torch.onnx.export writes a model in eval mode before its BatchNormalization is folded."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(11)
    init = [numpy_helper.from_array(a.astype(np.float32), n) for n, a in (
        ("w", rng.normal(0, 0.4, (8, 3, 3, 3))), ("scale", rng.uniform(0.5, 1.5, 8)),
        ("shift", rng.normal(0, 0.1, 8)), ("mean", rng.normal(0, 0.2, 8)),
        ("var", rng.uniform(0.5, 2.0, 8)), ("fc_w", rng.normal(0, 0.5, (4, 8))),
        ("fc_b", rng.normal(0, 0.1, 4)))]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "scale", "shift", "mean", "var"],
                              ["b"]),
             helper.make_node("Relu", ["b"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["y"], transB=1)]
    graph = helper.make_graph(
        nodes, "conv_bn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], init)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def test_batch_normalization_is_folded_before_quantizing(tmp_path: Path) -> None:
    """quant_pre_process folds BatchNormalization into the Conv (ORT's graph optimizer),
    so the quantized model has one QLinearConv and no float island."""
    onnx.save(conv_bn_relu_model(), tmp_path / "bn.onnx")
    np.savez(tmp_path / "data.npz",
             x=np.random.default_rng(3).uniform(-1, 1, (16, 3, 8, 8)).astype(np.float32))
    quantize(tmp_path / "bn.onnx", tmp_path / "q.onnx", str(tmp_path / "data.npz"))
    ops = [n.op_type for n in onnx.load(tmp_path / "q.onnx").graph.node]
    assert "BatchNormalization" not in ops and ops.count("Conv") == 1, ops
    report = api.verify(str(tmp_path / "q.onnx"), samples=4)
    assert report.ok and not any("float island" in n for n in report.notes), report.notes


def test_a_model_computing_nan_is_refused_with_the_reason(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Sqrt of a convolution's negative outputs: ORT's quantizer meets a NaN range and
    says only "scale issue"; onnx2mcu says what it means."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.normal(0, 0.5, (4, 2, 3, 3)).astype(np.float32), "w")
    w2 = numpy_helper.from_array(rng.normal(0, 0.5, (2, 4, 3, 3)).astype(np.float32), "w2")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("Sqrt", ["c"], ["s"]),
         helper.make_node("Conv", ["s", "w2"], ["y"], pads=[1, 1, 1, 1])], "nan",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 6, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 6, 6])], [w, w2])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "nan.onnx")
    np.savez(tmp_path / "data.npz",
             x=np.random.default_rng(1).uniform(-1, 1, (4, 1, 2, 6, 6)).astype(np.float32))
    assert main(["quantize", str(tmp_path / "nan.onnx"), "-o", str(tmp_path / "q.onnx"),
                 "--calibration", str(tmp_path / "data.npz")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("onnx2mcu: error: ONNX Runtime's quantize_static failed: scale "
                          "issue (a tensor's calibrated range is not a number"), err
    assert len(err.splitlines()) == 1 and not (tmp_path / "q.onnx").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.npz", "nan.onnx"]
