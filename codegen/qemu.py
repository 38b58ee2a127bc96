"""Run Cortex-M firmware in QEMU (semihosting, always under a timeout) and count the
instructions the model executes with a small TCG plugin built by the host compiler."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from numpy.typing import NDArray

from .boards import Board
from .build import (
    RUN_TIMEOUT_S,
    cache_key,
    cached_build,
    compile_in,
    compiler_identity,
    decode_samples,
    encode_samples,
    host_compiler,
)
from .errors import ToolchainError
from .firmware import cross_tool
from .ir import Tensor
from .resources import data_dir

QEMU = "qemu-system-arm"
INSTALL_HINT = "install it: apt-get install --no-install-recommends qemu-system-arm"
MARKERS = ("q8_bench_start", "q8_bench_stop", "q8_layer_mark")


def qemu_binary() -> str:
    path = shutil.which(QEMU)
    if path is None:
        raise ToolchainError(f"no {QEMU} found: {INSTALL_HINT}")
    return path


def qemu_available() -> bool:
    return shutil.which(QEMU) is not None


def qemu_command(board: Board, elf: Path, plugin: Sequence[str] = ()) -> list[str]:
    return [qemu_binary(), "-M", board.qemu_machine, "-nographic",
            "-semihosting-config", "enable=on,target=native", "-kernel", str(elf), *plugin]


def _run(command: Sequence[str], folder: Path) -> None:
    try:
        result = subprocess.run(list(command), cwd=folder, capture_output=True, text=True,
                                timeout=RUN_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise ToolchainError(f"the firmware did not finish in {RUN_TIMEOUT_S} s under "
                             "QEMU") from None
    if result.returncode != 0:
        raise ToolchainError(f"the firmware failed under QEMU (exit {result.returncode}):\n"
                             f"{(result.stdout + result.stderr).strip()}")


def run_firmware(elf: Path, board: Board, inputs: Sequence[Tensor], outputs: Sequence[Tensor],
                 samples: Sequence[Mapping[str, Any]],
                 plugin: Sequence[str] = ()) -> tuple[list[dict[str, NDArray[Any]]], str]:
    """Run the harness once over all samples; returns the outputs and the plugin log."""
    payload = encode_samples(inputs, samples)
    with tempfile.TemporaryDirectory(prefix="onnx2mcu-qemu-") as tmp:
        folder = Path(tmp)
        (folder / "input.bin").write_bytes(payload)
        extra = [*plugin, "-d", "plugin", "-D", str(folder / "plugin.log")] if plugin else []
        _run(qemu_command(board, elf, extra), folder)
        out = folder / "output.bin"
        if not out.is_file():
            raise ToolchainError("the firmware wrote no output.bin")
        log = (folder / "plugin.log").read_text() if plugin else ""
        return decode_samples(outputs, out.read_bytes(), len(samples)), log


# ---------------------------------------------------------------- instruction counts


def plugin_library() -> Path:
    """The counting plugin, built once with the host compiler (cached)."""
    cc = host_compiler()
    folder = data_dir("qemu")
    files = {name: (folder / name).read_bytes() for name in ("insncount.c", "qemu_plugin_api.h")}
    flags = ["-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Werror"]
    entry, _ = cached_build(
        cache_key(compiler_identity(cc) + "qemu plugin", flags, files), files,
        "build/libinsncount.so",
        lambda folder: compile_in(folder, [cc, *flags, "-o", "build/libinsncount.so",
                                           "insncount.c"], "building the QEMU plugin"))
    return entry / "build" / "libinsncount.so"


def symbol_addresses(elf: Path, names: Sequence[str]) -> dict[str, int]:
    result = subprocess.run([cross_tool("nm"), str(elf)], capture_output=True, text=True,
                            timeout=RUN_TIMEOUT_S, check=False)
    found: dict[str, int] = {}
    for line in result.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] in names:
            found[parts[2]] = int(parts[0], 16)
    return found


@dataclass(frozen=True)
class InstructionCounts:
    per_sample: tuple[int, ...]  # instructions of one inference, per sample
    per_layer: tuple[int, ...] | None = None  # first sample, one per kernel call
    overhead: int = 0  # entry and exit of the model function (per-layer runs)


def parse_events(log: str) -> list[tuple[int, int]]:
    events = []
    for line in log.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "EVENT":
            events.append((int(parts[1]), int(parts[2])))
    return events


def count_instructions(elf: Path, board: Board, inputs: Sequence[Tensor],
                       outputs: Sequence[Tensor], samples: Sequence[Mapping[str, Any]],
                       layers: int | None = None,
                       ) -> tuple[list[dict[str, NDArray[Any]]], InstructionCounts]:
    """Run the harness with the counting plugin. The harness first runs the markers alone
    (start, stop; with layer marks also start, mark, mark, stop), whose cost every
    interval then subtracts."""
    addresses = symbol_addresses(elf, MARKERS)
    wanted = MARKERS if layers is not None else MARKERS[:2]
    missing = [m for m in wanted if m not in addresses]
    if missing:
        raise ToolchainError(f"the firmware has no {', '.join(missing)} marker")
    marks = ":".join(f"0x{addresses[m]:x}" for m in wanted)
    results, log = run_firmware(elf, board, inputs, outputs, samples,
                                ["-plugin", f"{plugin_library()},marks={marks}"])
    events = parse_events(log)
    start, stop = 0, 1
    if layers is None:
        stamps = [count for kind, count in events]
        kinds = [kind for kind, _ in events]
        if kinds != [start, stop] * (len(samples) + 1):
            raise ToolchainError("unexpected marker sequence from the counting plugin")
        empty = stamps[1] - stamps[0]
        per_sample = tuple(stamps[2 * i + 1] - stamps[2 * i] - empty
                           for i in range(1, len(samples) + 1))
        return results, InstructionCounts(per_sample)
    return results, _layer_counts(events, layers, len(samples))


def _layer_counts(events: list[tuple[int, int]], layers: int,
                  samples: int) -> InstructionCounts:
    """Per-layer counts of a build with layer marks: the instructions between a layer's
    mark and the next (or the stop marker), less the markers' own cost."""
    start, stop, mark = 0, 1, 2
    expected = [start, stop, start, mark, mark, stop] + (
        [start, *[mark] * layers, stop] * samples)
    if [kind for kind, _ in events] != expected:
        raise ToolchainError("unexpected marker sequence from the counting plugin")
    stamps = [count for _, count in events]
    to_mark, between, from_mark = (stamps[3] - stamps[2], stamps[4] - stamps[3],
                                   stamps[5] - stamps[4])
    runs = [stamps[6 + i * (layers + 2):6 + (i + 1) * (layers + 2)] for i in range(samples)]

    def split(run: list[int]) -> tuple[int, list[int]]:
        entry = run[1] - run[0] - to_mark
        body = [run[i + 2] - run[i + 1] - between for i in range(layers - 1)]
        return entry, [*body, run[-1] - run[-2] - from_mark]

    totals = []
    for run in runs:
        entry, per_layer = split(run)
        totals.append(entry + sum(per_layer))
    entry, first = split(runs[0])
    return InstructionCounts(tuple(totals), tuple(first), entry)
