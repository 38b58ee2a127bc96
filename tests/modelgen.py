"""Builders for the small ONNX models the tests run through onnx2mcu and ONNX Runtime."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from numpy.typing import NDArray
from onnx import TensorProto, helper, numpy_helper

ONNX_TYPE = {"uint8": TensorProto.UINT8, "int8": TensorProto.INT8, "float32": TensorProto.FLOAT,
             "uint16": TensorProto.UINT16, "int16": TensorProto.INT16,
             "int32": TensorProto.INT32, "int64": TensorProto.INT64}
RANGE = {"uint8": (0, 255), "int8": (-128, 127)}
RANGE16 = {"uint16": (0, 65535), "int16": (-32768, 32767)}


def make_model(nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto],
               outputs: list[onnx.ValueInfoProto], initializers: list[onnx.TensorProto],
               opset: int = 13, name: str = "test",
               extra_domains: tuple[str, ...] = ()) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, name, inputs, outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)] + [
        helper.make_opsetid(d, 1) for d in extra_domains])
    model.ir_version = min(model.ir_version, 9)
    onnx.checker.check_model(model)
    return model


@dataclass
class ConvConfig:
    """One randomized QLinearConv: everything needed to build it."""

    x_dtype: str
    w_dtype: str
    batch: int
    channels: int
    out_channels: int
    spatial: tuple[int, ...]  # (W,) for 1-D, (H, W) for 2-D
    kernel: tuple[int, ...]
    group: int
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    pads: tuple[int, ...] | None
    auto_pad: str | None
    per_channel: bool
    bias: bool
    big_bias: bool
    kernel_shape_attr: bool
    seed: int
    arrays: dict[str, NDArray[Any]] = field(default_factory=dict)

    def describe(self) -> str:
        return (f"x={self.x_dtype} w={self.w_dtype} N={self.batch} C={self.channels} "
                f"M={self.out_channels} in={self.spatial} k={self.kernel} g={self.group} "
                f"s={self.strides} d={self.dilations} pads={self.pads} auto_pad={self.auto_pad} "
                f"per_channel={self.per_channel} bias={self.bias} big_bias={self.big_bias}")


def _out_size(size: int, k: int, s: int, d: int, p0: int, p1: int) -> int:
    return (size + p0 + p1 - (d * (k - 1) + 1)) // s + 1


def random_conv_config(rng: np.random.Generator, seed: int) -> ConvConfig:
    one_d = rng.random() < 0.25
    ndim = 1 if one_d else 2
    x_dtype = str(rng.choice(["uint8", "int8"]))
    # ORT runs int8 activations only with int8 weights.
    w_dtype = str(rng.choice(["int8", "uint8"])) if x_dtype == "uint8" else "int8"
    kind = rng.choice(["dense", "grouped", "depthwise"], p=[0.5, 0.2, 0.3])
    if kind == "dense":
        group = 1
        channels = int(rng.integers(1, 9))
        out_channels = int(rng.integers(1, 9))
    elif kind == "grouped":
        group = int(rng.integers(2, 4))
        channels = group * int(rng.integers(1, 4))
        out_channels = group * int(rng.integers(1, 4))
    else:
        channels = int(rng.integers(1, 9))
        group = channels
        out_channels = channels * int(rng.choice([1, 1, 2, 3]))
    while True:
        kernel = tuple(int(k) for k in rng.integers(1, 6, size=ndim))
        strides = tuple(int(s) for s in rng.choice([1, 1, 2, 3], size=ndim))
        dilations = tuple(int(d) for d in rng.choice([1, 1, 2, 3], size=ndim))
        spatial = tuple(int(v) for v in rng.integers(1, 14, size=ndim))
        auto_pad = rng.choice([None, None, "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"])
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            dilations = (1,) * ndim  # ORT rejects SAME with dilation
        pads = None
        if auto_pad in (None, "NOTSET"):
            pads = tuple(int(p) for p in rng.integers(0, 4, size=2 * ndim))
            sizes = [_out_size(spatial[i], kernel[i], strides[i], dilations[i], pads[i],
                               pads[ndim + i]) for i in range(ndim)]
        elif auto_pad == "VALID":
            sizes = [_out_size(spatial[i], kernel[i], strides[i], dilations[i], 0, 0)
                     for i in range(ndim)]
        else:
            sizes = [1]
        if min(sizes) >= 1:
            break
    return ConvConfig(
        x_dtype=x_dtype, w_dtype=w_dtype, batch=int(rng.choice([1, 1, 1, 2, 3])),
        channels=channels, out_channels=out_channels, spatial=spatial, kernel=kernel,
        group=group, strides=strides, dilations=dilations, pads=pads,
        auto_pad=None if auto_pad is None else str(auto_pad),
        per_channel=bool(rng.random() < 0.6), bias=bool(rng.random() < 0.7),
        big_bias=bool(rng.random() < 0.2), kernel_shape_attr=bool(rng.random() < 0.5),
        seed=seed)


def conv_nodes(cfg: ConvConfig, prefix: str, x_name: str, y_name: str) -> tuple[
        list[onnx.NodeProto], list[onnx.TensorProto]]:
    """The QLinearConv node of `cfg` and its initializers, with tensor names under prefix."""
    rng = np.random.default_rng(cfg.seed)
    m, cpg = cfg.out_channels, cfg.channels // cfg.group
    w_lo, w_hi = RANGE[cfg.w_dtype]
    w = rng.integers(w_lo, w_hi + 1, size=(m, cpg, *cfg.kernel)).astype(cfg.w_dtype)
    x_lo, x_hi = RANGE[cfg.x_dtype]
    x_zp = int(rng.integers(x_lo, x_hi + 1))
    w_zp_value = int(rng.choice([0, 0, int(rng.integers(w_lo, w_hi + 1))]))
    if cfg.w_dtype == "uint8" and rng.random() < 0.5:
        w_zp_value = 128
    x_scale = np.float32(rng.uniform(0.002, 0.05))
    if cfg.per_channel:
        w_scale = rng.uniform(0.0005, 0.02, size=m).astype(np.float32)
        w_zp = np.full(m, w_zp_value, dtype=cfg.w_dtype)
    else:
        w_scale = np.array(rng.uniform(0.0005, 0.02), dtype=np.float32)
        w_zp = np.array(w_zp_value, dtype=cfg.w_dtype)
    taps = cpg * int(np.prod(cfg.kernel))
    # Aim the requantized values at a spread of about 60 levels so that rounding matters.
    acc_spread = 140.0 * 70.0 * np.sqrt(taps)
    bias_values = None
    if cfg.bias:
        bound = 2**26 if cfg.big_bias else int(acc_spread)
        bias_values = rng.integers(-bound, bound + 1, size=m).astype(np.int32)
        if cfg.big_bias:
            acc_spread = float(bound)
    target = 60.0 / acc_spread
    y_scale = np.float32(float(x_scale) * float(np.mean(w_scale)) / target)
    y_lo, y_hi = RANGE[cfg.x_dtype]
    y_zp = int(rng.integers(y_lo + 40, y_hi - 40))
    names = [f"{prefix}_{n}" for n in ("xs", "xz", "w", "ws", "wz", "ys", "yz")]
    inits = [
        numpy_helper.from_array(np.array(x_scale, dtype=np.float32), names[0]),
        numpy_helper.from_array(np.array(x_zp, dtype=cfg.x_dtype), names[1]),
        numpy_helper.from_array(w, names[2]),
        numpy_helper.from_array(w_scale, names[3]),
        numpy_helper.from_array(w_zp, names[4]),
        numpy_helper.from_array(np.array(y_scale, dtype=np.float32), names[5]),
        numpy_helper.from_array(np.array(y_zp, dtype=cfg.x_dtype), names[6]),
    ]
    inputs = [x_name, *names]
    if bias_values is not None:
        inits.append(numpy_helper.from_array(bias_values, f"{prefix}_b"))
        inputs.append(f"{prefix}_b")
    attrs: dict[str, Any] = {"strides": list(cfg.strides)}
    if cfg.group != 1 or cfg.seed % 2:
        attrs["group"] = cfg.group
    if cfg.auto_pad in ("SAME_UPPER", "SAME_LOWER", "VALID"):
        attrs["auto_pad"] = cfg.auto_pad
    else:
        attrs["dilations"] = list(cfg.dilations)
        if cfg.pads is not None and (any(cfg.pads) or cfg.seed % 3 == 0):
            attrs["pads"] = list(cfg.pads)
        if cfg.auto_pad == "NOTSET":
            attrs["auto_pad"] = "NOTSET"
    if cfg.kernel_shape_attr:
        attrs["kernel_shape"] = list(cfg.kernel)
    node = helper.make_node("QLinearConv", inputs, [y_name], name=f"{prefix}_conv", **attrs)
    return [node], inits


def conv_batch_model(configs: list[ConvConfig]) -> onnx.ModelProto:
    """One model holding several independent QLinearConvs, one input and output each."""
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []
    inputs, outputs = [], []
    for i, cfg in enumerate(configs):
        x_name, y_name = f"x{i}", f"y{i}"
        n, i_ = conv_nodes(cfg, f"c{i}", x_name, y_name)
        nodes += n
        inits += i_
        inputs.append(helper.make_tensor_value_info(
            x_name, ONNX_TYPE[cfg.x_dtype], [cfg.batch, cfg.channels, *cfg.spatial]))
        outputs.append(helper.make_tensor_value_info(
            y_name, ONNX_TYPE[cfg.x_dtype], [None] * (2 + len(cfg.spatial))))
    return make_model(nodes, inputs, outputs, inits, opset=13, name="conv_batch")


def qdq_model(op: str, x_dtype: str, y_dtype: str, shape: tuple[int, ...],
              scale: NDArray[Any], zero_point: NDArray[Any] | None,
              axis: int | None, opset: int, domain: str = "") -> onnx.ModelProto:
    """A single QuantizeLinear or DequantizeLinear with constant parameters (`domain`
    com.microsoft: ORT's contrib operator)."""
    inits = [numpy_helper.from_array(np.asarray(scale, dtype=np.float32), "scale")]
    inputs = ["x", "scale"]
    if zero_point is not None:
        inits.append(numpy_helper.from_array(np.asarray(zero_point), "zero_point"))
        inputs.append("zero_point")
    attrs = {} if axis is None else {"axis": axis}
    node = helper.make_node(op, inputs, ["y"], name=op.lower(), domain=domain, **attrs)
    model = make_model(
        [node], [helper.make_tensor_value_info("x", ONNX_TYPE[x_dtype], list(shape))],
        [helper.make_tensor_value_info("y", ONNX_TYPE[y_dtype], list(shape))], inits,
        opset=opset, name=op.lower(), extra_domains=(domain,) if domain else ())
    return model


def graph_model(nodes: list[onnx.NodeProto], inputs: dict[str, tuple[str, list[int]]],
                outputs: dict[str, str], initializers: dict[str, NDArray[Any]] | None = None,
                opset: int = 13, ms_domain: bool = False) -> onnx.ModelProto:
    """A model from nodes, {input: (dtype, shape)}, {output: dtype} and constant arrays.
    Output shapes are left open (onnx2mcu infers them)."""
    graph = helper.make_graph(
        nodes, "test",
        [helper.make_tensor_value_info(n, ONNX_TYPE[d], s) for n, (d, s) in inputs.items()],
        [helper.make_tensor_value_info(n, ONNX_TYPE[d], None) for n, d in outputs.items()],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in (initializers or {}).items()])
    opsets = [helper.make_opsetid("", opset)]
    if ms_domain:
        opsets.append(helper.make_opsetid("com.microsoft", 1))
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 8
    return model


Case = tuple[onnx.NodeProto, dict[str, tuple[str, list[int]]], dict[str, NDArray[Any]],
             dict[str, str]]


def combine(cases: list[Case], opset: int = 13, ms_domain: bool = True) -> onnx.ModelProto:
    """One model holding several independent single-node cases, each a
    (node, inputs, initializers, outputs) tuple with its own tensor names."""
    inputs: dict[str, tuple[str, list[int]]] = {}
    inits: dict[str, NDArray[Any]] = {}
    outputs: dict[str, str] = {}
    for _, case_inputs, case_inits, case_outputs in cases:
        inputs.update(case_inputs)
        inits.update(case_inits)
        outputs.update(case_outputs)
    return graph_model([c[0] for c in cases], inputs, outputs, inits, opset, ms_domain)


def conv_model(x_shape: list[int | str] | None = None, w_as_input: bool = False,
               extra_attrs: dict[str, object] | None = None, opset: int = 13,
               drop: str | None = None) -> onnx.ModelProto:
    """QuantizeLinear -> QLinearConv -> DequantizeLinear, with knobs to break it."""
    rng = np.random.default_rng(0)
    x_shape = x_shape or [1, 2, 6, 6]
    inits = {
        "s": np.array(0.05, np.float32), "z": np.array(128, np.uint8),
        "w": rng.integers(-50, 50, (3, 2, 3, 3)).astype(np.int8),
        "ws": np.array(0.01, np.float32), "wz": np.array(0, np.int8),
        "ys": np.array(0.1, np.float32),
        "yz": np.array(100, np.uint8),
    }
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)]
    if w_as_input:
        del inits["w"]
        inputs.append(helper.make_tensor_value_info("w", TensorProto.INT8, [3, 2, 3, 3]))
    if drop:
        del inits[drop]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="quant"),
        helper.make_node("QLinearConv", ["xq", "s", "z", "w", "ws", "wz", "ys", "yz"], ["yq"],
                         name="conv", **(extra_attrs or {})),
        helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"], name="dequant"),
    ]
    graph = helper.make_graph(nodes, "g", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model
