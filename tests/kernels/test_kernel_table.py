"""The kernel table (codegen/ops/kernels.py) against the C runtime: it names exactly the
symbols the compiled runtime exports, each in the file that defines it, with parameter
structs and scratch functions that exist; and the scratch sizes the generator plans
(the table's formulas) are what the C functions beside the kernels compute, on the
parameters of real lowered layers (im2col with int8 and int16 weights, the byte kernels
of cores without DSP, every depthwise form, the products, the float recurrent and
transposed convolutions)."""

from __future__ import annotations

import re
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import SANITIZE, generated

from codegen.backend.emitter import STRICT_CFLAGS, format_struct
from codegen.core.program import CRef, CStruct, CValue, KernelCall
from codegen.core.resources import runtime_dir
from codegen.ops import KERNELS, explain_kernel, exported_symbols
from codegen.ops.kernels import SUFFIXES, lookup_symbol

CORPUS = Path(__file__).resolve().parents[1] / "corpus"


RUNTIME_SOURCES = sorted(runtime_dir().glob("*.c"))


def defined_symbols(sources: list[Path], work: Path) -> dict[str, str]:
    """symbol -> the runtime file that defines it with external linkage. Each file is
    compiled with the strict warnings as errors at -O0, the quickest: the symbols are
    the same at every level, and tests/targets/test_firmware_component.py builds the
    shared runtime (`make lib`, every file) with the host board's flags (-O3)."""
    defined: dict[str, str] = {}
    for source in sources:
        obj = work / f"{source.stem}.o"
        subprocess.run(["cc", *STRICT_CFLAGS, "-O0", "-c", "-o", str(obj), str(source)],
                       check=True)
        nm = subprocess.run(["nm", "-g", "--defined-only", str(obj)], check=True,
                            capture_output=True, text=True).stdout
        for line in nm.splitlines():
            if len(line.split()) == 3:
                defined[line.split()[2]] = source.name
    return defined


def table_files() -> dict[str, str]:
    """symbol -> the runtime file the table says defines it."""
    files = {}
    for symbol in exported_symbols():
        found = lookup_symbol(symbol)
        assert found is not None, symbol
        entry, values = found
        files[symbol] = entry.file(**values)
    return files


def test_the_table_names_each_symbol_once_in_a_runtime_file() -> None:
    table = exported_symbols()
    assert len(table) == len(set(table))
    assert set(table_files().values()) <= {source.name for source in RUNTIME_SOURCES}


def test_the_table_names_every_exported_symbol_in_its_file(tmp_path: Path) -> None:
    """So a project's q8_names.h (which renames the table's symbols) renames them all:
    the symbols the compiled files define are the table's symbols of those files."""
    defined = defined_symbols(RUNTIME_SOURCES, tmp_path)
    table = table_files()
    assert set(table) == set(defined), (sorted(set(defined) - set(table)),
                                        sorted(set(table) - set(defined)))
    for symbol, source in defined.items():
        assert table[symbol] == source, symbol


def test_structs_and_scratch_functions_are_declared() -> None:
    headers = "\n".join(p.read_text() for p in sorted(runtime_dir().glob("*.h")))
    for entry in KERNELS:
        if entry.params:
            assert re.search(rf"\}} {entry.params};", headers), entry.key
        if entry.scratch:
            assert re.search(rf"\b{entry.scratch.function}\(const {entry.params} \*",
                             headers), entry.key


def test_every_name_decodes() -> None:
    """Every exported name is one entry's, and explain says where it lives and what it
    takes; a name the table does not know says so."""
    for symbol in exported_symbols():
        assert lookup_symbol(symbol) is not None, symbol
        assert "runtime_c/" in explain_kernel(symbol), symbol
    assert "im2col" in SUFFIXES and "not a runtime kernel" in explain_kernel("q8_nothing")


# (corpus model, options): together they take every kernel with scratch but the
# instance norm's (no corpus model has one).
CASES = [
    ("kws_dscnn_torchscript_ort_qop_u8s8", {"board": "host"}),
    ("kws_dscnn_torchscript_ort_qop_u8s8", {"board": "host", "weights": "int16"}),
    ("kws_dscnn_torchscript_ort_qop_u8s8", {"board": "cortex-m4f", "weights": "int16"}),
    ("kws_dscnn_torchscript_ort_qop_u8s8", {"board": "cortex-m4f", "memory": "min"}),
    ("kws_dscnn_torchscript_ort_qop_u8s8", {"board": "cortex-m0plus", "requant": "int"}),
    ("mobilenetv3_block_dynamo_ort_qdq_s8s8", {"board": "cortex-m4f"}),
    ("mobilenetv3_block_dynamo_ort_qdq_s8s8", {"board": "cortex-m0plus", "memory": "min"}),
    ("tf_ds_cnn_tflite_int8io_tf2onnx_qdq", {"board": "cortex-m33", "weights": "int16"}),
    ("tf_ds_cnn_tflite_int8io_tf2onnx_qdq", {"board": "cortex-m4f", "memory": "min",
                                             "weights": "int8"}),
    ("tf_ds_cnn_tflite_int8io_tf2onnx_qdq", {"board": "cortex-m55"}),
    ("kws_dscnn_torchscript_ort_qop_u8s8", {"board": "cortex-m55", "requant": "int"}),
    ("kws_dscnn_torchscript_ort_qop_u8s8", {"board": "riscv32"}),
    ("tf_ds_cnn_tflite_int8io_tf2onnx_qdq", {"board": "riscv32", "requant": "float"}),
    ("kws_gru_torchscript_ort_qop_u8s8", {"board": "host"}),
    ("kws_lstm_torchscript_ort_qop_u8s8", {"board": "host"}),
    ("unet_tiny_torchscript_ort_qop_u8s8", {"board": "host"}),
    ("gelu_mlp_dynamo_ort_qdq_a16w8_u16", {"board": "host"}),
    ("kws_dscnn_torchscript_ort_qdq_a16w8_s16", {"board": "host", "integer_only": True}),
]


def without_pointers(value: CValue) -> CValue:
    """The struct with every array reference NULL: the scratch functions read sizes only."""
    if isinstance(value, CRef):
        return None
    if isinstance(value, CStruct):
        return replace(value, fields=tuple((k, without_pointers(v)) for k, v in value.fields))
    return value


def scratch_calls() -> list[KernelCall]:
    calls: dict[tuple[str, str], KernelCall] = {}
    for model, options in CASES:
        for call in generated(CORPUS / f"{model}.onnx", **options).program.calls:
            found = lookup_symbol(call.function)
            if found is not None and found[0].scratch is not None and call.params:
                calls.setdefault((call.function, repr(call.params)), call)
    return list(calls.values())


def test_scratch_functions_agree_with_the_planned_scratch(tmp_path: Path) -> None:
    calls = scratch_calls()
    lines = ['#include <stdio.h>', '#include "q8_runtime.h"', '#include "conv_transpose_f32.h"',
             '#include "instance_norm_f32.h"', '#include "recurrent_f32.h"',
             '#include "matmul_nbits_f32.h"', '#include "conv_s16_im2col.h"',
             "int main(void)", "{"]
    for i, call in enumerate(calls):
        found = lookup_symbol(call.function)
        assert found is not None and found[0].scratch is not None and call.params
        struct = without_pointers(call.params)
        assert isinstance(struct, CStruct)
        lines.append("    {")
        lines.append("        " + format_struct(f"p{i}", struct, "x"))
        lines.append(f'        printf("%lu\\n", (unsigned long){found[0].scratch.function}'
                     f"(&p{i}));")
        lines.append("    }")
    lines += ["    return 0;", "}"]
    source = tmp_path / "scratch.c"
    source.write_text("\n".join(lines) + "\n")
    exe = tmp_path / "scratch"
    subprocess.run(["cc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", *SANITIZE,
                    f"-I{runtime_dir()}", "-o", str(exe), str(source)], check=True)
    printed = subprocess.run([str(exe)], check=True, capture_output=True,
                             text=True).stdout.split()
    planned = [str(call.scratch_bytes) for call in calls]
    assert printed == planned, [(c.function, p, q) for c, p, q in
                                zip(calls, planned, printed, strict=True) if p != q]
    kinds = {lookup_symbol(call.function)[0].key for call in calls}  # type: ignore[index]
    expected = {entry.key for entry in KERNELS if entry.scratch} - {"instance_norm_f32"}
    assert kinds == expected, expected - kinds


@pytest.mark.parametrize("symbol", ["q8_conv_u8_im2col_w16p_freq", "q8_gemm_u8s8_i32",
                                    "q8_dwconv_s8_3x3_gather_ireq"])
def test_explain_names_the_parts(symbol: str) -> None:
    text = explain_kernel(symbol)
    assert text.startswith(symbol + ":") and "When:" in text
