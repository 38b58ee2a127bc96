"""onnx2mcu validate: the generated C against the float model on a data set. The figures
are checked against numpy on known arrays, and on the worked example against ORT run
here on the float model and the C's outputs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from codegen import api
from codegen.backend.interface import Interface
from codegen.cli import main
from codegen.options import Options
from codegen.oracle.quantize import quantize
from codegen.oracle.validate import (
    ErrorStats,
    ValidateReport,
    error_stats,
    format_validation_json,
    format_validation_text,
    is_classifier,
    validate_output,
)
from codegen.pipeline import generate_sources
from codegen.target.firmware import cross_toolchain_available
from codegen.target.qemu import qemu_available

STRIPES = Path(__file__).resolve().parents[2] / "examples" / "stripes"


def test_error_figures_are_numpys() -> None:
    reference = np.array([[1.0, -2.0, 3.0], [0.5, 0.0, -1.5]])
    got = np.array([[1.5, -2.0, 2.0], [0.5, 0.25, -1.5]])
    stats = error_stats(got.astype(np.float32), reference.astype(np.float32))
    e = got - reference
    assert stats.rmse == pytest.approx(float(np.sqrt(np.mean(e ** 2))), rel=1e-12)
    assert stats.mean_abs == pytest.approx(float(np.mean(np.abs(e))), rel=1e-12)
    assert stats.max_abs == 1.0
    cosine = float(np.sum(got * reference) / np.linalg.norm(got) / np.linalg.norm(reference))
    assert stats.cosine == pytest.approx(cosine, rel=1e-12)
    snr = 10 * math.log10(float(np.sum(reference ** 2) / np.sum(e ** 2)))
    assert stats.snr_db == pytest.approx(snr, rel=1e-12)
    # By hand: e = [0.5, 0, -1, 0, 0.25, 0], sum e^2 = 1.3125, sum r^2 = 16.5.
    assert stats.rmse == pytest.approx(math.sqrt(1.3125 / 6))
    assert stats.snr_db == pytest.approx(10 * math.log10(16.5 / 1.3125))


def test_edge_cases_of_the_figures() -> None:
    exact = error_stats(np.ones(4), np.ones(4))
    assert exact == ErrorStats(0.0, 0.0, 0.0, 1.0, None)  # no error: infinite SNR
    zeros = error_stats(np.zeros(3), np.zeros(3))
    assert zeros.cosine == 1.0 and zeros.snr_db is None
    silent_reference = error_stats(np.array([1.0, 0.0]), np.zeros(2))
    assert silent_reference.snr_db == -math.inf and silent_reference.cosine == 0.0
    opposite = error_stats(-np.arange(1.0, 4.0), np.arange(1.0, 4.0))
    assert opposite.cosine == pytest.approx(-1.0)


def test_classifiers_are_told_from_other_outputs() -> None:
    assert is_classifier((1, 10), [3 * 32 * 32])
    assert not is_classifier((1, 640), [640])  # an autoencoder's reconstruction
    assert not is_classifier((1, 1), [10])
    assert not is_classifier((1, 8, 4, 4), [3 * 16 * 16])
    assert not is_classifier((1, 2000), [10])


def test_top1_agreement_and_accuracy_count_samples() -> None:
    scores = [np.array([[0.1, 0.9, 0.0]]), np.array([[0.8, 0.1, 0.1]]),
              np.array([[0.2, 0.3, 0.5]]), np.array([[0.6, 0.3, 0.1]])]
    ours = [{"y": s} for s in scores]
    floats = [{"y_float": s} for s in scores[:3]] + [{"y_float": np.array([[0.1, 0.2, 0.7]])}]
    labels = np.array([1, 0, 1, 2])
    v = validate_output("y", ours, ours, floats, "y_float", True, labels)
    assert v.top1_agreement == 0.75  # the last sample: class 0 against the float model's 2
    assert v.accuracy_float == 0.75 and v.accuracy_c == 0.5 and v.accuracy_ort == 0.5
    assert v.c_vs_ort_mismatches == 0 and v.elements == 3


@pytest.fixture(scope="module")
def stripes_quantized(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("validate") / "stripes_q.onnx"
    quantize(STRIPES / "stripes_cnn.onnx", out, str(STRIPES / "stripes.npz"))
    return out


def test_validate_matches_numpy_on_the_worked_example(stripes_quantized: Path) -> None:
    data = np.load(STRIPES / "stripes.npz")["image"]
    labels = np.load(STRIPES / "stripes_labels.npy")
    report = api.validate(str(stripes_quantized), str(STRIPES / "stripes_cnn.onnx"),
                          str(STRIPES / "stripes.npz"), labels=str(STRIPES / "stripes_labels.npy"))
    session = ort.InferenceSession(str(STRIPES / "stripes_cnn.onnx"),
                                   providers=["CPUExecutionProvider"])
    floats = np.stack([session.run(["scores"], {"image": x[None]})[0] for x in data])
    gen = generate_sources(str(stripes_quantized), Options())
    ours = np.stack([r["scores"] for r in api.run_generated(
        gen, [{"image": x[None]} for x in data])])
    (out,) = report.outputs
    assert report.samples == len(data) and report.bit_exact and out.classifier
    e = ours.astype(np.float64) - floats
    assert out.c_vs_float.rmse == pytest.approx(float(np.sqrt(np.mean(e ** 2))), rel=1e-9)
    assert out.c_vs_float.mean_abs == pytest.approx(float(np.mean(np.abs(e))), rel=1e-9)
    assert out.c_vs_float.max_abs == float(np.max(np.abs(e)))
    flat_c, flat_f = ours.reshape(-1).astype(np.float64), floats.reshape(-1).astype(np.float64)
    assert out.c_vs_float.cosine == pytest.approx(
        float(flat_c @ flat_f / np.linalg.norm(flat_c) / np.linalg.norm(flat_f)), rel=1e-9)
    assert out.c_vs_float.snr_db == pytest.approx(
        10 * math.log10(float(flat_f @ flat_f) / float(e.reshape(-1) @ e.reshape(-1))),
        rel=1e-9)
    c_top1 = ours.reshape(len(data), -1).argmax(axis=1)
    float_top1 = floats.reshape(len(data), -1).argmax(axis=1)
    assert out.top1_agreement == pytest.approx(float(np.mean(c_top1 == float_top1)))
    assert out.accuracy_float == pytest.approx(float(np.mean(float_top1 == labels)))
    assert out.accuracy_c == pytest.approx(float(np.mean(c_top1 == labels)))
    assert out.c_vs_float == out.ort_vs_float  # bit-exact C: the same loss as ORT's
    assert out.c_vs_ort_mismatches == 0 and out.accuracy_ort == out.accuracy_c


def test_cli_text_and_json_give_the_same_numbers(stripes_quantized: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    args = ["validate", str(stripes_quantized), "--float-model",
            str(STRIPES / "stripes_cnn.onnx"), "--dataset", str(STRIPES / "stripes.npz"),
            "--labels", str(STRIPES / "stripes_labels.npy")]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert main([*args, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    (out,) = data["outputs"]
    assert data["bit_exact"] is True and data["samples"] == 200
    stats = out["c_vs_float"]
    assert f"{stats['rmse']:.6g}" in text and f"{stats['cosine']:.6f}" in text
    assert f"{stats['snr_db']:.4g}" in text
    assert f"top-1 agreement with the float model: {100 * out['top1_agreement']:.2f}% of " \
           "200 samples" in text
    assert f"accuracy: float model {100 * out['accuracy_float']:.2f}%, generated C " \
           f"{100 * out['accuracy_c']:.2f}%" in text
    assert "bit-exact (800 elements)" in text


def test_an_exact_output_has_an_infinite_snr_in_text_and_null_in_json() -> None:
    v = validate_output("y", [{"y": np.zeros((1, 4))}], [{"y": np.zeros((1, 4))}],
                        [{"y": np.zeros((1, 4))}], "y", False, None)
    report = ValidateReport(1, "host", "float", "1.32.0", "the model as given", (v,), ())
    assert "  generated C                          0           0           0   1.000000      inf" \
        in format_validation_text(report)
    assert json.loads(format_validation_json(report))["outputs"][0]["c_vs_float"][
        "snr_db"] is None


@pytest.mark.skipif(not (cross_toolchain_available() and qemu_available()),
                    reason="needs arm-none-eabi-gcc and QEMU")
def test_validate_in_qemu_gives_the_hosts_numbers(stripes_quantized: Path) -> None:
    args = (str(stripes_quantized), str(STRIPES / "stripes_cnn.onnx"))
    subset = {"image": np.load(STRIPES / "stripes.npz")["image"][:24]}
    host = api.validate(*args, subset)
    board = api.validate(*args, subset, board="cortex-m0plus")
    assert board.board == "cortex-m0plus" and board.bit_exact and host.bit_exact
    assert board.outputs == host.outputs


def test_labels_that_do_not_fit_are_refused(stripes_quantized: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    labels = tmp_path / "labels.npy"
    np.save(labels, np.zeros(7, np.int64))
    assert main(["validate", str(stripes_quantized), "--float-model",
                 str(STRIPES / "stripes_cnn.onnx"), "--dataset", str(STRIPES / "stripes.npz"),
                 "--labels", str(labels)]) == 2
    assert capsys.readouterr().err.strip() == \
        f"onnx2mcu: error: {labels}: 7 labels for 200 samples"


@pytest.mark.parametrize("labels, needle", [
    (np.full(200, -7, np.int64), "200 label(s) outside output 'scores''s 4 classes "
                                 "(0 to 3), the first -7 of sample 0"),
    (np.r_[np.zeros(199, np.int64), 10 ** 12], "1 label(s) outside output 'scores''s 4 "
                                               "classes (0 to 3), the first 1000000000000"),
    (np.eye(5, dtype=np.float32)[np.zeros(200, np.int64)],
     "rows of 5 columns for output 'scores' of 4 classes")])
@pytest.mark.parametrize("command", ["validate", "verify"])
def test_labels_outside_the_classes_are_refused(stripes_quantized: Path, tmp_path: Path,
                                                labels: np.ndarray, needle: str, command: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Not "accuracy 0.00%" with exit code 0: labels the model's classes cannot match are
    refused before anything runs."""
    path = tmp_path / "labels.npy"
    np.save(path, labels)
    args = (["--float-model", str(STRIPES / "stripes_cnn.onnx")] if command == "validate"
            else [])
    assert main([command, str(stripes_quantized), *args, "--dataset",
                 str(STRIPES / "stripes.npz"), "--labels", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("onnx2mcu: error: labels: ") and needle in err, err
    assert "\n" not in err


def test_one_hot_labels_of_the_right_width_are_taken(stripes_quantized: Path,
                                                     tmp_path: Path) -> None:
    indices = np.load(STRIPES / "stripes_labels.npy")
    one_hot = tmp_path / "one_hot.npy"
    np.save(one_hot, np.eye(4, dtype=np.float32)[indices])
    args = (str(stripes_quantized), str(STRIPES / "stripes_cnn.onnx"),
            str(STRIPES / "stripes.npz"))
    by_index = api.validate(*args, labels=str(STRIPES / "stripes_labels.npy"))
    by_row = api.validate(*args, labels=str(one_hot))
    assert by_row.outputs == by_index.outputs


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_samples_with_nan_or_inf_are_refused(stripes_quantized: Path, tmp_path: Path,
                                             bad: float,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Not NaN metrics and "top-1 agreement 100%" with exit code 0."""
    images = np.load(STRIPES / "stripes.npz")["image"][:8].copy()
    images[3].flat[5] = bad
    data = tmp_path / "bad.npz"
    np.savez(data, image=images)
    assert main(["validate", str(stripes_quantized), "--float-model",
                 str(STRIPES / "stripes_cnn.onnx"), "--dataset", str(data)]) == 2
    err = capsys.readouterr().err.strip()
    assert "sample 3 of input 'image' holds NaN or inf" in err and "\n" not in err



# ---------------------------------------------------------------- the interface you ship

def quantize_like_the_model(values: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    """ORT's QuantizeLinear to int8, written out: a float32 division, clamp, round half
    to even (docs/ort-arithmetic.md)."""
    q = (values.astype(np.float32) / np.float32(scale)).astype(np.float32)
    q = np.clip(q, np.float32(-128 - zero_point), np.float32(127 - zero_point))
    return (np.rint(q).astype(np.int64) + zero_point).astype(np.int8)


@pytest.mark.parametrize("io", [["--io", "quantized", "--arena", "caller"], ["--io", "both"]])
def test_validate_and_verify_run_the_interface_you_ship(stripes_quantized: Path, io: list[str],
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    """The stripes example's float data, given to the quantized entry point: quantized
    as the model's own QuantizeLinear does, so the figures are those of float I/O (every
    input quantizes identically, the same inference) and the C is bit-exact."""
    common = ["--dataset", str(STRIPES / "stripes.npz"),
              "--labels", str(STRIPES / "stripes_labels.npy")]
    validate = ["validate", str(stripes_quantized), "--float-model",
                str(STRIPES / "stripes_cnn.onnx"), *common, "--format", "json"]
    assert main(validate) == 0
    floats = json.loads(capsys.readouterr().out)
    assert main([*validate, *io]) == 0
    shipped = json.loads(capsys.readouterr().out)
    assert shipped["bit_exact"] is True and shipped["samples"] == 200
    assert shipped["outputs"] == floats["outputs"]
    assert main(["verify", str(stripes_quantized), *common]) == 0
    float_text = capsys.readouterr().out
    assert main(["verify", str(stripes_quantized), *common, *io]) == 0
    text = capsys.readouterr().out
    assert "result: BIT-EXACT" in text
    accuracy = [line.split(" (")[0] for line in float_text.splitlines()
                if line.startswith("accuracy:")]
    assert accuracy == ["accuracy: 91.50% of 200 samples"]
    assert [line.split(" (")[0] for line in text.splitlines()
            if line.startswith("accuracy:")][-1:] == accuracy


def test_quantized_data_is_taken_as_it_is(stripes_quantized: Path, tmp_path: Path) -> None:
    """Integer data for the quantized entry point is the quantized input itself: the
    float data quantized by hand gives the same outputs as the float data."""
    gen = generate_sources(str(stripes_quantized), Options(
        interface=Interface(io="quantized")))
    (tensor,) = gen.program.inputs
    assert tensor.quant is not None and tensor.dtype == "int8"
    data = np.load(STRIPES / "stripes.npz")["image"][:16]
    by_hand = quantize_like_the_model(data, tensor.quant.scale[0], tensor.quant.zero_point[0])
    options = Options(interface=Interface(io="quantized"))
    from_floats = api.run_model(str(stripes_quantized), {"image": data}, options)
    from_integers = api.run_model(str(stripes_quantized), {"image": by_hand}, options)
    assert from_floats.samples == from_integers.samples == 16
    (name,) = from_floats.outputs
    assert from_floats.outputs[name].dtype == np.int8
    assert np.array_equal(from_floats.outputs[name], from_integers.outputs[name])
    report = api.verify(str(stripes_quantized), options,
                        inputs=[{"image": x} for x in by_hand])
    assert report.ok and report.samples == 16


def test_samples_takes_the_first_n_and_run_takes_every_sample(stripes_quantized: Path,
                                                              tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]
                                                              ) -> None:
    dataset = ["--dataset", str(STRIPES / "stripes.npz"),
               "--labels", str(STRIPES / "stripes_labels.npy")]
    assert main(["verify", str(stripes_quantized), *dataset, "--samples", "20"]) == 0
    out = capsys.readouterr().out
    assert "20 sample(s), given inputs" in out and "accuracy: " in out and " of 20 " in out
    assert main(["validate", str(stripes_quantized), "--float-model",
                 str(STRIPES / "stripes_cnn.onnx"), *dataset, "--samples", "7"]) == 0
    assert "7 sample(s)" in capsys.readouterr().out
    assert main(["verify", str(stripes_quantized), *dataset, "--samples", "201"]) == 2
    assert "--samples 201: " in capsys.readouterr().err
    assert main(["run", str(stripes_quantized), "--inputs", str(STRIPES / "stripes.npz"),
                 "--output", str(tmp_path / "all.npz")]) == 0
    assert "200 samples on the first axis" in capsys.readouterr().out
    every = np.load(tmp_path / "all.npz")["scores"]
    images = np.load(STRIPES / "stripes.npz")["image"]
    assert every.shape == (200, 1, 4)
    one = api.run(str(stripes_quantized), {"image": images[3]})["scores"]
    assert np.array_equal(every[3], one)
    np.savez(tmp_path / "one.npz", image=images[0])
    assert main(["verify", str(stripes_quantized), "--inputs", str(tmp_path / "one.npz"),
                 "--samples", "3"]) == 2
    assert "--samples goes with random inputs or --dataset" in capsys.readouterr().err


def test_uint8_inputs_quantize_like_the_models_quantizelinear(tmp_path: Path) -> None:
    """End to end on a uint8 model: the quantized entry point given float data computes
    what the float entry point computes, bit for bit (its outputs dequantized as the
    DequantizeLinear does are the float outputs)."""
    from codegen.backend.io_boundary import dequantized

    model = str(Path(__file__).resolve().parents[2] / "examples" / "tiny_cnn_qop.onnx")
    gen = generate_sources(model, Options(interface=Interface(io="quantized")))
    (q_in,), (q_out,) = gen.program.inputs, gen.program.outputs
    assert q_in.dtype == "uint8" and q_out.dtype == "uint8"
    rng = np.random.default_rng(7)
    data = rng.uniform(-1.5, 1.5, (6, *q_in.shape)).astype(np.float32)
    (name,) = [i.name for i in gen.model.graph.input]
    floats = api.run_model(model, {name: data}).outputs
    quantized = api.run_model(model, {name: data}, Options(interface=Interface(io="quantized")))
    (f_name,), (q_name,) = floats, quantized.outputs
    assert np.array_equal(
        np.stack([dequantized(q, q_out) for q in quantized.outputs[q_name]]), floats[f_name])
    report = api.verify(model, Options(interface=Interface(io="both")),
                        inputs=[{name: x} for x in data])
    assert report.ok and report.samples == 6


def test_integer_data_is_read_alike_by_verify_and_validate(stripes_quantized: Path,
                                                           tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]
                                                           ) -> None:
    """int8 data for the quantized entry point is its quantized values, in verify and in
    validate (where the float model gets the values they stand for), said in a note."""
    images = np.load(STRIPES / "stripes.npz")["image"][:20]
    np.savez(tmp_path / "i8.npz", image=np.clip(np.round(images * 40), -128, 127)
             .astype(np.int8))
    np.save(tmp_path / "labels.npy", np.load(STRIPES / "stripes_labels.npy")[:20])
    common = ["--dataset", str(tmp_path / "i8.npz"), "--labels", str(tmp_path / "labels.npy"),
              "--io", "quantized"]
    assert main(["verify", str(stripes_quantized), *common]) == 0
    verified = capsys.readouterr().out
    assert main(["validate", str(stripes_quantized), "--float-model",
                 str(STRIPES / "stripes_cnn.onnx"), *common, "--format", "json"]) == 0
    validated = json.loads(capsys.readouterr().out)
    note = "note: input 'image': integer data taken as its quantized values (int8, scale "
    assert note in verified
    assert any(n.startswith(note.removeprefix("note: ")) for n in validated["notes"])
    (accuracy,) = [line for line in verified.splitlines() if line.startswith("accuracy:")]
    share = float(accuracy.split("%")[0].split()[-1]) / 100
    (out,) = validated["outputs"]
    assert out["accuracy_c"] == pytest.approx(share) and validated["bit_exact"] is True
    assert "'scores'" in accuracy  # the graph's output name, not the quantized tensor's
    np.savez(tmp_path / "wide.npz", image=np.full((2, 1, 12, 12), 300, np.int16))
    assert main(["verify", str(stripes_quantized), "--dataset", str(tmp_path / "wide.npz"),
                 "--io", "quantized"]) == 2
    assert capsys.readouterr().err.strip() == (
        "onnx2mcu: error: input 'image': integer data is taken as its quantized values "
        "(int8), but holds values outside [-128, 127]; give float32 data to have it quantized")
