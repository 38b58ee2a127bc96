"""QLinearGlobalAveragePool and QLinearAveragePool against ONNX Runtime: both layouts
and many sizes for the global pool; pads, strides, ceil_mode and count_include_pad for
the windowed pool, whose float path and global shortcut are both exercised."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import SANITIZE, in_qemu
from modelgen import RANGE, RANGE16, Case, combine, graph_model
from onnx import helper

import codegen
from codegen.options import Options
from codegen.pipeline import generate_sources

F32 = np.float32


def quant_inits(rng: np.random.Generator, p: str, dtype: str, size: int,
                with_y_zp: bool = True) -> dict[str, Any]:
    lo, hi = RANGE[dtype]
    x_scale = F32(rng.uniform(0.005, 0.05))
    # y_scale near x_scale (and sometimes far from it) keeps outputs inside the range.
    y_scale = F32(x_scale * rng.choice([rng.uniform(0.3, 3.0), rng.uniform(0.01, 0.05)]))
    inits = {f"{p}xs": np.array(x_scale), f"{p}xz": np.array(rng.integers(lo, hi + 1), dtype),
             f"{p}ys": np.array(y_scale)}
    if with_y_zp:
        inits[f"{p}yz"] = np.array(rng.integers(lo, hi + 1), dtype)
    return inits


def global_pool_model() -> Any:
    """Both layouts, planes of many sizes (the channels-first ones at every alignment)."""
    rng = np.random.default_rng(1)
    nodes, inputs, inits, outputs = [], {}, {}, {}
    shapes = [(1, 3, 7, 7), (2, 5, 1, 1), (1, 4, 32, 32), (1, 2, 13), (1, 3, 2, 3, 4),
              (1, 8, 100, 3)]
    for i, shape in enumerate(shapes * 2):
        p = f"g{i}_"
        dtype = str(rng.choice(["uint8", "int8"]))
        last = i % 2
        if last:
            shape = (shape[0], *shape[2:], shape[1])
        inits.update(quant_inits(rng, p, dtype, int(np.prod(shape[2:]))))
        nodes.append(helper.make_node("QLinearGlobalAveragePool",
                                      [f"{p}x", f"{p}xs", f"{p}xz", f"{p}ys", f"{p}yz"],
                                      [f"{p}y"], domain="com.microsoft", channels_last=last))
        inputs[f"{p}x"] = (dtype, list(shape))
        outputs[f"{p}y"] = dtype
    return graph_model(nodes, inputs, outputs, inits, opset=13, ms_domain=True)


@pytest.mark.parametrize("requant", ["float", "int"])
def test_global_average_pool(requant: str) -> None:
    report = codegen.verify(global_pool_model(), samples=3, requant=requant, cflags=SANITIZE)
    assert report.ok, [o for o in report.outputs if o.mismatches]


@in_qemu
def test_global_average_pool_on_a_dsp_core() -> None:
    """The word-at-a-time sum (USADA8) of the channels-first planes, in QEMU."""
    report = codegen.verify(global_pool_model(), board="cortex-m4f", samples=3)
    assert report.ok, [o for o in report.outputs if o.mismatches]


def random_average_pool(rng: np.random.Generator, i: int) -> tuple[Any, dict, dict, dict]:
    p = f"a{i}_"
    dtype = str(rng.choice(["uint8", "int8"]))
    ndim = int(rng.choice([1, 2]))
    spatial = [int(v) for v in rng.integers(1, 12, ndim)]
    if rng.random() < 0.15:  # the whole input: ORT's global shortcut
        kernel, strides, pads = spatial, [1] * ndim, [0] * (2 * ndim)
    else:
        kernel = [int(min(k, v + 1)) for k, v in zip(rng.integers(1, 5, ndim), spatial,
                                                     strict=True)]
        strides = [int(v) for v in rng.integers(1, 4, ndim)]
        pads = [int(rng.integers(0, kernel[j % ndim])) for j in range(2 * ndim)]
    attrs: dict[str, Any] = {"kernel_shape": kernel, "strides": strides,
                             "count_include_pad": int(rng.integers(0, 2))}
    if rng.random() < 0.8:
        attrs["pads"] = pads
        attrs["ceil_mode"] = int(rng.integers(0, 2))
    else:
        attrs["auto_pad"] = str(rng.choice(["SAME_UPPER", "SAME_LOWER", "VALID"]))
    with_y_zp = bool(rng.random() < 0.8)
    inits = quant_inits(rng, p, dtype, int(np.prod(kernel)), with_y_zp)
    names = [f"{p}x", f"{p}xs", f"{p}xz", f"{p}ys"] + ([f"{p}yz"] if with_y_zp else [])
    node = helper.make_node("QLinearAveragePool", names, [f"{p}y"], name=f"{p}pool",
                            domain="com.microsoft", **attrs)
    shape = [int(rng.integers(1, 3)), int(rng.integers(1, 4)), *spatial]
    return node, {f"{p}x": (dtype, shape)}, inits, {f"{p}y": dtype}


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("requant", ["float", "int"])
def test_average_pool(seed: int, requant: str) -> None:
    rng = np.random.default_rng(50 + seed)
    cases: list[Case] = []
    while len(cases) < 25:
        case = random_average_pool(rng, len(cases))
        x_shape = next(iter(case[1].values()))[1]
        attrs = {a.name: helper.get_attribute_value(a) for a in case[0].attribute}
        if "pads" in attrs:  # skip the few geometries whose output would be empty
            nd = len(x_shape) - 2
            spans = [x_shape[2 + d] + attrs["pads"][d] + attrs["pads"][nd + d] -
                     attrs["kernel_shape"][d] for d in range(nd)]
            if min(spans) < 0:
                continue
        cases.append(case)
    report = codegen.verify(combine(cases), samples=2, seed=seed, requant=requant,
                            cflags=SANITIZE)
    assert report.ok, [(c[0].name, c[0].attribute, o) for c, o in
                       zip(cases, report.outputs, strict=True) if o.mismatches]


def maxpool16_model(dtype: str) -> Any:
    """DequantizeLinear (16-bit) -> MaxPool -> QuantizeLinear with one quantization, as
    ORT's A16W8 quantizer writes it: 1-D and 2-D windows, pads, strides, dilations,
    ceil_mode."""
    rng = np.random.default_rng(7 if dtype == "int16" else 8)
    lo, hi = RANGE16[dtype]
    nodes, inputs, inits, outputs = [], {}, {}, {}
    windows: list[tuple[list[int], dict[str, Any]]] = [
        ([1, 3, 9, 9], {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
        ([2, 2, 8, 7], {"kernel_shape": [2, 3], "ceil_mode": 1, "strides": [2, 2]}),
        ([1, 4, 10, 10], {"kernel_shape": [3, 3], "dilations": [2, 2], "pads": [2, 1, 0, 2]}),
        ([1, 5, 17], {"kernel_shape": [4], "strides": [3], "pads": [2, 1]}),
    ]
    for i, (shape, attrs) in enumerate(windows):
        p = f"m{i}_"
        inits[f"{p}s"] = np.array(F32(rng.uniform(1e-5, 1e-3)))
        inits[f"{p}z"] = np.array(rng.integers(lo, hi + 1), dtype)
        nodes += [helper.make_node("DequantizeLinear", [f"{p}x", f"{p}s", f"{p}z"], [f"{p}f"]),
                  helper.make_node("MaxPool", [f"{p}f"], [f"{p}g"], **attrs),
                  helper.make_node("QuantizeLinear", [f"{p}g", f"{p}s", f"{p}z"], [f"{p}y"])]
        inputs[f"{p}x"] = (dtype, shape)
        outputs[f"{p}y"] = dtype
    return graph_model(nodes, inputs, outputs, inits, opset=21)


@pytest.mark.parametrize("dtype", ["int16", "uint16"])
def test_16bit_max_pool_on_the_integers(dtype: str) -> None:
    """ORT computes a 16-bit DQ -> MaxPool -> Q in float; the maximum commutes with the
    monotone quantization, so the C takes it on the 16-bit integers, bit-exact with ORT;
    `convert` writes the 16-bit MaxPool ORT has no kernel for on float32 (exact)."""
    model = maxpool16_model(dtype)
    suffix = "s16" if dtype == "int16" else "u16"
    for integer_only in (False, True):
        gen = generate_sources(model, Options(integer_only=integer_only))
        assert {c.function for c in gen.program.calls} == {f"q8_maxpool_{suffix}"}
        report = codegen.verify(model, samples=3, integer_only=integer_only, cflags=SANITIZE)
        assert report.ok, report.outputs
