"""Data sets of many samples (verify --dataset): an .npz whose arrays are keyed by input
name, or a folder of NAME.npy files, the first axis of each array counting the samples.
A sample may leave out an input's leading axes of 1 (fit_batch_axis)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .errors import InputDataError
from .ir import Tensor


def load_arrays(path: str) -> dict[str, NDArray[Any]]:
    """The arrays of an .npz file or of a folder's .npy files (keyed by file stem)."""
    where = Path(path)
    if where.is_dir():
        files = sorted(where.glob("*.npy"))
        if not files:
            raise InputDataError(f"{path}: a folder without .npy files (one NAME.npy per "
                                 "model input, the first axis counting the samples)")
        return {f.stem: _load_npy(f) for f in files}
    if not where.exists():
        raise InputDataError(f"{path}: no such file or folder")
    try:
        with np.load(where, allow_pickle=False) as data:
            if not hasattr(data, "files"):
                raise InputDataError(f"{path}: a single array; a data set is an .npz keyed "
                                     "by input name, or a folder of NAME.npy files")
            return {k: data[k] for k in data.files}
    except InputDataError:
        raise
    except Exception as exc:
        raise InputDataError(f"{path}: not a readable .npz file ({exc})") from None


def _load_npy(path: Path) -> NDArray[Any]:
    try:
        return np.asarray(np.load(path, allow_pickle=False))
    except Exception as exc:
        raise InputDataError(f"{path}: not a readable .npy file ({exc})") from None


def split_samples(arrays: Mapping[str, NDArray[Any]], source: str) -> list[dict[str, Any]]:
    """One dict per sample: the arrays sliced along their first axis, which must count the
    same samples in every array."""
    if not arrays:
        raise InputDataError(f"{source}: no arrays, so no samples")
    counts = {}
    for name, array in arrays.items():
        if array.ndim == 0:
            raise InputDataError(f"{source}: array '{name}' is a scalar; its first axis "
                                 "should count the samples")
        counts[name] = int(array.shape[0])
    if len(set(counts.values())) != 1:
        listed = ", ".join(f"'{n}' {c}" for n, c in sorted(counts.items()))
        raise InputDataError(f"{source}: the arrays count different samples ({listed})")
    count = next(iter(counts.values()))
    if count == 0:
        raise InputDataError(f"{source}: no samples (the arrays' first axis is 0)")
    return [{name: array[i] for name, array in arrays.items()} for i in range(count)]


def load_dataset(path: str) -> list[dict[str, Any]]:
    """The samples of the data set at `path`."""
    return split_samples(load_arrays(path), path)


def fit_batch_axis(sample: Mapping[str, Any], inputs: Sequence[Tensor]) -> dict[str, Any]:
    """The sample with the leading axes of 1 restored where an input's array has its shape
    without them (samples stored as [N, C, H, W] for inputs [1, C, H, W], or as [N, H, W]
    for [1, 1, H, W])."""
    fitted = dict(sample)
    for t in inputs:
        value = fitted.get(t.name)
        if value is None:
            continue
        array = np.asarray(value)
        ones = 0
        while ones < len(t.shape) and t.shape[ones] == 1:
            ones += 1
        if any(tuple(array.shape) == tuple(t.shape[k:]) for k in range(1, ones + 1)):
            fitted[t.name] = array.reshape(t.shape)
    return fitted
