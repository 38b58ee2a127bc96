"""Instruction counts and cycle estimates of one inference in QEMU, as `run
--count-instructions/--count-cycles` prints them."""

from __future__ import annotations

from dataclasses import dataclass

from codegen.core.names import visible
from codegen.target.cycles import ASSUMPTIONS
from codegen.target.qemu import InstructionCounts


@dataclass(frozen=True)
class CountReport:
    counts: InstructionCounts
    macs: int
    layers: tuple[tuple[str, str, int], ...]  # (node, kernel, MACs) per kernel call
    board: str
    notes: tuple[str, ...] = ()
    clock_hz: int | None = None  # the board's core clock
    flash_timing: str | None = None  # the board's flash model, with counts.board_cycles


def count_lines(report: CountReport) -> list[str]:
    """run --count-instructions/--count-cycles as it prints: totals, time, per layer."""
    lines = [f"note: {visible(note)}" for note in report.notes]
    counts = report.counts
    first = counts.per_sample[0]
    per_mac = f", {first / report.macs:.2f} per MAC" if report.macs else ""
    lines.append(f"board {report.board}: {first} instructions per inference{per_mac} "
                 f"({report.macs} MACs)")
    cycles, board = counts.cycles, counts.board_cycles
    if cycles is not None:
        estimate = cycles.per_sample[0]
        per_mac = f", {estimate / report.macs:.2f} per MAC" if report.macs else ""
        lines.append(f"cycles: {estimate} per inference{per_mac}, estimated with the "
                     f"{counts.cycle_model} table; assumes "
                     f"{ASSUMPTIONS[counts.cycle_model or '']}")
    if cycles is not None and board is not None:
        waited = board.per_sample[0]
        per_mac = f", {waited / report.macs:.2f} per MAC" if report.macs else ""
        lines.append(f"cycles with the board's flash: {waited} per inference{per_mac} "
                     f"({waited - cycles.per_sample[0]} more: {report.flash_timing})")
    if report.clock_hz is not None:
        mhz = f"{report.clock_hz / 1e6:g} MHz"
        if board is not None:
            lines.append(f"time: {board.per_sample[0] * 1000.0 / report.clock_hz:.3f} ms per "
                         f"inference at {mhz} in estimated cycles with the board's flash")
        elif cycles is not None:
            lines.append(f"time: {cycles.per_sample[0] * 1000.0 / report.clock_hz:.3f} ms per "
                         f"inference at {mhz} in estimated cycles")
        else:
            lines.append(f"time: {first * 1000.0 / report.clock_hz:.3f} ms per inference at "
                         f"{mhz} at one instruction per cycle (a lower bound)")
    if len(set(counts.per_sample)) > 1:
        lines.append(f"per sample: {' '.join(str(c) for c in counts.per_sample)}")
    if counts.per_layer is None:
        return lines
    layer_cycles = cycles.per_layer if cycles is not None else None
    layer_board = board.per_layer if board is not None else None
    names = [visible(node) for node, _, _ in report.layers]
    width = max([len(n) for n in names] + [len("(entry and exit)")])
    kernel_width = max([len(k) for _, k, _ in report.layers] + [len("kernel")])
    extra = f" {'cycles':>12} {'per MAC':>8}" if layer_cycles is not None else ""
    extra += f" {'board cycles':>12} {'per MAC':>8}" if layer_board is not None else ""
    lines.append(f"{'layer':<{width}} {'kernel':<{kernel_width}} {'instructions':>12} "
                 f"{'MACs':>10} {'per MAC':>8}" + extra)
    for i, ((_, kernel, macs), count) in enumerate(zip(report.layers, counts.per_layer,
                                                       strict=True)):
        ratio = f"{count / macs:.2f}" if macs else "-"
        line = f"{names[i]:<{width}} {kernel:<{kernel_width}} {count:>12} {macs:>10} " \
               f"{ratio:>8}"
        for measure in (layer_cycles, layer_board):
            if measure is not None:
                c = measure[i]
                line += f" {c:>12} {f'{c / macs:.2f}' if macs else '-':>8}"
        lines.append(line)
    tail = f" {'':>10} {'':>8} {cycles.overhead:>12}" if cycles is not None else ""
    tail += f" {'':>8} {board.overhead:>12}" if board is not None else ""
    lines.append(f"{'(entry and exit)':<{width}} {'':<{kernel_width}} {counts.overhead:>12}"
                 + tail)
    return lines
