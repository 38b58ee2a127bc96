"""Plain ONNX operators on 8-bit tensors against ONNX Runtime: MaxPool, Relu, Clip,
Transpose, and the layout-only Reshape/Flatten/Squeeze/Unsqueeze/Identity, which must
cost no copy."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import SANITIZE
from modelgen import graph_model
from onnx import helper

import codegen
from codegen.options import Options
from codegen.pipeline import generate_sources


def random_maxpool(rng: np.random.Generator, i: int) -> tuple[helper.NodeProto, dict]:
    ndim = int(rng.choice([1, 2]))
    dtype = str(rng.choice(["uint8", "int8"]))
    while True:
        kernel = [int(k) for k in rng.integers(1, 4, ndim)]
        strides = [int(s) for s in rng.integers(1, 4, ndim)]
        dil = [int(d) for d in rng.choice([1, 1, 2], ndim)]
        spatial = [int(v) for v in rng.integers(2, 12, ndim)]
        pads = [int(p) for p in rng.integers(0, 2, 2 * ndim)]
        # ONNX requires pads smaller than the kernel.
        pads = [min(p, kernel[j % ndim] - 1) for j, p in enumerate(pads)]
        dk = [dil[j] * (kernel[j] - 1) + 1 for j in range(ndim)]
        if all(spatial[j] + pads[j] + pads[ndim + j] >= dk[j] for j in range(ndim)):
            break
    attrs: dict[str, object] = {"kernel_shape": kernel, "strides": strides}
    mode = rng.choice(["pads", "same_upper", "same_lower", "valid"], p=[0.7, 0.1, 0.1, 0.1])
    if mode == "pads":
        attrs["pads"] = pads
        attrs["dilations"] = dil
        attrs["ceil_mode"] = int(rng.integers(0, 2))
    else:
        attrs["auto_pad"] = str(mode).upper()
    shape = [int(rng.integers(1, 3)), int(rng.integers(1, 4)), *spatial]
    node = helper.make_node("MaxPool", [f"x{i}"], [f"y{i}"], name=f"pool{i}", **attrs)
    return node, {f"x{i}": (dtype, shape)}


@pytest.mark.parametrize("chunk", range(4))
def test_random_maxpool(chunk: int) -> None:
    rng = np.random.default_rng(100 + chunk)
    nodes, inputs = [], {}
    for i in range(25):
        node, inp = random_maxpool(rng, i)
        nodes.append(node)
        inputs.update(inp)
    outputs = {f"y{i}": inputs[f"x{i}"][0] for i in range(25)}
    model = graph_model(nodes, inputs, outputs, opset=12)
    report = codegen.verify(model, samples=2, seed=chunk, cflags=SANITIZE)
    assert report.ok, [(n.name, n.attribute) for n, o in zip(nodes, report.outputs, strict=True)
                       if o.mismatches]


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_relu_and_clip(dtype: str) -> None:
    lo, hi = (-100, 50) if dtype == "int8" else (20, 200)
    nodes = [helper.make_node("Clip", ["x", "lo", "hi"], ["c"], name="clip"),
             helper.make_node("Clip", ["x", "", "hi"], ["c_max"], name="clip_max"),
             helper.make_node("Clip", ["x"], ["c_none"], name="clip_none")]
    outputs = {"c": dtype, "c_max": dtype, "c_none": dtype}
    if dtype == "int8":
        nodes.append(helper.make_node("Relu", ["x"], ["r"], name="relu"))
        outputs["r"] = dtype
    model = graph_model(nodes, {"x": (dtype, [2, 3, 40])}, outputs,
                        {"lo": np.array(lo, dtype), "hi": np.array(hi, dtype)}, opset=14)
    assert codegen.verify(model, samples=3, cflags=SANITIZE).ok


@pytest.mark.parametrize("dtype", ["int16", "uint16"])
@pytest.mark.parametrize("op", ["Relu", "Clip"])
def test_16bit_relu_and_clip_between_quantizers(dtype: str, op: str) -> None:
    """Q16 -> DQ -> Relu/Clip -> Q16 (one quantization) -> DQ with nothing before it to
    absorb it (AMD Quark's A16W8 DenseNet after a float Concat): the integer clamp alone,
    bit-exact with ORT's float Relu/Clip between the quantizers."""
    zero = 0 if dtype == "int16" else 30000
    bounds = ["lo", "hi"] if op == "Clip" else []
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"]),
             helper.make_node(op, ["d", *bounds], ["r"], name="act"),
             helper.make_node("QuantizeLinear", ["r", "s", "z"], ["rq"]),
             helper.make_node("DequantizeLinear", ["rq", "s", "z"], ["y"])]
    constants = {"s": np.array(0.001, np.float32), "z": np.array(zero, dtype),
                 "lo": np.array(-0.5, np.float32), "hi": np.array(6.0, np.float32)}
    model = graph_model(nodes, {"x": ("float32", [2, 3, 40])}, {"y": "float32"},
                        constants, opset=21)
    graph = generate_sources(model, Options()).graph
    assert [n.op_type for n in graph.nodes if n.op_type in ("Relu", "Clip")] == ["Clip"]
    assert codegen.verify(model, samples=3, cflags=SANITIZE).ok
    assert codegen.verify(model, samples=2, integer_only=True).ok


LAYOUT_CASES = {
    "reshape": ([helper.make_node("Reshape", ["x", "shape"], ["y"])],
                {"shape": np.array([0, -1, 4], np.int64)}, 14),
    "reshape_allowzero": ([helper.make_node("Reshape", ["x", "shape"], ["y"], allowzero=1)],
                          {"shape": np.array([2, 3, 20], np.int64)}, 14),
    "flatten": ([helper.make_node("Flatten", ["x"], ["y"], axis=2)], {}, 13),
    "flatten_neg": ([helper.make_node("Flatten", ["x"], ["y"], axis=-1)], {}, 13),
    "squeeze_unsqueeze_13": ([helper.make_node("Unsqueeze", ["x", "ax"], ["u"]),
                              helper.make_node("Squeeze", ["u", "ax"], ["y"])],
                             {"ax": np.array([0, 3], np.int64)}, 13),
    "squeeze_unsqueeze_11": ([helper.make_node("Unsqueeze", ["x"], ["u"], axes=[1, -1]),
                              helper.make_node("Squeeze", ["u"], ["y"], axes=[1])], {}, 11),
    "identity": ([helper.make_node("Identity", ["x"], ["y"])], {}, 13),
    "transpose": ([helper.make_node("Transpose", ["x"], ["y"], perm=[2, 0, 1])], {}, 13),
    "transpose_default": ([helper.make_node("Transpose", ["x"], ["y"])], {}, 13),
}


@pytest.mark.parametrize("case", sorted(LAYOUT_CASES))
@pytest.mark.parametrize("dtype", ["uint8", "float32"])
def test_layout_ops(case: str, dtype: str) -> None:
    nodes, inits, opset = LAYOUT_CASES[case]
    model = graph_model(nodes, {"x": (dtype, [2, 3, 20])}, {"y": dtype}, inits, opset=opset)
    assert codegen.verify(model, samples=2, cflags=SANITIZE).ok


def test_layout_ops_between_kernels_cost_no_copy() -> None:
    """Clip -> Reshape -> Squeeze -> Transpose(size-1 axis) -> Clip: the middle three are
    aliases of the first Clip's output, and the arena holds one tensor."""
    nodes = [helper.make_node("Clip", ["x", "lo"], ["a"]),
             helper.make_node("Reshape", ["a", "shape"], ["b"]),
             helper.make_node("Squeeze", ["b", "ax"], ["c"]),
             helper.make_node("Transpose", ["c"], ["d"], perm=[1, 0, 2]),
             helper.make_node("Clip", ["d", "lo"], ["y"])]
    model = graph_model(nodes, {"x": ("int8", [2, 3, 20])}, {"y": "int8"},
                        {"lo": np.array(-5, np.int8), "shape": np.array([1, 6, 1, 20], np.int64),
                         "ax": np.array([0], np.int64)}, opset=13)
    gen = generate_sources(model, Options())
    assert [c.function for c in gen.program.calls] == ["q8_clamp_s8", "q8_clamp_s8"]
    assert gen.plan.size == 120
    assert codegen.verify(model, samples=2, cflags=SANITIZE).ok
