"""Whole-data-set verification time: `onnx2mcu verify --dataset` on many samples of a zoo
model, as a user runs it (the CLI in a fresh process, the build cache warm or cold).

For each model: write N random samples from the zoo's calibration range to an .npz, then
time `onnx2mcu verify MODEL --dataset DATA` twice (the first run builds the generated C,
the second finds it in the build cache), and report the wall time, the samples that
differ and the result line.

    .venv/bin/python bench/dataset_verify.py [--samples 1000] [--models dscnn,resnet8]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import zoo  # noqa: E402


def time_verify(model: Path, data: Path, env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "codegen.cli", "verify", str(model),
                             "--dataset", str(data)], capture_output=True, text=True,
                            env=env, check=False)
    elapsed = time.perf_counter() - start
    if result.returncode not in (0, 1):
        raise SystemExit(result.stderr)
    last = result.stdout.strip().splitlines()[-1]
    return elapsed, last


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--models", default="dscnn")
    parser.add_argument("--variant", default="i8-pc", help="zoo quantization variant")
    args = parser.parse_args()
    print("| model | samples | first run (builds) s | second run (cached build) s | result |")
    print("|---|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory(prefix="onnx2mcu-bench-") as tmp:
        env = {**os.environ, "ONNX2MCU_CACHE_DIR": str(Path(tmp) / "cache")}
        for name in args.models.split(","):
            model = Path(tmp) / f"{name}.onnx"
            onnx.save(zoo.quantized_model(name, args.variant), str(model))
            data = Path(tmp) / f"{name}.npz"
            np.savez(data, input=np.stack(zoo.sample_inputs(name, args.samples, seed=7)))
            cold, _ = time_verify(model, data, env)
            warm, last = time_verify(model, data, env)
            print(f"| {name} {args.variant} | {args.samples} | {cold:.2f} | {warm:.2f} | "
                  f"{last} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
