"""The Python API that the CLI wraps: generate, run, verify."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

import numpy as np
from numpy.typing import NDArray

from codegen.backend.emitter import (
    emit_shared_runtime,
    harness_stack_reserve,
    own_runtime_files,
)
from codegen.backend.interface import shared_runtime_path
from codegen.backend.io_boundary import Entry, dequantized, graph_feeds, harness_entries
from codegen.backend.project import (
    check_output_dir,
    check_output_file,
    source_paths,
    write_output_with,
    write_project,
)
from codegen.core.boards import Board
from codegen.core.dataset import conform_arrays, split_samples
from codegen.core.ir import Tensor, itemsize
from codegen.core.limits import Limits, check_limit
from codegen.core.program import Program
from codegen.core.progress import progress_bar
from codegen.frontend.importer import ModelSource
from codegen.oracle.entry_data import (
    entry_sample,
    entry_samples,
    float_domain,
    reading_notes,
    split_given,
)
from codegen.oracle.validate import ValidateReport, is_classifier, validate_output
from codegen.oracle.verify import (
    Distance,
    OutputReport,
    Reference,
    VerifyReport,
    compare_outputs,
    differing_samples,
    distance_in_steps,
    input_quantizations,
    layer_reports,
    ort_version,
    random_inputs,
    reference_model,
    run_ort,
    with_outputs,
)
from codegen.target.build import build_host, run_binary
from codegen.target.cycles import cycle_model_for
from codegen.target.firmware import (
    NO_RESERVE,
    Budget,
    Reserve,
    build_firmware,
    check_budget,
    cross_toolchain_available,
    format_budget,
    harness_ram_bytes,
)
from codegen.target.qemu import count_instructions as qemu_count
from codegen.target.qemu import run_firmware
from codegen.views.counts import CountReport
from codegen.views.report import Report, build_report, memory_mode
from codegen.views.shipped import generate_for_board, measure_model

from .errors import BudgetError, InputDataError, OptionError, ToolchainError
from .options import OptionKeywords, Options, resolve_target, with_keywords
from .pipeline import Generated

if TYPE_CHECKING:
    from codegen.views.budget import FirmwareBudget

Samples = Sequence[Mapping[str, NDArray[Any]]]


@dataclass(frozen=True)
class GenerateResult:
    out: Path
    name: str
    files: tuple[str, ...]
    arena_bytes: int
    arena_lower_bound: int
    requant: str
    board: Board
    budget: Budget | None = None  # measured on a Cortex-M build; None on the host
    budget_note: str = ""
    notes: tuple[str, ...] = ()  # what the import assumed (a dynamic batch taken as 1)
    # Does the project's test harness (its `make`) link for the board? On a part the
    # model fills, newlib's stdio and the harness's stack reserve may not fit beside it.
    harness_fits: bool = True


def io_bytes(gen: Generated) -> int:
    return gen.program.caller_io_bytes


def firmware_budget(gen: Generated, check: bool,
                    reserve: Reserve = NO_RESERVE) -> tuple[Budget | None, str]:
    """Measure what the model costs on a microcontroller board, and refuse it when it does not
    fit (unless check is False) in the board's memory less `reserve`. Without the cross
    compiler, the arena, I/O and weight sizes are checked as lower bounds."""
    board = gen.board
    assert board.memory is not None
    if not cross_toolchain_available(board.kind):
        ram = gen.plan.size + io_bytes(gen)
        flash = sum(int(np.asarray(v).nbytes) for v in gen.program.constants.values())
        if check and (ram > board.memory.ram_length - reserve.ram
                      or flash > board.memory.flash_length - reserve.flash):
            raise BudgetError(f"model '{gen.name}' does not fit board '{board.name}': needs at "
                              f"least {ram} bytes of RAM (board has {board.memory.ram_length}"
                              f"{reserved_text(reserve.ram)}) and {flash} bytes of flash "
                              f"(board has {board.memory.flash_length}"
                              f"{reserved_text(reserve.flash)}); pass --no-budget-check to "
                              "generate it anyway")
        return None, (f"budget not measured (no {board.cross.prefix}gcc): at least "
                      f"{ram} bytes of RAM, {flash} bytes of flash")
    budget = measure_model(gen)
    if check:
        check_budget(budget, board, gen.name, reserve)
    return budget, format_budget(budget, board, reserve)


def harness_fits(gen: Generated) -> bool:
    """Does the generated project's test harness (`make`: the model, the harness's
    buffers, newlib's stdio and semihosting, the stack its linker script keeps free) fit
    the board's RAM? Measured on its build for QEMU (the same sections)."""
    board = gen.board
    assert board.memory is not None
    if not cross_toolchain_available(board.kind):
        return True
    files = {**own_runtime_files(gen.name, gen.program.sources), **gen.files}
    try:
        build = build_firmware(files, gen.name, board, size=False)
    except ToolchainError:  # it does not even link for the QEMU machine's memory
        return False
    return harness_ram_bytes(build, harness_stack_reserve(board.memory.ram_length)) \
        <= board.memory.ram_length


def generate(model: ModelSource, out: str | Path, options: Options | None = None, *,
             force: bool = False, budget_check: bool = True,
             **keywords: Unpack[OptionKeywords]) -> GenerateResult:
    """Write the C project for `model` into `out` (atomically; never half-written). For a
    Cortex-M board, measure its flash and RAM and refuse a model that does not fit.
    `options` (or its fields as keywords) say how."""
    out = Path(out)
    options = with_keywords(options, keywords)
    inputs = [*source_paths(model), *([Path(options.interface.runtime)]
                                      if options.interface.runtime is not None else [])]
    check_output_dir(out, force, inputs)  # fail before doing any work
    interface = options.interface
    if interface.runtime is not None:
        options = replace(options, interface=replace(
            interface, runtime=shared_runtime_path(Path(interface.runtime), out)))
    gen = generate_for_board(model, options)
    try:
        budget, note = firmware_budget(gen, budget_check, reserve_of(options)) \
            if gen.board.is_mcu else (None, "")
    except BudgetError as error:
        raise BudgetError(f"{error}{min_memory_hint(model, gen, options)}") from None
    fits = harness_fits(gen) if gen.board.is_mcu else True
    write_project(out, gen.files, force=force, inputs=inputs)
    return GenerateResult(out, gen.name, tuple(sorted(gen.files)), gen.plan.size,
                          gen.plan.lower_bound, gen.program.requant, gen.board, budget, note,
                          tuple(gen.graph.notes), fits)


def reserved_text(n: int) -> str:
    return f" less {n} reserved for the rest of the firmware" if n else ""


def reserve_of(options: Options) -> Reserve:
    return Reserve(options.reserve_flash, options.reserve_ram)


def min_memory_hint(model: ModelSource, gen: Generated, options: Options) -> str:
    """For a model too big for its board with every layer whole: what --memory min
    would need (nothing where it would not lower the RAM)."""
    if options.memory != "fast":
        return ""
    small = generate_for_board(model, replace(options, memory="min"))
    if small.plan.size >= gen.plan.size:
        return ""
    budget, _ = firmware_budget(small, check=False)
    ram = budget.ram_bytes if budget is not None else small.plan.size + io_bytes(small)
    assert gen.board.memory is not None
    fits = "fits" if ram <= gen.board.memory.ram_length - options.reserve_ram \
        else "does not fit either"
    return f"; with --memory min (layers in row bands) it needs {ram} bytes of RAM: {fits}"


def write_runtime(out: str | Path, force: bool = False) -> tuple[str, ...]:
    """Write the shared runtime (every kernel, its version, Make and CMake files for its
    library) into `out`, atomically. Returns the files written."""
    files = emit_shared_runtime()
    write_project(Path(out), files, force=force)
    return tuple(sorted(files))


def budget_of_models(models: Sequence[ModelSource], options: Options | None = None, *,
                     shared_arena: bool = False) -> FirmwareBudget:
    """Flash and RAM of several models in one firmware on a Cortex-M board: each alone
    (as `report` measures it), and all of them linked together in one image, with the
    reserves of `options` for the rest of the firmware (codegen.views.budget)."""
    from codegen.views.budget import measure_firmware

    return measure_firmware(models, options or Options(), shared_arena)


@dataclass(frozen=True)
class ConvertResult:
    out: Path
    qdq_rules: str  # the platform whose int8 QDQ rules the model follows: "x86" or "arm"
    float_islands: int  # float operators left (ORT computes them in float too)


def convert(model: ModelSource, out: str | Path, options: Options | None = None, *,
            force: bool = False, **keywords: Unpack[OptionKeywords]) -> ConvertResult:
    """Write the model after onnx2mcu's recipes as a QOperator ONNX model (of the options,
    the input shapes, --integer-only, the QDQ rules and the limits apply)."""
    import onnx

    from codegen.frontend.importer import import_model, load_model
    from codegen.views.exporter import converted_model

    from .transform import check_qdq_rules, float_islands, run_passes

    out = Path(out)
    options = with_keywords(options, keywords)
    check_output_file(out, force, source_paths(model))  # fail before doing any work
    check_qdq_rules(options.qdq_rules)
    limits = options.limits
    recipes = run_passes(import_model(load_model(model, limits), options.input_shapes, limits),
                         options.integer_only, options.qdq_rules)
    exported = converted_model(recipes.graph, recipes.qdq_rules)
    write_output_with(out, lambda path: onnx.save(exported, str(path)), force,
                      source_paths(model))
    return ConvertResult(out, recipes.qdq_rules, float_islands(recipes.graph))


def run_generated(gen: Generated, samples: Samples, cflags: Sequence[str] = (),
                  entry: Entry | None = None) -> list[dict[str, NDArray[Any]]]:
    """Build and run the generated project's harness (of `entry`, default its first entry
    point): on the host, or in QEMU for a Cortex-M board (where host-only flags such as
    the sanitizers do not apply)."""
    entry = entry or harness_entries(gen.program)[0]
    if gen.board.is_mcu:
        build = build_firmware(gen.files, gen.name, gen.board, size=False,
                               cflags=entry.cflags)
        results, _ = run_firmware(build.elf, gen.board, entry.inputs, entry.outputs, samples)
        return results
    host = build_host(gen.files, gen.name, [*gen.board.cflags, *cflags])
    return run_binary(host.binary, entry.inputs, entry.outputs, samples)


def count_instructions(model: ModelSource, inputs: Mapping[str, Any] | Samples,
                       options: Options | None = None, *, per_layer: bool = False,
                       cycles: bool = False, **keywords: Unpack[OptionKeywords]) -> CountReport:
    """Instructions the model executes per inference on a Cortex-M board, in QEMU (and,
    with cycles, the cycle model's estimate)."""
    target = resolve_target(with_keywords(options, keywords))
    check_counting_board(target.board)
    if cycles:
        check_cycle_board(target.board)
    gen = generate_for_board(model, target)
    entry = counted_entry(gen)
    given = split_given(gen.program, entry, inputs) if isinstance(inputs, Mapping) \
        else list(inputs)
    return count_generated(gen, entry_samples(gen.program, entry, given), per_layer, cycles)


def check_counting_board(board: Board) -> None:
    if not board.is_mcu:
        raise OptionError(f"board '{board.name}': instruction counts need a microcontroller board "
                          "(see `onnx2mcu boards`)")


def counted_entry(gen: Generated) -> Entry:
    """The entry point the counting harness runs: the default build's (with --io both,
    the float one)."""
    return harness_entries(gen.program)[0]


def check_cycle_board(board: Board) -> str:
    """The cycle table of a board's core, or a clear refusal."""
    model = cycle_model_for(board.cpu)
    if model is None:
        raise OptionError(f"board '{board.name}': no cycle model for {board.cpu} (there are "
                          "tables for Cortex-M4, M33 and M0+); count instructions instead")
    return model


def count_generated(gen: Generated, data: Samples, per_layer: bool,
                    cycles: bool = False) -> CountReport:
    """Run the generated firmware in QEMU on `data` and count its instructions (and
    estimate its cycles)."""
    check_counting_board(gen.board)
    model = check_cycle_board(gen.board) if cycles else None
    build = build_firmware(gen.files, gen.name, gen.board, layer_marks=per_layer)
    calls = gen.program.calls
    entry = counted_entry(gen)
    _, counts = qemu_count(build.elf, gen.board, entry.inputs, entry.outputs,
                           data, len(calls) if per_layer else None, cycle_model=model)
    return CountReport(counts, sum(c.macs for c in calls),
                       tuple((c.layer or c.node, c.function, c.macs) for c in calls),
                       gen.board.name,
                       tuple(gen.graph.notes), gen.board.clock_hz,
                       gen.board.flash_timing.describe()
                       if counts.board_cycles is not None and gen.board.flash_timing else None)


def report(model: ModelSource, options: Options | None = None, *, count: bool = False,
           inputs: Mapping[str, Any] | None = None, seed: int = 0, cycles: bool = False,
           **keywords: Unpack[OptionKeywords]) -> Report:
    """Per-layer costs, totals against the board's budget and the arena plan. On a
    Cortex-M board the model is built alone to measure flash, stack and static RAM; with
    count, one inference runs in QEMU (on `inputs`, else random ones from `seed`) to
    count the instructions of each layer (with cycles, estimate their cycles too)."""
    target = resolve_target(with_keywords(options, keywords))
    memory = target.options.memory
    count = count or cycles
    if count:
        check_counting_board(target.board)
    if cycles:
        check_cycle_board(target.board)
    gen = generate_for_board(model, target)
    reserve = reserve_of(target.options)
    budget, note = firmware_budget(gen, check=False, reserve=reserve) \
        if gen.board.is_mcu else (None, "")
    counts = data = None
    if count:
        entry = counted_entry(gen)
        data = entry_sample(gen.program, entry, inputs) if inputs is not None else \
            random_inputs(entry.inputs, 1, seed, input_quantizations(gen.graph))[0]
        counts = count_generated(gen, [data], per_layer=True, cycles=cycles).counts
    # The other --memory mode, measured the same way, for the side by side.
    other_memory = "min" if memory == "fast" else "fast"
    other = generate_for_board(model, resolve_target(replace(target.options,
                                                           memory=other_memory)))
    if other.files == gen.files:
        other_budget, other_counts = budget, counts
    else:
        other_budget = firmware_budget(other, check=False)[0] if other.board.is_mcu \
            else None
        other_counts = count_generated(other, [data], per_layer=False, cycles=cycles).counts \
            if data is not None else None
    modes = sorted([memory_mode(gen, memory, budget, counts),
                    memory_mode(other, other_memory, other_budget, other_counts)],
                   key=lambda m: m.memory != "fast")
    source = str(model) if isinstance(model, str | Path) else ""
    return build_report(gen, source=source, budget=budget, budget_note=note, counts=counts,
                        memory=memory, modes=tuple(modes), reserve=reserve)


@dataclass(frozen=True)
class RunResult:
    # Keyed by ONNX output name; of several samples, stacked on a new first axis.
    outputs: dict[str, NDArray[Any]]
    notes: tuple[str, ...]  # what the import assumed (a dynamic batch taken as 1)
    samples: int = 1


def run_model(model: ModelSource, inputs: Mapping[str, Any], options: Options | None = None,
              *, cflags: Sequence[str] = (), **keywords: Unpack[OptionKeywords]) -> RunResult:
    """Generate, compile (cached) and run the model on the inputs, keyed by name: one
    sample, or many on a first axis in front of each input's shape (all run in one
    process; the outputs then have that axis too). With --io quantized, float data is
    quantized as the model's QuantizeLinear would (oracle/entry_data.py)."""
    options = with_keywords(options, keywords)
    gen = generate_for_board(model, options)
    entry = harness_entries(gen.program)[0]
    given = split_given(gen.program, entry, inputs)
    check_sample_bytes(gen, len(given), options.limits)
    results = run_generated(gen, entry_samples(gen.program, entry, given), cflags, entry)
    notes = (*gen.graph.notes, *reading_notes(gen.program, entry, given[0]))
    if len(results) == 1:
        return RunResult(results[0], notes)
    stacked = {name: np.stack([r[name] for r in results]) for name in results[0]}
    return RunResult(stacked, notes, len(results))


def run(model: ModelSource, inputs: Mapping[str, Any], options: Options | None = None, *,
        cflags: Sequence[str] = (),
        **keywords: Unpack[OptionKeywords]) -> dict[str, NDArray[Any]]:
    """run_model's outputs alone."""
    return run_model(model, inputs, options, cflags=cflags, **keywords).outputs


def verify(model: ModelSource, options: Options | None = None, *,
           inputs: Mapping[str, Any] | Samples | None = None, samples: int = 10,
           seed: int = 0, cflags: Sequence[str] = (), ort_level: str = "all",
           per_layer: bool = False, progress: Callable[[str], None] | None = None,
           labels: NDArray[Any] | None = None,
           **keywords: Unpack[OptionKeywords]) -> VerifyReport:
    """Run the generated C and ONNX Runtime on the same inputs and compare bit for bit.
    With per_layer, every intermediate tensor is compared too. With labels (one class
    index per given sample), the accuracy of each output that looks like class scores."""
    options = replace(with_keywords(options, keywords), expose_intermediates=per_layer)
    integer_only = options.integer_only
    if per_layer and options.interface.io != "float":
        raise OptionError("verify --per-layer compares the graph's float entry point: "
                          "use it with --io float")
    gen = generate_for_board(model, options)
    report = progress or (lambda message: None)
    if inputs is not None:
        given = [inputs] if isinstance(inputs, Mapping) else list(inputs)
        if not given:
            raise InputDataError("no input samples given: there would be nothing to compare")
    elif samples < 1:
        raise InputDataError("--samples must be at least 1")
    if not 0 <= seed < 2 ** 64:
        raise InputDataError(f"--seed must be from 0 to 2^64 - 1, not {seed}")
    if labels is not None and (inputs is None or len(labels) != len(given)):
        raise InputDataError("labels go with the given samples, one each"
                             + (f" ({len(labels)} labels for {len(given)} samples)"
                                if inputs is not None else ""))
    truth = None if labels is None else labels_by_output(gen, labels)
    if inputs is None:
        check_sample_bytes(gen, samples, options.limits)
    if integer_only:
        # ORT on the original model computes what --integer-only fuses in float; the
        # oracle is the model as `convert --integer-only` writes it.
        reference = converted_reference(gen)
        ref_model = reference.model
    else:
        reference = reference_model(gen.model, gen.graph, gen.qdq_rules)
        ref_model = reference.model
        if per_layer:
            ref_model = with_outputs(ref_model, gen.graph.outputs)
    outputs: list[OutputReport] = []
    compared: list[OutputReport] = []
    differing: set[int] = set()
    feeds: Samples = []
    ours: Samples = []
    readings: list[str] = []
    for entry in harness_entries(gen.program):
        if inputs is None:
            data = random_inputs(entry.inputs, samples, seed, input_quantizations(gen.graph))
        else:  # a file of inputs holds one sample or many on a first axis
            raw = given if not isinstance(inputs, Mapping) else \
                split_given(gen.program, entry, inputs)
            data = entry_samples(gen.program, entry, raw)
            readings += reading_notes(gen.program, entry, raw[0])
        what = " (quantized entry point)" if entry.quantized else ""
        report(f"building and running the generated C{what} on {len(data)} sample(s)")
        entry_ours = run_generated(gen, data, [*cflags, *entry.cflags], entry)
        entry_feeds = graph_feeds(gen.program, entry, data)
        # The quantized tensors are ORT's intermediates: asked for by name.
        quantized = [t.onnx_name for t in (*entry.inputs, *entry.outputs)] \
            if entry.quantized else []
        refs = run_ort(with_outputs(ref_model, quantized) if quantized else ref_model,
                       entry_feeds, ort_level,
                       lambda i, n: report(progress_bar("ONNX Runtime", i + 1, n)),
                       reference.config)
        if entry.quantized:
            check_quantized_inputs(entry, data, refs)
        # Per layer, only what ORT computes too, in the same type (ORT's x86 rules and
        # onnx2mcu's rewrites may hold a tensor as uint8 where the other has int8).
        entry_compared = compare_outputs(
            [t for t in entry.outputs if t.onnx_name in refs[0]
             and refs[0][t.onnx_name].dtype == np.dtype(t.dtype)], entry_ours, refs)
        expected = [t.onnx_name for t in entry.outputs] if entry.quantized else \
            [o.name for o in gen.model.graph.output]
        entry_outputs = [o for o in entry_compared if o.name in set(expected)]
        missing = set(expected) - {o.name for o in entry_outputs}
        if missing or not entry_outputs:
            # Never a silent pass: every output of the model is compared.
            raise RuntimeError(f"verify compared no result for model output(s) "
                               f"{', '.join(sorted(missing)) or '(none)'}")
        outputs += entry_outputs
        compared += entry_compared
        differing.update(differing_samples(entry_outputs, entry_ours, refs))
        if not feeds:
            feeds, ours = entry_feeds, entry_ours
    used_seed = seed if inputs is None else None
    # Accuracy under the graph's output names, whichever entry point's tensors scored it.
    first = harness_entries(gen.program)[0]
    shown = {q.onnx_name: f.onnx_name for f, q in zip(
        graph_output_tensors(gen.program, first), first.outputs, strict=True)}
    data_count = len(feeds)
    original = unoptimized = None
    if integer_only:
        report("running ONNX Runtime on the original model")
        original = distance_to_original(gen, feeds, ours, ort_level)
        if ort_level != "disable":
            unoptimized = distance_to_original(gen, feeds, ours, "disable")
            if unoptimized.outputs == original.outputs:
                unoptimized = None
    return VerifyReport(outputs=outputs,
                        samples=data_count, seed=used_seed, ort_version=ort_version(),
                        ort_level=ort_level, reference=reference.description,
                        requant=gen.program.requant, board=gen.board.name,
                        notes=[*gen.graph.notes, *readings, *reference.notes],
                        details=reference.details,
                        cpu_differences=reference.cpu_differences,
                        layers=layer_reports(gen.graph, compared) if per_layer else None,
                        original=original, unoptimized_original=unoptimized,
                        differing=sorted(differing),
                        accuracy=[] if truth is None else [
                            (shown.get(name, name), share)
                            for name, share in label_accuracy(ours, truth)])


def check_sample_bytes(gen: Generated, samples: int, limits: Limits) -> None:
    """verify --samples N makes N samples and keeps their outputs: checked against
    --max-data-bytes before any is made."""
    per_sample = sum(int(np.prod(t.shape)) * itemsize(t.dtype)
                     for entry in harness_entries(gen.program)
                     for t in (*entry.inputs, *entry.outputs))
    check_limit(f"--samples {samples} of {per_sample} bytes of inputs and outputs each",
                samples * per_sample, limits, "max_data_bytes")


def check_finite_samples(samples: Samples, source: str) -> None:
    """validate measures errors against the float model: a NaN or inf in a sample would
    make every figure NaN (and the top-1 agreement meaningless), so it is refused."""
    for i, sample in enumerate(samples):
        for name, array in sample.items():
            values = np.asarray(array)
            if values.dtype.kind == "f" and not np.all(np.isfinite(values)):
                raise InputDataError(f"{source}: sample {i} of input '{name}' holds NaN or "
                                     "inf; validate measures errors against the float "
                                     "model, which such a sample makes meaningless")


def labels_by_output(gen: Generated, labels: NDArray[Any],
                     outputs: Sequence[Tensor] | None = None) -> dict[str, NDArray[np.int64]]:
    """The labels as class indices of each output that looks like class scores (of
    `outputs`, default the first entry point's), checked against its number of classes
    before anything runs."""
    from codegen.core.dataset import class_indices

    entry = harness_entries(gen.program)[0]
    sizes = [int(np.prod(t.shape)) for t in entry.inputs]
    scored = entry.outputs if outputs is None else outputs
    truth = {t.onnx_name: class_indices(labels, int(np.prod(t.shape)), t.onnx_name)
             for t in scored if is_classifier(t.shape, sizes)}
    if not truth:  # labels nothing is scored against would be silently ignored
        shapes = ", ".join(f"'{t.onnx_name}' {list(t.shape)}" for t in scored)
        raise InputDataError(f"labels: no output looks like class scores (one axis of 2 to "
                             f"1000 classes) to score them against: {shapes}")
    return truth


def label_accuracy(ours: Samples,
                   truth: Mapping[str, NDArray[np.int64]]) -> list[tuple[str, float]]:
    """The top-1 accuracy of each output that looks like class scores."""
    from codegen.oracle.validate import top1

    return [(name, float(np.mean(top1(ours, name) == labels)))
            for name, labels in truth.items()]


CONVERTED = "the model as converted by onnx2mcu (--integer-only, QOperator)"


def check_quantized_inputs(entry: Entry, data: Samples, refs: Samples) -> None:
    """ORT quantizes the dequantized inputs back to the very samples (never fails unless
    the arithmetic of io_boundary.dequantized is wrong): the comparison is then of one
    inference on both sides."""
    for sample, ref in zip(data, refs, strict=True):
        for t in entry.inputs:
            if t.onnx_name in ref and not np.array_equal(ref[t.onnx_name], sample[t.name]):
                raise RuntimeError(f"ONNX Runtime quantized input '{t.onnx_name}' to other "
                                   "values than the sample's")


def converted_reference(gen: Generated) -> Reference:
    """The reference of --integer-only: the model `convert --integer-only` writes (built
    in memory by the same export), as ORT runs it (with the same adjustments as any
    model: the int8 QDQ rules followed, exact u8 x s8 products). Those adjustments read
    the graph the model was exported from: its nodes keep their names and types there
    (a 16-bit unit, written as int64 operators onnx2mcu does not import, included)."""
    from codegen.views.exporter import converted_model

    model = converted_model(gen.graph, gen.qdq_rules)
    reference = reference_model(model, gen.graph, gen.qdq_rules)
    described = CONVERTED if reference.model is model else \
        f"{CONVERTED}; ORT runs it as {reference.description}"
    return replace(reference, description=described)


ORIGINAL = "the original model, its float islands computed in float"
# Reported beside the distance at ORT's level when it differs: ORT's graph rewrites change
# its own arithmetic (with its default level ORT runs a MatMul of 16-bit activations and
# 8-bit constant weights as MatMulNBits, the activations quantized to int8 at run time).
UNOPTIMIZED = ("the original model with ORT's graph optimizations disabled (ORT's rewrites "
               "change its own arithmetic, e.g. a 16-bit MatMul run as MatMulNBits on int8 "
               "activations)")


def distance_to_original(gen: Generated, feeds: Samples, ours: Samples,
                         ort_level: str) -> Distance:
    """--integer-only: how far the generated C is from ORT on the model as given
    (reported, never failing)."""
    reference = reference_model(gen.model, gen.graph, gen.qdq_rules)
    theirs = run_ort(reference.model, feeds, ort_level, config=reference.config)
    model_outputs = {o.name for o in gen.model.graph.output}
    tensors = [t for t in gen.program.outputs if t.onnx_name in model_outputs]
    described = ORIGINAL if ort_level != "disable" else UNOPTIMIZED
    return Distance(described, distance_in_steps(tensors, ours, theirs))


def validate(model: ModelSource, float_model: ModelSource, dataset: str | Mapping[str, Any],
             options: Options | None = None, *, labels: str | NDArray[Any] | None = None,
             cflags: Sequence[str] = (), progress: Callable[[str], None] | None = None,
             max_samples: int | None = None,
             **keywords: Unpack[OptionKeywords]) -> ValidateReport:
    """The generated C of the quantized `model` against the float model it was made from,
    on every sample of `dataset` (a data set path, or arrays keyed by input name with the
    samples on the first axis; the first max_samples of them): see codegen.oracle.validate
    for the figures. On a Cortex-M board the C runs in QEMU. With --io quantized the
    entry point the firmware ships runs: each sample quantized as the model's
    QuantizeLinear would (oracle/entry_data.py), each output dequantized as its
    DequantizeLinear would."""
    from codegen.core.dataset import load_arrays, load_labels, model_input_specs
    from codegen.frontend.importer import load_model

    options = with_keywords(options, keywords)
    gen = generate_for_board(model, options)
    float_proto = load_model(float_model, options.limits)
    source = dataset if isinstance(dataset, str) else "the data set"
    arrays = load_arrays(dataset, options.limits) if isinstance(dataset, str) else \
        {k: np.asarray(v) for k, v in dataset.items()}
    entry = harness_entries(gen.program)[-1]  # with --io both, the quantized one
    readings = reading_notes(gen.program, entry, arrays)
    samples = split_samples(conform_arrays(float_domain(gen.program, entry, arrays),
                                           model_input_specs(float_proto), source), source)
    given = None if labels is None else (
        load_labels(labels, len(samples), options.limits) if isinstance(labels, str) else
        np.asarray(labels))
    if given is not None and len(given) != len(samples):
        raise InputDataError(f"{len(given)} labels for {len(samples)} samples")
    if max_samples is not None:
        if max_samples > len(samples):
            raise InputDataError(f"--samples {max_samples}: {source} holds {len(samples)} "
                                 "samples")
        samples = samples[:max_samples]
        given = None if given is None else given[:max_samples]
    check_finite_samples(samples, source)
    say = progress or (lambda message: None)
    truth = None if given is None else \
        labels_by_output(gen, given, graph_output_tensors(gen.program, entry))
    data = entry_samples(gen.program, entry, samples)
    where = f"in QEMU ({gen.board.name}; slower than the host)" if gen.board.is_mcu \
        else "on the host"
    say(f"building and running the generated C {where} on {len(data)} sample(s)")
    ours = graph_outputs(gen.program, entry,
                         run_generated(gen, data, [*cflags, *entry.cflags], entry))
    reference = reference_model(gen.model, gen.graph, gen.qdq_rules)
    feeds = graph_feeds(gen.program, entry, data)
    quantized = run_ort(reference.model, feeds, "all",
                        lambda i, n: say(progress_bar("ONNX Runtime, quantized model", i + 1, n)),
                        reference.config)
    floats = run_ort(float_proto, samples, "all",
                     lambda i, n: say(progress_bar("ONNX Runtime, float model", i + 1, n)))
    pairs = output_pairs(gen, float_proto)
    input_sizes = [int(np.prod(t.shape)) for t in entry.inputs]
    shapes = {t.onnx_name: t.shape for t in graph_output_tensors(gen.program, entry)}
    outputs = tuple(
        validate_output(name, ours, quantized, floats, float_name,
                        is_classifier(shapes[name], input_sizes),
                        None if truth is None else truth.get(name))
        for name, float_name in pairs)
    return ValidateReport(len(samples), gen.board.name, gen.program.requant, ort_version(),
                          reference.description, outputs,
                          (*gen.graph.notes, *readings, *reference.notes))


def graph_output_tensors(program: Program, entry: Entry) -> tuple[Tensor, ...]:
    """The graph's outputs that `entry`'s outputs stand for."""
    if entry.quantized and program.boundary is not None:
        return program.boundary.float_outputs
    return entry.outputs


def graph_outputs(program: Program, entry: Entry, results: Samples) -> Samples:
    """`entry`'s results as the graph's outputs: a quantized output dequantized exactly
    as the model's DequantizeLinear computes it in ORT (io_boundary.dequantized)."""
    pairs = list(zip(graph_output_tensors(program, entry), entry.outputs, strict=True))
    return [{f.onnx_name: (r[q.onnx_name] if f.name == q.name
                           else dequantized(r[q.onnx_name], q)) for f, q in pairs}
            for r in results]


def output_pairs(gen: Generated, float_model: Any) -> list[tuple[str, str]]:
    """Each output of the quantized model with the float model's: by name (quantizers
    keep the names), else by position when both have as many."""
    ours = [o.name for o in gen.model.graph.output]
    theirs = [o.name for o in float_model.graph.output]
    if set(ours) <= set(theirs):
        return [(n, n) for n in ours]
    if len(ours) == len(theirs):
        return list(zip(ours, theirs, strict=True))
    raise InputDataError(f"the float model's outputs ({', '.join(theirs)}) do not match the "
                         f"quantized model's ({', '.join(ours)})")
