"""Each QDQ recipe on its own, on the smallest graph that shows it: the rule fires (or,
where ORT keeps the pattern in float, does not), and the result is bit-exact against
ORT at ORT_ENABLE_ALL (where this CPU's ORT runs the float kernels the C follows)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from conftest import SANITIZE, skip_where_ort_differs
from modelgen import graph_model
from numpy.typing import NDArray
from onnx import helper
from roundtrip import check_round_trip

import codegen
from codegen.options import Options
from codegen.pipeline import generate_sources

F32 = np.float32


class Net:
    """A tiny QDQ graph under construction: float input x [1, 4, 6, 6]."""

    def __init__(self, shape: tuple[int, ...] = (1, 4, 6, 6)) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.inits: dict[str, NDArray[Any]] = {}
        self.shape = shape
        self.n = 0

    def const(self, value: Any) -> str:
        self.n += 1
        name = f"c{self.n}"
        self.inits[name] = np.asarray(value)
        return name

    def op(self, op_type: str, inputs: list[str], name: str | None = None, **attrs: Any) -> str:
        self.n += 1
        out = name or f"t{self.n}"
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=out, **attrs))
        return out

    def q(self, x: str, scale: float, zp: int, dtype: Any = np.uint8) -> str:
        return self.op("QuantizeLinear", [x, self.const(F32(scale)), self.const(dtype(zp))])

    def dq(self, x: str, scale: Any, zp: Any, **attrs: Any) -> str:
        return self.op("DequantizeLinear", [x, self.const(scale), self.const(zp)], **attrs)

    def qdq(self, x: str, scale: float, zp: int, dtype: Any = np.uint8) -> str:
        return self.dq(self.q(x, scale, zp, dtype), F32(scale), dtype(zp))

    def weight(self, shape: tuple[int, ...], scale: float = 0.02) -> str:
        w = np.random.default_rng(self.n).integers(-100, 100, shape).astype(np.int8)
        return self.dq(self.const(w), F32(scale), np.int8(0))

    def model(self, y: str) -> onnx.ModelProto:
        self.nodes[-1].output[0] = "y"
        self.nodes[-1].name = self.nodes[-1].name
        return graph_model(self.nodes, {"x": ("float32", list(self.shape))}, {"y": "float32"},
                           self.inits, opset=13)


def rewrites(model: onnx.ModelProto, integer_only: bool = False) -> dict[str, list[str]]:
    return generate_sources(model, Options(integer_only=integer_only)).rewrites


def exact(model: onnx.ModelProto, integer_only: bool = False, samples: int = 4) -> None:
    """Bit-exact against ORT: on the model as given, or, with integer_only, on the model
    as `convert --integer-only` writes it (ORT runs the fused units it keeps in float
    there); the distance to ORT on the original model is reported for every output."""
    skip_where_ort_differs(model, integer_only=integer_only)
    report = codegen.verify(model, samples=samples, integer_only=integer_only,
                            cflags=SANITIZE)
    assert report.ok, report.outputs
    if integer_only:
        assert "as converted by onnx2mcu (--integer-only" in report.reference
        assert report.original is not None
        assert [d.name for d in report.original.outputs] == [o.name for o in report.outputs]
    else:
        assert report.original is None


def conv_unit(net: Net, x: str, out_scale: float, out_zp: int, activation: str | None = None,
              out_dtype: Any = np.uint8, **clip: float) -> str:
    """DQ'd x -> Conv (int8 weights, int32 bias) [-> activation] -> Q."""
    w = net.weight((4, 4, 3, 3))
    b = net.dq(net.const(np.arange(4, dtype=np.int32) * 50), F32(0.05 * 0.02), np.int32(0))
    y = net.op("Conv", [x, w, b], pads=[1, 1, 1, 1])
    if activation == "Relu":
        y = net.op("Relu", [y])
    elif activation == "Clip":
        y = net.op("Clip", [y, net.const(F32(clip["lo"])), net.const(F32(clip["hi"]))])
    return net.q(y, out_scale, out_zp, out_dtype)


def test_fold_constant_chains_and_fuse_conv() -> None:
    net = Net()
    x = net.qdq("x", 0.05, 128)
    w = net.const(np.random.default_rng(0).integers(-100, 100, (4, 4, 3, 3)).astype(np.int8))
    w = net.op("Clip", [w, net.const(np.int8(-7)), net.const(np.int8(7))])
    w = net.dq(w, F32(0.1), np.int8(0))
    y = net.q(net.op("Conv", [x, w], pads=[1, 1, 1, 1]), 0.2, 128)
    model = net.model(net.dq(y, F32(0.2), np.uint8(128)))
    fired = rewrites(model)
    assert fired["fold_constant_chains"] and fired["fuse_qdq_operators"]
    exact(model)


@pytest.mark.parametrize("same", [False, True])
def test_merge_double_qdq(same: bool) -> None:
    net = Net()
    y = net.q("x", 0.05, 100)
    y = net.dq(y, F32(0.05), np.uint8(100))
    y = net.q(y, 0.05 if same else 0.031, 100 if same else 40)
    model = net.model(net.dq(y, F32(0.05 if same else 0.031), np.uint8(100 if same else 40)))
    assert "merge_double_qdq" in rewrites(model)
    exact(model)


@pytest.mark.parametrize("layout", ["Reshape", "Flatten"])
def test_propagation_through_layout_ops(layout: str) -> None:
    net = Net()
    x = net.qdq("x", 0.05, 128)
    if layout == "Reshape":
        x = net.op("Reshape", [x, net.const(np.array([1, -1], np.int64))])
    else:
        x = net.op("Flatten", [x], axis=1)
    y = net.op("Gemm", [x, net.weight((5, 144)), net.dq(net.const(np.ones(5, np.int32)),
                                                          F32(0.05 * 0.02), np.int32(0))],
               transB=1)
    model = net.model(net.dq(net.q(y, 0.3, 120), F32(0.3), np.uint8(120)))
    if layout == "Reshape":  # ORT propagates the DQ through Reshape, and fuses a QGemm
        assert "propagate_qdq" in rewrites(model)
        exact(model)
    else:  # ...but not through Flatten: ORT computes that Gemm in float, and so do we
        kernels = [c.function for c in generate_sources(model, Options()).program.calls]
        assert "q8_gemm_f32" in kernels
        exact(model)
        assert "propagate_qdq_integer_only" in rewrites(model, integer_only=True)
        exact(model, integer_only=True, samples=2)


@pytest.mark.parametrize("activation,zp,clip,removed", [
    ("Relu", 0, {}, True), ("Relu", 1, {}, False),
    ("Clip", 0, {"lo": 0.0, "hi": 6.0, "scale": 0.02356}, True),
    ("Clip", 0, {"lo": 0.0, "hi": 6.0, "scale": 0.0236}, False),
    ("Clip", 1, {"lo": -0.02, "hi": 6.0, "scale": 0.0235}, True),
])
def test_redundant_activation_before_q(activation: str, zp: int, clip: dict[str, float],
                                       removed: bool) -> None:
    net = Net()
    x = net.qdq("x", 0.05, 128)
    scale = clip.pop("scale", 0.03)
    y = conv_unit(net, x, scale, zp, activation, **clip)
    model = net.model(net.dq(y, F32(scale), np.uint8(zp)))
    if removed:
        assert "drop_redundant_activations" in rewrites(model)
        exact(model)
    else:  # ORT keeps the activation, so the Conv stays in float there, and here
        assert "q8_conv_f32" in [c.function for c in
                                 generate_sources(model, Options()).program.calls]
        exact(model)
        assert "integer_activations" in rewrites(model, integer_only=True)
        exact(model, integer_only=True, samples=2)


@pytest.mark.parametrize("bias_scale,fused", [(0.05 * 0.02, True), (0.05 * 0.02 * 1.005, True),
                                              (0.05 * 0.02 * 2, False)])
def test_conv_bias_scale_tolerance(bias_scale: float, fused: bool) -> None:
    """ORT fuses when the bias scale is within 1% of x_scale * w_scale, using the raw
    int32 bias; beyond, the Conv stays float (integer-only rescales the bias)."""
    net = Net()
    x = net.qdq("x", 0.05, 128)
    b = net.dq(net.const(np.arange(4, dtype=np.int32) * 300), F32(bias_scale), np.int32(0))
    y = net.q(net.op("Conv", [x, net.weight((4, 4, 3, 3)), b], pads=[1, 1, 1, 1]), 0.2, 100)
    model = net.model(net.dq(y, F32(0.2), np.uint8(100)))
    if fused:
        exact(model)
    else:
        exact(model)  # a float Conv, as ORT computes it
        exact(model, integer_only=True, samples=2)


def test_verify_integer_only_reports_the_distance_to_the_original(tmp_path: Path) -> None:
    """verify --integer-only compares with ORT on the converted model (that decides the
    exit code) and reports, without failing, how far the result is from ORT on the
    original model: here a bias off the accumulator's scale by 37%, which ORT adds in
    float and --integer-only rounds to the accumulator's scale."""
    net = Net()
    x = net.qdq("x", 0.05, 128)
    b = net.dq(net.const(np.arange(4, dtype=np.int32) * 301 - 500), F32(0.05 * 0.02 * 1.37),
               np.int32(0))
    y = net.q(net.op("Conv", [x, net.weight((4, 4, 3, 3)), b], pads=[1, 1, 1, 1]), 0.02, 100)
    model = net.model(net.dq(y, F32(0.02), np.uint8(100)))
    onnx.save(model, tmp_path / "m.onnx")
    result = subprocess.run([sys.executable, "-m", "codegen.cli", "verify",
                             str(tmp_path / "m.onnx"), "--integer-only", "--samples", "4"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    # Where ORT's u8 x s8 products saturate, the line goes on to say how ORT runs it.
    assert "on the model as converted by onnx2mcu (--integer-only, QOperator)" in lines[0]
    block = lines.index("against ORT on the original model, its float islands computed in "
                        "float (informational, not part of the result):")
    distance = re.fullmatch(r"  y: (\d+) of 576 elements differ, at most (\d+) quantization "
                            r"steps?|  y: all 576 elements identical", lines[block + 1])
    assert distance is not None, lines[block + 1]
    assert lines[-1].startswith("result: BIT-EXACT (576 ")
    report = codegen.verify(model, samples=4, integer_only=True)
    assert report.ok and report.original is not None
    [o] = report.original.outputs
    # On this machine's ORT one element rounds the other way: reported, not failed.
    assert (distance.group(1) or "0") == str(o.mismatches) and o.mismatches <= 4
    assert o.max_steps == (int(distance.group(2)) if o.mismatches else 0) <= 1


@pytest.mark.parametrize("with_bias", [False, True])
def test_gemm_alpha(with_bias: bool) -> None:
    """alpha != 1 fuses into QGemm's alpha without a bias; with a bias ORT keeps float."""
    net = Net((2, 16))
    x = net.qdq("x", 0.05, 128)
    inputs = [x, net.weight((5, 16))]
    if with_bias:
        inputs.append(net.dq(net.const(np.ones(5, np.int32)), F32(0.001), np.int32(0)))
    y = net.op("Gemm", inputs, transB=1, alpha=0.5)
    model = net.model(net.dq(net.q(y, 0.1, 128), F32(0.1), np.uint8(128)))
    if with_bias:
        with pytest.raises(codegen.UnsupportedError, match="float island"):
            generate_sources(model, Options())
    else:
        exact(model)


@pytest.mark.parametrize("same", [True, False])
def test_maxpool_between_dq_and_q(same: bool) -> None:
    """With one quantization on both sides MaxPool runs on the integers; otherwise ORT
    computes it in float, and so does the generated C, exactly."""
    net = Net()
    x = net.qdq("x", 0.05, 128)
    y = net.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
    y = net.q(y, 0.05 if same else 0.07, 128 if same else 100)
    model = net.model(net.dq(y, F32(0.05 if same else 0.07), np.uint8(128 if same else 100)))
    gen = generate_sources(model, Options())
    kernels = [c.function for c in gen.program.calls]
    assert ("q8_maxpool_u8" in kernels) == same and ("q8_maxpool_f32" in kernels) != same
    exact(model)


@pytest.mark.parametrize("kind", ["same", "rescale", "retype"])
def test_dequantize_quantize_pairs(kind: str) -> None:
    net = Net()
    x = net.qdq("x", 0.05, 128)
    x = net.op("Relu", [x]) if kind == "retype" else x
    scale, zp, dtype = {"same": (0.05, 128, np.uint8), "rescale": (0.033, 90, np.uint8),
                        "retype": (0.04, -10, np.int8)}[kind]
    y = net.q(x, scale, zp, dtype)
    model = net.model(net.dq(y, F32(scale), dtype(zp)))
    gen = generate_sources(model, Options())
    kernels = [c.function for c in gen.program.calls]
    assert kernels[0] == "q8_quantize_linear_u8" and kernels[-1].startswith("q8_dequantize")
    # "rescale" is ORT's DoubleQDQPairsRemover case: the outer pair takes over both
    # ranges; a type change with a Relu between is a requantizing table, clamped.
    assert len(kernels) == (3 if kind == "retype" else 2), kernels
    assert not any(k.endswith("f32") for k in kernels)
    exact(model)


def test_int8_pair_to_uint8_lets_mixed_types_fuse(tmp_path: Path) -> None:
    """uint8 in, int8 out of a Conv: x86 ORT turns the int8 Q/DQ pair into uint8 (zero
    point + 128) and fuses the Conv; the recipe does the same (no value changes)."""
    net = Net()
    x = net.qdq("x", 0.05, 128)
    y = conv_unit(net, x, 0.2, -3, out_dtype=np.int8)
    y = net.dq(y, F32(0.2), np.int8(-3))
    y = net.op("Relu", [y])
    model = net.model(net.dq(net.q(y, 0.1, 0), F32(0.1), np.uint8(0)))
    assert "int8_pairs_to_uint8" in rewrites(model)
    exact(model)
    # Under ARM rules --integer-only fuses that unit as it is: uint8 in, int8 out, which
    # ORT has no QLinearConv for; convert writes it computed in uint8 and retyped.
    gen = generate_sources(model, Options(integer_only=True, qdq_rules="arm"))
    conv = next(n for n in gen.graph.nodes if n.op_type == "QLinearConv")
    assert [gen.graph.tensors[t].dtype for t in (conv.inputs[0], conv.outputs[0])] == [
        "uint8", "int8"]
    exact(model, integer_only=True, samples=2)
    check_round_trip(model, tmp_path, integer_only=True, qdq_rules="arm", samples=2)


@pytest.mark.parametrize("integer_only,qdq_rules", [(False, "arm"), (False, "x86"),
                                                    (True, "arm")])
def test_int8_activations_with_uint8_weights(integer_only: bool, qdq_rules: str,
                                             tmp_path: Path) -> None:
    """int8 activations times uint8 weights: ORT on ARM fuses the unit, but has no such
    QLinearConv for a QOperator model; convert writes the weights as int8 (w - 128,
    zero point - 128), the same products. x86 rules make the activations uint8."""
    net = Net()
    x = net.qdq("x", 0.05, 3, np.int8)
    w = np.random.default_rng(0).integers(0, 256, (4, 4, 3, 3)).astype(np.uint8)
    w = net.dq(net.const(w), F32(0.02), np.uint8(131))
    b = net.dq(net.const(np.arange(4, dtype=np.int32) * 50), F32(0.05 * 0.02), np.int32(0))
    y = net.q(net.op("Conv", [x, w, b], pads=[1, 1, 1, 1]), 0.2, -5, np.int8)
    model = net.model(net.dq(y, F32(0.2), np.int8(-5)))
    gen = generate_sources(model, Options(integer_only=integer_only, qdq_rules=qdq_rules))
    conv = next(n for n in gen.graph.nodes if n.op_type == "QLinearConv")
    assert [gen.graph.tensors[t].dtype for t in conv.inputs[0:4:3]] == [
        "uint8" if qdq_rules == "x86" else "int8", "uint8"]
    report = codegen.verify(model, samples=2, integer_only=integer_only, qdq_rules=qdq_rules)
    assert report.ok, report.outputs
    check_round_trip(model, tmp_path, integer_only=integer_only, qdq_rules=qdq_rules,
                     samples=2)


def test_products_without_a_quantize_after_them() -> None:
    """DQ(a), DQ(b) -> MatMul / Gemm with a float output: ORT still fuses them, into
    MatMulIntegerToFloat and a QGemm with float output."""
    for op, attrs in (("MatMul", {}), ("Gemm", {"transB": 1})):
        net = Net((3, 16))
        x = net.qdq("x", 0.05, 128)
        shape = (16, 8) if op == "MatMul" else (8, 16)
        inputs = [x, net.weight(shape)]
        if op == "Gemm":
            inputs.append(net.dq(net.const(np.arange(8, dtype=np.int32) * 40),
                                 F32(0.05 * 0.02), np.int32(0)))
        model = net.model(net.op(op, inputs, **attrs))
        kernels = [c.function for c in generate_sources(model, Options()).program.calls]
        assert kernels[-1] in ("q8_gemm_u8s8_f32", "q8_fc_u8_f32", "q8_fc_u8_w16_f32"), kernels
        exact(model)


@pytest.mark.parametrize("rank", [2, 3])
def test_matmul_add_becomes_gemm(rank: int) -> None:
    """MatMul + Add of a bias is a Gemm in ORT (MatMulAddFusion), so the product starts
    from the bias; with a QuantizeLinear after it, a QGemm."""
    shape = (2, 16) if rank == 2 else (2, 3, 16)
    for quantized in (False, True):
        net = Net(shape)
        x = net.qdq("x", 0.05, 128)
        y = net.op("MatMul", [x, net.weight((16, 8))])
        bias = net.dq(net.const(np.arange(8, dtype=np.int32) * 40), F32(0.05 * 0.02),
                      np.int32(0))
        y = net.op("Add", [y, bias])
        if quantized:
            y = net.dq(net.q(y, 0.1, 128), F32(0.1), np.uint8(128))
        model = net.model(y)
        fired = rewrites(model)
        assert "fuse_matmul_add" in fired
        exact(model)


def test_matmul_nbits_is_reproduced() -> None:
    """A float A times dequantized constant weights with nothing quantizing the result:
    ORT makes it a MatMulNBits (A quantized per block at run time), and so does
    onnx2mcu, bit-exact."""
    net = Net((2, 16))
    model = net.model(net.op("MatMul", ["x", net.weight((16, 8))]))
    calls = generate_sources(model, Options()).program.calls
    assert [c.function for c in calls] == ["q8_matmul_nbits_f32"]
    exact(model)


def ort_optimized_ops(model: onnx.ModelProto, tmp_path: Path) -> list[str]:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    ort.InferenceSession(model.SerializeToString(), options,
                         providers=["CPUExecutionProvider"])
    return [n.op_type for n in onnx.load(tmp_path / "optimized.onnx").graph.node]


# (op, A dequantized, what follows the product, does ORT make a MatMulNBits) as measured
# on ORT 1.32's optimized graph.
NBITS_CASES = [("MatMul", False, "Relu-Q", False), ("Gemm", False, "Relu-Q", False),
               ("Gemm", True, "Relu-Q", False), ("Gemm", True, "", False),
               ("MatMul", False, "Sigmoid-Q", True), ("Gemm", False, "", True)]


@pytest.mark.parametrize("op,a_dequantized,after,nbits", NBITS_CASES)
def test_matmul_nbits_only_where_ort_makes_one(op: str, a_dequantized: bool, after: str,
                                               nbits: bool, tmp_path: Path) -> None:
    """Dequantized constant weights times a float A: ORT's MatMulNBits rewrite happens
    unless A is dequantized too (its QDQ selectors take the unit) or the product is
    quantized through a Relu; onnx2mcu follows, bit-exact either way."""
    net = Net((3, 16))
    a = net.qdq("x", 0.05, 128) if a_dequantized else "x"
    y = net.op(op, [a, net.weight((16, 8))])
    for step in after.split("-") if after else []:
        y = net.dq(net.q(y, 0.1, 128), F32(0.1), np.uint8(128)) if step == "Q" else \
            net.op(step, [y])
    model = net.model(net.op("Identity", [y]))
    assert ("MatMulNBits" in ort_optimized_ops(model, tmp_path)) == nbits
    calls = [c.function for c in generate_sources(model, Options()).program.calls]
    assert ("q8_matmul_nbits_f32" in calls) == nbits
    exact(model)


def test_clamp_after_an_operator_costs_nothing() -> None:
    """A Relu/Clip left on the integers after QLinearConv (Brevitas' sandwich with one
    quantization on both sides) becomes the convolution's own output clamp."""
    net = Net()
    x = net.qdq("x", 0.05, 128)
    y = conv_unit(net, x, 0.2, 100)
    y = net.op("Relu", [net.dq(y, F32(0.2), np.uint8(100))])
    model = net.model(net.dq(net.q(y, 0.2, 100), F32(0.2), np.uint8(100)))
    calls = generate_sources(model, Options()).program.calls
    assert [c.function for c in calls] == [
        "q8_quantize_linear_u8", "q8_conv_u8_im2col_w16p_freq", "q8_dequantize_linear_u8"]
    requant = dict(calls[1].params.fields)["requant"]
    assert dict(requant.fields)["act_min"] == 100  # the zero point
    exact(model)


def test_identities_go_first_as_in_ort() -> None:
    """TorchScript shares one layer's bias with another through Identity(DQ(bias)) (two
    attention blocks with their default zero biases): ORT's IdentityElimination runs
    before the QDQ rules, so the second QGemm reads the dequantized bias too."""
    net = Net((2, 16))
    x = net.qdq("x", 0.05, 128)
    bias = net.dq(net.const(np.arange(8, dtype=np.int32) * 40), F32(0.05 * 0.02),
                  np.int32(0))
    shared = net.op("Identity", [bias])
    first = net.op("Gemm", [x, net.weight((16, 8)), bias])
    first = net.qdq(first, 0.1, 128)
    second = net.op("Gemm", [first, net.weight((8, 8)), shared])
    model = net.model(net.qdq(second, 0.1, 128))
    assert "eliminate_identities" in rewrites(model)
    exact(model)
