"""`convert`'s round trip, shared by the QDQ tests: the QOperator model it writes, run
by ONNX Runtime, gives exactly what the generated C of the original model gives."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import onnx
from conftest import SANITIZE, generated, skip_where_ort_differs

import codegen
from codegen.api import run_generated
from codegen.ops import float_island_ops
from codegen.options import Options
from codegen.oracle.verify import random_inputs, reference_model, run_ort
from codegen.pipeline import Generated, generate_sources

FLOAT_OPS = float_island_ops()


def our_float_operators(gen: Generated, tables: bool = True) -> Counter[str]:
    """The float operators the generated C computes in float, and with tables those
    inside a table (passes/tabulate.py computes them with ORT's float arithmetic)."""
    ops = Counter(n.op_type for n in gen.graph.nodes if not n.domain and n.op_type in FLOAT_OPS)
    for node in gen.graph.nodes:
        if tables and node.op_type == "Table":
            ops.update(str(op) for op in node.attrs.get("tabulates", ()) if op in FLOAT_OPS)
    return ops


def requantizing_pairs(model: onnx.ModelProto) -> set[str]:
    """The DequantizeLinear nodes read only by one QuantizeLinear: integer
    requantizations, as convert writes a change of an integer tensor's type (scale 1)
    or onnx2mcu's Requantize, which ORT computes as Q(DQ(x)), exactly as the C does."""
    readers: dict[str, list[onnx.NodeProto]] = {}
    for node in model.graph.node:
        for name in node.input:
            readers.setdefault(name, []).append(node)
    outputs = {o.name for o in model.graph.output}
    return {node.output[0] for node in model.graph.node
            if node.op_type == "DequantizeLinear" and node.output[0] not in outputs
            and [r.op_type for r in readers.get(node.output[0], [])] == ["QuantizeLinear"]}


def check_round_trip(model: onnx.ModelProto, tmp_path: Path, integer_only: bool = False,
                     qdq_rules: str = "auto", samples: int = 3) -> None:
    """convert's QOperator model run by ORT == the generated C of the original model;
    its only QuantizeLinear/DequantizeLinear nodes are at the graph's boundary, around
    the float islands, or requantizing pairs (exact integer type changes)."""
    mode = "integer_only" if integer_only else "default"
    result = codegen.convert(model, tmp_path / f"converted_{mode}_{qdq_rules}.onnx",
                             integer_only=integer_only, qdq_rules=qdq_rules)
    converted = onnx.load(str(result.out))
    gen = generated(model, integer_only=integer_only, qdq_rules=qdq_rules)
    assert result.qdq_rules == gen.qdq_rules
    islands = sum(our_float_operators(gen, tables=False).values())
    assert result.float_islands == islands
    inputs = {i.name for i in converted.graph.input}
    outputs = {o.name for o in converted.graph.output}
    if not islands:
        pairs = requantizing_pairs(converted)
        for node in converted.graph.node:
            if node.op_type == "QuantizeLinear":
                assert node.input[0] in inputs | pairs, node.name
            if node.op_type == "DequantizeLinear":
                assert node.output[0] in outputs | pairs, node.name
            assert node.op_type not in FLOAT_OPS, node.name
    skip_where_ort_differs(model, integer_only=integer_only, qdq_rules=qdq_rules)
    data = random_inputs(gen.program.inputs, samples, seed=7)
    # Under the sanitizers, as verify builds it: the same build, taken from the cache
    # where the test has verified the model already.
    ours = run_generated(gen, data, SANITIZE)
    reference = reference_model(converted, generate_sources(converted, Options()).graph,
                                gen.qdq_rules)
    theirs = run_ort(reference.model, data, config=reference.config)
    for a, b in zip(ours, theirs, strict=True):
        for name, value in a.items():
            assert np.array_equal(value.view(np.uint8), b[name].view(np.uint8)), name
