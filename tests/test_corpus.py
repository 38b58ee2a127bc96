"""The model corpus (tests/corpus/, made by tests/corpus/make_corpus.py with torch 2.13's
TorchScript and dynamo exporters and ONNX Runtime's quantize_static in QDQ and QOperator
format): every model onnx2mcu accepts is bit-exact against ORT in both requantization
modes, and every other one is refused with one line naming the node and the operator.
REFUSED is the list of what is not supported yet; it shrinks as operators are added."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import SANITIZE

import codegen
from codegen.errors import UnsupportedError

CORPUS = Path(__file__).resolve().parent / "corpus"
ENTRIES: list[dict[str, Any]] = json.loads((CORPUS / "corpus.json").read_text())
# Architecture -> the operator the first refusal names, for what is not supported yet.
REFUSED: dict[str, str] = {}
ACCEPTED = [e["file"] for e in ENTRIES if e["file"] and e["architecture"] not in REFUSED]
REJECTED = [e["file"] for e in ENTRIES if e["file"] and e["architecture"] in REFUSED]
ARCHITECTURE = {e["file"]: e["architecture"] for e in ENTRIES if e["file"]}
CROSS_TOOLS = shutil.which("arm-none-eabi-gcc") and shutil.which("qemu-system-arm")


def test_every_producer_made_its_model() -> None:
    assert all(e["file"] for e in ENTRIES), [e for e in ENTRIES if not e["file"]]
    assert len(ENTRIES) == 28


@pytest.mark.parametrize("requant", ["float", "int"])
@pytest.mark.parametrize("name", ACCEPTED)
def test_accepted_models_are_bit_exact(name: str, requant: str) -> None:
    report = codegen.verify(CORPUS / name, samples=3, requant=requant, cflags=SANITIZE)
    assert report.ok, report.outputs


@pytest.mark.parametrize("name", REJECTED)
def test_refused_models_name_the_node_and_operator(name: str) -> None:
    with pytest.raises(UnsupportedError) as refusal:
        codegen.verify(CORPUS / name, samples=1)
    message = str(refusal.value)
    assert message.startswith("node '") and f"({REFUSED[ARCHITECTURE[name]]}," in message
    assert "\n" not in message


@pytest.mark.skipif(not CROSS_TOOLS, reason="no arm-none-eabi-gcc or qemu-system-arm")
@pytest.mark.parametrize("board", ["cortex-m4f", "cortex-m0plus"])
@pytest.mark.parametrize("name", ["mobilenetv3_block_torchscript_ort_qdq_u8s8.onnx",
                                  "shufflenetv2_unit_dynamo_ort_qop_u8s8.onnx",
                                  "attention_tiny_torchscript_ort_qdq_u8s8.onnx",
                                  "unet_tiny_dynamo_ort_qop_u8s8.onnx",
                                  "kws_gru_torchscript_ort_qdq_u8s8.onnx",
                                  "gelu_mlp_torchscript_ort_qdq_u8s8.onnx"])
def test_one_model_per_family_in_qemu(name: str, board: str) -> None:
    report = codegen.verify(CORPUS / name, board=board, samples=1)
    assert report.ok, report.outputs
