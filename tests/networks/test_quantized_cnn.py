"""What a new user does: a small float CNN (Conv and Relu only), quantized with ONNX
Runtime's quantize_static in QOperator format, generated, built and compared with ORT,
both through `verify` and through the generated project's own harness."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from conftest import SANITIZE, ort_reference

import codegen

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from make_tiny_cnn import INPUT_SHAPE, float_cnn, quantize

VARIANTS = [("int8", True), ("uint8", True), ("int8", False), ("uint8", False)]


@pytest.fixture(scope="module", params=VARIANTS, ids=lambda v: f"{v[0]}-act-"
                f"{'per-channel' if v[1] else 'per-tensor'}")
def quantized(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    activations, per_channel = request.param
    path = tmp_path_factory.mktemp("cnn") / f"cnn_{activations}.onnx"
    quantize(float_cnn(), path, activations, per_channel)
    return path


@pytest.mark.parametrize("requant", ["float", "int"])
def test_verify_is_bit_exact(quantized: Path, requant: str) -> None:
    report = codegen.verify(quantized, samples=4, seed=11, requant=requant, cflags=SANITIZE)
    assert report.ok, report.outputs
    assert report.outputs[0].elements == 4 * 10 * 16 * 16


def test_generated_harness_matches_ort(tmp_path: Path) -> None:
    """The project's own Makefile under the sanitizers, on one variant (verify proves all
    four above; the Makefile and the harness are the same for each)."""
    quantized = tmp_path / "cnn_uint8.onnx"
    quantize(float_cnn(), quantized, "uint8", True)
    out = tmp_path / "out"
    result = codegen.generate(quantized, out)
    flags = " ".join(SANITIZE)
    subprocess.run(["make", "-C", str(out), f"CFLAGS={flags}", f"LDFLAGS={flags}"], check=True,
                   capture_output=True)
    rng = np.random.default_rng(5)
    x = rng.uniform(-1.2, 1.2, INPUT_SHAPE).astype(np.float32)
    (tmp_path / "in.bin").write_bytes(x.astype("<f4").tobytes())
    subprocess.run([str(out / "build" / f"{result.name}_main"), str(tmp_path / "in.bin"),
                    str(tmp_path / "out.bin")], check=True)
    got = np.frombuffer((tmp_path / "out.bin").read_bytes(), dtype="<f4")
    # verify's reference: where this CPU's ORT saturates u8 x s8 products, the model with
    # its int8 weights moved to uint8.
    want = ort_reference(onnx.load(str(quantized)), [{"input": x}])[0]
    (ref,) = want.values()
    assert np.array_equal(got.view(np.uint32), ref.reshape(-1).view(np.uint32))


def test_bit_exact_under_aggressive_optimization(quantized: Path) -> None:
    """-O3, -march=native and FP contraction must not change a single bit: the kernels
    never leave a float32 product to a place where the compiler could fuse it."""
    flags = ("-O3", "-march=native", "-ffp-contract=fast", "-funroll-loops")
    for requant in ("float", "int"):
        report = codegen.verify(quantized, samples=3, requant=requant, cflags=flags)
        assert report.ok, (requant, report.outputs)
