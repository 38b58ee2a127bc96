"""Float elementwise activations that QDQ models leave between DequantizeLinear and
QuantizeLinear: HardSigmoid, HardSwish, Exp, Erf (GELU's), Neg, Abs, Sqrt. ORT computes
them in float (it has no integer kernel for them); onnx2mcu computes them inside the
256-entry table of their chain (transform/tabulate.py), each with ORT's float32
arithmetic: IEEE operations in the order of ORT's CPU kernel, checked exhaustively
against ORT (tests/ops/test_tabulate.py). Each also has a float kernel, for the float
islands where its input is not one dequantized tensor: Exp is MLAS's AVX-512F
exponential and Erf its FMA3 kernel, value by value (their lanes and masked tails
compute alike); Sqrt, Neg and Abs are exact IEEE operations."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from codegen.arith.numerics import mlas_erf, mlas_exp
from codegen.core.ir import Graph, Node
from codegen.errors import UnsupportedError

from . import Inferred, OpDef, register
from ._common import attr_float, attr_str, reject_unknown_attrs
from ._float import FLOAT_TYPES, f32
from .tables import infer_float_activation, lower_float_activation

F32 = np.float32


def _clamp01(v: NDArray[np.float32]) -> NDArray[np.float32]:
    return f32(np.minimum(np.maximum(v, F32(0.0)), F32(1.0)))


def hard_sigmoid(node: Node, operands: list[NDArray[np.float32]]) -> NDArray[np.float32]:
    """max(0, min(1, alpha * x + beta)): a rounded product, then a rounded sum."""
    alpha = F32(attr_float(node, "alpha", 0.2))
    beta = F32(attr_float(node, "beta", 0.5))
    return _clamp01(f32(f32(operands[0] * alpha) + beta))


def hard_swish(node: Node, operands: list[NDArray[np.float32]]) -> NDArray[np.float32]:
    """x * HardSigmoid(x) with alpha 1/6 and beta 0.5."""
    x = operands[0]
    return f32(x * _clamp01(f32(f32(x * F32(1.0 / 6.0)) + F32(0.5))))


def error_function(node: Node, operands: list[NDArray[np.float32]]) -> NDArray[np.float32]:
    """MLAS's erf (MlasErfKernelFma3), value by value."""
    x = operands[0]
    return f32([mlas_erf(v) for v in x.reshape(-1)]).reshape(x.shape)


def exponential(node: Node, operands: list[NDArray[np.float32]]) -> NDArray[np.float32]:
    """MLAS's exp (MlasComputeExpF32KernelAvx512F), value by value."""
    x = operands[0]
    return f32([mlas_exp(v) for v in x.reshape(-1)]).reshape(x.shape)


def negate(node: Node, operands: list[NDArray[np.float32]]) -> NDArray[np.float32]:
    return f32(-operands[0])


def absolute(node: Node, operands: list[NDArray[np.float32]]) -> NDArray[np.float32]:
    return f32(np.abs(operands[0]))


def square_root(node: Node, operands: list[NDArray[np.float32]]) -> NDArray[np.float32]:
    with np.errstate(invalid="ignore"):
        return f32(np.sqrt(operands[0]))


ATTRIBUTES = {("", "HardSigmoid"): {"alpha", "beta"}, ("", "Gelu"): {"approximate"}}


def infer_activation(node: Node, graph: Graph) -> Inferred:
    reject_unknown_attrs(node, ATTRIBUTES.get((node.domain, node.op_type), set()))
    approximate = attr_str(node, "approximate", "none")
    if approximate != "none":
        raise UnsupportedError(f"{node.describe()}: approximate='{approximate}' is not "
                               "supported ('none' only)")
    return infer_float_activation(node, graph)


# Each also runs as a float island (NNCF leaves Conv -> HardSwish -> QuantizeLinear in
# float; LayerNorm decomposed below opset 17 leaves Sqrt, GELU leaves Erf), with the same
# arithmetic (runtime_c/activation_f32.c).
for _op, _versions, _fn in (
        ("HardSigmoid", (6, 22), hard_sigmoid),
        ("HardSwish", (14, 22), hard_swish),
        ("Exp", (6, 13), exponential),
        ("Erf", (9, 13), error_function),
        ("Neg", (6, 13), negate),
        ("Abs", (6, 13), absolute),
        ("Sqrt", (6, 13), square_root)):
    register(OpDef(_op, "", infer_activation, lower_float_activation, versions=_versions,
                   data_dtypes=FLOAT_TYPES, float_island=True, elementwise=_fn))

# The exact GELU: ORT's GeluFusion writes com.microsoft Gelu from x / sqrt(2) -> Erf -> + 1
# -> * x -> * 0.5 (transform/float_fusions.py), ONNX's own from opset 20; one arithmetic.
register(OpDef("Gelu", "com.microsoft", infer_activation, lower_float_activation,
               data_dtypes=FLOAT_TYPES, float_island=True))
register(OpDef("Gelu", "", infer_activation, lower_float_activation, versions=(20,),
               data_dtypes=FLOAT_TYPES, float_island=True))
