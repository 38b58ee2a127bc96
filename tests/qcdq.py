"""Hand-built QCDQ models in the style of Brevitas' export, made with onnx.helper (no
torch, no Brevitas): weights as int8 initializers -> Clip (narrow ranges, 4-bit values
in 8-bit containers) -> DequantizeLinear, int32 biases -> DequantizeLinear, activations
as QuantizeLinear -> Clip -> DequantizeLinear, Relu either between a Q/DQ pair and a Q
(the "Dequantize-ReLU-Quantize sandwich") or directly before a Q, MaxPool and
AveragePool layers, and a Gemm or MatMul head.

Activation scales come from a small calibration: the same network in float, run by ONNX
Runtime on random inputs, gives each activation's range.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from numpy.typing import NDArray
from onnx import TensorProto, helper, numpy_helper

F32 = np.float32
INPUT_SHAPE = (1, 3, 16, 16)


@dataclass(frozen=True)
class QcdqConfig:
    name: str
    w_bits: int = 8
    a_bits: int = 8
    signed_input: bool = True
    relu: str = "sandwich"  # "sandwich": Q -> DQ -> Relu -> Q; "before_q": Relu -> Q
    head: str = "gemm"  # or "matmul"
    flatten: str = "reshape"  # or "flatten_qdq": Flatten between a Q/DQ pair
    per_channel: bool = True
    signed_output: bool = False  # int8 after the head, fed by uint8: ORT keeps it in float
    seed: int = 0


QCDQ_CONFIGS = (
    QcdqConfig("w8a8_s8_sandwich"),
    QcdqConfig("w8a8_u8_before_q", signed_input=False, relu="before_q", flatten="flatten_qdq"),
    QcdqConfig("w4a8_u8_matmul", w_bits=4, signed_input=False, relu="before_q",
               head="matmul"),
    QcdqConfig("w4a4_u8_before_q", w_bits=4, a_bits=4, signed_input=False, relu="before_q",
               flatten="flatten_qdq"),
    QcdqConfig("w8a8_per_tensor_matmul", per_channel=False, head="matmul", seed=3),
    # uint8 into the head, int8 out of it: fused once x86's int8 -> uint8 conversion runs.
    QcdqConfig("w8a8_signed_head", signed_output=True, seed=5),
)
# A signed 4-bit sandwich: the Clip between Q and DQ keeps the int8 pair from becoming
# uint8, so the second Conv (uint8 in, int8 out) stays float in ORT, x86 and ARM alike.
FLOAT_ISLAND = QcdqConfig("w4a4_s8_sandwich", w_bits=4, a_bits=4)


def qrange(bits: int, signed: bool) -> tuple[int, int]:
    """Brevitas' integer ranges: narrow for signed weights handled by the caller."""
    return (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)


@dataclass
class Weights:
    float_value: NDArray[Any]
    q: NDArray[Any]  # int8
    scale: NDArray[Any]  # float32, per output channel or scalar
    bound: int  # symmetric narrow range: [-bound, bound]
    axis: int


def quantize_weights(w: NDArray[Any], bits: int, per_channel: bool, axis: int) -> Weights:
    bound = 2 ** (bits - 1) - 1
    reduce = tuple(i for i in range(w.ndim) if i != axis)
    peak = np.abs(w).max(axis=reduce) if per_channel else np.abs(w).max()
    scale = (np.maximum(peak, 1e-6) / bound).astype(F32)
    shape = [1] * w.ndim
    if per_channel:
        shape[axis] = -1
    q = np.clip(np.rint(w / scale.reshape(shape)), -bound, bound).astype(np.int8)
    return Weights(w, q, scale, bound, axis)


class Builder:
    """Accumulates nodes and initializers; names are unique by construction."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.count = 0

    def name(self, base: str) -> str:
        self.count += 1
        return f"{base}_{self.count}"

    def const(self, base: str, value: NDArray[Any]) -> str:
        name = self.name(base)
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(self, op: str, inputs: list[str], **attrs: Any) -> str:
        out = self.name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def qcdq(self, x: str, scale: float, zp: int, bits: int, signed: bool) -> str:
        """QuantizeLinear -> (Clip to a narrower range) -> DequantizeLinear."""
        dtype = np.int8 if signed else np.uint8
        q = self.node("QuantizeLinear", [x, self.const("s", np.array(scale, F32)),
                                         self.const("z", np.array(zp, dtype))])
        if bits < 8:
            lo, hi = qrange(bits, signed)
            q = self.node("Clip", [q, self.const("lo", np.array(lo, dtype)),
                                   self.const("hi", np.array(hi, dtype))])
        return self.node("DequantizeLinear", [q, self.const("s", np.array(scale, F32)),
                                              self.const("z", np.array(zp, dtype))])

    def weight(self, w: Weights) -> str:
        """int8 initializer -> Clip to the narrow range -> DequantizeLinear."""
        q = self.const("w", w.q)
        q = self.node("Clip", [q, self.const("wlo", np.array(-w.bound, np.int8)),
                               self.const("whi", np.array(w.bound, np.int8))])
        attrs = {"axis": w.axis} if w.scale.size > 1 else {}
        return self.node("DequantizeLinear", [q, self.const("ws", w.scale),
                                              self.const("wz", np.zeros_like(w.scale,
                                                                             np.int8))],
                         **attrs)

    def bias(self, b: NDArray[Any], x_scale: float, w: Weights) -> str:
        scale = (F32(x_scale) * w.scale).astype(F32)
        q = np.rint(b / scale).astype(np.int32)
        return self.node("DequantizeLinear", [self.const("b", q), self.const("bs", scale)],
                         **({"axis": 0} if scale.size > 1 else {}))


def float_weights(seed: int, head: str) -> dict[str, NDArray[Any]]:
    rng = np.random.default_rng(seed)
    w3_shape = (10, 256) if head == "gemm" else (256, 10)
    return {
        "w1": rng.normal(0, np.sqrt(2 / 27), (8, 3, 3, 3)).astype(F32),
        "b1": rng.normal(0, 0.1, 8).astype(F32),
        "w2": rng.normal(0, np.sqrt(2 / 72), (16, 8, 3, 3)).astype(F32),
        "b2": rng.normal(0, 0.1, 16).astype(F32),
        "w3": rng.normal(0, np.sqrt(1 / 256), w3_shape).astype(F32),
        "b3": rng.normal(0, 0.1, 10).astype(F32),
    }


def float_network(w: dict[str, NDArray[Any]], head: str) -> onnx.ModelProto:
    """The float network, with every activation the QCDQ model quantizes as an output."""
    b = Builder()
    x = "input"
    c1 = b.node("Conv", [x, b.const("w1", w["w1"]), b.const("b1", w["b1"])], pads=[1] * 4)
    r1 = b.node("Relu", [c1])
    p1 = b.node("MaxPool", [r1], kernel_shape=[2, 2], strides=[2, 2])
    c2 = b.node("Conv", [p1, b.const("w2", w["w2"]), b.const("b2", w["b2"])], pads=[1] * 4)
    r2 = b.node("Relu", [c2])
    p2 = b.node("AveragePool", [r2], kernel_shape=[2, 2], strides=[2, 2])
    flat = b.node("Reshape", [p2, b.const("shape", np.array([1, -1], np.int64))])
    if head == "gemm":
        y = b.node("Gemm", [flat, b.const("w3", w["w3"]), b.const("b3", w["b3"])], transB=1)
    else:
        y = b.node("MatMul", [flat, b.const("w3", w["w3"])])
    outputs = {"c1": c1, "r1": r1, "c2": c2, "r2": r2, "p2": p2, "y": y}
    graph = helper.make_graph(
        b.nodes, "float", [helper.make_tensor_value_info(x, TensorProto.FLOAT, INPUT_SHAPE)],
        [helper.make_tensor_value_info(v, TensorProto.FLOAT, None) for v in outputs.values()],
        b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    model.metadata_props.add(key="outputs", value=",".join(outputs))
    return model


def calibrate(w: dict[str, NDArray[Any]], head: str, seed: int) -> dict[str, float]:
    """The largest magnitude of each activation over 16 random inputs."""
    model = float_network(w, head)
    names = model.metadata_props[0].value.split(",")
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(seed + 100)
    peaks = dict.fromkeys(names, 0.0)
    for _ in range(16):
        x = rng.uniform(-1, 1, INPUT_SHAPE).astype(F32)
        for name, value in zip(names, session.run(None, {"input": x}), strict=True):
            peaks[name] = max(peaks[name], float(np.abs(value).max()))
    return peaks


def act_params(peak: float, bits: int, signed: bool) -> tuple[float, int]:
    return float(F32(max(peak, 1e-3) / qrange(bits, signed)[1])), 0


def build_qcdq(cfg: QcdqConfig) -> onnx.ModelProto:
    w = float_weights(cfg.seed, cfg.head)
    peaks = calibrate(w, cfg.head, cfg.seed)
    b = Builder()
    s_in, z_in = (float(F32(1 / (2 ** (cfg.a_bits - 1) - 1))), 0) if cfg.signed_input else (
        float(F32(2 / (2**cfg.a_bits - 1))), 2 ** (cfg.a_bits - 1))
    x = b.qcdq("input", s_in, z_in, cfg.a_bits, cfg.signed_input)

    def conv_block(x: str, x_scale: float, wname: str, bname: str, key: str) -> tuple[str, float]:
        weights = quantize_weights(w[wname], cfg.w_bits, cfg.per_channel, 0)
        conv = b.node("Conv", [x, b.weight(weights), b.bias(w[bname], x_scale, weights)],
                      pads=[1] * 4)
        out_scale, _ = act_params(peaks[f"r{key}"], cfg.a_bits, False)
        if cfg.relu == "sandwich":
            s, z = act_params(peaks[f"c{key}"], cfg.a_bits, True)
            conv = b.node("Relu", [b.qcdq(conv, s, z, cfg.a_bits, True)])
        else:
            conv = b.node("Relu", [conv])
        return b.qcdq(conv, out_scale, 0, cfg.a_bits, False), out_scale

    x, s1 = conv_block(x, s_in, "w1", "b1", "1")
    x = b.node("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
    x, _ = conv_block(x, s1, "w2", "b2", "2")
    sp, _ = act_params(peaks["p2"], cfg.a_bits, False)
    x = b.qcdq(b.node("AveragePool", [x], kernel_shape=[2, 2], strides=[2, 2]), sp, 0,
               cfg.a_bits, False)
    if cfg.flatten == "reshape":
        x = b.node("Reshape", [x, b.const("shape", np.array([1, -1], np.int64))])
    else:
        x = b.qcdq(b.node("Flatten", [x], axis=1), sp, 0, cfg.a_bits, False)
    if cfg.head == "gemm":
        w3 = quantize_weights(w["w3"], cfg.w_bits, cfg.per_channel, 0)
        y = b.node("Gemm", [x, b.weight(w3), b.bias(w["b3"], sp, w3)], transB=1)
    else:
        w3 = quantize_weights(w["w3"], cfg.w_bits, cfg.per_channel, 1)
        y = b.node("MatMul", [x, b.weight(w3)])
    sy, zy = act_params(peaks["y"], cfg.a_bits, cfg.signed_output)
    if not cfg.signed_output:  # the logits are signed: a uint8 output is offset
        zy = 2 ** (cfg.a_bits - 1)
        sy = float(F32(2 * sy))
    y = b.qcdq(y, sy, zy, cfg.a_bits, cfg.signed_output)
    b.nodes[-1].output[0] = "output"
    graph = helper.make_graph(
        b.nodes, cfg.name, [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                                          INPUT_SHAPE)],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 10])], b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


@functools.cache
def qcdq_model_bytes(name: str) -> bytes:
    cfg = next(c for c in (*QCDQ_CONFIGS, FLOAT_ISLAND) if c.name == name)
    data: bytes = build_qcdq(cfg).SerializeToString()
    return data


def qcdq_model(name: str) -> onnx.ModelProto:
    return onnx.load_from_string(qcdq_model_bytes(name))
