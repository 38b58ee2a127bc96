"""Make the model corpus in tests/corpus/: ordinary small architectures with random
weights, exported by torch's TorchScript exporter and by its default (dynamo) exporter,
quantized by ONNX Runtime's quantize_static in QDQ and QOperator format, as users make
them. tests/test_corpus.py runs every committed model; it never needs torch.

To make them again (torch is not a test dependency: use a separate virtual environment):

    python -m venv /tmp/torch-venv
    /tmp/torch-venv/bin/pip install torch==2.13.0 onnx onnxscript onnxruntime==1.32.* numpy
    /tmp/torch-venv/bin/python tests/corpus/make_corpus.py

It writes NAME.onnx for each model and corpus.json: per model, the producer, the
exporter, the quantizer configuration and the architecture.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime
import torch
from onnxruntime.quantization import (
    CalibrationDataReader,
    QuantFormat,
    QuantType,
    quant_pre_process,
    quantize_static,
)
from torch import nn

HERE = Path(__file__).resolve().parent
CALIBRATION_COUNT = 8
OPSET = 17


class HardSwishSE(nn.Module):
    """A MobileNetV3 block: expand 1x1, depthwise 3x3, squeeze-and-excitation with
    hardsigmoid, project 1x1, residual; HardSwish activations."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.Hardswish())
        self.expand = nn.Sequential(nn.Conv2d(16, 32, 1), nn.BatchNorm2d(32), nn.Hardswish())
        self.dw = nn.Sequential(nn.Conv2d(32, 32, 3, 1, 1, groups=32), nn.BatchNorm2d(32),
                                nn.Hardswish())
        self.se_reduce = nn.Conv2d(32, 8, 1)
        self.se_expand = nn.Conv2d(8, 32, 1)
        self.project = nn.Sequential(nn.Conv2d(32, 16, 1), nn.BatchNorm2d(16))
        self.head = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        y = self.dw(self.expand(x))
        s = nn.functional.adaptive_avg_pool2d(y, 1)
        s = nn.functional.hardsigmoid(self.se_expand(torch.relu(self.se_reduce(s))))
        x = x + self.project(y * s)
        x = nn.functional.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.head(x)


class ShuffleBlock(nn.Module):
    """A ShuffleNetV2 unit: split the channels in two, convolve one half, concatenate,
    shuffle the channels (reshape -> transpose -> reshape)."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.ReLU())
        self.branch = nn.Sequential(nn.Conv2d(8, 8, 1), nn.BatchNorm2d(8), nn.ReLU(),
                                    nn.Conv2d(8, 8, 3, 1, 1, groups=8), nn.BatchNorm2d(8),
                                    nn.Conv2d(8, 8, 1), nn.BatchNorm2d(8), nn.ReLU())
        self.head = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        a, b = x.chunk(2, dim=1)
        x = torch.cat([a, self.branch(b)], dim=1)
        n, c, h, w = x.shape
        x = x.reshape(n, 2, c // 2, h, w).transpose(1, 2).reshape(n, c, h, w)
        return self.head(x.mean(dim=(2, 3)))


class KeywordCnn(nn.Module):
    """A keyword-spotting DS-CNN on a 49x10 MFCC map: conv, depthwise-separable blocks,
    average pooling."""

    def __init__(self) -> None:
        super().__init__()
        layers: list[nn.Module] = [nn.Conv2d(1, 16, (10, 4), (2, 2), (5, 1)),
                                   nn.BatchNorm2d(16), nn.ReLU()]
        for _ in range(2):
            layers += [nn.Conv2d(16, 16, 3, 1, 1, groups=16), nn.BatchNorm2d(16), nn.ReLU(),
                       nn.Conv2d(16, 16, 1), nn.BatchNorm2d(16), nn.ReLU()]
        self.features = nn.Sequential(*layers)
        self.pool = nn.AvgPool2d((25, 5))
        self.head = nn.Linear(16, 12)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.pool(self.features(x)).flatten(1))


class TinyUNet(nn.Module):
    """A two-level U-Net: down by max pooling, up by nearest upsampling and by a
    transposed convolution, skip connections concatenated."""

    def __init__(self) -> None:
        super().__init__()
        self.enc1 = nn.Sequential(nn.Conv2d(1, 8, 3, 1, 1), nn.ReLU())
        self.enc2 = nn.Sequential(nn.Conv2d(8, 16, 3, 1, 1), nn.ReLU())
        self.up_nearest = nn.Upsample(scale_factor=2, mode="nearest")
        self.dec1 = nn.Sequential(nn.Conv2d(24, 8, 3, 1, 1), nn.ReLU())
        self.up_transposed = nn.ConvTranspose2d(8, 8, 2, 2)
        self.out = nn.Conv2d(8, 1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e1 = self.enc1(x)
        e2 = self.enc2(nn.functional.max_pool2d(e1, 2))
        d1 = self.dec1(torch.cat([self.up_nearest(e2), e1], dim=1))
        return self.out(self.up_transposed(nn.functional.max_pool2d(d1, 2)))


class GeluMlp(nn.Module):
    """A transformer feed-forward block on a token sequence: LayerNorm, Linear, GELU
    (erf form), Linear, residual."""

    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(16)
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc2(nn.functional.gelu(self.fc1(self.norm(x))))


class TinyAttention(nn.Module):
    """Single-head self-attention on 8 tokens of 16 features: Q*K^T, softmax, times V."""

    def __init__(self) -> None:
        super().__init__()
        self.qkv = nn.Linear(16, 48)
        self.out = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = torch.softmax(q @ k.transpose(-1, -2) * 0.25, dim=-1)
        return self.out(scores @ v)


class KeywordGru(nn.Module):
    """A keyword-spotting GRU on 49 frames of 10 MFCCs, classifying the last state."""

    def __init__(self) -> None:
        super().__init__()
        self.gru = nn.GRU(10, 16, batch_first=True)
        self.head = nn.Linear(16, 12)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _, h = self.gru(x)
        return self.head(h[-1])


ARCHITECTURES: dict[str, tuple[Callable[[], nn.Module], tuple[int, ...]]] = {
    "mobilenetv3_block": (HardSwishSE, (1, 3, 32, 32)),
    "shufflenetv2_unit": (ShuffleBlock, (1, 3, 32, 32)),
    "kws_dscnn": (KeywordCnn, (1, 1, 49, 10)),
    "unet_tiny": (TinyUNet, (1, 1, 16, 16)),
    "gelu_mlp": (GeluMlp, (1, 8, 16)),
    "attention_tiny": (TinyAttention, (1, 8, 16)),
    "kws_gru": (KeywordGru, (1, 49, 10)),
}
EXPORTERS = ("torchscript", "dynamo")
QUANTIZERS = {"ort_qdq_u8s8": (QuantFormat.QDQ, QuantType.QUInt8),
              "ort_qop_u8s8": (QuantFormat.QOperator, QuantType.QUInt8)}


class Calibration(CalibrationDataReader):
    def __init__(self, name: str, shape: tuple[int, ...]) -> None:
        rng = np.random.default_rng(11)
        self._feeds = iter([{name: rng.uniform(-1, 1, shape).astype(np.float32)}
                            for _ in range(CALIBRATION_COUNT)])

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._feeds, None)


def export(net: nn.Module, shape: tuple[int, ...], exporter: str, path: Path) -> None:
    args = (torch.zeros(shape),)
    if exporter == "dynamo":
        torch.onnx.export(net, args, str(path), input_names=["input"], output_names=["output"],
                          opset_version=18, dynamo=True, external_data=False)
    else:
        torch.onnx.export(net, args, str(path), input_names=["input"], output_names=["output"],
                          opset_version=OPSET, dynamo=False)


def make(name: str, arch: str, exporter: str, quantizer: str, tmp: Path) -> dict[str, Any]:
    factory, shape = ARCHITECTURES[arch]
    torch.manual_seed(0)
    net = factory().eval()
    with torch.no_grad():  # trained-looking batch norm statistics, not the identity
        for module in net.modules():
            if isinstance(module, nn.BatchNorm2d):
                module.running_mean.uniform_(-0.2, 0.2)
                module.running_var.uniform_(0.5, 1.5)
    source, prepared = tmp / f"{name}_float.onnx", tmp / f"{name}_prepared.onnx"
    export(net, shape, exporter, source)
    quant_pre_process(str(source), str(prepared), skip_symbolic_shape=True)
    quant_format, activation = QUANTIZERS[quantizer]
    target = HERE / f"{name}.onnx"
    quantize_static(str(prepared), str(target), Calibration("input", shape),
                    quant_format=quant_format, activation_type=activation,
                    weight_type=QuantType.QInt8, per_channel=True)
    return {"file": target.name, "architecture": arch, "exporter": f"torch {torch.__version__} "
            f"{exporter}", "quantizer": f"onnxruntime {onnxruntime.__version__} quantize_static "
            f"{quantizer}", "input_shape": list(shape), "bytes": target.stat().st_size}


def main() -> None:
    entries = []
    with tempfile.TemporaryDirectory() as tmp:
        for arch in ARCHITECTURES:
            for exporter in EXPORTERS:
                for quantizer in QUANTIZERS:
                    name = f"{arch}_{exporter}_{quantizer}"
                    try:
                        entries.append(make(name, arch, exporter, quantizer, Path(tmp)))
                    except Exception as exc:  # the producer itself failed: say so
                        entries.append({"file": None, "name": name, "architecture": arch,
                                        "exporter": exporter, "quantizer": quantizer,
                                        "producer_error": str(exc).splitlines()[0][:200]})
                    print(entries[-1])
    (HERE / "corpus.json").write_text(json.dumps(entries, indent=1) + "\n")



if __name__ == "__main__":
    main()
