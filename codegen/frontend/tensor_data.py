"""Reading tensor data safely. A tensor's size comes from its dims and dtype, and is
checked against the limits, and against the bytes actually present, before numpy
allocates anything. External data is read only from regular files inside the model's
folder: no absolute paths, no '..', no symbolic links leading out, and never more than
the tensor declares."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath

import onnx
from onnx import TensorProto

from codegen.core.limits import Limits, check_limit
from codegen.errors import ModelError, UnsupportedError

# Bytes per element of each ONNX dtype; the 4-bit types pack two elements per byte and
# are handled in declared_bytes. STRING has no fixed size (counted as 1 byte each).
_ITEMSIZE: dict[int, int] = {
    TensorProto.FLOAT: 4, TensorProto.UINT8: 1, TensorProto.INT8: 1, TensorProto.UINT16: 2,
    TensorProto.INT16: 2, TensorProto.INT32: 4, TensorProto.INT64: 8, TensorProto.STRING: 1,
    TensorProto.BOOL: 1, TensorProto.FLOAT16: 2, TensorProto.DOUBLE: 8, TensorProto.UINT32: 4,
    TensorProto.UINT64: 8, TensorProto.COMPLEX64: 8, TensorProto.COMPLEX128: 16,
    TensorProto.BFLOAT16: 2,
}
_TWO_BIT = {getattr(TensorProto, n) for n in ("UINT2", "INT2") if hasattr(TensorProto, n)}
_FOUR_BIT = {getattr(TensorProto, n) for n in ("UINT4", "INT4", "FLOAT4E2M1")
             if hasattr(TensorProto, n)}
_EIGHT_BIT_FLOATS = {getattr(TensorProto, n) for n in (
    "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "FLOAT8E8M0")
    if hasattr(TensorProto, n)}
# The typed field holding each dtype's values when raw_data is not used.
_TYPED_FIELD: dict[int, str] = {
    TensorProto.FLOAT: "float_data", TensorProto.INT64: "int64_data",
    TensorProto.DOUBLE: "double_data", TensorProto.UINT32: "uint64_data",
    TensorProto.UINT64: "uint64_data", TensorProto.STRING: "string_data",
    **{t: "int32_data" for t in (TensorProto.UINT8, TensorProto.INT8, TensorProto.UINT16,
                                 TensorProto.INT16, TensorProto.INT32, TensorProto.BOOL,
                                 TensorProto.FLOAT16, TensorProto.BFLOAT16)},
}


@dataclass(frozen=True)
class DeclaredSize:
    elements: int
    nbytes: int
    dtype: str


def dtype_name(data_type: int) -> str:
    if data_type in TensorProto.DataType.values():
        return str(TensorProto.DataType.Name(data_type)).lower()
    return f"unknown dtype {data_type}"


def declared_size(tensor: TensorProto, where: str) -> DeclaredSize:
    """Elements and bytes that the dims and dtype declare, computed without allocating
    (Python integers: 2^40 elements are only a number here)."""
    if any(d < 0 for d in tensor.dims):
        raise ModelError(f"{where} '{tensor.name}' has a negative dimension in its dims "
                         f"{list(tensor.dims)}")
    elements = 1
    for d in tensor.dims:
        elements *= int(d)
    data_type = tensor.data_type
    if data_type in _TWO_BIT:
        nbytes = (elements + 3) // 4
    elif data_type in _FOUR_BIT:
        nbytes = (elements + 1) // 2
    elif data_type in _EIGHT_BIT_FLOATS:
        nbytes = elements
    elif data_type in _ITEMSIZE:
        nbytes = elements * _ITEMSIZE[data_type]
    else:
        raise ModelError(f"{where} '{tensor.name}' has no valid data type ({data_type})")
    return DeclaredSize(elements, nbytes, dtype_name(data_type))


def check_declared_size(tensor: TensorProto, where: str, limits: Limits) -> DeclaredSize:
    size = declared_size(tensor, where)
    check_limit(f"{where} '{tensor.name}' declares {size.elements} {size.dtype} elements",
                size.nbytes, limits, "max_tensor_bytes")
    return size


def check_stored_size(tensor: TensorProto, where: str, size: DeclaredSize) -> None:
    """The bytes or values present must be what the dims declare (numpy would fail on
    the reshape, with a message that names neither tensor nor sizes)."""
    if tensor.raw_data:
        if len(tensor.raw_data) != size.nbytes:
            raise ModelError(f"{where} '{tensor.name}' holds {len(tensor.raw_data)} bytes but "
                             f"its dims {list(tensor.dims)} declare {size.nbytes}")
        return
    field = _TYPED_FIELD.get(tensor.data_type)
    if field is None:
        return  # exotic dtypes: left to numpy_helper, whose errors are caught by the caller
    present = len(getattr(tensor, field))
    if present != size.elements:
        raise ModelError(f"{where} '{tensor.name}' holds {present} values but its dims "
                         f"{list(tensor.dims)} declare {size.elements}")


# --------------------------------------------------------------------------------------
# External data
# --------------------------------------------------------------------------------------

def model_tensors(model: onnx.ModelProto) -> Iterator[tuple[TensorProto, str]]:
    """The main graph's initializers and tensor attributes, described for messages.
    Subgraphs and sparse initializers are refused by the importer, so not read here."""
    for tensor in model.graph.initializer:
        yield tensor, "initializer"
    for index, node in enumerate(model.graph.node):
        name = node.name or f"{node.op_type}_{index}"
        for attr in node.attribute:
            where = f"node '{name}' ({node.op_type}): attribute '{attr.name}' tensor"
            if attr.HasField("t"):
                yield attr.t, where
            for tensor in attr.tensors:
                yield tensor, where


def _external_info(tensor: TensorProto, where: str) -> tuple[str, int, int | None]:
    """(location, offset, length or None) of an external tensor."""
    info = {entry.key: entry.value for entry in tensor.external_data}
    try:
        offset = int(info.get("offset", "0"))
        length = int(info["length"]) if "length" in info else None
    except ValueError:
        raise ModelError(f"{where} '{tensor.name}': external data offset/length are not "
                         "integers") from None
    if offset < 0 or (length is not None and length < 0):
        raise ModelError(f"{where} '{tensor.name}': negative external data offset or length")
    return info.get("location", ""), offset, length


def contained_path(folder: Path, location: str, what: str) -> Path:
    """`location` resolved inside `folder`, or ModelError. Refuses absolute paths, '..'
    and symbolic links that lead out, so that a model cannot make the generator read (and
    embed in the generated C) any file of the user's."""
    if not location or "\0" in location:
        raise ModelError(f"{what}: external data location '{location}' is not a file name")
    posix, windows = PurePosixPath(location), PureWindowsPath(location)
    if posix.is_absolute() or windows.is_absolute() or windows.drive or windows.root:
        raise ModelError(f"{what}: external data location '{location}' is an absolute path; "
                         "only files in the model's folder are read")
    if ".." in posix.parts or ".." in windows.parts:
        raise ModelError(f"{what}: external data location '{location}' leads out of the "
                         "model's folder; only files in the model's folder are read")
    root = folder.resolve()
    path = (root / location).resolve()
    if not path.is_relative_to(root):
        raise ModelError(f"{what}: external data location '{location}' leads out of the "
                         "model's folder through a symbolic link; only files in the model's "
                         "folder are read")
    if not path.is_file():
        raise ModelError(f"{what}: external data file '{location}' does not exist in the "
                         "model's folder (or is not a regular file)")
    return path


def read_external(tensor: TensorProto, where: str, folder: Path, limits: Limits) -> bytes:
    """The bytes of an external tensor, after checking its location, its declared size
    against the limit and the file's size; never more than the tensor declares."""
    what = f"{where} '{tensor.name}'"
    location, offset, length = _external_info(tensor, where)
    path = contained_path(folder, location, what)
    size = check_declared_size(tensor, where, limits)
    if length is not None and length != size.nbytes:
        raise ModelError(f"{what}: external data length {length} does not match the "
                         f"{size.nbytes} bytes its dims {list(tensor.dims)} declare")
    available = path.stat().st_size
    if offset + size.nbytes > available:
        raise ModelError(f"{what}: needs bytes {offset} to {offset + size.nbytes} of "
                         f"'{location}', which has {available}")
    with path.open("rb") as f:
        f.seek(offset)
        data = f.read(size.nbytes)
    if len(data) != size.nbytes:
        raise ModelError(f"{what}: '{location}' ended after {len(data)} of {size.nbytes} "
                         "bytes")
    return data


def load_external_data(model: onnx.ModelProto, folder: Path, limits: Limits) -> None:
    """Read every external tensor of the model into its raw_data, safely."""
    for tensor, where in model_tensors(model):
        if tensor.data_location != TensorProto.EXTERNAL:
            continue
        if tensor.data_type == TensorProto.STRING:
            raise UnsupportedError(f"{where} '{tensor.name}': external string tensors are "
                                   "not supported")
        tensor.raw_data = read_external(tensor, where, folder, limits)
        tensor.data_location = TensorProto.DEFAULT
        del tensor.external_data[:]
