"""`onnx2mcu quantize`: a float model and calibration samples to a quantized model that
onnx2mcu turns into integer kernels, by ONNX Runtime's own quantizer (quant_pre_process,
then quantize_static). No calibration arithmetic is onnx2mcu's: the ranges, scales and zero
points are ORT's, so the quantized model is what any ORT user would get with the same
settings.

The defaults are the MCU choice on every board: QDQ format, int8 activations, int8
weights per output channel, int32 biases, MinMax calibration. int8 x int8 is what every
kernel path computes exactly (SMLAD on Cortex-M4/M7/M33, the Thumb-1 kernels of Cortex-M0+,
the host) and what ORT computes the same on x86 and ARM; uint8 activations with int8
weights saturate in ORT on x86 without VNNI (onnx2mcu models that, but a model meant for
an MCU gains nothing from it). The board does not change the arithmetic; it decides the
summary: the requantization the board runs, whether it fits, and what a float island would
cost there (software float on a core without FPU).
"""

from __future__ import annotations

import contextlib
import io
import logging
import shutil
import tempfile
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from numpy.typing import NDArray

from codegen.backend.project import check_output_file, source_paths, write_output_with
from codegen.core.dataset import conform_arrays, model_input_specs, split_samples
from codegen.core.limits import DEFAULT_LIMITS, Limits
from codegen.errors import ModelError, OptionError
from codegen.frontend.importer import load_model
from codegen.frontend.model_kind import QUANTIZED_OPS, is_float_model

QUANT_FORMATS = ("qdq", "qoperator")
CALIBRATION_METHODS = ("minmax", "entropy", "percentile")
ACTIVATION_TYPES = ("int8", "uint8")

Progress = Callable[[int, int], None]  # (samples done, samples in all)


@dataclass(frozen=True)
class QuantizeSettings:
    quant_format: str = "qdq"
    method: str = "minmax"
    activations: str = "int8"
    per_channel: bool = True

    def describe(self) -> str:
        fmt = "QDQ" if self.quant_format == "qdq" else "QOperator"
        weights = "per-channel" if self.per_channel else "per-tensor"
        method = {"minmax": "MinMax", "entropy": "Entropy",
                  "percentile": "Percentile"}[self.method]
        return (f"{fmt}, {self.activations} activations, {weights} int8 weights, int32 "
                f"biases, {method} calibration")


def check_settings(settings: QuantizeSettings) -> None:
    for value, allowed, what in ((settings.quant_format, QUANT_FORMATS, "format"),
                                 (settings.method, CALIBRATION_METHODS, "calibration method"),
                                 (settings.activations, ACTIVATION_TYPES, "activation type")):
        if value not in allowed:
            raise OptionError(f"quantize: unknown {what} '{value}' (one of "
                              f"{', '.join(allowed)})")


class SampleReader:
    """ORT's CalibrationDataReader protocol (get_next until None) over fixed samples,
    reporting each sample as ORT takes it: the calibration runs one inference per
    sample, so this is the progress of the slow part."""

    def __init__(self, samples: Sequence[Mapping[str, NDArray[Any]]],
                 progress: Progress | None = None) -> None:
        self._samples = samples
        self._next = 0
        self._progress = progress

    def get_next(self) -> dict[str, NDArray[Any]] | None:
        if self._next >= len(self._samples):
            return None
        sample = dict(self._samples[self._next])
        self._next += 1
        if self._progress is not None:
            self._progress(self._next, len(self._samples))
        return sample


def _above_warning(record: logging.LogRecord) -> bool:
    return record.levelno > logging.WARNING


@contextlib.contextmanager
def quiet_quantizer() -> Iterator[None]:
    """ORT's quantizer logging.warning()s advice on the root logger on every call (run
    pre-processing, use QDQ): onnx2mcu runs the pre-processing and chooses the format, so
    the advice is noise here. Only records logged to the root logger are dropped, and
    what the calibrators print."""
    root = logging.getLogger()
    handler = logging.NullHandler()  # no basicConfig() stderr handler left behind
    root.addHandler(handler)
    root.addFilter(_above_warning)
    try:
        # The histogram calibrators print() their progress: onnx2mcu shows its own.
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        root.removeFilter(_above_warning)
        root.removeHandler(handler)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def preprocess(source: Path, target: Path) -> str | None:
    """ORT's quant_pre_process (symbolic shape inference, ORT's basic graph optimisations
    such as folding BatchNormalization into Conv, ONNX shape inference). Symbolic shape
    inference fails on some exports; the rest is then run without it, and the returned
    note says so."""
    from onnxruntime.quantization import quant_pre_process

    try:
        quant_pre_process(str(source), str(target))
        return None
    except Exception as exc:  # the symbolic shape inference raises many types
        first = _first_line(exc)
    try:
        quant_pre_process(str(source), str(target), skip_symbolic_shape=True)
    except Exception as exc:
        raise ModelError(f"ONNX Runtime's quant_pre_process failed: {_first_line(exc)}"
                         ) from None
    return (f"quant_pre_process ran without symbolic shape inference, which failed "
            f"({first})")


# ORT's quantize_static runs Entropy calibration with 128 histogram bins for 128 quantized
# bins: its KL-divergence search then has a single candidate, the full range, and the
# result is MinMax's. The ranges are computed here by ORT's own EntropyCalibrater with the
# histogram TensorRT's method was made for (2048 bins), and handed to quantize_static
# through its calibration cache.
ENTROPY_BINS = 2048
ENTROPY_QUANTIZED_BINS = 128


def entropy_ranges(source: Path, work: Path, reader: SampleReader) -> Path:
    """The Entropy calibration's ranges, saved as quantize_static's calibration cache."""
    from onnxruntime.quantization.calibrate import (
        CalibrationMethod,
        create_calibrator,
        save_tensors_data,
    )
    from onnxruntime.quantization.registry import QDQRegistry, QLinearOpsRegistry

    calibrator = create_calibrator(
        source, sorted(set(QLinearOpsRegistry) | set(QDQRegistry)),
        augmented_model_path=str(work / "augmented.onnx"),
        calibrate_method=CalibrationMethod.Entropy,
        extra_options={"num_bins": ENTROPY_BINS,
                       "num_quantized_bins": ENTROPY_QUANTIZED_BINS})
    calibrator.collect_data(reader)
    cache = work / "entropy_ranges.json"
    save_tensors_data(calibrator.compute_data(), cache)
    return cache


def quantize_file(source: Path, target: Path, samples: Sequence[Mapping[str, NDArray[Any]]],
                  settings: QuantizeSettings, work: Path,
                  progress: Progress | None = None) -> None:
    """ORT's quantize_static on a pre-processed model."""
    from onnxruntime.quantization import (
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    methods = {"minmax": CalibrationMethod.MinMax, "entropy": CalibrationMethod.Entropy,
               "percentile": CalibrationMethod.Percentile}
    activation = QuantType.QInt8 if settings.activations == "int8" else QuantType.QUInt8
    reader: SampleReader | None = SampleReader(samples, progress)
    try:
        with quiet_quantizer():
            cache = None
            if settings.method == "entropy" and reader is not None:
                cache, reader = entropy_ranges(source, work, reader), None
            quantize_static(str(source), str(target), reader,
                            quant_format=(QuantFormat.QDQ if settings.quant_format == "qdq"
                                          else QuantFormat.QOperator),
                            per_channel=settings.per_channel, activation_type=activation,
                            weight_type=QuantType.QInt8,
                            calibrate_method=methods[settings.method],
                            calibration_cache_path=cache)
    except Exception as exc:  # ORT's quantizer raises plain exceptions of many types
        raise ModelError(f"ONNX Runtime's quantize_static failed: {_first_line(exc)}"
                         f"{QUANTIZER_HINTS.get(_first_line(exc), '')}") from None


# What ORT's terse messages mean, where it is known.
QUANTIZER_HINTS = {
    "scale issue": " (a tensor's calibrated range is not a number: the float model computes "
                   "NaN on these samples, a Sqrt or Log of a negative value, say)",
}


@dataclass(frozen=True)
class QuantizeResult:
    out: Path
    samples: int
    settings: QuantizeSettings
    notes: tuple[str, ...]


def check_float_model(model: onnx.ModelProto, name: str) -> None:
    """A model that already carries quantization is not quantized again."""
    if not is_float_model(model):
        quantized = sorted({n.op_type for n in model.graph.node
                            if n.op_type in QUANTIZED_OPS or n.op_type.startswith("QLinear")})
        raise ModelError(f"model '{name}' is already quantized (it has "
                         f"{', '.join(quantized)}); give onnx2mcu quantize the float model")


def quantize(model: str | Path, out: str | Path, calibration: str | Mapping[str, Any],
             settings: QuantizeSettings = QuantizeSettings(), *, max_samples: int | None = None,
             force: bool = False, progress: Progress | None = None,
             limits: Limits = DEFAULT_LIMITS) -> QuantizeResult:
    """Quantize the float model at `model` with the samples of `calibration` (a data set
    path, or arrays keyed by input name with the samples on the first axis) and write the
    quantized model to `out`, atomically (never half-written, never over a file without
    force)."""
    from codegen.core.dataset import load_arrays

    check_settings(settings)
    source, out = Path(model), Path(out)
    inputs = source_paths(model, calibration)
    check_output_file(out, force, inputs)  # fail before doing any work
    if max_samples is not None and max_samples < 1:
        raise OptionError("--samples must be at least 1")
    proto = load_model(source, limits)
    check_float_model(proto, source.name.removesuffix(".onnx"))
    name = str(calibration) if not isinstance(calibration, Mapping) else "calibration data"
    arrays = load_arrays(calibration, limits) if not isinstance(calibration, Mapping) else \
        {k: np.asarray(v) for k, v in calibration.items()}
    if max_samples is not None:
        arrays = {k: v[:max_samples] for k, v in arrays.items()}
    samples = split_samples(conform_arrays(arrays, model_input_specs(proto), name), name)
    # quantize_static writes side files (shape-inferred and augmented copies) next to its
    # input, so the work happens in a folder of its own.
    with tempfile.TemporaryDirectory(prefix="onnx2mcu-quantize-") as tmp:
        work = Path(tmp)
        float_copy = work / "float.onnx"
        onnx.save(proto, str(float_copy))
        note = preprocess(float_copy, work / "preprocessed.onnx")
        quantized = work / "quantized.onnx"
        quantize_file(work / "preprocessed.onnx", quantized, samples, settings, work,
                      progress)
        write_output_with(out, lambda path: shutil.copyfile(quantized, path), force, inputs)
    return QuantizeResult(out, len(samples), settings, (note,) if note else ())
