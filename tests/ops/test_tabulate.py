"""Chains of float elementwise operators between DequantizeLinear and QuantizeLinear
(HardSigmoid, HardSwish, x * HardSigmoid(x), SiLU, Div/Sub/Mul/Add by constants, Neg,
Abs, Sqrt, Tanh, Exp, Clip): one 256-entry table each (passes/tabulate.py), checked against
ONNX Runtime on every input byte, for many quantizations of both 8-bit types."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from conftest import SANITIZE, generated, in_qemu, skip_reason
from modelgen import graph_model
from numpy.typing import NDArray
from onnx import helper

import codegen
from codegen.options import Options
from codegen.oracle.cpu import differences
from codegen.oracle.verify import cpu_profile as local_cpu_profile
from codegen.pipeline import generate_sources

F32 = np.float32
CHAINS_PER_MODEL = 8

# A chain: (nodes, constants) from the dequantized input name, a prefix and the output.
Chain = Callable[[str, str, str, np.random.Generator],
                 tuple[list[onnx.NodeProto], dict[str, NDArray[Any]]]]


def unary(op: str, **attrs: Any) -> Chain:
    def chain(x: str, p: str, out: str, rng: np.random.Generator) -> tuple[
            list[onnx.NodeProto], dict[str, NDArray[Any]]]:
        return [helper.make_node(op, [x], [out], name=f"{p}{op}", **attrs)], {}
    return chain


def with_constant(op: str, low: float, high: float, first: bool = False) -> Chain:
    def chain(x: str, p: str, out: str, rng: np.random.Generator) -> tuple[
            list[onnx.NodeProto], dict[str, NDArray[Any]]]:
        c = f"{p}c"
        inputs = [c, x] if first else [x, c]
        return ([helper.make_node(op, inputs, [out], name=f"{p}{op}")],
                {c: np.array(rng.uniform(low, high), F32)})
    return chain


def times_gate(gate: str, **attrs: Any) -> Chain:
    """x * gate(x): HardSwish as torch < 1.? and Keras write it, and SiLU."""
    def chain(x: str, p: str, out: str, rng: np.random.Generator) -> tuple[
            list[onnx.NodeProto], dict[str, NDArray[Any]]]:
        return [helper.make_node(gate, [x], [f"{p}g"], name=f"{p}{gate}", **attrs),
                helper.make_node("Mul", [x, f"{p}g"], [out], name=f"{p}mul")], {}
    return chain


def relu6_over_6(x: str, p: str, out: str, rng: np.random.Generator) -> tuple[
        list[onnx.NodeProto], dict[str, NDArray[Any]]]:
    """x * Clip(x + 3, 0, 6) / 6: HardSwish as torch's exporter writes it before opset 14."""
    consts = {f"{p}three": np.array(3.0, F32), f"{p}zero": np.array(0.0, F32),
              f"{p}six": np.array(6.0, F32)}
    return [helper.make_node("Add", [x, f"{p}three"], [f"{p}a"], name=f"{p}add"),
            helper.make_node("Clip", [f"{p}a", f"{p}zero", f"{p}six"], [f"{p}c"],
                             name=f"{p}clip"),
            helper.make_node("Mul", [x, f"{p}c"], [f"{p}m"], name=f"{p}mul"),
            helper.make_node("Div", [f"{p}m", f"{p}six"], [out], name=f"{p}div")], consts


def gelu_erf_half(x: str, p: str, out: str, rng: np.random.Generator) -> tuple[
        list[onnx.NodeProto], dict[str, NDArray[Any]]]:
    """Erf(x / sqrt(2)) + 1, the part of GELU that ORT's quantizer leaves between one
    DequantizeLinear and one QuantizeLinear."""
    consts = {f"{p}root2": np.array(1.4142135, F32), f"{p}one": np.array(1.0, F32)}
    return [helper.make_node("Div", [x, f"{p}root2"], [f"{p}d"], name=f"{p}div"),
            helper.make_node("Erf", [f"{p}d"], [f"{p}e"], name=f"{p}erf"),
            helper.make_node("Add", [f"{p}e", f"{p}one"], [out], name=f"{p}add")], consts


def gelu_tanh_inner(x: str, p: str, out: str, rng: np.random.Generator) -> tuple[
        list[onnx.NodeProto], dict[str, NDArray[Any]]]:
    """1 + Tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)): GELU's tanh form as torch exports
    gelu(approximate="tanh")."""
    consts = {f"{p}three": np.array(3.0, F32), f"{p}c": np.array(0.044715, F32),
              f"{p}k": np.array(0.7978846, F32), f"{p}one": np.array(1.0, F32)}
    return [helper.make_node("Pow", [x, f"{p}three"], [f"{p}cube"], name=f"{p}pow"),
            helper.make_node("Mul", [f"{p}cube", f"{p}c"], [f"{p}m"], name=f"{p}mul"),
            helper.make_node("Add", [x, f"{p}m"], [f"{p}s"], name=f"{p}add"),
            helper.make_node("Mul", [f"{p}s", f"{p}k"], [f"{p}t"], name=f"{p}scale"),
            helper.make_node("Tanh", [f"{p}t"], [f"{p}h"], name=f"{p}tanh"),
            helper.make_node("Add", [f"{p}h", f"{p}one"], [out], name=f"{p}plus")], consts


CHAINS: dict[str, Chain] = {
    "HardSigmoid": unary("HardSigmoid"),
    "HardSigmoid_attrs": unary("HardSigmoid", alpha=0.1667, beta=0.4),
    "HardSwish": unary("HardSwish"),
    "x_times_HardSigmoid": times_gate("HardSigmoid", alpha=1.0 / 6.0),
    "SiLU": times_gate("Sigmoid"),
    "relu6_hardswish": relu6_over_6,
    "Div": with_constant("Div", 0.3, 7.0),
    "Div_by_x": with_constant("Div", 0.5, 2.0, first=True),
    "Sub": with_constant("Sub", -1.0, 1.0),
    "Sub_from": with_constant("Sub", -1.0, 1.0, first=True),
    "Mul": with_constant("Mul", -3.0, 3.0),
    "Add": with_constant("Add", -2.0, 2.0),
    "Neg": unary("Neg"),
    "Abs": unary("Abs"),
    "Sqrt": unary("Sqrt"),
    "Tanh": unary("Tanh"),
    "Erf": unary("Erf"),
    "Exp": unary("Exp"),
    "Pow2": with_constant("Pow", 2.0, 2.0),
    "Max": with_constant("Max", -0.5, 0.5),
    "PRelu": with_constant("PRelu", 0.05, 0.4),
    "Min": with_constant("Min", -0.5, 0.5, first=True),
    "Pow3": with_constant("Pow", 3.0, 3.0),
    "Pow": with_constant("Pow", 0.3, 2.7),
    "Pow_negative": with_constant("Pow", -1.6, -0.2),
    "gelu_tanh_inner": gelu_tanh_inner,
    "gelu_erf_half": gelu_erf_half,
}


def quantized_constants(consts: dict[str, NDArray[Any]], inits: dict[str, NDArray[Any]],
                        rng: np.random.Generator) -> list[onnx.NodeProto]:
    """Each constant as DequantizeLinear of int8 values (AMD Quark quantizes GELU's
    constants so): the DequantizeLinear nodes, its parts added to inits."""
    nodes = []
    for name, value in consts.items():
        scale = F32(max(float(np.max(np.abs(value))), 1e-3) / rng.uniform(60, 127))
        inits[f"{name}_q"] = np.clip(np.rint(value / scale), -128, 127).astype(np.int8)
        inits[f"{name}_s"] = np.array(scale, F32)
        inits[f"{name}_z"] = np.array(0, np.int8)
        nodes.append(helper.make_node("DequantizeLinear", [f"{name}_q", f"{name}_s",
                                                           f"{name}_z"], [name]))
    return nodes


def chains_model(kinds: str | Sequence[str], seed: int, mixed: bool = False,
                 dequantized: bool = False) -> tuple[onnx.ModelProto, dict[str, NDArray[Any]]]:
    """CHAINS_PER_MODEL independent chains of each kind (`kinds`, or the one kind named)
    with random quantizations, each with its own 256-byte integer input (every value
    once); chain i is of kind kinds[i // CHAINS_PER_MODEL]. mixed: the output has the
    other 8-bit type (NNCF quantizes GELU's input int8 and its output uint8);
    dequantized: the constants are DequantizeLinear of int8 values."""
    kinds = [kinds] if isinstance(kinds, str) else list(kinds)
    rng = np.random.default_rng(seed)
    nodes: list[onnx.NodeProto] = []
    inputs: dict[str, tuple[str, list[int]]] = {}
    outputs: dict[str, str] = {}
    inits: dict[str, NDArray[Any]] = {}
    feeds: dict[str, NDArray[Any]] = {}
    for i in range(CHAINS_PER_MODEL * len(kinds)):
        p = f"c{i}_"
        dtype = ("uint8", "int8")[i % 2]
        out_dtype = ("int8", "uint8")[i % 2] if mixed else dtype
        lo = 0 if dtype == "uint8" else -128
        out_lo = 0 if out_dtype == "uint8" else -128
        inits[f"{p}xs"] = np.array(rng.uniform(0.004, 0.08), F32)
        inits[f"{p}xz"] = np.array(rng.integers(lo, lo + 256), dtype)
        inits[f"{p}ys"] = np.array(rng.uniform(0.002, 0.05), F32)
        inits[f"{p}yz"] = np.array(rng.integers(out_lo, out_lo + 256), out_dtype)
        nodes.append(helper.make_node("DequantizeLinear", [f"{p}q", f"{p}xs", f"{p}xz"],
                                      [f"{p}x"], name=f"{p}dq"))
        body, consts = CHAINS[kinds[i // CHAINS_PER_MODEL]](f"{p}x", p, f"{p}f", rng)
        if dequantized:
            nodes += quantized_constants(consts, inits, rng)
        else:
            inits.update(consts)
        nodes += body
        nodes.append(helper.make_node("QuantizeLinear", [f"{p}f", f"{p}ys", f"{p}yz"],
                                      [f"{p}y"], name=f"{p}q_out"))
        inputs[f"{p}q"] = (dtype, [256])
        outputs[f"{p}y"] = out_dtype
        feeds[f"{p}q"] = np.arange(lo, lo + 256).astype(dtype)
    return graph_model(nodes, inputs, outputs, inits, opset=17), feeds


@pytest.mark.cpu_differences_expected  # the kinds that differ are left out below
@pytest.mark.parametrize("seed", [0, 1])
def test_chain_is_one_table_exact_on_every_byte(seed: int) -> None:
    """Every kind of chain in one model (one build); a failure names the chains and their
    kinds. A kind that this CPU's ORT computes with other kernels than the table follows
    (codegen.oracle.cpu) is not compared: once the others have passed, the test is
    skipped with the reason, naming those kinds."""
    kinds = sorted(CHAINS)
    model, feeds = chains_model(kinds, seed)

    def kind_of(name: str) -> str:  # names start c{chain}_
        return kinds[int(name[1:].split("_")[0]) // CHAINS_PER_MODEL]

    gen = generated(model)
    untabulated = sorted(n.name for n in gen.graph.nodes if n.op_type != "Table")
    assert not untabulated, [(kind_of(name), name) for name in untabulated]
    assert {n.domain for n in gen.graph.nodes} == {"ai.onnx2mcu"}
    assert len(gen.program.calls) == CHAINS_PER_MODEL * len(kinds)
    profile = local_cpu_profile()
    uses = differences(gen.graph, profile)
    others = sorted({kind_of(node) for use in uses for node in use.nodes})
    report = codegen.verify(model, inputs=feeds, cflags=SANITIZE)
    compared = [o for o in report.outputs if kind_of(o.name) not in others]
    assert len(compared) == CHAINS_PER_MODEL * (len(kinds) - len(others))
    wrong = [(kind_of(o.name), o) for o in compared if o.mismatches or not o.elements]
    assert not wrong, wrong
    if others:
        pytest.skip(f"{len(kinds) - len(others)} kinds bit-exact; {', '.join(others)} not "
                    f"compared: {skip_reason(uses, profile)}")


@pytest.mark.parametrize("kind", ["gelu_erf_half", "Div", "HardSwish", "PRelu", "Tanh"])
@pytest.mark.parametrize("dequantized", [False, True])
def test_chain_to_the_other_type_is_exact_on_every_byte(kind: str, dequantized: bool) -> None:
    """int8 in, uint8 out (as NNCF quantizes GELU) and the reverse, with constants given
    as floats or as DequantizeLinear of int8 (as AMD Quark writes them): one table."""
    model, feeds = chains_model(kind, 5, mixed=True, dequantized=dequantized)
    gen = generate_sources(model, Options())
    assert {(n.domain, n.op_type) for n in gen.graph.nodes} == {("ai.onnx2mcu", "Table")}
    assert {c.function for c in gen.program.calls} == {"q8_lut_bytes"}
    report = codegen.verify(model, inputs=feeds, cflags=SANITIZE)
    assert report.ok, report.outputs
    converted = codegen.verify(model, inputs=feeds, integer_only=True)
    assert converted.ok, converted.outputs


@pytest.mark.parametrize("kind", ["gelu_erf_half", "Sub", "Max"])
def test_dequantized_constants_fold_into_the_table(kind: str) -> None:
    model, feeds = chains_model(kind, 6, dequantized=True)
    gen = generate_sources(model, Options())
    assert {(n.domain, n.op_type) for n in gen.graph.nodes} == {("ai.onnx2mcu", "Table")}
    report = codegen.verify(model, inputs=feeds, cflags=SANITIZE)
    assert report.ok, report.outputs


def test_a_chain_read_from_outside_is_left_as_it_is() -> None:
    """An inner tensor of the chain that something else reads (here a graph output) is
    not inside one table: the chain stays float (its Erf in MLAS's float kernel), exact."""
    model, feeds = chains_model("gelu_erf_half", 0)
    model.graph.output.append(helper.make_tensor_value_info("c0_d", onnx.TensorProto.FLOAT,
                                                            None))
    ops = [n.op_type for n in generate_sources(model, Options()).graph.nodes]
    assert ops.count("Erf") == 1  # chain 0's; the other chains are tables
    report = codegen.verify(model, inputs=feeds, cflags=SANITIZE)
    assert report.ok, report.outputs


def test_convert_writes_tables_that_ort_runs() -> None:
    """convert writes a Table as Gather from the table: verify --integer-only compares
    with that model in ORT, bit for bit."""
    model, feeds = chains_model("HardSwish", 3)
    report = codegen.verify(model, inputs=feeds, integer_only=True)
    assert report.ok, report.outputs


@pytest.mark.ort_kernels("fma3-activations")
def test_mlas_erf_matches_ort_on_many_floats() -> None:
    """The Erf port (codegen/arith/numerics.py) against ORT's Erf, bit for bit, on values
    around both branches, the cap and zero."""
    from codegen.arith.numerics import mlas_erf
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.normal(0, 1.5, 1500), rng.uniform(-5, 5, 1500),
                        np.linspace(-4.2, 4.2, 841),
                        [0.921875, -0.921875, 0.9218749, 3.925, -3.925, 3.9250002, 1e-8,
                         -1e-30, 0.0, -0.0]]).astype(F32)
    model = graph_model([helper.make_node("Erf", ["x"], ["y"])], {"x": ("float32", [x.size])},
                        {"y": "float32"}, {})
    options = ort.SessionOptions()
    options.log_severity_level = 3
    expected = ort.InferenceSession(model.SerializeToString(), options, providers=[
        "CPUExecutionProvider"]).run(None, {"x": x})[0]
    ours = np.array([mlas_erf(v) for v in x], F32)
    assert np.array_equal(ours.view(np.uint32), expected.view(np.uint32))


@pytest.mark.ort_kernels("float-avx512f")
def test_mlas_exp_matches_ort_on_many_floats() -> None:
    """The Exp port (codegen/arith/numerics.py) against ORT's Exp, bit for bit: ordinary
    values, subnormal results, the clamp at -103.97 and overflow."""
    from codegen.arith.numerics import mlas_exp
    rng = np.random.default_rng(6)
    x = np.concatenate([rng.normal(0, 3, 1500), rng.uniform(-110, 95, 1500),
                        [-103.972, -103.9720840454, -104.0, 88.72, 88.7228, 88.73, 1e30, 0.0,
                         -0.0, 1e-30, np.inf, -np.inf]]).astype(F32)
    model = graph_model([helper.make_node("Exp", ["x"], ["y"])], {"x": ("float32", [x.size])},
                        {"y": "float32"}, {})
    options = ort.SessionOptions()
    options.log_severity_level = 3
    expected = ort.InferenceSession(model.SerializeToString(), options, providers=[
        "CPUExecutionProvider"]).run(None, {"x": x})[0]
    ours = np.array([mlas_exp(v) for v in x], F32)
    same = (ours.view(np.uint32) == expected.view(np.uint32)) | (
        np.isnan(ours) & np.isnan(expected))
    assert same.all(), x[~same]


@pytest.mark.ort_kernels("glibc-fma")
def test_glibc_powf_matches_ort_on_many_floats() -> None:
    """The powf port (codegen/arith/glibc_math.py) against ORT's Pow, bit for bit, for several
    exponents: ordinary and subnormal bases, negative bases (NaN, or a sign for odd
    integer exponents), zeros, infinities, overflow and underflow."""
    from codegen.arith.glibc_math import glibc_powf
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.uniform(-4, 4, 300), rng.uniform(0, 60, 300),
                        [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, 1e-40, 3e38, 1e-30]]
                       ).astype(F32)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    for exponent in (0.5, -0.5, 1.7, -2.2, 3.0, 5.0, -3.0, 0.1, 40.0, -45.0):
        model = graph_model([helper.make_node("Pow", ["x", "e"], ["y"])],
                            {"x": ("float32", [x.size])}, {"y": "float32"},
                            {"e": np.array(exponent, F32)})
        expected = ort.InferenceSession(model.SerializeToString(), options, providers=[
            "CPUExecutionProvider"]).run(None, {"x": x})[0]
        ours = np.array([glibc_powf(v, F32(exponent)) for v in x], F32)
        if exponent == 3.0:  # ORT cubes; the port is powf's
            continue
        assert np.array_equal(ours.view(np.uint32), expected.view(np.uint32)), exponent


def per_channel_model(kind: str, dtype: str, channels: int, seed: int,
                      out_dtype: str | None = None
                      ) -> tuple[onnx.ModelProto, dict[str, NDArray[Any]]]:
    """DQ -> a chain with per-channel constants -> Q on x [2, channels, 256, 1] (axis 1),
    every byte in every channel: PRelu with torch's PReLU(C) slopes [C, 1, 1], a
    BatchNorm left as Mul and Add, a per-channel Div."""
    rng = np.random.default_rng(seed)
    lo = 0 if dtype == "uint8" else -128
    out_dtype = out_dtype or dtype
    out_lo = 0 if out_dtype == "uint8" else -128
    inits: dict[str, NDArray[Any]] = {
        "xs": np.array(rng.uniform(0.01, 0.06), F32), "xz": np.array(lo + 100, dtype),
        "ys": np.array(rng.uniform(0.01, 0.05), F32), "yz": np.array(out_lo + 120, out_dtype)}
    per_channel = (channels, 1, 1)
    nodes = [helper.make_node("DequantizeLinear", ["q", "xs", "xz"], ["x"], name="dq")]
    if kind == "PRelu":
        inits["slope"] = rng.uniform(-0.5, 0.9, per_channel).astype(F32)
        nodes.append(helper.make_node("PRelu", ["x", "slope"], ["f"], name="prelu"))
    elif kind == "MulAdd":
        inits["gamma"] = rng.uniform(-2, 2, per_channel).astype(F32)
        inits["beta"] = rng.uniform(-1, 1, (channels, 1, 1)).astype(F32)
        nodes += [helper.make_node("Mul", ["x", "gamma"], ["m"], name="mul"),
                  helper.make_node("Add", ["m", "beta"], ["f"], name="add")]
    else:
        inits["d"] = rng.uniform(0.5, 3, (1, channels, 1, 1)).astype(F32)
        nodes.append(helper.make_node("Div", ["x", "d"], ["f"], name="div"))
    nodes.append(helper.make_node("QuantizeLinear", ["f", "ys", "yz"], ["y"], name="q_out"))
    shape = [2, channels, 256, 1]
    values = np.broadcast_to(np.arange(lo, lo + 256).reshape(1, 1, 256, 1), shape)
    feeds = {"q": np.ascontiguousarray(values).astype(dtype)}
    return graph_model(nodes, {"q": (dtype, shape)}, {"y": out_dtype}, inits, opset=17), feeds


@pytest.mark.parametrize("dtype, out_dtype", [("uint8", "int8"), ("int8", "uint8")])
def test_per_channel_tables_to_the_other_type(dtype: str, out_dtype: str) -> None:
    model, feeds = per_channel_model("PRelu", dtype, 3, 1, out_dtype)
    gen = generate_sources(model, Options())
    assert [c.function for c in gen.program.calls] == ["q8_lut_channels_bytes"]
    report = codegen.verify(model, inputs=feeds, cflags=SANITIZE)
    assert report.ok, report.outputs
    report = codegen.verify(model, inputs=feeds, integer_only=True)
    assert report.ok, report.outputs


@pytest.mark.parametrize("kind", ["PRelu", "MulAdd", "Div"])
@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_per_channel_constants_give_a_table_per_channel(kind: str, dtype: str) -> None:
    """Exact against ORT on every byte of every channel; convert writes the tables as one
    flat Gather at x + 256 c (ORT runs it, and it imports back as the same Table)."""
    model, feeds = per_channel_model(kind, dtype, 5, 0)
    gen = generate_sources(model, Options())
    assert [c.function for c in gen.program.calls] == [
        f"q8_lut_channels_{'u8' if dtype == 'uint8' else 's8'}"]
    report = codegen.verify(model, inputs=feeds, cflags=SANITIZE)
    assert report.ok, report.outputs
    report = codegen.verify(model, inputs=feeds, integer_only=True)
    assert report.ok, report.outputs
    converted = codegen.views.exporter.converted_model(gen.graph, gen.qdq_rules)
    again = generate_sources(converted, Options())
    assert [c.function for c in again.program.calls] == [c.function for c in
                                                         gen.program.calls]
    assert again.program.calls[0].arrays[0].values.tobytes() == \
        gen.program.calls[0].arrays[0].values.tobytes()


@in_qemu
@pytest.mark.parametrize("board", ["cortex-m4f", "cortex-m0plus"])
def test_per_channel_tables_in_qemu(board: str) -> None:
    model, feeds = per_channel_model("PRelu", "int8", 3, 1)
    report = codegen.verify(model, inputs=feeds, board=board)
    assert report.ok, report.outputs
