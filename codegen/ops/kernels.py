"""The kernel table: one entry per variant family of the C runtime (runtime_c/).

Each entry gives the symbols it names (a pattern over a few axes), the runtime file that
defines them, the parameter struct, the weight layout the generator writes, the scratch
size (the C function beside the kernel's declaration, and the same formula here over the
parameters the generator fills in), and the predicate that selects it. The lowerings
take their kernels' names, files and scratch sizes from here; `inspect` and `report`
explain a name by it; tests check the table against the symbols the compiled runtime
exports (tests/kernels/test_kernel_table.py) and the scratch formulas against the C functions.

Names follow one grammar, `q8_<family>_<type>[_<shape>][_<method>][_<variant>][_<output>]`
(docs/kernels-and-memory.md, "Kernel names"); SUFFIXES says what each part means.
"""
from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from codegen.core.program import CStruct, CValue

# What each part of a kernel's name says, in the order the grammar puts them.
SUFFIXES: dict[str, str] = {
    "u8": "uint8 activations",
    "s8": "int8 activations",
    "s32": "int32 input",
    "f32": "float32 (as the type: float kernel; as the output: float32 result)",
    "u8s8": "a uint8 x int8 product (likewise s8s8, u8u8, s8u8: A's type, then B's)",
    "3x3": "a 3x3 filter per channel",
    "im2col": "gathers the input windows into columns, then dot products",
    "w16": "int16 weights, row pairs interleaved per two taps (the DSP's dual MAC)",
    "w16p": "int16 weights, output pixels in the vector lanes (the host: SSE2 to AVX-512 VNNI, "
            "chosen at run time)",
    "b8": "unsigned bytes (x + 128, w + 128) for cores without DSP",
    "rv": "RV32IM: four output channels by four pixels a pass, weights interleaved per tap",
    "mve": "Helium (MVE, Cortex-M55/M85): int8 weights and int8 columns, 16 products a "
           "VMLADAVA",
    "padded": "copies each channel into a plane with its border first",
    "pix": "the host's depthwise: outputs in the vector lanes, weight pairs over row pairs "
           "(SSE2 to AVX-512 VNNI, chosen at run time)",
    "rows": "two output rows per pass from bands of four padded rows (DSP cores)",
    "gather": "a band of --memory min: reads its window's rows from the layer's bands",
    "strided": "reduces an axis that is not the innermost",
    "freq": "requantized with a float32 scale, as ORT (--requant float)",
    "ireq": "requantized by the integer-only method (--requant int)",
    "i32": "the raw int32 accumulator (ConvInteger, MatMulInteger)",
}

# The axes kernel names vary over.
INT8 = ("u8", "s8")
REQUANT = ("freq", "ireq")
BARE_FREQ = (("freq", ""), ("ireq", "_ireq"))
PAIRS = ("u8s8", "s8s8", "u8u8", "s8u8")


def field(params: CStruct, path: str) -> int:
    """An integer field of a parameter struct, by its dotted C path ("window.stride_w")."""
    value: CValue = params
    for name in path.split("."):
        assert isinstance(value, CStruct), (params.ctype, path)
        value = dict(value.fields)[name]
    assert isinstance(value, int), (params.ctype, path)
    return value


@dataclass(frozen=True)
class Scratch:
    """A kernel's working memory: the C function beside its declaration that sizes it,
    and the same formula over the struct the generator fills in."""

    function: str
    bytes: Callable[[CStruct], int]


@dataclass(frozen=True)
class Kernel:
    key: str
    pattern: str  # the symbol, {axis} for each axis
    axes: tuple[tuple[str, tuple[str, ...]], ...]
    source: str  # the runtime file that defines it, {axis} as in the pattern
    params: str | None  # the parameter struct (None: the call takes no struct)
    when: str  # the predicate that selects it
    weights: str = ""  # how the generator stores its constant weights
    scratch: Scratch | None = None
    # Axis values the name writes otherwise: (value, as written). The elementwise and
    # softmax kernels came before the grammar's requantization part: freq is written as
    # nothing, ireq as "_ireq".
    spelled: tuple[tuple[str, str], ...] = ()

    def _written(self, values: dict[str, str]) -> dict[str, str]:
        spelling = dict(self.spelled)
        return {name: spelling.get(value, value) for name, value in values.items()}

    def symbol(self, **values: str) -> str:
        """The kernel's name for these axis values (each checked against the table)."""
        for name, allowed in self.axes:
            assert values.get(name) in allowed, (self.key, name, values.get(name))
        assert set(values) == {name for name, _ in self.axes}, (self.key, values)
        return self.pattern.format(**self._written(values))

    def file(self, **values: str) -> str:
        return self.source.format(**self._written(values))

    def symbols(self) -> Iterator[str]:
        names = [name for name, _ in self.axes]
        for combo in itertools.product(*(allowed for _, allowed in self.axes)):
            yield self.symbol(**dict(zip(names, combo, strict=True)))

    def scratch_bytes(self, params: CStruct) -> int:
        return self.scratch.bytes(params) if self.scratch is not None else 0

    def matches(self, symbol: str) -> dict[str, str] | None:
        """The axis values that make `symbol`, or None where this entry names others."""
        names = [name for name, _ in self.axes]
        for combo in itertools.product(*(allowed for _, allowed in self.axes)):
            values = dict(zip(names, combo, strict=True))
            if self.symbol(**values) == symbol:
                return values
        return None


# ------------------------------------------------------------------ scratch formulas
# Each mirrors the C function it names (tests/kernels/test_scratch.py compares them).

def _im2col_scratch(p: CStruct) -> int:
    k_padded, slab = field(p, "k_padded"), field(p, "slab")
    if slab == 0:
        return 2 * k_padded * 2
    taps = ((field(p, "chunk") - 1) * field(p, "window.stride_w") + field(p, "window.kernel_w")
            ) * slab + (k_padded - field(p, "window.kernel_w") * slab)
    return 2 * taps


def flat_band_bytes(channels: int, kernel_h: int, padded_w: int, band: int,
                    tile: int) -> int:
    """The host convolution's flat band (q8_conv_im2col_w16p_scratch_bytes with band > 0):
    each channel pair's plane of the band's input rows over the padded width, and a tile
    of slack, in int16 pairs."""
    return (channels + 1) // 2 * 2 * ((band + kernel_h - 1) * padded_w + tile) * 2


def _pix_scratch(p: CStruct) -> int:
    """Flat bands (flat_band_bytes); gathered tiles: k_padded int16 per pixel of a tile."""
    if field(p, "band") > 0:
        return flat_band_bytes(field(p, "input.c"), field(p, "window.kernel_h"),
                               field(p, "output.w") + field(p, "window.kernel_w") - 1,
                               field(p, "band"), field(p, "chunk"))
    return field(p, "k_padded") * field(p, "chunk") * 2


def _dw_pix_scratch(p: CStruct) -> int:
    """q8_dwconv_3x3_pix_scratch_bytes: the padded plane rounded up to 16, then per phase
    the int16 pairs of rows and their slack."""
    sh, sw = field(p, "stride_h"), field(p, "stride_w")
    oh, ow = field(p, "output.h"), field(p, "output.w")
    ph, pw = (oh - 1) * sh + 3, (ow - 1) * sw + 3
    rows, length = (ph if sh == 1 else oh + 1), (pw if sw == 1 else ow + 1)
    return (ph * pw + 15) // 16 * 16 + sw * (rows * length + 64) * 4


def _padded_scratch(p: CStruct) -> int:
    sh, sw = field(p, "stride_h"), field(p, "stride_w")
    oh, ow = field(p, "output.h"), field(p, "output.w")
    return ((oh - 1) * sh + 3) * ((ow - 1) * sw + 3) + sw


def _gather_scratch(p: CStruct) -> int:
    conv = dict(p.fields)["conv"]
    assert isinstance(conv, CStruct)
    return _padded_scratch(conv)


def _mve_im2col_scratch(p: CStruct) -> int:
    """Two columns of k_padded bytes and slack; slab mode: the chunk's slabs, the last
    column's taps past its slabs, slack."""
    k_padded, slab = field(p, "k_padded"), field(p, "slab")
    if slab == 0:
        return 2 * (k_padded + 16)
    kw = field(p, "window.kernel_w")
    return (((field(p, "chunk") - 1) * field(p, "window.stride_w") + kw) * slab
            + (k_padded - kw * slab) + 16)


def _dw_mve_scratch(p: CStruct) -> int:
    """The padded plane, 16 bytes of slack, a channel's flat outputs rounded up to 4."""
    oh, ow = field(p, "output.h"), field(p, "output.w")
    pw = (ow - 1) * field(p, "stride_w") + 3
    ph = (oh - 1) * field(p, "stride_h") + 3
    return ph * pw + 16 + ((oh - 1) * pw + ow + 3) // 4 * 4


IM2COL_SCRATCH = Scratch("q8_conv_im2col_scratch_bytes", _im2col_scratch)
DWCONV_PADDED_SCRATCH = Scratch("q8_dwconv_3x3_padded_scratch_bytes", _padded_scratch)
FC_SCRATCH = Scratch("q8_fc_scratch_bytes", lambda p: 2 * field(p, "k_padded"))

_FAST = "--kernels fast"
_IM2COL_WHEN = (f"{_FAST}, a QLinearConv of group 1 with weight zero point 0 "
                "(ops/conv/qlinear.py takes_im2col; ops/conv/im2col.py fast_conv_call)")

KERNELS: tuple[Kernel, ...] = (
    # --------------------------------------------------------------- convolution
    Kernel("conv_im2col", "q8_conv_{x}_im2col_{rq}", (("x", INT8), ("rq", REQUANT)),
           "conv_{x}_im2col_{rq}.c", "q8_conv_im2col_params",
           _IM2COL_WHEN + ", on DSP cores and the host, int8 weights",
           "int8 rows of k taps padded to 8, row pairs interleaved per 4 taps (w0 w2 w1 w3), "
           "8-byte aligned; slab order where the slab mode applies", IM2COL_SCRATCH),
    Kernel("conv_im2col_w16", "q8_conv_{x}_im2col_w16_{rq}", (("x", INT8), ("rq", REQUANT)),
           "conv_{x}_im2col_w16_{rq}.c", "q8_conv_im2col_params",
           _IM2COL_WHEN + ", int16 weights chosen (--weights) on a DSP core",
           "int16 rows padded to 8 taps, row pairs interleaved per 2 taps, 8-byte aligned",
           IM2COL_SCRATCH),
    Kernel("conv_im2col_w16p", "q8_conv_{x}_im2col_w16p_{rq}", (("x", INT8), ("rq", REQUANT)),
           "conv_{x}_im2col_w16p_{rq}.c", "q8_conv_im2col_params",
           _IM2COL_WHEN + ", on the host",
           "int16 rows [M][KH][KW][C padded to even]",
           Scratch("q8_conv_im2col_w16p_scratch_bytes", _pix_scratch)),
    Kernel("conv_im2col_mve", "q8_conv_{x}_im2col_mve_{rq}", (("x", INT8), ("rq", REQUANT)),
           "conv_{x}_im2col_mve_{rq}.c", "q8_conv_im2col_params",
           _IM2COL_WHEN + ", on Helium (MVE) cores with int8 weights",
           "int8 rows padded to 16 taps, rows in fours interleaved per 16 taps "
           "[M/4][k/16][4][16], each block after a 48-byte head (its biases twice, its "
           "scales); int8 columns (uint8 input less 128)",
           Scratch("q8_conv_im2col_mve_scratch_bytes", _mve_im2col_scratch)),
    Kernel("conv_im2col_rv", "q8_conv_{x}_im2col_rv_{rq}", (("x", INT8), ("rq", REQUANT)),
           "conv_{x}_im2col_rv_{rq}.c", "q8_conv_im2col_rv_params",
           _IM2COL_WHEN + ", on RISC-V (RV32IM) cores",
           "int8 rows padded to 4 taps and to 4 rows, rows in fours interleaved per tap "
           "[M/4][k][4]; the columns hold the input as it is",
           Scratch("q8_conv_im2col_rv_scratch_bytes",
                   lambda p: 4 * field(p, "k_padded")
                   + (4 * field(p, "output.c") if field(p, "direct") else 0))),
    Kernel("conv_im2col_b8", "q8_conv_{x}_im2col_b8_{rq}", (("x", INT8), ("rq", REQUANT)),
           "conv_{x}_im2col_b8_{rq}.c", "q8_conv_im2col_b8_params",
           _IM2COL_WHEN + ", on Cortex-M cores without DSP (M0+, M3)",
           "uint8 rows w + 128 padded to 8 taps (padding 0)",
           Scratch("q8_conv_im2col_b8_scratch_bytes",
                   lambda p: field(p, "columns") * field(p, "k_padded") * 2)),
    Kernel("conv", "q8_conv_{x}_{rq}", (("x", INT8), ("rq", REQUANT)), "qlinear_conv.c",
           "q8_conv_params", "QLinearConv the fast kernels do not take (--kernels reference, "
           "groups other than 1 and depthwise 3x3, nonzero weight zero points)",
           "int8 [M][C/groups][KH][KW] as in the model"),
    Kernel("conv_i32", "q8_conv_{x}_i32", (("x", INT8),), "qlinear_conv.c", "q8_conv_params",
           "ConvInteger (ops/conv/integer.py)", "int8 [M][C/groups][KH][KW] as in the model"),
    Kernel("conv_i32_dynamic", "q8_conv_{x}_i32_dynamic", (("x", INT8),),
           "conv_integer_dynamic.c", "q8_conv_params",
           "ConvInteger with x's zero point computed at run time (the reference kernel)"),
    Kernel("dwconv_3x3", "q8_dwconv_{x}_3x3_{rq}", (("x", INT8), ("rq", REQUANT)),
           "dwconv_3x3.c", "q8_dwconv_params",
           f"{_FAST}, a depthwise 3x3 QLinearConv without padding on a core with Thumb-2 "
           "(ops/conv/qlinear.py takes_depthwise_3x3; ops/conv/depthwise.py)",
           "int16 w - w_zp, 9 per channel"),
    Kernel("dwconv_3x3_padded", "q8_dwconv_{x}_3x3_padded_{rq}", (("x", INT8), ("rq", REQUANT)),
           "dwconv_3x3_padded.c", "q8_dwconv_params",
           f"{_FAST}, a padded depthwise 3x3 QLinearConv (every one on Thumb-1 cores)",
           "int16 w - w_zp, 9 per channel", DWCONV_PADDED_SCRATCH),
    Kernel("dwconv_3x3_mve", "q8_dwconv_{x}_3x3_mve_{rq}", (("x", INT8), ("rq", REQUANT)),
           "dwconv_3x3_mve.c", "q8_dwconv_params",
           f"{_FAST}, a depthwise 3x3 QLinearConv on Helium (MVE) cores",
           "int16 w - w_zp, 9 per channel",
           Scratch("q8_dwconv_3x3_mve_scratch_bytes", _dw_mve_scratch)),
    Kernel("dwconv_3x3_pix", "q8_dwconv_{x}_3x3_pix_{rq}", (("x", INT8), ("rq", REQUANT)),
           "dwconv_3x3_pix.c", "q8_dwconv_params",
           f"{_FAST}, a depthwise 3x3 QLinearConv of strides 1 and 2 on the host",
           "int16 w - w_zp, 9 per channel", Scratch("q8_dwconv_3x3_pix_scratch_bytes",
                                                     _dw_pix_scratch)),
    Kernel("dwconv_3x3_rows", "q8_dwconv_{x}_3x3_rows_{rq}", (("x", INT8), ("rq", REQUANT)),
           "dwconv_3x3_rows.c", "q8_dwconv_params",
           f"{_FAST}, a depthwise 3x3 QLinearConv of stride 1 and more than one output row "
           "on a DSP core", "int16 w - w_zp, 9 per channel",
           Scratch("q8_dwconv_3x3_rows_scratch_bytes",
                   lambda p: field(p, "bands") * (field(p, "output.w") + 2) * 8
                   + field(p, "input.w"))),
    Kernel("dwconv_3x3_gather", "q8_dwconv_{x}_3x3_gather_{rq}", (("x", INT8), ("rq", REQUANT)),
           "dwconv_3x3_gather.c", "q8_dwconv_gather_params",
           "a depthwise 3x3 band under --memory min (QLinearConvGather, "
           "transform/bands.py)", "int16 w - w_zp, 9 per channel",
           Scratch("q8_dwconv_3x3_gather_scratch_bytes", _gather_scratch)),
    Kernel("fill_channels", "q8_fill_channels", (), "channels.c", "q8_fill_channels_params",
           "output channels whose weights are all zero: filled with their constant"),
    Kernel("fill_planes", "q8_fill_planes", (), "channels.c", "q8_fill_planes_params",
           "a depthwise layer over constant input planes: each plane's constant output"),
    Kernel("select_channels", "q8_select_channels", (), "channels.c",
           "q8_select_channels_params", "the live channels of a layer with dead ones"),
    Kernel("conv_f32", "q8_conv_f32", (), "conv_f32.c", "q8_conv_f32_params",
           "a float Conv (a float island), in ORT's algorithm", "float32 as in the model"),
    Kernel("conv_add_f32", "q8_conv_add_f32", (), "conv_f32.c", "q8_conv_f32_params",
           "a float Conv with ORT's fused Add (the NCHWc Conv+Add)", "float32 as in the model"),
    Kernel("conv_transpose_f32", "q8_conv_transpose_f32", (), "conv_transpose_f32.c",
           "q8_conv_transpose_f32_params", "ConvTranspose (float)",
           "float32 [C][M/groups][KH][KW]",
           Scratch("q8_conv_transpose_f32_scratch_bytes",
                   lambda p: (field(p, "output.c") // field(p, "groups"))
                   * field(p, "window.kernel_h") * field(p, "window.kernel_w")
                   * field(p, "input.h") * field(p, "input.w") * 4)),
    # --------------------------------------------------------------- matrix products
    Kernel("fc", "q8_fc_{x}_{out}", (("x", INT8), ("out", ("freq", "ireq", "f32"))),
           "fully_connected.c", "q8_fc_params",
           f"{_FAST}, a product with constant int8 weights and one row block "
           "(QLinearMatMul, QGemm, MatMulIntegerToFloat; ops/matmul.py fc_call)",
           "int8 [N][K] padded to 4 taps (16 on DSP cores), groups of four rows", FC_SCRATCH),
    Kernel("fc_mve", "q8_fc_{x}_mve_{out}", (("x", INT8), ("out", ("freq", "ireq", "f32"))),
           "fully_connected_mve.c", "q8_fc_params",
           "as fc, on Helium (MVE) cores with int8 weights",
           "int8 [N][K] padded to 16 taps, rows in eights interleaved per 16 taps; the "
           "input row as int8 (uint8 less 128)",
           Scratch("q8_fc_mve_scratch_bytes", lambda p: field(p, "k_padded"))),
    Kernel("fc_w16", "q8_fc_{x}_w16_{out}", (("x", INT8), ("out", ("freq", "ireq", "f32"))),
           "fully_connected.c", "q8_fc_w16_params",
           "as fc, with int16 weights chosen (--weights)",
           "int16 [N][K] padded to 8 taps (16 on DSP cores), row pairs interleaved",
           Scratch("q8_fc_w16_scratch_bytes", lambda p: 2 * field(p, "k_padded"))),
    Kernel("gemm", "q8_gemm_{ab}_{out}", (("ab", PAIRS), ("out", ("freq", "ireq", "i32", "f32"))),
           "gemm.c", "q8_gemm_params",
           "any other integer product (batched, variable B, reference kernels)",
           "B as in the model"),
    Kernel("gemm_f32", "q8_gemm_f32", (), "gemm_f32.c", "q8_gemm_f32_params",
           "a float Gemm or MatMul (a float island)", "float32 as in the model"),
    Kernel("matmul_nbits_f32", "q8_matmul_nbits_f32", (), "matmul_nbits_f32.c",
           "q8_matmul_nbits_params",
           "a float Gemm or MatMul of 8-bit constant weights that ORT runs as MatMulNBits "
           "(A quantized to int8 per block of 32 at run time)",
           "uint8 [N][K padded to 32] (int8 + 128)",
           Scratch("q8_matmul_nbits_scratch_bytes",
                   lambda p: field(p, "blocks") * (32 + 8))),
    # --------------------------------------------------------------- quantization
    Kernel("quantize_linear", "q8_quantize_linear_{y}", (("y", (*INT8, "u16", "s16")),),
           "quantize_linear.c", "q8_qdq_params", "QuantizeLinear"),
    Kernel("dynamic_quantize_linear", "q8_dynamic_quantize_linear", (),
           "dynamic_quantize_linear.c", "q8_dynamic_quantize_params",
           "DynamicQuantizeLinear (scale and zero point from the range at run time)"),
    Kernel("matmul_integer_dynamic", "q8_matmul_integer_dynamic", (),
           "dynamic_quantize_linear.c", "q8_matmul_integer_dynamic_params",
           "MatMulInteger with A's zero point computed at run time",
           "int16 [K][N]: B less its zero point"),
    Kernel("dequantize_linear", "q8_dequantize_linear_{x}",
           (("x", ("u8", "s8", "u16", "s16", "s32")),),
           "dequantize_linear.c", "q8_qdq_params", "DequantizeLinear"),
    Kernel("cast", "q8_cast_{x}_f32", (("x", ("u8", "s8", "s32")),), "cast.c",
           "q8_cast_params", "Cast of integers to float"),
    Kernel("lut", "q8_lut_{x}", (("x", INT8),), "lookup.c", "q8_lut_params",
           "an 8-bit elementwise function or chain as a 256-entry table (transform/tabulate.py)"),
    Kernel("lut_bytes", "q8_lut_bytes", (), "lookup.c", "q8_lut_params",
           "a table between 8-bit types of either signedness (QLinear requantization)"),
    Kernel("lut_channels", "q8_lut_channels_{x}", (("x", INT8),), "lookup.c",
           "q8_lut_channels_params", "a table per channel (per-channel DQ -> op -> Q)"),
    Kernel("lut_channels_bytes", "q8_lut_channels_bytes", (), "lookup.c",
           "q8_lut_channels_params", "a table per channel between 8-bit types"),
    Kernel("clamp", "q8_clamp_{x}", (("x", (*INT8, "s16", "u16", "f32")),), "clamp.c",
           "q8_clamp_params",
           "Clip/Relu the generator does not fold into the layer before"),
    # --------------------------------------------------------------- pools
    Kernel("avgpool", "q8_avgpool_{x}", (("x", INT8),), "average_pool.c", "q8_avgpool_params",
           "QLinearAveragePool"),
    Kernel("avgpool_f32", "q8_avgpool_f32", (), "average_pool_f32.c",
           "q8_avgpool_f32_params", "a float AveragePool"),
    Kernel("global_avgpool", "q8_global_avgpool_{x}_{rq}", (("x", INT8), ("rq", REQUANT)),
           "average_pool.c", "q8_global_pool_params", "QLinearGlobalAveragePool"),
    Kernel("global_avgpool_f32", "q8_global_avgpool_f32", (), "average_pool_f32.c",
           "q8_global_pool_f32_params", "a float GlobalAveragePool"),
    Kernel("maxpool", "q8_maxpool_{x}", (("x", (*INT8, "s16", "u16", "f32")),), "maxpool.c",
           "q8_pool_params", "MaxPool"),
    # --------------------------------------------------------------- elementwise
    Kernel("qadd", "q8_qadd_{x}{rq}", (("x", INT8), ("rq", REQUANT)), "elementwise.c",
           "q8_qadd_params", "QLinearAdd (no suffix: float requantization, as ORT)",
           spelled=BARE_FREQ),
    Kernel("qmul", "q8_qmul_{x}{rq}", (("x", INT8), ("rq", REQUANT)), "elementwise.c",
           "q8_qmul_params", "QLinearMul (no suffix: float requantization, as ORT)",
           spelled=BARE_FREQ),
    *(Kernel(f"{op}_f32", f"q8_{op}_f32", (), "elementwise_f32.c", "q8_binary_f32_params",
             f"a float {op.capitalize()} (a float island)")
      for op in ("add", "sub", "mul", "div", "prelu")),
    *(Kernel(f"{op}_f32", f"q8_{op}_f32", (), "activation_f32.c", "q8_unary_f32_params",
             f"a float {op} (a float island)")
      for op in ("exp", "erf", "gelu", "sqrt", "neg", "abs", "pow", "sigmoid", "tanh",
                 "hardsigmoid", "hardswish", "leakyrelu")),
    Kernel("where_select", "q8_where_select", (), "where.c", "q8_where_params", "Where"),
    Kernel("where_constant", "q8_where_constant", (), "where.c", "q8_where_constant_params",
           "Where with a constant branch"),
    # --------------------------------------------------------------- softmax, norms
    Kernel("qsoftmax", "q8_qsoftmax_{x}{rq}", (("x", INT8), ("rq", REQUANT)),
           "softmax.c", "q8_qsoftmax_params",
           "QLinearSoftmax (no suffix: float requantization, as ORT)", spelled=BARE_FREQ),
    Kernel("softmax_f32", "q8_softmax_f32", (), "softmax_f32.c", "q8_softmax_f32_params",
           "a float Softmax"),
    Kernel("logsoftmax_f32", "q8_logsoftmax_f32", (), "softmax_f32.c",
           "q8_softmax_f32_params", "a float LogSoftmax"),
    Kernel("layer_norm_f32", "q8_layer_norm_f32", (), "layer_norm_f32.c",
           "q8_layer_norm_f32_params", "LayerNormalization (float)"),
    Kernel("layer_norm_stats_f32", "q8_layer_norm_stats_f32", (), "layer_norm_f32.c",
           "q8_layer_norm_f32_params", "LayerNormalization with its Mean/InvStdDev outputs"),
    Kernel("simplified_layer_norm_f32", "q8_simplified_layer_norm_f32", (), "layer_norm_f32.c",
           "q8_layer_norm_f32_params", "SimplifiedLayerNormalization (RMS normalization)"),
    Kernel("fully_connected_16", "q8_fully_connected_{x}", (("x", ("s16", "u16")),),
           "fully_connected_s16.c", "q8_fully_connected_s16_params",
           "the 16-bit x 8-bit product, requantized exactly (A16W8 under --integer-only; "
           "the reference path)", "int8 [n][k], symmetric"),
    Kernel("conv_16", "q8_conv_{x}", (("x", ("s16", "u16")),), "conv_s16.c",
           "q8_conv_s16_params",
           "the 16-bit x 8-bit convolution, requantized exactly (A16W8 under --integer-only; "
           "the reference path)", "int8 [M][C/group][KH][KW], symmetric"),
    Kernel("conv_16_im2col", "q8_conv_{x}_im2col", (("x", ("s16", "u16")),),
           "conv_s16_im2col.c", "q8_conv_s16_im2col_params",
           f"{_FAST}, a 16-bit x 8-bit convolution or matrix product (A16W8 under "
           "--integer-only)", "int8 [M][taps padded to 4], w0 w2 w1 w3 per 4 taps",
           Scratch("q8_conv_s16_im2col_scratch_bytes", lambda p: 2 * field(p, "taps_padded"))),
    Kernel("skip_layer_norm_f32", "q8_skip_layer_norm_f32", (), "layer_norm_f32.c",
           "q8_skip_layer_norm_f32_params", "SkipLayerNormalization (Add and LayerNorm)"),
    Kernel("batch_norm_f32", "q8_batch_norm_f32", (), "batch_norm_f32.c",
           "q8_batch_norm_f32_params", "BatchNormalization (float, inference)"),
    Kernel("instance_norm_f32", "q8_instance_norm_f32", (), "instance_norm_f32.c",
           "q8_instance_norm_f32_params", "InstanceNormalization (float)",
           scratch=Scratch("q8_instance_norm_f32_scratch_bytes",
                           lambda p: 4 * field(p, "size"))),
    # --------------------------------------------------------------- recurrent
    Kernel("gru_f32", "q8_gru_f32{outs}", (("outs", ("", "_h", "_y")),), "recurrent_f32.c",
           "q8_gru_f32_params", "GRU (float); the suffix names the outputs it writes",
           "float32 as in the model",
           Scratch("q8_gru_f32_scratch_bytes", lambda p: 4 * 6 * field(p, "hidden_size"))),
    Kernel("lstm_f32", "q8_lstm_f32{outs}",
           (("outs", ("", "_c", "_h", "_hc", "_y", "_yc", "_yh")),), "recurrent_f32.c",
           "q8_lstm_f32_params", "LSTM (float); the suffix names the outputs it writes "
           "(none: Y, Y_h and Y_c)", "float32 as in the model",
           Scratch("q8_lstm_f32_scratch_bytes", lambda p: 4 * 6 * field(p, "hidden_size") + (
               2 * (field(p, "input_size") + field(p, "hidden_size"))
               if dict(p.fields).get("w_q") is not None else 0))),
    # --------------------------------------------------------------- data movement
    Kernel("concat_slice", "q8_concat_slice", (), "concat.c", "q8_concat_params",
           "Concat (and QLinearConcat): one input's slice"),
    Kernel("copy", "q8_copy", (), "copy.c", "q8_copy_params",
           "a copy where an alias cannot share storage"),
    Kernel("pad", "q8_pad", (), "pad.c", "q8_pad_params", "Pad"),
    Kernel("transpose", "q8_transpose", (), "transpose.c", "q8_transpose_params", "Transpose"),
    Kernel("transpose_2d", "q8_transpose_2d", (), "transpose.c", "q8_transpose_2d_params",
           "a Transpose that swaps two blocks of axes"),
    Kernel("view_copy", "q8_view_copy", (), "views.c", "q8_view_params",
           "Slice, Split, Expand, Tile, DepthToSpace and other strided views"),
    Kernel("gather_axis", "q8_gather_axis", (), "views.c", "q8_gather_params", "Gather"),
    Kernel("resize_nearest", "q8_resize_nearest", (), "resize.c", "q8_resize_params",
           "Resize, nearest"),
    Kernel("resize_bilinear", "q8_resize_bilinear_{x}", (("x", (*INT8, "f32")),), "resize.c",
           "q8_resize_bilinear_params", "Resize, linear over two axes"),
    Kernel("resize_trilinear", "q8_resize_trilinear_{x}", (("x", (*INT8, "f32")),),
           "resize.c", "q8_resize_trilinear_params", "Resize, linear over three axes"),
    Kernel("rows", "q8_rows_{step}", (("step", ("fill", "place", "place_first", "window")),),
           "rows.c", "q8_rows_params",
           "--memory min: a band's rows moved between buffers (transform/bands.py)"),
    # --------------------------------------------------------------- reductions
    Kernel("reduce_minmax", "q8_reduce_{op}{strided}_{x}",
           (("op", ("min", "max")), ("strided", ("", "_strided")), ("x", (*INT8, "f32"))),
           "reduce.c", "q8_reduce_params",
           "ReduceMin/ReduceMax (_strided: q8_reduce_strided_params)"),
    Kernel("reduce_sum_f32", "q8_reduce_{op}{strided}_f32",
           (("op", ("sum", "mean")), ("strided", ("", "_strided"))),
           "reduce.c", "q8_reduce_params", "ReduceSum/ReduceMean on float"),
    Kernel("arg", "q8_{op}_{x}", (("op", ("argmax", "argmin")), ("x", (*INT8, "f32"))),
           "argmax.c", "q8_arg_params", "ArgMax/ArgMin"),
    # --------------------------------------------------------------- the C library's math
    Kernel("glibc", "q8_glibc_{fn}", (("fn", ("expf", "logf", "powf")),), "libm.c", None,
           "called by the float kernels: glibc's results, bit for bit (q8_libm.h)"),
    Kernel("fma_integer", "q8_fma_integer", (), "libm.c", None,
           "called by the libm functions on cores without a fused multiply-add"),
)

BY_KEY: dict[str, Kernel] = {kernel.key: kernel for kernel in KERNELS}


def kernel(key: str) -> Kernel:
    return BY_KEY[key]


def exported_symbols() -> list[str]:
    """Every symbol the table names, sorted."""
    return sorted(symbol for entry in KERNELS for symbol in entry.symbols())


def lookup_symbol(symbol: str) -> tuple[Kernel, dict[str, str]] | None:
    """The entry that names `symbol`, and the axis values that make it."""
    for entry in KERNELS:
        values = entry.matches(symbol)
        if values is not None:
            return entry, values
    return None


def kernel_family(symbol: str) -> str | None:
    """The key of the table entry that names `symbol` ("rows", "conv_im2col", ...)."""
    found = lookup_symbol(symbol)
    return found[0].key if found is not None else None


def explain_kernel(symbol: str) -> str:
    """One line that decodes a kernel's name: what its name's parts say, where it lives,
    what it takes and when the generator picks it."""
    found = lookup_symbol(symbol)
    if found is None:
        return f"{symbol}: not a runtime kernel"
    entry, values = found
    words = [SUFFIXES[part] for part in symbol.removeprefix("q8_").split("_")
             if part in SUFFIXES]
    extra = [f"runtime_c/{entry.file(**values)}"]
    if entry.params:
        extra.append(entry.params)
    if entry.weights:
        extra.append(f"weights: {entry.weights}")
    if entry.scratch:
        extra.append(f"scratch: {entry.scratch.function}()")
    return (f"{symbol}: {'; '.join(words) or entry.key} ({', '.join(extra)}). "
            f"When: {entry.when}.")
