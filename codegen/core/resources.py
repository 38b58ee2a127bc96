"""Locate templates/, runtime_c/ and boards/: inside an installed wheel they are package
data under codegen/_data/, in a checkout they sit at the repository root."""

from __future__ import annotations

from pathlib import Path

# This file is codegen/core/resources.py: the package is two folders up.
_PACKAGE = Path(__file__).resolve().parent.parent


def data_dir(kind: str) -> Path:
    for candidate in (_PACKAGE / "_data" / kind, _PACKAGE.parent / kind):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"onnx2mcu installation is incomplete: no {kind}/ directory")


def templates_dir() -> Path:
    return data_dir("templates")


def runtime_dir() -> Path:
    return data_dir("runtime_c")


def boards_dir() -> Path:
    return data_dir("boards")
