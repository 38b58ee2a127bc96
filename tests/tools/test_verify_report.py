"""A verification that compared nothing proves nothing: it is never reported ok."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import codegen
import codegen.api
from codegen.cli import print_report
from codegen.errors import InputDataError
from codegen.oracle.verify import OutputReport, VerifyReport


def report(outputs: list[OutputReport]) -> VerifyReport:
    return VerifyReport(outputs=outputs, samples=1, seed=0, ort_version="1.32.0",
                        ort_level="all", reference="the model as given", requant="float",
                        board="host")


def test_a_report_without_compared_elements_is_not_ok(capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    assert not report([]).ok
    assert not report([OutputReport("y", "uint8", 0, 0, 0.0)]).ok
    assert report([OutputReport("y", "uint8", 4, 0, 0.0)]).ok
    assert not report([OutputReport("y", "uint8", 4, 1, 1.0)]).ok
    print_report(report([]))
    assert capsys.readouterr().out.splitlines()[-1].startswith("result: NOTHING COMPARED")


def quantize_dequantize() -> onnx.ModelProto:
    inits = [numpy_helper.from_array(np.array(0.05, np.float32), "s"),
             numpy_helper.from_array(np.array(128, np.uint8), "z")]
    graph = helper.make_graph(
        [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="quant"),
         helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], name="dequant")], "qdq",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def test_verify_compares_every_output_or_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    model = quantize_dequantize()
    result = codegen.verify(model, samples=2)
    assert result.ok and result.compared_elements == 16
    with pytest.raises(InputDataError, match="no input samples"):
        codegen.verify(model, inputs=[])
    # Should an output ever go uncompared (here: the comparison made to drop it), verify
    # fails loudly instead of reporting ok on the rest.
    monkeypatch.setattr(codegen.api, "compare_outputs", lambda *args: [])
    with pytest.raises(RuntimeError, match="compared no result for model output"):
        codegen.verify(model, samples=1)
