"""com.microsoft QLinearAdd, QLinearMul, QLinearSigmoid, QLinearLeakyRelu, QLinearConcat,
QLinearSoftmax and plain Concat against ONNX Runtime: broadcasting of every kind,
constant operands, omitted zero points, every 8-bit input value, both 8-bit types."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import SANITIZE
from modelgen import RANGE, graph_model
from numpy.typing import NDArray
from onnx import helper

import codegen

F32 = np.float32
SHAPE_PAIRS = [
    ((2, 3, 4, 5), (2, 3, 4, 5)), ((1, 3, 4, 5), (1, 3, 1, 1)), ((1, 3, 1, 1), (1, 3, 4, 5)),
    ((2, 3, 4, 5), ()), ((), (2, 3, 4, 5)), ((4, 5), (5,)), ((5,), (4, 5)), ((4, 1), (1, 5)),
    ((1, 5), (4, 1)), ((3, 1, 5), (3, 4, 1)), ((2, 3, 4, 5), (1,)), ((1,), (2, 3, 4, 1)),
    ((2, 1, 4, 5), (3, 1, 1)), ((7,), (7,)), ((1, 1), (1, 1)), ((6, 1), ()), ((), (1, 6)),
    ((33,), (1,)), ((2, 3, 17), (2, 3, 17)), ((1, 8, 3, 3), (8, 1, 1)),
]


def q8(rng: np.random.Generator, dtype: str, shape: Any) -> NDArray[Any]:
    lo, hi = RANGE[dtype]
    return rng.integers(lo, hi + 1, size=shape).astype(dtype)


def binary_model(op: str, seed: int) -> Any:
    rng = np.random.default_rng(seed)
    nodes, inputs, inits, outputs = [], {}, {}, {}
    for i, (sa, sb) in enumerate(SHAPE_PAIRS):
        p = f"e{i}_"
        dtype = str(rng.choice(["uint8", "int8"]))
        names = [f"{p}a", f"{p}as", f"{p}az", f"{p}b", f"{p}bs", f"{p}bz", f"{p}cs", f"{p}cz"]
        scales = rng.uniform(0.005, 0.1, 3).astype(F32)
        if op == "QLinearMul":
            scales[2] = scales[0] * scales[1] * rng.uniform(20, 200)
        inits.update({f"{p}as": np.array(scales[0]), f"{p}bs": np.array(scales[1]),
                      f"{p}cs": np.array(scales[2])})
        for zp in ("az", "bz", "cz"):
            # ORT's type inference fails when A's or B's zero point is omitted.
            if zp != "cz" or rng.random() < 0.8:
                inits[f"{p}{zp}"] = q8(rng, dtype, ())
            else:
                names[names.index(f"{p}{zp}")] = ""
        inputs[f"{p}a"] = (dtype, list(sa))
        if rng.random() < 0.3:
            inits[f"{p}b"] = q8(rng, dtype, sb)
        else:
            inputs[f"{p}b"] = (dtype, list(sb))
        while names[-1] == "":
            names.pop()
        nodes.append(helper.make_node(op, names, [f"{p}y"], name=f"{p}node",
                                      domain="com.microsoft"))
        outputs[f"{p}y"] = dtype
    return graph_model(nodes, inputs, outputs, inits, opset=13, ms_domain=True)


@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("requant", ["float", "int"])
def test_binary_ops(op: str, seed: int, requant: str) -> None:
    model = binary_model(op, seed)
    report = codegen.verify(model, samples=3, seed=seed, cflags=SANITIZE, requant=requant)
    assert report.ok, [(SHAPE_PAIRS[i], o) for i, o in enumerate(report.outputs) if o.mismatches]


def test_qlinear_add_without_the_vector_path() -> None:
    """The host's QLinearAdd takes AVX2 and FMA where the CPU has them (8 lanes of VFMADD),
    the tables otherwise: capped at SSE2 (Q8_PIX_ISA_MAX=1), the tables against ORT."""
    model = binary_model("QLinearAdd", 7)
    report = codegen.verify(model, samples=3, seed=7, cflags=(*SANITIZE, "-DQ8_PIX_ISA_MAX=1"))
    assert report.ok, [(SHAPE_PAIRS[i], o) for i, o in enumerate(report.outputs) if o.mismatches]


@pytest.mark.parametrize("op", ["QLinearSigmoid", "QLinearLeakyRelu"])
def test_table_ops_on_every_input_value(op: str) -> None:
    rng = np.random.default_rng(5)
    nodes, inputs, inits, outputs = [], {}, {}, {}
    for i in range(40):
        p = f"t{i}_"
        dtype = str(rng.choice(["uint8", "int8"]))
        xs = F32(rng.uniform(0.002, 0.2))
        ys = F32(rng.uniform(1 / 300, 1 / 100)) if op == "QLinearSigmoid" else F32(
            xs * rng.uniform(0.5, 2))
        inits.update({f"{p}xs": np.array(xs), f"{p}xz": q8(rng, dtype, ()),
                      f"{p}ys": np.array(ys), f"{p}yz": q8(rng, dtype, ())})
        attrs = {"alpha": float(rng.uniform(0.01, 0.5))} if op == "QLinearLeakyRelu" else {}
        nodes.append(helper.make_node(op, [f"{p}x", f"{p}xs", f"{p}xz", f"{p}ys", f"{p}yz"],
                                      [f"{p}y"], domain="com.microsoft", **attrs))
        inputs[f"{p}x"] = (dtype, [256])
        outputs[f"{p}y"] = dtype
    model = graph_model(nodes, inputs, outputs, inits, opset=13, ms_domain=True)
    every = {name: np.arange(256).astype(np.uint8).view(np.int8).astype(dt)
             if dt == "int8" else np.arange(256, dtype=np.uint8)
             for name, (dt, _) in inputs.items()}
    report = codegen.verify(model, inputs=every, cflags=SANITIZE)
    assert report.ok, [o for o in report.outputs if o.mismatches]


def test_qlinear_concat_and_concat() -> None:
    rng = np.random.default_rng(6)
    nodes, inputs, inits, outputs = [], {}, {}, {}
    for i in range(12):
        p = f"c{i}_"
        dtype = str(rng.choice(["uint8", "int8"]))
        shape = [2, 3, 4, 5]
        axis = int(rng.integers(-4, 4))
        ys, yz = F32(rng.uniform(0.01, 0.1)), q8(rng, dtype, ())
        inits.update({f"{p}ys": np.array(ys), f"{p}yz": yz})
        names = [f"{p}ys", f"{p}yz"]
        for j in range(int(rng.integers(1, 4))):
            x_shape = list(shape)
            x_shape[axis] = int(rng.integers(1, 4))
            same = rng.random() < 0.3
            inits[f"{p}s{j}"] = np.array(ys if same else F32(rng.uniform(0.01, 0.1)))
            inits[f"{p}z{j}"] = yz if same else q8(rng, dtype, ())
            inputs[f"{p}x{j}"] = (dtype, x_shape)
            names += [f"{p}x{j}", f"{p}s{j}", f"{p}z{j}"]
        nodes.append(helper.make_node("QLinearConcat", names, [f"{p}y"], axis=axis,
                                      domain="com.microsoft"))
        outputs[f"{p}y"] = dtype
    inputs["f0"], inputs["f1"] = ("float32", [2, 3]), ("float32", [2, 5])
    nodes.append(helper.make_node("Concat", ["f0", "f1", "f0"], ["fy"], axis=1))
    outputs["fy"] = "float32"
    model = graph_model(nodes, inputs, outputs, inits, opset=13, ms_domain=True)
    report = codegen.verify(model, samples=3, cflags=SANITIZE)
    assert report.ok, [o for o in report.outputs if o.mismatches]


@pytest.mark.parametrize("opset_attr", [12, 13])
@pytest.mark.parametrize("requant", ["float", "int"])
def test_qlinear_softmax(opset_attr: int, requant: str) -> None:
    rng = np.random.default_rng(opset_attr)
    nodes, inputs, inits, outputs = [], {}, {}, {}
    shapes = [(1, 10), (3, 7), (2, 3, 5), (2, 4, 3, 3), (1, 1000), (4,)]
    for i, shape in enumerate(shapes * 2):
        p = f"s{i}_"
        dtype = str(rng.choice(["uint8", "int8"]))
        ys = F32(1 / 256) if i % 3 else F32(rng.uniform(1 / 300, 1 / 50))
        yz = np.array(0 if dtype == "uint8" else -128, dtype)
        inits.update({f"{p}xs": np.array(F32(rng.uniform(0.01, 0.5))),
                      f"{p}xz": q8(rng, dtype, ()), f"{p}ys": np.array(ys), f"{p}yz": yz})
        axis = int(rng.integers(-len(shape), len(shape)))
        nodes.append(helper.make_node(
            "QLinearSoftmax", [f"{p}x", f"{p}xs", f"{p}xz", f"{p}ys", f"{p}yz"], [f"{p}y"],
            domain="com.microsoft", axis=axis, opset=opset_attr))
        inputs[f"{p}x"] = (dtype, list(shape))
        outputs[f"{p}y"] = dtype
    model = graph_model(nodes, inputs, outputs, inits, opset=13, ms_domain=True)
    report = codegen.verify(model, samples=3, cflags=SANITIZE, requant=requant)
    assert report.ok, [o for o in report.outputs if o.mismatches]
