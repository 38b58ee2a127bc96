"""Program + arena plan -> the files of a C99 project, rendered with Jinja2.

Nothing from the model reaches the C source unescaped: identifiers are generated
(L<n>_weights, input0, ...), and model names appear only in sanitized comments and
escaped string literals. The output depends only on the program, so the same model and
options always give byte-identical files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import jinja2
import numpy as np

from .boards import Board, MemoryMap
from .ir import DTYPES, Tensor, c_type
from .planner import ArenaPlan, scratch_name
from .program import (
    CArray,
    CDouble,
    CFloat,
    CInts,
    CRef,
    CStruct,
    CValue,
    KernelCall,
    Program,
)
from .resources import runtime_dir, templates_dir
from .version import __version__

STRICT_CFLAGS = ("-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic")
# ------------------------------------------------------------------ C text helpers


def runtime_headers() -> list[str]:
    """Every header of the runtime: a kernel's header is found by being there."""
    return sorted(path.name for path in runtime_dir().glob("*.h"))


def kernel_headers(sources: list[str]) -> list[str]:
    """The headers that declare the kernels of `sources`: a kernel X.c with its own
    X.h (rather than a declaration in q8_runtime.h) is declared there."""
    present = set(runtime_headers())
    return sorted(h for h in (f"{s[:-2]}.h" for s in sources if s.endswith(".c"))
                  if h in present)


def c_comment(text: str, limit: int = 120) -> str:
    """Text safe inside /* */: printable ASCII only, with no '*', '\\' or '?' so that
    comment terminators, line splices and trigraphs cannot form."""
    safe = "".join(ch if " " <= ch <= "~" and ch not in "*\\?" else "_" for ch in text)
    return safe if len(safe) <= limit else safe[: limit - 3] + "..."


def c_string(text: str) -> str:
    """A C string literal with every byte outside plain printable ASCII escaped."""
    out = []
    for byte in text.encode("utf-8"):
        ch = chr(byte)
        if ch in '"\\?':
            out.append("\\" + ch)
        elif 32 <= byte < 127:
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


# The longest string literal C99 compilers must accept (and -pedantic enforces), in bytes
# without the terminating NUL.
MAX_LITERAL_BYTES = 4095


def literal_text(text: str) -> tuple[str, bool]:
    """`text` cut to what one C99 string literal may hold (on a UTF-8 character boundary),
    and whether it was cut."""
    data = text.encode("utf-8")
    if len(data) <= MAX_LITERAL_BYTES:
        return text, False
    return data[:MAX_LITERAL_BYTES].decode("utf-8", errors="ignore"), True


def c_float(value: float) -> str:
    """An exact float32 literal: hexadecimal, so no decimal rounding is involved."""
    v = float(np.float32(value))
    if v == 0.0:
        return "-0.0f" if np.signbit(v) else "0.0f"
    mantissa, exponent = v.hex().split("p")
    return f"{mantissa.rstrip('0').rstrip('.')}p{exponent}f"


def _format_scalar(value: Any, ctype: str) -> str:
    if ctype == "float":
        return c_float(float(value))
    return str(int(value))


def format_array(symbol: str, array: CArray, per_line: int = 16) -> str:
    values = np.asarray(array.values).reshape(-1)
    items = [_format_scalar(v, array.ctype) for v in values.tolist()]
    if array.ctype == "float":
        per_line = 4
    lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    body = ",\n    ".join(lines)
    if array.aligned8:
        return (f"static const union {{\n    uint64_t align;\n    {array.ctype} v[{len(items)}];\n"
                f"}} {symbol} = {{.v = {{\n    {body}\n}}}};")
    return f"static const {array.ctype} {symbol}[{len(items)}] = {{\n    {body}\n}};"


# Upper bounds on the characters format_array prints per element, separator included
# ("-128, "; a float as "-0x1.fffffep+127f, " at most).
_CHARS_PER_ELEMENT = {"int8_t": 6, "uint8_t": 5, "int16_t": 8, "int32_t": 13, "float": 20}
_CHARS_OTHER = 26  # int64 and anything wider
_CHARS_PER_CALL = 2048  # the parameter struct, the call and its comment
_RUNTIME_BYTES = 128 * 1024  # the runtime_c files and templates a project copies


def estimate_source_bytes(program: Program) -> int:
    """The size of the generated sources, estimated before anything is formatted from
    the element counts of the constants (which dominate in any large model; counted
    at their widest) plus the runtime and per-call code."""
    total = _RUNTIME_BYTES + _CHARS_PER_CALL * len(program.calls)
    for value in program.constants.values():
        ctype = DTYPES[str(value.dtype)][1] if str(value.dtype) in DTYPES else ""
        total += int(value.size) * _CHARS_PER_ELEMENT.get(ctype, _CHARS_OTHER)
    for call in program.calls:
        for array in call.arrays:
            total += int(np.asarray(array.values).size) * _CHARS_PER_ELEMENT.get(
                array.ctype, _CHARS_OTHER)
    return total


def format_value(value: CValue, prefix: str, indent: int = 1) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int):
        return str(value)
    if isinstance(value, CFloat):
        return c_float(value.value)
    if isinstance(value, CDouble):
        return float(value.value).hex()
    if isinstance(value, CRef):
        return f"{prefix}_{value.name}" + (f".{value.member}" if value.member else "")
    if isinstance(value, CInts):
        return "{" + ", ".join(str(v) for v in value.values) + "}"
    pad = "    " * (indent + 1)
    fields = ",\n".join(f"{pad}.{k} = {format_value(v, prefix, indent + 1)}"
                        for k, v in value.fields)
    return "{\n" + fields + "\n" + "    " * indent + "}"


def format_struct(symbol: str, struct: CStruct, prefix: str) -> str:
    return f"static const {struct.ctype} {symbol} = {format_value(struct, prefix, 0)};"


# ------------------------------------------------------------------ the project


@dataclass(frozen=True)
class Buffers:
    """Maps tensor names to C expressions for the generated entry point."""

    expressions: dict[str, str]

    def of(self, tensor: str) -> str:
        return self.expressions[tensor]


def _buffers(program: Program, plan: ArenaPlan) -> Buffers:
    expr: dict[str, str] = {}
    for i, t in enumerate(program.inputs):
        expr[t.name] = f"input{i}"
    for i, t in enumerate(program.outputs):
        expr[t.name] = f"output{i}"
    for i, name in enumerate(sorted(program.constants)):
        expr[name] = f"const{i}"
    for name, placement in plan.placements.items():
        if name not in program.tensors:  # a scratch buffer: the kernel casts it
            expr[name] = f"(void *)(arena.bytes + {placement.offset})"
            continue
        ctype = c_type(program.tensors[name].dtype)
        expr[name] = f"({ctype} *)(void *)(arena.bytes + {placement.offset})"
    for alias in program.aliases:
        root = program.root(alias)
        if root in expr:  # aliases nothing reads have no storage to name
            expr[alias] = expr[root]
    return Buffers(expr)


def _call_statement(index: int, call: KernelCall, buffers: Buffers) -> str:
    args = [f"&L{index}_params"] if call.params is not None else []
    args += [buffers.of(t) for t in call.inputs]
    args += [buffers.of(t) for t in call.outputs]
    if call.scratch_bytes:
        args.append(buffers.of(scratch_name(index)))
    return f"{call.function}({', '.join(args)});"


def _tensor_info(t: Tensor, index: int, kind: str, prefix: str) -> dict[str, Any]:
    quant = t.quant
    literal, cut = literal_text(t.onnx_name)
    scale = zero_point = None
    quant_note = ""
    if quant is not None and quant.per_tensor:
        scale = c_float(quant.scale[0])
        zero_point = quant.zero_point[0]
        quant_note = ("real = (q - ZERO_POINT) * SCALE" if t.dtype != "float32" else
                      "the quantization applied to this float tensor inside the model")
    elif quant is not None:
        quant_note = f"quantized per axis {quant.axis} ({len(quant.scale)} scales)"
    return {
        "macro": f"{prefix}_{kind.upper()}{index}",
        "name": c_string(literal),
        "comment": c_comment(t.onnx_name, 60) + (
            f"; _NAME holds its first {MAX_LITERAL_BYTES} bytes" if cut else ""),
        "ctype": c_type(t.dtype),
        "dtype": t.dtype,
        "size": t.numel,
        "bytes": t.nbytes,
        "rank": len(t.shape),
        "shape": ", ".join(str(d) for d in t.shape) or "1",
        "shape_text": "x".join(str(d) for d in t.shape) or "scalar",
        "scale": scale,
        "zero_point": zero_point,
        "quant_note": quant_note,
        "param": f"{kind}{index}",
        "decode": {"float32": "f32", "uint8": "u8", "int8": "s8", "int32": "s32",
                   "int64": "s64"}[t.dtype],
    }


def emit_project(program: Program, plan: ArenaPlan, board: Board,
                 source_note: str = "") -> dict[str, bytes]:
    """Render every file of the generated project, keyed by relative path."""
    name = program.name
    prefix = name.upper()
    buffers = _buffers(program, plan)
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )

    definitions: list[str] = []
    weight_bytes = program.weight_bytes
    for i, name_c in enumerate(sorted(program.constants)):
        value = program.constants[name_c]
        array = CArray(f"const{i}", c_type(str(value.dtype)), value)
        definitions.append(f"/* constant {c_comment(name_c, 60)} */")
        definitions.append(format_array(f"const{i}", array))
    calls = []
    for i, call in enumerate(program.calls):
        for array in call.arrays:
            definitions.append(format_array(f"L{i}_{array.name}", array))
        if call.params is not None:
            definitions.append(format_struct(f"L{i}_params", call.params, f"L{i}"))
        calls.append({"comment": c_comment(call.node, 100), "function": call.function,
                      "statement": _call_statement(i, call, buffers)})

    used = {name for call in program.calls for name in (*call.inputs, *call.outputs)}
    unused = [buffers.of(t.name) for t in (*program.inputs, *program.outputs)
              if t.name not in used]
    inputs = [_tensor_info(t, i, "input", prefix) for i, t in enumerate(program.inputs)]
    outputs = [_tensor_info(t, i, "output", prefix) for i, t in enumerate(program.outputs)]
    sources = program.sources
    context = {
        "name": name,
        "prefix": prefix,
        "version": __version__,
        "source_note": c_comment(source_note, 100),
        "inputs": inputs,
        "outputs": outputs,
        "definitions": definitions,
        "calls": calls,
        "unused_params": unused,
        "arena_bytes": plan.size,
        "arena_lower_bound": plan.lower_bound,
        "weight_bytes": weight_bytes,
        "requant": program.requant,
        "runtime_sources": [f"runtime/{s}" for s in sources],
        "kernel_headers": kernel_headers(sources),
        "strict_cflags": " ".join(STRICT_CFLAGS),
        "board_cflags": " ".join(board.cflags),
        "board": board.name,
        "max_io_bytes": max([t["bytes"] for t in inputs + outputs], default=1),
        "decoders": sorted({t["decode"] for t in inputs}),
        "encoders": sorted({t["decode"] for t in outputs}),
    }
    files: dict[str, str] = {
        f"{name}.h": env.get_template("model.h.j2").render(context),
        f"{name}.c": env.get_template("model.c.j2").render(context),
        f"{name}.json": _manifest(program, plan, board, weight_bytes),
    }
    if board.is_cortex_m:
        files.update(_firmware_files(env, context, board))
    else:
        files.update({
            f"{name}_main.c": env.get_template("main.c.j2").render(context, firmware=False),
            "Makefile": env.get_template("Makefile.j2").render(context),
            "CMakeLists.txt": env.get_template("CMakeLists.txt.j2").render(context),
        })
    out = {path: text.encode("utf-8") for path, text in files.items()}
    runtime = runtime_dir()
    for src in (*runtime_headers(), *sources):
        out[f"runtime/{src}"] = (runtime / src).read_bytes()
    return out


def _firmware_files(env: jinja2.Environment, context: dict[str, Any],
                    board: Board) -> dict[str, str]:
    """The firmware around the model for a Cortex-M board: startup code, linker scripts
    for the part and for QEMU, the semihosting harness, the size build, Make and CMake."""
    assert board.memory is not None and board.qemu_memory is not None
    name = context["name"]
    arch = [f for f in board.cflags if f.startswith("-m")]
    firmware = {**context, "cpu": board.cpu, "fpu": board.fpu,
                "qemu_machine": board.qemu_machine, "arch_flags": " ".join(arch),
                "opt_flags": " ".join(f for f in board.cflags if f not in arch)}

    def linker_script(memory: MemoryMap, ld_name: str, what: str) -> str:
        return env.get_template("link.ld.j2").render(
            firmware, ld_name=ld_name, ld_what=what, flash_origin=memory.flash_origin,
            flash_length=memory.flash_length, ram_origin=memory.ram_origin,
            ram_length=memory.ram_length,
            stack_reserve=min(HARNESS_STACK_BYTES, memory.ram_length // 8))

    return {
        f"{name}_main.c": env.get_template("main.c.j2").render(firmware, firmware=True),
        f"{name}_size.c": env.get_template("size_main.c.j2").render(firmware),
        "startup.c": env.get_template("startup.c.j2").render(firmware),
        f"{name}.ld": linker_script(board.memory, f"{name}.ld", f"board '{board.name}'"),
        f"{name}_qemu.ld": linker_script(board.qemu_memory, f"{name}_qemu.ld",
                                         f"QEMU's '{board.qemu_machine}' machine"),
        "Makefile": env.get_template("Makefile_cortex_m.j2").render(firmware),
        "CMakeLists.txt": env.get_template("CMakeLists_cortex_m.txt.j2").render(firmware),
        "arm-none-eabi.cmake": env.get_template("arm-none-eabi.cmake.j2").render(firmware),
    }


# Stack room the linker scripts keep free for the test harness (newlib's stdio included).
HARNESS_STACK_BYTES = 8192


def _manifest(program: Program, plan: ArenaPlan, board: Board, weight_bytes: int) -> str:
    def tensor(t: Tensor) -> dict[str, Any]:
        entry: dict[str, Any] = {"name": t.onnx_name, "dtype": t.dtype,
                                 "shape": list(t.shape)}
        if t.quant is not None:
            entry["scale"] = list(t.quant.scale)
            entry["zero_point"] = list(t.quant.zero_point)
            if t.quant.axis is not None:
                entry["axis"] = t.quant.axis
        return entry

    manifest = {
        "generator": f"onnx2mcu {__version__}",
        "name": program.name,
        "board": board.name,
        "requant": program.requant,
        "inputs": [tensor(t) for t in program.inputs],
        "outputs": [tensor(t) for t in program.outputs],
        "arena_bytes": plan.size,
        "arena_lower_bound_bytes": plan.lower_bound,
        "weight_bytes": weight_bytes,
        "kernels": [{"node": c.node, "function": c.function, "macs": c.macs}
                    for c in program.calls],
    }
    return json.dumps(manifest, indent=2) + "\n"
