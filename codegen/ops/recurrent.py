"""GRU and LSTM on float32: ORT's quantizer leaves recurrent operators in float, so
DequantizeLinear -> (Transpose) -> GRU -> ... -> QuantizeLinear runs ORT's DeepCPU GRU
(deep_cpu_gru.cc, rnn_helpers.cc), a float island computed here in its order
(runtime_c/recurrent_f32.c). Supported: layout 0, batch 1, forward, reverse and
bidirectional, linear_before_reset 0 and 1, the default activations (Sigmoid, Tanh),
no clip, outputs Y and/or Y_h, initial_h a constant or absent, sequence_lens absent or
a constant equal to seq_length. W, R and B are float initializers, which ORT pre-packs
(its packed SGEMM is the arithmetic reproduced); computed weights are refused.
LSTM likewise (uni_directional_lstm.cc): Y, Y_h, Y_c in any combination, initial_h and
initial_c constant or absent; refused: peepholes, input_forget, clip, other activations."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import ModelError, UnsupportedError
from ..ir import Graph, Node, Tensor
from ..program import CArray, CRef, CStruct, KernelCall, Lowered
from . import Inferred, LoweringOptions, OpDef, register
from ._common import attr_int, attr_str, reject_unknown_attrs
from ._float import FLOAT_TYPES, float_input, refuse

F32 = np.float32
SOURCES = ("recurrent_f32.c",)
DIRECTIONS = {"forward": 1, "reverse": 1, "bidirectional": 2}


@dataclass(frozen=True)
class RecurrentShape:
    """What GRU and LSTM share: parsed once from the attributes and the inputs."""
    seq_length: int
    input_size: int
    hidden_size: int
    directions: int
    reverse: bool


@dataclass(frozen=True)
class GruSpec(RecurrentShape):
    linear_before_reset: bool


@dataclass(frozen=True)
class LstmSpec(RecurrentShape):
    pass


def float_constant(node: Node, graph: Graph, index: int, what: str,
                   shape: tuple[int, ...]) -> NDArray[Any]:
    name = node.inputs[index]
    if name not in graph.constants:
        raise refuse(node, f"{what} '{name}' is not a float initializer: ONNX Runtime "
                     f"pre-packs constant {node.op_type} weights, and its unpacked SGEMM for "
                     "computed (e.g. dequantized) weights adds in another order, not "
                     "reproduced")
    value = graph.constants[name]
    if value.dtype != np.float32:
        raise ModelError(f"{node.describe()}: {what} '{name}' is {value.dtype}; expected "
                         "float32")
    if tuple(value.shape) != shape:
        raise ModelError(f"{node.describe()}: {what} has shape {list(value.shape)}; expected "
                         f"{list(shape)}")
    return value


def parse_recurrent(node: Node, graph: Graph, gates: int, activations: Sequence[str],
                    initial_states: Sequence[tuple[int, str]]) -> RecurrentShape:
    """Checks the attributes and inputs that GRU (3 gates) and LSTM (4 gates) share:
    ORT's DeepCPU arithmetic is reproduced for the default activations, no clip, layout 0,
    batch 1, constant weights and constant (or absent) initial states."""
    if "clip" in node.attrs or "activation_alpha" in node.attrs or \
            "activation_beta" in node.attrs:
        raise UnsupportedError(f"{node.describe()}: clip and activation_alpha/beta are not "
                               "supported (ORT's arithmetic for them is not reproduced)")
    if attr_int(node, "layout", 0) != 0:
        raise UnsupportedError(f"{node.describe()}: layout 1 is not supported")
    direction = attr_str(node, "direction", "forward")
    if direction not in DIRECTIONS:
        raise ModelError(f"{node.describe()}: direction '{direction}'")
    nd = DIRECTIONS[direction]
    given = node.attrs.get("activations")
    if given is not None and [str(a).lower() for a in given] != list(activations) * nd:
        default = ", ".join(a.capitalize() for a in activations)
        raise UnsupportedError(f"{node.describe()}: activations {list(given)}; only the "
                               f"default ({default}) is supported")
    x = float_input(node, graph, 0, "X")
    if len(x.shape) != 3:
        raise ModelError(f"{node.describe()}: X must be 3-D")
    seq, batch, input_size = x.shape
    if batch != 1:
        raise UnsupportedError(f"{node.describe()}: a batch of {batch}; 1 is supported")
    hidden = attr_int(node, "hidden_size", 0)
    if hidden < 1:
        raise ModelError(f"{node.describe()}: hidden_size must be given and positive")
    float_constant(node, graph, 1, "W", (nd, gates * hidden, input_size))
    float_constant(node, graph, 2, "R", (nd, gates * hidden, hidden))
    if node.input(3) is not None:
        float_constant(node, graph, 3, "B", (nd, 2 * gates * hidden))
    if node.input(4) is not None:
        lens = graph.constants.get(node.inputs[4])
        if lens is None or lens.reshape(-1).tolist() != [seq]:
            raise UnsupportedError(f"{node.describe()}: sequence_lens must be absent or a "
                                   f"constant [{seq}]")
    for index, what in initial_states:
        if node.input(index) is not None:
            if node.inputs[index] not in graph.constants:
                raise UnsupportedError(f"{node.describe()}: {what} '{node.inputs[index]}' "
                                       "must be a constant")
            float_constant(node, graph, index, what, (nd, 1, hidden))
    return RecurrentShape(seq, input_size, hidden, nd, direction == "reverse")


def recurrent_outputs(node: Node, shape: RecurrentShape, count: int) -> list[Tensor]:
    """Y [seq, directions, 1, hidden] then the final states [directions, 1, hidden]."""
    seq, nd, hidden = shape.seq_length, shape.directions, shape.hidden_size
    shapes = ((seq, nd, 1, hidden),) + ((nd, 1, hidden),) * (count - 1)
    outputs = [Tensor(name, "float32", out_shape)
               for name, out_shape in zip(node.outputs, shapes, strict=False) if name]
    if not outputs:
        raise ModelError(f"{node.describe()}: no output is used")
    return outputs


def infer_gru(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, {"activation_alpha", "activation_beta", "activations", "clip",
                                "direction", "hidden_size", "layout",
                                "linear_before_reset"})
    lbr = attr_int(node, "linear_before_reset", 0)
    if lbr not in (0, 1):
        raise ModelError(f"{node.describe()}: linear_before_reset {lbr}")
    shape = parse_recurrent(node, graph, 3, ("sigmoid", "tanh"), ((5, "initial_h"),))
    return Inferred(recurrent_outputs(node, shape, 2),
                    spec=GruSpec(**vars(shape), linear_before_reset=bool(lbr)))


def constant_arrays(node: Node, graph: Graph,
                    named: dict[int, str]) -> tuple[tuple[CArray, ...], list[tuple[str, Any]]]:
    """The weights and initial states as float arrays, and the params fields that point at
    them (NULL for an absent optional input)."""
    arrays = tuple(CArray(c_name, "float",
                          graph.constants[node.inputs[i]].astype(F32).reshape(-1))
                   for i, c_name in named.items() if node.input(i) is not None)
    fields = [(c_name, CRef(c_name) if node.input(i) is not None else None)
              for i, c_name in named.items()]
    return arrays, fields


def lower_gru(node: Node, graph: Graph, spec: object,
              options: LoweringOptions) -> Sequence[Lowered]:
    assert isinstance(spec, GruSpec)
    h, nd = spec.hidden_size, spec.directions
    arrays, fields = constant_arrays(node, graph, {1: "w", 2: "r", 3: "b", 5: "initial_h"})
    params = CStruct("q8_gru_f32_params", (
        ("seq_length", spec.seq_length), ("input_size", spec.input_size), ("hidden_size", h),
        ("directions", nd), ("reverse", int(spec.reverse)),
        ("linear_before_reset", int(spec.linear_before_reset)), *fields))
    y = node.outputs[0] if len(node.outputs) > 0 and node.outputs[0] else None
    y_h = node.outputs[1] if len(node.outputs) > 1 and node.outputs[1] else None
    function = "q8_gru_f32" if y and y_h else "q8_gru_f32_y" if y else "q8_gru_f32_h"
    outs = tuple(n for n in (y, y_h) if n)
    macs = spec.seq_length * nd * 3 * h * (spec.input_size + h)
    return [KernelCall(function, node.name, (node.inputs[0],), outs, params, arrays,
                       SOURCES, macs, scratch_bytes=4 * 6 * h)]


register(OpDef("GRU", "", infer_gru, lower_gru, versions=(7, 14, 22), data_dtypes=FLOAT_TYPES,
               float_island=True))


# LSTM: the same DeepCPU structure (uni_directional_lstm.cc), gates i, o, f, c.
LSTM_OUTPUTS = ("y", "h", "c")


def infer_lstm(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, {"activation_alpha", "activation_beta", "activations", "clip",
                                "direction", "hidden_size", "input_forget", "layout"})
    if attr_int(node, "input_forget", 0) != 0:
        raise UnsupportedError(f"{node.describe()}: input_forget is not supported")
    shape = parse_recurrent(node, graph, 4, ("sigmoid", "tanh", "tanh"),
                            ((5, "initial_h"), (6, "initial_c")))
    if node.input(7) is not None:
        raise UnsupportedError(f"{node.describe()}: peepholes (P) are not supported")
    return Inferred(recurrent_outputs(node, shape, 3), spec=LstmSpec(**vars(shape)))


def lower_lstm(node: Node, graph: Graph, spec: object,
               options: LoweringOptions) -> Sequence[Lowered]:
    assert isinstance(spec, LstmSpec)
    h, nd = spec.hidden_size, spec.directions
    arrays, fields = constant_arrays(node, graph, {1: "w", 2: "r", 3: "b", 5: "initial_h",
                                                   6: "initial_c"})
    params = CStruct("q8_lstm_f32_params", (
        ("seq_length", spec.seq_length), ("input_size", spec.input_size), ("hidden_size", h),
        ("directions", nd), ("reverse", int(spec.reverse)), *fields))
    used = [(letter, name) for letter, name in zip(LSTM_OUTPUTS, node.outputs, strict=False)
            if name]
    suffix = "".join(letter for letter, _ in used)
    function = "q8_lstm_f32" if suffix == "yhc" else f"q8_lstm_f32_{suffix}"
    macs = spec.seq_length * nd * 4 * h * (spec.input_size + h)
    return [KernelCall(function, node.name, (node.inputs[0],), tuple(n for _, n in used),
                       params, arrays, SOURCES, macs, scratch_bytes=4 * 6 * h)]


register(OpDef("LSTM", "", infer_lstm, lower_lstm, versions=(7, 14, 22),
               data_dtypes=FLOAT_TYPES, float_island=True))
