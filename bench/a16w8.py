"""16-bit activations (A16W8) on Cortex-M beside the same architecture at 8 bits: the
corpus's ORT-quantized models (tests/corpus/), one inference at `--io quantized`, in
three forms:

- `u8s8`: the architecture quantized to 8 bits (ORT's QDQ u8s8, the default recipes);
- `a16w8`: the 16-bit model as ORT computes it (its Conv, MatMul and Gemm units float
  islands between 16-bit Q/DQ; bit-exact with ORT);
- `a16w8 --integer-only`: the same on the exact 16-bit x 8-bit kernels
  (ops/product16.py), with the distance to ORT on the original model that
  `verify --integer-only` reports (host, 8 random samples).

    .venv/bin/python bench/a16w8.py [--boards cortex-m4f,cortex-m0plus] [--markdown]
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import codegen  # noqa: E402
from codegen.api import count_generated, firmware_budget  # noqa: E402
from codegen.backend.interface import Interface  # noqa: E402
from codegen.backend.io_boundary import harness_entries  # noqa: E402
from codegen.options import Options  # noqa: E402
from codegen.oracle.verify import random_inputs  # noqa: E402
from codegen.pipeline import generate_sources  # noqa: E402

CORPUS = ROOT / "tests" / "corpus"
# (architecture, exporter, the 16-bit model's activation type): the corpus models
# whose 8-bit twin has the same float graph.
MODELS = [
    ("kws_dscnn", "torchscript", "s16"),
    ("kws_conv1d", "torchscript", "s16"),
    ("mobilenetv3_block", "torchscript", "s16"),
    ("unet_tiny", "torchscript", "s16"),
    ("gelu_mlp", "torchscript", "s16"),
    ("kws_dscnn", "dynamo", "u16"),
]


@dataclass(frozen=True)
class Row:
    model: str
    form: str
    board: str
    macs: int
    instructions: int
    cycles: int | None
    flash: int
    ram: int
    distance: str = ""


def measure(path: Path, form: str, board: str, integer_only: bool) -> Row:
    options = Options(board=board, interface=Interface(io="quantized"),
                      integer_only=integer_only)
    gen = generate_sources(str(path), options)
    data = random_inputs(harness_entries(gen.program)[0].inputs, 1, seed=0)
    report = count_generated(gen, data, per_layer=False, cycles=True)
    budget, _ = firmware_budget(gen, check=False)
    assert budget is not None
    counts = report.counts
    return Row(path.stem, form, board, report.macs, counts.per_sample[0],
               counts.cycles.per_sample[0] if counts.cycles is not None else None,
               budget.flash_bytes, budget.ram_bytes)


def distance(path: Path) -> str:
    """verify --integer-only on the host: bit-exact against the converted model (asserted)
    and the distance to ORT on the original model."""
    report = codegen.verify(path, samples=8, integer_only=True)
    assert report.ok, path
    assert report.original is not None
    parts = []
    for output in report.original.outputs:
        steps = f", at most {output.max_steps} step(s)" if output.max_steps else ""
        parts.append(f"{output.mismatches} of {output.elements}{steps}")
    return "; ".join(parts)


def rows_for(architecture: str, exporter: str, kind: str, board: str) -> list[Row]:
    eight = CORPUS / f"{architecture}_{exporter}_ort_qdq_u8s8.onnx"
    wide = CORPUS / f"{architecture}_{exporter}_ort_qdq_a16w8_{kind}.onnx"
    rows = [measure(eight, "u8s8", board, False), measure(wide, "a16w8", board, False)]
    integer = measure(wide, "a16w8 --integer-only", board, True)
    return [*rows, Row(**{**integer.__dict__, "distance": distance(wide)})]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--boards", default="cortex-m4f,cortex-m0plus")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    columns = ("board", "architecture", "form", "MACs", "instructions", "est. cycles",
               "cycles/MAC", "x u8s8 cycles", "flash", "RAM", "distance to ORT (original)")
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for board in args.boards.split(","):
        for architecture, exporter, kind in MODELS:
            rows = rows_for(architecture, exporter, kind, board)
            base = rows[0].cycles
            for row in rows:
                per_mac = f"{row.cycles / row.macs:.2f}" if row.cycles and row.macs else "-"
                times = f"{row.cycles / base:.2f}" if row.cycles and base else "-"
                cells = (board, f"{architecture} ({exporter})", row.form, f"{row.macs:,d}",
                         f"{row.instructions:,d}",
                         f"{row.cycles:,d}" if row.cycles is not None else "-", per_mac,
                         times, f"{row.flash:,d}", f"{row.ram:,d}", row.distance or "-")
                print("| " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
