"""The worked example, examples/stripes/walkthrough.sh, as a user runs it: a float CNN and
its data set through quantize, inspect, generate (and make), verify --dataset, validate and
report, on the host and, with the cross tools, on Cortex-M boards in QEMU."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "stripes"


def test_the_walkthrough_runs_from_float_model_to_validated_firmware(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}"
                                 f"{os.environ.get('PATH', '')}"}
    work = tmp_path / "work"
    result = subprocess.run(["bash", str(EXAMPLE / "walkthrough.sh"), str(work)], env=env,
                            capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "MinMax calibration on 200 sample(s)" in out
    assert "float islands: none (every operator runs in integer kernels)" in out
    assert (work / "stripes_c" / "build" / "stripes_q_main").is_file()
    assert "result: BIT-EXACT (800 output elements identical to ONNX Runtime)" in out
    verified = re.search(r"accuracy: ([\d.]+)% of 200 samples", out)
    validated = re.findall(r"accuracy: float model ([\d.]+)%, generated C ([\d.]+)%, ORT "
                           r"quantized ([\d.]+)%", out)
    assert verified and validated, out
    for float_accuracy, c_accuracy, ort_accuracy in validated:
        assert c_accuracy == ort_accuracy == verified.group(1)
        assert float(float_accuracy) - float(c_accuracy) <= 2.0  # the quantization's loss
    assert out.count("bit-exact (800 elements)") == len(validated)
    if shutil.which("arm-none-eabi-gcc") and shutil.which("qemu-system-arm"):
        assert len(validated) == 2 and "board cortex-m0plus, requant int" in out
        assert re.search(r"time: [\d.]+ ms per inference at 80 MHz", out), out
