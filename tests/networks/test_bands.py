"""--memory min: blocks of layers run a band of rows at a time (codegen/transform/bands.py),
their tensors kept only as history buffers of a few rows (runtime_c/rows.c).

Random chains of convolutions (kernels 1-5, strides 1-2, asymmetric padding, depthwise,
residual blocks with and without a strided shortcut) quantized by ORT's quantize_static
are run with their longest run of layers forced into bands of 1, 2 or 4 rows, under the
sanitizers, against ORT; the zoo's architectures through the mode's own choice; and
ResNet-8 on Cortex-M cores in QEMU (DSP and Thumb-1 kernels)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import pytest
from conftest import SANITIZE, skip_where_ort_differs
from zoo import INPUT_NAME, MODEL_NAMES, VARIANTS, GraphBuilder, quantize_qop, quantized_model

import codegen
import codegen.api
import codegen.pipeline
from codegen.backend.interface import Interface
from codegen.backend.io_boundary import boundary_quantizers
from codegen.core.ir import Graph
from codegen.errors import BudgetError
from codegen.options import Options
from codegen.pipeline import generate_sources
from codegen.target.firmware import cross_toolchain_available
from codegen.target.qemu import qemu_available
from codegen.transform.bands import band_runs, banded
from codegen.views.report import format_report_text

QUANTIZED_IO = Interface(io="quantized")
CORPUS = Path(__file__).resolve().parents[1] / "corpus"
# Exporters' CNNs: tf2onnx (an NHWC input and its transpose, banded too), torch's two
# exporters through ORT's quantizer, NNCF and Quark.
CORPUS_CNNS = (
    "tf_mobilenet_tiny_tflite_int8io_tf2onnx_qdq.onnx",
    "tf_ds_cnn_tflite_int8io_tf2onnx_qdq.onnx",
    "tf_mobilenet_tiny_tf2onnx_quark_a8w8.onnx",
    "tv_mobilenet_v2_torchscript_ort_qop_u8s8.onnx",
    "tv_mnasnet_dynamo_ort_qdq_u8s8.onnx",
    "unet_tiny_dynamo_ort_qdq_s8s8.onnx",
    "mobilenetv3_block_dynamo_nncf_mixed.onnx",
    "shufflenetv2_unit_dynamo_quark_a8w8.onnx",
)


def random_chain(seed: int) -> onnx.ModelProto:
    """A float CNN of 3-6 random stages over a random input (H 9-20, W 3-11)."""
    rng = np.random.default_rng(seed)
    g = GraphBuilder("resnet8", seed)
    g.input_shape = (1, int(rng.integers(1, 5)), int(rng.integers(9, 21)),
                     int(rng.integers(3, 12)))
    g.shapes[INPUT_NAME] = g.input_shape
    x = INPUT_NAME
    for _ in range(int(rng.integers(3, 7))):
        _, c, h, w = g.shapes[x]
        kind = str(rng.choice(["conv", "depthwise", "residual", "strided_block"]))
        if kind == "conv" or h < 4:
            kh, kw = (int(k) for k in rng.choice([1, 3, 5], size=2))
            stride = int(rng.choice([1, 1, 2])) if h >= 6 else 1
            pads = tuple(int(rng.integers(0, k)) for k in (kh, kw, kh, kw))
            if (h + pads[0] + pads[2] - kh) < 0 or (w + pads[1] + pads[3] - kw) < 0:
                pads = (kh // 2, kw // 2, kh // 2, kw // 2)
            x = g.relu(g.conv(x, int(rng.integers(1, 7)), (kh, kw), stride, pads))  # type: ignore[arg-type]
        elif kind == "depthwise":
            x = g.relu(g.depthwise(x, int(rng.choice([1, 2])), keras_pads=bool(rng.integers(2))))
        elif kind == "residual":
            y = g.relu(g.conv(x, c, (3, 3)))
            x = g.relu(g.add(g.conv(y, c, (3, 3), gain=1.0), x))
        else:
            wide = int(rng.integers(1, 6))
            y = g.conv(g.relu(g.conv(x, wide, (3, 3), 2)), wide, (3, 3), gain=1.0)
            x = g.relu(g.add(y, g.conv(x, wide, (1, 1), 2, gain=1.0)))
    return g.build(g.conv(x, int(rng.integers(1, 4)), (1, 1), gain=1.0))


def quantized_chain(seed: int) -> onnx.ModelProto:
    variant = VARIANTS[seed % len(VARIANTS)]
    return quantize_qop(random_chain(seed), variant.activations, variant.per_channel,
                        input_range=(-1.0, 1.0), calibration_count=8)


def force_longest_run(rows: int, gather: bool = True) -> object:
    """memory_candidates replaced: only the graph with its longest run of layers banded
    (gather: depthwise bands read their rows from the bands, else from a window)."""
    def forced(graph: Graph, memory: str, io: str = "float",
               kernels: str = "fast") -> list[Graph]:
        runs = band_runs(graph, boundary_quantizers(graph, io))
        start, end = max(runs, key=lambda r: (r[1] - r[0], -r[0]))
        rewritten = banded(graph, start, end, rows, gather and kernels == "fast")
        assert rewritten is not None, "the chain's longest run does not band"
        return [rewritten]
    return forced


@pytest.mark.parametrize("seed", range(18))
def test_random_chains_in_bands_are_bit_exact(seed: int,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    model = quantized_chain(seed)
    requant = ("float", "int")[seed % 2]
    io = QUANTIZED_IO if seed % 3 else Interface()
    monkeypatch.setattr(codegen.pipeline, "memory_candidates",
                        force_longest_run((1, 2, 4)[seed % 3], gather=seed % 4 != 3))
    gen = generate_sources(model, Options(memory="min", requant=requant, interface=io))
    assert any(c.function.startswith("q8_rows_") for c in gen.program.calls)
    report = codegen.verify(model, samples=3, seed=seed, requant=requant, cflags=SANITIZE,
                            memory="min", interface=io)
    assert report.ok, report.outputs


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_zoo_in_min_memory_mode_is_bit_exact(name: str) -> None:
    variant = VARIANTS[MODEL_NAMES.index(name) % len(VARIANTS)]
    model = quantized_model(name, variant.id)
    skip_where_ort_differs(model)
    report = codegen.verify(model, samples=2, seed=5, cflags=SANITIZE, memory="min",
                            interface=QUANTIZED_IO)
    assert report.ok, report.outputs


@pytest.mark.parametrize("name", CORPUS_CNNS)
def test_exporters_cnns_in_min_memory_mode_are_bit_exact(name: str) -> None:
    skip_where_ort_differs(CORPUS / name)
    io = QUANTIZED_IO if "int8io" in name else Interface()  # some end in float
    report = codegen.verify(CORPUS / name, samples=2, seed=4, cflags=SANITIZE, memory="min",
                            interface=io)
    assert report.ok, report.outputs


@pytest.mark.parametrize("rows", [1, 2])
def test_tf2onnx_input_transpose_in_bands(rows: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """tf2onnx's NHWC input read a row of W x C values at a time through the banded
    transpose, the planner giving the rows read to later buffers."""
    model = CORPUS / CORPUS_CNNS[0]
    monkeypatch.setattr(codegen.pipeline, "memory_candidates", force_longest_run(rows))
    gen = generate_sources(model, Options(memory="min", interface=QUANTIZED_IO))
    assert any(c.function == "q8_rows_window" and c.rows_read is not None and
               c.rows_read.planes == 1 for c in gen.program.calls)
    assert gen.plan.by_rows
    report = codegen.verify(model, samples=2, seed=rows, cflags=SANITIZE, memory="min",
                            interface=QUANTIZED_IO)
    assert report.ok, report.outputs


def arena(model: onnx.ModelProto, memory: str) -> int:
    options = Options(board="cortex-m4f", memory=memory, weights="int8",
                      interface=QUANTIZED_IO)
    return generate_sources(model, options).plan.size


def test_min_memory_bands_resnet8_and_keeps_what_overlaps_do_better() -> None:
    resnet = quantized_model("resnet8", "i8-pc")
    fast, small = arena(resnet, "fast"), arena(resnet, "min")
    assert small < 0.5 * fast, (fast, small)
    # DS-CNN's depthwise layers already overlap their inputs: bands would not help.
    dscnn = quantized_model("dscnn", "i8-pc")
    assert arena(dscnn, "min") == arena(dscnn, "fast")


def test_float_io_bands_the_input_quantization() -> None:
    """With --io float the caller's float input is read a band at a time: the quantized
    input is never whole."""
    model = quantized_model("mobilenet_v1_025", "i8-pc")
    options = Options(board="cortex-m4f", weights="int8")
    fast = generate_sources(model, options)
    small = generate_sources(model, replace(options, memory="min"))
    quantize = [c for c in small.program.calls if c.function.startswith("q8_quantize")]
    assert len(quantize) > 1 and small.plan.size < 0.5 * fast.plan.size
    report = codegen.verify(model, samples=2, seed=2, cflags=SANITIZE, memory="min")
    assert report.ok, report.outputs


def test_min_memory_sources_are_byte_identical() -> None:
    model = quantized_model("resnet8", "u8-pt")
    first = generate_sources(model, Options(memory="min")).files
    assert first == generate_sources(model, Options(memory="min")).files
    # The bands share each layer's weights: the image holds them once.
    gen = generate_sources(model, Options(memory="min"))
    whole = generate_sources(model, Options()).program.weight_bytes
    assert gen.program.weight_bytes == whole


def test_report_gives_both_memory_modes() -> None:
    model = quantized_model("resnet8", "i8-pc")
    report = codegen.api.report(model, memory="min", interface=QUANTIZED_IO)
    fast, small = report.modes
    assert (fast.memory, small.memory) == ("fast", "min") and report.memory == "min"
    assert small.banded and not fast.banded and small.arena_bytes < fast.arena_bytes
    assert small.arena_bytes == report.totals.arena_bytes
    # The bound stays the whole tensors' one; the note says why the arena is below it.
    assert report.totals.arena_lower_bound == generate_sources(
        model, Options(interface=QUANTIZED_IO)).plan.lower_bound
    text = format_report_text(report)
    assert "memory modes (this report: --memory min):" in text
    assert "layer(s) run in row bands" in text
    assert any(b.over is not None for b in report.buffers)


def test_a_model_too_big_for_its_board_hears_what_min_mode_needs(tmp_path: Path) -> None:
    model = quantized_model("resnet8", "u8-pt")
    with pytest.raises(BudgetError) as refusal:
        codegen.generate(model, tmp_path / "out", board="microbit")
    message = str(refusal.value)
    assert "does not fit board 'microbit'" in message
    assert "with --memory min (layers in row bands) it needs" in message
    assert not (tmp_path / "out").exists()


CORTEX_M = pytest.mark.skipif(not (cross_toolchain_available() and qemu_available()),
                              reason="needs arm-none-eabi-gcc and qemu-system-arm")


@CORTEX_M
@pytest.mark.parametrize("board", ["cortex-m4f", "cortex-m0plus"])
def test_resnet8_in_bands_on_cortex_m(board: str, tmp_path: Path) -> None:
    model = quantized_model("resnet8", "i8-pc" if board == "cortex-m4f" else "u8-pt")
    report = codegen.verify(model, samples=2, seed=9, board=board, memory="min",
                            interface=QUANTIZED_IO)
    assert report.ok, report.outputs


@CORTEX_M
@pytest.mark.parametrize("board", ["cortex-m4f", "cortex-m0plus"])
def test_mobilenet_in_bands_on_cortex_m(board: str) -> None:
    """Depthwise bands reading their rows from the bands of the layer before, of strides
    1 and 2, and gathered windows of the other convolutions, in QEMU."""
    model = quantized_model("mobilenet_v1_025", "i8-pc")
    gen = generate_sources(model, Options(board=board, memory="min", weights="int8",
                                          interface=QUANTIZED_IO))
    strides = {dict(dict(c.params.fields)["conv"].fields)["stride_h"]  # type: ignore[union-attr]
               for c in gen.program.calls
               if c.function.startswith("q8_dwconv_s8_3x3_gather_") and c.params is not None}
    assert strides == {1, 2}, strides
    report = codegen.verify(model, samples=2, seed=9, board=board, memory="min",
                            weights="int8", interface=QUANTIZED_IO)
    assert report.ok, report.outputs


@pytest.mark.parametrize("rows", [1, 2])
def test_depthwise_bands_without_bias_read_the_bands(rows: int,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """QLinearConv without B (8 inputs): the gathering band's other bands come after its
    empty bias slot. Strides 1 and 2, top padding and none."""
    rng = np.random.default_rng(0)
    weights = [onnx.numpy_helper.from_array(rng.normal(size=shape).astype(np.float32), name)
               for name, shape in (("w1", (6, 3, 1, 1)), ("w2", (6, 1, 3, 3)),
                                   ("w3", (6, 1, 3, 3)))]
    nodes = [onnx.helper.make_node("Conv", ["x", "w1"], ["a"]),
             onnx.helper.make_node("Relu", ["a"], ["b"]),
             onnx.helper.make_node("Conv", ["b", "w2"], ["c"], group=6, pads=[1, 1, 1, 1]),
             onnx.helper.make_node("Relu", ["c"], ["d"]),
             onnx.helper.make_node("Conv", ["d", "w3"], ["y"], group=6, pads=[0, 1, 1, 1],
                                   strides=[2, 2])]
    graph = onnx.helper.make_graph(
        nodes, "no_bias", [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT,
                                                              [1, 3, 11, 9])],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)], weights)
    model = quantize_qop(onnx.helper.make_model(graph, opset_imports=[
        onnx.helper.make_opsetid("", 13)]), VARIANTS[0].activations, VARIANTS[0].per_channel,
        input_range=(-1.0, 1.0), calibration_count=8)
    assert all(len(n.input) == 8 for n in model.graph.node if n.op_type == "QLinearConv")
    monkeypatch.setattr(codegen.pipeline, "memory_candidates", force_longest_run(rows))
    gen = generate_sources(model, Options(memory="min", interface=QUANTIZED_IO))
    assert any("_3x3_gather_" in c.function for c in gen.program.calls)
    report = codegen.verify(model, samples=3, seed=1, cflags=SANITIZE, memory="min",
                            interface=QUANTIZED_IO)
    assert report.ok, report.outputs


def test_gathering_bands_count_as_their_layer() -> None:
    """report and inspect put a depthwise band that reads the bands (QLinearConvGather)
    under its QLinearConv layer, not as a copy of its own."""
    from codegen.views.report import build_layers

    gen = generate_sources(quantized_model("mobilenet_v1_025", "i8-pc"),
                           Options(memory="min", interface=QUANTIZED_IO))
    gathering = [layer for layer in build_layers(gen, None) if "_gather_" in layer.kernel]
    assert gathering and {layer.op for layer in gathering} == {"QLinearConv"}
    assert {layer.node for layer in gathering} <= {n.name for n in gen.graph.nodes}
