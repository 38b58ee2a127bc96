"""Diagnosis: verify --per-layer finds the first layer that differs, inspect shows the
graph and lists every unsupported node at once, and progress appears only on a terminal."""

from __future__ import annotations

import dataclasses
import os
import pty
import subprocess
import sys
from pathlib import Path

import onnx
import pytest
from cli_inprocess import run_cli
from conftest import SANITIZE
from modelgen import conv_model
from onnx import helper

import codegen
import codegen.options
import codegen.pipeline
from codegen.core.program import CStruct, CValue, Program

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "tiny_cnn_qop.onnx"


def with_field(struct: CStruct, path: list[str], value: CValue) -> CStruct:
    fields = []
    for key, old in struct.fields:
        if key == path[0]:
            assert isinstance(old, CStruct) or len(path) == 1
            old = value if len(path) == 1 else with_field(old, path[1:], value)  # type: ignore[arg-type]
        fields.append((key, old))
    return CStruct(struct.ctype, tuple(fields))


def test_per_layer_all_match() -> None:
    report = codegen.verify(EXAMPLE, samples=2, per_layer=True, cflags=SANITIZE)
    assert report.ok and report.first_mismatch is None
    assert report.layers is not None
    assert [layer.op_type for layer in report.layers] == [
        "QuantizeLinear", "QLinearConv", "QLinearConv", "QLinearConv", "QLinearConv",
        "DequantizeLinear"]


def test_per_layer_pinpoints_a_corrupted_kernel_parameter(monkeypatch: pytest.MonkeyPatch) -> None:
    """Shift the output zero point of the third layer's kernel by one: the layers before
    it still match, and the report names that layer first."""
    original = codegen.pipeline.lower_graph

    def corrupted(*args: object, **kwargs: object) -> Program:
        program = original(*args, **kwargs)  # type: ignore[arg-type]
        call = next(c for c in program.calls if "dwconv3_quant" in c.node)
        assert call.params is not None
        zp = dict(dict(call.params.fields)["requant"].fields)["zero_point"]  # type: ignore[union-attr]
        bad = dataclasses.replace(call, params=with_field(call.params, ["requant", "zero_point"],
                                                          zp + 1))  # type: ignore[operator]
        program.calls = [bad if c is call else c for c in program.calls]
        return program

    monkeypatch.setattr(codegen.pipeline, "lower_graph", corrupted)
    report = codegen.verify(EXAMPLE, samples=2, per_layer=True)
    assert not report.ok
    first = report.first_mismatch
    assert first is not None
    assert (first.node, first.op_type) == ("dwconv3_quant", "QLinearConv")
    assert first.mismatches > 0 and first.max_abs_diff >= 1
    assert report.layers is not None
    before = report.layers[: [layer.node for layer in report.layers].index("dwconv3_quant")]
    assert before and all(layer.mismatches == 0 for layer in before)


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "codegen.cli", *map(str, args)],
                          capture_output=True, text=True, check=False)


def test_cli_per_layer_summary() -> None:
    result = cli("verify", EXAMPLE, "--per-layer", "--samples", "1")
    assert result.returncode == 0
    assert "per-layer: all 6 intermediate tensors are bit-exact" in result.stdout
    assert result.stderr == ""  # not a terminal: no progress


def run_on_a_terminal(*args: str) -> tuple[int, str, bytes]:
    """Run the CLI with stderr on a pseudo-terminal: its status, what the terminal
    showed, and stdout."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "codegen.cli", *args],
                            stdout=subprocess.PIPE, stderr=follower)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 1024)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    stdout, _ = proc.communicate()
    os.close(leader)
    return proc.returncode, b"".join(chunks).decode(), stdout


def test_progress_on_a_terminal(tmp_path: Path) -> None:
    status, terminal, stdout = run_on_a_terminal("verify", str(EXAMPLE), "--samples", "3")
    assert status == 0, terminal
    assert f"ONNX Runtime [{'#' * 30}] 3/3 samples" in terminal
    assert f"ONNX Runtime [{'#' * 10}{'.' * 20}] 1/3 samples" in terminal
    assert b"BIT-EXACT" in stdout
    stripes = EXAMPLE.parent / "stripes"
    status, terminal, stdout = run_on_a_terminal(
        "quantize", str(stripes / "stripes_cnn.onnx"), "-o", str(tmp_path / "q.onnx"),
        "--calibration", str(stripes / "stripes.npz"), "--samples", "12")
    assert status == 0, terminal
    assert f"calibrating [{'#' * 30}] 12/12 samples" in terminal
    assert "\r\033[K" in terminal.replace("\r\n", "")  # the line is cleared at the end
    assert b"on 12 sample(s)" in stdout


# The im2col kernels' slab buffer (up to 1 KB) takes more than the byte kernel's four
# columns on M0+.
@pytest.mark.parametrize("board,kernel,arena", [
    ("host", "q8_conv_u8_im2col_w16p_freq", 20768),
    ("cortex-m4f", "q8_conv_u8_im2col_w16_freq", 13296),
    ("cortex-m0plus", "q8_conv_u8_im2col_b8_ireq", 12864)])
def test_inspect_shows_the_kernels_generate_emits(board: str, kernel: str, arena: int) -> None:
    result = run_cli("inspect", EXAMPLE, "--board", board)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert f"board {board}" in lines[0]
    conv = next(line for line in lines if "'conv2_quant'" in line)
    assert f"QLinearConv -> {kernel} |" in conv
    program = codegen.pipeline.generate_sources(
        EXAMPLE, codegen.options.Options(board=board)).program
    assert kernel in [c.function for c in program.calls]
    assert "in uint8[1,8,32,32]" in conv and "out uint8[1,16,16,16]" in conv
    assert "MACs 294912" in conv and "per-axis(0) x16" in conv
    assert lines[-1].startswith("total: 6 nodes, 593920 MACs")
    assert f"{program.weight_bytes} weight bytes, 6 kernel calls" in lines[-1]
    assert f"arena {arena} bytes" in lines[-1]


def test_inspect_lists_every_unsupported_node(tmp_path: Path) -> None:
    model = conv_model()
    model.graph.node.append(helper.make_node("Cos", ["y"], ["p"], name="cos"))
    model.graph.node.append(helper.make_node("FastGelu", ["p"], ["q"], name="gelu",
                                             domain="com.microsoft"))
    model.graph.node.append(helper.make_node("Sin", ["q"], ["r"], name="sin"))
    model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    model.graph.output[0].name = "r"
    onnx.save(model, tmp_path / "m.onnx")
    result = run_cli("inspect", tmp_path / "m.onnx")
    assert result.returncode == 2
    assert "unsupported: 3 node(s)" in result.stdout
    assert "node 'cos' (Cos, domain ai.onnx): operator not supported" in result.stdout
    assert "node 'gelu' (FastGelu, domain com.microsoft): operator not supported" in result.stdout
    assert "node 'sin' (Sin, domain ai.onnx): operator not supported" in result.stdout
    assert "'conv' QLinearConv -> q8_conv_u8_im2col_w16p_freq" in result.stdout
