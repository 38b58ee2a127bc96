"""One AMD Quark quantization for the fresh-model survey, run with the Quark venv's python
(setup_quark_venv.sh): amd-quark 0.13 pins onnx<=1.22. make_models.py calls it once per
model (Quark keeps state between quantize_model calls):

    /tmp/survey/venv-quark/bin/python tests/survey/quantize_quark.py \
        FLOAT.onnx CONFIG OUT.onnx 1,3,32,32

CONFIG is one of:
  quark_xint8  XINT8_QCONFIG: int8, symmetric power-of-two scales (AMD NPU preset)
  quark_s8s8   QConfig.get_default_config("S8S8_AAWS"): int8 activations and weights, QDQ
  quark_u8s8   QConfig.get_default_config("U8S8_AAWS"): uint8 activations, int8 weights
  quark_a16w8  A16W8_QCONFIG: int16 activations, int8 weights (com.microsoft Q/DQ)
  quark_u16s8  QConfig.get_default_config("U16S8_AAWS"): uint16 activations, int8 weights
It prints one line "ENTRY {json}" with the quantizer's description, or with "error".
The calibration data are the same 8 random samples make_models.py uses.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

import numpy as np
import onnx


def calibration(shape: tuple[int, ...], seed: int = 11) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, shape).astype(np.float32) for _ in range(8)]


def config_for(name: str) -> tuple[Any, str]:
    import quark.onnx as q
    if name == "quark_xint8":
        return q.XINT8_QCONFIG, "ModelQuantizer(XINT8_QCONFIG)"
    if name == "quark_a16w8":
        return q.A16W8_QCONFIG, "ModelQuantizer(A16W8_QCONFIG)"
    legacy = {"quark_s8s8": "S8S8_AAWS", "quark_u8s8": "U8S8_AAWS", "quark_u16s8": "U16S8_AAWS"}
    if name in legacy:
        return (q.QConfig.get_default_config(legacy[name]),
                f"ModelQuantizer(QConfig.get_default_config({legacy[name]!r}))")
    raise SystemExit(f"unknown Quark configuration {name}")


def main() -> None:
    source, config_name, target = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]).resolve()
    shape = tuple(int(d) for d in sys.argv[4].split(","))
    entry: dict[str, Any] = {}
    try:
        import onnxruntime
        import quark
        from onnxruntime.quantization import CalibrationDataReader

        class Reader(CalibrationDataReader):  # type: ignore[misc]
            def __init__(self) -> None:
                self._feeds = iter([{"input": x} for x in calibration(shape)])

            def get_next(self) -> dict[str, np.ndarray] | None:
                return next(self._feeds, None)

        config, how = config_for(config_name)
        entry["producer"] = (f"torch 2.13.0 dynamo; amd-quark {quark.__version__} "
                             f"(onnx {onnx.__version__}, onnxruntime {onnxruntime.__version__})")
        entry["quantizer_config"] = how
        with tempfile.TemporaryDirectory() as tmp:
            os.chdir(tmp)  # Quark writes quantized_info.csv and caches into the working folder
            import quark.onnx as q
            q.ModelQuantizer(config).quantize_model(str(source.resolve()), str(target), Reader())
        model = onnx.load(str(target))
        for node in model.graph.node:
            node.doc_string = ""
        onnx.save(model, str(target))
        entry["file"] = target.name
        entry["bytes"] = target.stat().st_size
        domains = sorted({n.domain or "ai.onnx" for n in model.graph.node})
        entry["domains"] = domains
    except BaseException as exc:
        if isinstance(exc, SystemExit) and not exc.code:
            raise
        text = f"{type(exc).__name__}: {exc}".strip()
        lines = [x for x in text.splitlines() if x.strip()]
        entry["error"] = (lines[0] if lines else type(exc).__name__)[:300]
        entry["error_stage"] = "quantize"
        entry["traceback_tail"] = traceback.format_exc().splitlines()[-3:]
        if target.exists():
            target.unlink()
    print("ENTRY " + json.dumps(entry), flush=True)


if __name__ == "__main__":
    main()
