"""Hostile and broken inputs: model strings never reach the generated C raw, `--name`
cannot inject code or escape the output folder, generation is deterministic, and the
tools leave no partial output behind when interrupted or missing."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from conftest import SANITIZE
from zoo import INPUT_NAME, quantized_model, sample_inputs

import codegen
from codegen.api import run_generated
from codegen.names import default_name, name_problem
from codegen.pipeline import Options, generate_sources

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "tiny_cnn_qop.onnx"

# Strings that break C when pasted raw: comment terminators and starters, line splices,
# trigraphs, preprocessor lines, quotes, keywords and reserved identifiers, names that
# collide once sanitized, non-ASCII, NUL, and a very long name.
HOSTILE = (
    "*/ int x; /*",
    "\n#include <evil.h>\n",
    "\n#error boom",
    "??/",
    "a\\",
    '"',
    "main",
    "int",
    "a-b",
    "a_b",
    "_Foo",
    "0starts_with_digit",
    "// line comment",
    "ünïcødé ☃ 名前",
    "nul\0byte",
    "y#output0",
    "??=define X",
    "\\\nsplice",
    "x" * 5000,
)
# Substrings that would change the meaning of C source wherever they appeared unescaped.
DANGEROUS = ("*/ int x", "evil.h", "#error", "??/", "a\\", "// line", "??=", "ünï",
             "\0", "x" * 200)


def hostile_name(index: int) -> str:
    """The index-th hostile name; later rounds add quotes so tensor names stay unique."""
    return HOSTILE[index % len(HOSTILE)] + "'" * (index // len(HOSTILE))


def tensor_names(graph: onnx.GraphProto) -> list[str]:
    """Every tensor name of the graph, in first-appearance order."""
    names: dict[str, None] = {}
    for value in (*graph.input, *graph.initializer):
        names.setdefault(value.name)
    for node in graph.node:
        for name in (*node.input, *node.output):
            if name:
                names.setdefault(name)
    for value in (*graph.output, *graph.value_info):
        names.setdefault(value.name)
    return list(names)


def rename_hostile(model: onnx.ModelProto) -> tuple[onnx.ModelProto, dict[str, str]]:
    """A copy of `model` whose every tensor, node, graph and doc string is hostile; also
    the old -> new tensor name map."""
    renamed = onnx.ModelProto()
    renamed.CopyFrom(model)
    graph = renamed.graph
    mapping = {old: hostile_name(i) for i, old in enumerate(tensor_names(graph))}
    for value in (*graph.input, *graph.output, *graph.value_info, *graph.initializer):
        value.name = mapping[value.name]
    for i, node in enumerate(graph.node):
        node.input[:] = [mapping[n] if n else "" for n in node.input]
        node.output[:] = [mapping[n] for n in node.output]
        # Node names may be empty or repeated in ONNX.
        node.name = "" if i % 3 == 0 else HOSTILE[i % len(HOSTILE)]
        node.doc_string = HOSTILE[(i + 1) % len(HOSTILE)]
    graph.name = "*/ graph \n#error boom"
    graph.doc_string = "??/ doc */"
    renamed.producer_name = '"producer\\'
    renamed.producer_version = "*/ 1 /*"
    renamed.doc_string = "\n#error model doc"
    return renamed, mapping


def strip_comments_and_strings(source: str) -> str:
    """C source without comments, string and character literals: what the compiler
    reads as code."""
    token = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'',
                       re.DOTALL)
    return token.sub(" ", source)


MODELS: dict[str, Callable[[], onnx.ModelProto]] = {
    "tiny_cnn_qop": lambda: onnx.load(str(EXAMPLE)),
    "lenet5-u8-pc": lambda: quantized_model("lenet5", "u8-pc"),
    "misc_ops-i8-pt": lambda: quantized_model("misc_ops", "i8-pt"),
}


def model_inputs(case: str, model: onnx.ModelProto, count: int = 2) -> list[dict[str, Any]]:
    """`count` input samples for the model's (single) graph input."""
    name = model.graph.input[0].name
    if case == "tiny_cnn_qop":
        dims = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
        rng = np.random.default_rng(3)
        return [{name: rng.uniform(-1, 1, dims).astype(np.float32)} for _ in range(count)]
    model_name = case.split("-")[0]
    assert model.graph.input[0].name in (INPUT_NAME, hostile_name(0))
    return [{name: x} for x in sample_inputs(model_name, count=count)]


@pytest.fixture(params=sorted(MODELS))
def case(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def generated_c(files: dict[str, bytes]) -> Iterator[tuple[str, str]]:
    for path, data in sorted(files.items()):
        if path.endswith((".c", ".h")) and not path.startswith("runtime/"):
            yield path, data.decode("ascii")  # non-ASCII never reaches the C source


def test_hostile_names_generate_the_same_program(case: str) -> None:
    plain = MODELS[case]()
    hostile, mapping = rename_hostile(plain)
    options = Options(name="net")
    gen_plain = generate_sources(plain, options)
    gen_hostile = generate_sources(hostile, options)
    for path, source in generated_c(gen_hostile.files):
        code = strip_comments_and_strings(source)
        for bad in DANGEROUS:
            assert bad not in code, (path, bad)
        # Names change comments and string literals only, never the code.
        assert code == strip_comments_and_strings(gen_plain.files[path].decode()), path
    plain_samples = model_inputs(case, plain)
    hostile_samples = [{mapping[k]: v for k, v in s.items()} for s in plain_samples]
    ours = run_generated(gen_plain, plain_samples, SANITIZE)
    theirs = run_generated(gen_hostile, hostile_samples, SANITIZE)
    for a, b in zip(ours, theirs, strict=True):
        assert [mapping[k] for k in a] == list(b)
        for k, value in a.items():
            assert value.tobytes() == b[mapping[k]].tobytes()
    report = codegen.verify(hostile, inputs=hostile_samples, cflags=SANITIZE)
    assert report.ok


def test_output_names_that_look_internal() -> None:
    """A graph output named like onnx2mcu's internal copy buffers ('y#output0'), listed
    twice, still comes back under its own name and bit-exact."""
    model = onnx.load(str(EXAMPLE))
    old = model.graph.output[0].name
    new = "y#output0"
    for node in model.graph.node:
        node.output[:] = [new if o == old else o for o in node.output]
    model.graph.output[0].name = new
    model.graph.output.append(model.graph.output[0])
    samples = model_inputs("tiny_cnn_qop", model)
    report = codegen.verify(model, inputs=samples, cflags=SANITIZE)
    assert report.ok and [o.name for o in report.outputs] == [new, new]


# ------------------------------------------------------------------ --name and paths

BAD_NAMES = ("../../x", "/tmp/x", "a/b", "x;rm -rf ~", "$(shell touch pwned)", "a b",
             "int", "main", "_Foo", "9lives", "", "ünï", "x" * 41, "startup", "Clean",
             "q8_runtime", "Q8_COPY", "x\ny", "${CMAKE_COMMAND}", "a\\")


def cli(*args: str, env: dict[str, str] | None = None,
        cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "codegen.cli", *args], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=600)


@pytest.mark.parametrize("name", BAD_NAMES)
def test_bad_name_is_refused_and_nothing_written(name: str, tmp_path: Path) -> None:
    out = tmp_path / "work" / "out"
    result = cli("generate", str(EXAMPLE), "-o", str(out), "--name", name)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("onnx2mcu: error: --name ")
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert not (tmp_path / "work").exists() and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("stem, expected", [
    ("tiny-cnn.qop", "tiny_cnn_qop"), ("int", "int_model"), ("main", "main_model"),
    ("_Foo", "Foo"), ("9lives", "model_9lives"), ("---", "model"),
    ("startup", "startup_model"), ("q8_runtime", "model_q8_runtime_model"),
    ("ünï", "n"), ("x" * 300, "x" * 40)])
def test_default_names_are_valid(stem: str, expected: str) -> None:
    assert default_name(stem) == expected
    assert name_problem(default_name(stem)) is None


def test_good_name_is_used_everywhere(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = cli("generate", str(EXAMPLE), "-o", str(out), "--name", "Net_2")
    assert result.returncode == 0, result.stderr
    assert {"Net_2.c", "Net_2.h", "Net_2_main.c", "Makefile"} <= {p.name for p in out.iterdir()}
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no staging folder left
