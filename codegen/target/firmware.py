"""Microcontroller firmware: cross builds with the board kind's GNU toolchain
(arm-none-eabi-gcc with newlib for Cortex-M, riscv64-unknown-elf-gcc with picolibc for
RV32), cached like host builds, and the model's flash and RAM budget measured on them.

Two images come out of one build of a generated project: NAME_qemu.elf, the semihosting
test harness linked for the board's QEMU machine, and NAME_size.elf, the model alone
(one inference on static buffers, no stdio), whose size is what the model costs on the
part. The compiler's call graph (-fcallgraph-info=su) bounds the model's stack.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from codegen.backend.emitter import STRICT_CFLAGS
from codegen.core.boards import CROSS_KINDS, Board
from codegen.errors import BudgetError, ToolchainError

from .build import (
    RUN_TIMEOUT_S,
    cache_key,
    cached_build,
    cached_object,
    compile_in,
    with_plain_link_names,
)

CROSS_PREFIX = "arm-none-eabi-"  # the Cortex-M kind's; a board's is board.cross.prefix
# Stack the call graph cannot see: a library routine at the end of the deepest chain
# (libgcc's soft-float and division helpers, newlib's fmaf/ldexpf are leaf functions
# well under this).
LIBRARY_STACK_BYTES = 64


def cross_tool(tool: str, kind: str = "cortex-m") -> str:
    cross = CROSS_KINDS[kind]
    path = shutil.which(cross.prefix + tool)
    if path is None:
        raise ToolchainError(f"no {cross.prefix}{tool} found: {cross.install_hint}")
    return path


def cross_toolchain_available(kind: str = "cortex-m") -> bool:
    prefix = CROSS_KINDS[kind].prefix
    return all(shutil.which(prefix + t) for t in ("gcc", "size", "nm"))


# ELF e_machine values of the kinds' images: the binutils that read an image follow it.
_ELF_MACHINES = {40: "cortex-m", 243: "riscv"}


def elf_kind(elf: Path) -> str:
    """The cross kind whose binutils read this image (from its ELF header)."""
    with elf.open("rb") as f:
        header = f.read(20)
    if header[:4] != b"\x7fELF" or len(header) < 20:
        raise ToolchainError(f"{elf} is not an ELF image")
    machine = int.from_bytes(header[18:20], "little")
    if machine not in _ELF_MACHINES:
        raise ToolchainError(f"{elf}: no cross toolchain reads ELF machine {machine}")
    return _ELF_MACHINES[machine]


def elf_tool(tool: str, elf: Path) -> str:
    """The binutils program (size, nm, objdump) of the image's kind."""
    return cross_tool(tool, elf_kind(elf))


# The frame sizes and call graph that bound the model's stack (read from the .ci files).
STACK_INFO = ("-fstack-usage", "-fcallgraph-info=su")


@lru_cache(maxsize=4)
def _identity(gcc: str) -> str:
    try:
        result = subprocess.run([gcc, "--version"], capture_output=True, text=True,
                                timeout=60, check=False)
    except OSError as exc:
        raise ToolchainError(f"cannot run {gcc}: {exc}") from None
    return "mcu firmware\n" + gcc + "\n" + result.stdout


def split_flags(board: Board) -> tuple[list[str], list[str]]:
    """The board's architecture flags (-m...) and the rest (optimization)."""
    arch = [f for f in board.cflags if f.startswith("-m")]
    return arch, [f for f in board.cflags if f not in arch]


@dataclass(frozen=True)
class FirmwareBuild:
    folder: Path
    elf: Path  # the semihosting harness, linked for the QEMU machine
    size_elf: Path  # the model alone, linked for the board (not in counting builds)
    cached: bool


def runtime_object(folder: Path, gcc: str, identity: str, flags: Sequence[str], source: str,
                   files: Mapping[str, bytes]) -> str:
    """A runtime source's cached object, its call graph copied into `folder`'s build: the
    stack bound reads every object's call graph from there."""
    obj = cached_object(gcc, identity, [*flags, *STACK_INFO], source, files)
    graph = folder / "build" / "runtime" / obj.with_suffix(".ci").name
    graph.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(obj.with_suffix(".ci"), graph)
    return str(obj)


def build_firmware(files: Mapping[str, bytes], name: str, board: Board, *,
                   layer_marks: bool = False, cflags: Sequence[str] = (),
                   harness: bool = True, size: bool = True) -> FirmwareBuild:
    """Cross-compile the generated project (cached): the QEMU harness and/or the size
    build. A counting build (layer marks) has no size build."""
    files = with_plain_link_names(files)
    size = size and not layer_marks
    cross = board.cross
    gcc = cross_tool("gcc", board.kind)
    arch, opt = split_flags(board)
    compile_flags = [*arch, *cross.libc_flags, *STRICT_CFLAGS, "-ffunction-sections",
                     "-fdata-sections", *opt, *cflags,
                     *(["-DQ8_LAYER_MARKS"] if layer_marks else [])]
    link_flags = [*arch, *cross.libc_flags, "-nostartfiles", "-Wl,--gc-sections"]
    runtime = sorted(r for r in files if r.startswith("runtime/") and r.endswith(".c"))
    identity = _identity(gcc)

    def compile_c(folder: Path, source: str, target: str, extra: Sequence[str] = ()) -> str:
        obj = f"build/{target}.o"
        (folder / obj).parent.mkdir(parents=True, exist_ok=True)
        compile_in(folder, [gcc, *compile_flags, *extra, "-I.", "-Iruntime",
                            *STACK_INFO, "-c", "-o", obj, source],
                   cross.prefix + "gcc")
        return obj

    def runtime_c(folder: Path, source: str) -> str:
        return runtime_object(folder, gcc, identity, compile_flags, source, files)

    def build(folder: Path) -> None:
        objects = [compile_c(folder, f"{name}.c", name),
                   *(runtime_c(folder, src) for src in runtime)]
        if harness:
            main = [compile_c(folder, f"{name}_main.c", f"{name}_main"),
                    compile_c(folder, "startup.c", "startup")]
            compile_in(folder, [gcc, *link_flags, *cross.semihosting_libs,
                                "-T", f"{name}_qemu.ld", "-o",
                                f"build/{name}_qemu.elf", *main, *objects, "-lm"],
                       "linking the QEMU firmware")
        if not size:
            return
        bare = ["-DQ8_NO_SEMIHOSTING"]
        sizing = [compile_c(folder, f"{name}_size.c", f"{name}_size", bare),
                  compile_c(folder, "startup.c", "startup_bare", bare)]
        # Linked at the board's addresses with room for any size, so that it links
        # whatever the model needs; the budget check compares that with the board.
        script = (folder / f"{name}.ld").read_text()
        (folder / "build" / "size.ld").write_text(
            re.sub(r"LENGTH = \d+", "LENGTH = 0x10000000", script))
        compile_in(folder, [gcc, *link_flags, *cross.bare_libs, "-T", "build/size.ld",
                            "-o", f"build/{name}_size.elf", *sizing, *objects, "-lm"],
                   "linking the size build")

    key = cache_key(_identity(gcc) + f"harness={harness} size={size}",
                    [*compile_flags, *link_flags], files)
    product = f"build/{name}_size.elf" if size else f"build/{name}_qemu.elf"
    folder, cached = cached_build(key, files, product, build)
    return FirmwareBuild(folder, folder / "build" / f"{name}_qemu.elf",
                         folder / "build" / f"{name}_size.elf", cached)


# ---------------------------------------------------------------- several models


@dataclass(frozen=True)
class SizeProject:
    """One model of a firmware measured with others: its project's files (its runtime
    included) and the function the application calls."""

    name: str
    files: Mapping[str, bytes]
    entry: str  # NAME_run, or NAME_invoke with quantized I/O


def combined_size_main(count: int) -> str:
    """The application of the combined size build: every model once, one after the
    other, as a firmware runs them (model i's NAME_size.c with its main renamed
    q8_size_main_i: the reserved q8_ prefix, so no model's symbol can clash)."""
    lines = ["/* Every model's size build once, one after the other: onnx2mcu report A B. */"]
    lines += [f"int q8_size_main_{i}(void);" for i in range(count)]
    lines += ["", "int main(void)", "{", "    int status = 0;"]
    lines += [f"    status |= q8_size_main_{i}();" for i in range(count)]
    lines += ["    return status;", "}", ""]
    return "\n".join(lines)


def combined_files(projects: Sequence[SizeProject]) -> dict[str, bytes]:
    """One folder with each model's sources in a folder of its own (mI/: whatever the
    models are named, no file takes another's place) beside one runtime/ under the plain
    link names, so that the kernels the models share are compiled and linked once, as in
    a firmware on a shared runtime (`onnx2mcu runtime`)."""
    out: dict[str, bytes] = {}
    for i, project in enumerate(projects):
        for rel, data in with_plain_link_names(project.files).items():
            if rel.startswith("runtime/"):
                if out.setdefault(rel, data) != data:
                    raise ToolchainError(f"the models' runtimes differ in {rel}: generate "
                                         "them with one onnx2mcu")
            elif rel in (f"{project.name}.c", f"{project.name}.h", f"{project.name}_size.c"):
                out[f"m{i}/{rel}"] = data
    first = projects[0]
    out["q8_startup.c"] = first.files["startup.c"]
    out["q8_combined.ld"] = first.files[f"{first.name}.ld"]
    out["q8_combined_main.c"] = combined_size_main(len(projects)).encode()
    return out


def build_combined_size(projects: Sequence[SizeProject], board: Board) -> FirmwareBuild:
    """The size build of several models in one image (cached): their sources, the
    kernels they call once, one startup, linked for the board like one model's."""
    files = combined_files(projects)
    cross = board.cross
    gcc = cross_tool("gcc", board.kind)
    arch, opt = split_flags(board)
    compile_flags = [*arch, *cross.libc_flags, *STRICT_CFLAGS, "-ffunction-sections",
                     "-fdata-sections", *opt, "-DQ8_NO_SEMIHOSTING"]
    link_flags = [*arch, *cross.libc_flags, "-nostartfiles", "-Wl,--gc-sections",
                  *cross.bare_libs]
    runtime = sorted(r for r in files if r.startswith("runtime/") and r.endswith(".c"))
    identity = _identity(gcc)

    def compile_c(folder: Path, source: str, obj: str, extra: Sequence[str] = ()) -> str:
        compile_in(folder, [gcc, *compile_flags, *extra, "-I.", "-Iruntime", *STACK_INFO,
                            "-c", "-o", obj, source], cross.prefix + "gcc")
        return obj

    def runtime_c(folder: Path, source: str) -> str:
        return runtime_object(folder, gcc, identity, compile_flags, source, files)

    def build(folder: Path) -> None:
        objects = [compile_c(folder, "q8_combined_main.c", "build/q8_combined_main.o"),
                   compile_c(folder, "q8_startup.c", "build/q8_startup.o")]
        for i, project in enumerate(projects):
            (folder / "build" / f"m{i}").mkdir(parents=True, exist_ok=True)
            own = [f"-Im{i}"]
            objects.append(compile_c(folder, f"m{i}/{project.name}.c",
                                     f"build/m{i}/{project.name}.o", own))
            objects.append(compile_c(folder, f"m{i}/{project.name}_size.c",
                                     f"build/m{i}/size_main.o",
                                     [*own, f"-Dmain=q8_size_main_{i}"]))
        objects += [runtime_c(folder, src) for src in runtime]
        script = (folder / "q8_combined.ld").read_text()
        (folder / "build" / "size.ld").write_text(
            re.sub(r"LENGTH = \d+", "LENGTH = 0x10000000", script))
        compile_in(folder, [gcc, *link_flags, "-T", "build/size.ld", "-o",
                            "build/q8_combined.elf", *objects, "-lm"],
                   "linking the combined size build")

    key = cache_key(identity + "combined size", [*compile_flags, *link_flags], files)
    folder, cached = cached_build(key, files, "build/q8_combined.elf", build)
    elf = folder / "build" / "q8_combined.elf"
    return FirmwareBuild(folder, elf, elf, cached)


def measure_combined(build: FirmwareBuild, projects: Sequence[SizeProject],
                     arenas: Sequence[int], io_bytes: int, shared_arena: bool) -> Budget:
    """Flash and RAM of the combined size build. The models run one after the other, so
    the stack is the deepest of theirs; with shared_arena the arenas are overlaid in one
    buffer of the largest's size (the build's static RAM less every arena plus the
    largest: what one caller-owned arena given to every model takes)."""
    text, data, bss = section_sizes(build.size_elf)
    frames, calls = call_graph(build.folder)
    stack = max(worst_stack(p.entry, frames, calls) for p in projects)
    arena = max(arenas) if shared_arena else sum(arenas)
    static = data + bss - (sum(arenas) - arena)
    return Budget(flash_bytes=text + data, static_ram_bytes=static, stack_bytes=stack,
                  arena_bytes=arena, io_bytes=io_bytes)


# ---------------------------------------------------------------- budget


@dataclass(frozen=True)
class Budget:
    """What the model costs on the part, measured on the size build."""

    flash_bytes: int  # code, weights, tables, library routines, startup
    static_ram_bytes: int  # .data + .bss: the arena, the I/O buffers, statics
    stack_bytes: int  # deepest call chain of NAME_run
    arena_bytes: int
    io_bytes: int

    @property
    def ram_bytes(self) -> int:
        return self.static_ram_bytes + self.stack_bytes


def section_sizes(elf: Path) -> tuple[int, int, int]:
    """text, data, bss of an ELF (Berkeley format of arm-none-eabi-size)."""
    result = subprocess.run([elf_tool("size", elf), str(elf)], capture_output=True,
                            text=True, timeout=RUN_TIMEOUT_S, check=False)
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or len(lines) < 2:
        raise ToolchainError(f"size failed on {elf}: {result.stderr.strip()}")
    text, data, bss = (int(v) for v in lines[1].split()[:3])
    return text, data, bss


_NODE = re.compile(r'node: \{ title: "([^"]+)" label: "[^"]*?\\n[^"]*?(?:\\n(\d+) bytes '
                   r'\(([a-z,]+)\))?"')
_EDGE = re.compile(r'edge: \{ sourcename: "([^"]+)" targetname: "([^"]+)"')


# Functions written whole in assembly (naked): the compiler reports no frame for them, so
# their frames are given here, by the name's ending (q8_im2col_rv.h: s0-s11 saved).
NAKED_FRAMES = {"q8_rv_dot_4x4_u8": 48, "q8_rv_dot_4x4_s8": 48}


def call_graph(folder: Path) -> tuple[dict[str, int], dict[str, set[str]]]:
    """Frame sizes and callees of every function the size build compiled (.ci files)."""
    frames: dict[str, int] = {}
    calls: dict[str, set[str]] = {}
    for ci in sorted((folder / "build").rglob("*.ci")):
        text = ci.read_text(errors="replace")
        for match in _NODE.finditer(text):
            function, size, kind = match.groups()
            if size is not None:
                if kind is not None and "dynamic" in kind and "bounded" not in kind:
                    raise ToolchainError(f"{function} has a dynamic stack frame")
                naked = next((b for n, b in NAKED_FRAMES.items() if function.endswith(n)), 0)
                frames[function] = max(frames.get(function, 0), int(size), naked)
        for source, target in _EDGE.findall(text):
            calls.setdefault(source, set()).add(target)
    return frames, calls


def worst_stack(root: str, frames: Mapping[str, int], calls: Mapping[str, set[str]]) -> int:
    """The deepest stack below `root`: its frame plus the deepest callee's, where a
    function the compiler did not see (a library routine) counts LIBRARY_STACK_BYTES."""
    memo: dict[str, int] = {}
    order: list[tuple[str, bool]] = [(root, False)]
    on_path: set[str] = set()
    while order:  # iterative depth-first search, so deep graphs do not recurse here
        function, done = order.pop()
        if done:
            on_path.discard(function)
            below = max((memo[c] for c in calls.get(function, ())), default=0)
            memo[function] = frames.get(function, LIBRARY_STACK_BYTES) + below
            continue
        if function in memo:
            continue
        if function in on_path:
            raise ToolchainError(f"{function} is recursive: no static stack bound")
        on_path.add(function)
        order.append((function, True))
        order.extend((c, False) for c in calls.get(function, ()) if c not in memo)
    return memo[root]


def measure_budget(build: FirmwareBuild, entry: str, arena_bytes: int,
                   io_bytes: int) -> Budget:
    """Flash, static RAM and the stack below the entry point the caller runs."""
    text, data, bss = section_sizes(build.size_elf)
    frames, calls = call_graph(build.folder)
    return Budget(flash_bytes=text + data, static_ram_bytes=data + bss,
                  stack_bytes=worst_stack(entry, frames, calls),
                  arena_bytes=arena_bytes, io_bytes=io_bytes)


def harness_ram_bytes(build: FirmwareBuild, stack_reserve: int) -> int:
    """The RAM the semihosting test harness (`make` of a generated project) takes at the
    board's addresses: its .data and .bss (the model, the harness's buffers, newlib's
    stdio and semihosting state) and the stack its linker script keeps free."""
    _, data, bss = section_sizes(build.elf)
    return data + bss + stack_reserve


def kib(n: int) -> str:
    return f"{n / 1024:.1f} KB"


@dataclass(frozen=True)
class Reserve:
    """Flash and RAM the rest of the firmware takes (--reserve-flash, --reserve-ram)."""

    flash: int = 0
    ram: int = 0


NO_RESERVE = Reserve()


def _reserved(n: int) -> str:
    return f" less {kib(n)} reserved for the rest of the firmware" if n else ""


def check_budget(budget: Budget, board: Board, name: str,
                 reserve: Reserve = NO_RESERVE) -> None:
    """Refuse a model that does not fit the board (less the reserves), with the numbers."""
    assert board.memory is not None
    ram_limit = board.memory.ram_length - reserve.ram
    flash_limit = board.memory.flash_length - reserve.flash
    problems = []
    if budget.ram_bytes > ram_limit:
        other = budget.static_ram_bytes - budget.arena_bytes - budget.io_bytes
        problems.append(
            f"needs {kib(budget.ram_bytes)} RAM (arena {kib(budget.arena_bytes)}, inputs and "
            f"outputs {kib(budget.io_bytes)}, stack {kib(budget.stack_bytes)}, other "
            f"{kib(other)}), board has {kib(board.memory.ram_length)}{_reserved(reserve.ram)}")
    if budget.flash_bytes > flash_limit:
        problems.append(f"needs {kib(budget.flash_bytes)} flash, board has "
                        f"{kib(board.memory.flash_length)}{_reserved(reserve.flash)}")
    if problems:
        raise BudgetError(f"model '{name}' does not fit board '{board.name}': "
                          f"{'; '.join(problems)}; pass --no-budget-check to generate it "
                          "anyway")


def format_budget(budget: Budget, board: Board, reserve: Reserve = NO_RESERVE) -> str:
    assert board.memory is not None
    flash_left = board.memory.flash_length - reserve.flash
    ram_left = board.memory.ram_length - reserve.ram
    flash_of = f"{flash_left} bytes left of {board.memory.flash_length}" if reserve.flash \
        else f"{flash_left} bytes"
    ram_of = f"{ram_left} bytes left of {board.memory.ram_length}" if reserve.ram \
        else f"{ram_left} bytes"
    return (f"flash {budget.flash_bytes} of {flash_of}; RAM "
            f"{budget.ram_bytes} of {ram_of} (arena "
            f"{budget.arena_bytes}, inputs/outputs {budget.io_bytes}, stack "
            f"{budget.stack_bytes}, other "
            f"{budget.static_ram_bytes - budget.arena_bytes - budget.io_bytes})")


# ---------------------------------------------------------------- soft float

# libgcc's and newlib's float routines: what a core without an FPU runs for float code.
SOFT_FLOAT_ROUTINE = re.compile(
    r"^(__aeabi_(f|d|[iu]l?2[fd]|l2[fd]|[fd]2)|__(add|sub|mul|div|neg|cmp|eq|ne|lt|le|gt|ge|"
    r"unord|extend|trunc|fix|float)\w*[sd]f\d?$|fmaf?$|ldexpf?$|scalbnf?$|rintf?$|floorf?$|"
    r"expf?$|logf?$)")
_FUNCTION = re.compile(r"^[0-9a-f]+ <([^>]+)>:$")
# Arm's bl/b and RISC-V's jal/j (jal ra,ADDR <f>), call and tail.
_CALL = re.compile(r"\s(?:bl|blx|b|b\.w|b\.n|jal|j|call|tail)\s+(?:[a-z0-9]+,)?[0-9a-f]+ "
                   r"<([^>+]+)(?:\+0x[0-9a-f]+)?>")


def disassembly_calls(elf: Path) -> dict[str, set[str]]:
    """Who calls (or tail-calls) whom in the image, from the cross objdump -d."""
    result = subprocess.run([elf_tool("objdump", elf), "-d", "--no-show-raw-insn", str(elf)],
                            capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False)
    if result.returncode != 0:
        raise ToolchainError(f"objdump failed: {result.stderr.strip()}")
    calls: dict[str, set[str]] = {}
    current = ""
    for line in result.stdout.splitlines():
        header = _FUNCTION.match(line)
        if header:
            current = header.group(1)
            calls.setdefault(current, set())
            continue
        call = _CALL.search(line)
        if call and current and call.group(1) != current:
            calls[current].add(call.group(1))
    return calls


def soft_float_routines(elf: Path, functions: Sequence[str]) -> dict[str, list[str]]:
    """For each function, the soft-float routines it reaches through its calls, read
    from the disassembly of the linked image (empty lists: integer only)."""
    calls = disassembly_calls(elf)
    found: dict[str, list[str]] = {}
    for root in functions:
        seen: set[str] = set()
        todo = [root]
        while todo:
            for callee in calls.get(todo.pop(), ()):
                if callee not in seen:
                    seen.add(callee)
                    todo.append(callee)
        found[root] = sorted(f for f in seen if SOFT_FLOAT_ROUTINE.match(f))
    return found
