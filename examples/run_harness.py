"""Run a generated project's own harness (OUT/build/NAME_main) on random inputs and
compare its raw output file with ONNX Runtime, bit for bit.

    python examples/run_harness.py MODEL.onnx OUT [--samples N]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import onnx

from codegen.core.ir import QuantParams, Tensor
from codegen.oracle.verify import compare_outputs, ort_version, random_inputs, run_ort
from codegen.target.build import decode_samples, encode_samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("out", type=Path, help="folder written by onnx2mcu generate")
    parser.add_argument("--samples", type=int, default=5)
    args = parser.parse_args()

    manifest = json.loads(next(args.out.glob("*.json")).read_text())
    name = manifest["name"]

    def tensor(entry: dict) -> Tensor:
        quant = None
        if "scale" in entry:
            quant = QuantParams(tuple(entry["scale"]), tuple(entry["zero_point"]),
                                entry.get("axis"))
        return Tensor(entry["name"], entry["dtype"], tuple(entry["shape"]), quant)

    inputs = [tensor(e) for e in manifest["inputs"]]
    outputs = [tensor(e) for e in manifest["outputs"]]
    samples = random_inputs(inputs, args.samples, seed=1)
    with tempfile.TemporaryDirectory() as tmp:
        raw_in, raw_out = Path(tmp) / "in.bin", Path(tmp) / "out.bin"
        raw_in.write_bytes(encode_samples(inputs, samples))
        subprocess.run([str(args.out / "build" / f"{name}_main"), str(raw_in), str(raw_out)],
                       check=True)
        got = decode_samples(outputs, raw_out.read_bytes(), args.samples)
    refs = run_ort(onnx.load(str(args.model)), samples)
    reports = compare_outputs(outputs, got, refs)
    bad = sum(r.mismatches for r in reports)
    total = sum(r.elements for r in reports)
    verdict = "BIT-EXACT" if bad == 0 else f"MISMATCH ({bad} elements differ)"
    print(f"{args.out}/build/{name}_main vs onnxruntime {ort_version()} on {args.samples} "
          f"random samples: {total} output elements, {verdict}")
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
