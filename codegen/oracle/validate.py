"""`onnx2mcu validate`: how far the generated C is from the float model the user trained,
on a whole data set. Three results per sample: the float model under ORT (the reference),
the quantized model under ORT, and the generated C. The C is compared with the float model
(what the user loses), ORT-quantized with the float model (what quantization loses), and
the C with ORT-quantized (bit for bit: what onnx2mcu loses, nothing).

Every error figure of an output is over all its elements in all samples taken as one
vector: e = got - reference,
  RMSE = sqrt(mean(e^2)), mean abs = mean(|e|), max abs = max(|e|),
  cosine = sum(got * reference) / (|got| |reference|)  (1 when both are all zero),
  SNR = 10 log10(sum(reference^2) / sum(e^2)) dB  (infinite when e is all zero).
Classifiers also get top-1 agreement (the same argmax as the float model, per sample)
and, with labels, the accuracy of each.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from codegen.core.names import visible

Samples = Sequence[Mapping[str, NDArray[Any]]]


@dataclass(frozen=True)
class ErrorStats:
    rmse: float
    mean_abs: float
    max_abs: float
    cosine: float
    snr_db: float | None  # None: infinite (no error at all)


def error_stats(got: NDArray[Any], reference: NDArray[Any]) -> ErrorStats:
    """The error figures of `got` against `reference` (same shape), in float64."""
    x = np.asarray(got, dtype=np.float64).reshape(-1)
    r = np.asarray(reference, dtype=np.float64).reshape(-1)
    if x.shape != r.shape:
        raise ValueError(f"shapes differ: {x.shape} and {r.shape}")
    if not x.size:
        return ErrorStats(0.0, 0.0, 0.0, 1.0, None)
    e = x - r
    energy, noise = float(np.dot(r, r)), float(np.dot(e, e))
    norms = math.sqrt(float(np.dot(x, x))) * math.sqrt(energy)
    cosine = float(np.dot(x, r)) / norms if norms else (1.0 if not noise else 0.0)
    if not noise:
        snr: float | None = None
    elif not energy:
        snr = -math.inf
    else:
        snr = 10.0 * math.log10(energy / noise)
    return ErrorStats(rmse=math.sqrt(noise / e.size), mean_abs=float(np.mean(np.abs(e))),
                      max_abs=float(np.max(np.abs(e))), cosine=cosine, snr_db=snr)


def top1(outputs: Samples, name: str) -> NDArray[np.int64]:
    """Each sample's class: the argmax over the output's elements."""
    return np.array([int(np.argmax(np.asarray(o[name]).reshape(-1))) for o in outputs],
                    dtype=np.int64)


def stacked(outputs: Samples, name: str) -> NDArray[Any]:
    return np.stack([np.asarray(o[name]) for o in outputs])


def is_classifier(shape: Sequence[int], input_sizes: Sequence[int]) -> bool:
    """Does an output look like class scores: one axis of 2 to 1000 elements (the others
    1), and not the size of an input (an autoencoder's reconstruction)?"""
    axes = [d for d in shape if d != 1]
    size = int(np.prod(shape)) if len(shape) else 1
    return len(axes) == 1 and 2 <= axes[0] <= 1000 and size not in set(input_sizes)


@dataclass(frozen=True)
class OutputValidation:
    name: str
    elements: int  # per sample
    c_vs_float: ErrorStats
    ort_vs_float: ErrorStats  # the quantization loss
    c_vs_ort_mismatches: int  # elements of all samples where the C differs from ORT-quantized
    classifier: bool
    top1_agreement: float | None = None  # C's class == the float model's, share of samples
    accuracy_float: float | None = None
    accuracy_c: float | None = None
    accuracy_ort: float | None = None


@dataclass(frozen=True)
class ValidateReport:
    samples: int
    board: str
    requant: str
    ort_version: str
    reference: str  # how ORT ran the quantized model
    outputs: tuple[OutputValidation, ...]
    notes: tuple[str, ...] = ()

    @property
    def bit_exact(self) -> bool:
        return all(o.c_vs_ort_mismatches == 0 for o in self.outputs)


def validate_output(name: str, ours: Samples, quantized: Samples, floats: Samples,
                    float_name: str, classifier: bool,
                    labels: NDArray[np.int64] | None) -> OutputValidation:
    """The figures of one output over all samples."""
    c, q, f = stacked(ours, name), stacked(quantized, name), stacked(floats, float_name)
    mismatches = int(np.count_nonzero(c != q))
    agreement = acc_f = acc_c = acc_q = None
    if classifier:
        c1, q1, f1 = top1(ours, name), top1(quantized, name), top1(floats, float_name)
        agreement = float(np.mean(c1 == f1))
        if labels is not None:
            acc_f, acc_c, acc_q = (float(np.mean(k == labels)) for k in (f1, c1, q1))
    return OutputValidation(name, int(c[0].size), error_stats(c, f), error_stats(q, f),
                            mismatches, classifier, agreement, acc_f, acc_c, acc_q)


def _number(value: float | None, digits: int = 6) -> str:
    if value is None:
        return "inf"
    return f"{value:.{digits}g}"


def _percent(value: float) -> str:
    return f"{100.0 * value:.2f}%"


def format_validation_text(report: ValidateReport) -> str:
    lines = [f"reference: onnxruntime {report.ort_version} (CPUExecutionProvider) on the "
             f"float model, and on the quantized model ({report.reference})",
             *(f"note: {n}" for n in report.notes),
             f"generated C: board {report.board}, requant {report.requant}; "
             f"{report.samples} sample(s)"]
    head = (f"  {'against the float model':<26} {'RMSE':>11} {'mean abs':>11} "
            f"{'max abs':>11} {'cosine':>10} {'SNR dB':>8}")
    for o in report.outputs:
        lines.append(f"output '{visible(o.name)}' ({o.elements} elements per sample)")
        lines.append(head)
        for label, s in (("generated C", o.c_vs_float), ("ORT, quantized model", o.ort_vs_float)):
            snr = _number(s.snr_db, 4) if s.snr_db is None or math.isfinite(s.snr_db) \
                else "-inf"
            lines.append(f"  {label:<26} {_number(s.rmse):>11} {_number(s.mean_abs):>11} "
                         f"{_number(s.max_abs):>11} {s.cosine:>10.6f} {snr:>8}")
        total = o.elements * report.samples
        lines.append("  generated C against ORT on the quantized model: " + (
            f"bit-exact ({total} elements)" if not o.c_vs_ort_mismatches else
            f"{o.c_vs_ort_mismatches} of {total} elements differ"))
        if o.top1_agreement is not None:
            lines.append(f"  top-1 agreement with the float model: "
                         f"{_percent(o.top1_agreement)} of {report.samples} samples")
        if o.accuracy_float is not None and o.accuracy_c is not None \
                and o.accuracy_ort is not None:
            lines.append(f"  accuracy: float model {_percent(o.accuracy_float)}, generated C "
                         f"{_percent(o.accuracy_c)}, ORT quantized {_percent(o.accuracy_ort)}")
    lines.append("result: " + ("the generated C is bit-exact with ONNX Runtime on the quantized "
                               "model; the error above is the quantization's"
                               if report.bit_exact else
                               "MISMATCH: the generated C differs from ONNX Runtime on the "
                               "quantized model"))
    return "\n".join(lines) + "\n"


def _json_value(value: Any) -> Any:
    """JSON without the non-standard Infinity: an infinite SNR is null (no error)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None if value > 0 else "-inf"
    if isinstance(value, dict):
        return {k: _json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_value(v) for v in value]
    return value


def format_validation_json(report: ValidateReport) -> str:
    data = asdict(report)
    data["bit_exact"] = report.bit_exact
    return json.dumps(_json_value(data), indent=2, sort_keys=True) + "\n"


VALIDATION_FORMATS = {"text": format_validation_text, "json": format_validation_json}
