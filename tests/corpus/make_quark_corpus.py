"""Make the AMD Quark part of the model corpus in tests/corpus/: the float ONNX models that
tf2onnx wrote from the TFLite models (make_tf_corpus.py's float-I/O --dequantize
conversions, committed) and those torch 2.13's default (dynamo) exporter writes from
make_corpus.py's architectures, quantized by Quark's ONNX ModelQuantizer with its int8
presets A8W8 (int8 activations and weights) and XINT8 (power-of-two scales, as for AMD's
NPUs). tests/networks/test_corpus.py runs every committed model.

To make them again (quark is not a test dependency: use a separate environment; torch
2.13.0 first, and torchvision 0.28.0 without its dependencies, so that pip does not
fetch another torch):

    python -m venv /tmp/torch-venv
    /tmp/torch-venv/bin/pip install torch==2.13.0
    /tmp/torch-venv/bin/pip install --no-deps torchvision==0.28.0
    /tmp/torch-venv/bin/pip install -c <(echo torch==2.13.0) pillow onnxscript \
        amd-quark==0.13 onnx onnxruntime==1.32.0
    /tmp/torch-venv/bin/python tests/corpus/make_quark_corpus.py

It writes NAME.onnx for each model and quark_corpus.json.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import quark
import quark.onnx as quark_onnx
import torch
from make_corpus import (
    ARCHITECTURES,
    DEFAULT_EXPORTER,
    compact,
    export_float,
    wanted,
    write_entries,
)
from onnxruntime.quantization import CalibrationDataReader
from tf_float_sources import (
    HERE,
    OUT,
    SOURCES,
    calibration_samples,
    input_shape,
    producer_failure,
)

PRESETS = {"a8w8": quark_onnx.A8W8_QCONFIG, "xint8": quark_onnx.XINT8_QCONFIG}


class Calibration(CalibrationDataReader):
    def __init__(self, name: str, shape: list[int]) -> None:
        self._feeds = iter([{name: sample} for sample in calibration_samples(shape)])

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._feeds, None)


def make(arch: str, source: Path, exporter: str, producer: str,
         preset: str) -> dict[str, Any]:
    model = onnx.load(source)
    name, shape = input_shape(model)
    target = OUT / f"{arch}_{exporter}_quark_{preset}.onnx"
    quantizer = quark_onnx.ModelQuantizer(PRESETS[preset])
    quantizer.quantize_model(str(source), str(target), Calibration(name, shape))
    compact(target)
    return {"file": target.name, "architecture": arch, "exporter": producer,
            "quantizer": f"amd-quark {quark.__version__} ModelQuantizer {preset.upper()}",
            "input_shape": shape, "bytes": target.stat().st_size}


def make_one(arch: str, preset: str) -> None:
    """One model in this process: Quark 0.13 keeps state between quantize_model calls
    (a second model fails with "Both `activation` and `input_tensors` are provided")."""
    exporter = "tf2onnx" if arch in SOURCES else DEFAULT_EXPORTER
    try:
        with tempfile.TemporaryDirectory() as tmp:
            os.chdir(tmp)  # Quark writes its quantized_info.csv into the working folder
            if arch in SOURCES:
                source, producer = HERE / SOURCES[arch], f"tf2onnx float model ({SOURCES[arch]})"
            else:
                source = Path(tmp) / f"{arch}_{DEFAULT_EXPORTER}_float.onnx"
                export_float(arch, DEFAULT_EXPORTER, source)
                producer = f"torch {torch.__version__} {DEFAULT_EXPORTER}"
            entry = make(arch, source, exporter, producer, preset)
    except Exception as exc:  # the producer itself failed: say so
        entry = producer_failure(arch, f"{arch}_{exporter}_quark_{preset}", exc)
    print("ENTRY " + json.dumps(entry))


def main() -> None:
    if len(sys.argv) == 3:
        make_one(sys.argv[1], sys.argv[2])
        return
    entries = []
    for arch in [*SOURCES, *ARCHITECTURES]:
        for preset in PRESETS:
            if not wanted(arch, "tf2onnx" if arch in SOURCES else DEFAULT_EXPORTER,
                          f"quark_{preset}"):
                continue
            run = subprocess.run([sys.executable, __file__, arch, preset], check=True,
                                 capture_output=True, text=True)
            line = next(x for x in run.stdout.splitlines() if x.startswith("ENTRY "))
            entries.append(json.loads(line.removeprefix("ENTRY ")))
            print(entries[-1])
    write_entries(OUT / "quark_corpus.json", entries)


if __name__ == "__main__":
    main()
