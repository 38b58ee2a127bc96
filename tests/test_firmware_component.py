"""The generated code as a firmware engineer links it: several models in one image (each
with its own runtime, or one shared runtime), a caller-owned arena, the static arena in
a named linker section, and the runtime version check."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import SANITIZE, ort_reference, skip_where_ort_differs
from zoo import INPUT_NAME, MODEL_NAMES, quantized_model, sample_inputs

import codegen
from codegen.build import decode_samples, encode_samples
from codegen.cli import main
from codegen.interface import Interface
from codegen.pipeline import Options, generate_sources
from codegen.resources import runtime_dir
from codegen.verify import compare_outputs

CROSS_TOOLS = shutil.which("arm-none-eabi-gcc") and shutil.which("qemu-system-arm")
# Two models of different families: their runtimes share most kernel files.
PAIR = (("lenet5", "u8-pc", "net_a"), ("dscnn", "i8-pt", "net_b"))
STRICT = ("-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic")


def model_sources(project: Path) -> list[Path]:
    """What a firmware compiles of a generated project: every .c but the harnesses."""
    return sorted(p for p in project.rglob("*.c")
                  if not p.name.endswith(("_main.c", "_size.c")) and p.name != "startup.c"
                  and "build" not in p.parts)


def two_model_main(names: list[str]) -> str:
    """A program running each model once on its inputs, read from argv[1] in model order,
    and writing the outputs to argv[2] (one float input and output each)."""
    lines = ["#include <stdio.h>"] + [f'#include "{n}.h"' for n in names]
    for n in names:
        p = n.upper()
        lines += [f"static float {n}_in[{p}_INPUT0_SIZE];",
                  f"static float {n}_out[{p}_OUTPUT0_SIZE];"]
    lines += ["int main(int argc, char **argv)", "{", "    FILE *f;", "    (void)argc;",
              '    f = fopen(argv[1], "rb");']
    lines += [f"    if (fread({n}_in, 1, sizeof {n}_in, f) != sizeof {n}_in) return 1;"
              for n in names]
    lines += ["    fclose(f);"] + [f"    {n}_run({n}_in, {n}_out);" for n in names]
    lines += ['    f = fopen(argv[2], "wb");']
    lines += [f"    fwrite({n}_out, 1, sizeof {n}_out, f);" for n in names]
    lines += ["    return fclose(f) != 0;", "}", ""]
    return "\n".join(lines)


def run_pair(tmp_path: Path, projects: list[Path], libraries: list[Path],
             include: list[Path]) -> None:
    """Compile the projects' model sources into one program (linked with `libraries`)
    with every include folder on one command line, run it, and compare each model with
    ORT."""
    names = [name for *_, name in PAIR]
    (tmp_path / "main.c").write_text(two_model_main(names))
    sources = [s for p in projects for s in model_sources(p)]
    flags = [f"-I{d}" for d in include]
    exe = tmp_path / "two_models"
    subprocess.run(["cc", *STRICT, *SANITIZE, *flags, "-o", str(exe), str(tmp_path / "main.c"),
                    *map(str, sources), *map(str, libraries), "-lm"],
                   check=True, capture_output=True, text=True)
    data = b""
    samples: list[list[dict[str, Any]]] = []
    programs = []
    for model_name, variant, _ in PAIR:
        model = quantized_model(model_name, variant)
        program = generate_sources(model, Options()).program
        sample = [{INPUT_NAME: sample_inputs(model_name)[0]}]
        data += encode_samples(program.inputs, sample)
        samples.append(sample)
        programs.append((model, program))
    (tmp_path / "in.bin").write_bytes(data)
    subprocess.run([str(exe), str(tmp_path / "in.bin"), str(tmp_path / "out.bin")],
                   check=True)
    raw = (tmp_path / "out.bin").read_bytes()
    for (model, program), sample in zip(programs, samples, strict=True):
        size = sum(t.nbytes for t in program.outputs)
        ours = decode_samples(program.outputs, raw[:size], 1)
        raw = raw[size:]
        reports = compare_outputs(program.outputs, ours, ort_reference(model, sample))
        assert all(r.mismatches == 0 for r in reports), reports


@pytest.fixture(autouse=True)
def _skip_where_ort_differs() -> None:
    for model_name, variant, _ in PAIR:
        skip_where_ort_differs(quantized_model(model_name, variant))


def test_two_models_with_their_own_runtimes_link_into_one_image(tmp_path: Path) -> None:
    projects = []
    for model_name, variant, name in PAIR:
        out = tmp_path / name
        codegen.generate(quantized_model(model_name, variant), out, name=name)
        projects.append(out)
    # Every include folder on one command line: each model still finds its own runtime.
    include = [d for p in projects for d in (p, p / "runtime")]
    run_pair(tmp_path, projects, [], include)
    for project in projects:
        names = (project / "runtime" / "q8_names.h").read_text()
        assert re.search(rf"#define q8_maxpool_u8 +{project.name}_q8_maxpool_u8\n", names)


def test_two_models_share_one_runtime(tmp_path: Path) -> None:
    runtime = tmp_path / "rt"
    assert main(["runtime", "-o", str(runtime)]) == 0
    projects = []
    for model_name, variant, name in PAIR:
        out = tmp_path / name
        codegen.generate(quantized_model(model_name, variant), out, name=name,
                         interface=Interface(runtime=str(runtime)))
        assert not (out / "runtime").exists()
        assert "RUNTIME := ../rt" in (out / "Makefile").read_text()
        projects.append(out)
    # The runtime's library, built once by its own Makefile, serves both models.
    subprocess.run(["make", "-s", "-j2", "-C", str(runtime), "lib"], check=True,
                   capture_output=True)
    library = runtime / "build" / "libonnx2mcu_runtime.a"
    run_pair(tmp_path, projects, [library], [*projects, runtime])
    # Each project's harness builds against it.
    subprocess.run(["make", "-s", "-C", str(projects[0])], check=True, capture_output=True)


def test_a_runtime_of_another_version_stops_the_build(tmp_path: Path) -> None:
    runtime = tmp_path / "rt"
    codegen.write_runtime(runtime)
    model_name, variant, name = PAIR[0]
    out = tmp_path / name
    codegen.generate(quantized_model(model_name, variant), out, name=name,
                     interface=Interface(runtime=str(runtime)))
    header = runtime / "q8_version.h"
    header.write_text(re.sub(r"0x[0-9a-f]{8}UL", "0x00000000UL", header.read_text()))
    build = subprocess.run(["make", "-C", str(out)], capture_output=True, text=True)
    assert build.returncode != 0
    assert "#error" in build.stderr and "another onnx2mcu" in build.stderr, build.stderr
    # generate refuses such a runtime up front, naming it.
    again = tmp_path / "again"
    with pytest.raises(codegen.OptionError, match="written by another onnx2mcu"):
        codegen.generate(quantized_model(model_name, variant), again,
                         interface=Interface(runtime=str(runtime)))
    assert not again.exists()
    with pytest.raises(codegen.OptionError, match="no onnx2mcu runtime"):
        codegen.generate(quantized_model(model_name, variant), again,
                         interface=Interface(runtime=str(tmp_path)))


def test_the_exported_names_are_the_runtimes_symbols(tmp_path: Path) -> None:
    """exports.txt lists exactly the external symbols the runtime defines, so that a
    project's q8_names.h renames all of them."""
    defined: set[str] = set()
    for source in sorted(runtime_dir().glob("*.c")):
        obj = tmp_path / f"{source.stem}.o"
        subprocess.run(["cc", "-std=c99", "-O0", "-c", "-o", str(obj), str(source)],
                       check=True)
        nm = subprocess.run(["nm", "-g", "--defined-only", str(obj)], check=True,
                            capture_output=True, text=True).stdout
        defined |= {line.split()[2] for line in nm.splitlines() if len(line.split()) == 3}
    listed = {line for line in (runtime_dir() / "exports.txt").read_text().splitlines()
              if line and not line.startswith("#")}
    assert defined == listed, (sorted(defined - listed), sorted(listed - defined))


@pytest.mark.parametrize("model_name", MODEL_NAMES)
def test_caller_arena_and_arena_section_are_bit_exact(model_name: str) -> None:
    model = quantized_model(model_name, "u8-pc")
    skip_where_ort_differs(model)
    for interface in (Interface(arena="caller"), Interface(arena_section=".model_arena")):
        report = codegen.verify(model, samples=2, seed=5, cflags=SANITIZE, interface=interface)
        assert report.ok, (interface, report.outputs)


def test_caller_arena_entry_point_and_contract(tmp_path: Path) -> None:
    model = quantized_model("lenet5", "u8-pt")
    codegen.generate(model, tmp_path / "c", name="net", interface=Interface(arena="caller"))
    header = (tmp_path / "c" / "net.h").read_text()
    assert "void net_run(void *arena, const float *input0, float *output0);" in header
    assert "#define NET_ARENA_ALIGN 8" in header and "reentran" not in header.split(
        "NET_ARENA_BYTES bytes")[0]
    source = (tmp_path / "c" / "net.c").read_text()
    assert "static union" not in source  # no arena of its own
    codegen.generate(model, tmp_path / "s", name="net",
                     interface=Interface(arena_section=".sram2"))
    assert '__attribute__((section(".sram2")))' in (tmp_path / "s" / "net.c").read_text()
    subprocess.run(["make", "-s", "-C", str(tmp_path / "s")], check=True, capture_output=True)
    sections = subprocess.run(["objdump", "-h", str(tmp_path / "s" / "build" / "net.o")],
                              check=True, capture_output=True, text=True).stdout
    assert ".sram2" in sections


@pytest.mark.parametrize("bad,message", [
    (["--arena", "heap"], "invalid choice"),
    (["--arena-section", "a b"], "not a usable section name"),
    (["--arena", "caller", "--arena-section", ".x"], "the caller places its own arena"),
])
def test_bad_interface_options_are_refused(bad: list[str], message: str, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    model = tmp_path / "m.onnx"
    model.write_bytes(quantized_model("lenet5", "u8-pt").SerializeToString())
    try:
        status = main(["generate", str(model), "-o", str(tmp_path / "out"), *bad])
    except SystemExit as exit_:  # argparse's own refusals
        status = int(exit_.code or 0)
    assert status == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.skipif(not CROSS_TOOLS, reason="needs arm-none-eabi-gcc and qemu-system-arm")
@pytest.mark.parametrize("board", ["cortex-m4f", "cortex-m0plus"])
def test_caller_arena_and_arena_section_in_qemu(board: str) -> None:
    model = quantized_model("dscnn", "i8-pc")
    skip_where_ort_differs(model, board=board)
    for interface in (Interface(arena="caller"), Interface(arena_section=".model_arena")):
        report = codegen.verify(model, samples=1, board=board, interface=interface)
        assert report.ok, (interface, report.outputs)
