"""Resize (codegen/ops/resize.py, runtime_c/resize.c) against ONNX Runtime. Nearest: the
index tables for every coordinate mode and rounding on many sizes and scales, then whole
models on uint8, int8 and float32 tensors and in QDQ form. Linear (bilinear, and
trilinear for 3-D inputs): float32, uint8 and int8 models over the coordinate modes and
up/down scales, sizes, and the QDQ form, which ORT keeps in float."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from conftest import SANITIZE, in_qemu
from modelgen import graph_model
from numpy.typing import NDArray
from onnx import TensorProto, helper, numpy_helper

import codegen
from codegen.errors import UnsupportedError
from codegen.ops.resize import ROUNDINGS, TRANSFORMS, axis_indices
from codegen.options import Options
from codegen.pipeline import generate_sources

F32 = np.float32
SCALES = (0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0)


def resize_node(transform: str, rounding: str, resize_input: str = "scales") -> onnx.NodeProto:
    inputs = ["x", "roi", "scales"] + (["sizes"] if resize_input == "sizes" else [])
    return helper.make_node("Resize", inputs, ["y"], mode="nearest",
                            coordinate_transformation_mode=transform, nearest_mode=rounding)


def ort_positions(shape: list[int], node: onnx.NodeProto,
                  inits: dict[str, NDArray[Any]]) -> NDArray[Any]:
    """Which input element each output element is, as ORT computes it."""
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, shape)], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, None)], [numpy_helper.from_array(v, k)
                                               for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 8
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    x = np.arange(int(np.prod(shape)), dtype=F32).reshape(shape)
    return np.asarray(session.run(None, {"x": x})[0])


@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize("rounding", ROUNDINGS)
def test_index_tables_match_ort(transform: str, rounding: str) -> None:
    rng = np.random.default_rng(abs(hash((transform, rounding))) % 2**32)
    for _ in range(24):
        h, w = (int(d) for d in rng.integers(1, 10, 2))
        sh, sw = (float(rng.choice(SCALES)) for _ in range(2))
        oh, ow = int(F32(F32(h) * F32(sh))), int(F32(F32(w) * F32(sw)))
        if not oh or not ow:
            continue
        inits = {"roi": np.array([], F32), "scales": np.array([1, 1, sh, sw], F32)}
        expected = ort_positions([1, 1, h, w], resize_node(transform, rounding), inits)
        rows = axis_indices(transform, rounding, F32(sh), h, oh)
        cols = axis_indices(transform, rounding, F32(sw), w, ow)
        assert np.array_equal(expected[0, 0], rows[:, None] * w + cols[None, :]), \
            (h, w, sh, sw)


def nearest_model(dtype: str, transform: str, rounding: str, shape: list[int],
                  scales: list[float]) -> onnx.ModelProto:
    inits = {"roi": np.array([], F32), "scales": np.array(scales, F32)}
    return graph_model([resize_node(transform, rounding)], {"x": (dtype, shape)},
                       {"y": dtype}, inits, opset=13)


@pytest.mark.parametrize("dtype", ["uint8", "int8", "float32"])
@pytest.mark.parametrize("case", [
    ("asymmetric", "floor", [1, 3, 5, 4], [1, 1, 2, 2]),  # torch nn.Upsample(2)
    ("half_pixel", "round_prefer_ceil", [2, 2, 7, 5], [1, 1, 1.5, 3]),  # TF 2 nearest
    ("align_corners", "round_prefer_floor", [1, 4, 6, 6], [1, 1, 0.5, 0.5]),
    ("pytorch_half_pixel", "round_prefer_floor", [1, 2, 9], [1, 1, 2.5]),  # 1-D
])
def test_nearest_models_match_ort(dtype: str, case: tuple[str, str, list[int], list[float]]
                                  ) -> None:
    report = codegen.verify(nearest_model(dtype, *case), samples=2, cflags=SANITIZE)
    assert report.ok, report.outputs


def test_qdq_resize_runs_on_integers() -> None:
    inits = {"roi": np.array([], F32), "scales": np.array([1, 1, 2, 2], F32),
             "s": np.array(0.02, F32), "z": np.array(7, np.uint8)}
    nodes = [helper.make_node("DequantizeLinear", ["q", "s", "z"], ["x"]),
             resize_node("asymmetric", "floor"),
             helper.make_node("QuantizeLinear", ["y", "s", "z"], ["out"])]
    model = graph_model(nodes, {"q": ("uint8", [1, 3, 4, 4])}, {"out": "uint8"}, inits)
    gen = generate_sources(model, Options())
    assert [n.op_type for n in gen.graph.nodes] == ["Resize"]
    report = codegen.verify(model, samples=2, cflags=SANITIZE)
    assert report.ok, report.outputs


def test_sizes_with_exact_ratios_and_refusals() -> None:
    inits = {"roi": np.array([], F32), "scales": np.array([], F32),
             "sizes": np.array([1, 2, 8, 6], np.int64)}
    model = graph_model([resize_node("half_pixel", "round_prefer_floor", "sizes")],
                        {"x": ("uint8", [1, 2, 4, 4])}, {"y": "uint8"}, inits, opset=13)
    report = codegen.verify(model, samples=2, cflags=SANITIZE)
    assert report.ok, report.outputs
    inits["sizes"] = np.array([1, 2, 8, 7], np.int64)
    with pytest.raises(UnsupportedError, match="ratios exact in float32"):
        generate_sources(graph_model([resize_node("asymmetric", "round_prefer_ceil", "sizes")],
                                     {"x": ("uint8", [1, 2, 7, 7])}, {"y": "uint8"}, inits,
                                     opset=13), Options())
    cubic = helper.make_node("Resize", ["x", "roi", "scales"], ["y"], mode="cubic")
    with pytest.raises(UnsupportedError, match="mode 'cubic'"):
        generate_sources(graph_model([cubic], {"x": ("float32", [1, 1, 2, 2])},
                                     {"y": "float32"}, {"roi": np.array([], F32),
                                                        "scales": np.array([1, 1, 2, 2], F32)}),
                         Options())


LINEAR_TRANSFORMS = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                     "tf_half_pixel_for_nn")


def linear_model(dtype: str, transform: str, shape: list[int], scales: list[float],
                 opset: int = 13) -> onnx.ModelProto:
    node = helper.make_node("Resize", ["x", "roi", "scales"], ["y"], mode="linear",
                            coordinate_transformation_mode=transform)
    inits = {"roi": np.array([], F32), "scales": np.array(scales, F32)}
    return graph_model([node], {"x": (dtype, shape)}, {"y": dtype}, inits, opset=opset)


@pytest.mark.parametrize("dtype", ["float32", "uint8", "int8"])
@pytest.mark.parametrize("transform", LINEAR_TRANSFORMS)
def test_linear_models_match_ort(dtype: str, transform: str) -> None:
    rng = np.random.default_rng(sum(map(ord, dtype + transform)))
    for _ in range(3):
        h, w = (int(d) for d in rng.integers(1, 9, 2))
        sh, sw = (float(rng.choice(SCALES)) for _ in range(2))
        if int(F32(F32(h) * F32(sh))) < 1 or int(F32(F32(w) * F32(sw))) < 1:
            continue
        model = linear_model(dtype, transform, [int(rng.integers(1, 3)), 3, h, w],
                             [1, 1, sh, sw])
        report = codegen.verify(model, samples=2, cflags=SANITIZE)
        assert report.ok, (h, w, sh, sw, report.outputs)


@pytest.mark.parametrize("dtype", ["float32", "uint8", "int8"])
@pytest.mark.parametrize("transform", LINEAR_TRANSFORMS)
def test_linear_of_sequences_is_orts_trilinear_kernel(dtype: str, transform: str) -> None:
    """A 3-D linear Resize (torch's Upsample(mode="linear")): ORT's trilinear kernel over
    (N, C, L), batches of 1 and 2 (the last batch and channel weigh 0.5 and 0.5)."""
    rng = np.random.default_rng(sum(map(ord, "3d" + dtype + transform)))
    for batch in (1, 2):
        length = int(rng.integers(1, 9))
        scale = float(rng.choice(SCALES))
        if int(F32(F32(length) * F32(scale))) < 1:
            scale = 2.0
        model = linear_model(dtype, transform, [batch, int(rng.integers(1, 5)), length],
                             [1, 1, scale])
        report = codegen.verify(model, samples=2, cflags=SANITIZE)
        assert report.ok, (batch, length, scale, report.outputs)


@in_qemu
@pytest.mark.parametrize("board", ["cortex-m4f", "cortex-m0plus"])
def test_linear_resizes_on_cortex_m(board: str) -> None:
    """Bilinear and trilinear weights in single-precision hardware or software float."""
    for dtype, shape, scales in (("float32", [1, 3, 7], [1, 1, 2.5]),
                                 ("uint8", [2, 2, 5], [1, 1, 0.6]),
                                 ("float32", [1, 2, 3, 4], [1, 1, 2, 1.5])):
        model = linear_model(dtype, "half_pixel", shape, scales)
        assert codegen.verify(model, board=board, samples=1).ok, (dtype, shape)


def test_linear_with_sizes_as_torch_writes_it() -> None:
    # F.interpolate(scale_factor=2, mode="bilinear") from the TorchScript exporter.
    node = helper.make_node("Resize", ["x", "roi", "scales", "sizes"], ["y"], mode="linear",
                            coordinate_transformation_mode="pytorch_half_pixel")
    inits = {"roi": np.array([], F32), "scales": np.array([], F32),
             "sizes": np.array([1, 4, 10, 12], np.int64)}
    model = graph_model([node], {"x": ("float32", [1, 4, 5, 6])}, {"y": "float32"}, inits,
                        opset=18)
    report = codegen.verify(model, samples=3, cflags=SANITIZE)
    assert report.ok, report.outputs


def test_qdq_linear_resize_is_a_float_island() -> None:
    inits = {"roi": np.array([], F32), "scales": np.array([1, 1, 2, 2], F32),
             "s": np.array(0.02, F32), "z": np.array(7, np.uint8)}
    nodes = [helper.make_node("DequantizeLinear", ["q", "s", "z"], ["x"]),
             helper.make_node("Resize", ["x", "roi", "scales"], ["y"], mode="linear",
                              coordinate_transformation_mode="half_pixel"),
             helper.make_node("QuantizeLinear", ["y", "s", "z"], ["out"])]
    model = graph_model(nodes, {"q": ("uint8", [1, 3, 4, 5])}, {"out": "uint8"}, inits)
    gen = generate_sources(model, Options())
    assert [n.op_type for n in gen.graph.nodes] == ["DequantizeLinear", "Resize",
                                                   "QuantizeLinear"]
    for requant in ("float", "int"):
        report = codegen.verify(model, samples=3, requant=requant, cflags=SANITIZE)
        assert report.ok, report.outputs
