"""IR -> Program: each node becomes runtime kernel calls with precomputed parameters,
or an alias when it only changes the layout."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from . import ops
from .ir import Graph, Tensor
from .ops import LoweringOptions
from .program import Alias, ComputedConstant, CStruct, KernelCall, Program

COPY_SOURCES = ("copy.c",)


def lower_graph(graph: Graph, name: str, options: LoweringOptions) -> Program:
    calls: list[KernelCall] = []
    aliases: dict[str, str] = {}
    constants = dict(graph.constants)
    for node in graph.nodes:
        opdef = ops.lookup(node)
        assert opdef is not None, node.describe()
        for item in opdef.lower(node, graph, options):
            if isinstance(item, Alias):
                aliases[item.tensor] = item.source
            elif isinstance(item, ComputedConstant):
                constants[item.tensor] = item.values
            else:
                calls.append(replace(item, node=node.describe()))
    tensors = dict(graph.tensors)
    program = Program(name=name, inputs=[tensors[i] for i in graph.inputs], outputs=[],
                      tensors=tensors, calls=calls, requant=options.requant, aliases=aliases)
    program.outputs, copies = _graph_outputs(graph, program)
    calls.extend(copies)
    used = {program.root(t) for call in calls for t in call.inputs}
    program.constants = {k: v for k, v in constants.items() if k in used}
    return program


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
