"""Make the TensorFlow part of the model corpus in tests/corpus/: small Keras models with
random weights, converted to full-integer int8 TFLite by TFLiteConverter (a
representative dataset; int8 I/O, and float I/O where the converter adds its own
QUANTIZE/DEQUANTIZE), then to ONNX by tf2onnx as MLPerf Tiny users do, in its default
QDQ form and with --dequantize (float weights). tests/networks/test_corpus.py runs every committed
model; it never needs tensorflow.

To make them again (tensorflow is not a test dependency: use a separate environment):

    python -m venv /tmp/tf-venv
    /tmp/tf-venv/bin/pip install tensorflow-cpu==2.21.0 tf2onnx==1.17.0 onnxruntime==1.32.0
    /tmp/tf-venv/bin/python tests/corpus/make_tf_corpus.py

It writes NAME.onnx for each model and tf_corpus.json: per model, the architecture, the
converter versions and options, and the input shape.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf
import tf2onnx

HERE = Path(__file__).resolve().parent
CALIBRATION_COUNT = 16
OPSET = 13
keras = tf.keras
layers = keras.layers


def ds_cnn() -> keras.Model:
    """MLPerf Tiny's keyword-spotting DS-CNN, narrowed: 49 x 10 MFCCs."""
    x = inputs = keras.Input((49, 10, 1), batch_size=1)
    x = layers.Conv2D(16, (10, 4), strides=2, padding="same")(x)
    x = layers.BatchNormalization()(x)
    x = layers.ReLU()(x)
    for _ in range(2):
        x = layers.DepthwiseConv2D(3, padding="same")(x)
        x = layers.BatchNormalization()(x)
        x = layers.ReLU()(x)
        x = layers.Conv2D(16, 1)(x)
        x = layers.BatchNormalization()(x)
        x = layers.ReLU()(x)
    x = layers.GlobalAveragePooling2D()(x)
    x = layers.Dense(12)(x)
    return keras.Model(inputs, layers.Softmax()(x))


def mobilenet_tiny() -> keras.Model:
    """A MobileNetV2-like image model: ReLU6, inverted residual, average pool."""
    x = inputs = keras.Input((24, 24, 3), batch_size=1)
    x = layers.Conv2D(8, 3, strides=2, padding="same")(x)
    x = layers.ReLU(6.0)(x)
    y = layers.Conv2D(16, 1)(x)
    y = layers.ReLU(6.0)(y)
    y = layers.DepthwiseConv2D(3, padding="same")(y)
    y = layers.ReLU(6.0)(y)
    y = layers.Conv2D(8, 1)(y)
    x = layers.Add()([x, y])
    x = layers.AveragePooling2D(2)(x)
    x = layers.Flatten()(x)
    return keras.Model(inputs, layers.Dense(10)(x))


def autoencoder() -> keras.Model:
    """MLPerf Tiny's anomaly-detection autoencoder, narrowed."""
    x = inputs = keras.Input((64,), batch_size=1)
    for width in (32, 8, 32):
        x = layers.Dense(width)(x)
        x = layers.BatchNormalization()(x)
        x = layers.ReLU()(x)
    return keras.Model(inputs, layers.Dense(64)(x))


ARCHITECTURES: dict[str, Callable[[], keras.Model]] = {
    "tf_ds_cnn": ds_cnn, "tf_mobilenet_tiny": mobilenet_tiny, "tf_autoencoder": autoencoder}
# TFLite I/O: int8 tensors, or float with the converter's boundary (de)quantization.
IO_TYPES = {"int8io": tf.int8, "floatio": None}
TF2ONNX_MODES = {"qdq": [], "dequantize": ["--dequantize"]}


def randomize(model: keras.Model, rng: np.random.Generator) -> None:
    """Random weights and trained-looking batch norm statistics."""
    for layer in model.layers:
        if isinstance(layer, layers.BatchNormalization):
            gamma, beta, mean, var = layer.get_weights()
            layer.set_weights([rng.uniform(0.5, 1.5, gamma.shape),
                               rng.uniform(-0.2, 0.2, beta.shape),
                               rng.uniform(-0.2, 0.2, mean.shape),
                               rng.uniform(0.5, 1.5, var.shape)])


def to_tflite(model: keras.Model, io_type: Any, rng: np.random.Generator) -> bytes:
    shape = tuple(int(d) for d in model.inputs[0].shape)
    samples = [rng.uniform(-1, 1, shape).astype(np.float32) for _ in range(CALIBRATION_COUNT)]
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = lambda: ([s] for s in samples)
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    if io_type is not None:
        converter.inference_input_type = io_type
        converter.inference_output_type = io_type
    return bytes(converter.convert())


def make(arch: str, io_name: str, mode: str, tmp: Path) -> dict[str, Any]:
    rng = np.random.default_rng(7)
    tf.keras.utils.set_random_seed(0)
    model = ARCHITECTURES[arch]()
    randomize(model, rng)
    tflite = tmp / f"{arch}_{io_name}.tflite"
    tflite.write_bytes(to_tflite(model, IO_TYPES[io_name], rng))
    name = f"{arch}_tflite_{io_name}_tf2onnx_{mode}"
    target = HERE / f"{name}.onnx"
    subprocess.run([sys.executable, "-m", "tf2onnx.convert", "--tflite", str(tflite),
                    "--output", str(target), "--opset", str(OPSET), *TF2ONNX_MODES[mode]],
                   check=True, capture_output=True)
    return {"file": target.name, "architecture": arch,
            "exporter": f"tensorflow {tf.__version__} TFLiteConverter int8 ({io_name})",
            "quantizer": f"tf2onnx {tf2onnx.__version__} --tflite {mode}",
            "input_shape": [int(d) for d in model.inputs[0].shape],
            "bytes": target.stat().st_size}


def main() -> None:
    entries = []
    with tempfile.TemporaryDirectory() as tmp:
        for arch in ARCHITECTURES:
            for io_name in IO_TYPES:
                for mode in TF2ONNX_MODES:
                    try:
                        entries.append(make(arch, io_name, mode, Path(tmp)))
                    except Exception as exc:  # the producer itself failed: say so
                        detail = getattr(exc, "stderr", b"") or str(exc).encode()
                        entries.append({"file": None, "architecture": arch,
                                        "name": f"{arch}_{io_name}_{mode}",
                                        "producer_error": detail.decode()[-300:]})
                    print(entries[-1])
    (HERE / "tf_corpus.json").write_text(json.dumps(entries, indent=1) + "\n")


if __name__ == "__main__":
    main()
