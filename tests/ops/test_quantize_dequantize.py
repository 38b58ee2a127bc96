"""QuantizeLinear and DequantizeLinear against ONNX Runtime at rounding boundaries:
opsets 10/13/19/21 and ORT's com.microsoft operators, per tensor and per axis,
uint8/int8/uint16/int16 (and int32 dequantization), including NaN, infinities,
saturation and exact .5 ties."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import SANITIZE
from modelgen import qdq_model
from numpy.typing import NDArray

import codegen

F32 = np.float32
RANGES = {"uint8": (0, 255), "int8": (-128, 127), "uint16": (0, 65535),
          "int16": (-32768, 32767)}
MS = "com.microsoft"


def boundary_floats(scale: NDArray[Any], zp: NDArray[Any], shape: tuple[int, ...],
                    axis: int | None, rng: np.random.Generator,
                    dtype: str = "uint8") -> NDArray[Any]:
    """x on, just below and just above every k + 0.5 boundary (across the 8-bit types'
    ranges, or the 16-bit type's), plus specials."""
    bshape = [1] * len(shape)
    if axis is not None:
        bshape[axis] = -1
    s = np.broadcast_to(scale.reshape(bshape) if axis is not None else scale, shape)
    z = np.broadcast_to(zp.reshape(bshape) if axis is not None else zp, shape)
    lo, hi = RANGES[dtype] if dtype.endswith("16") else (-128, 255)
    k = rng.integers(lo - 12, hi + 16, size=shape) - z.astype(np.int64)
    x = ((k + 0.5) * s.astype(np.float64)).astype(F32)
    step = rng.integers(-1, 2, size=shape)
    x = np.where(step > 0, np.nextafter(x, F32(np.inf)), x)
    x = np.where(step < 0, np.nextafter(x, F32(-np.inf)), x)
    flat = x.reshape(-1)
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30, -1e30, 1e-40, -1e-40],
                        dtype=F32)
    flat[: specials.size] = specials
    return flat.reshape(shape)


CASES = [
    # opset, dtype, shape, axis
    (10, "uint8", (2, 200), None),
    (10, "int8", (2, 200), None),
    (13, "uint8", (3, 4, 37), 1),
    (13, "int8", (3, 4, 37), 0),
    (13, "int8", (5, 70), -1),
    (19, "uint8", (4, 90), 0),
    (19, "int8", (2, 3, 50), None),
    (21, "uint8", (6, 41), 1),
    (21, "int8", (2, 5, 33), 2),
    (21, "uint16", (3, 400), None),
    (21, "int16", (2, 5, 90), 1),
    (1, "uint16", (4, 100), 0),  # com.microsoft (AMD Quark's A16W8)
    (1, "int16", (3, 130), None),
]


@pytest.mark.parametrize("opset,dtype,shape,axis", CASES)
def test_quantize_linear_boundaries(opset: int, dtype: str, shape: tuple[int, ...],
                                    axis: int | None) -> None:
    rng = np.random.default_rng(opset * 100 + len(shape))
    n = 1 if axis is None else shape[axis]
    scale = rng.uniform(0.001, 0.3, size=n).astype(F32)
    lo, hi = RANGES[dtype]
    zp = rng.integers(lo, hi + 1, size=n).astype(dtype)
    if axis is None:
        scale, zp = scale.reshape(()), zp.reshape(())
    domain = MS if opset == 1 else ""
    model = qdq_model("QuantizeLinear", "float32", dtype, shape, scale, zp, axis,
                      21 if domain else opset, domain)
    x = boundary_floats(scale, zp.astype(np.int64), shape, axis, rng, dtype)
    report = codegen.verify(model, inputs={"x": x}, cflags=SANITIZE)
    assert report.ok, report.outputs
    # ORT's arithmetic, restated: a true float32 division, clamp (NaN -> qmin), rne.
    got = codegen.run(model, {"x": x})["y"].astype(np.int64)
    bshape = [1] * len(shape)
    if axis is not None:
        bshape[axis] = -1
    s = scale.reshape(bshape) if axis is not None else scale
    z = (zp.reshape(bshape) if axis is not None else zp).astype(np.int64)
    with np.errstate(invalid="ignore"):
        v = (x / s).astype(F32)
    v = np.where(np.isnan(v), F32(lo) - z, v)
    want = np.rint(np.clip(v, lo - z, hi - z)).astype(np.int64) + z
    assert np.array_equal(got, want)


@pytest.mark.parametrize("opset", [13, 19, 21])
def test_quantize_linear_without_zero_point_defaults_to_uint8(opset: int) -> None:
    model = qdq_model("QuantizeLinear", "float32", "uint8", (4, 64), np.array(0.02, F32), None,
                      None, opset)
    x = np.linspace(-1, 6, 256, dtype=F32).reshape(4, 64)
    assert codegen.verify(model, inputs={"x": x}, cflags=SANITIZE).ok


def test_quantize_linear_output_dtype_attribute_opset21() -> None:
    from modelgen import make_model
    from onnx import TensorProto, helper, numpy_helper

    node = helper.make_node("QuantizeLinear", ["x", "s"], ["y"], output_dtype=TensorProto.INT8)
    model = make_model([node], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [100])],
                       [helper.make_tensor_value_info("y", TensorProto.INT8, [100])],
                       [numpy_helper.from_array(np.array(0.05, F32), "s")], opset=21)
    x = np.linspace(-8, 8, 100, dtype=F32)
    assert codegen.verify(model, inputs={"x": x}, cflags=SANITIZE).ok


@pytest.mark.parametrize("opset,dtype,shape,axis", [
    (10, "uint8", (256,), None), (10, "int8", (256,), None), (13, "uint8", (4, 256), 0),
    (13, "int8", (2, 3, 256), 1), (19, "int8", (256, 3), 1), (21, "uint8", (2, 256), None),
    (13, "int32", (500,), None), (21, "int32", (3, 100), 0),
    (21, "uint16", (65536,), None), (21, "int16", (2, 65536), 0), (1, "int16", (65536, 2), 1),
])
def test_dequantize_linear(opset: int, dtype: str, shape: tuple[int, ...],
                           axis: int | None) -> None:
    rng = np.random.default_rng(opset + len(shape))
    n = 1 if axis is None else shape[axis]
    scale = rng.uniform(1e-4, 2.0, size=n).astype(F32)
    if dtype == "int32":
        zp = np.zeros(n, dtype=np.int32)
        x = rng.integers(-(2**31), 2**31 - 1, size=shape).astype(np.int32)
    else:
        lo, hi = RANGES[dtype]
        zp = rng.integers(lo, hi + 1, size=n).astype(dtype)
        # Every value of the type occurs, in random positions.
        x = np.resize(np.arange(lo, hi + 1, dtype=dtype), shape)
        rng.shuffle(x.reshape(-1))
    if axis is None:
        scale, zp = scale.reshape(()), zp.reshape(())
    domain = MS if opset == 1 else ""
    model = qdq_model("DequantizeLinear", dtype, "float32", shape, scale, zp, axis,
                      21 if domain else opset, domain)
    report = codegen.verify(model, inputs={"x": x}, cflags=SANITIZE)
    assert report.ok, report.outputs
