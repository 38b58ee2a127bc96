"""Make the fresh-model survey's models: archs.py's architectures exported by torch 2.13
(TorchScript exporter at opsets 13, 14 and 17; dynamo exporter at opset 18) and quantized
by the tools users use: ONNX Runtime's quantize_static (after quant_pre_process) and
quantize_dynamic, NNCF's nncf.quantize on the ONNX model, and AMD Quark's ONNX
ModelQuantizer (quantize_quark.py, run with the Quark venv's python: amd-quark pins an
older onnx). Not part of `make test`.

    /tmp/torch-venv/bin/python tests/survey/make_models.py [OUT]   # default /tmp/survey/models

It writes OUT/ARCH_EXPORTER_QUANTIZER.onnx, the float exports in OUT/float/, and
OUT/models.json: one entry per attempted model (file, arch, exporter, quantizer,
producer versions; or "error" when the exporter or the quantizer failed).
Options: --archs a,b (only those), --workers N (default 2), --skip-quark,
--quark-python PATH (default /tmp/survey/venv-quark/bin/python), --batch 2 (the second
batch's architectures, archs_batch2.py, instead of archs.py's).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import onnx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

# The batches of architectures: modules with ARCHITECTURES and build() (archs.py's form).
BATCHES = {1: "archs", 2: "archs_batch2"}
CALIBRATION_COUNT = 8
EXPORTERS = {"torchscript13": 13, "torchscript14": 14, "torchscript17": 17, "dynamo18": 18}
# The ORT static configurations: (format, activation type, per-channel weights).
STATIC = {
    "ort_qdq_u8s8": ("QDQ", "QUInt8", True),
    "ort_qdq_s8s8": ("QDQ", "QInt8", True),
    "ort_qop_u8s8": ("QOperator", "QUInt8", True),
    "ort_qdq_a16w8_u16": ("QDQ", "QUInt16", True),
    "ort_qdq_a16w8_s16": ("QDQ", "QInt16", True),
}
DYNAMIC = {"ort_dynamic_s8": "QInt8", "ort_dynamic_u8": "QUInt8"}
NNCF = ("nncf_default", "nncf_transformer")
QUARK = ("quark_xint8", "quark_s8s8", "quark_u8s8", "quark_a16w8", "quark_u16s8")
# Which exporter each quantizer configuration gets, to keep the batch at ~330 models:
# the common u8/s8 QDQ on every export; the others on the default (dynamo) export and the
# TorchScript export at the default opset 17.
PLAN: dict[str, tuple[str, ...]] = {
    "ort_qdq_u8s8": tuple(EXPORTERS),
    "ort_qdq_s8s8": ("torchscript17", "dynamo18"),
    "ort_qop_u8s8": ("torchscript17", "dynamo18"),
    "ort_qdq_a16w8_u16": ("dynamo18",),
    "ort_qdq_a16w8_s16": ("torchscript17",),
    "ort_dynamic_s8": ("dynamo18",),
    "ort_dynamic_u8": ("torchscript17",),
    "nncf_default": ("dynamo18",),
    "nncf_transformer": ("dynamo18",),  # transformer-family archs only
    **{q: ("dynamo18",) for q in QUARK},
}


def arch_module(batch: int) -> ModuleType:
    """The module of the batch's architectures (ARCHITECTURES, build)."""
    return importlib.import_module(BATCHES[batch])


def first_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    lines = [x for x in text.splitlines() if x.strip()]
    return (lines[0] if lines else type(exc).__name__)[:300]


def calibration(shape: tuple[int, ...], seed: int = 11) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, shape).astype(np.float32) for _ in range(CALIBRATION_COUNT)]


def compact(path: Path) -> None:
    """Drop the exporters' per-node documentation and metadata (the dynamo exporter's stack
    traces take most of a small model's bytes): no semantics change."""
    model = onnx.load(str(path))
    for node in model.graph.node:
        node.doc_string = ""
        del node.metadata_props[:]
    for value in [*model.graph.input, *model.graph.output, *model.graph.value_info]:
        value.doc_string = ""
        del value.metadata_props[:]
    onnx.save(model, str(path))


def export(arch: str, exporter: str, path: Path, batch: int = 1) -> dict[str, Any]:
    import torch
    net, shape = arch_module(batch).build(arch)
    args = (torch.randn(shape),)
    with torch.no_grad():
        out = net(*args)
    n_out = len(out) if isinstance(out, tuple) else 1
    outputs = ["output"] if n_out == 1 else [f"output{i}" for i in range(n_out)]
    opset = EXPORTERS[exporter]
    if exporter.startswith("dynamo"):
        torch.onnx.export(net, args, str(path), input_names=["input"], output_names=outputs,
                          opset_version=opset, dynamo=True, external_data=False)
    else:
        torch.onnx.export(net, args, str(path), input_names=["input"], output_names=outputs,
                          opset_version=opset, dynamo=False)
    compact(path)
    onnx.checker.check_model(str(path))
    return {"shape": list(shape)}


class Reader:
    """An onnxruntime CalibrationDataReader over the random calibration samples."""

    def __init__(self, name: str, shape: tuple[int, ...]) -> None:
        self._feeds = iter([{name: x} for x in calibration(shape)])

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._feeds, None)


def prepare(source: Path, prepared: Path) -> str:
    """quant_pre_process as ORT's documentation runs it; where its symbolic shape inference
    fails, again without it (as the error message advises). Returns a note."""
    from onnxruntime.quantization import quant_pre_process
    try:
        quant_pre_process(str(source), str(prepared))
        return ""
    except Exception as exc:
        quant_pre_process(str(source), str(prepared), skip_symbolic_shape=True)
        return f"quant_pre_process needed skip_symbolic_shape=True ({first_line(exc)})"


def quantize_ort(config: str, source: Path, target: Path, shape: tuple[int, ...],
                 tmp: Path) -> dict[str, Any]:
    from onnxruntime.quantization import (
        QuantFormat,
        QuantType,
        quantize_dynamic,
        quantize_static,
    )
    prepared = tmp / f"{target.stem}_prepared.onnx"
    note = prepare(source, prepared)
    if config in DYNAMIC:
        quantize_dynamic(str(prepared), str(target), weight_type=QuantType[DYNAMIC[config]])
        how = f"quantize_dynamic weight_type={DYNAMIC[config]}"
    else:
        fmt, act, per_channel = STATIC[config]
        quantize_static(str(prepared), str(target), Reader("input", shape),
                        quant_format=QuantFormat[fmt], activation_type=QuantType[act],
                        weight_type=QuantType.QInt8, per_channel=per_channel)
        how = (f"quantize_static format={fmt} activation={act} weight=QInt8 "
               f"per_channel={per_channel}")
    return {"quantizer_config": how + (f"; {note}" if note else "")}


def quantize_nncf(config: str, source: Path, target: Path,
                  shape: tuple[int, ...]) -> dict[str, Any]:
    import nncf
    model = onnx.load(str(source))
    dataset = nncf.Dataset(calibration(shape), lambda x: {"input": x})
    kwargs: dict[str, Any] = {"subset_size": CALIBRATION_COUNT}
    if config == "nncf_transformer":
        kwargs["model_type"] = nncf.ModelType.TRANSFORMER
    quantized = nncf.quantize(model, dataset, **kwargs)
    onnx.save(quantized, str(target))
    return {"quantizer_config": "nncf.quantize(onnx model" + (
        ", model_type=ModelType.TRANSFORMER)" if config == "nncf_transformer" else ")")}


def versions() -> dict[str, str]:
    import nncf
    import onnxruntime
    import torch
    return {"torch": torch.__version__, "onnx": onnx.__version__,
            "onnxruntime": onnxruntime.__version__, "nncf": nncf.__version__}


def make_arch(arch: str, out: str, batch: int = 1) -> list[dict[str, Any]]:
    """Every export and every non-Quark quantization of one architecture (one worker)."""
    import torch
    torch.set_num_threads(1)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    ARCHITECTURES = arch_module(batch).ARCHITECTURES
    outdir = Path(out)
    family = ARCHITECTURES[arch][2]
    vers = versions()
    entries: list[dict[str, Any]] = []
    exported: dict[str, Path] = {}
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        for exporter, opset in EXPORTERS.items():
            path = outdir / "float" / f"{arch}_{exporter}.onnx"
            t0 = time.time()
            entry: dict[str, Any] = {"name": path.stem, "kind": "float", "arch": arch,
                                     "family": family, "exporter": exporter, "opset": opset,
                                     "producer": f"torch {vers['torch']}"}
            try:
                entry.update(export(arch, exporter, path, batch))
                entry["file"] = f"float/{path.name}"
                exported[exporter] = path
            except Exception as exc:
                entry["error"] = first_line(exc)
                entry["error_stage"] = "export"
            entry["seconds"] = round(time.time() - t0, 1)
            entries.append(entry)
            print(json.dumps(entry), flush=True)
        shape = tuple(ARCHITECTURES[arch][1])
        for config, exporters in PLAN.items():
            if config in QUARK or (config == "nncf_transformer" and family != "transformer"):
                continue
            for exporter in exporters:
                name = f"{arch}_{exporter}_{config}"
                target = outdir / f"{name}.onnx"
                entry = {"name": name, "kind": "quantized", "arch": arch, "family": family,
                         "exporter": exporter, "opset": EXPORTERS[exporter],
                         "quantizer": config}
                if config.startswith("nncf"):
                    entry["producer"] = f"torch {vers['torch']}; nncf {vers['nncf']}"
                else:
                    entry["producer"] = f"torch {vers['torch']}; onnxruntime {vers['onnxruntime']}"
                t0 = time.time()
                if exporter not in exported:
                    entry["error"] = f"no float model: the {exporter} export failed"
                    entry["error_stage"] = "export"
                else:
                    try:
                        if config.startswith("nncf"):
                            entry.update(quantize_nncf(config, exported[exporter], target, shape))
                        else:
                            entry.update(quantize_ort(config, exported[exporter], target, shape,
                                                      tmp))
                        compact(target)
                        entry["file"] = target.name
                        entry["bytes"] = target.stat().st_size
                    except Exception as exc:
                        entry["error"] = first_line(exc)
                        entry["error_stage"] = "quantize"
                        entry["traceback_tail"] = traceback.format_exc().splitlines()[-3:]
                        target.unlink(missing_ok=True)
                entry["seconds"] = round(time.time() - t0, 1)
                entries.append(entry)
                print(json.dumps(entry), flush=True)
    return entries


def run_quark(out: Path, python: str, archs: list[str], workers: int,
              batch: int = 1) -> list[dict[str, Any]]:
    """quantize_quark.py with the Quark venv's python, one process per model (Quark 0.13
    keeps state between quantize_model calls), `workers` at a time."""
    ARCHITECTURES = arch_module(batch).ARCHITECTURES
    jobs = []
    for arch in archs:
        for config in QUARK:
            for exporter in PLAN[config]:
                jobs.append((arch, exporter, config))

    def one(job: tuple[str, str, str]) -> dict[str, Any]:
        arch, exporter, config = job
        name = f"{arch}_{exporter}_{config}"
        source = out / "float" / f"{arch}_{exporter}.onnx"
        base = {"name": name, "kind": "quantized", "arch": arch,
                "family": ARCHITECTURES[arch][2], "exporter": exporter,
                "opset": EXPORTERS[exporter], "quantizer": config}
        if not source.exists():
            return {**base, "error": f"no float model: the {exporter} export failed",
                    "error_stage": "export"}
        t0 = time.time()
        try:
            run = subprocess.run([python, str(HERE / "quantize_quark.py"), str(source),
                                  config, str(out / f"{name}.onnx"),
                                  ",".join(map(str, ARCHITECTURES[arch][1]))],
                                 capture_output=True, text=True, timeout=1200)
            line = next((x for x in run.stdout.splitlines() if x.startswith("ENTRY ")), None)
            if line is None:
                tail = [x for x in (run.stderr or run.stdout).splitlines() if x.strip()][-1:]
                result = {"error": f"quantize_quark.py exited {run.returncode}: "
                          f"{tail[0][:300] if tail else ''}", "error_stage": "quantize"}
            else:
                result = json.loads(line.removeprefix("ENTRY "))
        except subprocess.TimeoutExpired:
            result = {"error": "quantize_quark.py timed out (1200 s)", "error_stage": "quantize"}
        entry = {**base, **result, "seconds": round(time.time() - t0, 1)}
        print(json.dumps(entry), flush=True)
        return entry

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, jobs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", nargs="?", default="/tmp/survey/models")
    parser.add_argument("--archs", default="", help="comma-separated subset")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--skip-quark", action="store_true")
    parser.add_argument("--only-quark", action="store_true",
                        help="keep models.json's other entries, (re)make the Quark models")
    parser.add_argument("--quark-python", default="/tmp/survey/venv-quark/bin/python")
    parser.add_argument("--batch", type=int, choices=sorted(BATCHES), default=1,
                        help="1: archs.py's architectures (default), 2: archs_batch2.py's")
    args = parser.parse_args()
    ARCHITECTURES = arch_module(args.batch).ARCHITECTURES
    out = Path(args.out)
    (out / "float").mkdir(parents=True, exist_ok=True)
    archs = [a for a in args.archs.split(",") if a] or list(ARCHITECTURES)
    unknown = set(archs) - set(ARCHITECTURES)
    if unknown:
        sys.exit(f"unknown architectures: {sorted(unknown)}")
    listing = out / "models.json"
    old = json.loads(listing.read_text()) if listing.exists() else []
    t0 = time.time()
    entries: list[dict[str, Any]] = []
    if not args.only_quark:
        with ProcessPoolExecutor(max_workers=args.workers) as pool:
            for result in pool.map(make_arch, archs, [str(out)] * len(archs),
                                   [args.batch] * len(archs)):
                entries.extend(result)
    else:
        entries = [e for e in old if e["arch"] in archs and not e.get("quantizer", "")
                   .startswith("quark")]
    if not args.skip_quark:
        if Path(args.quark_python).exists():
            entries.extend(run_quark(out, args.quark_python, archs, args.workers,
                                     args.batch))
        else:
            for arch in archs:
                for config in QUARK:
                    entries.append({"name": f"{arch}_dynamo18_{config}", "kind": "quantized",
                                    "arch": arch, "family": ARCHITECTURES[arch][2],
                                    "exporter": "dynamo18", "opset": 18, "quantizer": config,
                                    "error": f"no Quark venv at {args.quark_python} "
                                    "(run setup_quark_venv.sh)", "error_stage": "quantize"})
    # Entries of architectures not remade this time stay.
    entries = [e for e in old if e["arch"] not in archs] + entries
    listing.write_text(json.dumps(entries, indent=1) + "\n")
    failed = [e for e in entries if e["kind"] == "quantized" and "error" in e]
    print(f"{sum(1 for e in entries if e['kind'] == 'quantized' and 'error' not in e)} "
          f"quantized models, {len(failed)} failed to make, {time.time() - t0:.0f} s; "
          f"listing in {listing}")


if __name__ == "__main__":
    main()
