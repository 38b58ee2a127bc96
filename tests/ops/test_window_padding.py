"""auto_pad SAME_UPPER/SAME_LOWER/VALID over every small (size, kernel, stride), including
kernel < stride, where ORT's padding differs from a naive reading of the spec, and
differs between its convolutions and its pools."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from conftest import SANITIZE
from modelgen import ConvConfig, conv_batch_model, graph_model
from onnx import helper

import codegen


def padding_configs(mode: str) -> list[ConvConfig]:
    configs = []
    for i, (size, k, s) in enumerate(itertools.product(range(1, 12), range(1, 5), range(1, 6))):
        if mode == "VALID" and k > size:
            continue
        configs.append(ConvConfig(
            x_dtype="uint8", w_dtype="uint8", batch=1, channels=2, out_channels=2,
            spatial=(size,) if i % 2 else (2, size), kernel=(k,) if i % 2 else (1, k),
            group=1, strides=(s,) if i % 2 else (1, s), dilations=(1,) if i % 2 else (1, 1),
            pads=None, auto_pad=mode, per_channel=False, bias=False, big_bias=False,
            kernel_shape_attr=False, seed=i))
    return configs


@pytest.mark.parametrize("mode", ["SAME_UPPER", "SAME_LOWER", "VALID"])
def test_auto_pad_matches_ort(mode: str) -> None:
    configs = padding_configs(mode)
    # One model per 60 convolutions keeps the number of compilations small.
    for start in range(0, len(configs), 60):
        chunk = configs[start:start + 60]
        report = codegen.verify(conv_batch_model(chunk), samples=1, cflags=SANITIZE)
        bad = [chunk[int(o.name[1:])].describe() for o in report.outputs if o.mismatches]
        assert not bad, bad


def window_sweep_model(op: str, mode: str) -> Any:
    """One node per (size, kernel, stride) of `op` over a [1, 2, 2, size] uint8 input (the
    nodes of one size read the same input: fewer tensors for the harness to pass)."""
    nodes, inputs, inits, outputs = [], {}, {}, {}
    rng = np.random.default_rng(0)
    for i, (size, k, s) in enumerate(itertools.product(range(1, 12), range(1, 5), range(1, 6))):
        if mode == "VALID" and k > size:
            continue
        p, x = f"n{i}_", f"x{size}"
        attrs = {"auto_pad": mode, "strides": [1, s]}
        inputs[x] = ("uint8", [1, 2, 2, size])
        if op == "ConvInteger":
            inits[p + "w"] = rng.integers(0, 256, (2, 2, 1, k)).astype(np.uint8)
            nodes.append(helper.make_node(op, [x, p + "w"], [p + "y"], **attrs))
            outputs[p + "y"] = "int32"
            continue
        names = [x]
        if op == "QLinearAveragePool":
            for n, v in (("xs", np.float32(0.1)), ("xz", np.uint8(3)), ("ys", np.float32(0.05)),
                         ("yz", np.uint8(5))):
                inits[p + n] = np.array(v)
                names.append(p + n)
        nodes.append(helper.make_node(op, names, [p + "y"], kernel_shape=[1, k],
                                      domain="com.microsoft" if op.startswith("QLinear") else "",
                                      **attrs))
        outputs[p + "y"] = "uint8"
    return graph_model(nodes, inputs, outputs, inits, opset=13, ms_domain=True)


@pytest.mark.parametrize("op", ["ConvInteger", "MaxPool", "QLinearAveragePool"])
@pytest.mark.parametrize("mode", ["SAME_UPPER", "SAME_LOWER", "VALID"])
def test_auto_pad_of_other_window_ops(op: str, mode: str) -> None:
    report = codegen.verify(window_sweep_model(op, mode), samples=1, cflags=SANITIZE)
    assert report.ok, [o.name for o in report.outputs if o.mismatches]
