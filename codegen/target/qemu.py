"""Run microcontroller firmware (Cortex-M, RV32) in QEMU (semihosting, always under a
timeout) and count the instructions the model executes with a small TCG plugin built by
the host compiler."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from numpy.typing import NDArray

from codegen.core.boards import CROSS_KINDS, Board
from codegen.core.ir import Tensor
from codegen.core.resources import data_dir
from codegen.errors import ToolchainError

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
from .cycles import cost_table, disassemble
from .firmware import elf_tool

QEMU = "qemu-system-arm"  # the Cortex-M kind's; a board's is board.cross.qemu
MARKERS = ("q8_bench_start", "q8_bench_stop", "q8_layer_mark")


def qemu_binary(kind: str = "cortex-m") -> str:
    cross = CROSS_KINDS[kind]
    path = shutil.which(cross.qemu)
    if path is None:
        raise ToolchainError(f"no {cross.qemu} found: {cross.install_hint}")
    return path


def qemu_available(kind: str = "cortex-m") -> bool:
    return shutil.which(CROSS_KINDS[kind].qemu) is not None


def qemu_command(board: Board, elf: Path, plugin: Sequence[str] = ()) -> list[str]:
    return [qemu_binary(board.kind), "-M", board.qemu_machine, *board.cross.qemu_flags,
            "-nographic", "-semihosting-config", "enable=on,target=native", "-kernel",
            str(elf), *plugin]


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
    result = subprocess.run([elf_tool("nm", elf), str(elf)], capture_output=True, text=True,
                            timeout=RUN_TIMEOUT_S, check=False)
    found: dict[str, int] = {}
    for line in result.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] in names:
            found[parts[2]] = int(parts[0], 16)
    return found


@dataclass(frozen=True)
class Counts:
    """One measure (instructions or estimated cycles) of the runs."""
    per_sample: tuple[int, ...]  # one inference, per sample
    per_layer: tuple[int, ...] | None = None  # first sample, one per kernel call
    overhead: int = 0  # entry and exit of the model function (per-layer runs)


@dataclass(frozen=True)
class InstructionCounts:
    per_sample: tuple[int, ...]  # instructions of one inference, per sample
    per_layer: tuple[int, ...] | None = None  # first sample, one per kernel call
    overhead: int = 0  # entry and exit of the model function (per-layer runs)
    cycles: Counts | None = None  # the cycle model's estimate, when asked for
    cycle_model: str | None = None  # which table: "cortex-m4" or "cortex-m0plus"
    # The estimate with the board's flash wait states and caches (its flash_timing), on a
    # board that has them; `cycles` is the zero-wait figure.
    board_cycles: Counts | None = None


@dataclass(frozen=True)
class Event:
    marker: int  # index into the marks given to the plugin
    instructions: int  # executed so far
    cycles: int  # estimated so far (0 without a cost file), zero wait states
    wait: int = 0  # flash wait-state stalls so far (with the board's flash model)


def parse_events(log: str) -> list[Event]:
    events = []
    for line in log.splitlines():
        parts = line.split()
        if len(parts) == 5 and parts[0] == "EVENT":
            events.append(Event(*(int(p) for p in parts[1:])))
    return events


def unknown_instructions(log: str) -> int:
    """Executed instructions the cost file did not list (the plugin's exit line)."""
    for line in log.splitlines():
        parts = line.split()
        if len(parts) >= 5 and parts[0] == "TOTAL" and parts[3] == "UNKNOWN":
            return int(parts[4])
    raise ToolchainError("the counting plugin printed no totals")


def plugin_arguments(elf: Path, marks: Sequence[int], cycle_model: str | None,
                     folder: Path, board: Board | None = None) -> str:
    """The counting plugin and its arguments: the markers' addresses and, with a cycle
    model, the image's cost table (written into `folder`), unaligned accesses charged
    (Cortex-M4/M33: M0+ has none, they fault) and the board's flash model (its
    flash_timing, over where the QEMU image holds the flash)."""
    arguments = f"{plugin_library()},marks={':'.join(f'0x{a:x}' for a in marks)}"
    if cycle_model is not None:
        table = folder / "costs.txt"
        table.write_text(cost_table(disassemble(elf), cycle_model))
        arguments += f",costs={table},unaligned=1"
        timing = board.flash_timing if board is not None else None
        flash = board.qemu_memory if board is not None else None
        if timing is not None and flash is not None and timing.wait_states:
            arguments += (f",flash=0x{flash.flash_origin:x}:"
                          f"0x{flash.flash_origin + flash.flash_length:x},"
                          f"wait={timing.wait_states},line={timing.line_bytes},"
                          f"icache={timing.icache_lines},dcache={timing.dcache_lines}")
    return arguments


def board_waits(board: Board) -> bool:
    """Does the board's flash stall the core (a flash_timing with wait states)?"""
    return board.flash_timing is not None and board.flash_timing.wait_states > 0


def count_instructions(elf: Path, board: Board, inputs: Sequence[Tensor],
                       outputs: Sequence[Tensor], samples: Sequence[Mapping[str, Any]],
                       layers: int | None = None, cycle_model: str | None = None,
                       ) -> tuple[list[dict[str, NDArray[Any]]], InstructionCounts]:
    """Run the harness with the counting plugin (and the cycle model's costs of the
    image, when asked). The harness first runs the markers alone (start, stop; with layer
    marks also start, mark, mark, stop), whose cost every interval then subtracts."""
    addresses = symbol_addresses(elf, MARKERS)
    wanted = MARKERS if layers is not None else MARKERS[:2]
    missing = [m for m in wanted if m not in addresses]
    if missing:
        raise ToolchainError(f"the firmware has no {', '.join(missing)} marker")
    with tempfile.TemporaryDirectory(prefix="onnx2mcu-costs-") as tmp:
        arguments = plugin_arguments(elf, [addresses[m] for m in wanted], cycle_model,
                                     Path(tmp), board)
        results, log = run_firmware(elf, board, inputs, outputs, samples,
                                    ["-plugin", arguments])
    events = parse_events(log)
    unknown = unknown_instructions(log) if cycle_model is not None else 0
    if unknown:
        raise ToolchainError(f"{unknown} executed instructions are not in the firmware's "
                             "disassembly: no cycle estimate")
    measures = [[e.instructions for e in events]]
    waits = cycle_model is not None and board_waits(board)
    if cycle_model is not None:
        measures.append([e.cycles for e in events])
    if waits:
        measures.append([e.cycles + e.wait for e in events])
    kinds = [e.marker for e in events]
    if layers is None:
        split = [_sample_counts(kinds, m, len(samples)) for m in measures]
    else:
        split = [_layer_counts(kinds, m, layers, len(samples)) for m in measures]
    instructions = split[0]
    return results, InstructionCounts(
        instructions.per_sample, instructions.per_layer, instructions.overhead,
        cycles=split[1] if cycle_model is not None else None, cycle_model=cycle_model,
        board_cycles=split[2] if waits else None)


def measure_marked_region(elf: Path, board: Board, cycle_model: str) -> tuple[int, int, int]:
    """Instructions, estimated cycles (zero wait states) and estimated cycles with the
    board's flash of an image that runs its markers as a model harness does (start,
    stop, then start, the code measured, stop) and exits: the cycle model's validation
    images."""
    addresses = symbol_addresses(elf, MARKERS[:2])
    if len(addresses) != 2:
        raise ToolchainError(f"{elf.name} has no q8_bench_start/q8_bench_stop markers")
    with tempfile.TemporaryDirectory(prefix="onnx2mcu-costs-") as tmp:
        folder = Path(tmp)
        arguments = plugin_arguments(elf, [addresses[m] for m in MARKERS[:2]], cycle_model,
                                     folder, board)
        plugin = ["-plugin", arguments, "-d", "plugin", "-D", str(folder / "plugin.log")]
        _run(qemu_command(board, elf, plugin), folder)
        log = (folder / "plugin.log").read_text()
    events = parse_events(log)
    kinds = [e.marker for e in events]
    instructions = _sample_counts(kinds, [e.instructions for e in events], 1)
    cycles = _sample_counts(kinds, [e.cycles for e in events], 1)
    waited = _sample_counts(kinds, [e.cycles + e.wait for e in events], 1)
    return instructions.per_sample[0], cycles.per_sample[0], waited.per_sample[0]


def _sample_counts(kinds: list[int], stamps: list[int], samples: int) -> Counts:
    """Per-sample counts of a build without layer marks, less the markers' own cost."""
    start, stop = 0, 1
    if kinds != [start, stop] * (samples + 1):
        raise ToolchainError("unexpected marker sequence from the counting plugin")
    empty = stamps[1] - stamps[0]
    return Counts(tuple(stamps[2 * i + 1] - stamps[2 * i] - empty
                        for i in range(1, samples + 1)))


def _layer_counts(kinds: list[int], stamps: list[int], layers: int, samples: int) -> Counts:
    """Per-layer counts of a build with layer marks: what runs between a layer's mark and
    the next (or the stop marker), less the markers' own cost."""
    start, stop, mark = 0, 1, 2
    expected = [start, stop, start, mark, mark, stop] + (
        [start, *[mark] * layers, stop] * samples)
    if kinds != expected:
        raise ToolchainError("unexpected marker sequence from the counting plugin")
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
    return Counts(tuple(totals), tuple(first), entry)
