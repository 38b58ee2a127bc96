"""Where with a constant condition on 8-bit tensors (codegen/ops/where.py,
runtime_c/where.c) against ONNX Runtime: QDQ Where with a dequantized branch and a
rank-0 float constant (ORT's WhereDummyDq, an attention mask's fill) or two dequantized
branches, fused into QLinearWhere; QLinearWhere as written; a masked attention block
quantized by ORT's quantize_static (QDQ, uint8 and int8 activations); and the refusals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from conftest import SANITIZE
from modelgen import graph_model
from numpy.typing import NDArray
from onnx import helper
from onnxruntime.quantization import (
    CalibrationDataReader,
    QuantFormat,
    QuantType,
    quantize_static,
)

import codegen
from codegen.errors import UnsupportedError
from codegen.options import Options
from codegen.pipeline import generate_sources

F32 = np.float32


def qdq_where(dtype: str, mask: NDArray[Any], fill: float | None, swap: bool,
              out_scale: float, shape: list[int]) -> onnx.ModelProto:
    zt = np.uint8 if dtype == "uint8" else np.int8
    inits: dict[str, NDArray[Any]] = {
        "m": mask, "s": np.array(0.05, F32), "z": np.array(3, zt),
        "s2": np.array(out_scale, F32), "z2": np.array(10 if zt is np.uint8 else -4, zt)}
    inputs = {"x": (dtype, shape)}
    nodes = [helper.make_node("DequantizeLinear", ["x", "s", "z"], ["xf"])]
    if fill is None:
        inits |= {"s3": np.array(0.07, F32), "z3": np.array(1, zt)}
        inputs["x2"] = (dtype, shape)
        nodes.append(helper.make_node("DequantizeLinear", ["x2", "s3", "z3"], ["other"]))
    else:
        inits["other"] = np.array(fill, F32)
    branches = ["other", "xf"] if swap else ["xf", "other"]
    nodes += [helper.make_node("Where", ["m", *branches], ["yf"], name="where"),
              helper.make_node("QuantizeLinear", ["yf", "s2", "z2"], ["y"])]
    return graph_model(nodes, inputs, {"y": dtype}, inits, opset=17)


CAUSAL = np.tril(np.ones((4, 4), bool))


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
@pytest.mark.parametrize("fill", [-1e4, -3.0, 0.0, 2.5, None])
@pytest.mark.parametrize("swap", [False, True])
def test_qdq_where_matches_ort(dtype: str, fill: float | None, swap: bool) -> None:
    for mask, out_scale in ((CAUSAL, 0.06), (CAUSAL[None, None], 0.05),
                            (np.array([True, False, True, True])[:, None], 0.3)):
        model = qdq_where(dtype, mask, fill, swap, out_scale, [1, 2, 4, 4])
        gen = generate_sources(model, Options())
        assert [n.op_type for n in gen.graph.nodes] == ["QLinearWhere"]
        report = codegen.verify(model, samples=3, cflags=SANITIZE)
        assert report.ok, (mask.shape, out_scale, report.outputs)


def test_qlinear_where_as_written() -> None:
    inits: dict[str, NDArray[Any]] = {
        "m": np.array([[True, False, False], [True, True, False]]),
        "xs": np.array(0.1, F32), "xz": np.array(128, np.uint8),
        "c": np.array(17, np.uint8), "cs": np.array(0.2, F32), "cz": np.array(120, np.uint8),
        "zs": np.array(0.1, F32), "zz": np.array(128, np.uint8)}
    node = helper.make_node("QLinearWhere", ["m", "c", "cs", "cz", "x", "xs", "xz", "zs",
                                             "zz"], ["y"], domain="com.microsoft")
    model = graph_model([node], {"x": ("uint8", [3, 2, 3])}, {"y": "uint8"}, inits,
                        ms_domain=True)
    report = codegen.verify(model, samples=3, cflags=SANITIZE)
    assert report.ok, report.outputs


class Calibration(CalibrationDataReader):
    def __init__(self) -> None:
        rng = np.random.default_rng(0)
        self.batches = iter([{"x": rng.normal(0, 1, (1, 4, 8)).astype(F32)} for _ in range(8)])

    def get_next(self) -> dict[str, NDArray[Any]] | None:
        return next(self.batches, None)


def masked_attention() -> onnx.ModelProto:
    """One causal self-attention head as torch writes masked_fill(-inf-like fill)."""
    rng = np.random.default_rng(1)
    inits = {"wq": rng.normal(0, 0.3, (8, 8)).astype(F32),
             "wk": rng.normal(0, 0.3, (8, 8)).astype(F32),
             "wv": rng.normal(0, 0.3, (8, 8)).astype(F32),
             "mask": ~np.tril(np.ones((4, 4), bool)), "fill": np.array(-1e4, F32),
             "perm_scale": np.array(0.35, F32)}
    nodes = [helper.make_node("MatMul", ["x", "wq"], ["q"]),
             helper.make_node("MatMul", ["x", "wk"], ["k"]),
             helper.make_node("MatMul", ["x", "wv"], ["v"]),
             helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["q", "kt"], ["raw"]),
             helper.make_node("Mul", ["raw", "perm_scale"], ["scores"]),
             helper.make_node("Where", ["mask", "fill", "scores"], ["masked"]),
             helper.make_node("Softmax", ["masked"], ["p"], axis=-1),
             helper.make_node("MatMul", ["p", "v"], ["y"])]
    return graph_model(nodes, {"x": ("float32", [1, 4, 8])}, {"y": "float32"}, inits,
                       opset=17)


# ORT 1.32's QOperator quantizer fails on a Where with a float constant branch
# ("unknown initializers/tensors"), so only its QDQ format makes this model.
@pytest.mark.parametrize("activation", [QuantType.QUInt8, QuantType.QInt8])
def test_masked_attention_quantized_by_ort(activation: QuantType, tmp_path: Path) -> None:
    source, target = tmp_path / "float.onnx", tmp_path / "quantized.onnx"
    onnx.save(masked_attention(), source)
    quantize_static(str(source), str(target), Calibration(), quant_format=QuantFormat.QDQ,
                    activation_type=activation, weight_type=QuantType.QInt8)
    model = onnx.load(target)
    assert any(n.op_type in ("Where", "QLinearWhere") for n in model.graph.node)
    for requant in ("float", "int"):
        report = codegen.verify(model, samples=4, requant=requant, cflags=SANITIZE)
        assert report.ok, report.outputs


def test_refusals_name_the_node() -> None:
    # A fill of shape [1] is no rank-0 constant: ORT keeps the Where in float.
    model = qdq_where("uint8", CAUSAL, -1.0, False, 0.06, [1, 2, 4, 4])
    fill = next(i for i in model.graph.initializer if i.name == "other")
    fill.dims[:] = [1]
    with pytest.raises(UnsupportedError, match=r"where.*Where only between"):
        generate_sources(model, Options())
    nodes = [helper.make_node("QLinearWhere", ["m", "x", "s", "z", "x", "s", "z", "s", "z"],
                              ["y"], domain="com.microsoft", name="qw")]
    inits = {"s": np.array(0.1, F32), "z": np.array(0, np.uint8)}
    model = graph_model(nodes, {"m": ("uint8", [4]), "x": ("uint8", [4])}, {"y": "uint8"},
                        inits, ms_domain=True)
    with pytest.raises(UnsupportedError, match=r"qw.*computed at run time"):
        generate_sources(model, Options())
