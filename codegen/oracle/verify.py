"""Compare the generated C with ONNX Runtime, bit for bit.

This is the only module that knows ONNX Runtime exists. ORT is the reference, with one
documented exception: on x86 CPUs without VNNI, ORT's u8 x s8 kernels add pairs of
products with int16 saturation (vpmaddubsw). The generated C computes the exact sum, as
the ONNX specification and ORT on ARM/VNNI do. `verify` probes the local ORT once; when
it saturates, the reference is the same model with its int8 weights moved to uint8
(+128, zero points +128): identical mathematics that ORT computes exactly. Where other
kernels of ORT depend on the CPU (codegen.oracle.cpu), verify notes what may differ here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
import onnx
from numpy.typing import NDArray
from onnx import helper, numpy_helper

from codegen import ops
from codegen.core.ir import QDQ_RANGE, QUANT_RANGE, Graph, Node, Tensor
from codegen.core.pattern import float_nodes
from codegen.errors import Onnx2McuError

from .cpu import SATURATION_ENV as SATURATION_ENV  # re-exported: tests force the probe
from .cpu import CpuProfile, current_profile, differences, family_uses

ORT_LEVELS = {"all": "ORT_ENABLE_ALL", "extended": "ORT_ENABLE_EXTENDED",
              "basic": "ORT_ENABLE_BASIC", "disable": "ORT_DISABLE_ALL"}


class OrtError(Onnx2McuError):
    """ONNX Runtime could not run the model."""


def ort_version() -> str:
    import onnxruntime

    return str(onnxruntime.__version__)


def _session(model: onnx.ModelProto, level: str = "all",
             config: Mapping[str, str] | None = None) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, ORT_LEVELS[level])
    for key, value in (config or {}).items():
        options.add_session_config_entry(key, value)
    try:
        return ort.InferenceSession(model.SerializeToString(), options,
                                    providers=["CPUExecutionProvider"])
    except Exception as exc:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise OrtError(f"ONNX Runtime cannot run this model: {text}") from None


def run_ort(model: onnx.ModelProto, samples: Sequence[Mapping[str, NDArray[Any]]],
            level: str = "all", progress: Callable[[int, int], None] | None = None,
            config: Mapping[str, str] | None = None) -> list[dict[str, NDArray[Any]]]:
    session = _session(model, level, config)
    names = [o.name for o in session.get_outputs()]
    results = []
    for index, sample in enumerate(samples):
        if progress is not None:
            progress(index, len(samples))
        feed = {i.name: sample[i.name] for i in session.get_inputs()}
        try:
            values = session.run(names, feed)
        except Exception as exc:
            raise OrtError(f"ONNX Runtime failed: {str(exc).strip()[:300]}") from None
        results.append({n: np.asarray(v) for n, v in zip(names, values, strict=True)})
    return results


@lru_cache(maxsize=1)
def _probe_saturation() -> bool:
    a = helper.make_tensor_value_info("a", onnx.TensorProto.UINT8, [1, 2])
    y = helper.make_tensor_value_info("y", onnx.TensorProto.INT32, [1, 1])
    b = numpy_helper.from_array(np.full((2, 1), -128, dtype=np.int8), "b")
    graph = helper.make_graph([helper.make_node("MatMulInteger", ["a", "b"], ["y"])], "probe",
                              [a], [y], [b])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    out = run_ort(model, [{"a": np.full((1, 2), 255, dtype=np.uint8)}])[0]["y"]
    return int(out.reshape(-1)[0]) == -32768  # exact: -65280


def cpu_profile() -> CpuProfile:
    """This CPU's profile (codegen.oracle.cpu), its u8 x s8 behaviour measured on the local ORT;
    or the profile ONNX2MCU_CPU_PROFILE forces."""
    return current_profile(_probe_saturation)


def ort_saturates_u8s8() -> bool:
    """Does the local ORT saturate u8 x s8 products in int16 pairs (x86 without VNNI)?
    ONNX2MCU_ORT_U8S8_SATURATES or ONNX2MCU_CPU_PROFILE can force the answer."""
    return cpu_profile().u8s8_saturates


def u8s8_nodes(graph: Graph) -> list[str]:
    """Nodes whose ORT kernel multiplies uint8 activations by int8 weights (the integer
    products, OpDef.product: MLAS's u8 x s8 GEMM)."""
    names = []
    for node in graph.nodes:
        slots = ops.product_slots(node)
        if slots is None:
            continue
        a, b = graph.tensors[node.inputs[slots.a]], graph.tensors[node.inputs[slots.b]]
        if a.dtype == "uint8" and b.dtype == "int8":
            names.append(node.name)
    # DynamicQuantizeLSTM quantizes its float input to uint8 and multiplies by W and R.
    names += [node.name for node in graph.nodes
              if node.op_type == "DynamicQuantizeLSTM" and node.domain == "com.microsoft"
              and graph.tensors[node.inputs[1]].dtype == "int8"]
    return names


def weights_quantized_by_ort(model: onnx.ModelProto, graph: Graph) -> dict[str, Node]:
    """The model's QDQ Conv and Gemm nodes whose float weights ORT quantizes to int8 itself
    (WeightBiasQuantization, codegen.transform.weights) before it fuses a u8 x s8 unit, by
    name, with the fused IR node that holds those int8 weights."""
    initializers = {i.name: i for i in model.graph.initializer}
    fused = {n.name: n for n in graph.nodes if n.name in set(u8s8_nodes(graph))}
    found = {}
    for node in model.graph.node:
        ir = fused.get(node.name)
        float_node = Node(node.name, node.op_type, node.domain, tuple(node.input),
                          tuple(node.output))
        fusion = ops.fusion_of(float_node)
        slots = ops.product_slots(ir) if ir is not None else None
        if node.domain or ir is None or slots is None or fusion is None or \
                ir.op_type != fusion.target or len(node.input) < 2 or \
                ops.weight_bias_axis(float_node) is None:
            continue
        w = initializers.get(node.input[1])
        if w is not None and w.data_type == onnx.TensorProto.FLOAT and \
                tuple(w.dims) == graph.constants[ir.inputs[slots.b]].shape:
            found[node.name] = ir
    return found


def dequantized_u8_weights(node: onnx.NodeProto, graph: Graph, ir: Node,
                           fresh: Callable[[str], str],
                           ) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto]]:
    """Where ORT would quantize float weights to int8 and saturate, give it the same
    integers as uint8 (+128, zero point +128) behind a DequantizeLinear, and the int32
    bias it would compute behind another (scale x_scale * w_scale): the same unit, which
    ORT then fuses as u8 x u8 and computes exactly. `node`'s inputs are redirected."""
    slots = ops.product_slots(ir)
    assert slots is not None
    w_q = graph.constants[ir.inputs[slots.b]]
    w_scale = graph.constants[ir.inputs[slots.b + 1]]
    w_zp = graph.constants[ir.inputs[slots.b_zero_point]]
    names = [fresh(f"{node.name}__w_u8"), fresh(f"{node.name}__w_scale"),
             fresh(f"{node.name}__w_zp_u8")]
    initializers = [numpy_helper.from_array((w_q.astype(np.int16) + 128).astype(np.uint8),
                                            names[0]),
                    numpy_helper.from_array(w_scale.astype(np.float32), names[1]),
                    numpy_helper.from_array((w_zp.astype(np.int16) + 128).astype(np.uint8),
                                            names[2])]
    w_out = fresh(f"{node.name}__w_dq")
    nodes = [helper.make_node("DequantizeLinear", names, [w_out])]
    node.input[1] = w_out
    bias_slot = slots.bias
    if len(node.input) > 2 and node.input[2] and bias_slot is not None and \
            ir.input(bias_slot) is not None:
        bias = graph.constants[ir.inputs[bias_slot]]
        x_scale = graph.constants[ir.inputs[1]].astype(np.float32).reshape(-1)[0]
        b_name, b_scale, b_out = (fresh(f"{node.name}__b_i32"), fresh(f"{node.name}__b_scale"),
                                  fresh(f"{node.name}__b_dq"))
        initializers += [numpy_helper.from_array(bias.astype(np.int32), b_name),
                         numpy_helper.from_array(np.array(x_scale * w_scale.astype(
                             np.float32).reshape(-1)[0], np.float32), b_scale)]
        nodes.append(helper.make_node("DequantizeLinear", [b_name, b_scale], [b_out]))
        node.input[2] = b_out
    return nodes, initializers


def exact_u8s8_model(model: onnx.ModelProto, graph: Graph) -> onnx.ModelProto:
    """The same model with B moved from int8 to uint8 (+128, zero points +128) in every
    u8 x s8 product: the same mathematics, which ORT computes exactly. B is converted by
    a few nodes where the model feeds it in: at the QLinear node of a QOperator model, or
    at the DequantizeLinear in front of the float op of a QDQ model (ORT then fuses a u8 x
    u8 unit). Constant or computed B alike."""
    b_names = set()
    for node in graph.nodes:
        product = ops.product_slots(node)
        if node.name in set(u8s8_nodes(graph)) and product is not None:
            b_names.add(node.inputs[product.b])
    rewritten = onnx.ModelProto()
    rewritten.CopyFrom(model)
    g = rewritten.graph
    taken = {i.name for i in g.initializer} | {o for n in g.node for o in n.output} | {
        i.name for i in g.input}

    def fresh(base: str) -> str:
        name = base
        while name in taken:
            name += "_"
        taken.add(name)
        return name

    shift = fresh("onnx2mcu_u8s8_shift")
    g.initializer.append(numpy_helper.from_array(np.array(128, dtype=np.int32), shift))
    converted: list[onnx.NodeProto] = []
    float_weights = weights_quantized_by_ort(model, graph)
    u8s8 = set(u8s8_nodes(graph))
    for node in g.node:
        if node.op_type == "DynamicQuantizeLSTM" and node.name in u8s8:
            g.initializer.extend(u8_recurrent_weights(node, graph, fresh))
            converted.append(node)
            continue
        if node.name in float_weights:
            nodes, initializers = dequantized_u8_weights(node, graph, float_weights[node.name],
                                                         fresh)
            converted += nodes
            g.initializer.extend(initializers)
            converted.append(node)
            continue
        product = ops.product_slots(Node(node.name, node.op_type, node.domain, (), ()))
        b_slots = (product.b, product.b_zero_point) if product is not None else None
        if node.op_type == "DequantizeLinear" and not node.domain:
            b_slots = (0, 2)
        if b_slots is None or len(node.input) <= b_slots[0] or \
                node.input[b_slots[0]] not in b_names:
            converted.append(node)
            continue
        b_slot, zp_slot = b_slots
        b = node.input[b_slot]
        wide, moved, b_u8 = fresh(f"{b}__i32"), fresh(f"{b}__moved"), fresh(f"{b}__u8")
        converted += [
            helper.make_node("Cast", [b], [wide], to=onnx.TensorProto.INT32),
            helper.make_node("Add", [wide, shift], [moved]),
            helper.make_node("Cast", [moved], [b_u8], to=onnx.TensorProto.UINT8),
        ]
        node.input[b_slot] = b_u8
        while len(node.input) <= zp_slot:
            node.input.append("")
        zp_name = node.input[zp_slot]
        zp = graph.constants[zp_name] if zp_name else np.zeros((), dtype=np.int8)
        new_zp = fresh(f"{zp_name or b}__zp_u8")
        g.initializer.append(numpy_helper.from_array(
            (zp.astype(np.int16) + 128).astype(np.uint8), new_zp))
        node.input[zp_slot] = new_zp
        converted.append(node)
    del g.node[:]
    g.node.extend(converted)
    return rewritten


def u8_recurrent_weights(node: onnx.NodeProto, graph: Graph,
                         fresh: Callable[[str], str]) -> list[onnx.TensorProto]:
    """A DynamicQuantizeLSTM's int8 W and R (inputs 1, 2) and their zero points (9, 11) as
    uint8 initializers, + 128 each: the node now reads those."""
    initializers = []
    for w_slot, zp_slot in ((1, 9), (2, 11)):
        w = graph.constants[node.input[w_slot]]
        zp_name = node.input[zp_slot] if len(node.input) > zp_slot else ""
        zp = graph.constants[zp_name] if zp_name else np.zeros((), np.int8)
        while len(node.input) <= zp_slot:
            node.input.append("")
        for slot, value in ((w_slot, w), (zp_slot, zp)):
            name = fresh(f"{node.input[slot] or node.input[w_slot]}__u8")
            initializers.append(numpy_helper.from_array(
                (value.astype(np.int16) + 128).astype(np.uint8), name))
            node.input[slot] = name
    return initializers


# ---------------------------------------------------------------- inputs


def random_inputs(inputs: Sequence[Tensor], count: int, seed: int,
                  quantized_as: Mapping[str, str] | None = None
                  ) -> list[dict[str, NDArray[Any]]]:
    """Random inputs that cover each input's whole quantized range, and a little beyond;
    `quantized_as`: the integer type each float input is quantized to (by default, 8
    bits)."""
    rng = np.random.default_rng(seed)
    samples = []
    for _ in range(count):
        sample: dict[str, NDArray[Any]] = {}
        for t in inputs:
            sample[t.name] = _random_tensor(t, rng, (quantized_as or {}).get(t.name))
        samples.append(sample)
    return samples


def input_quantizations(graph: Graph) -> dict[str, str]:
    """The integer type each graph input is quantized to by a QuantizeLinear reading it."""
    inputs = set(graph.inputs)
    return {n.inputs[0]: graph.tensors[n.outputs[0]].dtype for n in graph.nodes
            if n.op_type == "QuantizeLinear" and not n.domain and n.inputs[0] in inputs}


def _random_tensor(t: Tensor, rng: np.random.Generator,
                   quantized_as: str | None) -> NDArray[Any]:
    if t.dtype in QDQ_RANGE:
        lo, hi = QDQ_RANGE[t.dtype]
        return rng.integers(lo, hi + 1, size=t.shape).astype(t.dtype)
    if t.dtype == "int32":
        return rng.integers(-(2**20), 2**20, size=t.shape).astype(np.int32)
    if t.quant is None:
        return rng.standard_normal(t.shape).astype(np.float32)
    scale = np.array(t.quant.scale, dtype=np.float32)
    zp = np.array(t.quant.zero_point, dtype=np.float64)
    if t.quant.axis is not None:
        bshape = [1] * len(t.shape)
        bshape[t.quant.axis] = -1
        scale, zp = scale.reshape(bshape), zp.reshape(bshape)
    # Quantized values from -130 to 258 cover both 8-bit ranges and saturation (a 16-bit
    # type's range likewise); a third of the values sit exactly on .5 rounding boundaries.
    lo, hi = (-130, 258)
    if quantized_as in QDQ_RANGE and quantized_as not in QUANT_RANGE:
        lo, hi = QDQ_RANGE[quantized_as][0] - 2, QDQ_RANGE[quantized_as][1] + 3
    q = rng.integers(lo, hi + 1, size=t.shape).astype(np.float64)
    q = np.where(rng.random(t.shape) < 0.33, q + 0.5, q + rng.random(t.shape) - 0.5)
    return ((q - zp) * scale).astype(np.float32)


# ---------------------------------------------------------------- comparison


@dataclass(frozen=True)
class OutputReport:
    name: str
    dtype: str
    elements: int
    mismatches: int
    max_abs_diff: float


@dataclass(frozen=True)
class LayerReport:
    """The comparison of one node's outputs (verify --per-layer)."""

    node: str
    op_type: str
    tensor: str
    elements: int
    mismatches: int
    max_abs_diff: float


@dataclass(frozen=True)
class OutputDistance:
    """How far one output of the generated C is from a second reference (reported, never
    failing): the mismatching elements and the largest difference in quantization steps.
    Integer outputs count steps as integers; a float output with the quantization of the
    DequantizeLinear producing it counts the difference divided by its scale (rounded:
    two dequantized values differ by a whole number of steps, up to float32 rounding);
    any other float output has no steps (None), only the max abs diff."""

    name: str
    elements: int
    mismatches: int
    max_steps: int | None
    max_abs_diff: float


@dataclass(frozen=True)
class Distance:
    """The generated C against a reference other than the one `ok` judges."""

    reference: str
    outputs: list[OutputDistance]


@dataclass
class VerifyReport:
    outputs: list[OutputReport]
    samples: int
    seed: int | None
    ort_version: str
    ort_level: str
    reference: str
    requant: str
    board: str
    notes: list[str] = field(default_factory=list)  # one short line each
    layers: list[LayerReport] | None = None  # per-layer mode only, in execution order
    details: list[str] = field(default_factory=list)  # the notes' longer story (--verbose)
    # Kernel families (codegen.oracle.cpu) that ORT computes with other kernels on this CPU:
    # where any is listed, a mismatch may be ORT's CPU rather than the generated C.
    cpu_differences: list[str] = field(default_factory=list)
    # --integer-only: how far the result is from ORT on the original model, whose float
    # islands ORT computes in float (informational; `ok` judges the converted model).
    original: Distance | None = None
    # The same against ORT with its graph optimizations disabled, where that differs.
    unoptimized_original: Distance | None = None
    # The samples (0-based, in the order given) in which any output differs.
    differing: list[int] = field(default_factory=list)
    # With labels: (output, share of samples whose top-1 class is the label), for each
    # output that looks like class scores.
    accuracy: list[tuple[str, float]] = field(default_factory=list)

    @property
    def compared_elements(self) -> int:
        return sum(o.elements for o in self.outputs)

    @property
    def ok(self) -> bool:
        """Every output bit-identical; a comparison of nothing (no output, no element)
        proves nothing and is not ok."""
        return self.compared_elements > 0 and all(o.mismatches == 0 for o in self.outputs)

    @property
    def first_mismatch(self) -> LayerReport | None:
        return next((layer for layer in self.layers or [] if layer.mismatches), None)


def compare_arrays(ours: NDArray[Any], ref: NDArray[Any]) -> tuple[int, float]:
    """(mismatching elements, max abs diff); floats are compared bit for bit."""
    if ours.shape != ref.shape or ours.dtype != ref.dtype:
        return max(ours.size, ref.size), float("inf")
    if ours.dtype.kind == "f":
        bits_a = ours.view(np.uint32 if ours.itemsize == 4 else np.uint64)
        bits_b = ref.view(bits_a.dtype)
        mismatches = int(np.count_nonzero(bits_a != bits_b))
        with np.errstate(invalid="ignore"):
            diff = np.abs(ours.astype(np.float64) - ref.astype(np.float64))
        diff = np.where(bits_a == bits_b, 0.0, diff)
        return mismatches, float(np.max(diff)) if diff.size else 0.0
    mismatches = int(np.count_nonzero(ours != ref))
    diff = np.abs(ours.astype(np.int64) - ref.astype(np.int64))
    return mismatches, float(np.max(diff)) if diff.size else 0.0


def compare_outputs(outputs: Sequence[Tensor], ours: Sequence[Mapping[str, NDArray[Any]]],
                    refs: Sequence[Mapping[str, NDArray[Any]]]) -> list[OutputReport]:
    reports = []
    for t in outputs:
        name = t.onnx_name
        mismatches, max_diff, elements = 0, 0.0, 0
        for a, b in zip(ours, refs, strict=True):
            m, d = compare_arrays(a[name], b[name])
            mismatches += m
            max_diff = max(max_diff, d) if not np.isnan(d) else float("nan")
            elements += a[name].size
        reports.append(OutputReport(name, t.dtype, elements, mismatches, max_diff))
    return reports


def differing_samples(outputs: Sequence[OutputReport],
                      ours: Sequence[Mapping[str, NDArray[Any]]],
                      refs: Sequence[Mapping[str, NDArray[Any]]]) -> list[int]:
    """The samples in which any of `outputs` differs."""
    return [i for i, (a, b) in enumerate(zip(ours, refs, strict=True))
            if any(compare_arrays(a[o.name], b[o.name])[0] for o in outputs)]


def _steps(t: Tensor, ours: NDArray[Any], ref: NDArray[Any]) -> int | None:
    """The largest difference between two values of output t in quantization steps."""
    if ours.dtype.kind in "iu":
        return int(np.max(np.abs(ours.astype(np.int64) - ref.astype(np.int64)), initial=0))
    if t.quant is None:
        return None
    scale = np.array(t.quant.scale, dtype=np.float64)
    if t.quant.axis is not None and scale.size > 1:
        shape = [1] * ours.ndim
        shape[t.quant.axis] = -1
        scale = scale.reshape(shape)
    with np.errstate(invalid="ignore"):
        steps = np.abs(ours.astype(np.float64) - ref.astype(np.float64)) / scale
    differ = ours.view(np.uint32) != ref.view(np.uint32)
    if not np.any(differ):
        return 0
    worst = float(np.max(np.where(differ, steps, 0.0)))
    return int(np.rint(worst)) if np.isfinite(worst) else None


def distance_in_steps(outputs: Sequence[Tensor], ours: Sequence[Mapping[str, NDArray[Any]]],
                      refs: Sequence[Mapping[str, NDArray[Any]]]) -> list[OutputDistance]:
    """Per output: mismatching elements and the largest difference in quantization steps
    (see OutputDistance)."""
    distances = []
    for t in outputs:
        name = t.onnx_name
        compared = compare_outputs([t], ours, refs)[0]
        steps: int | None = 0
        for a, b in zip(ours, refs, strict=True):
            if a[name].shape != b[name].shape or a[name].dtype != b[name].dtype:
                steps = None
                break
            s = _steps(t, a[name], b[name])
            steps = None if s is None or steps is None else max(steps, s)
        distances.append(OutputDistance(name, compared.elements, compared.mismatches, steps,
                                        compared.max_abs_diff))
    return distances


RunFn = Callable[[Sequence[Mapping[str, NDArray[Any]]]],
                 list[dict[str, NDArray[Any]]]]


def with_outputs(model: onnx.ModelProto, names: Sequence[str]) -> onnx.ModelProto:
    """A copy of the model that also outputs the given intermediate tensors, those of
    them that the model computes (onnx2mcu's rewrites name tensors of their own)."""
    extended = onnx.ModelProto()
    extended.CopyFrom(model)
    present = {o.name for o in extended.graph.output}
    computed = {o for node in extended.graph.node for o in node.output}
    for name in names:
        if name not in present and name in computed:
            # No type: ORT infers it (a rewrite may have changed onnx2mcu's own).
            extended.graph.output.append(onnx.ValueInfoProto(name=name))
    return extended


def layer_reports(graph: Graph, outputs: Sequence[OutputReport]) -> list[LayerReport]:
    by_name = {o.name: o for o in outputs}
    layers = []
    for node in graph.nodes:
        for name in node.outputs:
            if name in by_name:
                o = by_name[name]
                layers.append(LayerReport(node.name, node.op_type, name, o.elements,
                                          o.mismatches, o.max_abs_diff))
    return layers


@dataclass(frozen=True)
class Reference:
    """What ORT runs as the reference, described for the user."""

    model: onnx.ModelProto
    description: str
    notes: list[str]  # one short line each
    config: dict[str, str]
    details: list[str] = field(default_factory=list)  # the longer story (verify --verbose)
    # Kernel families (codegen.oracle.cpu) that ORT computes differently on this CPU.
    cpu_differences: list[str] = field(default_factory=list)


# ORT on x86 converts int8 QDQ activations to uint8 and fuses them, except where a
# tensor fans out (or a Clip sits between Q and DQ): those units then run in float. ORT
# on ARM fuses int8 units as they are, but not units whose input and output types
# differ, which x86's conversion makes equal. ORT's default is x86's rules on x86 and
# ARM's on ARM; this session option sets them, so the reference follows whichever rules
# the generated code follows on any CPU.
INT8_QDQ_CONFIG = {"session.qdqisint8allowed": "1"}
X86_QDQ_CONFIG = {"session.qdqisint8allowed": "0"}
ARM_RULES_DETAIL = (
    "int8 QDQ units: the generated C follows ORT's ARM rules (int8 units fused as they "
    "are), which fuse more of this model than x86's; the reference runs with "
    "session.qdqisint8allowed=1, ORT's ARM behaviour (--qdq-rules x86 follows x86 instead)")
X86_RULES_DETAIL = (
    "int8 QDQ units: the generated C follows ORT's x86 rules (int8 Q/DQ pairs converted to "
    "uint8; no Conv or MatMul fused on int8 input); the reference runs with "
    "session.qdqisint8allowed=0, ORT's x86 behaviour, on any CPU")
U8S8_SATURATION_DETAIL = (
    "u8 x s8: this CPU's ORT saturates int16 pairs of u8 x s8 products (x86 without VNNI); "
    "the generated C computes the exact sum, as ONNX specifies, so the reference is the "
    "same model with int8 weights moved to uint8 (+128, zero points +128), which ORT "
    "computes exactly")
U8S8_EXACT_DETAIL = (
    "u8 x s8: this CPU's ORT computes u8 x s8 products exactly (VNNI, AMX, SSE2 or ARM), "
    "as the generated C does: the reference is the model as given")


def int8_qdq_activations(model: onnx.ModelProto) -> int:
    """DequantizeLinear nodes of the model that read int8 activations (not constants)."""
    constants = {i.name for i in model.graph.initializer} | {
        o for n in model.graph.node if n.op_type == "Constant" for o in n.output}
    int8 = {v.name for v in (*model.graph.input, *model.graph.value_info)
            if v.type.tensor_type.elem_type == onnx.TensorProto.INT8}
    int8 |= {n.output[0] for n in model.graph.node if n.op_type == "QuantizeLinear"
             and len(n.input) > 2 and n.input[2] in constants and _is_int8_constant(model,
                                                                                   n.input[2])}
    return sum(1 for n in model.graph.node if n.op_type == "DequantizeLinear"
               and n.input[0] in int8 and n.input[0] not in constants)


def _is_int8_constant(model: onnx.ModelProto, name: str) -> bool:
    for init in model.graph.initializer:
        if init.name == name:
            return bool(init.data_type == onnx.TensorProto.INT8)
    for node in model.graph.node:
        if node.op_type == "Constant" and node.output[0] == name:
            return bool(node.attribute[0].t.data_type == onnx.TensorProto.INT8)
    return False


FLOAT_ISLAND_DETAIL = (
    "float islands: computed in float32 in the order of ORT's x86-64 kernels (AVX-512F for "
    "SGEMM, convolutions, pools and softmax; FMA3 for logistic and tanh), on one thread, "
    "as the reference runs")


@dataclass(frozen=True)
class CpuNotes:
    """What this CPU means for a graph's comparison with ORT."""

    notes: list[str]  # one short line each
    details: list[str]  # for verify --verbose
    differences: list[str]  # keys of the kernel families ORT computes otherwise here


def cpu_notes(graph: Graph, profile: CpuProfile) -> CpuNotes:
    """A short note on the float islands, and one per kernel family (codegen.oracle.cpu) that
    ORT computes with other kernels on this CPU; the details name the profile and say,
    for every family the graph uses, whether ORT runs the kernels the C follows."""
    islands = float_nodes(graph)  # counted as inspect counts them
    notes = [f"float islands: {len(islands)} node(s) computed in float32 as ORT's x86-64 "
             "kernels do, on one thread"] if islands else []
    details = [profile.describe()] + ([FLOAT_ISLAND_DETAIL] if islands else [])
    details += [use.detail(profile) for use in family_uses(graph)]
    differing = differences(graph, profile)
    notes += [use.note(profile) for use in differing]
    return CpuNotes(notes, details, [use.family.key for use in differing])


def float_island_notes(graph: Graph) -> list[str]:
    """The notes on float islands and CPU-dependent kernels for this CPU."""
    return cpu_notes(graph, cpu_profile()).notes


def reference_model(model: onnx.ModelProto, graph: Graph, qdq_rules: str = "x86") -> Reference:
    """The model ORT should run and how, a one-line description of it, and notes.
    qdq_rules is the platform whose int8 QDQ rules the generated code follows."""
    notes: list[str] = []
    details: list[str] = []
    # Set either way: ORT's default is x86's rules on x86 and ARM's on ARM.
    config: dict[str, str] = dict(INT8_QDQ_CONFIG if qdq_rules == "arm" else X86_QDQ_CONFIG)
    int8_units = int8_qdq_activations(model)
    if int8_units and qdq_rules == "arm":
        notes.append(f"{int8_units} int8 QDQ activation(s) follow ORT's ARM rules "
                     "(session.qdqisint8allowed=1)")
        details.append(ARM_RULES_DETAIL)
    elif int8_units:
        notes.append(f"{int8_units} int8 QDQ activation(s) follow ORT's x86 rules "
                     "(session.qdqisint8allowed=0)")
        details.append(X86_RULES_DETAIL)
    profile = cpu_profile()
    cpu = cpu_notes(graph, profile)
    notes.extend(cpu.notes)
    details.extend(cpu.details)
    nodes = u8s8_nodes(graph)
    if not nodes:
        return Reference(model, "the model as given", notes, config, details, cpu.differences)
    if not profile.u8s8_saturates:
        notes.append(f"{len(nodes)} u8 x s8 node(s): this CPU's ORT computes them exactly "
                     f"({profile.label})")
        details.append(U8S8_EXACT_DETAIL)
        return Reference(model, "the model as given", notes, config, details, cpu.differences)
    notes.append(f"{len(nodes)} u8 x s8 node(s): this CPU's ORT saturates them "
                 f"({profile.label}); the C is exact")
    details.append(U8S8_SATURATION_DETAIL)
    return Reference(exact_u8s8_model(model, graph), "the model with int8 weights moved to "
                     "uint8", notes, config, details, cpu.differences)
