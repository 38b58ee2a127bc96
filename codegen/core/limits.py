"""Resource limits, checked from declared sizes before anything is allocated: a hostile
or broken model must be refused with numbers, not run the generator out of memory."""

from __future__ import annotations

import re
from dataclasses import dataclass

from codegen.errors import LimitError, ShapeError, UnsupportedError

KB, MB, GB = 2**10, 2**20, 2**30


@dataclass(frozen=True)
class Limits:
    # One tensor: a weight, a graph input or output, an intermediate activation.
    max_tensor_bytes: int = 256 * MB
    # The planned activation arena (the largest microcontrollers have a few MB of RAM;
    # the host board runs larger models, so the default leaves room).
    max_arena_bytes: int = 256 * MB
    # The generated C sources, estimated from the constants before they are printed.
    max_source_bytes: int = 1 * GB
    # The samples read from data files (--inputs, --dataset, --calibration, --labels,
    # declared in their .npy headers) or made (verify --samples), with their outputs.
    max_data_bytes: int = 1 * GB
    # Nodes and graph outputs: generation is linear in them, but a graph of millions of
    # nodes is a bomb, not a model for a microcontroller (the largest real exports have
    # thousands).
    max_nodes: int = 100_000
    max_outputs: int = 10_000


DEFAULT_LIMITS = Limits()

# Which CLI option raises each limit, for the error messages.
OPTION = {"max_tensor_bytes": "--max-tensor-bytes", "max_arena_bytes": "--max-arena-bytes",
          "max_source_bytes": "--max-source-bytes", "max_data_bytes": "--max-data-bytes",
          "max_nodes": "--max-nodes", "max_outputs": "--max-outputs"}


def format_bytes(n: int) -> str:
    """1536 -> '1.5 KB', 2**43 -> '8.0 TB' (binary units, as RAM sizes are given)."""
    if n < KB:
        return f"{n} bytes"
    value = float(n)
    for unit in ("KB", "MB", "GB", "TB", "PB", "EB"):
        value /= 1024
        if value < 1024 or unit == "EB":
            return f"{value:.1f} {unit}"
    raise AssertionError("unreachable")


def check_count(what: str, count: int, limits: Limits, limit: str) -> None:
    """Refuse `count` things when over the named limit (nodes, outputs)."""
    allowed: int = getattr(limits, limit)
    if count > allowed:
        raise LimitError(f"{what}, over the limit of {allowed}; raise it with {OPTION[limit]}")


def check_limit(what: str, size: int, limits: Limits, limit: str) -> None:
    """Refuse `size` bytes when over the named limit. `what` says who needs them and
    how many, e.g. "initializer 'w' declares 1099511627776 float elements"."""
    allowed: int = getattr(limits, limit)
    if size > allowed:
        raise LimitError(f"{what} ({format_bytes(size)}), over the limit of "
                         f"{format_bytes(allowed)}; raise it with {OPTION[limit]}")


MAX_ELEMENTS = 2**31 - 1  # kernels index tensors with 32-bit integers


def check_shape(shape: tuple[int, ...], item_bytes: int, what: str, limits: Limits,
                dtype: str = "") -> None:
    """Refuse a tensor shape that is empty, negative, over 2^31 - 1 elements or over
    --max-tensor-bytes: from the declared numbers, before anything of that size exists.
    `what` names the tensor and says whose it is."""
    if any(d == 0 for d in shape):
        raise UnsupportedError(f"{what} has shape {list(shape)}: empty tensors are not "
                               "supported")
    if any(d < 0 for d in shape):
        raise ShapeError(f"{what} has a negative dimension in its shape {list(shape)}")
    elements = 1
    for d in shape:
        elements *= int(d)  # Python integers: no overflow, however absurd the shape
    if elements > MAX_ELEMENTS:
        raise ShapeError(f"{what} has {elements} elements; the limit is {MAX_ELEMENTS}")
    kind = f"{dtype} " if dtype else ""
    check_limit(f"{what} has {elements} {kind}elements", elements * item_bytes, limits,
                "max_tensor_bytes")


_SIZE = re.compile(r"^\s*(\d+)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": KB, "m": MB, "g": GB, "t": 2**40}


def parse_size(text: str) -> int:
    """'256M', '1G', '64k', '1000' -> bytes (as given to --max-*-bytes). Raises
    ValueError, which argparse reports as a usage error."""
    match = _SIZE.match(text)
    if not match:
        raise ValueError(f"'{text}' is not a size: use bytes or a K, M, G or T suffix, "
                         "e.g. 256M")
    return int(match.group(1)) * _UNITS[match.group(2).lower()]
