"""The intermediate representation: a typed, shape-resolved dataflow graph.

The importer builds it from ONNX, passes rewrite it, and lowering turns it into kernel
calls. Every tensor has a static shape and one of the dtypes below.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .limits import DEFAULT_LIMITS, Limits

# dtype name -> (numpy dtype, C type, ONNX TensorProto code)
DTYPES: dict[str, tuple[type[np.generic], str, int]] = {
    "float32": (np.float32, "float", 1),
    "uint8": (np.uint8, "uint8_t", 2),
    "int8": (np.int8, "int8_t", 3),
    "uint16": (np.uint16, "uint16_t", 4),
    "int16": (np.int16, "int16_t", 5),
    "int32": (np.int32, "int32_t", 6),
    # Only computed: ArgMax/ArgMin's indices. Graph inputs, Cast targets and constants
    # of this type are not tensors onnx2mcu computes with (shape constants fold).
    "int64": (np.int64, "int64_t", 7),
}
ONNX_TO_DTYPE = {code: name for name, (_, _, code) in DTYPES.items() if name != "int64"}

# The 8-bit quantized types, which the integer operators compute with.
QUANT_RANGE = {"uint8": (0, 255), "int8": (-128, 127)}
# Every type QuantizeLinear and DequantizeLinear convert: also 16-bit activations.
QDQ_RANGE = {**QUANT_RANGE, "uint16": (0, 65535), "int16": (-32768, 32767)}


def numpy_dtype(dtype: str) -> np.dtype[Any]:
    return np.dtype(DTYPES[dtype][0])


def c_type(dtype: str) -> str:
    return DTYPES[dtype][1]


def itemsize(dtype: str) -> int:
    return numpy_dtype(dtype).itemsize


@dataclass(frozen=True)
class QuantParams:
    """Quantization of a tensor: real = (q - zero_point) * scale, per tensor or per axis."""

    scale: tuple[float, ...]
    zero_point: tuple[int, ...]
    axis: int | None = None

    @property
    def per_tensor(self) -> bool:
        return len(self.scale) == 1


@dataclass
class Tensor:
    name: str
    dtype: str
    shape: tuple[int, ...]
    # For an integer tensor, its quantization. For a float tensor at the graph boundary,
    # the quantization its QuantizeLinear consumer / DequantizeLinear producer applies.
    quant: QuantParams | None = None
    # Set when `name` is internal (the own buffer of a repeated graph output): the ONNX
    # name users see. Never derived by parsing `name`, since ONNX names may hold any text.
    external_name: str | None = None

    @property
    def onnx_name(self) -> str:
        return self.name if self.external_name is None else self.external_name

    @property
    def numel(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.numel * itemsize(self.dtype)


@dataclass
class Node:
    name: str
    op_type: str
    domain: str
    inputs: tuple[str, ...]  # "" marks an omitted optional input
    outputs: tuple[str, ...]
    attrs: dict[str, Any] = field(default_factory=dict)
    opset: int = 0

    def describe(self) -> str:
        domain = self.domain or "ai.onnx"
        return f"node '{self.name}' ({self.op_type}, domain {domain})"

    def input(self, index: int) -> str | None:
        """The name of input `index`, or None when it is absent or omitted."""
        if index < len(self.inputs) and self.inputs[index]:
            return self.inputs[index]
        return None


@dataclass
class Graph:
    name: str
    inputs: list[str]
    outputs: list[str]
    nodes: list[Node]
    tensors: dict[str, Tensor]
    constants: dict[str, NDArray[Any]]
    opsets: dict[str, int]
    doc: str = ""
    # What the importer decided for the user and they should hear about, one line each
    # (e.g. a dynamic batch axis taken as 1). Passes carry it over to the graphs they make.
    notes: list[str] = field(default_factory=list)
    # The limits the model was imported under: operators whose specs hold tables as long
    # as an output check the output against them before building those (Pad, Resize).
    limits: Limits = DEFAULT_LIMITS
    # producer() and readers() answer from an index of the node list, rebuilt whenever
    # the graph holds another list or the list another length (passes replace the list or
    # append to it; none replaces a node in place). Without it, every operator asking who
    # reads or writes a tensor scanned the whole graph: quadratic in its size.
    _index: NodeIndex | None = field(default=None, init=False, repr=False, compare=False)

    def _node_index(self) -> NodeIndex:
        index = self._index
        if index is None or index.nodes is not self.nodes or index.length != len(self.nodes):
            index = NodeIndex.of(self.nodes)
            self._index = index
        return index

    def producer(self, tensor: str) -> Node | None:
        """The first node (in graph order) with `tensor` among its outputs."""
        return self._node_index().producers.get(tensor)

    def readers(self, tensor: str) -> list[Node]:
        """The nodes reading `tensor`, in graph order, once per input slot that reads it."""
        return list(self._node_index().readers.get(tensor, ()))


@dataclass(frozen=True)
class NodeIndex:
    nodes: list[Node]  # the very list indexed (kept, so that its id cannot be reused)
    length: int
    producers: dict[str, Node]
    readers: dict[str, list[Node]]

    @staticmethod
    def of(nodes: list[Node]) -> NodeIndex:
        producers: dict[str, Node] = {}
        readers: dict[str, list[Node]] = {}
        for node in nodes:
            for name in node.outputs:
                producers.setdefault(name, node)
            for name in node.inputs:
                readers.setdefault(name, []).append(node)
        return NodeIndex(nodes, len(nodes), producers, readers)
