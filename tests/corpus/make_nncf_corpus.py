"""Make the NNCF part of the model corpus in tests/corpus/: the float ONNX models that
tf2onnx wrote from the TFLite models (make_tf_corpus.py's float-I/O --dequantize
conversions, committed), quantized by NNCF's ONNX backend (nncf.quantize post-training
quantization) with its two presets: "performance" (symmetric int8 activations) and
"mixed" (asymmetric activations). tests/test_corpus.py runs every committed model.

To make them again (nncf is not a test dependency: use a separate environment):

    python -m venv /tmp/nncf-venv
    /tmp/nncf-venv/bin/pip install nncf==3.4.0 onnx onnxruntime==1.32.0
    /tmp/nncf-venv/bin/python tests/corpus/make_nncf_corpus.py

It writes NAME.onnx for each model and nncf_corpus.json.
"""

from __future__ import annotations

import json
from typing import Any

import nncf
import onnx
from tf_float_sources import (
    CALIBRATION_COUNT,
    HERE,
    SOURCES,
    calibration_samples,
    input_shape,
    producer_failure,
)

PRESETS = {"performance": nncf.QuantizationPreset.PERFORMANCE,
           "mixed": nncf.QuantizationPreset.MIXED}


def make(arch: str, source: str, preset: str) -> dict[str, Any]:
    model = onnx.load(HERE / source)
    name, shape = input_shape(model)
    dataset = nncf.Dataset(calibration_samples(shape), lambda sample: {name: sample})
    quantized = nncf.quantize(model, dataset, preset=PRESETS[preset],
                              subset_size=CALIBRATION_COUNT)
    target = HERE / f"{arch}_tf2onnx_nncf_{preset}.onnx"
    onnx.save(quantized, target)
    return {"file": target.name, "architecture": arch,
            "exporter": f"tf2onnx float model ({source})",
            "quantizer": f"nncf {nncf.__version__} quantize onnx preset={preset}",
            "input_shape": shape, "bytes": target.stat().st_size}


def main() -> None:
    entries = []
    for arch, source in SOURCES.items():
        for preset in PRESETS:
            try:
                entries.append(make(arch, source, preset))
            except Exception as exc:  # the producer itself failed: say so
                entries.append(producer_failure(arch, f"{arch}_nncf_{preset}", exc))
            print(entries[-1])
    (HERE / "nncf_corpus.json").write_text(json.dumps(entries, indent=1) + "\n")


if __name__ == "__main__":
    main()
