"""Scales and zero points carried by Constant nodes instead of initializers, as
Brevitas' QOp export writes them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from conftest import SANITIZE
from onnx import helper, numpy_helper

import codegen

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tiny_cnn_qop.onnx"


def with_constant_nodes(model: onnx.ModelProto) -> onnx.ModelProto:
    """Every initializer but the weights (scales, zero points, biases) becomes a Constant
    node at the top of the graph: `value_float` for float32 scalars, else `value`."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    g = out.graph
    keep, constants = [], []
    for init in g.initializer:
        array = numpy_helper.to_array(init)
        if array.ndim > 1:
            keep.append(init)
        elif array.dtype == np.float32 and array.ndim == 0:
            constants.append(helper.make_node("Constant", [], [init.name],
                                              value_float=float(array)))
        else:
            constants.append(helper.make_node("Constant", [], [init.name], value=init))
    del g.initializer[:]
    g.initializer.extend(keep)
    nodes = list(g.node)
    del g.node[:]
    g.node.extend(constants + nodes)
    return out


def test_constant_nodes_match_initializers() -> None:
    model = onnx.load(str(EXAMPLE))
    converted = with_constant_nodes(model)
    assert sum(n.op_type == "Constant" for n in converted.graph.node) >= 20
    for requant in ("float", "int"):
        report = codegen.verify(converted, samples=2, requant=requant, cflags=SANITIZE)
        assert report.ok, report.outputs
    x = {"input": np.random.default_rng(0).uniform(-1, 1, (1, 3, 32, 32)).astype(np.float32)}
    assert np.array_equal(codegen.run(converted, x)["conv4_out"],
                          codegen.run(model, x)["conv4_out"])
