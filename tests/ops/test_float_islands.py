"""Float islands: operators a QDQ model leaves in float, where ORT at ORT_ENABLE_ALL
computes in float too. The generated C must match ORT's float32 results bit for bit, so
each kernel is checked on many shapes against the real ORT (one thread, x86-64). The
comparisons are skipped on a CPU whose ORT runs other float kernels than those (no
AVX-512F, or no FMA for Sigmoid and Tanh).

Each model holds several independent cases (one input and one float output each), so
one C build covers many shapes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
import pytest
from conftest import SANITIZE, in_qemu, skip_where_ort_differs
from modelgen import graph_model
from numpy.typing import NDArray
from onnx import helper

import codegen
from codegen.options import Options
from codegen.pipeline import generate_sources

F32 = np.float32


@dataclass
class Islands:
    """A model of independent cases: x_i (float) -> Q -> DQ -> float op(s) -> y_i."""

    nodes: list[onnx.NodeProto] = field(default_factory=list)
    inits: dict[str, NDArray[Any]] = field(default_factory=dict)
    inputs: dict[str, tuple[str, list[int]]] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)
    n: int = 0

    def name(self, base: str) -> str:
        self.n += 1
        return f"{base}{self.n}"

    def const(self, value: Any) -> str:
        name = self.name("c")
        self.inits[name] = np.asarray(value)
        return name

    def op(self, op_type: str, inputs: list[str], **attrs: Any) -> str:
        out = self.name("t")
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=out, **attrs))
        return out

    def dq(self, x: str, scale: Any, zp: Any, **attrs: Any) -> str:
        return self.op("DequantizeLinear", [x, self.const(scale), self.const(zp)], **attrs)

    def activation(self, shape: tuple[int, ...], scale: float = 0.05, zp: int = 120) -> str:
        """A float input quantized to uint8 and dequantized: what DQ hands a float op."""
        x = self.name("x")
        self.inputs[x] = ("float32", list(shape))
        q = self.op("QuantizeLinear", [x, self.const(F32(scale)), self.const(np.uint8(zp))])
        return self.dq(q, F32(scale), np.uint8(zp))

    def float_input(self, shape: tuple[int, ...]) -> str:
        x = self.name("x")
        self.inputs[x] = ("float32", list(shape))
        return x

    def weights(self, shape: tuple[int, ...], per_channel_axis: int | None = 0) -> str:
        rng = np.random.default_rng(self.n)
        q = rng.integers(-127, 128, shape).astype(np.int8)
        if per_channel_axis is None:
            return self.dq(self.const(q), F32(0.0173), np.int8(0))
        scales = rng.uniform(0.002, 0.03, shape[per_channel_axis]).astype(F32)
        return self.dq(self.const(q), scales, np.zeros(len(scales), np.int8),
                       axis=per_channel_axis)

    def bias(self, count: int, scale: float = 0.0004) -> str:
        q = np.random.default_rng(self.n).integers(-3000, 3000, count).astype(np.int32)
        return self.dq(self.const(q), F32(scale), np.int32(0))

    def output(self, y: str) -> None:
        self.outputs[y] = "float32"

    def model(self, opset: int = 13) -> onnx.ModelProto:
        return graph_model(self.nodes, self.inputs, self.outputs, self.inits, opset=opset)


def kernels(model: onnx.ModelProto) -> list[str]:
    return [c.function for c in generate_sources(model, Options()).program.calls]


def exact(model: onnx.ModelProto, samples: int = 3) -> None:
    skip_where_ort_differs(model)
    report = codegen.verify(model, samples=samples, cflags=SANITIZE)
    assert report.ok, [(o.name, o.mismatches, o.elements) for o in report.outputs
                       if o.mismatches]


# (channels in, height, width, filters, kernel, stride, pad, group, dilation)
CONV_SHAPES = [
    (3, 16, 16, 16, 3, 1, 1, 1, 1),  # K = 27 < N: wide blocks
    (16, 16, 16, 16, 3, 1, 1, 1, 1),  # K = 144 > 128: two K blocks
    (16, 16, 16, 32, 3, 2, 1, 1, 1),  # stride 2
    (32, 8, 8, 32, 3, 1, 1, 1, 1),  # K = 288 > N = 64: K blocks of 256
    (16, 16, 16, 32, 1, 2, 0, 1, 1),  # 1x1 stride 2: not pointwise
    (64, 8, 8, 64, 3, 1, 1, 1, 1),  # K = 576
    (16, 8, 8, 64, 1, 1, 0, 1, 1),  # pointwise: one product
    (24, 4, 4, 96, 1, 1, 0, 1, 1),  # pointwise, more filters than pixels
    (64, 2, 2, 128, 3, 1, 1, 1, 1),  # more filters than pixels: one product
    (32, 12, 12, 32, 3, 1, 1, 32, 1),  # depthwise: ORT's single-row kernel
    (48, 9, 9, 48, 3, 2, 1, 48, 1),  # depthwise stride 2
    (16, 8, 8, 16, 3, 1, 1, 4, 1),  # grouped, 4 filters per group
    (8, 10, 10, 8, 3, 1, 2, 1, 2),  # dilated
    (8, 7, 9, 1, 1, 1, 0, 1, 1),  # pointwise, one filter: single-row kernel
    (6, 5, 7, 4, 5, 1, 2, 1, 1),  # 5x5
    (200, 3, 3, 8, 3, 1, 1, 1, 1),  # K = 1800, N = 9
    # One output pixel (a squeeze-and-excitation block's convolutions on a pooled map):
    # MLAS swaps the operands into its [N][K] single-row kernel.
    (32, 1, 1, 8, 1, 1, 0, 1, 1),
    (8, 1, 1, 13, 1, 1, 0, 1, 1),  # 13 filters: groups of 4, a pair and one
    (3, 1, 1, 6, 3, 1, 1, 1, 1),  # 3x3 over padding
    (130, 1, 1, 10, 1, 1, 0, 1, 1),  # K over 128: not blocked
    (12, 1, 1, 12, 1, 1, 0, 4, 1),  # grouped, 3 filters per group
    (8, 1, 1, 8, 1, 1, 0, 8, 1),  # depthwise: one filter per group, single-row kernel
    (4, 5, 5, 6, 5, 1, 0, 1, 1),  # 5x5 valid: one pixel from a larger map
]


def conv_case(net: Islands, shape: tuple[int, ...], relu: bool = False) -> None:
    c, h, w, m, k, s, p, g, d = shape
    x = net.activation((1, c, h, w))
    y = net.op("Conv", [x, net.weights((m, c // g, k, k)), net.bias(m)], kernel_shape=[k, k],
               strides=[s, s], pads=[p] * 4, group=g, dilations=[d, d])
    net.output(net.op("Relu", [y]) if relu else y)


def test_float_conv_matches_ort_on_every_algorithm() -> None:
    net = Islands()
    for shape in CONV_SHAPES:
        conv_case(net, shape)
    model = net.model()
    assert kernels(model).count("q8_conv_f32") == len(CONV_SHAPES)
    exact(model)


def test_float_conv_variants() -> None:
    """Relu after the bias (ORT's FusedConv), no bias, per-tensor weights, batch 2,
    asymmetric pads, 1-D."""
    net = Islands()
    conv_case(net, (8, 9, 9, 8, 3, 1, 1, 1, 1), relu=True)
    x = net.activation((1, 8, 9, 9))
    net.output(net.op("Conv", [x, net.weights((8, 8, 3, 3), None)], pads=[1, 1, 1, 1]))
    x = net.activation((2, 6, 7, 7))
    net.output(net.op("Conv", [x, net.weights((5, 6, 3, 3)), net.bias(5)], pads=[0, 1, 2, 0],
                      strides=[2, 1]))
    x = net.activation((1, 4, 30))
    net.output(net.op("Conv", [x, net.weights((6, 4, 5)), net.bias(6)], pads=[2, 2]))
    exact(net.model())


@pytest.mark.parametrize("rows", [1, 3])
def test_float_gemm_and_matmul(rows: int) -> None:
    """Float A (left unquantized) times dequantized weights: ORT keeps these in float.
    Batch 1 runs ORT's single-row kernels, which reduce differently per output position
    (N = 13: three groups of four, then one)."""
    net = Islands()
    for k, n in ((16, 10), (37, 13), (300, 6), (8, 2), (700, 130)):
        a = net.float_input((rows, k))
        net.output(net.op("Gemm", [a, net.weights((n, k)), net.bias(n)], transB=1))
        a = net.float_input((rows, k))
        net.output(net.op("Gemm", [a, net.weights((n, k))], transB=1))
        a = net.float_input((rows, k))
        y = net.op("MatMul", [a, net.weights((k, n), 1)])
        q = net.op("QuantizeLinear", [y, net.const(F32(0.05)), net.const(np.uint8(128))])
        net.output(net.dq(q, F32(0.05), np.uint8(128)))
    model = net.model()
    assert kernels(model).count("q8_gemm_f32") == 15
    exact(model)


@pytest.mark.parametrize("rows", [1, 3])
def test_float_gemm_and_matmul_of_float_initializers(rows: int) -> None:
    """B a float initializer (NNCF's ignored scopes, Quark's float classifier): ORT
    prepacks it, and every product goes through MLAS's packed SGEMM (K blocks of 256),
    one row or more."""
    net = Islands()
    rng = np.random.default_rng(rows)
    for k, n in ((16, 10), (37, 13), (300, 6), (600, 3)):
        a = net.activation((rows, k), 0.04, 128)
        b = net.const(rng.normal(0, 0.2, n).astype(F32))
        net.output(net.op("Gemm", [a, net.const(rng.normal(0, 0.2, (n, k)).astype(F32)), b],
                          transB=1))
        a = net.activation((rows, k), 0.04, 128)
        net.output(net.op("Gemm", [a, net.const(rng.normal(0, 0.2, (k, n)).astype(F32))]))
        a = net.activation((2, rows, k), 0.04, 128)
        net.output(net.op("MatMul", [a, net.const(rng.normal(0, 0.2, (k, n)).astype(F32))]))
    model = net.model()
    assert kernels(model).count("q8_gemm_f32") == 12
    exact(model)


def test_float_elementwise_and_pools() -> None:
    net = Islands()
    for op in ("Add", "Mul"):
        for other in ((1, 8, 6, 6), (1, 8, 1, 1), (6,), ()):
            a = net.activation((1, 8, 6, 6))
            b = net.activation(other, 0.031, 3) if other else net.dq(
                net.const(np.uint8(200)), F32(0.02), np.uint8(7))
            net.output(net.op(op, [a, b]))
    for op, attrs in (("Sigmoid", {}), ("LeakyRelu", {"alpha": 0.1})):
        net.output(net.op(op, [net.activation((1, 4, 16, 16), 0.09, 128)], **attrs))
    for size in ((1, 1), (2, 3), (5, 5), (16, 16), (7, 9)):
        net.output(net.op("GlobalAveragePool", [net.activation((1, 5, *size), 0.17, 3)]))
    exact(net.model(), samples=4)


def test_float_hard_sigmoid_and_hard_swish_after_a_float_conv() -> None:
    """Conv -> HardSwish -> Q as NNCF leaves a MobileNetV3 layer (ORT inlines HardSwish
    as HardSigmoid and Mul), and HardSigmoid with other attributes: arbitrary float
    inputs, not 256 values."""
    net = Islands()
    for op, attrs in (("HardSwish", {}), ("HardSigmoid", {}),
                      ("HardSigmoid", {"alpha": 0.3, "beta": 0.45})):
        x = net.activation((1, 6, 9, 9), 0.04, 110)
        y = net.op("Conv", [x, net.weights((12, 6, 3, 3)), net.bias(12, 0.004)],
                   pads=[1, 1, 1, 1])
        h = net.op(op, [y], **attrs)
        net.output(h)
        q = net.op("QuantizeLinear", [h, net.const(F32(0.021)), net.const(np.uint8(3))])
        net.output(net.dq(q, F32(0.021), np.uint8(3)))
    model = net.model(opset=14)
    calls = kernels(model)
    assert calls.count("q8_hardswish_f32") == 1 and calls.count("q8_hardsigmoid_f32") == 2
    exact(model, samples=4)


def test_float_island_between_integer_operators() -> None:
    """uint8 in, int8 out of a Conv: ORT cannot fuse the unit (the types differ and the
    int8 output fans out), so it runs in float between integer operators."""
    net = Islands()
    x = net.activation((1, 4, 8, 8))
    y = net.op("Conv", [x, net.weights((8, 4, 3, 3)), net.bias(8)], pads=[1, 1, 1, 1])
    q = net.op("QuantizeLinear", [y, net.const(F32(0.1)), net.const(np.int8(-5))])
    for branch in range(2):
        d = net.dq(q, F32(0.1), np.int8(-5))
        z = net.op("Conv", [d, net.weights((4, 8, 1, 1))]) if branch else d
        net.output(net.op("Relu", [z]))
    model = net.model()
    assert "q8_conv_f32" in kernels(model)
    exact(model)


def test_float_bias_initializers() -> None:
    """A float-initializer bias on dequantized weights, as NNCF leaves it where ORT keeps
    the convolution in float (per-channel activations before a depthwise Conv): ORT adds
    the bias tensor as given, with the kernels of a dequantized bias."""
    net = Islands()
    rng = np.random.default_rng(7)
    for c, m, k, g, relu in ((8, 8, 3, 8, True), (6, 10, 3, 1, False), (12, 16, 1, 1, True)):
        x = net.activation((1, c, 9, 9))
        b = net.const(rng.normal(0, 0.5, m).astype(F32))
        y = net.op("Conv", [x, net.weights((m, c // g, k, k)), b], kernel_shape=[k, k],
                   pads=[k // 2] * 4, group=g)
        net.output(net.op("Relu", [y]) if relu else y)
    a = net.activation((3, 20))
    net.output(net.op("Gemm", [a, net.weights((7, 20)), net.const(
        rng.normal(0, 0.5, 7).astype(F32))], transB=1))
    model = net.model()
    assert kernels(model).count("q8_conv_f32") == 3
    exact(model)


# (channels in, height, width, filters, kernel, stride, pad, dilation, bias, group): Convs
# with float-initializer weights, which ORT runs with its NCHWc kernels.
FLOAT_WEIGHT_CONVS = [
    (32, 1, 1, 8, 1, 1, 0, 1, True, 1),  # a squeeze-and-excitation reduce: pointwise
    (8, 1, 1, 32, 1, 1, 0, 1, True, 1),  # ... and expand: NCHW input (8 < 16 channels)
    (3, 9, 9, 16, 3, 2, 1, 1, True, 1),  # a stem: NCHW input, padding skipped
    (15, 6, 7, 6, 3, 1, 2, 2, False, 1),  # dilated, no bias
    (100, 3, 4, 12, 1, 1, 0, 1, True, 1),  # pointwise on 100 channels (padded to 112)
    (200, 2, 2, 8, 1, 1, 0, 1, True, 1),  # two batches of 128 channels
    (48, 6, 6, 8, 1, 2, 0, 1, True, 1),  # pointwise, stride 2
    (18, 5, 5, 8, 3, 1, 1, 1, True, 1),  # 18 % 4 != 0: not NCHWc, MLAS's SGEMM convolution
    (16, 6, 5, 16, 3, 1, 1, 1, True, 1),  # direct NCHWc: taps outer, a block's channels inner
    (20, 5, 5, 8, 3, 2, 1, 1, True, 1),  # direct, a block and 4 channels (padded)
    (36, 4, 4, 8, 1, 1, 1, 1, False, 1),  # 1x1 with padding: the direct kernel
    (32, 7, 6, 32, 3, 2, 1, 1, True, 32),  # depthwise, stride 2
    (16, 5, 5, 16, 5, 1, 2, 1, True, 16),  # depthwise 5x5
]


def test_float_weight_convs_follow_orts_nchwc_kernels() -> None:
    """Float-initializer weights (NNCF leaves a squeeze-and-excitation block's so, and
    tf2onnx --dequantize every layer's): ORT's NchwcTransformer runs them with its
    NCHW-input, pointwise, direct or depthwise kernels, or keeps the SGEMM convolution;
    then Relu and HardSigmoid, as the block has them."""
    net = Islands()
    rng = np.random.default_rng(3)
    for i, (c, h, w, m, k, s, p, d, has_bias, g) in enumerate(FLOAT_WEIGHT_CONVS):
        x = net.activation((1, c, h, w), 0.05, 100)
        inputs = [x, net.const(rng.normal(0, 0.2, (m, c // g, k, k)).astype(F32))]
        if has_bias:
            inputs.append(net.const(rng.normal(0, 0.3, m).astype(F32)))
        y = net.op("Conv", inputs, pads=[p] * 4, strides=[s, s], dilations=[d, d], group=g)
        net.output(net.op(("Relu", "HardSigmoid")[i % 2], [y]) if i < 2 else y)
    model = net.model()
    assert kernels(model).count("q8_conv_f32") == len(FLOAT_WEIGHT_CONVS)
    exact(model)


def test_global_average_pool_after_an_nchwc_convolution() -> None:
    """A convolution of float weights leaves its output in ORT's NCHWc layout, through
    Relu: a GlobalAveragePool of a multiple of 16 channels then sums each plane in one
    running sum (the NCHWc kernel); of other channel counts, MLAS's 4-lane kernel."""
    net = Islands()
    rng = np.random.default_rng(4)
    for channels in (32, 24):
        x = net.activation((1, 16, 7, 7), 0.05, 100)
        w = net.const(rng.normal(0, 0.2, (channels, 16, 3, 3)).astype(F32))
        y = net.op("Relu", [net.op("Conv", [x, w], pads=[1, 1, 1, 1])])
        net.output(net.op("GlobalAveragePool", [y]))
    exact(net.model())


def test_add_fused_into_an_nchwc_convolution_as_ort_does() -> None:
    """ORT's NchwcTransformer fuses an Add that alone reads an NCHWc convolution of float
    weights (no activation) into it when the other addend is NCHWc too (a convolution's
    output through Relu, Clip, Sigmoid, LeakyRelu, HardSigmoid, or an NCHWc Add): the
    output starts as the other addend, the channel batches are added to it, then the
    bias (ConvAdd). An Add whose other addend is not NCHWc (a dequantized tensor) stays
    apart."""
    net = Islands()
    rng = np.random.default_rng(6)

    def weights(m: int, c: int, k: int) -> str:
        return net.const(rng.normal(0, 0.2, (m, c, k, k)).astype(F32))

    for act, attrs in (("Relu", {}), ("Clip", {}), ("Sigmoid", {}), ("LeakyRelu", {}),
                       ("HardSigmoid", {"alpha": 0.3})):
        x = net.activation((1, 16, 5, 5), 0.05, 100)
        inputs = [x, weights(16, 16, 3), net.const(rng.normal(0, 0.2, 16).astype(F32))]
        y = net.op("Conv", inputs, pads=[1, 1, 1, 1])
        if act == "Clip":
            y = net.op("Clip", [y, net.const(F32(0.0)), net.const(F32(6.0))])
        else:
            y = net.op(act, [y], **attrs)
        project = net.op("Conv", [y, weights(16, 16, 1), net.const(
            rng.normal(0, 0.2, 16).astype(F32))])
        net.output(net.op("Add", [project, y]))  # fused: y is NCHWc
    x = net.activation((1, 32, 4, 4), 0.05, 100)
    first = net.op("Relu", [net.op("Conv", [x, weights(32, 32, 1)])])
    second = net.op("Conv", [first, weights(32, 32, 3)], pads=[1, 1, 1, 1])
    net.output(net.op("Add", [first, second]))  # fused into the second, input 1
    x = net.activation((1, 16, 4, 4), 0.05, 100)
    net.output(net.op("Add", [net.op("Conv", [x, weights(16, 16, 1)]), x]))  # apart
    model = net.model()
    calls = kernels(model)
    assert calls.count("q8_conv_add_f32") == 6 and calls.count("q8_add_f32") == 1, calls
    exact(model)


def test_convert_writes_conv_add_back_as_conv_and_add(tmp_path: Any) -> None:
    """convert writes a ConvAdd as Conv + Add, which ORT fuses again the same way: the
    converted model imports to the same kernels and is exact against ORT."""
    net = Islands()
    rng = np.random.default_rng(8)
    x = net.activation((1, 16, 4, 4), 0.05, 100)
    y = net.op("Relu", [net.op("Conv", [x, net.const(rng.normal(0, 0.2, (16, 16, 3, 3))
                                                     .astype(F32))], pads=[1, 1, 1, 1])])
    project = net.op("Conv", [y, net.const(rng.normal(0, 0.2, (16, 16, 1, 1)).astype(F32))])
    net.output(net.op("Add", [project, y]))
    model = net.model()
    result = codegen.convert(model, tmp_path / "converted.onnx")
    converted = onnx.load(str(result.out))
    assert "ConvAdd" not in {n.op_type for n in converted.graph.node}
    assert kernels(converted) == kernels(model)
    exact(converted)


@pytest.mark.parametrize("case", ["grouped", "depthwise of 8", "into Add"])
def test_float_weights_on_unreproduced_nchwc_kernels_are_refused(case: str) -> None:
    net = Islands()
    rng = np.random.default_rng(0)
    x = net.activation((1, 32, 8, 8))
    if case == "grouped":
        w = net.const(rng.normal(0, 0.1, (32, 16, 3, 3)).astype(F32))
        net.output(net.op("Conv", [x, w], pads=[1, 1, 1, 1], group=2))
    elif case == "depthwise of 8":
        w = net.const(rng.normal(0, 0.1, (8, 1, 3, 3)).astype(F32))
        x8 = net.activation((1, 8, 8, 8))
        net.output(net.op("Conv", [x8, w], pads=[1, 1, 1, 1], group=8))
    else:  # the other addend's layout is not one onnx2mcu can tell (a Concat)
        w = net.const(rng.normal(0, 0.1, (32, 32, 1, 1)).astype(F32))
        first = net.op("Relu", [net.op("Conv", [x, w])])
        both = net.op("Concat", [first, first], axis=1)
        w2 = net.const(rng.normal(0, 0.1, (64, 32, 1, 1)).astype(F32))
        net.output(net.op("Add", [net.op("Conv", [x, w2]), both]))
    with pytest.raises(codegen.UnsupportedError) as info:
        generate_sources(net.model(), Options())
    message = str(info.value)
    assert "float-initializer" in message and "Conv" in message, message
    assert "not reproduced" in message or "not\nreproduce" in message or \
        "does not reproduce" in message, message


def test_float_softmax_and_tanh() -> None:
    """Softmax rows of many lengths (the sum runs in 16 lanes), along the last axis, a
    middle axis and, before opset 13, over the flattened tail; Tanh."""
    net = Islands()
    for length in (1, 3, 10, 16, 17, 33, 100):
        net.output(net.op("Softmax", [net.activation((2, length), 0.11, 100)], axis=-1))
    net.output(net.op("Softmax", [net.activation((1, 5, 4, 3), 0.07, 128)], axis=1))
    net.output(net.op("Tanh", [net.activation((1, 4, 16, 16), 0.04, 128)]))
    exact(net.model(), samples=4)
    old = Islands()
    old.output(old.op("Softmax", [old.activation((2, 3, 4, 5), 0.09, 128)], axis=1))
    exact(old.model(opset=11), samples=4)


def test_float_log_softmax_and_exp() -> None:
    """LogSoftmax rows of many lengths (the row sum of Softmax, then glibc's logf of it),
    along a middle axis and, before opset 13, over the flattened tail; Exp from -102 to
    +102: subnormal results (one rounding, as vscalefps), and past 88.7 infinities."""
    net = Islands()
    for length in (1, 3, 16, 17, 100):
        net.output(net.op("LogSoftmax", [net.activation((2, length), 0.11, 100)], axis=-1))
    net.output(net.op("LogSoftmax", [net.activation((1, 5, 4, 3), 0.07, 128)], axis=1))
    net.output(net.op("Exp", [net.activation((1, 4, 8, 8), 0.8, 128)]))
    net.output(net.op("Exp", [net.activation((3, 7), 0.02, 90)]))
    exact(net.model(), samples=4)
    old = Islands()
    old.output(old.op("LogSoftmax", [old.activation((2, 3, 4, 5), 0.09, 128)], axis=1))
    exact(old.model(opset=11), samples=4)


def float_unary_islands() -> onnx.ModelProto:
    """Erf (GELU's: both branches of MLAS's kernel and its cap at 3.925), Sqrt (of
    negative values too: NaN), Neg, Abs and PRelu, each on a tensor that is not one
    dequantized tensor (a float product first), as decomposed LayerNorms, NNCF's GELU
    and 16-bit PReLU networks leave them."""
    net = Islands()
    for op, scale in (("Erf", 0.03), ("Sqrt", 0.2), ("Neg", 0.05), ("Abs", 0.05)):
        a = net.activation((2, 40), scale, 128)
        net.output(net.op(op, [net.op("Mul", [a, a])]))
        net.output(net.op(op, [net.op("Sub", [a, net.const(F32(1.1))])]))
    # PRelu with a slope per channel (ESPCN's, after a float convolution of 16-bit data).
    a = net.activation((1, 3, 4, 5), 0.05, 128)
    slope = net.const(np.array([0.25, -0.5, 1.5], F32).reshape(3, 1, 1))
    net.output(net.op("PRelu", [net.op("Mul", [a, a]), slope]))
    net.output(net.op("PRelu", [net.op("Sub", [a, net.const(F32(2.0))]), slope]))
    return net.model()


@pytest.mark.ort_kernels("fma3-activations")
def test_float_erf_sqrt_neg_abs() -> None:
    exact(float_unary_islands(), samples=4)


def test_float_pow_by_a_scalar() -> None:
    """Pow by scalar constants as ORT computes it: x * x, (x * x) * x, and glibc's powf
    for the rest (its FMA build), over negative bases too (NaN, or a sign)."""
    net = Islands()
    for exponent in (0.5, 1.7, -1.3, 2.0, 3.0, -3.0, 5.0):
        net.output(net.op("Pow", [net.activation((2, 13), 0.05, 100),
                                  net.const(F32(exponent))]))
    exact(net.model(), samples=3)


def test_float_pow_by_a_tensor_is_refused() -> None:
    net = Islands()
    net.output(net.op("Pow", [net.activation((2, 3), 0.05, 100),
                              net.const(np.array([0.5, 1.5, 2.5], F32))]))
    with pytest.raises(codegen.errors.FloatIslandError, match="scalar constant exponent"):
        codegen.verify(net.model(), samples=1)


@in_qemu
@pytest.mark.parametrize("board", ["cortex-m4f", "cortex-m0plus"])
def test_log_softmax_exp_and_pow_on_cortex_m(board: str) -> None:
    """logf's and powf's double-precision arithmetic in software (powf's fused
    multiply-adds by integers), the exponentials in single-precision hardware or
    software float, erf's fused multiply-adds, sqrtf: the same bits as ORT."""
    net = Islands()
    net.output(net.op("LogSoftmax", [net.activation((3, 21), 0.11, 100)], axis=-1))
    net.output(net.op("Exp", [net.activation((2, 9), 0.8, 128)]))
    net.output(net.op("Pow", [net.activation((2, 9), 0.05, 100), net.const(F32(-1.7))]))
    model = net.model()
    skip_where_ort_differs(model)
    assert codegen.verify(model, board=board, samples=1).ok
    unary = float_unary_islands()
    skip_where_ort_differs(unary)
    assert codegen.verify(unary, board=board, samples=1).ok


# (channels, height, width, kernel, stride, pads, ceil_mode, count_include_pad)
AVGPOOL_CASES = [
    (3, 9, 9, 3, 1, (1, 1, 1, 1), 0, 0),  # MLAS vector kernel
    (3, 9, 9, 3, 2, (1, 1, 1, 1), 0, 1),
    (2, 10, 11, 2, 2, (0, 1, 1, 0), 1, 0),  # ceil_mode: a window past the bottom edge
    (2, 7, 7, 3, 3, (1, 1, 1, 1), 0, 0),  # stride 3: the generic kernel
    (2, 8, 8, 8, 1, (0, 0, 0, 0), 0, 0),  # the whole plane: the global kernel
    (16, 6, 6, 3, 1, (1, 1, 1, 1), 0, 0),  # 16 channels: NCHWc
    (2, 7, 7, 3, 2, (1, 1, 1, 1), 1, 1),  # ceil_mode + count_include_pad: ORT's kernel
]


@pytest.mark.parametrize("opset", [13, 19])
def test_float_average_pools(opset: int) -> None:
    net = Islands()
    for c, h, w, k, s, pads, ceil, include in AVGPOOL_CASES:
        x = net.activation((1, c, h, w), 0.13, 7)
        net.output(net.op("AveragePool", [x], kernel_shape=[k, k], strides=[s, s],
                          pads=list(pads), ceil_mode=ceil, count_include_pad=include))
    for c in (16, 5):
        net.output(net.op("GlobalAveragePool", [net.activation((1, c, 7, 9), 0.17, 3)]))
    exact(net.model(opset=opset), samples=3)


def test_float_matmul_single_column() -> None:
    """A single column of B with several rows of A: ORT swaps the operands into its
    single-row kernel."""
    net = Islands()
    for rows, k in ((2, 16), (5, 37), (7, 300)):
        a = net.float_input((rows, k))
        y = net.op("MatMul", [a, net.weights((k, 1), 1)])
        q = net.op("QuantizeLinear", [y, net.const(F32(0.05)), net.const(np.uint8(128))])
        net.output(net.dq(q, F32(0.05), np.uint8(128)))
    exact(net.model())


def test_float_global_pool_follows_the_nchwc_layout() -> None:
    """GlobalAveragePool sums sequentially where ORT runs it in NCHWc layout: on a graph
    input, or after an NCHWc AveragePool (through Relu or Sigmoid); in four lanes
    after a DequantizeLinear or a Relu of a graph input."""
    net = Islands()
    net.output(net.op("GlobalAveragePool", [net.float_input((1, 16, 7, 9))]))
    net.output(net.op("GlobalAveragePool", [net.op("Relu", [net.float_input((1, 16, 5, 5))])]))
    for between in ("Relu", "Sigmoid"):
        pooled = net.op("AveragePool", [net.activation((1, 32, 8, 8))], kernel_shape=[3, 3],
                        pads=[1, 1, 1, 1])
        net.output(net.op("GlobalAveragePool", [net.op(between, [pooled])]))
    model = net.model()
    calls = generate_sources(model, Options()).program.calls
    sequential = [c.params.fields[2][1] for c in calls if c.function == "q8_global_avgpool_f32"]
    assert sequential == [1, 0, 1, 1]
    exact(model, samples=4)
