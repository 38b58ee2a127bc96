"""Quantized I/O (--io quantized|both): the program between the model's boundary
conversions, with its inputs and outputs in the arena.

A float graph input whose one reader is a QuantizeLinear kernel becomes that kernel's
quantized output; a float graph output written by a DequantizeLinear kernel becomes that
kernel's quantized input; 8-bit (and other integer) graph inputs and outputs stay as they
are. The conversions are taken out of the program: --io both keeps them as the float
entry point's prologue and epilogue, --io quantized drops them. Nothing else changes,
so the quantized entry point computes, bit for bit, the tensors the float one does."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from codegen.core.ir import Graph, Tensor
from codegen.core.pattern import is_quantize
from codegen.core.program import Boundary, Program
from codegen.errors import UnsupportedError

QUANTIZE = "q8_quantize_linear_"
DEQUANTIZE = "q8_dequantize_linear_"


def _readers(program: Program, tensor: str) -> list[int]:
    """The calls that read `tensor` or an alias of it."""
    return [i for i, call in enumerate(program.calls)
            if any(program.root(t) == tensor for t in call.inputs)]


def _quantized_input(program: Program, t: Tensor, io: str) -> tuple[Tensor, int | None]:
    """The tensor the quantized entry point takes for graph input `t`, and the index of
    the call that quantizes it (None: `t` itself)."""
    if t.dtype != "float32":
        return t, None
    readers = _readers(program, t.name)
    if not readers:
        raise UnsupportedError(f"--io {io}: input '{t.onnx_name}' is not read by the "
                               "model, so it has no quantized form")
    calls = [program.calls[i] for i in readers]
    if len(readers) != 1 or not calls[0].function.startswith(QUANTIZE) \
            or calls[0].inputs != (t.name,):
        what = ", ".join(sorted({c.node for c in calls}))
        raise UnsupportedError(f"--io {io}: input '{t.onnx_name}' is read in float "
                               f"({what}), not only by one QuantizeLinear: the model takes it "
                               "as float (use --io float)")
    return program.tensors[calls[0].outputs[0]], readers[0]


def _quantized_output(program: Program, t: Tensor, io: str) -> tuple[Tensor, int | None]:
    """The tensor the quantized entry point gives for graph output `t`, and the index of
    the call that dequantizes it (None: `t` itself)."""
    if t.dtype != "float32":
        return t, None
    writers = [i for i, call in enumerate(program.calls) if t.name in call.outputs]
    call = program.calls[writers[0]] if len(writers) == 1 else None
    if call is None or not call.function.startswith(DEQUANTIZE) or _readers(program, t.name):
        what = call.node if call is not None else "no single kernel"
        raise UnsupportedError(f"--io {io}: output '{t.onnx_name}' is computed in float "
                               f"({what}), not by a DequantizeLinear of a quantized tensor: "
                               "the model gives it as float (use --io float)")
    return program.tensors[program.root(call.inputs[0])], writers[0]


def boundary_quantizers(graph: Graph, io: str) -> frozenset[str]:
    """The QuantizeLinear nodes of the graph's inputs that quantized_io takes out of the
    program (the caller writes their outputs), named before lowering: the banding pass
    keeps them whole."""
    if io == "float":
        return frozenset()
    return frozenset(n.name for n in graph.nodes
                     if is_quantize(n) and n.inputs[0] in graph.inputs)


def quantized_io(program: Program, io: str) -> Program:
    """The program of --io quantized or both: quantized inputs and outputs, in the arena,
    without the boundary conversions (kept in `boundary` for --io both and verify).
    Raises UnsupportedError naming a graph input or output that has no quantized form."""
    if io == "float":
        return program
    inputs = [_quantized_input(program, t, io) for t in program.inputs]
    outputs = [_quantized_output(program, t, io) for t in program.outputs]
    q_inputs = [q for q, _ in inputs]
    q_outputs = [q for q, _ in outputs]
    for group, what in ((q_inputs, "input"), (q_outputs, "output")):
        names = [q.name for q in group]
        if len(set(names)) != len(names):
            raise UnsupportedError(f"--io {io}: two graph {what}s share one quantized "
                                   "tensor")
    prologue = [i for _, i in inputs if i is not None]
    epilogue = [i for _, i in outputs if i is not None]
    boundary = Boundary(tuple(program.inputs), tuple(program.outputs),
                        tuple(program.calls[i] for i in prologue),
                        tuple(program.calls[i] for i in epilogue))
    dropped = set(prologue) | set(epilogue)
    return replace(program, inputs=q_inputs, outputs=q_outputs,
                   calls=[c for i, c in enumerate(program.calls) if i not in dropped],
                   boundary=boundary, io=io)


@dataclass(frozen=True)
class Entry:
    """An entry point the test harness runs: the tensors it takes and gives."""

    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]
    quantized: bool  # the quantized tensors of --io quantized|both
    cflags: tuple[str, ...] = ()  # what selects it in the harness


def harness_entries(program: Program) -> list[Entry]:
    """Every entry point of the program, in the order verify runs them."""
    if program.io == "float":
        return [Entry(tuple(program.inputs), tuple(program.outputs), False)]
    quantized = Entry(tuple(program.inputs), tuple(program.outputs), True)
    if program.io == "quantized" or program.boundary is None:
        return [quantized]
    return [Entry(program.boundary.float_inputs, program.boundary.float_outputs, False),
            replace(quantized, cflags=("-DQ8_HARNESS_QUANTIZED",))]


def dequantized(q: NDArray[Any], tensor: Tensor) -> NDArray[np.float32]:
    """(q - zero_point) * scale in float32, one rounding: the float value ORT quantizes
    back to q exactly (|q - zero_point| < 2^9, so the quotient is within 2^-13 of it)."""
    quant = tensor.quant
    assert quant is not None
    shape = [1] * q.ndim
    if quant.axis is not None:
        shape[quant.axis] = -1
    scale = np.asarray(quant.scale, dtype=np.float32).reshape(shape)
    zero_point = np.asarray(quant.zero_point, dtype=np.int32).reshape(shape)
    return ((q.astype(np.int32) - zero_point).astype(np.float32) * scale).astype(np.float32)


def graph_feeds(program: Program, entry: Entry,
                samples: Sequence[Mapping[str, NDArray[Any]]]) -> list[dict[str, NDArray[Any]]]:
    """What ORT takes for `samples` of `entry`: the graph's own inputs (for the quantized
    entry point, each quantized input dequantized)."""
    if not entry.quantized or program.boundary is None:
        return [{t.name: np.asarray(s[t.name]).astype(np.dtype(t.dtype)) for t in entry.inputs}
                for s in samples]
    pairs = list(zip(program.boundary.float_inputs, entry.inputs, strict=True))
    return [{f.name: (np.asarray(s[q.name]).astype(np.dtype(q.dtype)) if f.name == q.name
                      else dequantized(np.asarray(s[q.name]).astype(np.dtype(q.dtype)), q))
             for f, q in pairs} for s in samples]
