"""What onnx2mcu says is what it builds: `inspect`, `report --format json` and
`generate` name the same kernels, weight bytes and arena for every zoo architecture, on
the host and on Cortex-M boards with and without DSP, in both weight widths; and those
are the functions the generated C calls and the const bytes it defines. (All three
lower through one Target, so they agree by construction; the spread of architectures,
variants, boards and weight widths below checks that construction and the C.)

The commands run in-process through the CLI's main() (the same code paths as the
console script, without a Python start-up per command)."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import onnx
import pytest
from zoo import SPREAD_CASES, case_id, quantized_model

from codegen import cli
from codegen.errors import OptionError
from codegen.options import Options
from codegen.pipeline import generate_sources
from codegen.target.firmware import cross_toolchain_available
from codegen.views.inspection import inspect_model

WEIGHTS = ("int8", "int16")
BOARDS = ("host", "cortex-m4f", "cortex-m0plus")
# Each architecture once, the variants, boards and weight widths taken in turn (every
# board and width with several architectures), and the largest network on each board.
COMBINATIONS = [(case, BOARDS[i % 3], WEIGHTS[i % 2]) for i, case in enumerate(SPREAD_CASES)]
COMBINATIONS += [(("mobilenet_v1_025", "u8-pc"), board, "int16") for board in BOARDS
                 if (("mobilenet_v1_025", "u8-pc"), board, "int16") not in COMBINATIONS]
CTYPE_BYTES = {"int8_t": 1, "uint8_t": 1, "int16_t": 2, "uint16_t": 2, "int32_t": 4,
               "uint32_t": 4, "float": 4, "double": 8, "int64_t": 8}

# `N  'node' Op [domain] -> kernel+kernel | ... | MACs M | weights W B`
INSPECT_ROW = re.compile(r"^\s*\d+ '(?P<node>.*)' (?P<op>\S+)(?: \[\S+\])? -> (?P<kernels>\S+"
                         r"(?: \(no copy\))?) \|.*\| MACs (?P<macs>\d+) \| weights "
                         r"(?P<weights>\d+) B$")
INSPECT_TOTAL = re.compile(r"^total: \d+ nodes, (?P<macs>\d+) MACs, (?P<weights>\d+) weight "
                           r"bytes, (?P<calls>\d+) kernel calls, arena (?P<arena>\d+) bytes")
CONST_ARRAY = re.compile(r"^static const (\w+) \w+\[(\d+)\] = \{", re.M)
CONST_UNION = re.compile(r"^static const union \{\n\s+uint64_t align;\n\s+(\w+) v\[(\d+)\];",
                         re.M)
ARENA = re.compile(r"^\s+uint8_t bytes\[(\d+)\];\n\} arena_storage;", re.M)
CALL = re.compile(r"^\s+(q8_\w+)\(", re.M)


@dataclass(frozen=True)
class Claims:
    """What one command says the build is."""

    kernels: tuple[str, ...]  # in call order
    weight_bytes: int
    arena_bytes: int
    node_weights: dict[str, int]  # per node, as far as the command tells


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    status = cli.main(list(args))
    captured = capsys.readouterr()
    assert status == 0, captured.err
    return captured.out


def inspect_claims(text: str) -> Claims:
    kernels: list[str] = []
    node_weights: dict[str, int] = defaultdict(int)
    total = None
    for line in text.splitlines():
        if (row := INSPECT_ROW.match(line)) is not None:
            if row["kernels"] in ("alias (no copy)", "constant"):
                assert row["weights"] == "0", line
                continue
            kernels += row["kernels"].split("+")
            if row["op"] != "(copy)":
                node_weights[row["node"]] += int(row["weights"])
        elif (match := INSPECT_TOTAL.match(line)) is not None:
            total = match
    assert total is not None, text
    assert int(total["calls"]) == len(kernels)
    return Claims(tuple(kernels), int(total["weights"]), int(total["arena"]), dict(node_weights))


def report_claims(text: str) -> Claims:
    report = json.loads(text)
    node_weights: dict[str, int] = defaultdict(int)
    for layer in report["layers"]:
        if layer["op"] != "(copy)":
            node_weights[layer["node"]] += layer["weight_bytes"]
    totals = report["totals"]
    assert totals["weight_bytes"] == sum(layer["weight_bytes"] for layer in report["layers"])
    return Claims(tuple(layer["kernel"] for layer in report["layers"]), totals["weight_bytes"],
                  totals["arena_bytes"], dict(node_weights))


def generated_claims(out: Path, name: str) -> tuple[Claims, Claims]:
    """What the project's manifest says, and what its C source actually does."""
    manifest = json.loads((out / f"{name}.json").read_text())
    said = Claims(tuple(k["function"] for k in manifest["kernels"]), manifest["weight_bytes"],
                  manifest["arena_bytes"], {})
    source = (out / f"{name}.c").read_text()
    run = source[source.index(f"void {name}_run("):]
    const_bytes = sum(CTYPE_BYTES[ctype] * int(count) for ctype, count in
                      (*CONST_ARRAY.findall(source), *CONST_UNION.findall(source)))
    arena = ARENA.search(source)
    done = Claims(tuple(CALL.findall(run)), const_bytes, int(arena[1]) if arena else 0, {})
    return said, done


@pytest.mark.parametrize("case,board,weights", COMBINATIONS,
                         ids=[f"{case_id(c)}-{b}-{w}" for c, b, w in COMBINATIONS])
def test_inspect_report_and_generate_agree(case: tuple[str, str], board: str, weights: str,
                                           tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    if board != "host" and not cross_toolchain_available():
        pytest.skip("arm-none-eabi-gcc missing: `make cortex-m-tools` installs it")
    path = tmp_path / "net.onnx"
    onnx.save(quantized_model(*case), path)
    options = ["--board", board, "--weights", weights]
    inspected = inspect_claims(run_cli(capsys, "inspect", str(path), *options))
    reported = report_claims(run_cli(capsys, "report", str(path), "--format", "json", *options))
    run_cli(capsys, "generate", str(path), "-o", str(tmp_path / "out"), *options)
    manifest, source = generated_claims(tmp_path / "out", "net")

    assert inspected.kernels == reported.kernels == manifest.kernels == source.kernels
    assert (inspected.weight_bytes == reported.weight_bytes == manifest.weight_bytes
            == source.weight_bytes)
    assert (inspected.arena_bytes == reported.arena_bytes == manifest.arena_bytes
            == source.arena_bytes)
    assert inspected.node_weights == reported.node_weights


MISSING = "/nonexistent/model.onnx"  # reading it would be a ModelError


@pytest.mark.parametrize("options,message", [
    (Options(weights="int4"), "--weights 'int4': choose one of auto, int8, int16"),
    (Options(board="cortex-m0plus", dsp=True), "board 'cortex-m0plus' .* has no DSP"),
    (Options(board="nope"), "unknown board 'nope'"),
    (Options(requant="fixed"), "--requant 'fixed'"),
    (Options(kernels="turbo"), "--kernels 'turbo'"),
    (Options(qdq_rules="riscv"), "--qdq-rules 'riscv'"),
    (Options(board="cortex-m4f", native=True), "--native is for the host board"),
    (Options(name="int"), "--name 'int'"),
])
def test_option_errors_come_before_the_model_is_read(options: Options, message: str) -> None:
    for command in (generate_sources, inspect_model):
        with pytest.raises(OptionError, match=message):
            command(MISSING, options)


@pytest.mark.parametrize("args,message", [
    (["inspect", MISSING, "--board", "nope"], "unknown board 'nope'"),
    (["generate", MISSING, "-o", "/nonexistent/out", "--board", "cortex-m3", "--native"],
     "--native is for the host board"),
    (["report", MISSING, "--count-instructions"],
     "instruction counts need a microcontroller board"),
    (["run", MISSING, "--inputs", MISSING, "--count-instructions"],
     "instruction counts need a microcontroller board"),
    (["verify", MISSING, "--inputs", MISSING, "--board", "cortex-m0"], "unknown board"),
])
def test_option_errors_on_the_command_line(args: list[str], message: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("onnx2mcu: error: ") and message in err, err
    assert len(err.strip().splitlines()) == 1, err
