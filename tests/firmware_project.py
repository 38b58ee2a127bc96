"""A generated firmware project built and run the way a user does (its Makefile, its
CMake files), and a project's C loops (-DQ8_NO_ASM) run on the core: shared by the
Cortex-M and RISC-V target tests."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from conftest import ort_reference
from numpy.typing import NDArray

import codegen
from codegen.backend.io_boundary import harness_entries
from codegen.options import Options
from codegen.oracle.verify import compare_outputs, random_inputs
from codegen.pipeline import generate_sources
from codegen.target.firmware import build_firmware
from codegen.target.qemu import run_firmware


def run_project(model: onnx.ModelProto, out: Path, board: str, targets: Sequence[str],
                toolchain_file: str) -> tuple[NDArray[Any], NDArray[Any]]:
    """Two samples through the generated project in `out` (generate has written it):
    `make TARGETS` (ending with run: QEMU reads input.bin, writes output.bin), and the
    CMake build with its toolchain file where cmake is installed. Returns the firmware's
    outputs and the host build's, as float32 bits."""
    gen = generate_sources(model, Options(board=board))
    data = random_inputs(gen.program.inputs, 2, seed=5)
    x = gen.program.inputs[0]
    np.concatenate([d[x.name].astype("<f4").reshape(-1) for d in data]).tofile(
        out / "input.bin")
    subprocess.run(["make", "-s", "-C", str(out), *targets], check=True,
                   capture_output=True, timeout=600)
    if shutil.which("cmake"):
        subprocess.run(["cmake", "-S", str(out), "-B", str(out / "cmake-build"),
                        f"-DCMAKE_TOOLCHAIN_FILE={toolchain_file}"], check=True,
                       capture_output=True, timeout=600)
        subprocess.run(["cmake", "--build", str(out / "cmake-build")], check=True,
                       capture_output=True, timeout=600)
    ours = np.fromfile(out / "output.bin", dtype="<f4")
    host = codegen.run(model, data[0]), codegen.run(model, data[1])
    expected = np.concatenate([h[gen.program.outputs[0].name].reshape(-1) for h in host])
    return ours.view(np.uint32), expected.astype("<f4").view(np.uint32)


def c_loop_mismatches(model: onnx.ModelProto, board: str, weights: str = "auto") -> list[str]:
    """The outputs that differ from ORT when the project is built with -DQ8_NO_ASM (the
    C loops beside the assembly and vector paths) and run on the board in QEMU."""
    gen = generate_sources(model, Options(board=board, weights=weights))
    entry = harness_entries(gen.program)[0]
    samples = random_inputs(entry.inputs, 2, seed=5)
    build = build_firmware(gen.files, gen.name, gen.board, size=False,
                           cflags=("-DQ8_NO_ASM",))
    ours, _ = run_firmware(build.elf, gen.board, entry.inputs, entry.outputs, samples)
    reports = compare_outputs(gen.program.outputs, ours,
                              ort_reference(model, samples, board=board, weights=weights))
    return [r.name for r in reports if r.mismatches]
