"""Graphs whose nodes are not in topological order (AMD Quark and other quantizers write
them; ONNX Runtime runs them): sorted stably, so they generate the very C of the sorted
file and verify bit-exact; only a real cycle is refused, in one line naming its nodes."""

from __future__ import annotations

import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import onnx
import pytest
import zoo
from onnx import TensorProto, helper

import codegen
from codegen.errors import ModelError
from codegen.frontend.importer import topological_node_order, topologically_sorted
from codegen.options import Options
from codegen.pipeline import generate_sources

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "tiny_cnn_qop.onnx"
QDQ_OPS = ("QuantizeLinear", "DequantizeLinear")

Reorder = Callable[[list[onnx.NodeProto]], list[onnx.NodeProto]]


def reordered(model: onnx.ModelProto, reorder: Reorder) -> onnx.ModelProto:
    """A copy of the model with its nodes in the order `reorder` gives."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    nodes = reorder(list(copy.graph.node))
    del copy.graph.node[:]
    copy.graph.node.extend(nodes)
    return copy


def shuffled(seed: int) -> Reorder:
    def shuffle(nodes: list[onnx.NodeProto]) -> list[onnx.NodeProto]:
        random.Random(seed).shuffle(nodes)
        return nodes
    return shuffle


def reversed_order(nodes: list[onnx.NodeProto]) -> list[onnx.NodeProto]:
    return nodes[::-1]


def qdq_last(nodes: list[onnx.NodeProto]) -> list[onnx.NodeProto]:
    """What quantizers that insert Q/DQ nodes without re-sorting write: the network's
    nodes in order, the Quantize/DequantizeLinear nodes after them."""
    return sorted(nodes, key=lambda n: n.op_type in QDQ_OPS)


def qdq_first(nodes: list[onnx.NodeProto]) -> list[onnx.NodeProto]:
    return sorted(nodes, key=lambda n: n.op_type not in QDQ_OPS)


def is_sorted(model: onnx.ModelProto) -> bool:
    return topological_node_order(model.graph) == list(range(len(model.graph.node)))


# Models whose execution order is forced (a chain once the Q/DQ of the weights are fused):
# any order of the file sorts back to the one order, so every shuffle gives the same C.
CHAIN_MODELS: dict[str, Callable[[], onnx.ModelProto]] = {
    "tiny_cnn-qoperator": lambda: onnx.load(str(EXAMPLE)),
    "lenet5-qoperator": lambda: zoo.quantized_model("lenet5", "u8-pc"),
    "lenet5-qdq": lambda: zoo.qdq_model("lenet5", "i8-pt"),
}
# Models with parallel branches (residual shortcuts, fire modules): the file's order of
# independent branches is kept, so a disorder that leaves it alone gives the same C.
BRANCHING_MODELS: dict[str, Callable[[], onnx.ModelProto]] = {
    "resnet8-qoperator": lambda: zoo.quantized_model("resnet8", "u8-pt"),
    "resnet8-qdq": lambda: zoo.qdq_model("resnet8", "u8-pt"),
    "squeezenet_style-qdq": lambda: zoo.qdq_model("squeezenet_style", "i8-pc"),
}


@pytest.mark.parametrize("name", sorted(CHAIN_MODELS))
def test_any_order_of_a_chain_generates_the_same_c(name: str) -> None:
    model = CHAIN_MODELS[name]()
    assert is_sorted(model)
    expected = generate_sources(model, Options(name="net")).files
    for reorder in (reversed_order, shuffled(0), shuffled(1), shuffled(2), qdq_last):
        disordered = reordered(model, reorder)
        assert not is_sorted(disordered)
        assert generate_sources(disordered, Options(name="net")).files == expected


@pytest.mark.parametrize("name", sorted(BRANCHING_MODELS))
def test_quantizer_style_disorder_generates_the_same_c(name: str) -> None:
    model = BRANCHING_MODELS[name]()
    expected = generate_sources(model, Options(name="net")).files
    for reorder in (qdq_last, qdq_first):
        disordered = reordered(model, reorder)
        assert not is_sorted(disordered)
        assert generate_sources(disordered, Options(name="net")).files == expected


@pytest.mark.parametrize("name,reorder", [
    ("tiny_cnn-qoperator", reversed_order),
    ("lenet5-qdq", shuffled(0)),
    ("resnet8-qdq", qdq_last),
    # A random shuffle of a branching model may change the order of its branches, and so
    # the schedule: different C, and bit-exact all the same.
    ("resnet8-qoperator", shuffled(3)),
], ids=["tiny_cnn-qoperator-reversed", "lenet5-qdq-shuffled", "resnet8-qdq-qdq_last",
        "resnet8-qoperator-shuffled"])
def test_unsorted_model_verifies_bit_exact(name: str, reorder: Reorder) -> None:
    models = CHAIN_MODELS | BRANCHING_MODELS
    disordered = reordered(models[name](), reorder)
    given = disordered.SerializeToString()
    report = codegen.verify(disordered, samples=2, seed=1)
    assert report.ok, report.outputs
    assert report.outputs and all(o.elements for o in report.outputs)
    # The caller's ModelProto is sorted on a copy, never in place; ORT ran it unsorted.
    assert disordered.SerializeToString() == given
    assert not is_sorted(disordered)


def test_convert_writes_the_sorted_model(tmp_path: Path) -> None:
    model = onnx.load(str(EXAMPLE))
    (tmp_path / "unsorted.onnx").write_bytes(reordered(model, reversed_order)
                                             .SerializeToString())
    sorted_out = codegen.convert(EXAMPLE, tmp_path / "a.onnx").out
    unsorted_out = codegen.convert(tmp_path / "unsorted.onnx", tmp_path / "b.onnx").out
    assert unsorted_out.read_bytes() == sorted_out.read_bytes()
    onnx.checker.check_model(onnx.load(str(unsorted_out)))


def node(name: str, inputs: list[str], outputs: list[str]) -> onnx.NodeProto:
    return helper.make_node("Relu", inputs, outputs, name=name)


def graph_of(nodes: list[onnx.NodeProto]) -> onnx.GraphProto:
    return helper.make_graph(nodes, "g",
                             [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                             [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])


def test_order_is_stable() -> None:
    """Of the nodes ready to run, the earliest in the file goes first: a sorted graph
    keeps its order, and an unsorted one moves only what its dependencies force."""
    chain = [node("a", ["x"], ["a"]), node("b", ["a"], ["b"]), node("c", ["b"], ["y"])]
    assert topological_node_order(graph_of(chain)) == [0, 1, 2]
    # c reads b, which comes later: b moves up, just before c; d, independent, stays last.
    late = [node("a", ["x"], ["a"]), node("c", ["b"], ["c"]), node("b", ["a"], ["b"]),
            node("d", ["x"], ["d"])]
    assert topological_node_order(graph_of(late)) == [0, 2, 1, 3]
    # Two independent branches keep their order in the file.
    branches = [node("q", ["x"], ["q"]), node("p", ["x"], ["p"]), node("r", ["q"], ["r"]),
                node("s", ["p"], ["s"])]
    assert topological_node_order(graph_of(branches)) == [0, 1, 2, 3]


def test_a_sorted_model_is_not_copied() -> None:
    model = onnx.load(str(EXAMPLE))
    assert topologically_sorted(model) is model
    disordered = reordered(model, reversed_order)
    assert topologically_sorted(disordered) is not disordered


def cycle_model(tmp_path: Path, edit: Callable[[onnx.ModelProto], None]) -> Path:
    model = onnx.load(str(EXAMPLE))
    edit(model)
    path = tmp_path / "cycle.onnx"
    path.write_bytes(model.SerializeToString())
    return path


def three_node_cycle(model: onnx.ModelProto) -> None:
    # conv1 reads dwconv3's output: conv1 -> conv2 -> dwconv3 -> conv1.
    nodes = model.graph.node
    assert [n.name for n in nodes[1:4]] == ["conv1_quant", "conv2_quant", "dwconv3_quant"]
    nodes[1].input[0] = nodes[3].output[0]


def self_loop(model: onnx.ModelProto) -> None:
    model.graph.node[2].input[0] = model.graph.node[2].output[0]


@pytest.mark.parametrize("edit,message", [
    (three_node_cycle, "onnx2mcu: error: the graph has a cycle: nodes 'conv1_quant' "
                       "(QLinearConv) -> 'conv2_quant' (QLinearConv) -> 'dwconv3_quant' "
                       "(QLinearConv) -> 'conv1_quant' (QLinearConv) (each feeds the next)"),
    (self_loop, "onnx2mcu: error: node 'conv2_quant' (QLinearConv, domain ai.onnx): reads its "
                "own output (a cycle)"),
], ids=["three_nodes", "self_loop"])
def test_a_real_cycle_is_refused_in_one_line(
        edit: Callable[[onnx.ModelProto], None], message: str, tmp_path: Path) -> None:
    path = cycle_model(tmp_path, edit)
    result = subprocess.run([sys.executable, "-m", "codegen.cli", "generate", str(path),
                             "-o", str(tmp_path / "out")], capture_output=True, text=True,
                            timeout=300, check=False)
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [message]
    assert not (tmp_path / "out").exists()


def test_a_cycle_with_a_tail_names_only_the_cycle() -> None:
    """Nodes downstream of a cycle cannot be ordered either; the message names the
    cycle itself."""
    nodes = [node("tail", ["c"], ["y"]), node("b", ["a", "x"], ["b"]),
             node("c", ["b"], ["c"]), node("a", ["c"], ["a"])]
    with pytest.raises(ModelError, match=r"cycle: nodes 'b' \(Relu\) -> 'c' \(Relu\) -> "
                                         r"'a' \(Relu\) -> 'b' \(Relu\) \(each"):
        topological_node_order(graph_of(nodes))
