"""Real networks, quantized by ONNX Runtime's quantize_static in QOperator format, in
4 variants each (uint8/int8 activations x per-tensor/per-channel int8 weights): the
MLPerf Tiny reference architectures, LeNet-5, MobileNetV2-, SqueezeNet-style networks
and one exercising LeakyRelu, Sigmoid, Mul, AveragePool, MatMul and Softmax.

Each of the 32 variants must be bit-exact against ORT in both requantization modes
through `verify` (under ASan/UBSan); one variant of each architecture, in one mode,
also through the generated project's own Makefile and harness, against verify's
reference (int8 weights moved to uint8 where this CPU's
ORT saturates u8 x s8 products); skipped where this CPU's ORT runs other kernels for
QLinearAdd, QLinearMul or QLinearSigmoid than the generated C follows."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from conftest import SANITIZE, generated, ort_reference, skip_where_ort_differs
from zoo import INPUT_NAME, ZOO_CASES, case_id, quantized_model, sample_inputs

import codegen
from codegen.oracle.verify import compare_outputs
from codegen.target.build import decode_samples, encode_samples


@pytest.mark.parametrize("requant", ["float", "int"])
@pytest.mark.parametrize("case", ZOO_CASES, ids=case_id)
def test_verify_bit_exact(case: tuple[str, str], requant: str) -> None:
    model = quantized_model(*case)
    skip_where_ort_differs(model, requant=requant)
    report = codegen.verify(model, samples=2, seed=3, requant=requant, cflags=SANITIZE)
    assert report.ok, report.outputs


# Through the generated Makefile: the zoo models that call kernels the corpus's Makefile
# cases (tests/networks/test_corpus.py, one per family) do not: the integer-only
# global average pool and softmax, the int8 MaxPool, the integer-only QLinearMul.
HARNESS_CASES = [(("dscnn", "u8-pc"), "int"), (("squeezenet_style", "i8-pt"), "float"),
                 (("misc_ops", "i8-pc"), "int")]


@pytest.mark.parametrize("case,requant", HARNESS_CASES,
                         ids=[f"{case_id(c)}-{r}" for c, r in HARNESS_CASES])
def test_generated_harness_bit_exact(case: tuple[str, str], requant: str,
                                     tmp_path: Path) -> None:
    model = quantized_model(*case)
    skip_where_ort_differs(model, requant=requant)
    out = tmp_path / "out"
    result = codegen.generate(model, out, requant=requant, name="net")
    subprocess.run(["make", "-C", str(out), "-s"], check=True, capture_output=True)
    program = generated(model, requant=requant).program
    samples = [{INPUT_NAME: x} for x in sample_inputs(case[0], count=2)]
    (tmp_path / "in.bin").write_bytes(encode_samples(program.inputs, samples))
    subprocess.run([str(out / "build" / f"{result.name}_main"), str(tmp_path / "in.bin"),
                    str(tmp_path / "out.bin")], check=True)
    ours = decode_samples(program.outputs, (tmp_path / "out.bin").read_bytes(), len(samples))
    reports = compare_outputs(program.outputs, ours, ort_reference(model, samples))
    assert all(r.mismatches == 0 for r in reports), reports
    assert np.isfinite(ours[0][program.outputs[0].name]).all()
