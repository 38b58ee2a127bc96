"""A small model zoo for the tests: float CNNs and MLPs built with onnx.helper and numpy,
and their QOperator quantizations made with ONNX Runtime's quantize_static.

The architectures follow the MLPerf Tiny reference models (ResNet-8, DS-CNN, MobileNetV1
0.25, the anomaly-detection autoencoder) plus a few classics (LeNet-5, MobileNetV2- and
SqueezeNet-style nets) and one net that exists only to exercise less common operators.
Weights are random (He initialisation from fixed seeds), so the models classify nothing;
what matters is that their graphs, shapes and activation ranges look like real ones.

    for name, variant_id in ZOO_CASES:                 # 8 models x 4 variants
        model = quantized_model(name, variant_id)      # built once, a fresh copy each call
        x = sample_inputs(name)[0]                     # feed {INPUT_NAME: x}

Everything is deterministic: the same name and variant always give the same bytes.
"""

from __future__ import annotations

import functools
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import onnx
from numpy.typing import NDArray
from onnx import TensorProto, helper, numpy_helper

from codegen.oracle.quantize import quiet_quantizer

OPSET = 13
IR_VERSION = 8
INPUT_NAME = "input"
OUTPUT_NAME = "output"

Activations = Literal["uint8", "int8"]
Shape = tuple[int, ...]
FloatArray = NDArray[np.float32]

# The single input of each model: its shape, and the range its values are drawn from for
# calibration and for test inputs. Images and features are taken as normalised to [-1, 1];
# LeNet-5 sees MNIST-like pixels in [0, 1], so that one input is never negative.
INPUT_SHAPES: dict[str, Shape] = {
    "resnet8": (1, 3, 32, 32),
    "dscnn": (1, 1, 49, 10),
    "mobilenet_v1_025": (1, 3, 96, 96),
    "ad_autoencoder": (1, 640),
    "lenet5": (1, 1, 28, 28),
    "mobilenet_v2_style": (1, 3, 32, 32),
    "squeezenet_style": (1, 3, 32, 32),
    "misc_ops": (1, 3, 16, 16),
}
DEFAULT_INPUT_RANGE = (-1.0, 1.0)
INPUT_RANGES: dict[str, tuple[float, float]] = {
    name: (0.0, 1.0) if name == "lenet5" else DEFAULT_INPUT_RANGE for name in INPUT_SHAPES}


# --------------------------------------------------------------------------------------
# Graph building
# --------------------------------------------------------------------------------------

def same_pads(size: int, kernel: int, stride: int) -> tuple[int, int]:
    """TensorFlow "SAME" padding for one axis: (begin, end), the extra pixel at the end.

    Models converted from Keras carry these asymmetric pads explicitly, so the zoo does too.
    """
    out = -(-size // stride)
    total = max((out - 1) * stride + kernel - size, 0)
    return total // 2, total - total // 2


def pooled_size(size: int, kernel: int, stride: int, pad_begin: int, pad_end: int,
                ceil_mode: bool = False) -> int:
    span = size + pad_begin + pad_end - kernel
    out = (-(-span // stride) if ceil_mode else span // stride) + 1
    # ONNX drops a last window that would start inside the end padding.
    if ceil_mode and (out - 1) * stride >= size + pad_begin:
        out -= 1
    return out


def he_normal(rng: np.random.Generator, shape: Shape, fan_in: int,
              gain: float = 2.0) -> FloatArray:
    """He initialisation (gain 2 before a ReLU, 1 before a linear output): without batch
    normalisation this is what keeps activations at a similar scale from layer to layer."""
    return rng.normal(0.0, np.sqrt(gain / fan_in), shape).astype(np.float32)


def small_bias(rng: np.random.Generator, size: int) -> FloatArray:
    # Biases of a few hundredths: non-zero so that the int32 bias path is exercised, small
    # enough not to push the (batch-norm-free) activations off scale.
    return rng.normal(0.0, 0.05, size).astype(np.float32)


class GraphBuilder:
    """Accumulates the nodes and initializers of one float graph, and tracks static shapes
    so that layers can size their weights from their input."""

    def __init__(self, name: str, seed: int) -> None:
        self.name = name
        self.input_shape = input_shape = INPUT_SHAPES[name]
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.shapes: dict[str, Shape] = {INPUT_NAME: input_shape}
        self._counts: dict[str, int] = {}

    # -- bookkeeping -------------------------------------------------------------------

    def _fresh(self, stem: str) -> str:
        self._counts[stem] = self._counts.get(stem, 0) + 1
        return f"{stem}{self._counts[stem]}"

    def constant(self, stem: str, value: NDArray[Any]) -> str:
        name = self._fresh(stem)
        self.initializers.append(numpy_helper.from_array(value, name))
        return name

    def _node(self, op_type: str, inputs: Sequence[str], out_shape: Shape,
              **attrs: Any) -> str:
        name = self._fresh(op_type.lower())
        self.nodes.append(helper.make_node(op_type, list(inputs), [name], name=name, **attrs))
        self.shapes[name] = out_shape
        return name

    # -- layers with weights -----------------------------------------------------------

    def conv(self, x: str, out_channels: int, kernel: tuple[int, int],
             stride: int = 1, pads: tuple[int, int, int, int] | None = None,
             group: int = 1, gain: float = 2.0) -> str:
        """Conv with bias. pads are ONNX order (top, left, bottom, right); None means
        symmetric k//2, which is what PyTorch exporters produce."""
        n, c, h, w = self.shapes[x]
        kh, kw = kernel
        if pads is None:
            pads = (kh // 2, kw // 2, kh // 2, kw // 2)
        fan_in = (c // group) * kh * kw
        weight = self.constant("W", he_normal(self.rng, (out_channels, c // group, kh, kw),
                                              fan_in, gain))
        bias = self.constant("B", small_bias(self.rng, out_channels))
        out_shape = (n, out_channels, pooled_size(h, kh, stride, pads[0], pads[2]),
                     pooled_size(w, kw, stride, pads[1], pads[3]))
        return self._node("Conv", [x, weight, bias], out_shape, kernel_shape=[kh, kw],
                          strides=[stride, stride], pads=list(pads), group=group)

    def conv_same(self, x: str, out_channels: int, kernel: tuple[int, int], stride: int = 1,
                  group: int = 1, gain: float = 2.0) -> str:
        """Conv with Keras "same" padding (asymmetric when the stride is 2)."""
        _, _, h, w = self.shapes[x]
        top, bottom = same_pads(h, kernel[0], stride)
        left, right = same_pads(w, kernel[1], stride)
        return self.conv(x, out_channels, kernel, stride, (top, left, bottom, right), group,
                         gain)

    def depthwise(self, x: str, stride: int = 1, keras_pads: bool = False) -> str:
        """Depthwise 3x3 (group = channels, one filter per channel)."""
        channels = self.shapes[x][1]
        if keras_pads:
            return self.conv_same(x, channels, (3, 3), stride, group=channels)
        return self.conv(x, channels, (3, 3), stride, group=channels)

    def gemm(self, x: str, out_features: int, gain: float = 2.0, trans_b: bool = True) -> str:
        """Gemm with bias. trans_b=True stores the weight as (out, in) like PyTorch; False
        stores (in, out) like Keras, which moves ORT's per-channel axis from 0 to 1."""
        n, in_features = self.shapes[x]
        w = he_normal(self.rng, (out_features, in_features), in_features, gain)
        weight = self.constant("W", w if trans_b else np.ascontiguousarray(w.T))
        bias = self.constant("B", small_bias(self.rng, out_features))
        return self._node("Gemm", [x, weight, bias], (n, out_features), transB=int(trans_b))

    def matmul(self, x: str, out_features: int, gain: float = 1.0) -> str:
        n, in_features = self.shapes[x]
        weight = self.constant("W", he_normal(self.rng, (in_features, out_features),
                                              in_features, gain))
        return self._node("MatMul", [x, weight], (n, out_features))

    def add_bias(self, x: str) -> str:
        """Add of a constant vector: the bias half of a Keras Dense exported as MatMul+Add."""
        bias = self.constant("B", small_bias(self.rng, self.shapes[x][-1]))
        return self._node("Add", [x, bias], self.shapes[x])

    # -- element-wise and shape ops ----------------------------------------------------

    def relu(self, x: str) -> str:
        return self._node("Relu", [x], self.shapes[x])

    def relu6(self, x: str) -> str:
        """ReLU6 the way PyTorch exports it at opset >= 11: Clip with constant min and max
        inputs (one pair of scalars per Clip, as exporters emit them)."""
        low = self.constant("clip_min", np.array(0.0, dtype=np.float32))
        high = self.constant("clip_max", np.array(6.0, dtype=np.float32))
        return self._node("Clip", [x, low, high], self.shapes[x])

    def leaky_relu(self, x: str, alpha: float = 0.1) -> str:
        return self._node("LeakyRelu", [x], self.shapes[x], alpha=alpha)

    def sigmoid(self, x: str) -> str:
        return self._node("Sigmoid", [x], self.shapes[x])

    def add(self, a: str, b: str) -> str:
        return self._node("Add", [a, b], self.shapes[a])

    def mul(self, a: str, b: str) -> str:
        shape = tuple(max(p, q) for p, q in zip(self.shapes[a], self.shapes[b], strict=True))
        return self._node("Mul", [a, b], shape)

    def concat_channels(self, parts: Sequence[str]) -> str:
        n, _, h, w = self.shapes[parts[0]]
        channels = sum(self.shapes[p][1] for p in parts)
        return self._node("Concat", parts, (n, channels, h, w), axis=1)

    def _pool(self, op_type: str, x: str, kernel: int, stride: int,
              pads: tuple[int, int, int, int], ceil_mode: bool, **attrs: Any) -> str:
        n, c, h, w = self.shapes[x]
        out_shape = (n, c, pooled_size(h, kernel, stride, pads[0], pads[2], ceil_mode),
                     pooled_size(w, kernel, stride, pads[1], pads[3], ceil_mode))
        if ceil_mode:
            attrs["ceil_mode"] = 1
        return self._node(op_type, [x], out_shape, kernel_shape=[kernel, kernel],
                          strides=[stride, stride], pads=list(pads), **attrs)

    def max_pool(self, x: str, kernel: int, stride: int, ceil_mode: bool = False) -> str:
        return self._pool("MaxPool", x, kernel, stride, (0, 0, 0, 0), ceil_mode)

    def average_pool(self, x: str, kernel: int, stride: int,
                     pads: tuple[int, int, int, int] = (0, 0, 0, 0),
                     count_include_pad: bool = False) -> str:
        return self._pool("AveragePool", x, kernel, stride, pads, False,
                          count_include_pad=int(count_include_pad))

    def average_pool_all(self, x: str) -> str:
        """AveragePool whose (possibly non-square) window is the whole feature map, as
        Keras models written for a fixed input size do instead of GlobalAveragePool."""
        n, c, h, w = self.shapes[x]
        return self._node("AveragePool", [x], (n, c, 1, 1), kernel_shape=[h, w],
                          strides=[1, 1])

    def global_average_pool(self, x: str) -> str:
        n, c, _, _ = self.shapes[x]
        return self._node("GlobalAveragePool", [x], (n, c, 1, 1))

    def flatten(self, x: str) -> str:
        n, *rest = self.shapes[x]
        return self._node("Flatten", [x], (n, int(np.prod(rest))), axis=1)

    def reshape_2d(self, x: str) -> str:
        """Reshape to (N, features) with a constant shape, as tf2onnx and torch.reshape
        exports do."""
        n, *rest = self.shapes[x]
        target = (n, int(np.prod(rest)))
        shape = self.constant("shape", np.array(target, dtype=np.int64))
        return self._node("Reshape", [x, shape], target)

    def softmax(self, x: str) -> str:
        return self._node("Softmax", [x], self.shapes[x], axis=-1)

    # -- the model ---------------------------------------------------------------------

    def build(self, y: str) -> onnx.ModelProto:
        """The checked model, with y renamed to OUTPUT_NAME."""
        for node in self.nodes:
            node.output[:] = [OUTPUT_NAME if o == y else o for o in node.output]
            node.input[:] = [OUTPUT_NAME if i == y else i for i in node.input]
        graph = helper.make_graph(
            self.nodes, self.name,
            [helper.make_tensor_value_info(INPUT_NAME, TensorProto.FLOAT, list(self.input_shape))],
            [helper.make_tensor_value_info(OUTPUT_NAME, TensorProto.FLOAT, list(self.shapes[y]))],
            self.initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="onnx2mcu-tests-zoo")
        model.ir_version = IR_VERSION
        onnx.checker.check_model(model, full_check=True)
        return model


# --------------------------------------------------------------------------------------
# The float models
# --------------------------------------------------------------------------------------

# Weight gains of the classifier layers in front of a Softmax. Spatially averaged random
# features are small (standard deviation 0.05 to 0.7), so with gain 1 the logits are
# nearly equal and the Softmax output nearly uniform. A trained classifier is confident;
# these gains spread the logits to a standard deviation of about 2, so that the Softmax
# output (and its quantization) covers most of 0..1.
HEAD_GAINS: dict[str, float] = {
    "resnet8": 20.0,
    "dscnn": 120.0,
    "mobilenet_v1_025": 700.0,
    "mobilenet_v2_style": 9.0,
    "misc_ops": 600.0,
}


def resnet8() -> onnx.ModelProto:
    """MLPerf Tiny image classification ResNet-8 (CIFAR-10), without batch normalisation."""
    g = GraphBuilder("resnet8", seed=101)
    x = g.relu(g.conv(INPUT_NAME, 16, (3, 3)))
    for channels, stride in ((16, 1), (32, 2), (64, 2)):
        y = g.relu(g.conv(x, channels, (3, 3), stride))
        # gain 1: the residual sum adds the shortcut's variance to this branch's.
        y = g.conv(y, channels, (3, 3), gain=1.0)
        shortcut = x if stride == 1 else g.conv(x, channels, (1, 1), stride, gain=1.0)
        x = g.relu(g.add(y, shortcut))
    x = g.reshape_2d(g.average_pool(x, kernel=8, stride=8))
    return g.build(g.softmax(g.gemm(x, 10, gain=HEAD_GAINS["resnet8"])))


def dscnn() -> onnx.ModelProto:
    """MLPerf Tiny keyword spotting DS-CNN (49 MFCC frames x 10 coefficients, 12 words)."""
    g = GraphBuilder("dscnn", seed=102)
    # Keras "same" padding of the 10x4 stride-2 kernel: pads (4, 1, 5, 1), output 25x5.
    x = g.relu(g.conv_same(INPUT_NAME, 64, (10, 4), 2))
    for _ in range(4):
        x = g.relu(g.depthwise(x, keras_pads=True))
        x = g.relu(g.conv(x, 64, (1, 1)))
    # The reference model averages the whole 25x5 map with an AveragePool, not a GAP.
    x = g.flatten(g.average_pool_all(x))
    return g.build(g.softmax(g.gemm(x, 12, gain=HEAD_GAINS["dscnn"])))


# MobileNetV1 after the stem: (pointwise output channels, depthwise stride), alpha = 0.25.
MOBILENET_V1_025_BLOCKS: tuple[tuple[int, int], ...] = (
    (16, 1), (32, 2), (32, 1), (64, 2), (64, 1), (128, 2),
    (128, 1), (128, 1), (128, 1), (128, 1), (128, 1), (256, 2), (256, 1))


def mobilenet_v1_025() -> onnx.ModelProto:
    """MLPerf Tiny visual wake words MobileNetV1, width 0.25, 96x96 RGB, 2 classes."""
    g = GraphBuilder("mobilenet_v1_025", seed=103)
    x = g.relu(g.conv_same(INPUT_NAME, 8, (3, 3), 2))
    for channels, stride in MOBILENET_V1_025_BLOCKS:
        x = g.relu(g.depthwise(x, stride, keras_pads=True))
        x = g.relu(g.conv(x, channels, (1, 1)))
    x = g.flatten(g.average_pool_all(x))  # 3x3 -> 1x1, as in the reference Keras model
    return g.build(g.softmax(g.gemm(x, 2, gain=HEAD_GAINS["mobilenet_v1_025"])))


AD_AUTOENCODER_WIDTHS = (640, 128, 128, 128, 128, 8, 128, 128, 128, 128, 640)


def ad_autoencoder() -> onnx.ModelProto:
    """MLPerf Tiny anomaly detection autoencoder: 10 dense layers, 640 -> 8 -> 640."""
    g = GraphBuilder("ad_autoencoder", seed=104)
    x = INPUT_NAME
    last = len(AD_AUTOENCODER_WIDTHS) - 2
    for i, width in enumerate(AD_AUTOENCODER_WIDTHS[1:]):
        # Weights stored Keras-style (in, out), transB=0: the other zoo models use transB=1.
        x = g.gemm(x, width, gain=1.0 if i == last else 2.0, trans_b=False)
        if i != last:
            x = g.relu(x)
    return g.build(x)


def lenet5() -> onnx.ModelProto:
    """LeNet-5 with ReLU and max pooling, 28x28 input (first conv padded to keep 28x28)."""
    g = GraphBuilder("lenet5", seed=105)
    x = g.max_pool(g.relu(g.conv(INPUT_NAME, 6, (5, 5))), 2, 2)
    x = g.max_pool(g.relu(g.conv(x, 16, (5, 5), pads=(0, 0, 0, 0))), 2, 2)
    x = g.relu(g.gemm(g.flatten(x), 120))
    x = g.relu(g.gemm(x, 84))
    return g.build(g.gemm(x, 10, gain=1.0))


def inverted_residual(g: GraphBuilder, x: str, expansion: int, channels: int,
                      stride: int) -> str:
    """MobileNetV2 block: 1x1 expansion + ReLU6, depthwise 3x3 + ReLU6, linear 1x1
    projection, and a residual Add when the shape is unchanged."""
    in_channels = g.shapes[x][1]
    y = x
    if expansion != 1:
        y = g.relu6(g.conv(y, in_channels * expansion, (1, 1)))
    y = g.relu6(g.depthwise(y, stride))
    y = g.conv(y, channels, (1, 1), gain=1.0)
    if stride == 1 and in_channels == channels:
        y = g.add(y, x)
    return y


# (expansion, output channels, stride) of each inverted residual block.
MOBILENET_V2_STYLE_BLOCKS: tuple[tuple[int, int, int], ...] = (
    (1, 8, 1), (4, 16, 2), (4, 16, 1), (4, 24, 2), (4, 24, 1))


def mobilenet_v2_style() -> onnx.ModelProto:
    """A small MobileNetV2: ReLU6 as Clip, inverted residuals, GlobalAveragePool head."""
    g = GraphBuilder("mobilenet_v2_style", seed=106)
    x = g.relu6(g.conv(INPUT_NAME, 16, (3, 3), 2))
    for expansion, channels, stride in MOBILENET_V2_STYLE_BLOCKS:
        x = inverted_residual(g, x, expansion, channels, stride)
    x = g.relu6(g.conv(x, 64, (1, 1)))
    x = g.reshape_2d(g.global_average_pool(x))
    return g.build(g.softmax(g.gemm(x, 10, gain=HEAD_GAINS["mobilenet_v2_style"])))


def fire(g: GraphBuilder, x: str, squeeze: int, expand: int) -> str:
    """SqueezeNet fire module: 1x1 squeeze, then 1x1 and 3x3 expands concatenated."""
    s = g.relu(g.conv(x, squeeze, (1, 1)))
    return g.concat_channels([g.relu(g.conv(s, expand, (1, 1))),
                              g.relu(g.conv(s, expand, (3, 3)))])


def squeezenet_style() -> onnx.ModelProto:
    """A small SqueezeNet 1.1: ceil-mode max pools, fire modules, conv classifier, GAP."""
    g = GraphBuilder("squeezenet_style", seed=107)
    x = g.relu(g.conv(INPUT_NAME, 16, (3, 3), 2))                      # 16x16
    x = g.max_pool(x, 3, 2, ceil_mode=True)                            # 8x8 (7x7 if floor)
    x = fire(g, fire(g, x, 8, 16), 8, 16)
    x = g.max_pool(x, 3, 2, ceil_mode=True)                            # 4x4 (3x3 if floor)
    x = fire(g, x, 16, 32)
    x = g.relu(g.conv(x, 10, (1, 1)))
    x = g.flatten(g.global_average_pool(x))
    return g.build(g.softmax(x))


def misc_ops() -> onnx.ModelProto:
    """LeakyRelu, a squeeze-excitation gate (Sigmoid, broadcast Mul), swish x*sigmoid(x),
    AveragePools with pads (count_include_pad 1 and 0), Reshape, MatMul+Add, Softmax."""
    g = GraphBuilder("misc_ops", seed=108)
    x = g.leaky_relu(g.conv(INPUT_NAME, 8, (3, 3)))
    gate = g.relu(g.conv(g.global_average_pool(x), 4, (1, 1)))
    gate = g.sigmoid(g.conv(gate, 8, (1, 1), gain=1.0))
    x = g.mul(x, gate)                                   # (1,8,16,16) * (1,8,1,1)
    x = g.conv(x, 8, (3, 3), gain=1.0)
    x = g.mul(x, g.sigmoid(x))
    x = g.average_pool(x, 3, 2, (1, 1, 1, 1), count_include_pad=True)   # 8x8
    x = g.average_pool(x, 3, 1, (1, 1, 1, 1), count_include_pad=False)  # 8x8
    x = g.add_bias(g.matmul(g.reshape_2d(x), 10, gain=HEAD_GAINS["misc_ops"]))
    return g.build(g.softmax(x))


FLOAT_MODELS: dict[str, Callable[[], onnx.ModelProto]] = {
    "resnet8": resnet8,
    "dscnn": dscnn,
    "mobilenet_v1_025": mobilenet_v1_025,
    "ad_autoencoder": ad_autoencoder,
    "lenet5": lenet5,
    "mobilenet_v2_style": mobilenet_v2_style,
    "squeezenet_style": squeezenet_style,
    "misc_ops": misc_ops,
}
MODEL_NAMES: tuple[str, ...] = tuple(FLOAT_MODELS)


# --------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------

CALIBRATION_COUNT = 16
CALIBRATION_SEED = 7
SAMPLE_SEED = 8  # test inputs differ from the calibration set


def random_inputs(shape: Shape, value_range: tuple[float, float], count: int,
                  seed: int) -> list[FloatArray]:
    rng = np.random.default_rng(seed)
    low, high = value_range
    return [rng.uniform(low, high, shape).astype(np.float32) for _ in range(count)]


def sample_inputs(name: str, count: int = 1, seed: int = SAMPLE_SEED) -> list[FloatArray]:
    """Inputs for a zoo model from the range it was calibrated on."""
    return random_inputs(INPUT_SHAPES[name], INPUT_RANGES[name], count, seed)


class CalibrationReader:
    """A CalibrationDataReader (ORT only calls get_next) over a fixed list of inputs."""

    def __init__(self, input_name: str, batches: Sequence[FloatArray]) -> None:
        self._feeds: Iterator[dict[str, FloatArray]] = iter(
            [{input_name: batch} for batch in batches])

    def get_next(self) -> dict[str, FloatArray] | None:
        return next(self._feeds, None)


# --------------------------------------------------------------------------------------
# Quantization
# --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Variant:
    """One way of quantizing: activation type, and per-tensor or per-channel int8 weights."""

    id: str
    activations: Activations
    per_channel: bool


VARIANTS: tuple[Variant, ...] = (
    Variant("u8-pt", "uint8", per_channel=False),
    Variant("u8-pc", "uint8", per_channel=True),
    Variant("i8-pt", "int8", per_channel=False),
    Variant("i8-pc", "int8", per_channel=True),
)
VARIANT_BY_ID: dict[str, Variant] = {v.id: v for v in VARIANTS}

# Every (model name, variant id) pair, for pytest.mark.parametrize(..., ids=case_id).
ZOO_CASES: tuple[tuple[str, str], ...] = tuple(
    (name, v.id) for name in MODEL_NAMES for v in VARIANTS)


# One case per architecture, the variants taken in turn (every variant twice): for the
# properties that do not depend on the quantization's numbers (the Makefile and harness,
# the report's structure, what the commands say), where verify covers all 32.
SPREAD_CASES: tuple[tuple[str, str], ...] = tuple(
    (name, VARIANTS[i % len(VARIANTS)].id) for i, name in enumerate(MODEL_NAMES))


def case_id(case: tuple[str, str]) -> str:
    return f"{case[0]}-{case[1]}"


def graph_input_shape(model: onnx.ModelProto) -> Shape:
    dims = model.graph.input[0].type.tensor_type.shape.dim
    return tuple(d.dim_value for d in dims)


def quantize_qop(model: onnx.ModelProto, activations: Activations, per_channel: bool, *,
                 input_range: tuple[float, float] | None = None,
                 calibration_count: int = CALIBRATION_COUNT,
                 seed: int = CALIBRATION_SEED, qdq: bool = False) -> onnx.ModelProto:
    """QOperator quantization with ORT's quantize_static: int8 weights, uint8 or int8
    activations, MinMax calibration on calibration_count uniform random inputs. With
    qdq=True the same in QDQ format (DequantizeLinear -> float op -> QuantizeLinear).

    The input range defaults to the zoo's range for the model's graph name, else [-1, 1].

    ORT's pre-processing (quant_pre_process) is deliberately not run. It does three things:
    symbolic shape inference, ORT's basic graph optimisations, and ONNX shape inference.
    The zoo's models have static shapes and nothing to fold (no BatchNormalization, no
    constant subgraphs), and quantize_static runs ONNX shape inference itself, so the first
    and last add nothing (the first also needs sympy, which the project does not depend
    on). The optimiser does change things, for the worse here: it rewrites the graph in
    ORT-version-dependent ways (it fuses misc_ops' MatMul+Add into one Gemm, so QLinearMatMul
    and QLinearAdd would never be tested), and the quantized model would no longer be a
    quantization of the float graph the builders wrote. On the other seven models it is a
    no-op.
    """
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

    if activations not in ("uint8", "int8"):
        raise ValueError(f"activations must be 'uint8' or 'int8', not {activations!r}")
    activation_type = QuantType.QUInt8 if activations == "uint8" else QuantType.QInt8
    if input_range is None:
        input_range = INPUT_RANGES.get(model.graph.name, DEFAULT_INPUT_RANGE)
    reader = CalibrationReader(model.graph.input[0].name, random_inputs(
        graph_input_shape(model), input_range, calibration_count, seed))
    # quantize_static writes several side files next to its input (a shape-inferred copy,
    # the augmented calibration model), so everything happens in a temporary directory.
    with tempfile.TemporaryDirectory(prefix="onnx2mcu-zoo-") as tmp, quiet_quantizer():
        source, target = Path(tmp) / "float.onnx", Path(tmp) / "quantized.onnx"
        onnx.save(model, source)
        quant_format = QuantFormat.QDQ if qdq else QuantFormat.QOperator
        quantize_static(source, target, reader, quant_format=quant_format,
                        per_channel=per_channel, activation_type=activation_type,
                        weight_type=QuantType.QInt8)
        return onnx.load(target)


# --------------------------------------------------------------------------------------
# The per-process cache: each model and variant is built once, handed out as fresh copies
# --------------------------------------------------------------------------------------

def _check_names(name: str, variant_id: str | None = None) -> None:
    if name not in FLOAT_MODELS:
        raise KeyError(f"no zoo model {name!r}; there are {', '.join(MODEL_NAMES)}")
    if variant_id is not None and variant_id not in VARIANT_BY_ID:
        raise KeyError(f"no variant {variant_id!r}; there are {', '.join(VARIANT_BY_ID)}")


@functools.cache
def float_model_bytes(name: str) -> bytes:
    _check_names(name)
    data: bytes = FLOAT_MODELS[name]().SerializeToString()
    return data


@functools.cache
def quantized_model_bytes(name: str, variant_id: str) -> bytes:
    """The serialized quantized model; bytes are immutable, so the cache cannot be spoiled."""
    _check_names(name, variant_id)
    variant = VARIANT_BY_ID[variant_id]
    model = quantize_qop(onnx.load_from_string(float_model_bytes(name)), variant.activations,
                         variant.per_channel)
    data: bytes = model.SerializeToString()
    return data


@functools.cache
def qdq_model_bytes(name: str, variant_id: str) -> bytes:
    """Like quantized_model_bytes, in QDQ format."""
    _check_names(name, variant_id)
    variant = VARIANT_BY_ID[variant_id]
    model = quantize_qop(onnx.load_from_string(float_model_bytes(name)), variant.activations,
                         variant.per_channel, qdq=True)
    data: bytes = model.SerializeToString()
    return data


def qdq_model(name: str, variant_id: str) -> onnx.ModelProto:
    """A fresh copy of the QDQ-format quantized model: callers may modify it."""
    return onnx.load_from_string(qdq_model_bytes(name, variant_id))


def float_model(name: str) -> onnx.ModelProto:
    """A fresh copy of the float model: callers may modify it."""
    return onnx.load_from_string(float_model_bytes(name))


def quantized_model(name: str, variant_id: str) -> onnx.ModelProto:
    """A fresh copy of the quantized model: callers may modify it."""
    return onnx.load_from_string(quantized_model_bytes(name, variant_id))


# --------------------------------------------------------------------------------------
# Facts about a model, for test ids, skips and reports
# --------------------------------------------------------------------------------------

def operator_types(model: onnx.ModelProto) -> list[tuple[str, str]]:
    """Sorted distinct (domain, op_type) of the graph's nodes; "" is the ai.onnx domain."""
    return sorted({(node.domain, node.op_type) for node in model.graph.node})


def initializer_bytes(model: onnx.ModelProto) -> int:
    """Bytes of all constant data: weights, biases, scales, zero points, shapes."""
    return sum(numpy_helper.to_array(t).nbytes for t in model.graph.initializer)


def mac_count(model: onnx.ModelProto) -> int:
    """Multiply-accumulates of the Conv, Gemm and MatMul nodes of a float model (use the
    float model: ONNX shape inference does not know ORT's com.microsoft ops)."""
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    graph = inferred.graph
    shapes = {v.name: tuple(d.dim_value for d in v.type.tensor_type.shape.dim)
              for v in (*graph.input, *graph.value_info, *graph.output)}
    shapes.update({t.name: tuple(t.dims) for t in graph.initializer})
    total = 0
    for node in graph.node:
        if node.op_type == "Conv":
            weight = shapes[node.input[1]]
            total += int(np.prod(shapes[node.output[0]])) * int(np.prod(weight[1:]))
        elif node.op_type in ("Gemm", "MatMul"):
            inner = shapes[node.input[0]][-1]
            total += int(np.prod(shapes[node.output[0]])) * inner
    return total
