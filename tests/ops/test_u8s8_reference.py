"""The u8 x s8 hazard. On x86 without VNNI, ORT adds pairs of u8 x s8 products with
int16 saturation; the generated C computes the exact sum. verify probes ORT and, when it
saturates, compares against the same model with int8 weights moved to uint8. Both paths
are exercised here on any CPU: the probe can be forced with ONNX2MCU_ORT_U8S8_SATURATES."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import SANITIZE
from modelgen import ConvConfig, conv_batch_model
from numpy.typing import NDArray
from onnx import numpy_helper

import codegen
from codegen.arith.requant import output_scale, requantize_float_reference
from codegen.frontend.importer import import_model
from codegen.oracle.verify import (
    SATURATION_ENV,
    _probe_saturation,
    exact_u8s8_model,
    ort_saturates_u8s8,
    run_ort,
    u8s8_nodes,
)


def extreme_u8s8_model() -> tuple[Any, dict[str, NDArray[Any]]]:
    """1x1 convolutions whose pair sums overflow int16: x = 255, w = -128."""
    cfg = ConvConfig(x_dtype="uint8", w_dtype="int8", batch=1, channels=8, out_channels=4,
                     spatial=(3, 3), kernel=(1, 1), group=1, strides=(1, 1),
                     dilations=(1, 1), pads=None, auto_pad=None, per_channel=True, bias=False,
                     big_bias=False, kernel_shape_attr=False, seed=7)
    model = conv_batch_model([cfg])
    for init in model.graph.initializer:
        if init.name == "c0_w":
            init.raw_data = np.full((4, 8, 1, 1), -128, dtype=np.int8).tobytes()
        if init.name == "c0_xz":
            init.raw_data = np.array(0, dtype=np.uint8).tobytes()
        # An output quantization under which both sums land in range (exact: -261,120,
        # saturated: -131,072 per output), so that the two differ after requantization.
        if init.name == "c0_xs":
            init.raw_data = np.array(1.0, dtype=np.float32).tobytes()
        if init.name == "c0_ws":
            init.raw_data = np.full(4, 1 / 2048, dtype=np.float32).tobytes()
        if init.name == "c0_ys":
            init.raw_data = np.array(1.0, dtype=np.float32).tobytes()
        if init.name == "c0_yz":
            init.raw_data = np.array(255, dtype=np.uint8).tobytes()
    x = np.full((1, 8, 3, 3), 255, dtype=np.uint8)
    return model, {"x0": x}


def saturating_conv1x1(x: NDArray[Any], w: NDArray[Any], x_zp: int,
                       w_zp: int) -> NDArray[Any]:
    """The accumulator of a saturating ORT for a 1x1 convolution (pairs along channels)."""
    c = x.shape[1]
    xs = x.reshape(c, -1).astype(np.int64)
    ws = w.reshape(w.shape[0], c).astype(np.int64)
    if c % 2:
        xs, ws = np.vstack([xs, np.zeros((1, xs.shape[1]), np.int64)]), np.hstack(
            [ws, np.zeros((ws.shape[0], 1), np.int64)])
    prods = ws[:, :, None] * xs[None, :, :]  # [M, C, P]
    pairs = np.clip(prods[:, 0::2] + prods[:, 1::2], -32768, 32767).sum(axis=1)
    return pairs - x_zp * ws.sum(1)[:, None] - w_zp * xs.sum(0)[None, :] + c * x_zp * w_zp


def test_probe_matches_the_local_matmulinteger() -> None:
    assert isinstance(_probe_saturation(), bool)


@pytest.mark.parametrize("forced", ["0", "1"])
def test_probe_can_be_forced(forced: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SATURATION_ENV, forced)
    assert ort_saturates_u8s8() == (forced == "1")


def test_exact_reference_rewrite_is_the_same_mathematics() -> None:
    model, feeds = extreme_u8s8_model()
    graph = import_model(model)
    assert u8s8_nodes(graph) == ["c0_conv"]
    rewritten = exact_u8s8_model(model, graph)
    ours = codegen.run(model, feeds, cflags=SANITIZE)["y0"]
    exact = run_ort(rewritten, [feeds])[0]["y0"]
    assert np.array_equal(ours, exact)
    original = run_ort(model, [feeds])[0]["y0"]
    if _probe_saturation():
        # This CPU saturates: ORT on the original model differs, and the model of the
        # hazard predicts exactly what it computes.
        assert not np.array_equal(original, exact)
        p = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
        acc = saturating_conv1x1(feeds["x0"], p["c0_w"], int(p["c0_xz"]), int(p["c0_wz"][0]))
        scale = output_scale(float(p["c0_xs"]), p["c0_ws"], float(p["c0_ys"]))
        predicted = requantize_float_reference(acc, scale[:, None], int(p["c0_yz"]), 0, 255)
        assert np.array_equal(predicted.reshape(original.shape), original)
    else:
        assert np.array_equal(original, exact)


def test_saturation_model_differs_from_exact_arithmetic() -> None:
    x = np.full((1, 8, 3, 3), 255, dtype=np.uint8)
    w = np.full((4, 8, 1, 1), -128, dtype=np.int8)
    exact = (w.reshape(4, 8).astype(np.int64) @ x.reshape(8, 9).astype(np.int64))
    saturated = saturating_conv1x1(x, w, 0, 0)
    assert saturated[0, 0] == 4 * -32768 and exact[0, 0] == 8 * 255 * -128


@pytest.mark.parametrize("forced", ["0", "1"])
def test_verify_explains_which_reference_it_used(forced: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    model, feeds = extreme_u8s8_model()
    monkeypatch.setenv(SATURATION_ENV, forced)
    if forced == "0" and _probe_saturation():
        pytest.skip("this CPU's ORT saturates: comparing with the model as given cannot match")
    report = codegen.verify(model, inputs=feeds, cflags=SANITIZE)
    assert report.ok, report.outputs
    assert len(report.notes) == 1
    if forced == "1":
        assert report.reference == "the model with int8 weights moved to uint8"
        assert "saturates" in report.notes[0]
    else:
        assert report.reference == "the model as given"
        assert "exactly" in report.notes[0]
