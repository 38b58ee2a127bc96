"""Operator registry.

Each module in this package implements one operator family: it validates a node and
infers its outputs (`infer`), and lowers it to runtime kernel calls (`lower`). Modules
register themselves with `register`; they are discovered automatically, so adding an
operator means adding one module here plus its kernel in runtime_c/.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..ir import Graph, Node, QuantParams, Tensor
from ..program import Lowered


@dataclass(frozen=True)
class LoweringOptions:
    requant: str = "float"  # "float" or "int"
    # "fast": the optimized kernels where a layer allows them; "reference": the plain
    # loops everywhere (the two are bit-identical; this is for checking that).
    kernels: str = "fast"
    dsp: bool = False  # the core has the DSP extension (for kernel choices by cost)
    # Fast paths store weights as int16 (twice the bytes, no widening in the inner
    # loops) rather than int8: pipeline.wide_weights decides from the board.
    wide_weights: bool = False
    # A microcontroller (not the host): without DSP it gets the unsigned-byte kernels,
    # which suit Thumb-1's addressing.
    cortex_m: bool = False


@dataclass
class Inferred:
    """What `infer` learns about a node: its outputs, and quantization of any tensor."""

    outputs: list[Tensor]
    quant: dict[str, QuantParams] = field(default_factory=dict)


InferFn = Callable[[Node, Graph], Inferred]
LowerFn = Callable[[Node, Graph, LoweringOptions], Sequence[Lowered]]


@dataclass(frozen=True)
class OpDef:
    op_type: str
    domain: str
    infer: InferFn
    lower: LowerFn
    # The operator versions (ONNX since_version) whose semantics are implemented.
    versions: tuple[int, ...] = (1,)
    # Input slots that must be constant at generation time (weights, scales, shapes).
    constant_inputs: frozenset[int] = frozenset()
    # The dtypes accepted on the first (data) input; empty: every dtype onnx2mcu knows.
    data_dtypes: frozenset[str] = frozenset()
    # Float operators of QDQ models: the recipes fuse them into integer operators, and
    # one they leave is a float island (computed in float, as ORT computes it).
    float_island: bool = False


_REGISTRY: dict[tuple[str, str], OpDef] = {}


def register(op: OpDef) -> OpDef:
    key = (_normalize_domain(op.domain), op.op_type)
    if key in _REGISTRY:
        raise RuntimeError(f"operator {key} registered twice")
    _REGISTRY[key] = op
    return op


def _normalize_domain(domain: str) -> str:
    return "" if domain in ("", "ai.onnx") else domain


def lookup(node: Node) -> OpDef | None:
    _load_all()
    return _REGISTRY.get((_normalize_domain(node.domain), node.op_type))


_loaded = False


def _load_all() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
        if not module.startswith("_"):
            importlib.import_module(f"{__name__}.{module}")
