"""What the NNCF and Quark corpus scripts share: the float ONNX models that tf2onnx wrote
from the TFLite models (make_tf_corpus.py's float-I/O --dequantize conversions, committed),
the calibration samples both quantizers see, and the corpus entry of a producer that
failed."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import onnx

HERE = Path(__file__).resolve().parent
# Where the models go: the corpus, or another folder to try a change (ONNX2MCU_CORPUS_OUT).
OUT = Path(os.environ.get("ONNX2MCU_CORPUS_OUT", HERE))
CALIBRATION_COUNT = 16
SOURCES = {"tf_ds_cnn": "tf_ds_cnn_tflite_floatio_tf2onnx_dequantize.onnx",
           "tf_mobilenet_tiny": "tf_mobilenet_tiny_tflite_floatio_tf2onnx_dequantize.onnx",
           "tf_autoencoder": "tf_autoencoder_tflite_floatio_tf2onnx_dequantize.onnx"}


def input_shape(model: onnx.ModelProto) -> tuple[str, list[int]]:
    """The first input's name and shape, a free dimension taken as 1."""
    value = model.graph.input[0]
    return value.name, [d.dim_value or 1 for d in value.type.tensor_type.shape.dim]


def calibration_samples(shape: list[int]) -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    return [rng.uniform(-1, 1, shape).astype(np.float32) for _ in range(CALIBRATION_COUNT)]


def producer_failure(arch: str, name: str, exc: Exception) -> dict[str, Any]:
    """The entry for a model the quantizer itself failed to make."""
    return {"file": None, "architecture": arch, "name": name,
            "producer_error": str(exc).splitlines()[0][:300]}
