"""Both --memory modes side by side: total RAM (arena + stack + statics, measured on the
model's own Cortex-M build) and estimated cycles per inference (QEMU and the cycle model),
with every layer whole (fast) and with blocks of layers in row bands (min), beside
TFLite Micro's arena (+ CMSIS-NN, official models, Cortex-M4F) and Bosch HALE's published
min-RAM figure for ResNet-8 (21.1 KB at 1.84x its normal latency).

Models: the four official MLPerf Tiny models converted by tf2onnx (see bench/mcu.py for the
environment; converted models are cached in bench/.cache/) and every architecture of the
test zoo (ORT's quantize_static, QOperator, int8 per-channel). Quantized I/O (the input
and output in the arena, as TFLite Micro counts them; --io float: the caller's float
buffers, outside the RAM counted), int8 weights.

    .venv/bin/python bench/memory_modes.py [--board cortex-m4f] [--source zoo|official|both]
        [--models resnet8,...] [--tf2onnx-python PYTHON] [--io quantized|float] [--markdown]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import onnx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

import zoo  # noqa: E402
from mcu import MLPERF_TINY, TFLM_M4, Row, measure, official_model  # noqa: E402

# Bosch HALE's min-RAM mode (published): ResNet-8 in 21.1 KB at 1.84x its latency.
HALE_MIN_RAM = {"resnet8": (21_100, 1.84)}
# The targets (cortex-m4f, quantized I/O, total RAM), for the last column.
TARGETS = {("official", "resnet8"): ("min", 21_000), ("official", "mobilenet_v1_025"):
           ("min", 32_000), ("official", "dscnn"): ("fast", 11_999),
           ("zoo", "resnet8"): ("min", 21_000), ("zoo", "mobilenet_v1_025"): ("min", 32_000),
           ("zoo", "dscnn"): ("fast", 11_999)}
COLUMNS = ("source", "model", "fast RAM", "fast cycles", "min RAM", "min cycles",
           "min/fast RAM", "min/fast cycles", "TFLM arena", "HALE min RAM", "target")


def cells(source: str, name: str, fast: Row, small: Row) -> list[str]:
    anchor = TFLM_M4.get(name) if source == "official" else None
    hale = HALE_MIN_RAM.get(name) if source == "official" else None
    target = TARGETS.get((source, name))
    verdict = "-"
    if target is not None:
        mode, limit = target
        ram = small.ram if mode == "min" else fast.ram
        verdict = f"{mode} <= {limit}: {'met' if ram <= limit else 'SHORT'}"
    cycles = (f"{small.cycles / fast.cycles:.2f}x" if small.cycles and fast.cycles else "-")
    return [source, name, f"{fast.ram:,}", f"{fast.cycles:,}" if fast.cycles else "-",
            f"{small.ram:,}", f"{small.cycles:,}" if small.cycles else "-",
            f"{small.ram / fast.ram:.2f}x", cycles,
            f"{anchor.arena:,}" if anchor else "-",
            f"{hale[0]:,} ({hale[1]:.2f}x)" if hale else "-", verdict]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--board", default="cortex-m4f")
    parser.add_argument("--source", choices=["zoo", "official", "both"], default="both")
    parser.add_argument("--models", default=",".join(MLPERF_TINY),
                        help="official models; the zoo runs all its architectures")
    parser.add_argument("--tf2onnx-python", default=os.environ.get("TF2ONNX_PYTHON",
                                                                   sys.executable))
    parser.add_argument("--io", choices=["quantized", "float"], default="quantized",
                        help="float: the caller's float tensors, the quantized input then "
                             "computed in the arena (banded too in min mode)")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    rows = []
    sources = ["official", "zoo"] if args.source == "both" else [args.source]
    for source in sources:
        names = args.models.split(",") if source == "official" else list(zoo.MODEL_NAMES)
        for name in names:
            model: onnx.ModelProto | Path = (
                official_model(name, args.tf2onnx_python) if source == "official"
                else zoo.quantized_model(name, "i8-pc"))
            _, fast = measure(model, args.board, "int8", args.io, False, "fast")
            _, small = measure(model, args.board, "int8", args.io, False, "min")
            rows.append(cells(source, name, fast, small))
            if not args.markdown:
                print("  ".join(rows[-1]), flush=True)
    if args.markdown:
        print("| " + " | ".join(COLUMNS) + " |")
        print("|" + "---|" * len(COLUMNS))
        for row in rows:
            print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
