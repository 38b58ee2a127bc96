"""verify --dataset: many samples from an .npz keyed by input name or a folder of NAME.npy
files, all run by the generated C in one process and compared with ORT sample by sample;
data that does not fit the model refused in one line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from codegen.cli import main, print_report
from codegen.core.dataset import fit_batch_axis, load_dataset, split_samples
from codegen.core.ir import Tensor
from codegen.oracle.verify import OutputReport, VerifyReport, differing_samples

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tiny_cnn_qop.onnx"


def images(count: int, seed: int, shape: tuple[int, ...] = (1, 3, 32, 32)) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-2, 2, (count, *shape)).astype(np.float32)


def test_an_npz_data_set_runs_every_sample(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data.npz"
    np.savez(data, input=images(40, 1))
    assert main(["verify", str(EXAMPLE), "--dataset", str(data)]) == 0
    out = capsys.readouterr().out
    assert "40 sample(s), given inputs" in out
    assert "result: BIT-EXACT (102400 output elements" in out


def test_a_folder_of_npy_files_without_the_batch_axis(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    np.save(folder / "input.npy", images(7, 2, (3, 32, 32)))  # [N, C, H, W]
    assert main(["verify", str(EXAMPLE), "--dataset", str(folder)]) == 0
    assert "7 sample(s)" in capsys.readouterr().out


@pytest.mark.parametrize(("arrays", "message"), [
    ({"input": np.zeros((3, 1, 3, 32, 32), np.float32),
      "other": np.zeros((2, 4), np.float32)}, "count different samples ('input' 3, 'other' 2)"),
    ({"input": np.zeros((0, 1, 3, 32, 32), np.float32)}, "no samples"),
    ({"input": np.float32(1.0)}, "array 'input' is a scalar"),
    ({"pixels": np.zeros((2, 1, 3, 32, 32), np.float32)}, "no data for model input 'input'"),
    ({"input": np.zeros((2, 1, 3, 32, 31), np.float32)},
     "input 'input' has shape [1, 3, 32, 31], the model expects [1, 3, 32, 32]"),
    ({"input": np.zeros((2, 1, 3, 32, 32), np.complex64)}, "input 'input' has dtype"),
])
def test_data_that_does_not_fit_is_refused_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], arrays: dict[str, np.ndarray],
        message: str) -> None:
    data = tmp_path / "data.npz"
    np.savez(data, **arrays)
    assert main(["verify", str(EXAMPLE), "--dataset", str(data)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err


def test_missing_data_and_both_flags_are_refused(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", str(EXAMPLE), "--dataset", str(tmp_path / "none.npz")]) == 2
    assert "no such file or folder" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["verify", str(EXAMPLE), "--dataset", str(tmp_path / "empty")]) == 2
    assert "a folder without .npy files" in capsys.readouterr().err
    data = tmp_path / "data.npz"
    np.savez(data, input=images(2, 3))
    assert main(["verify", str(EXAMPLE), "--dataset", str(data), "--inputs", str(data)]) == 2
    assert "--inputs and --dataset: give one" in capsys.readouterr().err


def test_samples_are_split_along_the_first_axis(tmp_path: Path) -> None:
    arrays = {"a": np.arange(6).reshape(3, 2), "b": np.arange(3)}
    samples = split_samples(arrays, "x")
    assert len(samples) == 3 and samples[2]["a"].tolist() == [4, 5] and samples[1]["b"] == 1
    np.savez(tmp_path / "d.npz", **arrays)
    assert [s["b"] for s in load_dataset(str(tmp_path / "d.npz"))] == [0, 1, 2]


def test_leading_axes_of_one_are_restored() -> None:
    t = Tensor("x", "float32", (1, 1, 4, 5))
    assert fit_batch_axis({"x": np.zeros((4, 5))}, [t])["x"].shape == (1, 1, 4, 5)
    assert fit_batch_axis({"x": np.zeros((1, 4, 5))}, [t])["x"].shape == (1, 1, 4, 5)
    assert fit_batch_axis({"x": np.zeros((5, 4))}, [t])["x"].shape == (5, 4)  # left as is


def test_the_differing_samples_are_counted_and_the_first_named(
        capsys: pytest.CaptureFixture[str]) -> None:
    outputs = [OutputReport("y", "int8", 4, 1, 1.0)]
    ours = [{"y": np.array([1, 2], np.int8)}, {"y": np.array([3, 4], np.int8)},
            {"y": np.array([5, 6], np.int8)}]
    refs = [{"y": np.array([1, 2], np.int8)}, {"y": np.array([3, 5], np.int8)},
            {"y": np.array([5, 7], np.int8)}]
    assert differing_samples(outputs, ours, refs) == [1, 2]
    report = VerifyReport(outputs=outputs, samples=3, seed=None, ort_version="1.32.0",
                          ort_level="all", reference="the model", requant="float",
                          board="host", differing=[1, 2])
    print_report(report)
    out = capsys.readouterr().out
    assert "samples: 2 of 3 differ from ONNX Runtime, the first sample 1" in out
    assert "result: MISMATCH" in out


def test_labels_give_the_accuracy_and_need_a_data_set(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    data, labels = tmp_path / "data.npz", tmp_path / "labels.npy"
    np.savez(data, input=images(6, 3))
    np.save(labels, np.array([0, 1, 2, 3, 4, 5]))
    assert main(["verify", str(EXAMPLE), "--labels", str(labels)]) == 2
    assert "--labels goes with --dataset" in capsys.readouterr().err
    # tiny_cnn's output is a [1, 10, 8, 8] map, not class scores: the labels would be
    # silently ignored, so they are refused (issue 35), naming the outputs.
    assert main(["verify", str(EXAMPLE), "--dataset", str(data), "--labels", str(labels)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("onnx2mcu: error: labels: no output looks like class scores")
    assert "\n" not in err
    np.save(labels, np.zeros((6, 2, 2)))
    assert main(["verify", str(EXAMPLE), "--dataset", str(data), "--labels", str(labels)]) == 2
    assert "labels are integer class indices [samples] or one-hot rows" in \
        capsys.readouterr().err
