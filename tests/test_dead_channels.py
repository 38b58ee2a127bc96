"""Output channels whose weights are all zero (pruned models: the official VWW model has
971): the convolution runs on its live rows and q8_fill_channels places them beside the
dead channels' constant, which the generator computes as ORT requantizes the bias.
Bit-exact against ORT on the host (under the sanitizers, every intermediate tensor) and
in QEMU, with the work and the weights of the dead rows gone."""

from __future__ import annotations

import shutil

import numpy as np
import onnx
import pytest
from conftest import SANITIZE
from modelgen import conv_batch_model, random_conv_config
from onnx import numpy_helper

import codegen
from codegen.api import report
from codegen.ops.qlinear_conv import constant_channel_bytes
from codegen.pipeline import Options, generate_sources

CROSS_TOOLS = shutil.which("arm-none-eabi-gcc") and shutil.which("qemu-system-arm")


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


@pytest.mark.skipif(not CROSS_TOOLS, reason="needs arm-none-eabi-gcc and qemu-system-arm")
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
