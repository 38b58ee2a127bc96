"""QDQ and QCDQ models: the 32 zoo variants quantized by ORT in QDQ format and the
hand-built Brevitas-style QCDQ models must generate integer-only network code (no float
operator between the first QuantizeLinear and the last DequantizeLinear), be bit-exact
against ORT at ORT_ENABLE_ALL, and round-trip through `convert`: the exported QOperator
model, run by ORT, gives exactly what the generated C gives. The comparisons are skipped
where this CPU's ORT runs other kernels than the generated C follows (codegen.oracle.cpu)."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import onnx
import pytest
from conftest import SANITIZE, generated, skip_where_ort_differs
from qcdq import FLOAT_ISLAND, QCDQ_CONFIGS, qcdq_model
from roundtrip import check_round_trip, our_float_operators
from zoo import ZOO_CASES, case_id, qdq_model

import codegen
from codegen.ops import float_island_ops
from codegen.options import Options
from codegen.oracle.verify import X86_QDQ_CONFIG, reference_model
from codegen.pipeline import Generated, generate_sources
from codegen.views.inspection import inspect_model

FLOAT_OPS = float_island_ops()


def float_ops_inside(gen: Generated) -> list[str]:
    """Kernel calls touching float data other than the graph's own Q and DQ."""
    program = gen.program
    boundary = {t.name for t in (*program.inputs, *program.outputs)}
    inside = []
    for call in program.calls:
        if call.function.startswith("q8_quantize_linear") and set(call.inputs) <= boundary:
            continue
        if call.function.startswith("q8_dequantize_linear") and set(call.outputs) <= boundary:
            continue
        tensors = [program.root(t) for t in (*call.inputs, *call.outputs)]
        if any(t not in program.constants and program.tensors[t].dtype == "float32"
               for t in tensors):
            inside.append(call.node)
    return inside


@pytest.mark.parametrize("case", ZOO_CASES, ids=case_id)
def test_qdq_zoo(case: tuple[str, str], tmp_path: Path) -> None:
    model = qdq_model(*case)
    gen = generated(model)
    assert float_ops_inside(gen) == []
    config = reference_model(model, gen.graph, gen.qdq_rules).config
    assert ort_float_operators(model, config) == Counter()
    skip_where_ort_differs(model)
    report = codegen.verify(model, samples=2, seed=1, cflags=SANITIZE)
    assert report.ok, report.outputs
    check_round_trip(model, tmp_path)


def ort_float_operators(model: onnx.ModelProto, config: dict[str, str]) -> Counter[str]:
    """The float operators ORT leaves in its optimized graph (ORT_ENABLE_EXTENDED: the
    QDQ fusions, without the layout rewrites), FusedConv counted as Conv."""
    import onnxruntime as ort

    with tempfile.TemporaryDirectory() as tmp:
        options = ort.SessionOptions()
        options.log_severity_level = 3
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
        options.optimized_model_filepath = f"{tmp}/optimized.onnx"
        for key, value in config.items():
            options.add_session_config_entry(key, value)
        ort.InferenceSession(model.SerializeToString(), options,
                             providers=["CPUExecutionProvider"])
        optimized = onnx.load(f"{tmp}/optimized.onnx")
    names = {"FusedConv": "Conv", "FusedGemm": "Gemm"}
    return Counter(names.get(n.op_type, n.op_type) for n in optimized.graph.node
                   if names.get(n.op_type, n.op_type) in FLOAT_OPS)


# x86 ORT leaves float operators where an int8 activation fans out.
X86_ISLAND_CASES = [(name, variant) for name in ("resnet8", "mobilenet_v2_style",
                                                 "squeezenet_style", "misc_ops")
                    for variant in ("i8-pt", "i8-pc")]


@pytest.mark.parametrize("case", X86_ISLAND_CASES, ids=case_id)
def test_qdq_zoo_with_x86_rules(case: tuple[str, str], tmp_path: Path) -> None:
    """--qdq-rules x86: the same float operators as x86 ORT's optimized graph, computed
    bit-exactly as x86 ORT computes them."""
    model = qdq_model(*case)
    gen = generated(model, qdq_rules="x86")
    assert gen.qdq_rules == "x86"
    ours = our_float_operators(gen)
    assert ours and ours == ort_float_operators(model, X86_QDQ_CONFIG)
    islands = inspect_model(model, Options(qdq_rules="x86")).float_islands
    assert len(islands) == sum(our_float_operators(gen, tables=False).values())
    assert not [line for line in islands if "conditions for it do not hold" in line], islands
    skip_where_ort_differs(model, qdq_rules="x86")
    report = codegen.verify(model, samples=2, seed=1, cflags=SANITIZE, qdq_rules="x86")
    assert report.ok, report.outputs
    assert any("x86 rules" in note for note in report.notes)
    check_round_trip(model, tmp_path, qdq_rules="x86")
    # --integer-only under x86 rules fuses the int8 Conv units x86 ORT keeps in float,
    # some of them with an int8 input and a uint8 output (or the reverse).
    check_round_trip(model, tmp_path, integer_only=True, qdq_rules="x86", samples=2)


@pytest.mark.parametrize("name", [c.name for c in QCDQ_CONFIGS])
@pytest.mark.parametrize("requant", ["float", "int"])
def test_qcdq_models(name: str, requant: str, tmp_path: Path) -> None:
    model = qcdq_model(name)
    gen = generate_sources(model, Options(requant=requant))
    assert float_ops_inside(gen) == []
    skip_where_ort_differs(model, requant=requant)
    report = codegen.verify(model, samples=4, requant=requant, cflags=SANITIZE)
    assert report.ok, report.outputs
    if requant == "float":
        check_round_trip(model, tmp_path)


def test_float_island_is_computed_as_ort_does_or_fused_on_request(tmp_path: Path) -> None:
    """ORT keeps one convolution of this model in float: by default the generated C
    does the same, bit-exactly; inspect lists it; --integer-only fuses it."""
    model = qcdq_model(FLOAT_ISLAND.name)
    gen = generate_sources(model, Options())
    assert [c.function for c in gen.program.calls].count("q8_conv_f32") == 1
    assert codegen.verify(model, samples=8, cflags=SANITIZE).ok
    onnx.save(model, tmp_path / "island.onnx")
    result = subprocess.run([sys.executable, "-m", "codegen.cli", "inspect",
                             str(tmp_path / "island.onnx")], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "float islands: 1 node(s)" in result.stdout
    assert "q8_conv_f32" in result.stdout
    check_round_trip(model, tmp_path)
    gen = generate_sources(model, Options(integer_only=True))
    assert float_ops_inside(gen) == []
    check_round_trip(model, tmp_path, integer_only=True)
    report = codegen.verify(model, samples=8, integer_only=True, cflags=SANITIZE)
    # The oracle is ORT on the model as convert --integer-only writes it: bit-exact.
    assert report.ok, report.outputs
    assert "as converted by onnx2mcu (--integer-only, QOperator)" in report.reference
    # ORT on the original model computes that convolution in float: the distance to it
    # is reported, in quantization steps of the uint8 output, and is small.
    assert report.original is not None and "original model" in report.original.reference
    [distance] = report.original.outputs
    assert (distance.name, distance.elements) == ("output", 8 * 10)
    assert 0 <= distance.mismatches <= distance.elements
    assert distance.max_steps is not None and distance.max_steps <= 2
    assert (distance.mismatches == 0) == (distance.max_steps == 0)
    quant = gen.program.outputs[0].quant
    assert quant is not None
    assert distance.max_abs_diff == pytest.approx(distance.max_steps * quant.scale[0], rel=1e-3,
                                                  abs=0)


@pytest.mark.parametrize("case", ZOO_CASES, ids=case_id)
def test_convert_integer_only_round_trip_on_zoo(case: tuple[str, str], tmp_path: Path) -> None:
    """convert --integer-only writes a model ORT runs, with outputs identical to the
    generated C, for every zoo QDQ model (default mode: test_qdq_zoo)."""
    check_round_trip(qdq_model(*case), tmp_path, integer_only=True, samples=2)


@pytest.mark.parametrize("name", [c.name for c in (*QCDQ_CONFIGS, FLOAT_ISLAND)])
def test_convert_integer_only_round_trip_on_qcdq(name: str, tmp_path: Path) -> None:
    """The same for every Brevitas-style QCDQ model (default mode: test_qcdq_models and
    the float-island test); their int8 sandwiches fuse into int8 -> uint8 convolutions."""
    check_round_trip(qcdq_model(name), tmp_path, integer_only=True, samples=2)


def test_verify_against_ort_without_fusions_reports_the_differences(tmp_path: Path) -> None:
    """At ORT_DISABLE_ALL, ORT computes every QDQ unit in float: verify says by how much
    the generated C (ORT_ENABLE_ALL's integer arithmetic) differs, and exits 1."""
    onnx.save(qdq_model("misc_ops", "u8-pt"), tmp_path / "m.onnx")
    result = subprocess.run([sys.executable, "-m", "codegen.cli", "verify",
                             str(tmp_path / "m.onnx"), "--ort-level", "disable", "--samples",
                             "4"], capture_output=True, text=True)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "ORT_DISABLE_ALL" in result.stdout
    header, row = [x for x in result.stdout.splitlines() if x.startswith("output ")]
    mismatches = int(row.split()[header.split().index("mismatches")])
    assert 0 < mismatches < 4 * 10
    assert "MISMATCH" in result.stdout
