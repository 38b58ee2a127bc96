"""Data sets of many samples (verify --dataset): an .npz whose arrays are keyed by input
name, or a folder of NAME.npy files, the first axis of each array counting the samples.
A sample may leave out an input's leading axes of 1 (fit_batch_axis)."""

from __future__ import annotations

import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
import onnx
from numpy.typing import NDArray
from onnx import helper

from codegen.errors import InputDataError

from .ir import Tensor
from .limits import DEFAULT_LIMITS, Limits, check_limit


def load_arrays(path: str, limits: Limits = DEFAULT_LIMITS) -> dict[str, NDArray[Any]]:
    """The arrays of an .npz file or of a folder's .npy files (keyed by file stem), their
    declared sizes checked against --max-data-bytes before any is read."""
    where = Path(path)
    if where.is_dir():
        files = sorted(where.glob("*.npy"))
        if not files:
            raise InputDataError(f"{path}: a folder without .npy files (one NAME.npy per "
                                 "model input, the first axis counting the samples)")
        for f in files:
            if not f.is_file():  # a FIFO or a device would block or never end
                raise InputDataError(f"{f}: not a regular file")
        declared = sum(_declared_bytes(_npy_header(f)) for f in files)
        check_limit(f"{path}: the .npy files declare {declared} bytes", declared, limits,
                    "max_data_bytes")
        return {f.stem: _read_npy(f) for f in files}
    if not where.exists():
        raise InputDataError(f"{path}: no such file or folder")
    magic = _magic(where)
    if magic == NPY_MAGIC:
        raise InputDataError(f"{path}: a single array; a data set is an .npz keyed "
                             "by input name, or a folder of NAME.npy files")
    return _load_zip(path, magic, limits)


# The first bytes of a zip archive (an .npz; the second form is an empty archive) and of
# a .npy array.
ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")
NPY_MAGIC = b"\x93NUMPY"


def _magic(path: Path) -> bytes:
    if not path.is_file():
        raise InputDataError(f"{path}: not a regular file")
    try:
        with path.open("rb") as f:
            head = f.read(6)
    except OSError as exc:
        raise InputDataError(f"{path}: cannot read it ({exc.strerror})") from None
    return head if head == NPY_MAGIC else head[:4]


def _read_header(stream: IO[bytes], where: str) -> tuple[tuple[int, ...], np.dtype[Any]]:
    """The shape and dtype a .npy stream declares, from its header alone."""
    try:
        version = np.lib.format.read_magic(stream)
        shape, _, dtype = (np.lib.format.read_array_header_1_0(stream) if version == (1, 0)
                           else np.lib.format.read_array_header_2_0(stream))
    except Exception as exc:
        raise InputDataError(f"{where}: not a readable .npy array ({exc})") from None
    if dtype.hasobject:
        raise InputDataError(f"{where}: holds Python objects (a pickle), which onnx2mcu "
                             "never loads")
    return tuple(int(d) for d in shape), dtype


def _npy_header(path: Path) -> tuple[tuple[int, ...], np.dtype[Any]]:
    try:
        with path.open("rb") as f:
            return _read_header(f, str(path))
    except OSError as exc:
        raise InputDataError(f"{path}: cannot read it ({exc.strerror})") from None


def _declared_bytes(header: tuple[tuple[int, ...], np.dtype[Any]]) -> int:
    shape, dtype = header
    elements = 1
    for d in shape:
        elements *= d  # Python integers: no overflow
    return elements * dtype.itemsize


def load_npz(path: str, limits: Limits = DEFAULT_LIMITS) -> dict[str, NDArray[Any]]:
    """The arrays of an .npz file, keyed by name (never a pickle), their declared sizes
    checked against --max-data-bytes before any is decompressed."""
    where = Path(path)
    if not where.exists():
        raise InputDataError(f"{path}: no such file")
    return _load_zip(path, _magic(where), limits)


def _load_zip(path: str, magic: bytes, limits: Limits) -> dict[str, NDArray[Any]]:
    """load_npz of a file whose first bytes are `magic`."""
    where = Path(path)
    if magic not in ZIP_MAGICS:
        raise InputDataError(f"{path}: not an .npz file (not a zip archive of .npy arrays, "
                             "as numpy.savez writes)")
    try:
        with zipfile.ZipFile(where) as archive:
            declared = 0
            for member in archive.namelist():
                with archive.open(member) as stream:
                    declared += _declared_bytes(_read_header(
                        stream, f"{path}: array '{member.removesuffix('.npy')}'"))
    except InputDataError:
        raise
    except Exception as exc:
        raise InputDataError(f"{path}: not a readable .npz file ({exc})") from None
    check_limit(f"{path}: its arrays declare {declared} bytes", declared, limits,
                "max_data_bytes")
    try:
        with np.load(where, allow_pickle=False) as data:
            return {k: data[k] for k in data.files}
    except Exception as exc:
        raise InputDataError(f"{path}: not a readable .npz file ({exc})") from None


def _load_npy(path: Path, limits: Limits = DEFAULT_LIMITS) -> NDArray[Any]:
    declared = _declared_bytes(_npy_header(path))
    check_limit(f"{path}: its array declares {declared} bytes", declared, limits,
                "max_data_bytes")
    return _read_npy(path)


def _read_npy(path: Path) -> NDArray[Any]:
    """The array of a .npy file whose declared size was checked."""
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


def load_dataset(path: str, limits: Limits = DEFAULT_LIMITS) -> list[dict[str, Any]]:
    """The samples of the data set at `path`."""
    return split_samples(load_arrays(path, limits), path)


def with_leading_axes(shape: tuple[int, ...],
                      expected: Sequence[int | None]) -> tuple[int, ...] | None:
    """`shape` with the leading axes of 1 restored that it leaves out of `expected`
    (axes of 1 or of free size, None, taken as 1), or None when it does not fit."""
    leading = 0
    while leading < len(expected) and expected[leading] in (1, None):
        leading += 1
    for dropped in range(leading + 1):
        rest = expected[dropped:]
        if len(shape) == len(rest) and all(e is None or e == d
                                           for d, e in zip(shape, rest, strict=True)):
            return (1,) * dropped + tuple(shape)
    return None


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
        shape = with_leading_axes(tuple(array.shape), t.shape)
        if shape is not None and shape != tuple(array.shape):
            fitted[t.name] = array.reshape(shape)
    return fitted


@dataclass(frozen=True)
class InputSpec:
    """A model input as an ONNX file declares it: a dimension without a fixed size is
    None (a symbolic batch, say)."""

    name: str
    dtype: np.dtype[Any]
    shape: tuple[int | None, ...]

    def describe(self) -> str:
        dims = ", ".join("?" if d is None else str(d) for d in self.shape)
        return f"{self.dtype} [{dims}]"


def model_input_specs(model: onnx.ModelProto) -> list[InputSpec]:
    """The graph inputs that are not initializers (older exporters list weights too)."""
    weights = {t.name for t in model.graph.initializer}
    specs = []
    for value in model.graph.input:
        if value.name in weights:
            continue
        tensor = value.type.tensor_type
        try:
            dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.elem_type))
        except Exception:
            raise InputDataError(f"model input '{value.name}' has an element type numpy "
                                 "cannot hold") from None
        shape = tuple(d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None
                      for d in tensor.shape.dim)
        specs.append(InputSpec(value.name, dtype, shape))
    return specs


def conform_arrays(arrays: Mapping[str, NDArray[Any]], specs: Sequence[InputSpec],
                   source: str) -> dict[str, NDArray[Any]]:
    """The data set's arrays for the model's inputs: each [samples, *input shape] in the
    input's dtype. A sample may leave out the input's leading axes of 1 (or of free
    size, a batch, taken as 1); numbers convert to a float input's type, and integers to
    an integer input's when they are in its range. Anything else is refused in one line
    naming the input and what it expects."""
    fitted = {}
    for spec in specs:
        if spec.name not in arrays:
            raise InputDataError(f"{source}: no array for model input '{spec.name}' "
                                 f"({spec.describe()}); the data has "
                                 f"{', '.join(sorted(arrays)) or 'nothing'}")
        array = np.asarray(arrays[spec.name])
        fitted[spec.name] = _conform_dtype(_conform_shape(array, spec, source), spec, source)
    return fitted


def _conform_shape(array: NDArray[Any], spec: InputSpec, source: str) -> NDArray[Any]:
    sample = tuple(array.shape[1:])
    shape = with_leading_axes(sample, spec.shape)
    if shape is not None:
        return array.reshape((array.shape[0], *shape))
    raise InputDataError(f"{source}: model input '{spec.name}' expects samples of shape "
                         f"{spec.describe()}; array '{spec.name}' has {list(array.shape)}, "
                         f"samples of {list(sample)} (the first axis counts the samples)")


def converted(array: NDArray[Any], dtype: np.dtype[Any]) -> NDArray[Any] | None:
    """`array` in `dtype` where that loses nothing a user would mind: any number into a
    float type, integers into an integer type that holds all of them; else None."""
    if array.dtype == dtype:
        return array
    if dtype.kind == "f" and array.dtype.kind in "fiu":
        return array.astype(dtype)
    if dtype.kind in "iu" and array.dtype.kind in "iu":
        info = np.iinfo(dtype)
        if not array.size or (array.min() >= info.min and array.max() <= info.max):
            return array.astype(dtype)
    return None


def _conform_dtype(array: NDArray[Any], spec: InputSpec, source: str) -> NDArray[Any]:
    fitted = converted(array, spec.dtype)
    if fitted is not None:
        return fitted
    raise InputDataError(f"{source}: model input '{spec.name}' expects {spec.describe()}; "
                         f"array '{spec.name}' holds {array.dtype}"
                         + (" values outside that range" if array.dtype.kind in "iu" else ""))


def load_labels(path: str, count: int, limits: Limits = DEFAULT_LIMITS) -> NDArray[Any]:
    """Class labels, one per sample: an .npy (or an .npz of one array) of integer class
    indices [samples], or of one-hot or score rows [samples, classes]. Checked against
    the model's outputs by class_indices."""
    where = Path(path)
    arrays = {where.stem: _load_npy(where, limits)} if where.is_file() and \
        where.suffix == ".npy" else load_arrays(path, limits)
    if where.is_dir() or len(arrays) != 1:
        raise InputDataError(f"{path}: labels are one array (an .npy, or an .npz holding "
                             "one array) of class indices, one per sample")
    labels = next(iter(arrays.values()))
    rows = labels.ndim == 2 and labels.shape[1] > 1
    if labels.ndim == 2 and not rows:
        labels = labels[:, 0]
    if not (rows and labels.dtype.kind in "iubf") and \
            (labels.ndim != 1 or labels.dtype.kind not in "iub"):
        raise InputDataError(f"{path}: labels are integer class indices [samples] or "
                             f"one-hot rows [samples, classes], not {labels.dtype} "
                             f"{list(labels.shape)}")
    if rows and not np.all(np.isfinite(labels)):
        raise InputDataError(f"{path}: the label rows hold NaN or inf")
    if labels.shape[0] != count:
        raise InputDataError(f"{path}: {labels.shape[0]} labels for {count} samples")
    return labels


def class_indices(labels: NDArray[Any], classes: int, output: str) -> NDArray[np.int64]:
    """The labels as class indices of an output of `classes` classes: indices from 0 to
    classes - 1, or one-hot or score rows of `classes` columns (their argmax). Anything
    else would give a meaningless accuracy, so it is refused."""
    labels = np.asarray(labels)
    if labels.ndim == 2 and labels.shape[1] > 1:
        if labels.shape[1] != classes:
            raise InputDataError(f"labels: rows of {labels.shape[1]} columns for output "
                                 f"'{output}' of {classes} classes")
        chosen: NDArray[np.int64] = np.argmax(labels, axis=1).astype(np.int64)
        return chosen
    if labels.dtype.kind not in "iub":
        raise InputDataError(f"labels: class indices are integers, not {labels.dtype}")
    indices = labels.reshape(-1).astype(np.int64)
    outside = np.flatnonzero((indices < 0) | (indices >= classes))
    if outside.size:
        first = int(outside[0])
        raise InputDataError(f"labels: {outside.size} label(s) outside output '{output}''s "
                             f"{classes} classes (0 to {classes - 1}), the first {indices[first]}"
                             f" of sample {first}")
    return indices
