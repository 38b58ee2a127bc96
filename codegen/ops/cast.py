"""Cast between the types onnx2mcu knows. An 8-bit or int32 tensor cast to float32 (the
input adapter tf2onnx --dequantize writes before its Sub and Mul) is one conversion per
element, exact for 8-bit values and rounded to nearest for int32 as ORT's static_cast
is. An 8-bit tensor cast to int32 is taken where it indexes a table (Gather from a
256-entry table, as `convert` writes onnx2mcu's Table; transform/tabulate.py turns it back
into a Table). Other casts are refused at lowering, naming the node."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from codegen.core.ir import ONNX_TO_DTYPE, Graph, Node, Tensor
from codegen.core.program import Alias, CStruct, KernelCall, Lowered
from codegen.errors import ModelError, UnsupportedError

from . import Inferred, LoweringOptions, OpDef, register
from ._common import attr_int, input_tensor, kernel_suffix, reject_unknown_attrs
from .kernels import kernel


@dataclass(frozen=True)
class CastSpec:
    source: str  # the input's dtype
    target: str  # the dtype of `to`


def infer_cast(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, {"to", "saturate", "round_mode"})
    x = input_tensor(node, graph, 0, "input")
    to = ONNX_TO_DTYPE.get(attr_int(node, "to", 0))
    if to is None:
        raise ModelError(f"{node.describe()}: Cast to type {node.attrs.get('to')} is not "
                         f"supported (onnx2mcu knows {', '.join(sorted(ONNX_TO_DTYPE.values()))})")
    return Inferred([Tensor(node.outputs[0], to, x.shape)], spec=CastSpec(x.dtype, to))


def lower_cast(node: Node, graph: Graph, spec: CastSpec,
               options: LoweringOptions) -> Sequence[Lowered]:
    x, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    if spec.target == "float32" and spec.source in ("uint8", "int8", "int32"):
        params = CStruct("q8_cast_params", (("size", x.numel),))
        return [KernelCall(kernel("cast").symbol(x=kernel_suffix(x.dtype)), node.name, (x.name,),
                           (y.name,), params, (), ("cast.c",))]
    if spec.source == spec.target:
        return [Alias(y.name, x.name)]
    raise UnsupportedError(f"{node.describe()}: Cast from {spec.source} to {spec.target} is "
                           "not supported; supported: 8-bit or int32 to float32, and 8-bit "
                           "to int32 as the index of a table lookup (Cast -> Gather from a "
                           "constant 256-entry table)")


register(OpDef("Cast", "", infer_cast, lower_cast, versions=(6, 9, 13, 19, 21, 23, 24, 25)))
