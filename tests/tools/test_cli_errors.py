"""Bad input through the real command line: one clear line naming the node and the
problem, exit code 2, no traceback, and nothing written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from cli_inprocess import run_cli
from modelgen import conv_model
from onnx import TensorProto, helper

F32 = np.float32


def console(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """The command through a real interpreter (the entry point, what Python prints)."""
    return subprocess.run([sys.executable, "-m", "codegen.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=300, check=False)


# The many cases below run in this process (tests/cli_inprocess.py); the console cases
# prove the same through a real interpreter.
cli = run_cli


def save(model: onnx.ModelProto, path: Path) -> Path:
    path.write_bytes(model.SerializeToString())
    return path


def assert_clean_failure(result: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("onnx2mcu: error: ")
    for needle in needles:
        assert needle in lines[0], lines[0]


def assert_nothing_written(parent: Path) -> None:
    leftovers = [p.name for p in parent.iterdir() if p.name.startswith(".out")]
    assert not (parent / "out").exists()
    assert not leftovers, leftovers


def test_valid_model_generates(tmp_path: Path) -> None:
    model = save(conv_model(), tmp_path / "ok.onnx")
    result = console("generate", model, "-o", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out" / "ok.h").is_file()


CASES = {
    "missing file": (None, ["no such model file"]),
    "random bytes": (b"\x08\x01garbage\xff\xfe" * 50, ["not a valid ONNX model"]),
    "truncated": ("truncate", ["not a valid ONNX model"]),
    "unsupported op": ("sin", ["node 'sin' (Sin, domain ai.onnx)", "not supported"]),
    "unsupported dtype": ("float16", ["node 'quant' (QuantizeLinear", "FLOAT16"]),
    "unsupported attribute": ("conv3d", ["node 'conv' (QLinearConv", "3-D convolution"]),
    "bad attribute": ("group3", ["node 'conv' (QLinearConv", "group"]),
    "dynamic shape": ("dynamic", ["node 'quant'", "dynamic dimension 'height' (axis 2)",
                                  "--input-shape x=1x2x1x6"]),
    "missing initializer": ("no_ys", ["node 'conv' (QLinearConv", "input 'ys' is not produced"]),
    "weights not constant": ("w_input", ["node 'conv' (QLinearConv", "must be a constant"]),
    "opset too new": ("opset29", ["opset 29 is not supported"]),
    "operator version": ("opset28", ["node 'quant' (QuantizeLinear",
                                     "QuantizeLinear-28 (opset 28) is not supported"]),
    "kernel larger than input": ("tiny", ["node 'conv' (QLinearConv", "larger than"]),
    # strides that the C int of the kernel's parameters cannot hold (the build failed)
    "strides beyond int": ("strides", ["node 'conv' (QLinearConv", "2^31 - 1"]),
    "dilations beyond int": ("dilations", ["node 'conv' (QLinearConv", "2^31 - 1"]),
}


def broken_model(kind: object, tmp_path: Path) -> Path:
    path = tmp_path / "model.onnx"
    if kind is None:
        return tmp_path / "does_not_exist.onnx"
    if isinstance(kind, bytes):
        path.write_bytes(kind)
        return path
    if kind == "truncate":
        data = conv_model().SerializeToString()
        path.write_bytes(data[: len(data) // 2])
        return path
    if kind == "sin":
        m = conv_model()
        m.graph.node.append(helper.make_node("Sin", ["y"], ["p"], name="sin"))
        m.graph.output[0].name = "p"
        return save(m, path)
    if kind == "float16":
        m = conv_model()
        m.graph.input[0].type.tensor_type.elem_type = TensorProto.FLOAT16
        return save(m, path)
    if kind == "conv3d":
        return save(conv_model(x_shape=[1, 2, 6, 6, 6]), path)
    if kind == "group3":
        return save(conv_model(extra_attrs={"group": 3}), path)
    if kind == "dynamic":  # a dynamic batch axis alone is taken as 1; any other is not
        return save(conv_model(x_shape=["batch", 2, "height", 6]), path)
    if kind == "no_ys":
        return save(conv_model(drop="ys"), path)
    if kind == "w_input":
        return save(conv_model(w_as_input=True), path)
    if kind in ("opset28", "opset29"):
        return save(conv_model(opset=int(kind[-2:])), path)
    if kind == "tiny":
        return save(conv_model(x_shape=[1, 2, 2, 2]), path)
    if kind in ("strides", "dilations"):
        values = [2 ** 62, 2 ** 62] if kind == "strides" else [2 ** 30, 2 ** 30]
        return save(conv_model(extra_attrs={kind: values}), path)
    raise AssertionError(kind)


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("command", ["generate", "verify"])
def test_bad_input(case: str, command: str, tmp_path: Path) -> None:
    kind, needles = CASES[case]
    model = broken_model(kind, tmp_path)
    args = ["-o", tmp_path / "out"] if command == "generate" else ["--samples", "1"]
    result = cli(command, model, *args)
    assert_clean_failure(result, *needles)
    assert_nothing_written(tmp_path)


@pytest.mark.parametrize("case,command", [("unsupported op", "generate"),
                                          ("dynamic shape", "verify")])
def test_bad_input_through_the_console(case: str, command: str, tmp_path: Path) -> None:
    kind, needles = CASES[case]
    model = broken_model(kind, tmp_path)
    args = ["-o", tmp_path / "out"] if command == "generate" else ["--samples", "1"]
    assert_clean_failure(console(command, model, *args), *needles)
    assert_nothing_written(tmp_path)


def test_dynamic_shape_with_input_shape_works(tmp_path: Path) -> None:
    model = save(conv_model(x_shape=["batch", 2, 6, 6]), tmp_path / "dyn.onnx")
    result = cli("verify", model, "--input-shape", "x=2x2x6x6", "--samples", "2")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "BIT-EXACT" in result.stdout


@pytest.mark.parametrize("args,needle", [
    (["--input-shape", "x=1x2"], "does not match"),
    (["--input-shape", "nope=1x2x6x6"], "no input named 'nope'"),
    (["--input-shape", "x=axb"], "expected NAME=D0xD1"),
    (["--name", "../evil"], "C identifier"),
    (["--name", "int"], "C identifier"),
    (["--board", "nope"], "unknown board 'nope'"),
])
def test_bad_options(args: list[str], needle: str, tmp_path: Path) -> None:
    model = save(conv_model(x_shape=["batch", 2, 6, 6]), tmp_path / "m.onnx")
    if "--input-shape" not in args:
        args = [*args, "--input-shape", "x=1x2x6x6"]
    result = cli("generate", model, "-o", tmp_path / "out", *args)
    assert_clean_failure(result, needle)
    assert_nothing_written(tmp_path)


def test_never_overwrites_without_force(tmp_path: Path) -> None:
    model = save(conv_model(), tmp_path / "m.onnx")
    out = tmp_path / "out"
    out.mkdir()
    (out / "precious.txt").write_text("user data")
    result = cli("generate", model, "-o", out)
    assert_clean_failure(result, "not empty", "--force")
    assert (out / "precious.txt").read_text() == "user data"
    assert sorted(p.name for p in out.iterdir()) == ["precious.txt"]

    result = cli("generate", model, "-o", out, "--force")
    assert result.returncode == 0, result.stderr
    assert not (out / "precious.txt").exists()
    assert (out / "m.c").is_file()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]


def test_output_path_that_is_a_file(tmp_path: Path) -> None:
    model = save(conv_model(), tmp_path / "m.onnx")
    (tmp_path / "out").write_text("a file")
    result = cli("generate", model, "-o", tmp_path / "out", "--force")
    assert_clean_failure(result, "not a folder")
    assert (tmp_path / "out").read_text() == "a file"


def test_run_with_wrong_inputs(tmp_path: Path) -> None:
    model = save(conv_model(), tmp_path / "m.onnx")
    np.savez(tmp_path / "in.npz", nope=np.zeros((1, 2, 6, 6), F32))
    result = cli("run", model, "--inputs", tmp_path / "in.npz", "--output", tmp_path / "o.npz")
    assert_clean_failure(result, "no data for model input 'x'")
    np.savez(tmp_path / "in.npz", x=np.zeros((1, 2, 5, 6), F32))
    result = cli("run", model, "--inputs", tmp_path / "in.npz", "--output", tmp_path / "o.npz")
    assert_clean_failure(result, "shape [1, 2, 5, 6]")
    assert not (tmp_path / "o.npz").exists()


@pytest.mark.parametrize("seed", ["-1", str(2 ** 64)])
def test_a_seed_out_of_range_is_one_line(seed: str, tmp_path: Path) -> None:
    model = save(conv_model(), tmp_path / "m.onnx")
    assert_clean_failure(cli("verify", model, "--seed", seed), "--seed must be from 0")


@pytest.mark.parametrize("scale", [float("inf"), float("nan"), -2.0, 0.0])
def test_resize_scales_that_are_not_finite_positive_numbers(scale: float,
                                                              tmp_path: Path) -> None:
    nodes = [helper.make_node("Resize", ["x", "", "scales"], ["y"], name="resize",
                              mode="nearest")]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 1, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, None)],
        [onnx.numpy_helper.from_array(np.array([1, 1, scale, 2], np.float32), "scales")])
    model = save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
                 tmp_path / "m.onnx")
    assert_clean_failure(cli("generate", model, "-o", tmp_path / "out"),
                         "node 'resize' (Resize", "scales")
    assert not (tmp_path / "out").exists()


def _pad_or_resize(kind: str) -> onnx.ModelProto:
    if kind == "pad":
        node = helper.make_node("Pad", ["x", "pads"], ["y"], name="bomb", mode="reflect")
        const = onnx.numpy_helper.from_array(
            np.array([0, 0, 0, 10 ** 9, 0, 0, 0, 10 ** 9], np.int64), "pads")
    else:
        node = helper.make_node("Resize", ["x", "", "scales"], ["y"], name="bomb",
                                mode="nearest")
        const = onnx.numpy_helper.from_array(np.array([1, 1, 1e30, 1e30], np.float32),
                                             "scales")
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 1, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, None)], [const])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("kind", ["pad", "resize"])
def test_an_output_bomb_is_refused_from_its_declared_size(kind: str, tmp_path: Path) -> None:
    """Pads of 10^9 and scales of 10^30: refused from the output's size before the
    per-index tables are built (it had taken gigabytes and minutes), in well under a
    second."""
    import time

    model = save(_pad_or_resize(kind), tmp_path / "m.onnx")
    start = time.monotonic()
    result = cli("generate", model, "-o", tmp_path / "out")
    assert time.monotonic() - start < 10
    assert_clean_failure(result, "node 'bomb'", "elements")
    assert not (tmp_path / "out").exists()



def two_outputs() -> onnx.ModelProto:
    """Quantize, then two DequantizeLinear outputs: 3 nodes, 2 outputs."""
    inits = [onnx.numpy_helper.from_array(np.array(0.05, np.float32), "s"),
             onnx.numpy_helper.from_array(np.array(128, np.uint8), "z")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y0"]),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y1"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, [1, 4]) for i in (0, 1)],
        inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("option, needle", [
    ("--max-nodes", "the graph has 3 nodes, over the limit of 2; raise it with --max-nodes"),
    ("--max-outputs", "the graph has 2 outputs, over the limit of 1; raise it with "
                      "--max-outputs"),
])
def test_node_and_output_counts_have_limits(option: str, needle: str,
                                            tmp_path: Path) -> None:
    """Counted from the file before anything is built from it (issue 35); the defaults
    (100,000 nodes, 10,000 outputs) are far above real exports."""
    model = save(two_outputs(), tmp_path / "m.onnx")
    limit = "2" if option == "--max-nodes" else "1"
    assert_clean_failure(cli("generate", model, "-o", tmp_path / "out", option, limit), needle)
    assert not (tmp_path / "out").exists()
    assert cli("generate", model, "-o", tmp_path / "out", option, "3").returncode == 0


@pytest.mark.parametrize("args, line", [
    (["generate", "m.onnx"], "onnx2mcu generate: error: the following arguments are "
                             "required: -o/--output (see onnx2mcu generate --help)"),
    (["verify", "m.onnx", "--samples", "0"], "onnx2mcu verify: error: argument --samples: "
                                             "must be at least 1: '0' (see onnx2mcu verify "
                                             "--help)"),
    (["boards", "--fast"], "onnx2mcu boards: error: unrecognized arguments: --fast (see "
                           "onnx2mcu boards --help)"),
    (["frobnicate"], "onnx2mcu: error: argument command: invalid choice: 'frobnicate' "
                     "(choose from 'generate', 'runtime', 'run', 'verify', 'inspect', "
                     "'convert', 'report', 'quantize', 'validate', 'boards') (see onnx2mcu "
                     "--help)"),
])
def test_a_usage_error_is_one_line(args: list[str], line: str) -> None:
    """Not the whole usage block before the error: one line, naming --help, status 2."""
    result = run_cli(*args)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines() == [line]
