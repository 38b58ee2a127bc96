"""GRU and LSTM on float32: ORT's quantizer leaves recurrent operators in float, so
DequantizeLinear -> (Transpose) -> GRU -> ... -> QuantizeLinear runs ORT's DeepCPU GRU
(deep_cpu_gru.cc, rnn_helpers.cc), a float island computed here in its order
(runtime_c/recurrent_f32.c). Supported: layout 0, batch 1, forward, reverse and
bidirectional, linear_before_reset 0 and 1, clip, and every activation ORT supports,
each with its alpha and beta (Sigmoid and Tanh by MLAS and rnn_helpers' rational tanh,
Relu, Affine, LeakyRelu, ThresholdedRelu, HardSigmoid, Softsign, and ScaledTanh, Elu,
Softplus by glibc's expf and logf: ORT's own gate functions for each), outputs Y
and/or Y_h, initial_h a constant or absent, sequence_lens absent or a constant equal to
seq_length. W, R and B are float initializers, which ORT pre-packs (its packed SGEMM is
the arithmetic reproduced); computed weights are refused. LSTM likewise
(uni_directional_lstm.cc): Y, Y_h, Y_c in any combination, initial_h and initial_c
constant or absent; refused: peepholes, input_forget. com.microsoft DynamicQuantizeLSTM
(quantize_dynamic's LSTM) is the same LSTM with 8-bit W and R whose products ORT
quantizes at run time: the input once for the whole sequence, h at each step."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from codegen.core.ir import Graph, Node, Tensor
from codegen.core.program import CArray, CFloat, CRef, CStruct, KernelCall, Lowered
from codegen.errors import ModelError, UnsupportedError

from . import Inferred, LoweringOptions, OpDef, register
from ._common import attr_float, attr_int, attr_str, reject_unknown_attrs
from ._float import FLOAT_TYPES, float_input, refuse
from .kernels import kernel

F32 = np.float32
SOURCES = ("recurrent_f32.c", "libm.c")
DIRECTIONS = {"forward": 1, "reverse": 1, "bidirectional": 2}


@dataclass(frozen=True)
class RecurrentShape:
    """What GRU and LSTM share: parsed once from the attributes and the inputs."""
    seq_length: int
    input_size: int
    hidden_size: int
    directions: int
    reverse: bool
    activations: tuple[tuple[int, float, float], ...]  # (Q8_RNN_* kind, alpha, beta)
    clip: float
    # The weights and initial states given, by input index (W 1, R 2, B 3, initial_h 5,
    # initial_c 6): float32 constants of the checked shapes.
    constants: tuple[tuple[int, NDArray[Any]], ...]


# runtime_c/recurrent_f32.h's Q8_RNN_* values, by ONNX name (lower case, as ORT compares).
ACTIVATION_KINDS = {"sigmoid": 0, "tanh": 1, "relu": 2, "affine": 3, "leakyrelu": 4,
                    "thresholdedrelu": 5, "hardsigmoid": 6, "softsign": 7, "scaledtanh": 8,
                    "elu": 9, "softplus": 10}
# ORT's NameToArgUsageMap and NameToArgDefaultsMap: which take alpha and beta, and their
# defaults (0 otherwise).
ACTIVATION_ARGS = {"affine": (True, True), "leakyrelu": (True, False),
                   "thresholdedrelu": (True, False), "scaledtanh": (True, True),
                   "hardsigmoid": (True, True), "elu": (True, False)}
ACTIVATION_DEFAULTS = {"leakyrelu": (0.01, 0.0), "hardsigmoid": (0.2, 0.5), "elu": (1.0, 0.0)}
# ORT computes these with the C library's expf (and Softplus with its logf), reproduced
# as glibc computes them (runtime_c/q8_libm.h); ScaledTanh through ORT's own sigmoid.
EXP_ACTIVATIONS = frozenset({"scaledtanh", "elu", "softplus"})
FLT_MAX = float(np.finfo(np.float32).max)


def parse_activations(node: Node, names: Sequence[str]
                      ) -> tuple[tuple[int, float, float], ...]:
    """Each activation's kind, alpha and beta, taking activation_alpha and
    activation_beta in order for the functions that use them, as ORT does."""
    alphas = [float(a) for a in node.attrs.get("activation_alpha", [])]
    betas = [float(b) for b in node.attrs.get("activation_beta", [])]
    parsed = []
    for name in names:
        if name not in ACTIVATION_KINDS:
            raise ModelError(f"{node.describe()}: activation '{name}' is not one of ONNX's")
        needs_alpha, needs_beta = ACTIVATION_ARGS.get(name, (False, False))
        default_alpha, default_beta = ACTIVATION_DEFAULTS.get(name, (0.0, 0.0))
        alpha = (alphas.pop(0) if alphas else default_alpha) if needs_alpha else 0.0
        beta = (betas.pop(0) if betas else default_beta) if needs_beta else 0.0
        parsed.append((ACTIVATION_KINDS[name], float(F32(alpha)), float(F32(beta))))
    return tuple(parsed)


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
                    initial_states: Sequence[tuple[int, str]],
                    float_weights: bool = True) -> RecurrentShape:
    """Checks the attributes and inputs that GRU (3 gates) and LSTM (4 gates) share:
    ORT's DeepCPU arithmetic is reproduced for layout 0, batch 1, constant weights and
    constant (or absent) initial states, clip, and every activation but the three ORT
    computes with exp."""
    if attr_int(node, "layout", 0) != 0:
        raise UnsupportedError(f"{node.describe()}: layout 1 is not supported")
    direction = attr_str(node, "direction", "forward")
    if direction not in DIRECTIONS:
        raise ModelError(f"{node.describe()}: direction '{direction}'")
    nd = DIRECTIONS[direction]
    given = node.attrs.get("activations")
    names = [str(a).lower() for a in given] if given is not None else list(activations) * nd
    if len(names) != len(activations) * nd:
        raise ModelError(f"{node.describe()}: {len(names)} activations; expected "
                         f"{len(activations) * nd}")
    parsed = parse_activations(node, names)
    clip = attr_float(node, "clip", FLT_MAX)
    if not clip > 0.0:
        raise ModelError(f"{node.describe()}: clip {clip} must be positive")
    x = float_input(node, graph, 0, "X")
    if len(x.shape) != 3:
        raise ModelError(f"{node.describe()}: X must be 3-D")
    seq, batch, input_size = x.shape
    if batch != 1:
        raise UnsupportedError(f"{node.describe()}: a batch of {batch}; 1 is supported")
    hidden = attr_int(node, "hidden_size", 0)
    if hidden < 1:
        raise ModelError(f"{node.describe()}: hidden_size must be given and positive")
    constants = {}
    if float_weights:
        constants = {1: float_constant(node, graph, 1, "W", (nd, gates * hidden, input_size)),
                     2: float_constant(node, graph, 2, "R", (nd, gates * hidden, hidden))}
    if node.input(3) is not None:
        constants[3] = float_constant(node, graph, 3, "B", (nd, 2 * gates * hidden))
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
            constants[index] = float_constant(node, graph, index, what, (nd, 1, hidden))
    return RecurrentShape(seq, input_size, hidden, nd, direction == "reverse", parsed,
                          float(F32(clip)), tuple(sorted(constants.items())))


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


def constant_arrays(spec: RecurrentShape,
                    named: dict[int, str]) -> tuple[tuple[CArray, ...], list[tuple[str, Any]]]:
    """The weights and initial states as float arrays, and the params fields that point at
    them (NULL for an absent optional input)."""
    given = dict(spec.constants)
    arrays = tuple(CArray(c_name, "float", given[i].astype(F32).reshape(-1))
                   for i, c_name in named.items() if i in given)
    fields = [(c_name, CRef(c_name) if i in given else None)
              for i, c_name in named.items()]
    return arrays, fields


def activation_arrays(spec: RecurrentShape) -> tuple[CArray, ...]:
    """The activations' kinds, alphas and betas, [directions][functions] each."""
    kinds, alphas, betas = zip(*spec.activations, strict=True)
    return (CArray("activations", "int32_t", np.array(kinds, np.int32)),
            CArray("alphas", "float", np.array(alphas, F32)),
            CArray("betas", "float", np.array(betas, F32)))


ACTIVATION_FIELDS = (("activations", CRef("activations")), ("alphas", CRef("alphas")),
                     ("betas", CRef("betas")))


def lower_gru(node: Node, graph: Graph, spec: GruSpec,
              options: LoweringOptions) -> Sequence[Lowered]:
    h, nd = spec.hidden_size, spec.directions
    arrays, fields = constant_arrays(spec, {1: "w", 2: "r", 3: "b", 5: "initial_h"})
    params = CStruct("q8_gru_f32_params", (
        ("seq_length", spec.seq_length), ("input_size", spec.input_size), ("hidden_size", h),
        ("directions", nd), ("reverse", int(spec.reverse)),
        ("linear_before_reset", int(spec.linear_before_reset)), *fields,
        ("clip", CFloat(spec.clip)), *ACTIVATION_FIELDS))
    y = node.outputs[0] if len(node.outputs) > 0 and node.outputs[0] else None
    y_h = node.outputs[1] if len(node.outputs) > 1 and node.outputs[1] else None
    function = "q8_gru_f32" if y and y_h else "q8_gru_f32_y" if y else "q8_gru_f32_h"
    outs = tuple(n for n in (y, y_h) if n)
    macs = spec.seq_length * nd * 3 * h * (spec.input_size + h)
    return [KernelCall(function, node.name, (node.inputs[0],), outs, params,
                       arrays + activation_arrays(spec), SOURCES, macs,
                       scratch_bytes=kernel("gru_f32").scratch_bytes(params))]


def exp_traits(node: Node, graph: Graph) -> frozenset[str]:
    """"expf" where an activation is one ORT computes with the C library's expf."""
    uses_exp = any(str(a).lower() in EXP_ACTIVATIONS for a in node.attrs.get("activations", ()))
    return frozenset({"expf"}) if uses_exp else frozenset()


register(OpDef("GRU", "", infer_gru, lower_gru, versions=(7, 14, 22), data_dtypes=FLOAT_TYPES,
               float_island=True, ort_traits=exp_traits))


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


@dataclass(frozen=True)
class QuantizedLstmSpec(LstmSpec):
    """DynamicQuantizeLSTM: W and R as their 8-bit weights in the float LSTM's layout
    [directions][4 * hidden][input or hidden], with their one zero point each, and their
    scales per row."""

    w_q: NDArray[Any] | None = None
    w_zero_point: int = 0
    w_scale: NDArray[np.float32] | None = None
    r_q: NDArray[Any] | None = None
    r_zero_point: int = 0
    r_scale: NDArray[np.float32] | None = None


def quantized_weights(node: Node, graph: Graph, index: int, scale_index: int, what: str,
                      shape: tuple[int, int, int]) -> tuple[NDArray[Any], int,
                                                            NDArray[np.float32]]:
    """W (or R) [directions][k][4 * hidden], int8 or uint8, with its scale and zero point
    (inputs 8, 9 for W; 10, 11 for R), per direction or per direction and gate row."""
    nd, _k, rows = shape
    name = node.inputs[index]
    weights = graph.constants.get(name)
    if weights is None:
        raise refuse(node, f"{what} '{name}' must be a constant")
    if weights.dtype not in (np.int8, np.uint8) or tuple(weights.shape) != shape:
        raise ModelError(f"{node.describe()}: {what} must be int8 or uint8 of shape "
                         f"{list(shape)}; it is {weights.dtype} {list(weights.shape)}")
    scale_name, zp_name = node.input(scale_index), node.input(scale_index + 1)
    scale = graph.constants.get(scale_name) if scale_name else None
    if scale is None or scale.dtype != np.float32 or scale.shape not in ((nd,), (nd, rows)):
        raise refuse(node, f"{what}_scale must be a float32 constant of shape [{nd}] or "
                     f"[{nd}, {rows}]")
    zp = graph.constants.get(zp_name) if zp_name else np.zeros(scale.shape, weights.dtype)
    if zp is None or zp.dtype != weights.dtype or zp.shape != scale.shape:
        raise refuse(node, f"{what}_zero_point must be a constant of {what}'s type and "
                     f"{what}_scale's shape")
    if zp.size and np.any(zp != zp.reshape(-1)[0]):
        raise ModelError(f"{node.describe()}: {what}_zero_point holds several values; "
                         "ONNX Runtime requires one (\"must be constant\")")
    zero_point = int(zp.reshape(-1)[0]) if zp.size else 0
    if weights.dtype == np.int8 and zero_point != 0:
        raise ModelError(f"{node.describe()}: {what}_zero_point is {zero_point}; ONNX Runtime "
                         "requires 0 for int8 weights")
    return (np.ascontiguousarray(weights.transpose(0, 2, 1)), zero_point,
            np.broadcast_to(scale.reshape(nd, -1), (nd, rows)).astype(F32))


# Each term of a quantized product is at most 255 * 255: int32 holds this many exactly.
MAX_EXACT_TERMS = (2**31 - 1) // (255 * 255)


def infer_dynamic_quantize_lstm(node: Node, graph: Graph) -> Inferred:
    """com.microsoft DynamicQuantizeLSTM (quantize_dynamic's LSTM): the float LSTM with
    8-bit W and R, its products quantized at run time (runtime_c/recurrent_f32.c)."""
    reject_unknown_attrs(node, {"activation_alpha", "activation_beta", "activations", "clip",
                                "direction", "hidden_size", "input_forget"})
    if attr_int(node, "input_forget", 0) != 0:
        raise UnsupportedError(f"{node.describe()}: input_forget is not supported")
    shape = parse_recurrent(node, graph, 4, ("sigmoid", "tanh", "tanh"),
                            ((5, "initial_h"), (6, "initial_c")), float_weights=False)
    if node.input(7) is not None:
        raise UnsupportedError(f"{node.describe()}: peepholes (P) are not supported")
    nd, h = shape.directions, shape.hidden_size
    if max(shape.input_size, h) > MAX_EXACT_TERMS:
        raise UnsupportedError(f"{node.describe()}: products of more than {MAX_EXACT_TERMS} "
                               "terms can overflow the int32 sum")
    w_q, w_zp, w_scale = quantized_weights(node, graph, 1, 8, "W",
                                           (nd, shape.input_size, 4 * h))
    r_q, r_zp, r_scale = quantized_weights(node, graph, 2, 10, "R", (nd, h, 4 * h))
    if graph.constants[node.inputs[1]].dtype != graph.constants[node.inputs[2]].dtype:
        raise ModelError(f"{node.describe()}: W and R must have one type")
    spec = QuantizedLstmSpec(**vars(shape), w_q=w_q, w_zero_point=w_zp, w_scale=w_scale,
                             r_q=r_q, r_zero_point=r_zp, r_scale=r_scale)
    return Inferred(recurrent_outputs(node, shape, 3), spec=spec)


def lower_lstm(node: Node, graph: Graph, spec: LstmSpec,
               options: LoweringOptions) -> Sequence[Lowered]:
    h, nd = spec.hidden_size, spec.directions
    arrays, fields = constant_arrays(spec, {1: "w", 2: "r", 3: "b", 5: "initial_h",
                                            6: "initial_c"})
    quantized: list[tuple[str, Any]] = [
        ("w_q", None), ("r_q", None), ("weights_signed", 0), ("w_zero_point", 0),
        ("r_zero_point", 0), ("w_scale", None), ("r_scale", None)]
    if isinstance(spec, QuantizedLstmSpec):
        assert spec.w_q is not None and spec.r_q is not None
        assert spec.w_scale is not None and spec.r_scale is not None
        ctype = "int8_t" if spec.w_q.dtype == np.int8 else "uint8_t"
        arrays += (CArray("w_q", ctype, spec.w_q.reshape(-1)),
                   CArray("r_q", ctype, spec.r_q.reshape(-1)),
                   CArray("w_scale", "float", spec.w_scale.reshape(-1)),
                   CArray("r_scale", "float", spec.r_scale.reshape(-1)))
        quantized = [("w_q", CRef("w_q")), ("r_q", CRef("r_q")),
                     ("weights_signed", int(spec.w_q.dtype == np.int8)),
                     ("w_zero_point", spec.w_zero_point), ("r_zero_point", spec.r_zero_point),
                     ("w_scale", CRef("w_scale")), ("r_scale", CRef("r_scale"))]
    params = CStruct("q8_lstm_f32_params", (
        ("seq_length", spec.seq_length), ("input_size", spec.input_size), ("hidden_size", h),
        ("directions", nd), ("reverse", int(spec.reverse)), *fields,
        ("clip", CFloat(spec.clip)), *ACTIVATION_FIELDS, *quantized))
    used = [(letter, name) for letter, name in zip(LSTM_OUTPUTS, node.outputs, strict=False)
            if name]
    suffix = "".join(letter for letter, _ in used)
    function = "q8_lstm_f32" if suffix == "yhc" else f"q8_lstm_f32_{suffix}"
    macs = spec.seq_length * nd * 4 * h * (spec.input_size + h)
    return [KernelCall(function, node.name, (node.inputs[0],), tuple(n for _, n in used),
                       params, arrays + activation_arrays(spec), SOURCES, macs,
                       scratch_bytes=kernel("lstm_f32").scratch_bytes(params))]


register(OpDef("LSTM", "", infer_lstm, lower_lstm, versions=(7, 14, 22),
               data_dtypes=FLOAT_TYPES, float_island=True, ort_traits=exp_traits))


def lstm_quantized_values(node: Node, graph: Graph) -> int:
    """Per direction: the whole input once, then h at every step."""
    seq, _, input_size = graph.tensors[node.inputs[0]].shape
    directions = DIRECTIONS[attr_str(node, "direction", "forward")]
    return directions * seq * (input_size + attr_int(node, "hidden_size", 0))


register(OpDef("DynamicQuantizeLSTM", "com.microsoft", infer_dynamic_quantize_lstm,
               lower_lstm, data_dtypes=FLOAT_TYPES, float_island=True,
               ort_traits=exp_traits, runtime_quantized=lstm_quantized_values))
