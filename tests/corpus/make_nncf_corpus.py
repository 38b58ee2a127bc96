"""Make the NNCF part of the model corpus in tests/corpus/: the float ONNX models that
tf2onnx wrote from the TFLite models (make_tf_corpus.py's float-I/O --dequantize
conversions, committed) and those torch 2.13's default (dynamo) exporter writes from
make_corpus.py's architectures, quantized by NNCF's ONNX backend (nncf.quantize
post-training quantization) with its two presets: "performance" (symmetric int8
activations) and "mixed" (asymmetric activations), and, on the transformer-like
architectures (TRANSFORMER_ARCHS: attention, feed-forward and dense ones), with its
transformer model type (model_type=nncf.ModelType.TRANSFORMER, its default preset).
tests/networks/test_corpus.py runs every committed model.

To make them again (nncf is not a test dependency: use a separate environment; torch
2.13.0 first, and torchvision 0.28.0 without its dependencies, so that pip does not
fetch another torch):

    python -m venv /tmp/torch-venv
    /tmp/torch-venv/bin/pip install torch==2.13.0
    /tmp/torch-venv/bin/pip install --no-deps torchvision==0.28.0
    /tmp/torch-venv/bin/pip install pillow onnx onnxscript onnxruntime==1.32.0 nncf==3.4.0
    /tmp/torch-venv/bin/python tests/corpus/make_nncf_corpus.py

(torchvision is needed only for the tv_* architectures.) ONNX2MCU_CORPUS_ONLY,
_QUANTIZERS (nncf_performance, nncf_mixed, nncf_transformer) and _EXPORTERS remake only
what they name, as in make_corpus.py; ONNX2MCU_CORPUS_OUT writes elsewhere.

It writes NAME.onnx for each model and nncf_corpus.json.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import nncf
import onnx
import torch
from make_corpus import (
    ARCHITECTURES,
    DEFAULT_EXPORTER,
    TRANSFORMERS,
    compact,
    export_float,
    wanted,
    write_entries,
)
from tf_float_sources import (
    CALIBRATION_COUNT,
    HERE,
    OUT,
    SOURCES,
    calibration_samples,
    input_shape,
    producer_failure,
)

# Configuration -> nncf.quantize's arguments and how the corpus list describes them.
PRESETS = {"performance": ({"preset": nncf.QuantizationPreset.PERFORMANCE},
                           "preset=performance"),
           "mixed": ({"preset": nncf.QuantizationPreset.MIXED}, "preset=mixed"),
           "transformer": ({"model_type": nncf.ModelType.TRANSFORMER},
                           "model_type=transformer")}
# The transformer model type on what it is meant for: attention and feed-forward blocks
# (and tf2onnx's dense autoencoder, an MLP).
TRANSFORMER_ARCHS = (*TRANSFORMERS, "tf_autoencoder")


def make(arch: str, source: Path, exporter: str, producer: str,
         preset: str) -> dict[str, Any]:
    model = onnx.load(source)
    name, shape = input_shape(model)
    dataset = nncf.Dataset(calibration_samples(shape), lambda sample: {name: sample})
    arguments, description = PRESETS[preset]
    quantized = nncf.quantize(model, dataset, subset_size=CALIBRATION_COUNT, **arguments)
    target = OUT / f"{arch}_{exporter}_nncf_{preset}.onnx"
    onnx.save(quantized, target)
    compact(target)
    return {"file": target.name, "architecture": arch, "exporter": producer,
            "quantizer": f"nncf {nncf.__version__} quantize onnx {description}",
            "input_shape": shape, "bytes": target.stat().st_size}


def selected(arch: str, exporter: str, preset: str) -> bool:
    """make_corpus.wanted, the transformer model type only on TRANSFORMER_ARCHS."""
    return wanted(arch, exporter, f"nncf_{preset}") and (
        preset != "transformer" or arch in TRANSFORMER_ARCHS)


def main() -> None:
    entries = []
    with tempfile.TemporaryDirectory() as tmp:
        sources = [(arch, HERE / source, "tf2onnx", f"tf2onnx float model ({source})")
                   for arch, source in SOURCES.items()]
        for arch in ARCHITECTURES:
            if not any(selected(arch, DEFAULT_EXPORTER, preset) for preset in PRESETS):
                continue  # exported only when some configuration wants it
            source = Path(tmp) / f"{arch}_{DEFAULT_EXPORTER}_float.onnx"
            export_float(arch, DEFAULT_EXPORTER, source)
            sources.append((arch, source, DEFAULT_EXPORTER, f"torch {torch.__version__} "
                            f"{DEFAULT_EXPORTER}"))
        for arch, source, exporter, producer in sources:
            for preset in PRESETS:
                if not selected(arch, exporter, preset):
                    continue
                try:
                    entries.append(make(arch, source, exporter, producer, preset))
                except Exception as exc:  # the producer itself failed: say so
                    entries.append(producer_failure(arch, f"{arch}_{exporter}_nncf_{preset}",
                                                    exc))
                print(entries[-1])
    write_entries(OUT / "nncf_corpus.json", entries)


if __name__ == "__main__":
    main()
