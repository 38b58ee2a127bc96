"""Command-line interface: onnx2mcu quantize | generate | run | verify | validate | inspect |
report | convert | runtime | boards.

Every error a user can cause prints one line and exits with status 2.

SIGINT and SIGTERM behave alike: the work in progress is abandoned, its temporary files
are removed (outputs and cache entries only ever appear by rename, so nothing half
written is left), one line is printed, and the exit status is 128 + the signal number,
as a shell reports a process killed by it: 130 for SIGINT, 143 for SIGTERM.

A closed standard output (`onnx2mcu boards | head -1`) is the reader having had enough:
the command ends quietly, with status 141 (128 + SIGPIPE), as a Unix tool does.
"""

from __future__ import annotations

import argparse
import os
import select
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np
from numpy.typing import NDArray

from codegen.backend.interface import ARENA_KINDS, IO_KINDS, Interface
from codegen.backend.project import (
    check_output_file,
    source_paths,
    write_output_file,
    write_output_with,
)
from codegen.core.boards import list_boards
from codegen.core.dataset import load_dataset, load_labels, load_npz
from codegen.core.limits import DEFAULT_LIMITS, Limits, format_bytes, parse_size
from codegen.core.names import visible
from codegen.core.progress import progress_bar
from codegen.frontend.importer import parse_input_shape
from codegen.oracle.quantize import ACTIVATION_TYPES, CALIBRATION_METHODS, QUANT_FORMATS
from codegen.oracle.validate import VALIDATION_FORMATS
from codegen.oracle.verify import ORT_LEVELS, VerifyReport, ort_version

from . import api
from .errors import InputDataError, Onnx2McuError, ToolchainError
from .options import Options, resolve_target
from .version import __version__

if TYPE_CHECKING:
    from codegen.core.boards import Board
    from codegen.views.counts import CountReport
    from codegen.views.inspection import Inspection


def _input_shapes(values: Sequence[str] | None) -> dict[str, tuple[int, ...]] | None:
    if not values:
        return None
    return dict(parse_input_shape(v) for v in values)


def _load_npz(path: str, args: argparse.Namespace) -> dict[str, NDArray[Any]]:
    return load_npz(path, _limits(args))


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a count: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text!r}")
    return value


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _limit_options(p: argparse.ArgumentParser) -> None:
    """Sizes over which a model is refused before anything is allocated or written."""
    for option, field, what in (
            ("--max-tensor-bytes", "max_tensor_bytes", "a tensor (weights included)"),
            ("--max-arena-bytes", "max_arena_bytes", "the activation arena"),
            ("--max-source-bytes", "max_source_bytes", "the generated C sources"),
            ("--max-data-bytes", "max_data_bytes", "the samples of a data file (by the "
             "sizes its .npy headers declare) or of --samples, with their outputs")):
        default = getattr(DEFAULT_LIMITS, field)
        p.add_argument(option, type=_size, default=default, metavar="SIZE",
                       help=f"refuse a model when {what} would take more than SIZE "
                            f"(bytes, or with a K/M/G suffix; default {format_bytes(default)})")
    for option, field, what in (("--max-nodes", "max_nodes", "nodes"),
                                ("--max-outputs", "max_outputs", "graph outputs")):
        default = getattr(DEFAULT_LIMITS, field)
        p.add_argument(option, type=_count, default=default, metavar="N",
                       help=f"refuse a model with more than N {what} (default {default})")


def _limits(args: argparse.Namespace) -> Limits:
    return Limits(max_tensor_bytes=args.max_tensor_bytes,
                  max_arena_bytes=args.max_arena_bytes,
                  max_source_bytes=args.max_source_bytes,
                  max_data_bytes=args.max_data_bytes, max_nodes=args.max_nodes,
                  max_outputs=args.max_outputs)


def _common(p: argparse.ArgumentParser, several: bool = False) -> None:
    if several:
        p.add_argument("model", nargs="+", help="quantized ONNX model (.onnx); several: "
                                                "their budget together in one firmware")
    else:
        p.add_argument("model", help="quantized ONNX model (.onnx)")
    p.add_argument("--board", default="host", help="target board (see `onnx2mcu boards`)")
    p.add_argument("--requant", choices=["float", "int"],
                   help="requantization arithmetic: float32 as ORT (default on FPU boards) or "
                        "integer-only (default on cores without FPU); both are bit-exact")
    p.add_argument("--input-shape", action="append", metavar="NAME=D0xD1x...",
                   help="static shape for an input with dynamic dimensions (repeatable)")
    p.add_argument("--integer-only", action="store_true",
                   help="fuse QDQ patterns into integer operators even where ONNX Runtime "
                        "computes them in float (verify then reports the differences)")
    p.add_argument("--qdq-rules", choices=["auto", "x86", "arm"], default="auto",
                   help="whose int8 QDQ fusion rules to follow, ONNX Runtime's on x86 or on "
                        "ARM (default auto: the one computing more in integers)")
    p.add_argument("--native", action="store_true",
                   help="host board: compile with -march=native (every instruction this "
                        "machine has; the program then needs a machine like it)")
    p.add_argument("--weights", choices=["auto", "int8", "int16"], default="auto",
                   help="weight storage of the fast kernels: int16 runs faster and takes "
                        "twice the bytes (default auto: int16 when it takes at most half the "
                        "board's flash, int8 on cores without DSP)")
    p.add_argument("--memory", choices=["fast", "min"], default="fast",
                   help="fast (default): every layer whole, the fewest cycles; min: blocks "
                        "of layers computed a few rows at a time where that lowers the "
                        "arena, for more cycles")
    p.add_argument("--io", choices=list(IO_KINDS), default="float",
                   help="float (default): the entry point takes and gives the graph's float "
                        "tensors; quantized: the quantized tensors, in the arena, without the "
                        "boundary QuantizeLinear/DequantizeLinear; both: both entry points")
    p.add_argument("--arena", choices=list(ARENA_KINDS), default="static",
                   help="static (default): the arena is a static array of the model's .c; "
                        "caller: every entry point takes your arena as its first argument")
    p.add_argument("--arena-section", metavar="SECTION",
                   help="put the static arena in this linker section (e.g. .sram2)")
    _reserve_options(p)
    _limit_options(p)


def _reserve_options(p: argparse.ArgumentParser) -> None:
    """What the rest of the firmware takes of the board (the application, other models)."""
    for what in ("flash", "RAM"):
        p.add_argument(f"--reserve-{what.lower()}", type=_size, default=0, metavar="SIZE",
                       help=f"{what} the rest of the firmware takes (bytes, or with a K/M "
                            f"suffix): the budget check and --weights auto hold the model to "
                            f"what is left of the board's {what}")


class Parser(argparse.ArgumentParser):
    """A usage error is one line, as every other error (the whole usage is --help's)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="onnx2mcu",
        description="Quantized ONNX models to bit-exact, malloc-free C for microcontrollers.")
    parser.add_argument("--version", action="version", version=f"onnx2mcu {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    g = sub.add_parser("generate", help="write a C99 project for the model")
    _common(g)
    g.add_argument("-o", "--output", required=True, help="output folder")
    g.add_argument("--name", help="C name of the model (default: from the file name)")
    g.add_argument("--force", action="store_true", help="replace a non-empty output folder")
    g.add_argument("--no-budget-check", action="store_true",
                   help="generate even when the model does not fit the board's RAM or flash")
    g.add_argument("--runtime", metavar="DIR",
                   help="use the shared runtime in DIR (written by `onnx2mcu runtime`) "
                        "instead of a runtime/ of the project's own")

    rt = sub.add_parser("runtime", help="write the runtime once, for several models in one "
                                        "firmware (generate --runtime DIR)")
    rt.add_argument("-o", "--output", required=True, help="output folder")
    rt.add_argument("--force", action="store_true", help="replace a non-empty output folder")

    r = sub.add_parser("run", help="generate, compile and run on given inputs")
    _common(r)
    r.add_argument("--inputs", required=True,
                   help=".npz with one array per model input, keyed by input name: one "
                        "sample, or many on a first axis (all are run; the outputs then "
                        "have that axis too)")
    r.add_argument("--output", help=".npz to write, keyed by output name")
    r.add_argument("--force", action="store_true", help="replace an existing file")
    r.add_argument("--count-instructions", action="store_true",
                   help="microcontroller boards (Cortex-M, RISC-V): report the instructions "
                        "one inference executes in QEMU (deterministic)")
    r.add_argument("--count-cycles", action="store_true",
                   help="Cortex-M4/M33/M0+ boards: also estimate the cycles (a cost model "
                        "of the core applied to the instructions QEMU executes)")
    r.add_argument("--per-layer", action="store_true",
                   help="with --count-instructions or --count-cycles: also per layer")

    v = sub.add_parser("verify", help="compare the generated C with ONNX Runtime bit for bit")
    _common(v)
    v.add_argument("--inputs", help=".npz with one array per model input (default: random)")
    v.add_argument("--dataset", metavar="DATA",
                   help="many samples: an .npz keyed by input name, or a folder of NAME.npy "
                        "files, the first axis counting the samples (an input's leading "
                        "axes of 1 may be left out); all run in one process")
    v.add_argument("--labels", metavar="LABELS",
                   help="with --dataset: class labels (.npy of class indices, one per "
                        "sample, or one-hot rows); prints the accuracy of each output that "
                        "looks like class scores")
    v.add_argument("--samples", type=_count, metavar="N",
                   help="random samples (default 10); with --dataset, its first N samples "
                        "(default: all)")
    v.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    v.add_argument("--ort-level", choices=sorted(ORT_LEVELS), default="all",
                   help="ONNX Runtime's graph optimization level for the reference (default "
                        "all: the level whose QDQ fusions the generated C reproduces)")
    v.add_argument("--per-layer", action="store_true",
                   help="compare every intermediate tensor and name the first layer that "
                        "differs")
    v.add_argument("--verbose", action="store_true",
                   help="explain each note: the CPU profile, the fusion rules, the reference")

    i = sub.add_parser("inspect", help="print the graph as onnx2mcu sees it, one line per node")
    _common(i)
    i.add_argument("--explain-kernels", action="store_true",
                   help="end with what each kernel called is: its name decoded, runtime file, "
                        "parameters, weight layout, scratch and why it was chosen")

    c = sub.add_parser("convert", help="write the model after onnx2mcu's QDQ recipes as a "
                                       "QOperator ONNX model")
    c.add_argument("model", help="ONNX model (.onnx)")
    c.add_argument("-o", "--output", required=True, help="the .onnx file to write")
    c.add_argument("--input-shape", action="append", metavar="NAME=D0xD1x...")
    c.add_argument("--force", action="store_true", help="replace an existing file")
    c.add_argument("--integer-only", action="store_true",
                   help="fuse also where ONNX Runtime keeps QDQ patterns in float")
    c.add_argument("--qdq-rules", choices=["auto", "x86", "arm"], default="auto",
                   help="whose int8 QDQ fusion rules to follow, ONNX Runtime's on x86 or on "
                        "ARM (default auto: the one computing more in integers)")
    _limit_options(c)

    rp = sub.add_parser("report", help="per-layer costs, flash and RAM against the board's "
                                       "budget, and a picture of the arena over time; of "
                                       "several models, their budget together")
    _common(rp, several=True)
    rp.add_argument("--shared-arena", action="store_true",
                    help="with several models: one arena for all, the largest (they run one "
                         "after the other in one caller-owned buffer)")
    rp.add_argument("--format", choices=["text", "json", "html"], default="text",
                    help="text (default), json (every number) or html (table and picture)")
    rp.add_argument("--output", help="file to write (default: standard output)")
    rp.add_argument("--svg", help="also write the arena over time as an SVG picture")
    rp.add_argument("--force", action="store_true", help="replace existing output files")
    rp.add_argument("--count-instructions", action="store_true",
                    help="microcontroller boards: count each layer's instructions in QEMU")
    rp.add_argument("--count-cycles", action="store_true",
                    help="Cortex-M4/M33/M0+ boards: also estimate each layer's cycles and the "
                         "time at the board's clock")
    rp.add_argument("--inputs", help="with --count-instructions or --count-cycles: .npz with "
                                     "one array per model input (default: random, seed 0)")

    q = sub.add_parser("quantize", help="quantize a float model with calibration data "
                                        "(ONNX Runtime's quantizer, settings for MCUs)")
    q.add_argument("model", help="float ONNX model (.onnx)")
    q.add_argument("-o", "--output", required=True, help="the quantized .onnx file to write")
    q.add_argument("--calibration", required=True, metavar="DATA",
                   help="calibration samples: an .npz keyed by input name, or a folder of "
                        "NAME.npy files, the first axis counting the samples")
    q.add_argument("--format", choices=QUANT_FORMATS, default="qdq",
                   help="qdq (default): QuantizeLinear/DequantizeLinear around float "
                        "operators, which onnx2mcu fuses; qoperator: QLinearConv and friends")
    q.add_argument("--method", choices=CALIBRATION_METHODS, default="minmax",
                   help="calibration: minmax (default), entropy or percentile")
    q.add_argument("--activations", choices=ACTIVATION_TYPES, default="int8",
                   help="activation type (default int8: exact in ORT on every CPU)")
    q.add_argument("--per-tensor", action="store_true",
                   help="one weight scale per tensor instead of one per output channel")
    q.add_argument("--samples", type=int, metavar="N",
                   help="calibrate on the first N samples only")
    q.add_argument("--board", default="host",
                   help="the board the summary is for (see `onnx2mcu boards`)")
    q.add_argument("--force", action="store_true", help="replace an existing file")
    _limit_options(q)

    va = sub.add_parser("validate", help="the generated C against the float model on a data "
                                         "set: error, cosine, SNR, top-1 agreement, accuracy")
    _common(va)
    va.add_argument("--float-model", required=True, metavar="FLOAT",
                    help="the float model the quantized one was made from")
    va.add_argument("--dataset", required=True, metavar="DATA",
                    help="the samples: an .npz keyed by input name, or a folder of NAME.npy "
                         "files, the first axis counting the samples")
    va.add_argument("--labels", metavar="LABELS",
                    help="class labels (.npy of class indices, one per sample, or one-hot "
                         "rows): adds the accuracy of the float model, of the C and of ORT")
    va.add_argument("--samples", type=_count, metavar="N",
                    help="the first N samples of the data set (default: all)")
    va.add_argument("--format", choices=sorted(VALIDATION_FORMATS), default="text",
                    help="text (default) or json (the same numbers)")

    sub.add_parser("boards", help="list the known boards")
    return parser


def _terminal_progress() -> Callable[[str], None] | None:
    """Progress on one overwritten stderr line, only when stderr is a terminal."""
    if not sys.stderr.isatty():
        return None

    def show(message: str) -> None:
        sys.stderr.write("\r\033[K" + message)
        sys.stderr.flush()

    return show


def _terminal_progress_done() -> None:
    if sys.stderr.isatty():
        sys.stderr.write("\r\033[K")
        sys.stderr.flush()


def print_report(report: VerifyReport, verbose: bool = False) -> None:
    from codegen.views.verify_text import verify_lines

    print("\n".join(verify_lines(report, verbose)))


def _options(args: argparse.Namespace, counting: bool = False) -> Options:
    """The options of a command, checked before any file is read."""
    options = Options(board=args.board, name=getattr(args, "name", None),
                      requant=args.requant, input_shapes=_input_shapes(args.input_shape),
                      integer_only=args.integer_only, qdq_rules=args.qdq_rules,
                      weights=args.weights, native=args.native, limits=_limits(args),
                      memory=args.memory, reserve_flash=args.reserve_flash,
                      reserve_ram=args.reserve_ram,
                      interface=Interface(io=args.io, arena=args.arena,
                                          arena_section=args.arena_section,
                                          runtime=getattr(args, "runtime", None)))
    target = resolve_target(options)
    if counting:
        api.check_counting_board(target.board)
    return options


def cmd_boards(args: argparse.Namespace) -> int:
    from codegen.views.boards import format_board_table

    sys.stdout.write(format_board_table(list_boards()))
    return 0


def cmd_inspect(args: argparse.Namespace) -> int:
    from codegen.views.inspection import format_inspection, inspect_model

    inspection = inspect_model(args.model, _options(args))
    print(format_inspection(inspection, args.explain_kernels))
    return 2 if inspection.problems or inspection.arena_bytes is None else 0


def cmd_generate(args: argparse.Namespace) -> int:
    result = api.generate(args.model, args.output, _options(args), force=args.force,
                          budget_check=not args.no_budget_check)
    print_notes(result.notes)
    print(f"wrote {result.out}/ ({len(result.files)} files): {result.name}.h, "
          f"{result.name}.c; arena {result.arena_bytes} bytes, requant {result.requant}")
    if result.board.is_mcu and not result.harness_fits:
        print(f"board {result.board.name}: {result.budget_note}")
        print(f"build: make -C {result.out} lib  ->  {result.out}/build/lib{result.name}.a "
              "for your firmware (the test harness, with newlib's stdio, semihosting and "
              "its linker script's stack reserve beside the model, does not fit this board's "
              "RAM); run the "
              f"harness in QEMU: make -C {result.out} run (input.bin -> output.bin)")
    elif result.board.is_mcu:
        print(f"board {result.board.name}: {result.budget_note}")
        print(f"build: make -C {result.out}  ->  {result.out}/build/{result.name}.elf; "
              f"run in QEMU: make -C {result.out} run (input.bin -> output.bin)")
    else:
        print(f"build: make -C {result.out}  ->  {result.out}/build/{result.name}_main")
    return 0


def cmd_runtime(args: argparse.Namespace) -> int:
    files = api.write_runtime(args.output, force=args.force)
    print(f"wrote {args.output}/ ({len(files)} files): the shared runtime, for models "
          f"generated with --runtime {args.output}; build its library with "
          f"make -C {args.output} lib")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    counting = args.count_instructions or args.count_cycles
    if args.per_layer and not counting:
        raise InputDataError("--per-layer goes with --count-instructions or --count-cycles "
                             "(for verify, use verify --per-layer)")
    if counting:
        options = _options(args, counting=True)
        report = api.count_instructions(args.model, _load_npz(args.inputs, args), options,
                                        per_layer=args.per_layer, cycles=args.count_cycles)
        print_counts(report)
        return 0
    if not args.output:
        raise InputDataError("run needs --output (or --count-instructions)")
    options = _options(args)
    target = npz_path(Path(args.output))
    inputs = source_paths(args.model, args.inputs)
    check_output_file(target, args.force, inputs)  # refuse before any work
    result = api.run_model(args.model, _load_npz(args.inputs, args), options)
    out = save_npz(target, result.outputs, args.force, inputs)
    print_notes(result.notes)
    count = f"; {result.samples} samples on the first axis" if result.samples > 1 else ""
    print(f"wrote {out} ({visible(', '.join(result.outputs))}{count})")
    return 0


def npz_path(path: Path) -> Path:
    """The file numpy writes for `path`: '.npz' added where it is missing."""
    return path if path.suffix == ".npz" else path.with_name(path.name + ".npz")


def save_npz(out: Path, arrays: dict[str, NDArray[Any]], force: bool,
             inputs: Sequence[Path]) -> Path:
    """Write `arrays` to `out` atomically (never half-written, never over a file without
    --force, never onto an input)."""
    def write(path: Path) -> None:
        with path.open("wb") as f:
            np.savez(f, **arrays)  # type: ignore[arg-type]
    return write_output_with(out, write, force, inputs)


def print_notes(notes: Sequence[str]) -> None:
    for note in notes:
        print(f"note: {visible(note)}")


def print_counts(report: CountReport) -> None:
    from codegen.views.counts import count_lines

    print("\n".join(count_lines(report)))


def cmd_report(args: argparse.Namespace) -> int:
    from codegen.views.report import FORMATS, render_arena_svg

    counting = args.count_instructions or args.count_cycles
    if len(args.model) > 1:
        return report_several(args)
    if args.shared_arena:
        raise InputDataError("--shared-arena goes with several models")
    args.model = args.model[0]
    if args.inputs and not counting:
        raise InputDataError("--inputs goes with --count-instructions or --count-cycles")
    options = _options(args, counting=counting)
    targets = [Path(p) for p in (args.output, args.svg) if p]
    if len(targets) == 2 and targets[0].resolve() == targets[1].resolve():
        raise InputDataError("--output and --svg name the same file")
    sources = source_paths(args.model, args.inputs)
    for target in targets:  # refuse before any work: a report can take a while
        check_output_file(target, args.force, sources)
    inputs = _load_npz(args.inputs, args) if args.inputs else None
    report = api.report(args.model, options, count=counting, inputs=inputs,
                        cycles=args.count_cycles)
    text = FORMATS[args.format](report)
    if args.svg:
        write_output_file(Path(args.svg), render_arena_svg(report).encode(), args.force,
                          sources)
    if args.output:
        write_output_file(Path(args.output), text.encode(), args.force, sources)
        print(f"wrote {args.output}" + (f" and {args.svg}" if args.svg else ""))
    else:
        sys.stdout.write(text)
        sys.stdout.flush()  # a closed pipe shows here, before the line below (see main)
        if args.svg:
            print(f"wrote {args.svg}", file=sys.stderr)
    return 0


def report_several(args: argparse.Namespace) -> int:
    """report A.onnx B.onnx ...: the budget of the models together in one firmware."""
    from codegen.views.budget import BUDGET_FORMATS

    given = [o for o, on in (("--svg", args.svg), ("--inputs", args.inputs),
                             ("--count-instructions", args.count_instructions),
                             ("--count-cycles", args.count_cycles)) if on]
    if given or args.format not in BUDGET_FORMATS:
        what = ", ".join(given) or f"--format {args.format}"
        raise InputDataError(f"{what}: with several models, report gives their budget "
                             "together (--format text or json); report each model alone "
                             "for the rest")
    options = _options(args)
    if args.shared_arena and options.interface.arena != "caller":
        raise InputDataError("--shared-arena goes with --arena caller: static arenas are "
                             "separate arrays, one per model, and cannot be shared")
    sources = source_paths(*args.model)
    if args.output:
        check_output_file(Path(args.output), args.force, sources)
    budget = api.budget_of_models(args.model, options, shared_arena=args.shared_arena)
    text = BUDGET_FORMATS[args.format](budget)
    if args.output:
        write_output_file(Path(args.output), text.encode(), args.force, sources)
        print(f"wrote {args.output}")
    else:
        sys.stdout.write(text)
    return 0 if budget.fits else 1


def cmd_verify(args: argparse.Namespace) -> int:
    options = _options(args)
    if args.inputs and args.dataset:
        raise InputDataError("--inputs and --dataset: give one (--inputs is one sample, "
                             "--dataset many)")
    if args.inputs and args.samples is not None:
        raise InputDataError("--samples goes with random inputs or --dataset (--inputs runs "
                             "every sample of its file)")
    if args.labels and not args.dataset:
        raise InputDataError("--labels goes with --dataset (one label per sample)")
    inputs: dict[str, NDArray[Any]] | list[dict[str, Any]] | None = (
        _load_npz(args.inputs, args) if args.inputs else
        load_dataset(args.dataset, _limits(args)) if args.dataset else None)
    labels = load_labels(args.labels, len(inputs), _limits(args)) \
        if args.labels and inputs is not None else None
    if isinstance(inputs, list) and args.samples is not None:
        inputs = first_samples(inputs, args.samples, args.dataset)
        labels = None if labels is None else labels[:args.samples]
    report = api.verify(args.model, options, inputs=inputs,
                        samples=10 if args.samples is None else args.samples,
                        seed=args.seed, per_layer=args.per_layer,
                        progress=_terminal_progress(), ort_level=args.ort_level, labels=labels)
    _terminal_progress_done()
    print_report(report, verbose=args.verbose)
    return 0 if report.ok else 1


def first_samples(samples: list[dict[str, Any]], count: int,
                  source: str) -> list[dict[str, Any]]:
    """--samples N of a data set: its first N samples, which it must have."""
    if count > len(samples):
        raise InputDataError(f"--samples {count}: {source} holds {len(samples)} samples")
    return samples[:count]


def cmd_convert(args: argparse.Namespace) -> int:
    out = api.convert(args.model, args.output, input_shapes=_input_shapes(args.input_shape),
                      force=args.force, integer_only=args.integer_only,
                      qdq_rules=args.qdq_rules, limits=_limits(args))
    print(f"wrote {out.out}")
    if out.float_islands:
        how = ("with session.qdqisint8allowed=1 (ORT's ARM behaviour)" if out.qdq_rules == "arm"
               else "with session.qdqisint8allowed=0 (ORT's x86 behaviour)")
        print(f"{out.float_islands} float island(s) left, computed in float as ONNX Runtime "
              f"computes them {how}")
    return 0


def cmd_quantize(args: argparse.Namespace) -> int:
    from codegen.oracle.quantize import QuantizeSettings, quantize
    from codegen.views.inspection import format_inspection_summary, inspect_model

    settings = QuantizeSettings(quant_format=args.format, method=args.method,
                                activations=args.activations, per_channel=not args.per_tensor)
    board = resolve_target(Options(board=args.board)).board  # fails before any work
    result = quantize(args.model, args.output, args.calibration, settings,
                      max_samples=args.samples, force=args.force, limits=_limits(args),
                      progress=_progress_bar("calibrating"))
    _terminal_progress_done()
    print_notes(result.notes)
    print(f"wrote {result.out}: {settings.describe()} on {result.samples} sample(s) "
          f"(onnxruntime.quantization {ort_version()})")
    inspection = inspect_model(result.out, Options(board=args.board))
    print(format_inspection_summary(inspection))
    fit = board_fit_lines(inspection, board)
    if fit and "does NOT fit" in fit[0] and inspection.arena_bytes is not None:
        banded = inspect_model(result.out, Options(board=args.board, memory="min"))
        fit.insert(1, min_memory_line(banded, board))
    for line in fit:
        print(line)
    return 1 if inspection.problems or inspection.arena_bytes is None else 0


def board_fit_lines(inspection: Inspection, board: Board) -> list[str]:
    """What the quantized model needs of a Cortex-M board, from the plan: the arena and
    the weights are lower bounds of its RAM and flash (report measures the build)."""
    if not board.is_mcu or inspection.arena_bytes is None or board.memory is None:
        return []
    ram, flash = board.memory.ram_length, board.memory.flash_length
    weights = inspection.weight_bytes or 0
    fits = inspection.arena_bytes <= ram and weights <= flash
    lines = [f"board {board.name}: arena {inspection.arena_bytes} of {ram} bytes of RAM, "
             f"weights {weights} of {flash} bytes of flash ("
             + ("fits, before code, stack and I/O; `onnx2mcu report` measures them)" if fits
                else "does NOT fit)")]
    if inspection.float_islands and not board.fpu:
        lines.append(f"board {board.name} has no FPU: each float island runs in software "
                     "floating point")
    return lines


def min_memory_line(banded: Inspection, board: Board) -> str:
    """What `--memory min` makes of a quantized model too big for its board."""
    assert board.memory is not None
    arena, weights = banded.arena_bytes, banded.weight_bytes or 0
    if arena is None:
        return "with --memory min: not generated either"
    fits = arena <= board.memory.ram_length and weights <= board.memory.flash_length
    return (f"with --memory min (layers in row bands) the arena is {arena} bytes: "
            + ("fits, before code, stack and I/O; generate with --memory min (it measures "
               "them)" if fits else "does not fit either"))


def _progress_bar(what: str) -> Callable[[int, int], None] | None:
    """A bar over samples on one overwritten stderr line, only on a terminal."""
    show = _terminal_progress()
    if show is None:
        return None

    def bar(done: int, total: int) -> None:
        show(progress_bar(what, done, total))

    return bar


def cmd_validate(args: argparse.Namespace) -> int:
    report = api.validate(args.model, args.float_model, args.dataset, _options(args),
                          labels=args.labels, progress=_terminal_progress(),
                          max_samples=args.samples)
    _terminal_progress_done()
    sys.stdout.write(VALIDATION_FORMATS[args.format](report))
    return 0 if report.bit_exact else 1


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "convert": cmd_convert, "quantize": cmd_quantize, "validate": cmd_validate,
    "boards": cmd_boards, "inspect": cmd_inspect, "generate": cmd_generate, "run": cmd_run,
    "runtime": cmd_runtime,
    "verify": cmd_verify, "report": cmd_report,
}


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived. A KeyboardInterrupt, so that every cleanup written for
    Ctrl-C (subprocess.run killing its child, the staging folders' removal) runs."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _interrupt(signum: int, frame: FrameType | None) -> None:
    # A second signal must not cut the cleanup of the first short.
    for sig in INTERRUPT_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    raise Interrupted(signum)


INTERRUPT_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def interrupt_handling() -> Iterator[None]:
    """SIGTERM handled like SIGINT while the command runs; the handlers restored after.
    Only the main thread may set handlers: elsewhere (main() called from a thread) the
    caller's handling stays."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.getsignal(sig) for sig in INTERRUPT_SIGNALS}
    for sig in INTERRUPT_SIGNALS:
        signal.signal(sig, _interrupt)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def interrupted_status(exc: KeyboardInterrupt) -> int:
    signum = exc.signum if isinstance(exc, Interrupted) else signal.SIGINT
    name = signal.Signals(signum).name
    completed = getattr(exc, "completed_output", None)
    if completed is not None:  # arrived as the finished output was being moved in place
        print(f"onnx2mcu: interrupted by {name} after {completed} was written whole",
              file=sys.stderr)
    else:
        print(f"onnx2mcu: interrupted by {name} (temporary files removed)", file=sys.stderr)
    return 128 + signum


def error_text(exc: Onnx2McuError) -> str:
    """The message on one line, whatever names it quotes. Only a toolchain's own output
    (the compiler's diagnostics) follows on further lines, indented."""
    if not isinstance(exc, ToolchainError):
        return visible(str(exc))
    head, *detail = str(exc).split("\n")
    return "\n  ".join(visible(line) for line in (head, *detail))


# A process killed by SIGPIPE, as a shell reports it. Python ignores SIGPIPE, so writing
# to a closed pipe raises BrokenPipeError instead; main() turns that into this status.
BROKEN_PIPE_STATUS = 128 + signal.SIGPIPE


def stdout_closed() -> bool:
    """Is standard output a pipe (or socket) whose reader has gone, as in `onnx2mcu
    boards | head -1`? Then a BrokenPipeError is the reader having had enough, not a bug.
    poll reports POLLERR (pipe) or POLLHUP (socket) for such a descriptor."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, ValueError, OSError):  # replaced (tests) or already closed
        return False
    if not hasattr(select, "poll"):
        return True
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))


def quiet_broken_pipe() -> int:
    """Exit as a well-behaved Unix tool whose reader has gone: no message, status 141.
    Standard output is pointed at /dev/null so that the interpreter's final flush of
    what is still buffered does not fail again (and print "Exception ignored")."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)
    return BROKEN_PIPE_STATUS


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # named with the command whose --help lists what it takes
        parser.exit(2, f"onnx2mcu {args.command}: error: unrecognized arguments: "
                       f"{' '.join(unknown)} (see onnx2mcu {args.command} --help)\n")
    try:
        with interrupt_handling():
            status = COMMANDS[args.command](args)
            # Buffered output reaches a closed pipe here at the latest, not at exit.
            sys.stdout.flush()
            return status
    except Onnx2McuError as exc:
        print(f"onnx2mcu: error: {error_text(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        return interrupted_status(exc)
    except BrokenPipeError as exc:
        if stdout_closed():
            return quiet_broken_pipe()
        return internal_error(exc)  # a pipe of onnx2mcu's own: a bug
    except Exception as exc:  # a bug in onnx2mcu, not in the user's input
        return internal_error(exc)


def internal_error(exc: Exception) -> int:
    if os.environ.get("ONNX2MCU_DEBUG"):
        traceback.print_exception(exc)
    print(f"onnx2mcu: internal error: {type(exc).__name__}: {visible(str(exc))} (set "
          "ONNX2MCU_DEBUG=1 for a traceback, and please report it)", file=sys.stderr)
    return 3


if __name__ == "__main__":
    sys.exit(main())
