"""IR -> Program: each node becomes runtime kernel calls with precomputed parameters,
or an alias when it only changes the layout."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace

import numpy as np

from codegen import ops
from codegen.core.ir import Graph, Node, Tensor
from codegen.core.program import (
    Alias,
    CDouble,
    CFloat,
    CInts,
    ComputedConstant,
    CStruct,
    CValue,
    Intermediate,
    KernelCall,
    Lowered,
    Program,
)
from codegen.errors import ModelError
from codegen.ops import LoweringOptions

COPY_SOURCES = ("copy.c",)


def lower_graph(graph: Graph, name: str, options: LoweringOptions) -> Program:
    calls: list[KernelCall] = []
    aliases: dict[str, str] = {}
    constants = dict(graph.constants)
    tensors = dict(graph.tensors)
    for node in graph.nodes:
        for item in ops.lower_node(node, graph, options):
            check_finite(node, item)
            if isinstance(item, Alias):
                aliases[item.tensor] = item.source
            elif isinstance(item, ComputedConstant):
                constants[item.tensor] = item.values
            elif isinstance(item, Intermediate):
                tensors[item.tensor.name] = item.tensor
            else:
                calls.append(replace(item, node=ops.layer_description(node), layer=node.name))
    program = Program(name=name, inputs=[tensors[i] for i in graph.inputs], outputs=[],
                      tensors=tensors, calls=calls, requant=options.requant, aliases=aliases)
    program.outputs, copies = _graph_outputs(graph, program)
    calls.extend(copies)
    used = {program.root(t) for call in calls for t in call.inputs}
    program.constants = {k: v for k, v in constants.items() if k in used}
    return program


def _non_finite_field(value: CValue) -> float | None:
    if isinstance(value, CFloat | CDouble):
        return None if math.isfinite(value.value) else value.value
    if isinstance(value, CStruct):
        for _, field in value.fields:
            bad = _non_finite_field(field)
            if bad is not None:
                return bad
    return None


def check_finite(node: Node, item: Lowered) -> None:
    """Every float constant lowering derives (requantization scales, ratios, dequantized
    weights) must be finite: C has no literal for NaN, and an infinite scale comes from
    quantization parameters too far apart for float32 (e.g. y_scale 1e-45), which no
    real model has."""
    if isinstance(item, Alias | Intermediate):
        return
    arrays = [(item.tensor, item.values)] if isinstance(item, ComputedConstant) else \
        [(a.name, a.values) for a in item.arrays]
    for name, values in arrays:
        array = np.asarray(values)
        if array.dtype.kind == "f" and not np.all(np.isfinite(array)):
            bad = array[~np.isfinite(array)].reshape(-1)[0]
            raise ModelError(f"{node.describe()}: derived constant '{name}' is {bad} (its "
                             "quantization scales are too far apart for float32)")
    if isinstance(item, KernelCall) and item.params is not None:
        bad_field = _non_finite_field(item.params)
        if bad_field is not None:
            raise ModelError(f"{node.describe()}: a derived kernel parameter is {bad_field} "
                             "(its quantization scales are too far apart for float32)")
        wide = _int_out_of_range(item.params, item.params.ctype)
        if wide is not None:
            raise ModelError(f"{node.describe()}: kernel parameter {wide[0]} = {wide[1]} is "
                             "beyond the 32-bit integers the kernel takes it in")


# The kernels' parameter structs hold 32-bit integers (int32_t, int, uint32_t), never
# wider scalars: an attribute that reaches one (a stride, a size, a shift) must fit.
INT_FIELD_RANGE = (-2**31, 2**32 - 1)


def _int_out_of_range(value: CValue, where: str) -> tuple[str, int] | None:
    """The first integer of a parameter struct (its fields, nested structs, integer
    lists) outside INT_FIELD_RANGE, with the field's name, or None."""
    low, high = INT_FIELD_RANGE
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return None if low <= value <= high else (where, value)
    if isinstance(value, CInts):
        bad = next((v for v in value.values if not low <= int(v) <= high), None)
        return None if bad is None else (where, int(bad))
    if isinstance(value, CStruct):
        for name, field in value.fields:
            found = _int_out_of_range(field, f"{where}.{name}")
            if found is not None:
                return found
    return None


def _graph_outputs(graph: Graph, program: Program) -> tuple[list[Tensor], list[KernelCall]]:
    """Each graph output gets its own buffer, written by the kernel that computes it. An
    output that is a graph input, a constant, an alias or a repeat of an earlier output
    is filled by a copy."""
    produced = {o for call in program.calls for o in call.outputs}
    outputs: list[Tensor] = []
    copies: list[KernelCall] = []
    seen: set[str] = set()
    for index, name in enumerate(graph.outputs):
        tensor = program.tensors[name]
        if name in produced and name not in seen:
            outputs.append(tensor)
        else:
            target = replace(tensor, name=internal_name(f"{name}#output{index}",
                                                        program.tensors),
                             external_name=name)
            program.tensors[target.name] = target
            outputs.append(target)
            copies.append(copy_call(name, target))
        seen.add(name)
    return outputs, copies


def internal_name(wanted: str, taken: Mapping[str, object]) -> str:
    """`wanted`, made unique among `taken` (a model may use any string as a name)."""
    name = wanted
    while name in taken:
        name += "#"
    return name


def copy_call(source: str, target: Tensor) -> KernelCall:
    params = CStruct("q8_copy_params", (("bytes", int(target.nbytes)),))
    return KernelCall("q8_copy", f"copy to output '{target.onnx_name}'", (source,),
                      (target.name,), params, (), COPY_SOURCES)
