"""Make the model corpus in tests/corpus/: ordinary small architectures with random
weights, exported by torch's TorchScript exporter and by its default (dynamo) exporter,
quantized by ONNX Runtime's quantize_static in QDQ and QOperator format, as users make
them. tests/networks/test_corpus.py runs every committed model; it never needs torch.

To make them again (torch is not a test dependency: use a separate virtual environment):

    python -m venv /tmp/torch-venv
    /tmp/torch-venv/bin/pip install torch==2.13.0 onnx onnxscript onnxruntime==1.32.* numpy
    /tmp/torch-venv/bin/python tests/corpus/make_corpus.py

It writes NAME.onnx for each model and corpus.json: per model, the producer, the
exporter, the quantizer configuration and the architecture.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime
import torch
from onnxruntime.quantization import (
    CalibrationDataReader,
    QuantFormat,
    QuantType,
    quant_pre_process,
    quantize_dynamic,
    quantize_static,
)
from torch import nn

HERE = Path(__file__).resolve().parent
# Where the models go: the corpus, or another folder to try a change (ONNX2MCU_CORPUS_OUT).
OUT = Path(os.environ.get("ONNX2MCU_CORPUS_OUT", HERE))
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


class KeywordLstm(nn.Module):
    """A keyword-spotting LSTM on 49 frames of 10 MFCCs, classifying the last output."""

    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(10, 16, batch_first=True)
        self.head = nn.Linear(16, 12)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, _ = self.lstm(x)
        return self.head(y[:, -1])


class KeywordConv1d(nn.Module):
    """A 1-D convolutional keyword spotter on 10 MFCC channels over 49 frames (temporal
    convolutions, as TC-ResNet): strided Conv1d, a residual block, a global mean."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv1d(10, 16, 3, 1, 1), nn.BatchNorm1d(16), nn.ReLU())
        self.block = nn.Sequential(nn.Conv1d(16, 24, 9, 2, 4), nn.BatchNorm1d(24), nn.ReLU(),
                                   nn.Conv1d(24, 24, 9, 1, 4), nn.BatchNorm1d(24))
        self.skip = nn.Sequential(nn.Conv1d(16, 24, 1, 2), nn.BatchNorm1d(24))
        self.head = nn.Linear(24, 12)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        x = torch.relu(self.block(x) + self.skip(x))
        return self.head(x.mean(dim=-1))


class EncoderLayer(nn.Module):
    """torch's own nn.TransformerEncoderLayer (two heads, GELU, pre-norm) on 8 tokens of
    16 features, as a tiny keyword or sensor transformer uses it."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, activation="gelu",
                                                batch_first=True, norm_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer(x)


class DigitClassifier(nn.Module):
    """An MNIST-style classifier as torch's tutorials write it: two convolutions with max
    pooling, a linear layer, and log_softmax (the output NLLLoss trains)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1, 1)
        self.fc = nn.Linear(16 * 7 * 7, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = nn.functional.max_pool2d(torch.relu(self.conv2(x)), 2)
        return nn.functional.log_softmax(self.fc(torch.flatten(x, 1)), dim=1)


class PaddedPool(nn.Module):
    """Explicit padding layers, as EfficientViT's context module and "same" max pooling
    write them: ZeroPad2d before a MaxPool2d, and a ConstantPad2d with a value that is
    not zero (ORT's quantizer quantizes a pad value that comes from a Constant node)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, 1, 1)
        self.pad = nn.ZeroPad2d((0, 1, 0, 1))
        self.pool = nn.MaxPool2d(2, 2)
        self.pad2 = nn.ConstantPad2d(1, 0.5)
        self.conv2 = nn.Conv2d(8, 8, 3, 1, 0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.pool(self.pad(torch.relu(self.conv(x))))
        return self.conv2(self.pad2(y))


class MixedKernels(nn.Module):
    """A MixNet block: the channels split into groups convolved depthwise with 3x3, 5x5
    and 7x7 kernels, concatenated, then one BatchNorm2d over the concatenation (torch
    cannot fold it into a convolution, so it stays in the model) and SiLU; a pointwise
    projection and a classifier."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 12, 3, 2, 1), nn.BatchNorm2d(12), nn.ReLU())
        self.splits = [4, 4, 4]
        self.convs = nn.ModuleList(nn.Conv2d(4, 4, k, 1, k // 2, groups=4, bias=False)
                                   for k in (3, 5, 7))
        self.bn = nn.BatchNorm2d(12)
        self.project = nn.Sequential(nn.Conv2d(12, 16, 1), nn.BatchNorm2d(16))
        self.head = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        parts = torch.split(x, self.splits, dim=1)
        x = torch.cat([conv(p) for conv, p in zip(self.convs, parts, strict=True)], dim=1)
        x = self.project(nn.functional.silu(self.bn(x)))
        return self.head(x.mean(dim=(2, 3)))


_TORCHVISION_SHIM: list[torch.library.Library] = []


def import_torchvision() -> None:
    """PyPI's torchvision wheel is built for CUDA torch: with the CPU torch its C++
    extension does not load, and its import then fails registering fake kernels of the
    detection ops nms and qnms. The models need neither; declaring the two schemas lets
    the pure-Python model definitions import unchanged."""
    try:
        import torchvision
        return
    except RuntimeError:
        for module in [m for m in sys.modules if m.startswith("torchvision")]:
            del sys.modules[module]
    lib = torch.library.Library("torchvision", "FRAGMENT")
    lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    lib.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    _TORCHVISION_SHIM.append(lib)
    import torchvision  # noqa: F401


def torchvision_mobilenet_v3_small() -> nn.Module:
    """torchvision's MobileNetV3-Small at width 0.25, reduced tail, 10 classes."""
    import_torchvision()
    from torchvision.models.mobilenetv3 import MobileNetV3, _mobilenet_v3_conf
    settings, last_channel = _mobilenet_v3_conf("mobilenet_v3_small", width_mult=0.25,
                                                reduced_tail=True)
    return MobileNetV3(settings, last_channel, num_classes=10)


def torchvision_mobilenet_v2() -> nn.Module:
    """torchvision's MobileNetV2 at width 0.1 (ReLU6: Clip), 10 classes, its last 1x1
    convolution narrowed from 1280 to 96 channels to keep the file small."""
    import_torchvision()
    from torchvision.models import MobileNetV2
    net = MobileNetV2(num_classes=10, width_mult=0.1)
    last = net.features[-1]
    last[0] = nn.Conv2d(last[0].in_channels, 96, 1, bias=False)
    last[1] = nn.BatchNorm2d(96)
    net.classifier[1] = nn.Linear(96, 10)
    return net


def torchvision_mnasnet() -> nn.Module:
    """torchvision's MNASNet at depth multiplier 0.1, 10 classes, its last 1x1
    convolution narrowed from 1280 to 96 channels to keep the file small."""
    import_torchvision()
    from torchvision.models import MNASNet
    net = MNASNet(0.1, num_classes=10)
    head = next(i for i, m in enumerate(net.layers) if isinstance(m, nn.Conv2d) and
                m.out_channels == 1280)
    net.layers[head] = nn.Conv2d(net.layers[head].in_channels, 96, 1, bias=False)
    net.layers[head + 1] = nn.BatchNorm2d(96)
    net.classifier[1] = nn.Linear(96, 10)
    return net


def torchvision_shufflenet_v2() -> nn.Module:
    """torchvision's ShuffleNetV2 with narrow stages (8-16-32-64, 128 last), 10 classes."""
    import_torchvision()
    from torchvision.models import ShuffleNetV2
    return ShuffleNetV2([2, 2, 2], [8, 16, 32, 64, 128], num_classes=10)


ARCHITECTURES: dict[str, tuple[Callable[[], nn.Module], tuple[int, ...]]] = {
    "mobilenetv3_block": (HardSwishSE, (1, 3, 32, 32)),
    "shufflenetv2_unit": (ShuffleBlock, (1, 3, 32, 32)),
    "kws_dscnn": (KeywordCnn, (1, 1, 49, 10)),
    "unet_tiny": (TinyUNet, (1, 1, 16, 16)),
    "gelu_mlp": (GeluMlp, (1, 8, 16)),
    "attention_tiny": (TinyAttention, (1, 8, 16)),
    "kws_gru": (KeywordGru, (1, 49, 10)),
    "kws_lstm": (KeywordLstm, (1, 49, 10)),
    "kws_conv1d": (KeywordConv1d, (1, 10, 49)),
    "transformer_encoder": (EncoderLayer, (1, 8, 16)),
    "tv_mobilenet_v3_small": (torchvision_mobilenet_v3_small, (1, 3, 64, 64)),
    "tv_mobilenet_v2": (torchvision_mobilenet_v2, (1, 3, 64, 64)),
    "tv_mnasnet": (torchvision_mnasnet, (1, 3, 64, 64)),
    "tv_shufflenet_v2": (torchvision_shufflenet_v2, (1, 3, 64, 64)),
    "digits_logsoftmax": (DigitClassifier, (1, 1, 28, 28)),
    "pad_pool": (PaddedPool, (1, 3, 15, 15)),
    "mixnet_block": (MixedKernels, (1, 3, 24, 24)),
}
# ONNX2MCU_CORPUS_ONLY=arch,... remakes only those architectures and merges their entries
# into the committed lists (write_entries), leaving every other model as it is.
ONLY = frozenset(a for a in os.environ.get("ONNX2MCU_CORPUS_ONLY", "").split(",") if a)
# ONNX2MCU_CORPUS_QUANTIZERS=configuration,... likewise remakes only those quantizer
# configurations (of every architecture, or of those ONNX2MCU_CORPUS_ONLY names).
QUANTIZERS_ONLY = frozenset(
    q for q in os.environ.get("ONNX2MCU_CORPUS_QUANTIZERS", "").split(",") if q)
# ONNX2MCU_CORPUS_EXPORTERS=exporter,... likewise for exporters.
EXPORTERS_ONLY = frozenset(
    e for e in os.environ.get("ONNX2MCU_CORPUS_EXPORTERS", "").split(",") if e)
# torchscript14: TorchScript at opset 14, where it writes nn.LayerNorm as ReduceMean, Sub,
# Pow, Sqrt and Div (ORT's pre-processing fuses them back only from opset 17).
EXPORTERS = ("torchscript", "dynamo", "torchscript14")
TRANSFORMERS = ("attention_tiny", "gelu_mlp", "transformer_encoder")
# The exporter torch.onnx.export uses by default: NNCF and Quark quantize its float models.
DEFAULT_EXPORTER = "dynamo"
# torchvision's architectures are larger files: each exporter once per activation type.
TORCHVISION_VARIANTS = {("dynamo", "ort_qdq_u8s8"), ("torchscript", "ort_qop_u8s8"),
                        ("dynamo", "ort_qdq_s8s8")}
# Per-channel uint8/int8 in both formats, and quantize_static's defaults (QDQ, int8
# activations and weights, per tensor).
# 16-bit activations with int8 weights (A16W8, per channel): in both signednesses, one
# exporter each (ORT's quantizer moves the model to opset 21, which 16-bit QDQ needs).
QUANTIZERS = {"ort_qdq_u8s8": (QuantFormat.QDQ, QuantType.QUInt8, True),
              "ort_qop_u8s8": (QuantFormat.QOperator, QuantType.QUInt8, True),
              "ort_qdq_s8s8": (QuantFormat.QDQ, QuantType.QInt8, False),
              "ort_qdq_a16w8_u16": (QuantFormat.QDQ, QuantType.QUInt16, True),
              "ort_qdq_a16w8_s16": (QuantFormat.QDQ, QuantType.QInt16, True)}
A16W8_VARIANTS = {("dynamo", "ort_qdq_a16w8_u16"), ("torchscript", "ort_qdq_a16w8_s16")}
# Symmetric activations and weights (ORT's extra_options), on TorchScript exports.
QUANTIZERS["ort_qdq_s8s8_sym"] = (QuantFormat.QDQ, QuantType.QInt8, True)
EXTRA_OPTIONS = {"ort_qdq_s8s8_sym": {"ActivationSymmetric": True, "WeightSymmetric": True}}
SYMMETRIC_ARCHS = (*TRANSFORMERS, "kws_dscnn", "mobilenetv3_block")
# quantize_dynamic (weights int8 or uint8; activations quantized at run time), on the
# sequence models it is meant for, from the dynamo exporter.
DYNAMIC = {"ort_dynamic_s8": QuantType.QInt8, "ort_dynamic_u8": QuantType.QUInt8}
DYNAMIC_ARCHS = (*TRANSFORMERS, "kws_lstm", "kws_gru")


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
                          opset_version=14 if exporter == "torchscript14" else OPSET,
                          dynamo=False)


def wanted(arch: str, exporter: str, configuration: str) -> bool:
    """Whether the corpus holds this architecture in this export and quantization: all
    of them, except for torchvision's architectures (tv_*), which take the variants of
    TORCHVISION_VARIANTS and one configuration of each other quantizer, to keep the
    corpus a few MB, A16W8 in A16W8_VARIANTS (not for torchvision's), symmetric and
    dynamic quantization and the opset-14 export on the architectures they suit.
    Under ONNX2MCU_CORPUS_ONLY, _QUANTIZERS and _EXPORTERS, only what they name."""
    if (ONLY and arch not in ONLY) or (QUANTIZERS_ONLY and configuration not in QUANTIZERS_ONLY) \
            or (EXPORTERS_ONLY and exporter not in EXPORTERS_ONLY):
        return False
    if exporter == "torchscript14":
        return arch in TRANSFORMERS and configuration in ("ort_qdq_u8s8", "ort_qop_u8s8")
    if configuration in EXTRA_OPTIONS:
        return exporter == "torchscript" and arch in SYMMETRIC_ARCHS
    if configuration in DYNAMIC:
        return exporter == "dynamo" and arch in DYNAMIC_ARCHS and (
            configuration == "ort_dynamic_s8" or arch == "attention_tiny")
    if "a16w8" in configuration:
        return (exporter, configuration) in A16W8_VARIANTS and not arch.startswith("tv_")
    if not arch.startswith("tv_"):
        return True
    return (exporter, configuration) in TORCHVISION_VARIANTS or configuration in (
        "nncf_performance", "quark_a8w8")


def write_entries(path: Path, entries: list[dict[str, Any]]) -> None:
    """The corpus list at path: these entries, after the committed entries of the
    architectures ONNX2MCU_CORPUS_ONLY leaves alone."""
    if (ONLY or QUANTIZERS_ONLY or EXPORTERS_ONLY) and path.exists():
        kept = [e for e in json.loads(path.read_text())
                if (ONLY and e["architecture"] not in ONLY) or
                (QUANTIZERS_ONLY and e["quantizer"].split()[-1] not in QUANTIZERS_ONLY) or
                (EXPORTERS_ONLY and e["exporter"].split()[-1] not in EXPORTERS_ONLY)]
        entries = kept + entries
    path.write_text(json.dumps(entries, indent=1) + "\n")


def compact(path: Path) -> None:
    """Drop the per-node documentation the exporters write (the dynamo exporter's stack
    traces and metadata take most of a small model's bytes): no semantics change."""
    model = onnx.load(path)
    for node in model.graph.node:
        node.doc_string = ""
        del node.metadata_props[:]
    for value in [*model.graph.input, *model.graph.output, *model.graph.value_info]:
        value.doc_string = ""
        del value.metadata_props[:]
    onnx.save(model, path)


def export_float(arch: str, exporter: str, path: Path) -> tuple[int, ...]:
    """The architecture with seeded random weights, exported to float ONNX at path;
    returns its input shape. The NNCF and Quark corpus scripts quantize the same files."""
    factory, shape = ARCHITECTURES[arch]
    torch.manual_seed(0)
    net = factory().eval()
    with torch.no_grad():  # trained-looking batch norm statistics, not the identity
        for module in net.modules():
            if isinstance(module, (nn.BatchNorm1d, nn.BatchNorm2d)):
                module.running_mean.uniform_(-0.2, 0.2)
                module.running_var.uniform_(0.5, 1.5)
    export(net, shape, exporter, path)
    return shape


def make(name: str, arch: str, exporter: str, quantizer: str, tmp: Path) -> dict[str, Any]:
    source, prepared = tmp / f"{name}_float.onnx", tmp / f"{name}_prepared.onnx"
    shape = export_float(arch, exporter, source)
    quant_pre_process(str(source), str(prepared), skip_symbolic_shape=True)
    target = OUT / f"{name}.onnx"
    if quantizer in DYNAMIC:
        quantize_dynamic(str(prepared), str(target), weight_type=DYNAMIC[quantizer])
        how = "quantize_dynamic"
    else:
        quant_format, activation, per_channel = QUANTIZERS[quantizer]
        quantize_static(str(prepared), str(target), Calibration("input", shape),
                        quant_format=quant_format, activation_type=activation,
                        weight_type=QuantType.QInt8, per_channel=per_channel,
                        extra_options=EXTRA_OPTIONS.get(quantizer))
        how = "quantize_static"
    compact(target)
    return {"file": target.name, "architecture": arch, "exporter": f"torch {torch.__version__} "
            f"{exporter}", "quantizer": f"onnxruntime {onnxruntime.__version__} {how} "
            f"{quantizer}", "input_shape": list(shape), "bytes": target.stat().st_size}


def main() -> None:
    entries = []
    with tempfile.TemporaryDirectory() as tmp:
        for arch in ARCHITECTURES:
            for exporter in EXPORTERS:
                for quantizer in (*QUANTIZERS, *DYNAMIC):
                    if not wanted(arch, exporter, quantizer):
                        continue
                    name = f"{arch}_{exporter}_{quantizer}"
                    try:
                        entries.append(make(name, arch, exporter, quantizer, Path(tmp)))
                    except Exception as exc:  # the producer itself failed: say so
                        entries.append({"file": None, "name": name, "architecture": arch,
                                        "exporter": exporter, "quantizer": quantizer,
                                        "producer_error": str(exc).splitlines()[0][:200]})
                    print(entries[-1])
    write_entries(OUT / "corpus.json", entries)



if __name__ == "__main__":
    main()
