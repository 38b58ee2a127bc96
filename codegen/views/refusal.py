"""Refusals that say what would work: a float model is told to be quantized first, and a
float island onnx2mcu cannot reproduce suggests --integer-only only when that option
really takes the model (checked by generating it so, never guessed)."""

from __future__ import annotations

import shlex
from dataclasses import replace
from pathlib import Path

import onnx

from codegen.core.names import quoted
from codegen.core.pattern import float_nodes
from codegen.errors import (
    FloatIslandError,
    Onnx2McuError,
    UnsupportedError,
    UnsupportedOperatorError,
)
from codegen.frontend.importer import ModelSource, load_model
from codegen.frontend.model_kind import is_float_model, is_float_model_with_adapters
from codegen.options import Options, Target, resolve_target
from codegen.pipeline import Generated, generate_sources


def float_model_message(source: ModelSource, model: onnx.ModelProto) -> str:
    name = Path(source).name.removesuffix(".onnx") if isinstance(source, str | Path) else (
        model.graph.name or "model")
    if is_float_model_with_adapters(model):
        return (f"model {quoted(name)} is a float model with 8-bit I/O adapters (Cast/Sub/Mul "
                "on its inputs, QuantizeLinear on its outputs, as tf2onnx --dequantize writes "
                "them): its weights and activations are float; convert the TFLite model "
                "without --dequantize, or quantize the float model with "
                f"`{quantize_command(source)}`")
    return (f"model {quoted(name)} is a float model, not quantized: quantize it with "
            f"`{quantize_command(source)}` (ONNX Runtime's quantizer, with samples of your "
            "data)")


def integer_only_takes(model: onnx.ModelProto, options: Options) -> bool:
    """Does onnx2mcu generate this model with --integer-only (same other options)?"""
    try:
        generate_sources(model, replace(options, integer_only=True))
    except Onnx2McuError:
        return False
    return True


INTEGER_ONLY_TAKES_IT = ("--integer-only takes this model: it fuses such units into integer "
                         "kernels instead")


def explain_problems(problems: list[UnsupportedError], source: ModelSource,
                     options: Options) -> list[UnsupportedError]:
    """The refusals to report for `problems` (unsupported operators, float islands):
    for a float model its own message alone (its nodes' are beside the point), else the
    float islands with the --integer-only suggestion where that option takes the model."""
    if not problems:
        return problems
    model = load_model(source, options.limits)
    if is_float_model(model) or is_float_model_with_adapters(model):
        return [UnsupportedError(float_model_message(source, model))]
    islands = [p for p in problems if isinstance(p, FloatIslandError)]
    if not islands or options.integer_only or not integer_only_takes(model, options):
        return problems
    return [FloatIslandError(f"{p}; {INTEGER_ONLY_TAKES_IT}") if p in islands else p
            for p in problems]


def explain_refusal(error: UnsupportedError, source: ModelSource,
                    options: Options) -> UnsupportedError:
    """The refusal to report for `error` (an unsupported operator or a float island): a
    float model is refused as such, whatever its first unsupported node."""
    return explain_problems([error], source, options)[0]


def explain_adapter_refusal(error: UnsupportedError, source: ModelSource,
                            options: Options) -> UnsupportedError:
    """Any refusal of a float model behind 8-bit I/O adapters (its first refused node is
    usually the input's Cast) is reported as that model's refusal."""
    model = load_model(source, options.limits)
    if is_float_model_with_adapters(model):
        return UnsupportedError(float_model_message(source, model))
    return error


def quantize_command(source: ModelSource) -> str:
    """The `onnx2mcu quantize` command line that quantizes the model at `source`."""
    if isinstance(source, str | Path):
        path = Path(source)
        return (f"onnx2mcu quantize {shlex.quote(str(path))} -o "
                f"{shlex.quote(str(path.with_name(path.stem + '_int8.onnx')))} "
                "--calibration DATA")
    return "onnx2mcu quantize MODEL.onnx -o MODEL_int8.onnx --calibration DATA"


def float_model_note(gen: Generated, source: ModelSource) -> str:
    """What a model with no quantization at all costs, and the command that quantizes it:
    said once on every command that builds it (a float model is accepted: its float
    kernels are bit-exact with ORT's, but an MCU should not run it)."""
    nodes = len(float_nodes(gen.graph))
    name = Path(source).stem if isinstance(source, str | Path) else gen.name
    software = ("; this board has no FPU, so each float operation is a software "
                "floating-point call" if gen.board.is_mcu and not gen.board.fpu else "")
    return (f"model {quoted(name)} is not quantized: its {nodes} node(s) run in float32 "
            f"(arena {gen.plan.size} bytes, weights {gen.program.weight_bytes} bytes: about 4 "
            f"times what int8 takes, and the float kernels are several times slower than "
            f"the integer ones{software}); quantize it with samples of your data: "
            f"{quantize_command(source)}")


def generate_explained(source: ModelSource, options: Options | Target,
                       shown: ModelSource | None = None) -> Generated:
    """Every stage in memory (pipeline.generate_sources), and an unsupported operator or
    float island reported with what would work; a float model is generated with a note
    (float_model_note) naming the command that quantizes `shown` (default: `source`)."""
    target = options if isinstance(options, Target) else resolve_target(options)
    try:
        gen = generate_sources(source, target)
    except (UnsupportedOperatorError, FloatIslandError) as error:
        raise explain_refusal(error, source, target.options) from None
    except UnsupportedError as error:  # a float network behind 8-bit I/O adapters
        raise explain_adapter_refusal(error, source, target.options) from None
    if not (is_float_model(gen.model) or is_float_model_with_adapters(gen.model)):
        return gen
    note = float_model_note(gen, shown if shown is not None else source)
    return replace(gen, graph=replace(gen.graph, notes=[*gen.graph.notes, note]))
