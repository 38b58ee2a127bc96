"""verify's report as the command prints it: the reference, the notes, each output's
comparison, the informational distances of --integer-only, the accuracy and the result."""

from __future__ import annotations

from codegen.core.names import visible
from codegen.oracle.verify import ORT_LEVELS, Distance, VerifyReport


def comparison_lines(report: VerifyReport) -> list[str]:
    """The table of outputs: elements compared, mismatches and the largest difference."""
    width = max([len(visible(o.name)) for o in report.outputs] + [6])
    lines = [f"{'output':<{width}}  {'dtype':<7}  {'elements':>10}  {'mismatches':>10}  "
             f"{'max_abs_diff':>12}"]
    lines += [f"{visible(o.name):<{width}}  {o.dtype:<7}  {o.elements:>10}  "
              f"{o.mismatches:>10}  {o.max_abs_diff:>12.6g}" for o in report.outputs]
    return lines


def per_layer_line(report: VerifyReport) -> list[str]:
    if report.layers is None:
        return []
    first = report.first_mismatch
    if first is None:
        return [f"per-layer: all {len(report.layers)} intermediate tensors are bit-exact"]
    return [f"per-layer: first difference at node '{visible(first.node)}' "
            f"({first.op_type}), tensor '{visible(first.tensor)}': {first.mismatches} of "
            f"{first.elements} elements differ, max abs diff {first.max_abs_diff:g}"]


def result_line(report: VerifyReport) -> str:
    total = sum(o.elements for o in report.outputs)
    if not total:
        return "result: NOTHING COMPARED (no output element was compared with ONNX Runtime)"
    if report.ok:
        return f"result: BIT-EXACT ({total} output elements identical to ONNX Runtime)"
    bad = sum(o.mismatches for o in report.outputs)
    return f"result: MISMATCH ({bad} of {total} output elements differ from ONNX Runtime)"


def verify_lines(report: VerifyReport, verbose: bool = False) -> list[str]:
    """verify's report, one line each (the details of the notes with verbose)."""
    source = "random inputs, seed " + str(report.seed) if report.seed is not None else \
        "given inputs"
    lines = [f"reference: onnxruntime {report.ort_version} (CPUExecutionProvider, "
             f"1 thread, {ORT_LEVELS[report.ort_level]}) on {report.reference}",
             *(f"note: {note}" for note in report.notes),
             *(f"detail: {detail}" for detail in (report.details if verbose else [])),
             f"generated C: board {report.board}, requant {report.requant}; "
             f"{report.samples} sample(s), {source}",
             *comparison_lines(report), *per_layer_line(report)]
    for distance in (report.original, report.unoptimized_original):
        if distance is not None:
            lines += distance_lines(distance)
    lines += [f"accuracy: {100.0 * share:.2f}% of {report.samples} samples (top-1 of output "
              f"'{visible(name)}' against the labels)" for name, share in report.accuracy]
    if report.differing:
        lines.append(f"samples: {len(report.differing)} of {report.samples} differ from ONNX "
                     f"Runtime, the first sample {report.differing[0]} (counting from 0)")
    lines.append(result_line(report))
    return lines


def distance_lines(distance: Distance) -> list[str]:
    """The informational comparison with a second reference (verify --integer-only: ORT
    on the original model); it does not decide the result."""
    lines = [f"against ORT on {distance.reference} (informational, not part of the result):"]
    for o in distance.outputs:
        if not o.mismatches:
            lines.append(f"  {visible(o.name)}: all {o.elements} elements identical")
            continue
        how = (f"at most {o.max_steps} quantization step{'s' if o.max_steps != 1 else ''}"
               if o.max_steps is not None else f"max abs diff {o.max_abs_diff:g}")
        lines.append(f"  {visible(o.name)}: {o.mismatches} of {o.elements} elements differ, "
                     f"{how}")
    return lines
