"""Hostile and broken inputs: model strings never reach the generated C raw, `--name`
cannot inject code or escape the output folder, generation is deterministic, and the
tools leave no partial output behind when interrupted or missing."""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from cli_inprocess import run_cli
from conftest import SANITIZE
from zoo import INPUT_NAME, quantized_model, sample_inputs

import codegen
from codegen.api import run_generated
from codegen.cli import main as cli_main
from codegen.core.names import default_name, name_problem, quoted, visible
from codegen.options import Options
from codegen.pipeline import generate_sources
from codegen.target.build import STALE_STAGING_S, remove_stale_staging

REPO = Path(__file__).resolve().parents[2]
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
        plain_code = strip_comments_and_strings(gen_plain.files[path].decode())
        for bad in DANGEROUS:  # beyond the template's own (its runtime version #error)
            assert code.count(bad) == plain_code.count(bad), (path, bad)
        # Names change comments and string literals only, never the code.
        assert code == plain_code, path
    # Makefile, CMakeLists.txt and the runtime hold no model string at all; the manifest
    # holds them JSON-escaped, and they read back exactly.
    assert set(gen_plain.files) == set(gen_hostile.files)
    for path, data in gen_hostile.files.items():
        if not path.endswith((".c", ".h", ".json")):
            assert data == gen_plain.files[path], path
    manifest = json.loads(gen_hostile.files["net.json"])
    assert [t["name"] for t in manifest["inputs"]] == [i.name for i in hostile.graph.input]
    assert [t["name"] for t in manifest["outputs"]] == [o.name for o in hostile.graph.output]
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


def test_name_macros_hold_the_exact_names(tmp_path: Path) -> None:
    """NAME_INPUT0_NAME is the ONNX name byte for byte; a name longer than the 4095 bytes
    a C99 string literal may hold is cut there, so -pedantic still compiles it."""
    model = onnx.load(str(EXAMPLE))
    long_name = "é" + "o" * 4999
    renames = {model.graph.input[0].name: 'ü\n??/"\\*/', model.graph.output[0].name: long_name}
    for node in model.graph.node:
        node.input[:] = [renames.get(n, n) for n in node.input]
        node.output[:] = [renames.get(n, n) for n in node.output]
    for value in (*model.graph.input, *model.graph.output):
        value.name = renames[value.name]
    out = tmp_path / "proj"
    codegen.generate(model, out, name="net")
    user = tmp_path / "app.c"
    user.write_text("""
#include <stdio.h>
#include "net.h"
int main(void) {
    fputs(NET_INPUT0_NAME, stdout);
    fputs("|", stdout);
    fputs(NET_OUTPUT0_NAME, stdout);
    return 0;
}
""")
    exe = tmp_path / "app"
    subprocess.run(["cc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", *SANITIZE,
                    f"-I{out}", "-o", str(exe), str(user)], check=True)
    printed = subprocess.run([str(exe)], capture_output=True, check=True).stdout
    first, second = printed.split(b"|")
    assert first == 'ü\n??/"\\*/'.encode()
    assert second == long_name.encode()[:4095]


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None
                    or shutil.which("qemu-system-arm") is None,
                    reason="needs arm-none-eabi-gcc and qemu-system-arm")
def test_hostile_names_on_cortex_m() -> None:
    """The firmware files (harness, size build, startup) too: same code, same outputs."""
    plain = MODELS["tiny_cnn_qop"]()
    hostile, mapping = rename_hostile(plain)
    options = Options(name="net", board="cortex-m4f")
    gen_plain, gen_hostile = generate_sources(plain, options), generate_sources(hostile, options)
    for path, source in generated_c(gen_hostile.files):
        assert strip_comments_and_strings(source) == strip_comments_and_strings(
            gen_plain.files[path].decode()), path
    samples = model_inputs("tiny_cnn_qop", plain, count=1)
    ours = run_generated(gen_plain, samples)[0]
    theirs = run_generated(gen_hostile, [{mapping[k]: v for k, v in s.items()}
                                         for s in samples])[0]
    assert [v.tobytes() for v in ours.values()] == [v.tobytes() for v in theirs.values()]


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
             "q8_runtime", "Q8_COPY", "x\ny", "${CMAKE_COMMAND}", "a\\", "x" * 10_000,
             # their NAME.h/.c/.json would take the place of a system header or build file
             "stdint", "string", "stdio", "stddef", "Math", "Makefile", "library",
             "CMakeLists")


def cli(*args: str, env: dict[str, str] | None = None,
        cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "codegen.cli", *args], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=600)


# Each name in this process (tests/cli_inprocess.py), two through a real interpreter.
@pytest.mark.parametrize("name,console", [*((name, False) for name in BAD_NAMES),
                                          ("x;rm -rf ~", True), ("x\ny", True)])
def test_bad_name_is_refused_and_nothing_written(name: str, console: bool,
                                                 tmp_path: Path) -> None:
    out = tmp_path / "work" / "out"
    result = (cli if console else run_cli)("generate", str(EXAMPLE), "-o", str(out),
                                           "--name", name)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("onnx2mcu: error: --name ")
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert len(result.stderr) < 300
    assert not (tmp_path / "work").exists() and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("stem, expected", [
    ("tiny-cnn.qop", "tiny_cnn_qop"), ("int", "int_model"), ("main", "main_model"),
    ("_Foo", "Foo"), ("9lives", "model_9lives"), ("---", "model"),
    ("startup", "startup_model"), ("q8_runtime", "model_q8_runtime_model"),
    ("ünï", "n"), ("x" * 300, "x" * 40), ("string", "string_model"),
    ("Makefile", "Makefile_model")])
def test_default_names_are_valid(stem: str, expected: str) -> None:
    assert default_name(stem) == expected
    assert name_problem(default_name(stem)) is None


def test_good_name_is_used_everywhere(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = cli("generate", str(EXAMPLE), "-o", str(out), "--name", "Net_2")
    assert result.returncode == 0, result.stderr
    assert {"Net_2.c", "Net_2.h", "Net_2_main.c", "Makefile"} <= {p.name for p in out.iterdir()}
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no staging folder left


# ------------------------------------------------------------------ determinism


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


ENVIRONMENTS = (
    {"LANG": "C", "LC_ALL": "C", "TZ": "UTC", "PYTHONHASHSEED": "0"},
    {"LANG": "de_DE.UTF-8", "LC_ALL": "tr_TR.UTF-8", "TZ": "Asia/Kathmandu",
     "PYTHONHASHSEED": "4242", "SOURCE_DATE_EPOCH": "0"},
    {"LANG": "ja_JP.UTF-8", "TZ": "America/St_Johns", "PYTHONHASHSEED": "random",
     "SOURCE_DATE_EPOCH": "2000000000"},
)


@pytest.mark.parametrize("board", ["host", "cortex-m0plus"])
def test_generation_is_byte_identical_everywhere(board: str, tmp_path: Path) -> None:
    """Different folders, working directories, locales, time zones, hash seeds and
    SOURCE_DATE_EPOCH: the same bytes (a hostile-named model, so escaping is covered)."""
    model = tmp_path / "hostile.onnx"
    model.write_bytes(rename_hostile(onnx.load(str(EXAMPLE)))[0].SerializeToString())
    trees = []
    for i, extra in enumerate(ENVIRONMENTS):
        cwd = tmp_path / f"cwd{i}"
        cwd.mkdir()
        env = {k: v for k, v in os.environ.items() if k not in ("LC_ALL", "SOURCE_DATE_EPOCH")}
        out = tmp_path / f"place{i}" / ("deep/" * i) / "out"
        result = cli("generate", str(model), "-o", str(out), "--board", board,
                     "--no-budget-check", env={**env, **extra}, cwd=cwd)
        assert result.returncode == 0, result.stderr
        trees.append(tree(out))
    assert trees[0] == trees[1] == trees[2]


# ------------------------------------------------------------------ fault tolerance

FAKE_CC = """#!/bin/sh
# A C compiler that can be slow (FAKE_CC_SLEEP) or fail after writing half its output
# (FAKE_CC_FAIL); otherwise the real one.
if [ "$1" != "--version" ]; then
    if [ -n "$FAKE_CC_SLEEP" ]; then
        touch "$FAKE_CC_MARK"
        sleep "$FAKE_CC_SLEEP"
    fi
    if [ -n "$FAKE_CC_FAIL" ]; then
        while [ $# -gt 0 ]; do
            if [ "$1" = "-o" ]; then echo half > "$2"; fi
            shift
        done
        echo "fake-cc: internal compiler error" >&2
        exit 1
    fi
fi
exec {real} "$@"
"""


def fake_tool(folder: Path, name: str, real: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(FAKE_CC.replace("{real}", real))
    path.chmod(0o755)
    return path


def example_inputs(path: Path) -> Path:
    model = onnx.load(str(EXAMPLE))
    np.savez(path, **model_inputs("tiny_cnn_qop", model, count=1)[0])
    return path


def assert_cache_clean(cache: Path) -> None:
    """No staging folder left, and every entry holds a finished build."""
    if not cache.exists():
        return
    for entry in cache.iterdir():
        assert not entry.name.startswith("."), f"staging folder left: {entry.name}"
        built = [p for p in (entry / "build").iterdir() if p.is_file()]
        assert built, f"cache entry without a build: {entry.name}"


def interrupt_when(args: list[str], env: dict[str, str], ready: Callable[[], bool],
                   signum: int, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run the CLI, send `signum` once `ready()` holds, and collect its result. The whole
    process group (the fake compiler's sleep included) is ended afterwards."""
    proc = subprocess.Popen([sys.executable, "-m", "codegen.cli", *args], env=env, cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while not ready() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signum)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def reference_outputs(inputs: Path) -> dict[str, Any]:
    with np.load(inputs) as data:
        return codegen.run(EXAMPLE, {k: data[k] for k in data.files})


# Each command and each signal once (the CLI handles SIGTERM as SIGINT, the same path).
@pytest.mark.parametrize("command, signum", [("run", signal.SIGTERM),
                                             ("verify", signal.SIGINT)])
def test_interrupt_during_compile(command: str, signum: int, tmp_path: Path) -> None:
    cc = fake_tool(tmp_path / "bin", "cc", shutil.which("cc") or "cc")
    mark, cache, out = tmp_path / "compiling", tmp_path / "cache", tmp_path / "out.npz"
    inputs = example_inputs(tmp_path / "in.npz")
    env = {**os.environ, "CC": str(cc), "ONNX2MCU_CACHE_DIR": str(cache),
           "FAKE_CC_MARK": str(mark)}
    args = [command, str(EXAMPLE), "--inputs", str(inputs)]
    args += ["--output", str(out)] if command == "run" else []
    result = interrupt_when(args, {**env, "FAKE_CC_SLEEP": "30"}, mark.exists, signum,
                            tmp_path)
    assert result.returncode == 128 + signum, result.stderr
    assert result.stderr == (f"onnx2mcu: interrupted by {signal.Signals(signum).name} "
                             "(temporary files removed)\n")
    assert not out.exists() and not list(tmp_path.glob(".out*"))
    assert_cache_clean(cache)
    again = cli(*args, env=env, cwd=tmp_path)  # the same compiler, so the same cache key
    assert again.returncode == 0, again.stderr
    assert_cache_clean(cache)
    if command == "run":
        with np.load(out) as data:
            for name, value in reference_outputs(inputs).items():
                assert data[name].tobytes() == value.tobytes()
    else:
        assert "BIT-EXACT" in again.stdout


def test_compiler_failure_leaves_no_cache_entry(tmp_path: Path) -> None:
    cc = fake_tool(tmp_path / "bin", "cc", shutil.which("cc") or "cc")
    cache, out = tmp_path / "cache", tmp_path / "out.npz"
    env = {**os.environ, "CC": str(cc), "ONNX2MCU_CACHE_DIR": str(cache)}
    args = ["run", str(EXAMPLE), "--inputs", str(example_inputs(tmp_path / "in.npz")),
            "--output", str(out)]
    failed = cli(*args, env={**env, "FAKE_CC_FAIL": "1"})
    assert failed.returncode == 2 and "internal compiler error" in failed.stderr
    assert "Traceback" not in failed.stderr and not out.exists()
    assert_cache_clean(cache)
    assert not list(cache.iterdir())
    again = cli(*args, env=env)
    assert again.returncode == 0, again.stderr and out.exists()


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="no arm-none-eabi-gcc")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_interrupt_generate_during_firmware_build(signum: int, tmp_path: Path) -> None:
    """generate for a Cortex-M board measures the firmware before writing anything: killed
    while the cross compiler runs, it leaves no output folder, nor its new parents."""
    real = shutil.which("arm-none-eabi-gcc")
    assert real is not None
    fake_tool(tmp_path / "bin", "arm-none-eabi-gcc", real)
    mark, cache = tmp_path / "compiling", tmp_path / "cache"
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}",
           "ONNX2MCU_CACHE_DIR": str(cache), "FAKE_CC_MARK": str(mark)}
    work = tmp_path / "work"
    work.mkdir()
    args = ["generate", str(EXAMPLE), "--board", "cortex-m4f", "-o", str(work / "a/b/out")]
    result = interrupt_when(args, {**env, "FAKE_CC_SLEEP": "30"}, mark.exists, signum, work)
    assert result.returncode == 128 + signum, result.stderr
    assert list(work.iterdir()) == []
    assert_cache_clean(cache)
    again = cli(*args, env=env, cwd=work)
    assert again.returncode == 0, again.stderr
    assert (work / "a/b/out/tiny_cnn_qop.c").is_file()


@pytest.mark.parametrize("existing", [False, True])
def test_interrupt_generate_at_random_points(existing: bool, tmp_path: Path) -> None:
    """Killed at random moments, generate either finished (a complete folder) or left
    nothing at all; with --force over an existing folder, that folder is kept intact
    unless the new one is complete. ResNet-8 takes about 0.4 s, Python's start included."""
    model = tmp_path / "resnet8.onnx"
    model.write_bytes(quantized_model("resnet8", "u8-pc").SerializeToString())
    reference = tmp_path / "reference"
    assert cli("generate", str(model), "-o", str(reference)).returncode == 0
    expected = tree(reference)
    rng = random.Random(7)
    for attempt in range(10):
        work = tmp_path / f"work{attempt}"
        work.mkdir()
        if existing:
            (work / "x/out").mkdir(parents=True)
            (work / "x/out/mine.txt").write_text("the user's")
        start = time.monotonic()
        delay = rng.uniform(0.05, 0.6)
        force = ["--force"] if existing else []
        result = interrupt_when(["generate", str(model), "-o", str(work / "x/out"), *force],
                                dict(os.environ),
                                lambda: time.monotonic() - start > delay,  # noqa: B023
                                rng.choice([signal.SIGINT, signal.SIGTERM]), work)
        assert "internal error" not in result.stderr
        if existing:
            assert [p.name for p in (work / "x").iterdir()] == ["out"]  # no staging left
            assert tree(work / "x/out") in (expected, {"mine.txt": b"the user's"})
            assert result.returncode != 0 or tree(work / "x/out") == expected
        elif result.returncode == 0:
            assert tree(work / "x/out") == expected
        elif list(work.iterdir()):
            # The signal came after the final rename (maybe after main returned, when
            # Python's own handling is back): the folder is complete.
            assert tree(work / "x/out") == expected, result.stderr
        # Otherwise nothing is left, also when killed while Python starts, before the
        # handlers are installed (the process then dies of the signal).


# ------------------------------------------------------------------ missing tools


def tool_folder(folder: Path, keep: Callable[[str], bool]) -> Path:
    """A PATH folder with links to the cross tools and QEMU that `keep` accepts."""
    folder.mkdir()
    for tool in ("arm-none-eabi-gcc", "qemu-system-arm"):
        real = shutil.which(tool)
        if real is None:
            continue
        for path in Path(real).parent.glob(tool.split("-")[0] + "*"):
            if keep(path.name):
                (folder / path.name).symlink_to(path)
    return folder


def test_missing_host_compiler(tmp_path: Path) -> None:
    inputs = example_inputs(tmp_path / "in.npz")
    for command in (["run", "--output", str(tmp_path / "o.npz")], ["verify"]):
        result = cli(command[0], str(EXAMPLE), "--inputs", str(inputs), *command[1:],
                     env={**os.environ, "CC": "/nonexistent"})
        assert result.returncode == 2
        assert result.stderr.count("\n") == 1 and "install" in result.stderr, result.stderr
        assert "'/nonexistent'" in result.stderr


@pytest.mark.parametrize("missing, hint", [("arm-none-eabi-", "gcc-arm-none-eabi"),
                                           ("qemu-system-arm", "qemu-system-arm")])
def test_missing_cross_compiler_or_qemu(missing: str, hint: str, tmp_path: Path) -> None:
    if shutil.which("arm-none-eabi-gcc") is None or shutil.which("qemu-system-arm") is None:
        pytest.skip("needs arm-none-eabi-gcc and qemu-system-arm to hide one of them")
    tools = tool_folder(tmp_path / "bin", lambda name: not name.startswith(missing))
    inputs = example_inputs(tmp_path / "in.npz")
    env = {**os.environ, "PATH": str(tools), "ONNX2MCU_CACHE_DIR": str(tmp_path / "cache")}
    for command in (["run", "--output", str(tmp_path / "o.npz")], ["verify"]):
        result = cli(command[0], str(EXAMPLE), "--board", "cortex-m4f", "--inputs",
                     str(inputs), *command[1:], env=env)
        assert result.returncode == 2, result.stderr
        assert result.stderr.count("\n") == 1 and hint in result.stderr, result.stderr
        assert "install" in result.stderr


# ------------------------------------------------------------------ terminal output


def fake_lines(text: str) -> list[str]:
    """Lines that only a name with a newline could have started."""
    return [line for line in text.splitlines() if line.startswith(("#", "\\", "??"))]


def test_hostile_names_stay_on_their_line(tmp_path: Path) -> None:
    """verify, inspect and errors print one line per entry, whatever the names hold."""
    hostile, _ = rename_hostile(onnx.load(str(EXAMPLE)))
    model = tmp_path / "hostile.onnx"
    model.write_bytes(hostile.SerializeToString())
    verify = cli("verify", str(model), "--samples", "1", "--per-layer")
    assert verify.returncode == 0 and "BIT-EXACT" in verify.stdout, verify.stderr
    inspect = cli("inspect", str(model))
    assert inspect.returncode == 0, inspect.stderr
    for output in (verify.stdout, inspect.stdout):
        assert not fake_lines(output) and "\x00" not in output
    assert "\\n#include <evil.h>" in inspect.stdout  # escaped, on its entry's line
    np.savez(tmp_path / "wrong.npz", nope=np.zeros(1, np.float32))
    run = cli("run", str(model), "--inputs", str(tmp_path / "wrong.npz"), "--output",
              str(tmp_path / "o.npz"))
    assert run.returncode == 2 and run.stderr.count("\n") == 1, run.stderr
    hostile.graph.node[1].op_type = "NoSuchOp"
    hostile.graph.node[1].name = "\n#error boom\x1b[2J"
    model.write_bytes(hostile.SerializeToString())
    bad = cli("generate", str(model), "-o", str(tmp_path / "out"))
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1, bad.stderr
    assert "\x1b" not in bad.stderr and not (tmp_path / "out").exists()


def test_stale_staging_folders_are_swept(tmp_path: Path) -> None:
    """Staging folders of builds killed outright (SIGKILL) go once they are old; a fresh
    one may belong to a build running right now and stays, and entries are never touched."""
    old, fresh, entry = (tmp_path / ".k1.tmp-a", tmp_path / ".k2.tmp-b", tmp_path / "k3")
    for folder in (old, fresh, entry):
        (folder / "build").mkdir(parents=True)
    now = time.time()
    os.utime(old, (now - STALE_STAGING_S - 10, now - STALE_STAGING_S - 10))
    os.utime(entry, (0, 0))
    remove_stale_staging(tmp_path, now)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".k2.tmp-b", "k3"]


@pytest.mark.parametrize("text, shown", [
    ("conv1", "conv1"), ("a\nb", "a\\nb"), ("\x1b[2J", "\\x1b[2J"), ("ü名", "ü名"),
    ("\u202eevil", "\\u202eevil"), ("nul\0", "nul\\x00")])
def test_visible_keeps_one_line(text: str, shown: str) -> None:
    assert visible(text) == shown


def test_quoted_is_short_ascii() -> None:
    assert quoted("x" * 100, limit=10) == "'xxxxxxxxxx...'"
    assert quoted("a\nü") == "'a\\n\\xfc'"


def test_cli_main_runs_in_a_thread() -> None:
    """Signal handlers can only be set in the main thread; elsewhere main() still works."""
    results: list[int] = []
    worker = threading.Thread(target=lambda: results.append(cli_main(["boards"])))
    worker.start()
    worker.join()
    assert results == [0]
