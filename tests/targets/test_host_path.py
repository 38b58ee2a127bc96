"""The host build: -O3 by default, -march=native on request (--native), bit-exact either
way, and refused for cross targets."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from zoo import quantized_model

import codegen
from codegen.options import Options
from codegen.pipeline import generate_sources


@pytest.mark.parametrize("model", ["resnet8", "mobilenet_v1_025", "ad_autoencoder"])
def test_native_build_is_bit_exact(model: str) -> None:
    report = codegen.verify(quantized_model(model, "u8-pc"), samples=2, native=True)
    assert report.ok, report.outputs


def test_native_flag_reaches_the_makefile_only_when_asked() -> None:
    model = quantized_model("ad_autoencoder", "u8-pc")
    plain = generate_sources(model, Options())
    native = generate_sources(model, Options(native=True))
    assert "-O3" in plain.files["Makefile"].decode()
    assert "-march=native" not in plain.files["Makefile"].decode()
    assert "-march=native" in native.files["Makefile"].decode()
    assert plain.files[f"{plain.name}.c"] == native.files[f"{native.name}.c"]


def test_native_is_refused_for_a_cortex_m_board(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    path.write_bytes(quantized_model("ad_autoencoder", "u8-pc").SerializeToString())
    result = subprocess.run([sys.executable, "-m", "codegen.cli", "generate", str(path), "-o",
                             str(tmp_path / "out"), "--board", "cortex-m4f", "--native"],
                            capture_output=True, text=True)
    assert result.returncode == 2 and "--native" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "out").exists()
