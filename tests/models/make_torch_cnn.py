"""Make tests/models/torch_cnn_dynamic_batch_{qdq,qop}.onnx: a tiny CNN exported by
torch.onnx.export with a dynamic batch axis, quantized by ONNX Runtime's quantize_static
in QDQ and QOperator format, as a user of PyTorch makes a model for onnx2mcu.

The tests use the committed files and never need torch. To make them again (torch is
not a test dependency: use a separate virtual environment):

    python -m venv /tmp/torch-venv
    /tmp/torch-venv/bin/pip install torch==2.13.0 onnx onnxscript onnxruntime numpy
    /tmp/torch-venv/bin/python tests/models/make_torch_cnn.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import onnx
import torch
from onnxruntime.quantization import (
    CalibrationDataReader,
    QuantFormat,
    QuantType,
    quantize_static,
)

HERE = Path(__file__).resolve().parent
INPUT_SHAPE = (1, 3, 16, 16)
CALIBRATION_COUNT = 16


class TinyCnn(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, padding=1, stride=2)
        self.pool = torch.nn.MaxPool2d(2)
        self.fc = torch.nn.Linear(16 * 4 * 4, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.conv1(x))
        x = self.pool(torch.relu(self.conv2(x)))
        return self.fc(torch.flatten(x, 1))


class Calibration(CalibrationDataReader):
    def __init__(self) -> None:
        rng = np.random.default_rng(7)
        self._feeds = iter([{"input": rng.uniform(-1, 1, INPUT_SHAPE).astype(np.float32)}
                            for _ in range(CALIBRATION_COUNT)])

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._feeds, None)


def export(path: Path) -> None:
    torch.manual_seed(0)
    net = TinyCnn().eval()
    # dynamic_axes as most scripts write it: the batch axis of input and output, named.
    torch.onnx.export(net, (torch.zeros(INPUT_SHAPE),), str(path), input_names=["input"],
                      output_names=["output"],
                      dynamic_axes={"input": {0: "batch_size"}, "output": {0: "batch_size"}})


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "float.onnx"
        export(source)
        for suffix, quant_format in (("qdq", QuantFormat.QDQ), ("qop", QuantFormat.QOperator)):
            target = HERE / f"torch_cnn_dynamic_batch_{suffix}.onnx"
            quantize_static(str(source), str(target), Calibration(), quant_format=quant_format,
                            activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
            model = onnx.load(str(target))
            dim = model.graph.input[0].type.tensor_type.shape.dim[0]
            assert dim.dim_param == "batch_size", dim
            print(f"wrote {target.relative_to(HERE.parent.parent)} "
                  f"({target.stat().st_size} bytes, opset {model.opset_import[0].version})")


if __name__ == "__main__":
    main()
