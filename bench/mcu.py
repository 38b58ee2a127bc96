"""The MLPerf Tiny models on emulated Cortex-M cores: instructions and estimated cycles per
inference and per MAC (QEMU, counting plugin and cycle model, deterministic), flash and
RAM (the model alone, measured on its build), beside TFLite Micro + CMSIS-NN.

Two sources of models:
- `zoo`: the MLPerf Tiny architectures of the test zoo (quantized by ORT in QOperator
  format, int8, per-channel; random weights), as the tests build them;
- `official`: the four official int8 TFLite models (../shared/models/mlperf_tiny/),
  converted by tf2onnx as a user would (QDQ, int8 I/O). tf2onnx needs tensorflow, which
  onnx2mcu's own environment does not have: --tf2onnx-python names a Python that has both
  (python -m venv /tmp/tf-venv; /tmp/tf-venv/bin/pip install tensorflow-cpu==2.21.0
  tf2onnx==1.17.0). Converted models are kept in bench/.cache/.

The comparison is at TFLite Micro's interface: --io quantized (default) takes and gives
the int8 tensors, so no float conversion is counted (TFLM's figures are int8 in, int8
out). The anchor (../shared/docs/cortex-m-cycles.md): tflite-micro + CMSIS-NN, -O2,
cortex-m4+fp, QEMU mps2-an386, estimated with the same cost table.

    .venv/bin/python bench/mcu.py [--boards cortex-m4f,cortex-m33,cortex-m0plus,cortex-m55]
        [--models resnet8,dscnn,mobilenet_v1_025,ad_autoencoder] [--source zoo|official|both]
        [--weights int8,int16] [--io quantized|float] [--per-layer] [--markdown]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import onnx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import zoo  # noqa: E402

from codegen.api import count_generated, firmware_budget  # noqa: E402
from codegen.backend.interface import Interface  # noqa: E402
from codegen.backend.io_boundary import harness_entries  # noqa: E402
from codegen.core.boards import load_board  # noqa: E402
from codegen.options import Options  # noqa: E402
from codegen.oracle.verify import random_inputs  # noqa: E402
from codegen.pipeline import Generated, generate_sources  # noqa: E402
from codegen.target.cycles import cycle_model_for  # noqa: E402

MLPERF_TINY = ("resnet8", "dscnn", "mobilenet_v1_025", "ad_autoencoder")
SHARED = ROOT.parent / "shared" / "models" / "mlperf_tiny"
OFFICIAL_FILES = {"resnet8": "pretrainedResnet_quant.tflite", "dscnn": "kws_ref_model.tflite",
                  "mobilenet_v1_025": "vww_96_int8.tflite", "ad_autoencoder": "ad01_int8.tflite"}
CACHE = Path(__file__).resolve().parent / ".cache"


@dataclass(frozen=True)
class Anchor:
    """TFLite Micro + CMSIS-NN on the official model, Cortex-M4F."""

    instructions: int
    cycles: int
    flash: int  # model + runtime
    arena: int


TFLM_M4 = {
    "resnet8": Anchor(29_863_548, 35_732_656, 200_316, 55_984),
    "dscnn": Anchor(7_700_055, 9_113_724, 161_064, 24_272),
    "mobilenet_v1_025": Anchor(24_102_341, 28_885_936, 440_416, 103_680),
    "ad_autoencoder": Anchor(583_102, 731_278, 326_452, 3_984),
}


# TFLite Micro + CMSIS-NN with its Helium (MVE) paths, -O2, QEMU mps3-an547 (Cortex-M55),
# instructions inside Invoke() on the official models, as issue 38 records them (three
# significant figures); arenas as on the M4F.
TFLM_MVE_INSTRUCTIONS = {"resnet8": 4_910_000, "dscnn": 1_810_000,
                         "mobilenet_v1_025": 6_560_000, "ad_autoencoder": 150_000}
# Boards whose figures compare with those (instructions; QEMU models no M55 timing).
MVE_BOARDS = frozenset({"cortex-m55"})


@dataclass(frozen=True)
class Row:
    board: str
    source: str
    model: str
    weights: str
    macs: int
    instructions: int
    cycles: int | None
    flash: int
    ram: int
    layers: tuple[tuple[str, str, int, int, int | None], ...]  # node, kernel, MACs, instr, cyc
    # With the board's flash wait states and caches (a board whose file gives them).
    board_cycles: int | None = None


def official_model(name: str, tf2onnx_python: str) -> Path:
    """The official TFLite model converted by tf2onnx (cached)."""
    out = CACHE / f"{name}_official.onnx"
    if out.is_file():
        return out
    CACHE.mkdir(exist_ok=True)
    source = SHARED / OFFICIAL_FILES[name]
    result = subprocess.run([tf2onnx_python, "-m", "tf2onnx.convert", "--tflite", str(source),
                             "--output", str(out), "--opset", "13"],
                            capture_output=True, text=True, check=False)
    if result.returncode != 0 or not out.is_file():
        sys.exit(f"tf2onnx could not convert {source.name} with {tf2onnx_python} (see this "
                 f"file's docstring for the environment):\n{result.stderr[-2000:]}")
    return out


def measure(model: onnx.ModelProto | Path, board: str, weights: str, io: str,
            per_layer: bool, memory: str = "fast") -> tuple[Generated, Row]:
    options = Options(board=board, weights=weights, interface=Interface(io=io),
                      memory=memory)
    gen = generate_sources(model if isinstance(model, onnx.ModelProto) else str(model),
                           options)
    data = random_inputs(harness_entries(gen.program)[0].inputs, 1, seed=0)
    with_cycles = cycle_model_for(gen.board.cpu) is not None
    report = count_generated(gen, data, per_layer=per_layer, cycles=with_cycles)
    counts = report.counts
    budget, _ = firmware_budget(gen, check=False)
    assert budget is not None
    layer_cycles = counts.cycles.per_layer if counts.cycles is not None else None
    layers = tuple(
        (node, kernel, macs, n, layer_cycles[i] if layer_cycles is not None else None)
        for i, ((node, kernel, macs), n) in enumerate(zip(report.layers,
                                                           counts.per_layer or (),
                                                           strict=False)))
    # Per MAC of the whole graph: the MACs of skipped all-zero channels count too, as
    # TFLite Micro's and ST's published figures count them.
    nominal = report.macs + sum(c.skipped_macs for c in gen.program.calls)
    return gen, Row(board, "", gen.name, weights, nominal, counts.per_sample[0],
                    counts.cycles.per_sample[0] if counts.cycles is not None else None,
                    budget.flash_bytes, budget.ram_bytes, layers,
                    counts.board_cycles.per_sample[0] if counts.board_cycles else None)


def ratio(ours: int | None, theirs: int | None) -> str:
    return f"{ours / theirs:.2f}" if ours is not None and theirs else "-"


COLUMNS = ("board", "source", "model", "weights", "instructions", "est. cycles",
           "cycles/MAC", "x TFLM cycles", "with board flash", "cycles/MAC", "flash", "RAM",
           "x TFLM arena")
# Boards whose core TFLite Micro's Cortex-M4F figures compare with (zero wait states).
M4F_BOARDS = frozenset({"cortex-m4f", "nucleo-l4r5zi", "nucleo-l432kc", "nucleo-f401re",
                        "nucleo-f411re", "nrf52-dk", "nrf52840-dk"})


def print_header(markdown: bool) -> None:
    if markdown:
        print("| " + " | ".join(COLUMNS) + " |")
        print("|" + "---|" * len(COLUMNS))
    else:
        print(f"{'board':<14} {'source':<8} {'model':<18} {'weights':<7} {'instructions':>13} "
              f"{'cycles':>12} {'cyc/MAC':>7} {'xTFLM':>6} {'w/ flash':>12} {'cyc/MAC':>7} "
              f"{'flash':>8} {'RAM':>7} {'xTFLM':>6}")


MVE_COLUMNS = ("board", "source", "model", "weights", "instructions", "instructions/MAC",
               "x TFLM (MVE) instructions", "flash", "RAM", "x TFLM arena")


def print_mve_rows(rows: list[Row]) -> None:
    """The Helium boards' rows as a Markdown table of their own: instructions beside TFLite
    Micro + CMSIS-NN's MVE build (no cycle model for these cores)."""
    print("| " + " | ".join(MVE_COLUMNS) + " |")
    print("|" + "---|" * len(MVE_COLUMNS))
    for r in rows:
        anchor = TFLM_M4.get(r.model)
        print(f"| {r.board} | {r.source} | {r.model} | {r.weights} | {r.instructions:,d} | "
              f"{r.instructions / r.macs:.2f} | "
              f"{ratio(r.instructions, TFLM_MVE_INSTRUCTIONS.get(r.model))} | "
              f"{r.flash:,d} | {r.ram:,d} | {ratio(r.ram, anchor.arena if anchor else None)} |")


RISCV_COLUMNS = ("board", "source", "model", "weights", "instructions", "instructions/MAC",
                 "flash", "RAM")


def print_riscv_rows(rows: list[Row]) -> None:
    """The RISC-V boards' rows as a Markdown table of their own: instructions (no cycle
    model for these cores; issue 38's target is 4 per MAC), flash and RAM, to set beside
    the Cortex-M0+ rows of the same models."""
    print("| " + " | ".join(RISCV_COLUMNS) + " |")
    print("|" + "---|" * len(RISCV_COLUMNS))
    for r in rows:
        print(f"| {r.board} | {r.source} | {r.model} | {r.weights} | {r.instructions:,d} | "
              f"{r.instructions / r.macs:.2f} | {r.flash:,d} | {r.ram:,d} |")


def print_rows(rows: list[Row], markdown: bool) -> None:
    for r in rows:
        anchor = TFLM_M4.get(r.model) if r.board in M4F_BOARDS else None
        cycles = f"{r.cycles:,d}" if r.cycles is not None else "-"
        per_mac = f"{r.cycles / r.macs:.2f}" if r.cycles is not None else "-"
        waited = f"{r.board_cycles:,d}" if r.board_cycles is not None else "-"
        waited_mac = f"{r.board_cycles / r.macs:.2f}" if r.board_cycles is not None else "-"
        vs_cycles = ratio(r.cycles, anchor.cycles if anchor else None)
        vs_arena = ratio(r.ram, anchor.arena if anchor else None)
        if markdown:
            print(f"| {r.board} | {r.source} | {r.model} | {r.weights} | {r.instructions:,d} | "
                  f"{cycles} | {per_mac} | {vs_cycles} | {waited} | {waited_mac} | "
                  f"{r.flash:,d} | {r.ram:,d} | {vs_arena} |")
        else:
            print(f"{r.board:<14} {r.source:<8} {r.model:<18} {r.weights:<7} "
                  f"{r.instructions:>13,d} {cycles:>12} {per_mac:>7} {vs_cycles:>6} "
                  f"{waited:>12} {waited_mac:>7} {r.flash:>8,d} {r.ram:>7,d} {vs_arena:>6}")
        for node, kernel, macs, n, c in r.layers:
            per = f"{c / macs:.2f}" if c is not None and macs else "-"
            print(f"    {node[:50]:<50} {kernel:<28} {n:>11,d} "
                  f"{(f'{c:,d}' if c is not None else '-'):>11} {per:>6}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--boards", default="cortex-m4f,cortex-m33,cortex-m0plus")
    parser.add_argument("--models", default=",".join(MLPERF_TINY))
    parser.add_argument("--source", choices=["zoo", "official", "both"], default="both")
    parser.add_argument("--variant", default="i8-pc", help="zoo variant (default i8-pc)")
    parser.add_argument("--weights", default="int8,int16",
                        help="weight storage of the fast kernels, comma-separated (default "
                             "int8,int16; auto is the generator's own choice)")
    parser.add_argument("--io", choices=["quantized", "float"], default="quantized")
    parser.add_argument("--tf2onnx-python", default=os.environ.get("TF2ONNX_PYTHON",
                                                                   sys.executable))
    parser.add_argument("--per-layer", action="store_true")
    parser.add_argument("--markdown", action="store_true", help="a Markdown table")
    args = parser.parse_args()
    sources = ["zoo", "official"] if args.source == "both" else [args.source]
    rows = []
    if not args.markdown:
        print_header(markdown=False)
    for board in args.boards.split(","):
        for source in sources:
            for name in args.models.split(","):
                model: onnx.ModelProto | Path = (
                    zoo.quantized_model(name, args.variant) if source == "zoo"
                    else official_model(name, args.tf2onnx_python))
                for weights in args.weights.split(","):
                    _, row = measure(model, board, weights, args.io, args.per_layer)
                    rows.append(replace(row, source=source, model=name))
                    if not args.markdown:
                        print_rows(rows[-1:], markdown=False)
    if args.markdown:
        riscv = [r for r in rows if load_board(r.board).kind == "riscv"]
        others = [r for r in rows if r.board not in MVE_BOARDS and r not in riscv]
        if others:
            print_header(markdown=True)
            print_rows(others, markdown=True)
        if riscv:
            print_riscv_rows(riscv)
        helium = [r for r in rows if r.board in MVE_BOARDS]
        if helium:
            print_mve_rows(helium)
    return 0


if __name__ == "__main__":
    sys.exit(main())
