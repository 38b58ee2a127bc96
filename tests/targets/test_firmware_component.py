"""The generated code as a firmware engineer links it: several models in one image (each
with its own runtime, or one shared runtime), a caller-owned arena, the static arena in
a named linker section, and the runtime version check."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tarfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from conftest import SANITIZE, on_board, ort_reference, skip_where_ort_differs
from zoo import INPUT_NAME, MODEL_NAMES, quantized_model, sample_inputs

import codegen
from codegen.backend.interface import Interface
from codegen.cli import main
from codegen.core.boards import load_board
from codegen.options import Options
from codegen.oracle.verify import compare_outputs
from codegen.pipeline import generate_sources
from codegen.target.build import decode_samples, encode_samples
from codegen.target.qemu import run_firmware

CROSS_TOOLS = shutil.which("arm-none-eabi-gcc") and shutil.which("qemu-system-arm")
# Two models of different families: their runtimes share most kernel files.
PAIR = (("lenet5", "u8-pc", "net_a"), ("dscnn", "i8-pt", "net_b"))
STRICT = ("-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic")

CORPUS = Path(__file__).resolve().parents[1] / "corpus"


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


def run_pair(tmp_path: Path, linked: list[Path], include: list[Path]) -> None:
    """Compile a main running both models of PAIR with `linked` (sources, objects,
    libraries) into one program, with every include folder on one command line, run it,
    and compare each model with ORT."""
    names = [name for *_, name in PAIR]
    (tmp_path / "main.c").write_text(two_model_main(names))
    flags = [f"-I{d}" for d in include]
    exe = tmp_path / "two_models"
    subprocess.run(["cc", *STRICT, *SANITIZE, *flags, "-o", str(exe), str(tmp_path / "main.c"),
                    *map(str, linked), "-lm"],
                   check=True, capture_output=True, text=True)
    run_pair_program(tmp_path, exe)


def run_pair_program(tmp_path: Path, exe: Path) -> None:
    """Run a program built from two_model_main on PAIR's samples and compare each model's
    outputs with ORT."""
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
    run_pair(tmp_path, [s for p in projects for s in model_sources(p)], include)
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
    # The runtime's library, built once by its own Makefile, serves both models. Built
    # with the flags a generated project's Makefile adds on the host (-O3, which warns of
    # more than the sanitized builds' -O1): every runtime file is so proven to build with
    # the strict warnings there, whichever models the Makefile tests happen to take.
    lib = subprocess.run(["make", "-s", "-j2", "-C", str(runtime), "lib",
                          f"CFLAGS={' '.join(load_board('host').cflags)}"],
                         capture_output=True, text=True, check=False)
    assert lib.returncode == 0, lib.stderr
    library = runtime / "build" / "libonnx2mcu_runtime.a"
    run_pair(tmp_path, [*(s for p in projects for s in model_sources(p)), library],
             [*projects, runtime])
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


@pytest.mark.parametrize("board", [on_board("cortex-m4f"), on_board("cortex-m0plus"),
                                   on_board("riscv32")])
def test_caller_arena_and_arena_section_in_qemu(board: str) -> None:
    model = quantized_model("dscnn", "i8-pc")
    skip_where_ort_differs(model, board=board)
    for interface in (Interface(arena="caller"), Interface(arena_section=".model_arena")):
        report = codegen.verify(model, samples=1, board=board, interface=interface)
        assert report.ok, (interface, report.outputs)


def parent_firmware_cmake(models: list[str], linker_script: str) -> str:
    """A firmware project of the user's: its own main, the generated models pulled in with
    add_subdirectory, its own CPU flags from the command line."""
    lines = ["cmake_minimum_required(VERSION 3.13)", "project(firmware C)"]
    lines += [f"add_subdirectory(../{m} {m})" for m in models]
    lines += [f"add_executable(firmware.elf main.c ../{models[0]}/startup.c)",
              "target_link_libraries(firmware.elf PRIVATE "
              + " ".join(f"onnx2mcu::{m}" for m in models) + ")",
              "target_link_options(firmware.elf PRIVATE -nostartfiles -Wl,--gc-sections "
              "--specs=nano.specs --specs=rdimon.specs "
              f"-T ${{CMAKE_CURRENT_SOURCE_DIR}}/../{models[0]}/{linker_script})", ""]
    return "\n".join(lines)


@pytest.mark.skipif(not (CROSS_TOOLS and shutil.which("cmake")),
                    reason="needs arm-none-eabi-gcc, qemu-system-arm and cmake")
@pytest.mark.parametrize("shared", [False, True], ids=["own-runtimes", "shared-runtime"])
def test_a_parent_cmake_firmware_links_two_models(shared: bool, tmp_path: Path) -> None:
    board = "cortex-m4f"
    names = [name for *_, name in PAIR]
    runtime = tmp_path / "rt"
    if shared:
        codegen.write_runtime(runtime)
    for model_name, variant, name in PAIR:
        codegen.generate(quantized_model(model_name, variant), tmp_path / name, name=name,
                         board=board,
                         interface=Interface(runtime=str(runtime) if shared else None))
    firmware = tmp_path / "fw"
    firmware.mkdir()
    main_c = two_model_main(names).replace("argv[1]", '"input.bin"').replace(
        "argv[2]", '"output.bin"').replace("int main(int argc, char **argv)", "int main(void)")
    (firmware / "main.c").write_text(main_c.replace("    (void)argc;\n", ""))
    (firmware / "CMakeLists.txt").write_text(
        parent_firmware_cmake(names, f"{names[0]}_qemu.ld"))
    cpu = "-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16"
    build = tmp_path / "build"
    subprocess.run(["cmake", "-S", str(firmware), "-B", str(build),
                    f"-DCMAKE_TOOLCHAIN_FILE={tmp_path / names[0] / 'arm-none-eabi.cmake'}",
                    f"-DCMAKE_C_FLAGS={cpu}", "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON"],
                   check=True, capture_output=True)
    subprocess.run(["cmake", "--build", str(build)], check=True, capture_output=True)
    commands = json.loads((build / "compile_commands.json").read_text())
    for entry in commands:
        command = entry["command"]
        if entry["file"].endswith(("net_a.c", "net_b.c", "gemm.c")):
            assert " -O2" in command, command  # the board's level, with no build type set
        if "/fw/" not in entry["file"]:
            assert "-Werror" not in command and "-pedantic" not in command, command
        assert command.count("-mcpu=") == 1, command  # the parent's flags, not the model's
    built = [p.name for p in build.rglob("*.elf")]
    assert built == ["firmware.elf"], built  # no harness of the models' own
    samples, programs = [], []
    for (model_name, variant, _), index in zip(PAIR, range(2), strict=True):
        model = quantized_model(model_name, variant)
        program = generate_sources(model, Options(board=board)).program
        samples.append({INPUT_NAME: sample_inputs(model_name)[0]})
        programs.append((model, program, index))
    inputs = [replace(t, name=f"{i}/{t.name}") for _, p, i in programs for t in p.inputs]
    outputs = [replace(t, name=f"{i}/{t.name}") for _, p, i in programs for t in p.outputs]
    feed = {f"{i}/{INPUT_NAME}": samples[i][INPUT_NAME] for i in range(2)}
    ours = run_firmware(build / "firmware.elf", load_board(board), inputs, outputs, [feed])[0]
    for model, program, i in programs:
        mine = [{t.name: ours[0][f"{i}/{t.name}"] for t in program.outputs}]
        reference = ort_reference(model, [samples[i]], board=board)
        reports = compare_outputs(program.outputs, mine, reference)
        assert all(r.mismatches == 0 for r in reports), reports


def test_the_layer_hook_names_every_step_in_order(tmp_path: Path) -> None:
    model = quantized_model("dscnn", "u8-pt")
    out = tmp_path / "p"
    codegen.generate(model, out, name="net")
    manifest = json.loads((out / "net.json").read_text())
    (tmp_path / "main.c").write_text("\n".join([
        "#include <stdio.h>", '#include "net.h"',
        "static float x[NET_INPUT0_SIZE];", "static float y[NET_OUTPUT0_SIZE];",
        'void net_layer_hook(int32_t index, const char *node) { printf("%d %s\\n", '
        '(int)index, node); }',
        "int main(void) { net_run(x, y); return NET_NUM_LAYERS; }", ""]))
    sources = [str(s) for s in model_sources(out)]
    exe = tmp_path / "hooked"
    subprocess.run(["cc", *STRICT, *SANITIZE, "-DNET_LAYER_HOOKS", f"-I{out}",
                    "-o", str(exe), str(tmp_path / "main.c"), *sources, "-lm"], check=True)
    run = subprocess.run([str(exe)], capture_output=True, text=True)
    kernels = manifest["kernels"]
    assert run.returncode == len(kernels)
    expected = [f"{i} {k['name']}" for i, k in enumerate(kernels)] + [f"{len(kernels)} "]
    assert run.stdout.splitlines() == expected


BOARD_FILE = '''description = "my board"
kind = "cortex-m"
cpu = "cortex-m4"
cflags = ["-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16", "-O2"]
fpu = true
dsp = true
requant = "float"
ram_bytes = 262144
flash_bytes = 1048576
clock_hz = 64000000

[memory]
flash_origin = 0x00000000
flash_length = 1048576
ram_origin = 0x20000000
ram_length = 262144

[qemu]
machine = "mps2-an386"
flash_origin = 0x00000000
flash_length = 4194304
ram_origin = 0x20000000
ram_length = 4194304
'''


@pytest.mark.skipif(not CROSS_TOOLS, reason="needs arm-none-eabi-gcc and qemu-system-arm")
def test_a_board_file_of_your_own(tmp_path: Path) -> None:
    board = tmp_path / "my-board.toml"
    board.write_text(BOARD_FILE)
    model = quantized_model("ad_autoencoder", "i8-pc")
    report = codegen.verify(model, samples=1, board=str(board))
    assert report.ok and report.board == "my-board"
    from codegen.api import report as make_report
    counted = make_report(model, board=str(board), count=True)
    totals = counted.totals
    assert totals.clock_hz == 64_000_000 and totals.instructions is not None
    assert totals.time_ms == pytest.approx(totals.instructions / 64_000.0)
    assert all(layer.time_ms is not None for layer in counted.layers)


@pytest.mark.parametrize("change,message", [
    (("clock_hz = 64000000", "clock_hz = -1"), "field 'clock_hz' must be a positive integer"),
    (("cpu = \"cortex-m4\"", "cpu = \"cortex-a53\""), "field 'cpu' must name a Cortex-M core"),
    (("fpu = true", "fpu = \"yes\""), "field 'fpu' must be true or false"),
    (("ram_length = 262144", "ram_lenght = 262144"), "unknown field 'memory.ram_lenght'"),
    (("machine = \"mps2-an386\"", "machine = 3"), "field 'qemu.machine' must name"),
    (("description", "colour = 1\ndescription"), "unknown field 'colour'"),
    (("cpu = \"cortex-m4\"", "cpu = \"cortex-m3\""), "field 'dsp': cortex-m3 has no DSP"),
    (("[memory]", "[memory"), "is not valid TOML"),
    # values nested 5,000 deep (tomllib's recursion), a file of megabytes
    (("description", "x = " + "[" * 5000 + "]" * 5000 + "\ndescription"),
     "nests its values too deeply"),
    (("description", "# " + "x" * (1 << 20) + "\ndescription"), "is over 1048576 bytes"),
])
def test_a_bad_board_file_names_each_bad_field(change: tuple[str, str], message: str,
                                               tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    board = tmp_path / "bad.toml"
    board.write_text(BOARD_FILE.replace(*change, 1))
    model = tmp_path / "m.onnx"
    model.write_bytes(quantized_model("lenet5", "u8-pt").SerializeToString())
    assert main(["generate", str(model), "-o", str(tmp_path / "out"), "--board",
                 str(board)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_a_board_file_that_is_a_fifo_is_refused(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    board = tmp_path / "fifo.toml"
    os.mkfifo(board)
    model = tmp_path / "m.onnx"
    model.write_bytes(quantized_model("lenet5", "u8-pt").SerializeToString())
    assert main(["inspect", str(model), "--board", str(board)]) == 2
    assert "is not a regular file" in capsys.readouterr().err


def test_every_shipped_board_passes_its_own_checks() -> None:
    from codegen.core.boards import list_boards
    boards = list_boards()
    assert all(b.clock_hz for b in boards if b.is_cortex_m)


IO_CASES = [(name, ("quantized", "both")[i % 2], ("static", "caller")[i // 2 % 2])
            for i, name in enumerate(MODEL_NAMES)]


@pytest.mark.parametrize("model_name,io,arena", IO_CASES)
def test_quantized_io_is_bit_exact(model_name: str, io: str, arena: str) -> None:
    """The quantized entry point (and, with both, the float one around it) against ORT's
    quantized tensors, with the I/O in the arena."""
    model = quantized_model(model_name, "i8-pc")
    skip_where_ort_differs(model)
    report = codegen.verify(model, samples=2, seed=7, cflags=SANITIZE,
                            interface=Interface(io=io, arena=arena))
    assert report.ok, report.outputs
    names = {o.name for o in report.outputs}
    assert "output_quantized" in names and ("output" in names) == (io == "both")


def test_quantized_io_header_and_arena(tmp_path: Path) -> None:
    model = quantized_model("lenet5", "u8-pt")
    float_gen = generate_sources(model, Options(name="net"))
    gen = generate_sources(model, Options(name="net", interface=Interface(io="quantized")))
    assert [c.function for c in gen.program.calls] == [
        c.function for c in float_gen.program.calls][1:-1]  # no boundary Q/DQ
    header = gen.files["net.h"].decode()
    for declaration in ("void net_invoke(void);", "void *net_input(int32_t index);",
                        "void *net_output(int32_t index);",
                        "void net_run(const uint8_t *input0, uint8_t *output0);",
                        "#define NET_INPUT0_OFFSET ", "#define NET_INPUT0_ZERO_POINT "):
        assert declaration in header, declaration
    # The input lives in the arena from the start: the lower bound counts it.
    assert gen.plan.lower_bound >= gen.program.inputs[0].nbytes
    both = generate_sources(model, Options(name="net", interface=Interface(io="both")))
    header = both.files["net.h"].decode()
    assert "void net_run(const float *input0, float *output0);" in header
    assert "void net_run_quantized(const uint8_t *qinput0, uint8_t *qoutput0);" in header


def test_integer_graph_io_is_the_natural_quantized_io() -> None:
    """A tf2onnx conversion with int8 I/O: nothing to take out, the I/O moves to the arena."""
    model = CORPUS / "tf_ds_cnn_tflite_int8io_tf2onnx_qdq.onnx"
    report = codegen.verify(model, samples=2, interface=Interface(io="both"))
    assert report.ok, report.outputs


def test_a_float_output_has_no_quantized_form(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    model = CORPUS / "digits_logsoftmax_torchscript_ort_qdq_u8s8.onnx"
    assert main(["generate", str(model), "-o", str(tmp_path / "out"), "--io", "quantized"]) == 2
    err = capsys.readouterr().err
    assert "output 'output' is computed in float" in err and "LogSoftmax" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("board,io", [
    pytest.param("cortex-m4f", "quantized", marks=on_board("cortex-m4f").marks),
    pytest.param("cortex-m0plus", "both", marks=on_board("cortex-m0plus").marks),
    pytest.param("riscv32", "both", marks=on_board("riscv32").marks)])
def test_quantized_io_in_qemu(board: str, io: str) -> None:
    model = quantized_model("dscnn", "u8-pc")
    skip_where_ort_differs(model, board=board)
    report = codegen.verify(model, samples=1, board=board,
                            interface=Interface(io=io, arena="caller"))
    assert report.ok, report.outputs


@pytest.mark.skipif(not CROSS_TOOLS, reason="needs arm-none-eabi-gcc and qemu-system-arm")
def test_quantized_io_ram_on_mobilenet() -> None:
    """MobileNetV1-0.25 on cortex-m4f: what the user provides with quantized I/O is the
    arena plus stack and statics (TFLite Micro's arena alone: 103,680 bytes for VWW)."""
    from codegen.api import report as make_report
    totals = make_report(quantized_model("mobilenet_v1_025", "i8-pc"), board="cortex-m4f",
                         interface=Interface(io="quantized")).totals
    assert totals.io_bytes == 0
    # No statics: the model keeps none, and the size build stops without newlib's exit().
    assert totals.static_bytes == 0
    assert totals.ram_bytes is not None and totals.ram_bytes < 60_000
    assert totals.ram_bytes <= 1.05 * totals.arena_lower_bound


# ------------------------------------------------------------------ PlatformIO

PIO = Path(sys.executable).with_name("pio")
PLATFORMIO_MISSING = "PlatformIO is not installed (pip install '.[test]' brings it)"


def pio_environment(tmp_path: Path) -> dict[str, str]:
    """PlatformIO with a core folder of the test's own, and no telemetry."""
    return {**os.environ, "PLATFORMIO_CORE_DIR": str(tmp_path / "pio-core"),
            "PLATFORMIO_SETTING_ENABLE_TELEMETRY": "No", "PLATFORMIO_NO_ANSI": "1"}


def pio_pack_and_unpack(folder: Path, lib: Path, tmp_path: Path) -> Path:
    """`pio pkg pack` the folder (which validates its library.json), and unpack the
    tarball into lib/ as a PlatformIO project holds its libraries."""
    packed = tmp_path / "packed"
    packed.mkdir(exist_ok=True)
    result = subprocess.run([str(PIO), "pkg", "pack", str(folder), "-o", str(packed)],
                            capture_output=True, text=True, env=pio_environment(tmp_path),
                            timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    tarball = Path(re.findall(r'Wrote a tarball to "(.+)"', result.stdout)[-1])
    target = lib / folder.name
    with tarfile.open(tarball) as archive:
        archive.extractall(target, filter="data")
    return target


def platformio_library_build(library: Path, libraries: list[Path]) -> tuple[list[Path],
                                                                            list[str],
                                                                            list[Path]]:
    """What PlatformIO's library builder compiles of a library: the sources its
    srcFilter selects, its build flags, and its include folder with its dependencies'
    (matched by PlatformIO's own name and version rules). PlatformIO's code reads the
    manifest; only the compiler runs outside it."""
    from platformio.fs import match_src_files
    from platformio.package.manifest.parser import ManifestParserFactory
    from platformio.package.meta import PackageCompatibility

    def manifest_of(folder: Path) -> dict[str, Any]:
        parsed: dict[str, Any] = ManifestParserFactory.new_from_dir(str(folder)).as_dict()
        return parsed

    manifest = manifest_of(library)
    build = manifest["build"]
    src_dir = library / build.get("srcDir", "src")
    sources = sorted(src_dir / f for f in match_src_files(str(src_dir), build["srcFilter"],
                                                          ["c"]))
    include = [library / build["includeDir"]]
    for dependency in manifest.get("dependencies", []):
        wanted = PackageCompatibility.from_dependency(dependency)
        found = [d for d in libraries
                 if wanted.is_compatible(PackageCompatibility(
                     name=manifest_of(d)["name"], version=manifest_of(d)["version"]))]
        assert len(found) == 1, (library.name, dependency, libraries)
        include.append(found[0] / manifest_of(found[0])["build"]["includeDir"])
    return sources, list(build["flags"]), include


@pytest.mark.skipif(not PIO.exists(), reason=PLATFORMIO_MISSING)
def test_platformio_packages_of_two_models_build_one_firmware(tmp_path: Path) -> None:
    """One model with its own runtime and one on the shared runtime, each packed by
    PlatformIO, built as its library builder selects them, and run against ORT."""
    runtime = tmp_path / "onnx2mcu_runtime"
    assert main(["runtime", "-o", str(runtime)]) == 0
    folders = [runtime]
    for (model_name, variant, name), shared in zip(PAIR, (False, True), strict=True):
        out = tmp_path / name
        codegen.generate(quantized_model(model_name, variant), out, name=name,
                         interface=Interface(runtime=str(runtime) if shared else None))
        folders.append(out)
    lib = tmp_path / "lib"
    libraries = [pio_pack_and_unpack(f, lib, tmp_path) for f in folders]
    own = {p.relative_to(libraries[1]).as_posix() for p in libraries[1].rglob("*")
           if p.is_file()}
    assert "net_a.c" in own and "runtime/q8_names.h" in own and "library.json" in own
    assert not own & {"net_a_main.c", "Makefile", "CMakeLists.txt"}
    objects = []
    commands = []
    for library in libraries:
        sources, flags, include = platformio_library_build(library, libraries)
        assert sources, library
        if library.name != "onnx2mcu_runtime":
            assert [s.name for s in sources if s.parent == library] == [f"{library.name}.c"]
        for source in sources:
            obj = tmp_path / "obj" / library.name / source.relative_to(library)
            obj = obj.with_suffix(".o")
            obj.parent.mkdir(parents=True, exist_ok=True)
            commands.append(["cc", *STRICT, *flags, *(f"-I{d}" for d in include),
                             "-c", "-o", str(obj), str(source)])
            objects.append(obj)
    # The shared runtime is every kernel: compiled without sanitizers, two at a time.
    with ThreadPoolExecutor(2) as pool:
        for result in pool.map(lambda c: subprocess.run(c, capture_output=True, text=True),
                               commands):
            assert result.returncode == 0, result.stderr
    run_pair(tmp_path, objects, [libraries[1], libraries[2]])


@pytest.mark.skipif(not PIO.exists(), reason=PLATFORMIO_MISSING)
def test_platformio_native_build_runs_the_models(tmp_path: Path) -> None:
    """`pio run` on a native PlatformIO project holding two generated models in lib/.
    Needs PlatformIO's native platform, which comes from its registry: where the
    registry can't be reached, the test says so and skips."""
    registry = "api.registry.platformio.org"
    try:
        socket.create_connection((registry, 443), timeout=10).close()
    except OSError as error:
        pytest.skip(f"PlatformIO's native platform comes from its registry, and {registry} "
                    f"is out of reach here ({error}); the packages are checked offline by "
                    "the test above")
    env = pio_environment(tmp_path)
    install = subprocess.run([str(PIO), "pkg", "install", "-g", "-p", "native"],
                             capture_output=True, text=True, env=env, timeout=300)
    if install.returncode != 0 or "Error" in install.stdout + install.stderr:
        reason = (install.stdout + install.stderr).strip().splitlines()[-1:]
        pytest.skip("PlatformIO's native platform cannot be installed here (its registry "
                    f"is out of reach: {' '.join(reason) or install.returncode}); "
                    "the packages are checked offline by the test above")
    project = tmp_path / "firmware"
    runtime = project / "lib" / "onnx2mcu_runtime"
    codegen.write_runtime(runtime)
    for (model_name, variant, name), shared in zip(PAIR, (False, True), strict=True):
        codegen.generate(quantized_model(model_name, variant), project / "lib" / name,
                         name=name,
                         interface=Interface(runtime=str(runtime) if shared else None))
    (project / "src").mkdir()
    (project / "src" / "main.c").write_text(two_model_main([name for *_, name in PAIR]))
    (project / "platformio.ini").write_text("[env:native]\nplatform = native\n")
    result = subprocess.run([str(PIO), "run", "-d", str(project)], capture_output=True,
                            text=True, env=env, timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr
    run_pair_program(tmp_path, project / ".pio" / "build" / "native" / "program")
