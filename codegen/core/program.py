"""The lowered program: kernel calls with their precomputed parameters.

Lowering produces it from the IR; the memory planner and the emitter only read it.
Parameter values are plain data (ints, float32 values, references to const arrays and
nested struct initializers) so the emitter can print them without knowing any kernel.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .ir import Tensor


@dataclass(frozen=True)
class CArray:
    """A const array in the generated source (weights, per-channel constants)."""

    name: str  # a suffix; the emitter prefixes the call's symbol
    ctype: str
    values: NDArray[Any]
    # 8-byte alignment, for kernels that read it with 64-bit loads (LDRD): emitted as a
    # union with a uint64_t, whose element array a CRef names with member "v".
    aligned8: bool = False


def array_key(array: CArray) -> tuple[Any, ...]:
    """What makes two const arrays the same array in the image (the calls of a layer's
    row bands share its weights)."""
    values = np.ascontiguousarray(array.values)
    return (array.ctype, array.aligned8, values.dtype.str, values.shape, values.tobytes())


@dataclass(frozen=True)
class CRef:
    """The address of a CArray of the same call."""

    name: str
    member: str = ""  # "v" for an aligned8 array


@dataclass(frozen=True)
class CFloat:
    """A float32 constant, printed as an exact hexadecimal literal."""

    value: float


@dataclass(frozen=True)
class CDouble:
    """A double constant, printed as an exact hexadecimal literal."""

    value: float


@dataclass(frozen=True)
class CInts:
    """An inline array initializer for a fixed-size array field: {1, 2, 3}."""

    values: tuple[int, ...]


@dataclass(frozen=True)
class CStruct:
    ctype: str
    fields: tuple[tuple[str, CValue], ...]


CValue = int | CFloat | CDouble | CRef | CInts | CStruct | None


@dataclass(frozen=True)
class Overlap:
    """Where a kernel's output may lie over the bytes of one of its inputs that dies at
    the call: the kernel reads that input in a known order and overwrites only bytes it
    has finished with. With s the output's offset minus the input's, the overlap is safe
    when s <= max_shift (the output ahead of the input by at most max_shift bytes; a
    negative bound keeps it that far behind), or, with exact, only when s == max_shift.
    Buffers that do not overlap at all are always safe."""

    input: int  # index in KernelCall.inputs
    max_shift: int
    exact: bool = False


@dataclass(frozen=True)
class RowsRead:
    """The rows a call reads of its first input, an NCHW-like tensor of `planes` planes
    of `rows` rows of `row_bytes` bytes: rows [first, end) of each plane. When every
    reader of a tensor says so, each row dies after the last call that reads it (a
    banded block's input, read a window at a time)."""

    planes: int
    rows: int
    row_bytes: int
    first: int
    end: int


@dataclass(frozen=True)
class KernelCall:
    """One call of a runtime kernel: function(&params, inputs..., outputs...)."""

    function: str
    node: str  # the IR node it implements, for comments and diagnostics
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    params: CStruct | None = None
    arrays: tuple[CArray, ...] = ()
    sources: tuple[str, ...] = ()  # runtime_c files that define `function`
    macs: int = 0
    # Working memory the kernel needs during the call (an im2col buffer), planned in the
    # arena like a tensor that lives for this call only; passed as the last argument.
    scratch_bytes: int = 0
    # The index of an input whose storage the output may take over when that input dies
    # here: the kernel reads element i of it before writing element i of the output, and
    # both have the same size (elementwise operators, clamps, tables).
    in_place: int | None = None
    # An input whose bytes the output may partly overwrite (sub-tensor lifetimes: a
    # depthwise convolution's finished channels, a pointwise convolution's finished pixels).
    overlap: Overlap | None = None
    rows_read: RowsRead | None = None
    # Work and weights the node no longer needs (output channels whose weights are all
    # zero, filled with their constant): what `report` says was removed.
    skipped_macs: int = 0
    skipped_weight_bytes: int = 0
    # The ONNX node's own name, which the per-layer profiling hook passes ("" for the
    # output copies lowering adds, named by `node`).
    layer: str = ""


@dataclass(frozen=True)
class Alias:
    """A tensor that shares the storage of another (Reshape, Flatten, Squeeze, ...):
    layout-only operators cost no copy."""

    tensor: str
    source: str


@dataclass(frozen=True)
class ComputedConstant:
    """A tensor whose value lowering computes at generation time, exactly as the
    operator would at run time (the dequantized weights of a float island): emitted as
    a const array."""

    tensor: str
    values: NDArray[Any]


@dataclass(frozen=True)
class Intermediate:
    """A tensor between two calls of one node, planned in the arena like any other (a
    convolution's computed channels before its constant ones are filled in)."""

    tensor: Tensor


Lowered = KernelCall | Alias | ComputedConstant | Intermediate


@dataclass(frozen=True)
class Boundary:
    """The float graph I/O around a program with quantized I/O (--io quantized|both), and
    the conversions between: the float entry point of --io both runs them around the
    quantized one, and verify feeds ORT the float inputs."""

    float_inputs: tuple[Tensor, ...]  # the graph's inputs, in graph order
    float_outputs: tuple[Tensor, ...]
    prologue: tuple[KernelCall, ...]  # float input (the caller's) -> quantized input
    epilogue: tuple[KernelCall, ...]  # quantized output -> float output (the caller's)


@dataclass
class Program:
    name: str
    inputs: list[Tensor]
    outputs: list[Tensor]
    tensors: dict[str, Tensor]
    calls: list[KernelCall]
    constants: dict[str, NDArray[Any]] = field(default_factory=dict)
    requant: str = "float"
    aliases: dict[str, str] = field(default_factory=dict)  # alias -> source
    # "float": the graph's own I/O, in the caller's buffers; "quantized" or "both": the
    # quantized I/O, in the arena (io_boundary.quantized_io), with `boundary` around it.
    io: str = "float"
    boundary: Boundary | None = None

    @property
    def emitted_calls(self) -> list[KernelCall]:
        """Every call the C holds: the program's, and the float entry point's conversions
        with --io both."""
        if self.io != "both" or self.boundary is None:
            return self.calls
        return [*self.boundary.prologue, *self.calls, *self.boundary.epilogue]

    @property
    def caller_io_bytes(self) -> int:
        """Bytes of the input and output buffers the caller provides: the graph's I/O
        with --io float (and the float entry point's with both); none with quantized,
        whose I/O lives in the arena."""
        if self.io == "float":
            return sum(t.nbytes for t in (*self.inputs, *self.outputs))
        if self.io == "both" and self.boundary is not None:
            return sum(t.nbytes for t in (*self.boundary.float_inputs,
                                          *self.boundary.float_outputs))
        return 0

    def root(self, tensor: str) -> str:
        """The tensor whose storage `tensor` uses (itself unless it is an alias)."""
        while tensor in self.aliases:
            tensor = self.aliases[tensor]
        return tensor

    def weight_bytes_per_call(self) -> list[int]:
        """The const bytes each call brings into the image: its own arrays (packed
        weights, per-channel constants) and the program constants it is the first to
        read. They add up to every const array the emitter writes, each counted once."""
        counted: set[str] = set()
        arrays: set[tuple[Any, ...]] = set()
        sizes = []
        for call in self.calls:
            size = 0
            for array in call.arrays:
                key = array_key(array)
                if key not in arrays:  # the emitter writes equal arrays once
                    arrays.add(key)
                    size += int(np.asarray(array.values).nbytes)
            for tensor in call.inputs:
                root = self.root(tensor)
                if root in self.constants and root not in counted:
                    counted.add(root)
                    size += int(np.asarray(self.constants[root]).nbytes)
            sizes.append(size)
        return sizes

    @property
    def weight_bytes(self) -> int:
        """Bytes of const data: weights, biases, tables and per-channel constants."""
        return (sum(int(np.asarray(v).nbytes) for v in self.constants.values())
                + sum(int(np.asarray(a.values).nbytes)
                      for a in {array_key(a): a for c in self.calls for a in c.arrays}.values()))

    @property
    def sources(self) -> list[str]:
        return sorted({src for call in self.emitted_calls for src in call.sources})
