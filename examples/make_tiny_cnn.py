"""Build the example model: a small float CNN (Conv and Relu only) made with
onnx.helper, quantized with ONNX Runtime's quantize_static in QOperator format.

    python examples/make_tiny_cnn.py [--activations uint8|int8] [--per-tensor] OUT.onnx

Deterministic: the same arguments always give the same file.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

INPUT_SHAPE = (1, 3, 32, 32)


def float_cnn(seed: int = 0) -> onnx.ModelProto:
    """conv3x3(3->8) relu, conv3x3/2(8->16) relu, depthwise3x3(16) relu, conv1x1(16->10)."""
    rng = np.random.default_rng(seed)
    layers = [  # (name, out, in/group, k, stride, group, relu)
        ("conv1", 8, 3, 3, 1, 1, True),
        ("conv2", 16, 8, 3, 2, 1, True),
        ("dwconv3", 16, 1, 3, 1, 16, True),
        ("conv4", 10, 16, 1, 1, 1, False),
    ]
    nodes, inits = [], []
    x = "input"
    for name, out, cin, k, stride, group, relu in layers:
        fan_in = cin * k * k
        w = rng.normal(0, np.sqrt(2.0 / fan_in), (out, cin, k, k)).astype(np.float32)
        b = rng.normal(0, 0.1, out).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"{name}.weight"),
                  numpy_helper.from_array(b, f"{name}.bias")]
        y = f"{name}_out"
        nodes.append(helper.make_node("Conv", [x, f"{name}.weight", f"{name}.bias"], [y],
                                      name=name, kernel_shape=[k, k], strides=[stride, stride],
                                      pads=[k // 2] * 4, group=group))
        x = y
        if relu:
            nodes.append(helper.make_node("Relu", [x], [f"{name}_relu"], name=f"{name}_relu"))
            x = f"{name}_relu"
    graph = helper.make_graph(
        nodes, "tiny_cnn",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, list(INPUT_SHAPE))],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, 10, 16, 16])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


class RandomImages:
    """Calibration data for quantize_static: a fixed set of random images."""

    def __init__(self, count: int = 16, seed: int = 1) -> None:
        rng = np.random.default_rng(seed)
        self._data: Iterator[dict[str, np.ndarray]] = iter(
            [{"input": rng.uniform(-1, 1, INPUT_SHAPE).astype(np.float32)} for _ in range(count)])

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._data, None)


def quantize(model: onnx.ModelProto, out: Path, activations: str = "int8",
             per_channel: bool = True) -> None:
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

    act = QuantType.QInt8 if activations == "int8" else QuantType.QUInt8
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "float.onnx")
        onnx.save(model, src)
        quantize_static(src, str(out), RandomImages(), quant_format=QuantFormat.QOperator,
                        per_channel=per_channel, activation_type=act,
                        weight_type=QuantType.QInt8)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--activations", choices=["uint8", "int8"], default="int8")
    parser.add_argument("--per-tensor", action="store_true")
    args = parser.parse_args()
    quantize(float_cnn(), args.out, args.activations, per_channel=not args.per_tensor)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
