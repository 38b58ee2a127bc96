"""IR -> Program: each node becomes runtime kernel calls with precomputed parameters."""

from __future__ import annotations

from dataclasses import replace

from . import ops
from .ir import Graph, Tensor
from .ops import LoweringOptions
from .program import CStruct, KernelCall, Program

COPY_SOURCES = ("copy.c",)


def lower_graph(graph: Graph, name: str, options: LoweringOptions) -> Program:
    calls: list[KernelCall] = []
    for node in graph.nodes:
        opdef = ops.lookup(node)
        assert opdef is not None, node.describe()
        lowered = opdef.lower(node, graph, options)
        calls.extend(replace(call, node=node.describe()) for call in lowered)
    tensors = dict(graph.tensors)
    outputs, copies = _graph_outputs(graph, tensors)
    calls.extend(copies)
    used = {t for call in calls for t in call.inputs}
    constants = {k: v for k, v in graph.constants.items() if k in used}
    return Program(name=name, inputs=[tensors[i] for i in graph.inputs], outputs=outputs,
                   tensors=tensors, calls=calls, constants=constants, requant=options.requant)


def _graph_outputs(graph: Graph, tensors: dict[str, Tensor]) -> tuple[list[Tensor],
                                                                       list[KernelCall]]:
    """Each graph output gets its own buffer. An output that is a graph input, a constant
    or a repeat of an earlier output is filled by a copy."""
    produced = {o for node in graph.nodes for o in node.outputs}
    outputs: list[Tensor] = []
    copies: list[KernelCall] = []
    seen: set[str] = set()
    for index, name in enumerate(graph.outputs):
        tensor = tensors[name]
        if name in produced and name not in seen:
            outputs.append(tensor)
        else:
            alias = replace(tensor, name=f"{name}#output{index}")
            tensors[alias.name] = alias
            outputs.append(alias)
            copies.append(copy_call(name, alias))
        seen.add(name)
    return outputs, copies


def copy_call(source: str, target: Tensor) -> KernelCall:
    params = CStruct("q8_copy_params", (("bytes", int(target.nbytes)),))
    return KernelCall("q8_copy", f"copy to output '{target.name.split('#')[0]}'", (source,),
                      (target.name,), params, (), COPY_SOURCES)

