"""What int16 weights save, layer by layer, in the cycle model's estimate: each layer of
the official MLPerf Tiny models (bench/.cache/, converted by bench/mcu.py) and the zoo
models built with --weights int8 and with --weights int16 on a DSP core, the difference
in estimated cycles per MAC and per added byte of flash, and the least saving per MAC of
each layer kind that --weights auto assumes (codegen/pipeline.py WIDE_GAIN_PER_MAC).

    .venv/bin/python bench/wide_gain.py [--board cortex-m4f] [--source official|zoo|both]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import onnx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

import zoo  # noqa: E402
from mcu import CACHE, MLPERF_TINY, measure  # noqa: E402

from codegen.options import WIDE_GAIN_PER_MAC, weight_layers  # noqa: E402


def models(source: str) -> list[tuple[str, onnx.ModelProto]]:
    found = []
    for name in MLPERF_TINY:
        path = CACHE / f"{name}_official.onnx"
        if source in ("official", "both") and path.is_file():
            found.append((f"{name} (official)", onnx.load(str(path))))
        if source in ("zoo", "both"):
            found.append((f"{name} (zoo)", zoo.quantized_model(name, "i8-pc")))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--board", default="cortex-m4f")
    parser.add_argument("--source", choices=["official", "zoo", "both"], default="both")
    args = parser.parse_args()
    least: dict[str, float] = {}
    print(f"{'model':28s} {'layer kind':11s} {'MACs':>9s} {'bytes':>7s} "
          f"{'int8 cycles':>12s} {'int16 cycles':>12s} {'per MAC':>8s} {'per byte':>9s}")
    for label, model in models(args.source):
        gen8, narrow = measure(model, args.board, "int8", "quantized", per_layer=True)
        _, wide = measure(model, args.board, "int16", "quantized", per_layer=True)
        names = {n.describe(): n.name for n in gen8.graph.nodes}
        kinds = {layer.node: layer for layer in weight_layers(gen8.graph)}
        for (node, _, macs, _, c8), (_, _, _, _, c16) in zip(narrow.layers, wide.layers,
                                                            strict=True):
            layer = kinds.get(names.get(node, node))
            if layer is None or not macs or c8 is None or c16 is None:
                continue
            per_mac = (c8 - c16) / macs
            least[layer.kind] = min(least.get(layer.kind, per_mac), per_mac)
            print(f"{label:28s} {layer.kind:11s} {macs:9d} {layer.weight_bytes:7d} "
                  f"{c8:12d} {c16:12d} {per_mac:8.3f} {(c8 - c16) / layer.weight_bytes:9.2f}")
    print("least saving per MAC, measured (assumed by --weights auto):")
    for kind, value in sorted(least.items()):
        print(f"  {kind:11s} {value:6.3f} ({WIDE_GAIN_PER_MAC[kind]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
