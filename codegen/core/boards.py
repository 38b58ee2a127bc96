"""Board definitions: one TOML file per target in boards/, or a board file of the user's
(--board PATH.toml, same schema), checked field by field."""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from codegen.errors import OptionError

from .resources import boards_dir


@dataclass(frozen=True)
class MemoryMap:
    """Where flash and RAM sit, for a linker script."""

    flash_origin: int
    flash_length: int
    ram_origin: int
    ram_length: int
    # Where the core reads its vector table at reset, when that is not in flash (the
    # Corstone-300's Cortex-M55 boots from its ITCM): the linker puts the table alone there.
    vector_origin: int | None = None


@dataclass(frozen=True)
class FlashTiming:
    """The part's flash at its clock, for the cycle model's board figure: each access
    that misses the flash's caches (instruction fetches, and data reads of weights and
    tables) stalls `wait_states` cycles. Caches of `icache_lines` and `dcache_lines`
    lines of `line_bytes`, least recently used out (0 lines: no cache)."""

    wait_states: int
    line_bytes: int
    icache_lines: int = 0
    dcache_lines: int = 0

    def describe(self) -> str:
        caches = ", ".join(f"{n} {what} lines" for n, what in (
            (self.icache_lines, "instruction"), (self.dcache_lines, "data")) if n) \
            or "no cache"
        return (f"flash {self.wait_states} wait states, {caches} of {self.line_bytes} bytes; "
                "each miss stalls the wait states")


@dataclass(frozen=True)
class Board:
    name: str
    description: str
    kind: str  # "host", "cortex-m" or "riscv"
    cpu: str
    cflags: tuple[str, ...]
    requant: str  # default requantization mode: "float" on FPU cores, "int" without
    ram_bytes: int | None = None
    flash_bytes: int | None = None
    fpu: bool = False
    dsp: bool = False
    memory: MemoryMap | None = None  # the firmware's linker script
    qemu_machine: str = ""
    qemu_memory: MemoryMap | None = None  # where the QEMU machine has flash and RAM
    clock_hz: int | None = None  # the core clock the report converts counts to time at
    flash_timing: FlashTiming | None = None  # None: zero wait states

    @property
    def is_cortex_m(self) -> bool:
        return self.kind == "cortex-m"

    @property
    def is_mcu(self) -> bool:
        """A microcontroller: cross-compiled firmware run in QEMU, with a memory budget."""
        return self.kind in CROSS_KINDS

    @property
    def cross(self) -> CrossKind:
        """The toolchain, C library and emulator of the board's kind (an MCU board)."""
        return CROSS_KINDS[self.kind]

    @property
    def has_mve(self) -> bool:
        """A core with Helium (the M-profile Vector Extension): its own int8 kernels."""
        return self.kind == "cortex-m" and self.cpu in MVE_CORES

    @property
    def is_thumb1(self) -> bool:
        """An ARMv6-M or ARMv8-M Baseline core: Thumb-1 with its few 32-bit instructions."""
        return self.cpu in THUMB1_CORES



@dataclass(frozen=True)
class CrossKind:
    """What builds and runs a kind of microcontroller: the GNU toolchain's prefix, the C
    library's flags (picolibc comes in through its specs file, headers included), the
    link flags of the semihosting test harness and of the bare size build, QEMU, and the
    Debian packages that hold them."""

    kind: str
    prefix: str  # arm-none-eabi-
    libc_flags: tuple[str, ...]  # compile and link
    semihosting_libs: tuple[str, ...]  # link, the test harness
    bare_libs: tuple[str, ...]  # link, the size build
    qemu: str  # qemu-system-arm
    qemu_flags: tuple[str, ...]  # before -kernel, after -M MACHINE
    packages: tuple[str, ...]  # Debian's
    cmake_processor: str  # CMAKE_SYSTEM_PROCESSOR

    @property
    def install_hint(self) -> str:
        return f"install it: apt-get install --no-install-recommends {' '.join(self.packages)}"


CROSS_KINDS = {
    "cortex-m": CrossKind(
        "cortex-m", "arm-none-eabi-", (), ("--specs=nano.specs", "--specs=rdimon.specs"),
        ("--specs=nano.specs",), "qemu-system-arm", (),
        ("gcc-arm-none-eabi", "libnewlib-arm-none-eabi", "qemu-system-arm"), "arm"),
    # picolibc's RV32 multilibs; its semihosting library (open, read, write, exit) under
    # QEMU's virt machine, which starts the image at its entry with -bios none.
    "riscv": CrossKind(
        "riscv", "riscv64-unknown-elf-", ("--specs=picolibc.specs",), ("--oslib=semihost",),
        (), "qemu-system-riscv32", ("-bios", "none"),
        ("gcc-riscv64-unknown-elf", "picolibc-riscv64-unknown-elf", "qemu-system-misc"),
        "riscv32"),
}
KINDS = ("host", *CROSS_KINDS)
REQUANT = ("float", "int")
# Cores arm-none-eabi-gcc targets that the runtime supports, and which have the DSP
# extension (SMLAD and friends) the fast kernels may use.
CORTEX_M_CORES = ("cortex-m0", "cortex-m0plus", "cortex-m1", "cortex-m3", "cortex-m4",
                  "cortex-m7", "cortex-m23", "cortex-m33", "cortex-m35p", "cortex-m55",
                  "cortex-m85")
DSP_CORES = ("cortex-m4", "cortex-m7", "cortex-m33", "cortex-m35p", "cortex-m55",
             "cortex-m85")
# Armv8.1-M cores with Helium; arm-none-eabi-gcc's -mcpu enables it (with -mfpu=auto).
MVE_CORES = ("cortex-m55", "cortex-m85")
THUMB1_CORES = ("cortex-m0", "cortex-m0plus", "cortex-m1", "cortex-m23")
# RV32 base ISAs with the M extension: the cores of ESP32-C3/C6, GD32VF103, CH32V3, BL602.
# No F: the runtime requantizes with integers there (requant = "int").
RISCV_CORE = re.compile(r"^rv32ima?c?$")
MEMORY_KEYS = ("flash_origin", "flash_length", "ram_origin", "ram_length")
OPTIONAL_MEMORY_KEYS = ("vector_origin",)
TOP_LEVEL_KEYS = ("description", "kind", "cpu", "cflags", "requant", "ram_bytes",
                  "flash_bytes", "fpu", "dsp", "clock_hz", "memory", "qemu", "flash_timing")
FLASH_TIMING_KEYS = ("wait_states", "line_bytes", "icache_lines", "dcache_lines")
MAX_CACHE_LINES = 256  # what the counting plugin models (qemu/insncount.c)
_MACHINE = re.compile(r"^[a-z0-9][a-z0-9.-]{0,63}$")
_CFLAG = re.compile(r"^-[A-Za-z0-9_=.,+-]{1,127}$")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def board_problems(data: dict[str, object]) -> list[str]:
    """Everything wrong with a board file's fields, each naming its field."""
    problems = [f"unknown field '{k}' (known: {', '.join(TOP_LEVEL_KEYS)})"
                for k in data if k not in TOP_LEVEL_KEYS]

    def need(key: str, ok: bool, what: str) -> None:
        if key in data and not ok:
            problems.append(f"field '{key}' must be {what} (got {data[key]!r})")

    need("description", isinstance(data.get("description"), str), "a string")
    need("kind", data.get("kind") in KINDS, " or ".join(f"'{k}'" for k in KINDS))
    need("requant", data.get("requant") in REQUANT, "'float' or 'int'")
    for key in ("fpu", "dsp"):
        need(key, isinstance(data.get(key), bool), "true or false")
    for key in ("ram_bytes", "flash_bytes", "clock_hz"):
        value = data.get(key)
        need(key, _is_int(value) and 0 < int(value) < 1 << 40,  # type: ignore[call-overload]
             "a positive integer")
    flags = data.get("cflags")
    need("cflags", isinstance(flags, list) and all(
        isinstance(f, str) and _CFLAG.match(f) for f in flags),
        "a list of compiler flags such as \"-O2\"")
    kind = data.get("kind", "host")
    cpu = data.get("cpu", "host")
    if kind == "cortex-m":
        if cpu not in CORTEX_M_CORES:
            problems.append(f"field 'cpu' must name a Cortex-M core ({', '.join(CORTEX_M_CORES)})"
                            f" (got {cpu!r})")
        elif data.get("dsp") is True and cpu not in DSP_CORES:
            problems.append(f"field 'dsp': {cpu} has no DSP extension")
    elif kind == "riscv":
        if not isinstance(cpu, str) or not RISCV_CORE.match(cpu):
            problems.append(f"field 'cpu' must name an RV32IM core (rv32im, rv32imc, rv32imac) "
                            f"(got {cpu!r})")
        for key in ("fpu", "dsp"):
            if data.get(key) is True:
                problems.append(f"field '{key}': the RISC-V boards are integer cores "
                                "(rv32im[a][c]); set it to false")
        if data.get("requant") == "float":
            problems.append("field 'requant': an RV32IM core has no FPU; use 'int'")
        given = [f for f in flags if isinstance(f, str)] if isinstance(flags, list) else []
        march = [f for f in given if f.startswith("-march=")]
        if isinstance(cpu, str) and (not march or march[-1] != f"-march={cpu}"):
            problems.append(f"field 'cflags' must select the board's cpu with -march={cpu}")
        if "-mabi=ilp32" not in given:
            problems.append("field 'cflags' must hold -mabi=ilp32 (the RV32 multilibs')")
    if kind in CROSS_KINDS:
        for table in ("memory", "qemu"):
            if table not in data:
                problems.append(f"a {kind} board needs a [{table}] table")
    for table in ("memory", "qemu"):
        problems += _memory_problems(table, data.get(table))
    return problems + _flash_timing_problems(data.get("flash_timing"))


def _flash_timing_problems(data: object) -> list[str]:
    if data is None:
        return []
    if not isinstance(data, dict):
        return ["'flash_timing' must be a table"]
    problems = [f"unknown field 'flash_timing.{k}' (known: {', '.join(FLASH_TIMING_KEYS)})"
                for k in data if k not in FLASH_TIMING_KEYS]
    limits = {"wait_states": (0, 32), "line_bytes": (4, 256),
              "icache_lines": (0, MAX_CACHE_LINES), "dcache_lines": (0, MAX_CACHE_LINES)}
    for key, (low, high) in limits.items():
        value = data.get(key, 0 if key.endswith("lines") else None)
        number = value if isinstance(value, int) and not isinstance(value, bool) else None
        if number is None or not low <= number <= high:
            problems.append(f"field 'flash_timing.{key}' must be an integer from {low} to "
                            f"{high} (got {value!r})")
        elif key == "line_bytes" and number & (number - 1):
            problems.append(f"field 'flash_timing.line_bytes' must be a power of two (got "
                            f"{value!r})")
    return problems


def _flash_timing(data: object) -> FlashTiming | None:
    if not isinstance(data, dict) or not data:
        return None
    return FlashTiming(int(data["wait_states"]), int(data["line_bytes"]),
                       int(data.get("icache_lines", 0)), int(data.get("dcache_lines", 0)))


def _memory_problems(table: str, data: object) -> list[str]:
    if data is None:
        return []
    if not isinstance(data, dict):
        return [f"'{table}' must be a table"]
    allowed = (*MEMORY_KEYS, *OPTIONAL_MEMORY_KEYS, *(("machine",) if table == "qemu" else ()))
    problems = [f"unknown field '{table}.{k}' (known: {', '.join(allowed)})"
                for k in data if k not in allowed]
    for key in (*MEMORY_KEYS, *OPTIONAL_MEMORY_KEYS):
        value = data.get(key)
        if value is None:
            if key in MEMORY_KEYS:
                problems.append(f"field '{table}.{key}' is missing")
        elif not _is_int(value) or not 0 <= int(value) < 1 << 32 or (
                key.endswith("length") and int(value) == 0):
            problems.append(f"field '{table}.{key}' must be a "
                            f"{'positive' if key.endswith('length') else 'non-negative'} "
                            f"32-bit integer (got {value!r})")
    if table == "qemu":
        machine = data.get("machine")
        if not isinstance(machine, str) or not _MACHINE.match(machine):
            problems.append(f"field 'qemu.machine' must name a QEMU machine such as "
                            f"\"mps2-an386\" (got {machine!r})")
    return problems


def _memory(data: object) -> MemoryMap | None:
    if not isinstance(data, dict) or not data:
        return None
    vectors = data.get("vector_origin")
    flash_origin, flash_length, ram_origin, ram_length = (int(data[k]) for k in MEMORY_KEYS)
    return MemoryMap(flash_origin, flash_length, ram_origin, ram_length,
                     vector_origin=int(vectors) if vectors is not None else None)


def _parse_board(name: str, data: dict[str, object]) -> Board:
    """A Board from a board file's data, checked first (board_problems)."""
    problems = board_problems(data)
    if problems:
        raise OptionError(f"board '{name}': " + "; ".join(problems))
    cflags = data.get("cflags", [])
    qemu = data.get("qemu", {})
    clock = data.get("clock_hz")
    ram = data.get("ram_bytes")
    flash = data.get("flash_bytes")
    return Board(
        name=name,
        description=str(data.get("description", "")),
        kind=str(data.get("kind", "host")),
        cpu=str(data.get("cpu", "host")),
        cflags=tuple(str(f) for f in cflags) if isinstance(cflags, list) else (),
        requant=str(data.get("requant", "int" if data.get("kind") == "riscv" else "float")),
        ram_bytes=ram if isinstance(ram, int) else None,
        flash_bytes=flash if isinstance(flash, int) else None,
        fpu=bool(data.get("fpu", False)),
        dsp=bool(data.get("dsp", False)),
        memory=_memory(data.get("memory")),
        qemu_machine=str(qemu.get("machine", "")) if isinstance(qemu, dict) else "",
        qemu_memory=_memory(qemu),
        clock_hz=clock if isinstance(clock, int) else None,
        flash_timing=_flash_timing(data.get("flash_timing")),
    )


def list_boards() -> list[Board]:
    return [load_board(p.stem) for p in sorted(boards_dir().glob("*.toml"))]


def is_board_file(board: str) -> bool:
    """--board names a file (PATH.toml, or any path) rather than a shipped board."""
    return board.endswith(".toml") or "/" in board or os.sep in board


def load_board(name: str) -> Board:
    """A shipped board by name, or the board file at a path (PATH.toml)."""
    if is_board_file(name):
        return load_board_file(Path(name))
    path = boards_dir() / f"{name}.toml"
    if not name.replace("-", "").replace("_", "").isalnum() or not path.is_file():
        known = ", ".join(p.stem for p in sorted(boards_dir().glob("*.toml")))
        raise OptionError(f"unknown board '{name}'; known boards: {known} (or give a board "
                          "file: --board PATH.toml)")
    return load_board_file(path)


# A board file is a few hundred bytes; anything far larger is not one.
MAX_BOARD_FILE_BYTES = 1 << 20


def load_board_file(path: Path) -> Board:
    if path.exists() and not path.is_file():
        raise OptionError(f"board file {path} is not a regular file")
    try:
        with path.open("rb") as f:
            text = f.read(MAX_BOARD_FILE_BYTES + 1)
    except FileNotFoundError:
        raise OptionError(f"board file {path} does not exist") from None
    except OSError as error:
        raise OptionError(f"board file {path} cannot be read: {error.strerror}") from None
    if len(text) > MAX_BOARD_FILE_BYTES:
        raise OptionError(f"board file {path} is over {MAX_BOARD_FILE_BYTES} bytes; a board "
                          "file is a short TOML table")
    try:
        data = tomllib.loads(text.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise OptionError(f"board file {path} is not valid TOML: {error}") from None
    except RecursionError:  # arrays or inline tables nested thousands deep
        raise OptionError(f"board file {path} nests its values too deeply") from None
    name = path.stem
    if not re.match(r"^[A-Za-z0-9_.-]{1,64}$", name):
        raise OptionError(f"board file {path}: its name (the file's stem) must be letters, "
                          "digits, '_', '.' or '-'")
    return _parse_board(name, data)
