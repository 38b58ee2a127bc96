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
from pathlib import Path
from typing import Any

import nncf
import numpy as np
import onnx

HERE = Path(__file__).resolve().parent
CALIBRATION_COUNT = 16
SOURCES = {"tf_ds_cnn": "tf_ds_cnn_tflite_floatio_tf2onnx_dequantize.onnx",
           "tf_mobilenet_tiny": "tf_mobilenet_tiny_tflite_floatio_tf2onnx_dequantize.onnx",
           "tf_autoencoder": "tf_autoencoder_tflite_floatio_tf2onnx_dequantize.onnx"}
PRESETS = {"performance": nncf.QuantizationPreset.PERFORMANCE,
           "mixed": nncf.QuantizationPreset.MIXED}


def input_shape(model: onnx.ModelProto) -> tuple[str, list[int]]:
    value = model.graph.input[0]
    return value.name, [d.dim_value or 1 for d in value.type.tensor_type.shape.dim]


def make(arch: str, source: str, preset: str) -> dict[str, Any]:
    model = onnx.load(HERE / source)
    name, shape = input_shape(model)
    rng = np.random.default_rng(5)
    samples = [rng.uniform(-1, 1, shape).astype(np.float32) for _ in range(CALIBRATION_COUNT)]
    dataset = nncf.Dataset(samples, lambda sample: {name: sample})
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
                entries.append({"file": None, "architecture": arch,
                                "name": f"{arch}_nncf_{preset}",
                                "producer_error": str(exc).splitlines()[0][:300]})
            print(entries[-1])
    (HERE / "nncf_corpus.json").write_text(json.dumps(entries, indent=1) + "\n")


if __name__ == "__main__":
    main()
