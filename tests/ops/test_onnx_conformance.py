"""ONNX's own node conformance tests for QLinearConv, QuantizeLinear and
DequantizeLinear, run through the generated C.

The onnx wheel no longer ships the test data, so it is regenerated from the generators
in onnx.backend.test.case.node. Those models are opset 28, which ONNX Runtime 1.32
cannot run: they are rewritten to opset 19 (same semantics for these operators). Their
quantization parameters are graph inputs there; onnx2mcu needs them at generation time,
so they become initializers holding the test's values. Each in-scope case must match
both the expected outputs shipped with the case and ONNX Runtime, bit for bit; every
out-of-scope case (float8, 2/4-bit, blocked) must be refused with one clear error.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import onnx
import pytest
from conftest import SANITIZE
from numpy.typing import NDArray
from onnx import numpy_helper

import codegen
from codegen.errors import Onnx2McuError

IN_SCOPE = {"test_qlinearconv", "test_quantizelinear", "test_quantizelinear_axis",
            "test_dequantizelinear", "test_dequantizelinear_axis",
            "test_qlinearmatmul_2D_uint8_float32", "test_qlinearmatmul_3D_uint8_float32",
            "test_qlinearmatmul_2D_uint8_float16", "test_qlinearmatmul_3D_uint8_float16",
            "test_qlinearmatmul_2D_int8_float32", "test_qlinearmatmul_3D_int8_float32",
            "test_qlinearmatmul_2D_int8_float16", "test_qlinearmatmul_3D_int8_float16",
            "test_matmulinteger", "test_convinteger_without_padding",
            "test_convinteger_with_padding", "test_maxpool_2d_uint8",
            "test_quantizelinear_int16", "test_quantizelinear_uint16",
            "test_dequantizelinear_int16", "test_dequantizelinear_uint16"}
PREFIXES = ("test_qlinearconv", "test_quantizelinear", "test_dequantizelinear",
            "test_qlinearmatmul", "test_matmulinteger", "test_convinteger",
            "test_maxpool_2d_uint8")
# Valid ONNX that ORT 1.32 refuses (per-channel ConvInteger weight zero points): checked
# against the case's expected outputs only.
ORT_REFUSES = {"test_convinteger_with_padding"}


def _collect() -> dict[str, Any]:
    import onnx.backend.test.case.node as node_cases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = node_cases.collect_testcases(None)
    return {c.name: c for c in cases if c.name.startswith(PREFIXES)}


CASES = _collect()


def frozen_model(case: Any, opset: int) -> tuple[onnx.ModelProto, dict[str, NDArray[Any]],
                                                 list[NDArray[Any]]]:
    """The case's model with its parameter inputs turned into initializers."""
    inputs, outputs = case.data_sets[0]
    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    graph = model.graph
    data_input = graph.input[0].name
    feeds = {}
    keep = []
    for value, array in zip(list(graph.input), inputs, strict=True):
        if value.name == data_input:
            keep.append(value)
            feeds[value.name] = np.asarray(array)
        elif isinstance(array, onnx.TensorProto):  # exotic dtypes come as protos
            tensor = onnx.TensorProto()
            tensor.CopyFrom(array)
            tensor.name = value.name
            graph.initializer.append(tensor)
        else:
            graph.initializer.append(numpy_helper.from_array(np.asarray(array), value.name))
    del graph.input[:]
    graph.input.extend(keep)
    for imp in model.opset_import:
        if imp.domain in ("", "ai.onnx"):
            imp.version = min(imp.version, opset)
    model.ir_version = min(model.ir_version, 9)
    return model, feeds, [np.asarray(o) for o in outputs]


def runnable_opset(case: Any) -> int:
    """The case's opset, or 19 for the opset-28 Q/DQ cases ORT 1.32 cannot run (21 for
    16-bit ones, which the standard operators take from opset 21)."""
    opset = next(o.version for o in case.model.opset_import if o.domain in ("", "ai.onnx"))
    if opset <= 25:
        return opset
    return 21 if case.name.endswith("int16") else 19


def test_every_case_is_classified() -> None:
    assert set(CASES) >= IN_SCOPE, sorted(IN_SCOPE - set(CASES))
    assert len(CASES) > len(IN_SCOPE)


@pytest.mark.parametrize("name", sorted(IN_SCOPE))
@pytest.mark.parametrize("requant", ["float", "int"])
def test_in_scope_case(name: str, requant: str) -> None:
    model, feeds, expected = frozen_model(CASES[name], opset=runnable_opset(CASES[name]))
    got = codegen.run(model, feeds, requant=requant, cflags=SANITIZE)
    for out, want in zip(model.graph.output, expected, strict=True):
        assert got[out.name].dtype == want.dtype
        assert np.array_equal(got[out.name].view(np.uint8), want.view(np.uint8)), out.name
    if name not in ORT_REFUSES:
        report = codegen.verify(model, inputs=feeds, requant=requant, cflags=SANITIZE)
        assert report.ok, report.outputs


@pytest.mark.parametrize("name", sorted(set(CASES) - IN_SCOPE))
def test_out_of_scope_case_is_refused_clearly(name: str, tmp_path: Any) -> None:
    model, _, _ = frozen_model(CASES[name], opset=21)
    with pytest.raises(Onnx2McuError) as info:
        codegen.generate(model, tmp_path / "out")
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("node '"), message
    assert not (tmp_path / "out").exists()
