"""Board definitions: one TOML file per target in boards/."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass

from .errors import UnsupportedError
from .resources import boards_dir


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


def _parse_board(name: str, data: dict[str, object]) -> Board:
    def text(key: str, default: str = "") -> str:
        value = data.get(key, default)
        return str(value)

    ram = data.get("ram_bytes")
    flash = data.get("flash_bytes")
    cflags = data.get("cflags", [])
    return Board(
        name=name,
        description=text("description"),
        kind=text("kind", "host"),
        cpu=text("cpu", "host"),
        cflags=tuple(str(f) for f in cflags) if isinstance(cflags, list) else (),
        requant=text("requant", "float"),
        ram_bytes=int(ram) if isinstance(ram, int) else None,
        flash_bytes=int(flash) if isinstance(flash, int) else None,
    )


def list_boards() -> list[Board]:
    return [load_board(p.stem) for p in sorted(boards_dir().glob("*.toml"))]


def load_board(name: str) -> Board:
    path = boards_dir() / f"{name}.toml"
    if not name.replace("-", "").replace("_", "").isalnum() or not path.is_file():
        known = ", ".join(p.stem for p in sorted(boards_dir().glob("*.toml")))
        raise UnsupportedError(f"unknown board '{name}'; known boards: {known}")
    with path.open("rb") as f:
        return _parse_board(name, tomllib.load(f))
