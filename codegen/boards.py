"""Board definitions: one TOML file per target in boards/."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass

from .errors import OptionError, UnsupportedError
from .resources import boards_dir


@dataclass(frozen=True)
class MemoryMap:
    """Where flash and RAM sit, for a linker script."""

    flash_origin: int
    flash_length: int
    ram_origin: int
    ram_length: int


@dataclass(frozen=True)
class Board:
    name: str
    description: str
    kind: str  # "host" or "cortex-m"
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

    @property
    def is_cortex_m(self) -> bool:
        return self.kind == "cortex-m"

def _memory(name: str, data: object) -> MemoryMap | None:
    if not isinstance(data, dict) or not data:
        return None
    try:
        return MemoryMap(*(int(data[k]) for k in ("flash_origin", "flash_length",
                                                  "ram_origin", "ram_length")))
    except (KeyError, TypeError, ValueError):
        raise UnsupportedError(f"board '{name}': its memory map needs flash_origin, "
                               "flash_length, ram_origin and ram_length") from None


def _parse_board(name: str, data: dict[str, object]) -> Board:
    def text(key: str, default: str = "") -> str:
        value = data.get(key, default)
        return str(value)

    ram = data.get("ram_bytes")
    flash = data.get("flash_bytes")
    cflags = data.get("cflags", [])
    qemu = data.get("qemu", {})
    board = Board(
        name=name,
        description=text("description"),
        kind=text("kind", "host"),
        cpu=text("cpu", "host"),
        cflags=tuple(str(f) for f in cflags) if isinstance(cflags, list) else (),
        requant=text("requant", "float"),
        ram_bytes=int(ram) if isinstance(ram, int) else None,
        flash_bytes=int(flash) if isinstance(flash, int) else None,
        fpu=bool(data.get("fpu", False)),
        dsp=bool(data.get("dsp", False)),
        memory=_memory(name, data.get("memory")),
        qemu_machine=str(qemu.get("machine", "")) if isinstance(qemu, dict) else "",
        qemu_memory=_memory(name, qemu),
    )
    if board.is_cortex_m and (board.memory is None or board.qemu_memory is None
                              or not board.qemu_machine):
        raise UnsupportedError(f"board '{name}': a Cortex-M board needs [memory] and [qemu]")
    return board


def list_boards() -> list[Board]:
    return [load_board(p.stem) for p in sorted(boards_dir().glob("*.toml"))]


def load_board(name: str) -> Board:
    path = boards_dir() / f"{name}.toml"
    if not name.replace("-", "").replace("_", "").isalnum() or not path.is_file():
        known = ", ".join(p.stem for p in sorted(boards_dir().glob("*.toml")))
        raise OptionError(f"unknown board '{name}'; known boards: {known}")
    with path.open("rb") as f:
        return _parse_board(name, tomllib.load(f))
