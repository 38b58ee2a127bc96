"""The MLPerf Tiny models on emulated Cortex-M cores: instructions per inference and per
MAC (QEMU, counting plugin, deterministic), the arena against the planner's lower bound,
and flash bytes (the model alone, measured on its build).

For each MLPerf Tiny model of the test zoo (quantized by ORT in QOperator format), this
generates the firmware for each board, runs one inference in QEMU and prints one row.
The reference to beat (TFLite Micro + CMSIS-NN on M4, -O2, ../shared/docs/qemu-cortex-m.md):
ResNet-8 2.39, DS-CNN 2.90, MobileNetV1-0.25 3.22, AD autoencoder 2.21 instructions/MAC.

    .venv/bin/python bench/mcu.py [--boards cortex-m4f,cortex-m7,cortex-m33,cortex-m0plus]
        [--models resnet8,dscnn,mobilenet_v1_025,ad_autoencoder] [--variant i8-pc]
        [--per-layer] [--markdown]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import zoo  # noqa: E402

from codegen.api import count_instructions, firmware_budget  # noqa: E402
from codegen.pipeline import Options, generate_sources  # noqa: E402
from codegen.verify import random_inputs  # noqa: E402

MLPERF_TINY = ("resnet8", "dscnn", "mobilenet_v1_025", "ad_autoencoder")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--boards", default="cortex-m4f,cortex-m7,cortex-m33,cortex-m0plus")
    parser.add_argument("--models", default=",".join(MLPERF_TINY))
    parser.add_argument("--variant", default="i8-pc", help="zoo variant (default i8-pc)")
    parser.add_argument("--weights", default="auto", choices=["auto", "int8", "int16"],
                        help="weight storage of the fast kernels (default auto)")
    parser.add_argument("--per-layer", action="store_true")
    parser.add_argument("--markdown", action="store_true", help="a Markdown table")
    args = parser.parse_args()
    columns = ("board", "model", "requant", "instructions", "MACs", "per MAC", "arena",
               "bound", "arena/bound", "flash")
    if args.markdown:
        print("| " + " | ".join(columns) + " |")
        print("|" + "---|" * len(columns))
    else:
        print(f"{'board':<14} {'model':<18} {'requant':<7} {'instructions':>13} {'MACs':>11} "
              f"{'per MAC':>8} {'arena':>8} {'bound':>8} {'a/b':>5} {'flash':>8}")
    for board in args.boards.split(","):
        for name in args.models.split(","):
            model = zoo.quantized_model(name, args.variant)
            gen = generate_sources(model, Options(board=board, weights=args.weights))
            data = random_inputs(gen.program.inputs, 1, seed=0)
            report = count_instructions(model, data, board=board, per_layer=args.per_layer,
                                        weights=args.weights)
            count = report.counts.per_sample[0]
            budget, _ = firmware_budget(gen, check=False)
            flash = budget.flash_bytes if budget is not None else 0
            ratio = gen.plan.size / gen.plan.lower_bound if gen.plan.lower_bound else 1.0
            if args.markdown:
                print(f"| {board} | {name} | {gen.program.requant} | {count:,d} | "
                      f"{report.macs:,d} | {count / report.macs:.2f} | {gen.plan.size:,d} | "
                      f"{gen.plan.lower_bound:,d} | {ratio:.2f} | {flash:,d} |")
            else:
                print(f"{board:<14} {name:<18} {gen.program.requant:<7} {count:>13,d} "
                      f"{report.macs:>11,d} {count / report.macs:>8.2f} {gen.plan.size:>8d} "
                      f"{gen.plan.lower_bound:>8d} {ratio:>5.2f} {flash:>8d}")
            if args.per_layer and report.counts.per_layer is not None:
                for (node, kernel, macs), n in zip(report.layers, report.counts.per_layer,
                                                   strict=True):
                    ratio = f"{n / macs:.2f}" if macs else "-"
                    print(f"    {node[:50]:<50} {kernel:<24} {n:>12,d} {ratio:>7}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
