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
class GruSpec:
    seq_length: int
    input_size: int
    hidden_size: int
    directions: int
    reverse: bool
    linear_before_reset: bool


def float_constant(node: Node, graph: Graph, index: int, what: str,
                   shape: tuple[int, ...]) -> NDArray[Any]:
    name = node.inputs[index]
    if name not in graph.constants:
        raise refuse(node, f"{what} '{name}' is not a float initializer: ONNX Runtime "
                     "pre-packs constant GRU weights, and its unpacked SGEMM for computed "
                     "(e.g. dequantized) weights adds in another order, not reproduced")
    value = graph.constants[name]
    if value.dtype != np.float32:
        raise ModelError(f"{node.describe()}: {what} '{name}' is {value.dtype}; expected "
                         "float32")
    if tuple(value.shape) != shape:
        raise ModelError(f"{node.describe()}: {what} has shape {list(value.shape)}; expected "
                         f"{list(shape)}")
    return value


def infer_gru(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, {"activation_alpha", "activation_beta", "activations", "clip",
                                "direction", "hidden_size", "layout",
                                "linear_before_reset"})
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
    activations = node.attrs.get("activations")
    if activations is not None:
        names = [str(a).lower() for a in activations]
        if names != ["sigmoid", "tanh"] * nd:
            raise UnsupportedError(f"{node.describe()}: activations {list(activations)}; "
                                   "only the default (Sigmoid, Tanh) is supported")
    lbr = attr_int(node, "linear_before_reset", 0)
    if lbr not in (0, 1):
        raise ModelError(f"{node.describe()}: linear_before_reset {lbr}")
    x = float_input(node, graph, 0, "X")
    if len(x.shape) != 3:
        raise ModelError(f"{node.describe()}: X must be 3-D")
    seq, batch, input_size = x.shape
    if batch != 1:
        raise UnsupportedError(f"{node.describe()}: a batch of {batch}; 1 is supported")
    hidden = attr_int(node, "hidden_size", 0)
    if hidden < 1:
        raise ModelError(f"{node.describe()}: hidden_size must be given and positive")
    float_constant(node, graph, 1, "W", (nd, 3 * hidden, input_size))
    float_constant(node, graph, 2, "R", (nd, 3 * hidden, hidden))
    if node.input(3) is not None:
        float_constant(node, graph, 3, "B", (nd, 6 * hidden))
    if node.input(4) is not None:
        lens = graph.constants.get(node.inputs[4])
        if lens is None or lens.reshape(-1).tolist() != [seq]:
            raise UnsupportedError(f"{node.describe()}: sequence_lens must be absent or a "
                                   f"constant [{seq}]")
    if node.input(5) is not None:
        name = node.inputs[5]
        if name not in graph.constants:
            raise UnsupportedError(f"{node.describe()}: initial_h '{name}' must be a "
                                   "constant")
        float_constant(node, graph, 5, "initial_h", (nd, 1, hidden))
    outputs = []
    if len(node.outputs) > 0 and node.outputs[0]:
        outputs.append(Tensor(node.outputs[0], "float32", (seq, nd, 1, hidden)))
    if len(node.outputs) > 1 and node.outputs[1]:
        outputs.append(Tensor(node.outputs[1], "float32", (nd, 1, hidden)))
    if not outputs:
        raise ModelError(f"{node.describe()}: no output is used")
    return Inferred(outputs, spec=GruSpec(seq, input_size, hidden, nd,
                                           direction == "reverse", bool(lbr)))


def lower_gru(node: Node, graph: Graph, spec: object,
              options: LoweringOptions) -> Sequence[Lowered]:
    assert isinstance(spec, GruSpec)
    h, nd = spec.hidden_size, spec.directions
    arrays = [CArray("w", "float", graph.constants[node.inputs[1]].astype(F32).reshape(-1)),
              CArray("r", "float", graph.constants[node.inputs[2]].astype(F32).reshape(-1))]
    if node.input(3) is not None:
        arrays.append(CArray("b", "float",
                             graph.constants[node.inputs[3]].astype(F32).reshape(-1)))
    if node.input(5) is not None:
        arrays.append(CArray("initial_h", "float",
                             graph.constants[node.inputs[5]].astype(F32).reshape(-1)))
    params = CStruct("q8_gru_f32_params", (
        ("seq_length", spec.seq_length), ("input_size", spec.input_size), ("hidden_size", h),
        ("directions", nd), ("reverse", int(spec.reverse)),
        ("linear_before_reset", int(spec.linear_before_reset)),
        ("w", CRef("w")), ("r", CRef("r")),
        ("b", CRef("b") if node.input(3) is not None else None),
        ("initial_h", CRef("initial_h") if node.input(5) is not None else None)))
    y = node.outputs[0] if len(node.outputs) > 0 and node.outputs[0] else None
    y_h = node.outputs[1] if len(node.outputs) > 1 and node.outputs[1] else None
    function = "q8_gru_f32" if y and y_h else "q8_gru_f32_y" if y else "q8_gru_f32_h"
    outs = tuple(n for n in (y, y_h) if n)
    macs = spec.seq_length * nd * 3 * h * (spec.input_size + h)
    return [KernelCall(function, node.name, (node.inputs[0],), outs, params, tuple(arrays),
                       SOURCES, macs, scratch_bytes=4 * 6 * h)]


register(OpDef("GRU", "", infer_gru, lower_gru, versions=(7, 14, 22), data_dtypes=FLOAT_TYPES,
               float_island=True))


# LSTM: the same DeepCPU structure (uni_directional_lstm.cc), gates i, o, f, c.
@dataclass(frozen=True)
class LstmSpec:
    seq_length: int
    input_size: int
    hidden_size: int
    directions: int
    reverse: bool


LSTM_OUTPUTS = ("y", "h", "c")


def infer_lstm(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, {"activation_alpha", "activation_beta", "activations", "clip",
                                "direction", "hidden_size", "input_forget", "layout"})
    if "clip" in node.attrs or "activation_alpha" in node.attrs or \
            "activation_beta" in node.attrs:
        raise UnsupportedError(f"{node.describe()}: clip and activation_alpha/beta are not "
                               "supported (ORT's arithmetic for them is not reproduced)")
    if attr_int(node, "layout", 0) != 0:
        raise UnsupportedError(f"{node.describe()}: layout 1 is not supported")
    if attr_int(node, "input_forget", 0) != 0:
        raise UnsupportedError(f"{node.describe()}: input_forget is not supported")
    direction = attr_str(node, "direction", "forward")
    if direction not in DIRECTIONS:
        raise ModelError(f"{node.describe()}: direction '{direction}'")
    nd = DIRECTIONS[direction]
    activations = node.attrs.get("activations")
    if activations is not None and \
            [str(a).lower() for a in activations] != ["sigmoid", "tanh", "tanh"] * nd:
        raise UnsupportedError(f"{node.describe()}: activations {list(activations)}; "
                               "only the default (Sigmoid, Tanh, Tanh) is supported")
    x = float_input(node, graph, 0, "X")
    if len(x.shape) != 3:
        raise ModelError(f"{node.describe()}: X must be 3-D")
    seq, batch, input_size = x.shape
    if batch != 1:
        raise UnsupportedError(f"{node.describe()}: a batch of {batch}; 1 is supported")
    hidden = attr_int(node, "hidden_size", 0)
    if hidden < 1:
        raise ModelError(f"{node.describe()}: hidden_size must be given and positive")
    float_constant(node, graph, 1, "W", (nd, 4 * hidden, input_size))
    float_constant(node, graph, 2, "R", (nd, 4 * hidden, hidden))
    if node.input(3) is not None:
        float_constant(node, graph, 3, "B", (nd, 8 * hidden))
    if node.input(4) is not None:
        lens = graph.constants.get(node.inputs[4])
        if lens is None or lens.reshape(-1).tolist() != [seq]:
            raise UnsupportedError(f"{node.describe()}: sequence_lens must be absent or a "
                                   f"constant [{seq}]")
    for index, what in ((5, "initial_h"), (6, "initial_c")):
        if node.input(index) is not None:
            if node.inputs[index] not in graph.constants:
                raise UnsupportedError(f"{node.describe()}: {what} '{node.inputs[index]}' "
                                       "must be a constant")
            float_constant(node, graph, index, what, (nd, 1, hidden))
    if node.input(7) is not None:
        raise UnsupportedError(f"{node.describe()}: peepholes (P) are not supported")
    shapes = ((seq, nd, 1, hidden), (nd, 1, hidden), (nd, 1, hidden))
    outputs = [Tensor(name, "float32", shape)
               for name, shape in zip(node.outputs, shapes, strict=False) if name]
    if not outputs:
        raise ModelError(f"{node.describe()}: no output is used")
    return Inferred(outputs, spec=LstmSpec(seq, input_size, hidden, nd,
                                            direction == "reverse"))


def lower_lstm(node: Node, graph: Graph, spec: object,
               options: LoweringOptions) -> Sequence[Lowered]:
    assert isinstance(spec, LstmSpec)
    h, nd = spec.hidden_size, spec.directions
    named = {1: "w", 2: "r", 3: "b", 5: "initial_h", 6: "initial_c"}
    arrays = [CArray(c_name, "float", graph.constants[node.inputs[i]].astype(F32).reshape(-1))
              for i, c_name in named.items() if node.input(i) is not None]
    present = {c_name for i, c_name in named.items() if node.input(i) is not None}
    params = CStruct("q8_lstm_f32_params", (
        ("seq_length", spec.seq_length), ("input_size", spec.input_size), ("hidden_size", h),
        ("directions", nd), ("reverse", int(spec.reverse)),
        *((c_name, CRef(c_name) if c_name in present else None)
          for c_name in ("w", "r", "b", "initial_h", "initial_c"))))
    used = [(letter, name) for letter, name in zip(LSTM_OUTPUTS, node.outputs, strict=False)
            if name]
    suffix = "".join(letter for letter, _ in used)
    function = "q8_lstm_f32" if suffix == "yhc" else f"q8_lstm_f32_{suffix}"
    macs = spec.seq_length * nd * 4 * h * (spec.input_size + h)
    return [KernelCall(function, node.name, (node.inputs[0],), tuple(n for _, n in used),
                       params, tuple(arrays), SOURCES, macs, scratch_bytes=4 * 6 * h)]


register(OpDef("LSTM", "", infer_lstm, lower_lstm, versions=(7, 14, 22),
               data_dtypes=FLOAT_TYPES, float_island=True))
