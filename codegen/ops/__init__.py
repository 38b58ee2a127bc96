"""Operator registry.

Each module in this package is one operator family, and declares everything about it
in the `OpDef`s it registers: the checks and shape inference (`infer`, which parses a
node once into the family's typed spec), the lowering to runtime kernel calls that
consumes that spec (`lower`), the QDQ fusion rule ORT applies to its float form
(`fusion`), whether it absorbs a following Relu/Clip (`absorbs_clamp`), how `convert`
writes it (`export`), and how QDQ moves through it (`moves_values`,
`ort_propagates`). The kernels' C sources are named by the calls `lower` returns.
Modules are discovered automatically, so adding an operator means adding one module
here plus its kernel in runtime_c/; nothing else refers to an operator by name.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import onnx

from codegen.core.ir import Graph, Node, QuantParams, Tensor
from codegen.core.program import Lowered

# The writer operators export themselves with (`convert`, codegen/views/exporter.py).
from ._export import INT64_UNITS_PROPERTY as INT64_UNITS_PROPERTY
from ._export import ProductSlots as ProductSlots
from ._export import Writer as Writer
from ._export import export_as_is as export_as_is
from .kernels import KERNELS as KERNELS
from .kernels import Kernel as Kernel
from .kernels import explain_kernel as explain_kernel
from .kernels import exported_symbols as exported_symbols
from .kernels import kernel as kernel
from .kernels import kernel_family as kernel_family

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from codegen.core.pattern import Index, Quantized


# The domain of onnx2mcu's own operators, which the recipes write (Requantize, ConvAdd,
# Table) and `convert` writes back as standard ONNX.
OWN_DOMAIN = "ai.onnx2mcu"
# The domain of the band operators of --memory min (RowsWindow, RowsPlace,
# QLinearConvGather), which only the banding pass writes.
BAND_DOMAIN = "onnx2mcu"


def requant_suffix(requant: str) -> str:
    """The token that names a kernel's requantization mode: "freq" for "float" (a float32
    scale, as ORT's MLAS requantizes), "ireq" for "int" (an integer multiplier and shift)."""
    return "ireq" if requant == "int" else "freq"


@dataclass(frozen=True)
class LoweringOptions:
    requant: str = "float"  # "float" or "int"
    # "fast": the optimized kernels where a layer allows them; "reference": the plain
    # loops everywhere (the two are bit-identical; this is for checking that).
    kernels: str = "fast"
    dsp: bool = False  # the core has the DSP extension (for kernel choices by cost)
    # Fast paths store weights as int16 (twice the bytes, no widening in the inner
    # loops) rather than int8: pipeline.wide_weight_nodes decides from the board, for
    # every layer (wide_nodes None) or for the layers named in wide_nodes.
    wide_weights: bool = False
    wide_nodes: frozenset[str] | None = None
    # A microcontroller (not the host): without DSP it gets the unsigned-byte kernels,
    # which suit Thumb-1's addressing.
    mcu: bool = False
    # A Thumb-1 core (M0/M0+): its depthwise kernel always works from a padded copy.
    thumb1: bool = False
    # A core with Helium (MVE: Cortex-M55, M85): its int8 kernels where it has them.
    mve: bool = False
    # A RISC-V core (RV32IM): its kernels where it has them.
    riscv: bool = False

    @property
    def requant_suffix(self) -> str:
        """The kernel-name token of the requantization mode (requant_suffix)."""
        return requant_suffix(self.requant)

    def wide_for(self, node: str) -> bool:
        """Whether the layer `node` stores its weights as int16."""
        return self.wide_weights and (self.wide_nodes is None or node in self.wide_nodes)


@dataclass
class Inferred:
    """What `infer` learns about a node: its outputs, the quantization of any tensor,
    and the family's typed spec of the node (its parsed attributes, constants and
    geometry), which `lower` receives so that it does not parse or check them again."""

    outputs: list[Tensor]
    quant: dict[str, QuantParams] = field(default_factory=dict)
    spec: Any = None


InferFn = Callable[[Node, Graph], Inferred]
# lower(node, graph, spec, options): `spec` is what the same graph's `infer` returned.
LowerFn = Callable[[Node, Graph, Any, LoweringOptions], Sequence[Lowered]]
# A fusion rule's builder: the fused operator's inputs, or None where ORT leaves the
# unit in float. Arguments: the graph, the float node, the DequantizeLinear feeding
# each input (None where there is none), the QuantizeLinear of its output (None for a
# float output, where the rule allows one), and whether --integer-only asks for it.
FusionBuild = Callable[[Graph, Node, "list[Quantized | None]", "Quantized", bool],
                       "list[str] | None"]
FloatOutputBuild = Callable[[Graph, Node, "list[Quantized | None]", None, bool],
                            "list[str] | None"]
ExportFn = Callable[[Node, Writer], None]
# None: this node's configuration is not one onnx2mcu reproduces (Pow by a tensor).
ElementwiseFn = Callable[[Node, "list[NDArray[np.float32]]"], "NDArray[np.float32] | None"]


GENERIC_UNFUSED = ("ONNX Runtime's fusion conditions for it do not hold (quantization axes "
                   "or types)")


def same_attrs(graph: Graph, node: Node) -> dict[str, Any]:
    return dict(node.attrs)


@dataclass(frozen=True)
class FloatOutputFusion:
    """DQ inputs -> float op with no QuantizeLinear after: what ORT still fuses it into
    (QGemm with float output, MatMulIntegerToFloat)."""

    target: str
    domain: str
    build: FloatOutputBuild
    attrs: Callable[[Graph, Node], dict[str, Any]] = same_attrs


@dataclass(frozen=True)
class Fusion:
    """ORT's QDQ rule for a float operator: DQ inputs -> op -> Q becomes `target`."""

    target: str
    domain: str
    build: FusionBuild
    attrs: Callable[[Graph, Node], dict[str, Any]] = same_attrs
    # How many leading inputs must come from a DequantizeLinear (None: all of them).
    dequantized_inputs: int | None = 1
    # On x86 (QDQIsInt8Allowed false) ORT fuses no such unit whose activation is int8.
    int8_input_refused_on_x86: bool = False
    # An integer product (Conv, MatMul, Gemm): ORT's kernel gives its input's type, and
    # the inputs may mix types.
    product: bool = False
    float_output: FloatOutputFusion | None = None
    # Why ORT leaves the node unfused when the generic conditions hold (for inspect).
    unfused_hint: Callable[[Node], str] = lambda node: GENERIC_UNFUSED
    # --integer-only's rule where the activation is 16-bit (A16W8), which ORT fuses into
    # no integer kernel: onnx2mcu's own exact 16-bit product (ops/product16.py).
    wide: Fusion | None = None


@dataclass(frozen=True)
class RowAccess:
    """How a node reads an input along H: output row j reads input rows
    [j * stride - pad, j * stride - pad + kernel)."""

    kernel: int
    stride: int
    pad: int


ELEMENTWISE_ROWS = RowAccess(1, 1, 0)


@dataclass(frozen=True)
class BandRule:
    """How an operator runs a band of output rows at a time (generate --memory min,
    codegen/transform/bands.py): each band is a node of the same operator over a window
    of its inputs' rows, and its results are those of the whole layer's rows."""

    # The inputs it reads a window of rows of (the others must be constants).
    inputs: tuple[int, ...]
    # How it reads each of them along H; None: this node cannot run in bands (its
    # attributes or shapes). Called on 4-D inputs and output of one batch.
    access: Callable[[Node, Graph], dict[int, RowAccess] | None]
    # The dtypes of the inputs it reads by rows (the output is 8-bit).
    input_dtypes: tuple[str, ...] = ("int8", "uint8")
    # The axis its inputs' rows lie on: 2 (NCHW), or 1 (an NHWC tensor a transpose reads
    # a row of W x C values at a time).
    rows_axis: int = 2
    # The byte its windows are padded with (a convolution's input zero point); None:
    # the rows it reads are all inside the tensor.
    pad_value: Callable[[Node, Graph], int] | None = None
    # Its attributes for a band (a convolution drops its pads above and below, which its
    # window holds); None: its own.
    band_attrs: Callable[[Node, Graph], dict[str, Any]] | None = None
    # A form that reads its window's rows straight from the bands holding them (at most
    # `gathered_sources` bands), for the nodes `gathers` accepts: gathered(node, bands,
    # attrs) builds that band.
    gathers: Callable[[Node, Graph], bool] | None = None
    gathered: Callable[[Node, Sequence[str], dict[str, Any]], Node] | None = None
    gathered_sources: int = 0


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
    # Constant slots read as plain float values that no QDQ recipe fuses (a Pad's
    # constant_value): a DequantizeLinear of constants there folds at import to the
    # float values ORT's DequantizeLinear computes (ORT runs the operator in float on them).
    float_constants: frozenset[int] = frozenset()
    # The dtypes accepted on the first (data) input; empty: every dtype onnx2mcu knows.
    data_dtypes: frozenset[str] = frozenset()
    # Float operators of QDQ models: the recipes fuse them into integer operators, and
    # one they leave is a float island (computed in float, as ORT computes it).
    float_island: bool = False
    fusion: Fusion | None = None
    # Clamps its own 8-bit output (a requantization to [act_min, act_max], or a lookup
    # table): a Relu/Clip that alone reads that output is folded into the clamp.
    absorbs_clamp: bool = False
    # How `convert` writes the node as ONNX; None: as it is.
    export: ExportFn | None = None
    # Moves values without arithmetic: DQ -> op -> Q with one quantization on both
    # sides is the op on the integers (ORT's DropQDQ actions). A predicate where the
    # node's attributes decide.
    moves_values: bool | Callable[[Node], bool] = False
    # ORT's QDQPropagation moves DequantizeLinear forward and QuantizeLinear backward
    # through it; `integer_only_propagates`: --integer-only does too.
    ort_propagates: bool = False
    integer_only_propagates: bool = False
    # A float elementwise operator: its function as ORT's CPU kernel computes it, on
    # float32 operands of one shape (the variable ones) or scalars (constants). A chain
    # of such operators between one DequantizeLinear and one QuantizeLinear becomes a
    # 256-entry table (transform/tabulate.py).
    elementwise: ElementwiseFn | None = None
    # A form of another operator's band (generate --memory min): its calls are that
    # operator's layer's (report and inspect count them there).
    band_of: tuple[str, str] | None = None
    # Which of ONNX Runtime's CPU-dependent arithmetic the node's values follow, as names
    # the CPU profiles know (codegen/oracle/cpu.py): a reduction's summation order
    # ("sums-rows", "sums-leading", "sums-inner"), a call of the C library's expf ("expf").
    ort_traits: Callable[[Node, Graph], frozenset[str]] | None = None
    # Quantizes float values at run time with a scale it computes (dynamic quantization):
    # how many values one inference scans for their minimum and maximum and divides.
    runtime_quantized: Callable[[Node, Graph], int] | None = None
    # How it runs in row bands (generate --memory min); None: it does not.
    bands: BandRule | None = None
    # An integer product (ORT computes it with MLAS's u8 x s8 GEMM): where it reads its
    # activation A, its weights B and their zero point, and its output zero point.
    product: ProductSlots | None = None
    # The fast kernels can store its constant 8-bit weights (product.b) as int16
    # (--weights): how the layer's gain is modelled ("conv": output channels on axis 1;
    # "fc": features on the last axis), or None for this node (a grouped convolution has
    # no int16-weight kernel).
    wide_weights: Callable[[Node], str | None] | None = None
    # ORT's WeightBiasQuantization quantizes this float operator's weights (input 1) and
    # bias (input 2) itself (codegen/transform/weights.py): the weights' output-channel
    # axis, along which a per-channel bias goes.
    weight_bias_axis: Callable[[Node], int] | None = None

    def moves(self, node: Node) -> bool:
        """Whether this node moves values (a mode may decide: Resize)."""
        return self.moves_values(node) if callable(self.moves_values) else self.moves_values


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


def lower_node(node: Node, graph: Graph, options: LoweringOptions) -> Sequence[Lowered]:
    """The node's kernel calls: its family parses it once (`infer`, on the graph as it
    is now) and lowers the spec that gives."""
    opdef = lookup(node)
    assert opdef is not None, node.describe()
    return opdef.lower(node, graph, opdef.infer(node, graph).spec, options)


def operator_version(node: Node) -> int:
    """The since_version of the operator schema that applies at the node's opset."""
    try:
        return int(onnx.defs.get_schema(node.op_type, node.opset, node.domain).since_version)
    except Exception:  # a domain onnx does not know (com.microsoft): its opset is the version
        return node.opset


def layer_description(node: Node) -> str:
    """How kernel calls name the layer the node computes: the node, or for a band in
    another form (OpDef.band_of), that operator's node of the same name."""
    opdef = lookup(node)
    if opdef is None or opdef.band_of is None:
        return node.describe()
    op_type, domain = opdef.band_of
    return replace(node, op_type=op_type, domain=domain).describe()


def runtime_quantized(node: Node, graph: Graph) -> int:
    """The values the node quantizes at run time per inference (OpDef.runtime_quantized)."""
    opdef = lookup(node)
    if opdef is None or opdef.runtime_quantized is None:
        return 0
    return opdef.runtime_quantized(node, graph)


def ort_traits(node: Node, graph: Graph) -> frozenset[str]:
    """The node's OpDef.ort_traits: which of ORT's CPU-dependent arithmetic it follows."""
    opdef = lookup(node)
    if opdef is None or opdef.ort_traits is None:
        return frozenset()
    return opdef.ort_traits(node, graph)


def product_slots(node: Node) -> ProductSlots | None:
    """Where an integer product reads A, B and their zero points (OpDef.product)."""
    opdef = lookup(node)
    return opdef.product if opdef is not None else None


def wide_weights_kind(node: Node) -> str | None:
    """How int16 weights pay off in this layer ("conv" or "fc"; OpDef.wide_weights), or
    None where its fast kernels cannot store them so."""
    opdef = lookup(node)
    if opdef is None or opdef.wide_weights is None:
        return None
    return opdef.wide_weights(node)


def weight_bias_axis(node: Node) -> int | None:
    """The output-channel axis of the weights ORT's WeightBiasQuantization quantizes for
    this float node (OpDef.weight_bias_axis), or None where it quantizes none."""
    opdef = lookup(node)
    if opdef is None or opdef.weight_bias_axis is None:
        return None
    return opdef.weight_bias_axis(node)


def band_rule(node: Node) -> BandRule | None:
    """How the node's operator runs in row bands (OpDef.bands), if it does."""
    opdef = lookup(node)
    return opdef.bands if opdef is not None else None


def runs_nchwc(node: Node, graph: Graph) -> bool:
    """Does ORT run this float convolution with an NCHWc kernel, its output then in that
    layout? (ORT's NCHWc transformer as ops/_nchwc.py models it.)"""
    from ._nchwc import conv_is_nchwc

    return conv_is_nchwc(node, graph)


def nchwc_layout(graph: Graph, index: Index, tensor: str) -> bool | None:
    """Whether ORT holds a float tensor in NCHWc layout: True, False, or None where
    onnx2mcu cannot tell (ops/_nchwc.py)."""
    from ._nchwc import nchwc_layout as layout

    return layout(graph, index, tensor)


def registered() -> list[OpDef]:
    """Every operator, sorted by domain and type."""
    _load_all()
    return [_REGISTRY[key] for key in sorted(_REGISTRY)]


def standard(op_type: str) -> OpDef | None:
    """The ai.onnx operator `op_type`."""
    _load_all()
    return _REGISTRY.get(("", op_type))


def fusion_of(node: Node) -> Fusion | None:
    """ORT's QDQ fusion rule for a float node, if it has one."""
    opdef = standard(node.op_type) if node.domain in ("", "ai.onnx") else None
    return opdef.fusion if opdef is not None else None


def float_island_ops() -> frozenset[str]:
    """The float operators a QDQ model may leave between DequantizeLinear and
    QuantizeLinear."""
    return frozenset(op.op_type for op in registered() if op.float_island)


_loaded = False


def _load_all() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
        if not module.startswith("_"):
            importlib.import_module(f"{__name__}.{module}")
