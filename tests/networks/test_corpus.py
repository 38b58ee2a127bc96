"""The model corpus (tests/corpus/, made by tests/corpus/make_corpus.py with torch 2.13's
TorchScript and dynamo exporters and ONNX Runtime's quantize_static in QDQ (uint8,
int8, uint16 and int16 activations) and QOperator format, and by
tests/corpus/make_tf_corpus.py: int8 TFLite models from TensorFlow 2.21's converter,
with int8 and float I/O, converted by tf2onnx 1.17 with and without --dequantize, and
by tests/corpus/make_nncf_corpus.py: NNCF's ONNX post-training quantization of
tf2onnx's and torch's float models (its transformer model type too), and
make_quark_corpus.py: AMD Quark's A8W8 and XINT8 on the same, its A16W8 and U16S8 on
eight of them): every model onnx2mcu accepts is bit-exact against ORT in both
requantization modes, a --dequantize conversion (float weights) is refused as a float
model, and every other one is refused with one line naming the node and the operator.
REFUSED_FILES is the list of what is not supported yet; it shrinks as operators are
added."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import SANITIZE, generated, on_board, ort_reference, skip_where_ort_differs

import codegen
from codegen.errors import UnsupportedError
from codegen.oracle.verify import compare_outputs, random_inputs
from codegen.target.build import decode_samples, encode_samples

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
TORCH_ENTRIES: list[dict[str, Any]] = json.loads((CORPUS / "corpus.json").read_text())
# tf2onnx conversions of int8 TFLite models (tests/corpus/make_tf_corpus.py).
TF_ENTRIES: list[dict[str, Any]] = json.loads((CORPUS / "tf_corpus.json").read_text())
# tf2onnx --dequantize writes float weights and activations: a float model, which
# onnx2mcu generates when ORT's float kernels for it are reproduced (all of these are),
# and otherwise refuses as a float model.
FLOAT: list[str] = []
# NNCF 3.4's ONNX backend on tf2onnx's float models (tests/corpus/make_nncf_corpus.py).
NNCF_ENTRIES: list[dict[str, Any]] = json.loads((CORPUS / "nncf_corpus.json").read_text())
# AMD Quark 0.13's ONNX ModelQuantizer on the same (tests/corpus/make_quark_corpus.py).
QUARK_ENTRIES: list[dict[str, Any]] = json.loads((CORPUS / "quark_corpus.json").read_text())
ENTRIES = TORCH_ENTRIES + [e for e in TF_ENTRIES if e["file"] not in FLOAT] + NNCF_ENTRIES + \
    QUARK_ENTRIES
# Architecture -> the operator the first refusal names, for what is not supported yet.
REFUSED: dict[str, str] = {}
# File -> the operator the first refusal names. quantize_dynamic's LSTM
# (DynamicQuantizeLSTM, not yet supported) and its encoder layer (ORT folds the scalar
# Muls of torch's attention into FusedMatMul's alpha, not yet reproduced); the QOperator
# model ORT's quantizer writes for TorchScript's opset-14 encoder layer gives QGemm a
# uint8 bias, which ORT itself refuses to load ("Type 'tensor(uint8)' ... is invalid").
REFUSED_FILES: dict[str, str] = {
    "transformer_encoder_torchscript14_ort_qop_u8s8.onnx": "QGemm"}
ACCEPTED = [e["file"] for e in ENTRIES if e["file"] and e["architecture"] not in REFUSED
            and e["file"] not in REFUSED_FILES]
REJECTED = [e["file"] for e in ENTRIES if e["file"] and (e["architecture"] in REFUSED or
                                                        e["file"] in REFUSED_FILES)]
ARCHITECTURE = {e["file"]: e["architecture"] for e in ENTRIES if e["file"]}


def test_every_producer_made_its_model() -> None:
    every = TORCH_ENTRIES + TF_ENTRIES
    assert all(e["file"] for e in every), [e for e in every if not e["file"]]
    every += NNCF_ENTRIES + QUARK_ENTRIES
    assert all(e["file"] for e in every), [e for e in every if not e["file"]]
    assert (len(TORCH_ENTRIES), len(TF_ENTRIES), len(FLOAT), len(NNCF_ENTRIES),
            len(QUARK_ENTRIES)) == (133, 12, 0, 36, 48)


@pytest.mark.parametrize("name", FLOAT)
def test_dequantized_conversions_are_refused_as_float_models(name: str) -> None:
    with pytest.raises(UnsupportedError) as refusal:
        codegen.verify(CORPUS / name, samples=1)
    message = str(refusal.value)
    assert message.startswith("model '") and "is a float model" in message
    assert ("8-bit I/O adapters" in message) == ("int8io" in name)


# One model per family (and per producer): also in QEMU, and built by its own Makefile.
FAMILIES = ["mobilenetv3_block_torchscript_ort_qdq_u8s8.onnx",
            "shufflenetv2_unit_dynamo_ort_qop_u8s8.onnx",
            "attention_tiny_torchscript_ort_qdq_u8s8.onnx",
            "unet_tiny_dynamo_ort_qop_u8s8.onnx",
            "kws_gru_torchscript_ort_qdq_u8s8.onnx",
            "gelu_mlp_torchscript_ort_qdq_u8s8.onnx",
            "tf_ds_cnn_tflite_int8io_tf2onnx_qdq.onnx",
            "tf_mobilenet_tiny_tf2onnx_quark_a8w8.onnx",
            "tf_ds_cnn_tf2onnx_nncf_performance.onnx",
            "kws_conv1d_torchscript_ort_qop_u8s8.onnx",
            "transformer_encoder_dynamo_ort_qdq_s8s8.onnx",
            "tv_mobilenet_v3_small_dynamo_ort_qdq_u8s8.onnx",
            "kws_lstm_dynamo_quark_a8w8.onnx",
            "gelu_mlp_dynamo_nncf_mixed.onnx",
            "mobilenetv3_block_dynamo_nncf_performance.onnx",
            "digits_logsoftmax_torchscript_ort_qdq_u8s8.onnx",
            "mobilenetv3_block_dynamo_ort_qdq_a16w8_u16.onnx",
            "kws_gru_torchscript_ort_qdq_a16w8_s16.onnx",
            "pad_pool_torchscript_ort_qdq_u8s8.onnx",
            "mixnet_block_dynamo_ort_qdq_s8s8.onnx",
            "attention_tiny_dynamo_ort_qdq_a16w8_u16.onnx",
            "transformer_encoder_torchscript14_ort_qdq_u8s8.onnx",
            "gelu_mlp_dynamo_ort_dynamic_s8.onnx",
            "kws_lstm_dynamo_ort_dynamic_s8.onnx",
            "transformer_encoder_dynamo_ort_dynamic_s8.onnx",
            "kws_lstm_dynamo_quark_u16s8.onnx",
            "transformer_encoder_dynamo_nncf_transformer.onnx"]


# Every accepted model with float requantization (ORT's own arithmetic); the integer-only
# method (--requant int) on a spread that calls every kernel the whole corpus calls in
# that mode and covers every architecture (test_the_int_spread_calls_every_kernel keeps
# it so). The method itself is proven exact against ORT's formula on adversarial cases
# in tests/kernels/test_requant_numerics.py; ONNX2MCU_CORPUS_ALL_MODES=1 takes every
# model in both modes.
INT_SPREAD = [
    # the kernels the families below do not call in int mode
    "tf_mobilenet_tiny_tflite_int8io_tf2onnx_dequantize.onnx",
    "unet_tiny_torchscript_ort_qdq_s8s8.onnx",
    "kws_lstm_torchscript_ort_qdq_u8s8.onnx",
    "tv_mobilenet_v3_small_dynamo_ort_qdq_s8s8.onnx",
    "tf_ds_cnn_tflite_int8io_tf2onnx_dequantize.onnx",
    "tf_mobilenet_tiny_tf2onnx_nncf_performance.onnx",
    "attention_tiny_dynamo_nncf_performance.onnx",
    "tv_mobilenet_v3_small_dynamo_nncf_performance.onnx",
    "gelu_mlp_dynamo_ort_qdq_a16w8_u16.onnx",
    "pad_pool_dynamo_ort_qdq_a16w8_u16.onnx",
    "pad_pool_torchscript_ort_qdq_a16w8_s16.onnx",
    "mixnet_block_torchscript_ort_qdq_a16w8_s16.onnx",
    "attention_tiny_dynamo_ort_dynamic_u8.onnx",
    # the architectures they do not hold
    "kws_dscnn_torchscript_ort_qop_u8s8.onnx",
    "tf_autoencoder_tf2onnx_nncf_performance.onnx",
    "tv_mnasnet_torchscript_ort_qop_u8s8.onnx",
    "tv_mobilenet_v2_torchscript_ort_qop_u8s8.onnx",
    "tv_shufflenet_v2_torchscript_ort_qop_u8s8.onnx",
]
ALL_MODES = os.environ.get("ONNX2MCU_CORPUS_ALL_MODES") == "1"


def int_spread() -> list[str]:
    return ACCEPTED if ALL_MODES else [n for n in ACCEPTED if n in FAMILIES + INT_SPREAD]


@pytest.mark.parametrize("name", ACCEPTED)
def test_accepted_models_are_bit_exact(name: str) -> None:
    report = codegen.verify(CORPUS / name, samples=3, requant="float", cflags=SANITIZE)
    assert report.ok, report.outputs


@pytest.mark.parametrize("name", int_spread())
def test_accepted_models_are_bit_exact_with_integer_requantization(name: str) -> None:
    report = codegen.verify(CORPUS / name, samples=3, requant="int", cflags=SANITIZE)
    assert report.ok, report.outputs


def test_the_int_spread_calls_every_kernel() -> None:
    """The spread above loses no kernel and no architecture of the corpus."""
    def kernels(names: list[str]) -> set[str]:
        return {call.function for name in names
                for call in generated(CORPUS / name, requant="int").program.calls}
    spread = int_spread()
    assert kernels(ACCEPTED) == kernels(spread)
    assert {ARCHITECTURE[n] for n in ACCEPTED} == {ARCHITECTURE[n] for n in spread}


@pytest.mark.parametrize("name", REJECTED)
def test_refused_models_name_the_node_and_operator(name: str) -> None:
    with pytest.raises(UnsupportedError) as refusal:
        codegen.verify(CORPUS / name, samples=1)
    message = str(refusal.value)
    expected = REFUSED_FILES.get(name) or REFUSED[ARCHITECTURE[name]]
    assert message.startswith("node '") and f"({expected}," in message
    assert "\n" not in message




# Through the generated Makefile: one model per family, the requantization modes taken in
# turn (verify proves every model bit-exact above in both; the Makefile and the harness
# are the same for all; every runtime file is compiled with the strict warnings and the
# host's -O3 where tests/targets/test_firmware_component.py builds the shared runtime's
# library). ONNX2MCU_CORPUS_ALL_MODES=1 (make
# test-corpus-makefiles) takes every model in both modes.
MAKEFILE_CASES = ([(name, requant) for name in ACCEPTED for requant in ("float", "int")]
                  if ALL_MODES else
                  [(name, ("float", "int")[i % 2]) for i, name in enumerate(FAMILIES)])


@pytest.mark.parametrize("name,requant", MAKEFILE_CASES)
def test_every_model_through_its_makefile(name: str, requant: str, tmp_path: Path) -> None:
    """generate, the project's own Makefile, then OUT/build/NAME_main on random inputs:
    the same bits as ORT on verify's reference."""
    skip_where_ort_differs(CORPUS / name, requant=requant)
    out = tmp_path / "out"
    result = codegen.generate(CORPUS / name, out, requant=requant, name="net")
    subprocess.run(["make", "-C", str(out), "-s"], check=True, capture_output=True)
    program = generated(CORPUS / name, requant=requant).program
    samples = random_inputs(program.inputs, 2, seed=5)
    (tmp_path / "in.bin").write_bytes(encode_samples(program.inputs, samples))
    subprocess.run([str(out / "build" / f"{result.name}_main"), str(tmp_path / "in.bin"),
                    str(tmp_path / "out.bin")], check=True)
    ours = decode_samples(program.outputs, (tmp_path / "out.bin").read_bytes(), len(samples))
    reports = compare_outputs(program.outputs, ours, ort_reference(CORPUS / name, samples))
    assert all(r.mismatches == 0 and r.elements for r in reports), reports


@pytest.mark.parametrize("board", [on_board("cortex-m4f"), on_board("cortex-m0plus"),
                                   on_board("cortex-m55"), on_board("riscv32")])
@pytest.mark.parametrize("name", FAMILIES)
def test_one_model_per_family_in_qemu(name: str, board: str) -> None:
    report = codegen.verify(CORPUS / name, board=board, samples=1)
    assert report.ok, report.outputs


# The 16-bit activation models (ORT's A16W8, Quark's A16W8 and U16S8): under
# --integer-only their Conv, MatMul and Gemm units run on the exact 16-bit x 8-bit
# kernels (ops/product16.py), bit-exact against ORT on the converted model. The two
# requantization modes alternate (both with ONNX2MCU_CORPUS_ALL_MODES=1): the 16-bit
# kernels do not depend on the mode, the 8-bit parts around them do.
WIDE = [n for n in ACCEPTED if "a16w8" in n or "u16s8" in n]
WIDE_KERNELS = {"q8_conv_s16_im2col", "q8_conv_u16_im2col"}
WIDE_CASES = [(name, requant) for i, name in enumerate(WIDE) for requant in ("float", "int")
              if ALL_MODES or requant == ("int" if i % 2 else "float")]


@pytest.mark.parametrize("name,requant", WIDE_CASES)
def test_16bit_models_are_bit_exact_with_integer_only(name: str, requant: str) -> None:
    gen = generated(CORPUS / name, integer_only=True, requant=requant)
    assert {call.function for call in gen.program.calls} & WIDE_KERNELS
    report = codegen.verify(CORPUS / name, samples=2, requant=requant, integer_only=True,
                            cflags=SANITIZE)
    assert report.ok, report.outputs
    assert report.original is not None


def test_integer_only_distance_also_without_orts_rewrites() -> None:
    """ORT runs the A16W8 GELU-MLP's MatMuls as MatMulNBits (int8 activations quantized at
    run time) at its default level: verify --integer-only then also gives the distance
    to ORT with its graph optimizations disabled, where ORT computes the units in float,
    and leaves it out where the two are the same."""
    report = codegen.verify(CORPUS / "gelu_mlp_dynamo_ort_qdq_a16w8_u16.onnx", samples=2,
                            integer_only=True)
    assert report.ok and report.original is not None
    unoptimized = report.unoptimized_original
    assert unoptimized is not None and "optimizations disabled" in unoptimized.reference
    [at_level], [off] = report.original.outputs, unoptimized.outputs
    assert off.mismatches < at_level.mismatches
    assert off.max_steps is not None and at_level.max_steps is not None
    assert off.max_steps <= 1 < at_level.max_steps
    plain = codegen.verify(CORPUS / "kws_dscnn_torchscript_ort_qdq_a16w8_s16.onnx",
                           samples=1, integer_only=True)
    assert plain.ok and plain.original is not None and plain.unoptimized_original is None


@pytest.mark.parametrize("board", [on_board("cortex-m4f"), on_board("cortex-m0plus"),
                                   on_board("cortex-m55"), on_board("riscv32")])
@pytest.mark.parametrize("name", ["kws_dscnn_torchscript_ort_qdq_a16w8_s16.onnx",
                                  "transformer_encoder_dynamo_quark_u16s8.onnx"])
def test_16bit_integer_only_in_qemu(name: str, board: str) -> None:
    """The exact 16-bit x 8-bit kernels on the cores: SMLAD pairs on M4F, plain C on M0+
    and RV32, Helium's gathered VLDRB.S16 and VMLADAVA.S16 on M55."""
    report = codegen.verify(CORPUS / name, board=board, samples=1, integer_only=True)
    assert report.ok, report.outputs


def test_per_layer_compares_what_ort_computes() -> None:
    """verify --per-layer on a model whose tensors onnx2mcu renames and retypes (ORT's
    x86 int8 -> uint8 rule, WeightBiasQuantization): every layer ORT computes in the
    same type is compared, and all are exact."""
    report = codegen.verify(CORPUS / "unet_tiny_dynamo_nncf_mixed.onnx", samples=1,
                            per_layer=True)
    assert report.ok, report.outputs
    assert report.layers and all(layer.mismatches == 0 for layer in report.layers)
