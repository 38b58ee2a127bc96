"""Make the AMD Quark part of the model corpus in tests/corpus/: the float ONNX models that
tf2onnx wrote from the TFLite models (make_tf_corpus.py's float-I/O --dequantize
conversions, committed) and those torch 2.13's default (dynamo) exporter writes from
make_corpus.py's architectures, quantized by Quark's ONNX ModelQuantizer with its int8
presets A8W8 (int8 activations and weights) and XINT8 (power-of-two scales, as for AMD's
NPUs), and with its 16-bit activation presets A16W8 (int16 activations, int8 weights) and
U16S8 (QConfig.get_default_config("U16S8_AAWS"): uint16 activations, int8 weights), whose
16-bit Q/DQ Quark writes in the com.microsoft domain, on a subset of the architectures
(SIXTEEN_BIT_ARCHS). tests/networks/test_corpus.py runs every committed model.

To make them again (quark is not a test dependency: use a separate environment, apart from
make_corpus.py's, since amd-quark 0.13 needs onnx <= 1.22; torch 2.13.0 first, and
torchvision 0.28.0 without its dependencies, so that pip does not fetch another torch):

    python -m venv /tmp/quark-venv
    /tmp/quark-venv/bin/pip install torch==2.13.0
    /tmp/quark-venv/bin/pip install --no-deps torchvision==0.28.0
    /tmp/quark-venv/bin/pip install -c <(echo torch==2.13.0) pillow onnxscript \
        amd-quark==0.13 "onnx<=1.22" onnxruntime==1.32.0
    /tmp/quark-venv/bin/python tests/corpus/make_quark_corpus.py

(torchvision is needed only for the tv_* architectures.) ONNX2MCU_CORPUS_ONLY,
_QUANTIZERS (quark_a8w8, quark_xint8, quark_a16w8, quark_u16s8) and _EXPORTERS remake
only what they name, as in make_corpus.py; ONNX2MCU_CORPUS_OUT writes elsewhere.

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
    EXPORTERS_ONLY,
    ONLY,
    QUANTIZERS_ONLY,
    TRANSFORMERS,
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

# Preset -> Quark's configuration and the name the corpus list gives it.
PRESETS = {"a8w8": (quark_onnx.A8W8_QCONFIG, "A8W8"),
           "xint8": (quark_onnx.XINT8_QCONFIG, "XINT8"),
           "a16w8": (quark_onnx.A16W8_QCONFIG, "A16W8"),
           "u16s8": (quark_onnx.QConfig.get_default_config("U16S8_AAWS"), "U16S8_AAWS")}
# The 16-bit activation presets, on a subset to keep the corpus small: convolutional
# networks (one of them tf2onnx's), a recurrent one and the transformer-like ones.
SIXTEEN_BIT = ("a16w8", "u16s8")
SIXTEEN_BIT_ARCHS = ("tf_ds_cnn", "mobilenetv3_block", "kws_dscnn", "unet_tiny", "kws_lstm",
                     *TRANSFORMERS)


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
    config, label = PRESETS[preset]
    quantizer = quark_onnx.ModelQuantizer(config)
    quantizer.quantize_model(str(source), str(target), Calibration(name, shape))
    compact(target)
    return {"file": target.name, "architecture": arch, "exporter": producer,
            "quantizer": f"amd-quark {quark.__version__} ModelQuantizer {label}",
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


def selected(arch: str, exporter: str, preset: str) -> bool:
    """make_corpus.wanted for the int8 presets; the 16-bit ones on SIXTEEN_BIT_ARCHS,
    under the same ONNX2MCU_CORPUS_ONLY, _QUANTIZERS and _EXPORTERS filters."""
    configuration = f"quark_{preset}"
    if preset not in SIXTEEN_BIT:
        return wanted(arch, exporter, configuration)
    return arch in SIXTEEN_BIT_ARCHS and not (ONLY and arch not in ONLY) and not (
        QUANTIZERS_ONLY and configuration not in QUANTIZERS_ONLY) and not (
        EXPORTERS_ONLY and exporter not in EXPORTERS_ONLY)


def main() -> None:
    if len(sys.argv) == 3:
        make_one(sys.argv[1], sys.argv[2])
        return
    entries = []
    for arch in [*SOURCES, *ARCHITECTURES]:
        for preset in PRESETS:
            if not selected(arch, "tf2onnx" if arch in SOURCES else DEFAULT_EXPORTER,
                            preset):
                continue
            run = subprocess.run([sys.executable, __file__, arch, preset], check=True,
                                 capture_output=True, text=True)
            line = next(x for x in run.stdout.splitlines() if x.startswith("ENTRY "))
            entries.append(json.loads(line.removeprefix("ENTRY ")))
            print(entries[-1])
    write_entries(OUT / "quark_corpus.json", entries)


if __name__ == "__main__":
    main()
