"""ORT's IdentityElimination (a level-1 rewrite, before any QDQ rule): an Identity whose
output is not a graph output goes, and its readers read its input. TorchScript writes
one where two layers share a parameter (nn.MultiheadAttention's zero biases in two
blocks: Identity(DequantizeLinear(bias))); without it, the second layer sees its bias
as computed at run time."""

from __future__ import annotations

from dataclasses import replace

from codegen.core.ir import Graph, Node
from codegen.core.pattern import float_node


def eliminate_identities(graph: Graph) -> tuple[Graph, list[str]]:
    outputs = set(graph.outputs)
    renamed: dict[str, str] = {}
    kept: list[Node] = []
    gone: list[str] = []
    for node in graph.nodes:
        node = replace(node, inputs=tuple(renamed.get(i, i) for i in node.inputs))
        if float_node(node, "Identity") and node.outputs[0] not in outputs and node.inputs[0]:
            renamed[node.outputs[0]] = node.inputs[0]
            gone.append(node.name)
            continue
        kept.append(node)
    if not gone:
        return graph, []
    return replace(graph, nodes=kept), gone
