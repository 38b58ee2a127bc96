"""Output channels whose weights are all zero (pruned models: the official VWW model has
971): the convolution runs on its live rows and q8_fill_channels places them beside the
dead channels' constant, which the generator computes as ORT requantizes the bias.
Bit-exact against ORT on the host (under the sanitizers, every intermediate tensor) and
in QEMU, with the work and the weights of the dead rows gone."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from conftest import SANITIZE, in_qemu
from modelgen import conv_batch_model, random_conv_config
from onnx import numpy_helper

import codegen
from codegen.api import report
from codegen.ops.conv.channels import constant_channel_bytes
from codegen.options import Options
from codegen.pipeline import generate_sources


def pruned(model: onnx.ModelProto, seed: int) -> onnx.ModelProto:
    """The model with about half the output channels of each QLinearConv set to their
    weight zero point (all-zero weights), at least one channel kept."""
    rng = np.random.default_rng(seed)
    inits = {i.name: i for i in model.graph.initializer}
    for node in model.graph.node:
        w = numpy_helper.to_array(inits[node.input[3]]).copy()
        zp = np.broadcast_to(numpy_helper.to_array(inits[node.input[5]]).reshape(-1),
                             (w.shape[0],))
        dead = rng.random(w.shape[0]) < 0.5
        dead[rng.integers(w.shape[0])] = False
        for c in np.flatnonzero(dead):
            w[c] = zp[c]
        inits[node.input[3]].CopyFrom(numpy_helper.from_array(w, node.input[3]))
    return model


def pruned_convs(seed: int, count: int) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    configs = [random_conv_config(rng, seed + i) for i in range(count)]
    return pruned(conv_batch_model(configs), seed)


@pytest.mark.parametrize("seed", [3100, 3200])
def test_pruned_convolutions_are_bit_exact_on_the_host(seed: int) -> None:
    model = pruned_convs(seed, 16)
    gen = generate_sources(model, Options())
    assert any(c.function == "q8_fill_channels" for c in gen.program.calls)
    result = codegen.verify(model, samples=3, seed=1, cflags=SANITIZE, per_layer=True)
    assert result.ok, [o.name for o in result.outputs if o.mismatches]


@in_qemu
@pytest.mark.parametrize(("board", "weights"), [("cortex-m4f", "int8"),
                                                ("cortex-m4f", "int16"),
                                                ("cortex-m0plus", "int8")])
def test_pruned_convolutions_are_bit_exact_on_the_core(board: str, weights: str) -> None:
    model = pruned_convs(3300, 12)
    result = codegen.verify(model, board=board, weights=weights, samples=2, seed=2)
    assert result.ok, [o.name for o in result.outputs if o.mismatches]


def test_report_counts_what_was_skipped() -> None:
    """The MACs and weight bytes of the dead rows are gone, and report says how many."""
    rng = np.random.default_rng(3400)
    configs = [random_conv_config(rng, 3400 + i) for i in range(6)]
    whole = generate_sources(conv_batch_model(configs), Options())
    totals = report(pruned(conv_batch_model(configs), 3400)).totals
    assert totals.skipped_macs > 0 and totals.skipped_weight_bytes > 0
    assert totals.macs + totals.skipped_macs == sum(c.macs for c in whole.program.calls)


def test_a_dead_channel_is_its_requantized_bias() -> None:
    """ORT's arithmetic: float32 product, clamped, rounded half to even, plus the zero
    point (2.5 -> 2 and 3.5 -> 4; a product beyond the range saturates)."""
    bias = np.array([5, 7, 1000, -1000, 0])
    scale = np.full(5, 0.5, np.float32)
    assert constant_channel_bytes(bias, scale, 10, -128, 127).tolist() == [12, 14, 127,
                                                                           -128, 10]


def pointwise_then_depthwise(seed: int, count: int,
                             consumer: bool = False) -> onnx.ModelProto:
    """Pruned pointwise convolutions (about half their channels dead) each followed by a
    depthwise 3x3 layer, as in MobileNet: strides 1 and 2, symmetric, asymmetric and no
    padding, planes from 1 x 1 up, both 8-bit types. With `consumer`, a pointwise layer
    (weight zero point 0) reads each depthwise output, and about half the dead channels
    have a zero bias and the depthwise input zero point as their value, so that their
    depthwise planes are uniform (the ReLU case) and fold into that layer's bias."""
    from modelgen import ONNX_TYPE, ConvConfig, conv_nodes, make_model
    from onnx import helper

    rng = np.random.default_rng(seed)
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []
    inputs, outputs = [], []
    for i in range(count):
        dtype = str(rng.choice(["uint8", "int8"]))
        c_in, c = int(rng.integers(1, 9)), int(rng.integers(2, 12))
        h, w = (int(v) for v in rng.integers(1, 14, 2))
        stride = int(rng.choice([1, 1, 2]))
        pads = [(1, 1, 1, 1), (0, 0, 1, 1), (1, 1, 0, 0), (0, 0, 0, 0), (1, 0, 0, 1)][
            int(rng.integers(0, 5))]
        h, w = max(h, 3 - pads[0] - pads[2]), max(w, 3 - pads[1] - pads[3])
        common = dict(x_dtype=dtype, w_dtype="int8", batch=int(rng.integers(1, 3)),
                      dilations=(1, 1), auto_pad=None, per_channel=bool(rng.random() < 0.7),
                      bias=True, big_bias=False, kernel_shape_attr=False)
        pw = ConvConfig(channels=c_in, out_channels=c, spatial=(h, w), kernel=(1, 1),
                        group=1, strides=(1, 1), pads=(0, 0, 0, 0), seed=seed + 2 * i,
                        **common)  # type: ignore[arg-type]
        dw = ConvConfig(channels=c, out_channels=c, spatial=(h, w), kernel=(3, 3), group=c,
                        strides=(stride, stride), pads=pads, seed=seed + 2 * i + 1,
                        **common)  # type: ignore[arg-type]
        pw_nodes, pw_inits = conv_nodes(pw, f"p{i}", f"x{i}", f"m{i}")
        weights = next(t for t in pw_inits if t.name == f"p{i}_w")
        wz = numpy_helper.to_array(next(t for t in pw_inits if t.name == f"p{i}_wz"))
        array = numpy_helper.to_array(weights).copy()
        dead = rng.random(c) < 0.5
        dead[rng.integers(c)] = False
        array[dead] = np.broadcast_to(wz.reshape(-1), (c,))[dead].reshape(-1, 1, 1, 1)
        weights.CopyFrom(numpy_helper.from_array(array, weights.name))
        dw_nodes, dw_inits = conv_nodes(dw, f"d{i}", f"m{i}", f"y{i}")
        nodes += pw_nodes + dw_nodes
        inits += pw_inits + dw_inits
        out = f"y{i}"
        if consumer:
            by_name = {t.name: t for t in pw_inits + dw_inits}
            y_zp = numpy_helper.to_array(by_name[f"p{i}_yz"])
            by_name[f"d{i}_xz"].CopyFrom(numpy_helper.from_array(y_zp, f"d{i}_xz"))
            b = numpy_helper.to_array(by_name[f"p{i}_b"]).copy()
            b[dead & (rng.random(c) < 0.6)] = 0
            by_name[f"p{i}_b"].CopyFrom(numpy_helper.from_array(b, f"p{i}_b"))
            oh = (h + pads[0] + pads[2] - 3) // stride + 1
            ow = (w + pads[1] + pads[3] - 3) // stride + 1
            pq = ConvConfig(channels=c, out_channels=int(rng.integers(1, 10)), spatial=(oh, ow),
                            kernel=(1, 1), group=1, strides=(1, 1), pads=(0, 0, 0, 0),
                            seed=seed + 2 * i + 1000, **common)  # type: ignore[arg-type]
            q_nodes, q_inits = conv_nodes(pq, f"q{i}", f"y{i}", f"z{i}")
            wz = next(t for t in q_inits if t.name == f"q{i}_wz")
            wz.CopyFrom(numpy_helper.from_array(np.zeros_like(numpy_helper.to_array(wz)),
                                                wz.name))
            nodes += q_nodes
            inits += q_inits
            out = f"z{i}"
        inputs.append(helper.make_tensor_value_info(f"x{i}", ONNX_TYPE[dtype],
                                                    [pw.batch, c_in, h, w]))
        outputs.append(helper.make_tensor_value_info(out, ONNX_TYPE[dtype], [None] * 4))
    return make_model(nodes, inputs, outputs, inits, opset=13, name="pw_dw")


def test_depthwise_layers_over_constant_channels_are_bit_exact_on_the_host() -> None:
    """A depthwise layer computes only the channels that are not constant; q8_fill_planes
    writes the others' planes (border classes included), bit-exact against ORT under the
    sanitizers, every intermediate tensor compared."""
    model = pointwise_then_depthwise(3500, 24)
    gen = generate_sources(model, Options(board="cortex-m4f"))
    assert any(c.function == "q8_fill_planes" for c in gen.program.calls)
    assert report(model).totals.skipped_macs > 0
    result = codegen.verify(model, samples=3, seed=4, cflags=SANITIZE, per_layer=True)
    assert result.ok, [o.name for o in result.outputs if o.mismatches]


@in_qemu
@pytest.mark.parametrize("board", ["cortex-m4f", "cortex-m0plus"])
def test_depthwise_layers_over_constant_channels_are_bit_exact_on_the_core(board: str) -> None:
    """The same on the two-row kernel's fused loop (M4F) and the Thumb-1 one (M0+)."""
    model = pointwise_then_depthwise(3600, 16)
    result = codegen.verify(model, board=board, samples=2, seed=5)
    assert result.ok, [o.name for o in result.outputs if o.mismatches]


def test_uniform_planes_fold_into_the_next_pointwise_layer_on_the_host() -> None:
    """Depthwise planes that hold one value (a dead channel at the padding's zero point)
    leave the next pointwise layer: their contribution goes into its bias, exactly, and
    q8_select_channels hands it the other channels; bit-exact against ORT under the
    sanitizers, every intermediate tensor compared, the skipped MACs counted."""
    model = pointwise_then_depthwise(3700, 20, consumer=True)
    gen = generate_sources(model, Options())
    assert sum(c.function == "q8_select_channels" for c in gen.program.calls) >= 5
    selects = [c for c in gen.program.calls if c.function == "q8_select_channels"]
    assert all(c.skipped_macs > 0 and c.skipped_weight_bytes > 0 for c in selects)
    totals = report(model).totals
    whole = generate_sources(model, Options(kernels="reference"))
    assert totals.macs + totals.skipped_macs == sum(c.macs for c in whole.program.calls)
    result = codegen.verify(model, samples=3, seed=6, cflags=SANITIZE, per_layer=True)
    assert result.ok, [o.name for o in result.outputs if o.mismatches]


@in_qemu
@pytest.mark.parametrize(("board", "weights"), [("cortex-m4f", "int8"),
                                                ("cortex-m0plus", "int8")])
def test_uniform_planes_fold_into_the_next_pointwise_layer_on_the_core(board: str,
                                                                       weights: str) -> None:
    model = pointwise_then_depthwise(3800, 14, consumer=True)
    gen = generate_sources(model, Options(board=board, weights=weights))
    assert any(c.function == "q8_select_channels" for c in gen.program.calls)
    result = codegen.verify(model, board=board, weights=weights, samples=2, seed=7)
    assert result.ok, [o.name for o in result.outputs if o.mismatches]
