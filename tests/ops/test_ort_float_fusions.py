"""ORT's level-2 fusions of float chains (transform/float_fusions.py), which change what
a model computes: LayerNormFusion, SimplifiedLayerNormFusion, SkipLayerNormFusion,
GeluFusion and MatMulScaleFusion (BiasGeluFusion and QuickGeluFusion compute the same
bits as the graph: checked here too). Each case checks both halves: onnx2mcu fuses
exactly where ORT 1.32's optimized graph shows the fused operator (and leaves the chain
alone where it does not), and the result is bit-exact, under the sanitizers.
quantize_dynamic and NNCF leave these chains in float around their products; TorchScript
below opset 17 writes LayerNorm so."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import pytest
from conftest import SANITIZE, in_qemu
from modelgen import graph_model
from onnx import helper

import codegen
from codegen.options import Options
from codegen.pipeline import generate_sources

F32 = np.float32
FUSED = {"LayerNormalization": "fuse_layer_norm",
         "SimplifiedLayerNormalization": "fuse_simplified_layer_norm",
         "Gelu": "fuse_gelu", "FusedMatMul": "fuse_matmul_scale",
         "SkipLayerNormalization": "fuse_skip_layer_norm"}


def ort_fused(model: onnx.ModelProto, tmp_path: Path) -> Counter[str]:
    """The fused operators in ORT's optimized graph, by the rule of ours that makes each."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    ort.InferenceSession(model.SerializeToString(), options,
                         providers=["CPUExecutionProvider"])
    nodes = onnx.load(options.optimized_model_filepath).graph.node
    fused = Counter(FUSED[n.op_type] for n in nodes if n.op_type in FUSED)
    fused.subtract(FUSED[n.op_type] for n in model.graph.node if n.op_type in FUSED)
    return +fused


def ours_fused(model: onnx.ModelProto) -> Counter[str]:
    """The fused nodes of ours, by rule (a node fused again keeps its name's stem)."""
    rewrites = generate_sources(model, Options()).rewrites
    return Counter({rule: len({name.split("/")[0] for name in rewrites[rule]})
                    for rule in FUSED.values() if rewrites.get(rule)})


def check(model: onnx.ModelProto, tmp_path: Path, fused: bool) -> None:
    expected = ort_fused(model, tmp_path)
    assert bool(expected) == fused, expected
    assert ours_fused(model) == expected
    report = codegen.verify(model, samples=3, cflags=SANITIZE)
    assert report.ok, report.outputs


# ------------------------------------------------------------------------- LayerNorm


def layer_norm_model(shape: list[int], axes: list[int], opset: int = 13, *,
                     scale: bool = True, bias: bool = True, simplified: bool = False,
                     param_shape: list[int] | None = None, eps: float = 1e-5,
                     exponent: float = 2.0, source: str = "relu",
                     variance_axes: list[int] | None = None,
                     duplicated_sub: bool = False) -> onnx.ModelProto:
    """A LayerNorm written out as TorchScript writes it below opset 17 (or an RMS norm,
    `simplified`), after a Relu or a DequantizeLinear (`source`)."""
    rng = np.random.default_rng(len(shape) + shape[-1])
    params = param_shape or [shape[-1]]
    inits = {"power": np.array(exponent, F32), "eps": np.array(eps, F32),
             "gamma": rng.normal(1, 0.5, params).astype(F32),
             "beta": rng.normal(0, 0.5, params).astype(F32),
             "qs": np.array(0.03, F32), "qz": np.array(128, np.uint8)}
    if opset >= 18:
        inits["axes"] = np.array(axes, np.int64)

    def reduce_mean(x: str, y: str) -> onnx.NodeProto:
        own = variance_axes if y == "var" and variance_axes else axes
        if opset >= 18:
            return helper.make_node("ReduceMean", [x, "axes"], [y])
        return helper.make_node("ReduceMean", [x], [y], axes=own)

    if source == "relu":
        nodes = [helper.make_node("Relu", ["input"], ["x"])]
    else:
        nodes = [helper.make_node("QuantizeLinear", ["input", "qs", "qz"], ["q"]),
                 helper.make_node("DequantizeLinear", ["q", "qs", "qz"], ["x"])]
    d = divided = "x"
    if not simplified:
        nodes += [reduce_mean("x", "mean"), helper.make_node("Sub", ["x", "mean"], ["d"])]
        d = divided = "d"
        if duplicated_sub:  # older PyTorch: a second Sub for the Div
            nodes.append(helper.make_node("Sub", ["x", "mean"], ["d_again"]))
            divided = "d_again"
    nodes += [helper.make_node("Pow", [d, "power"], ["d2"]), reduce_mean("d2", "var"),
              helper.make_node("Add", ["var", "eps"], ["ve"]),
              helper.make_node("Sqrt", ["ve"], ["sd"]),
              helper.make_node("Div", [divided, "sd"], ["n"])]
    last = "n"
    if scale:
        nodes.append(helper.make_node("Mul", [last, "gamma"], ["ng"]))
        last = "ng"
    if bias:
        nodes.append(helper.make_node("Add", [last, "beta"], ["nb"]))
        last = "nb"
    nodes.append(helper.make_node("Relu", [last], ["y"]))
    return graph_model(nodes, {"input": ("float32", shape)}, {"y": "float32"}, inits,
                       opset=opset)


LAYER_NORMS = {
    # name: (model arguments, ORT fuses it)
    "opset13": (dict(shape=[2, 5, 16], axes=[-1]), True),
    "opset18_axes_input": (dict(shape=[2, 5, 16], axes=[-1], opset=18), True),
    "positive_axis": (dict(shape=[2, 5, 16], axes=[2]), True),
    "mixed_axes": (dict(shape=[2, 5, 16], axes=[2], variance_axes=[-1]), True),
    "duplicated_sub": (dict(shape=[2, 5, 16], axes=[-1], duplicated_sub=True), True),
    "short_rows": (dict(shape=[3, 5], axes=[-1]), True),  # n < 8: Welford
    "long_rows": (dict(shape=[3, 100], axes=[-1], eps=1e-12), True),
    "cubed": (dict(shape=[2, 5, 16], axes=[-1], exponent=3.0), True),  # not checked by ORT
    "of_dequantized": (dict(shape=[2, 5, 16], axes=[-1], source="dq"), True),  # Simplified
    "no_bias": (dict(shape=[2, 5, 16], axes=[-1], bias=False), True),  # Simplified of d
    "no_scale": (dict(shape=[2, 5, 16], axes=[-1], scale=False), False),
    "channels_axis": (dict(shape=[2, 16, 5], axes=[1], param_shape=[16, 1]), False),
    "two_axes": (dict(shape=[2, 4, 4, 8], axes=[-2, -1], param_shape=[4, 8]), False),
    "rank3_scale": (dict(shape=[2, 5, 16], axes=[-1], param_shape=[1, 1, 16]), False),
    "rms": (dict(shape=[2, 5, 16], axes=[-1], simplified=True, bias=False), True),
    "rms_short": (dict(shape=[2, 5, 7], axes=[-1], simplified=True, bias=False), True),
    "rms_long_bias": (dict(shape=[2, 3, 41], axes=[-1], simplified=True), True),
}


@pytest.mark.parametrize("name", LAYER_NORMS)
def test_layer_norm_fusions_as_ort(name: str, tmp_path: Path) -> None:
    arguments, fused = LAYER_NORMS[name]
    check(layer_norm_model(**arguments), tmp_path, fused)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------ GELU


def gelu_model(divide: bool, half_first: bool, opset: int, source: str,
               constant: float | None = None) -> onnx.ModelProto:
    """x / sqrt(2) (or x * (1 / sqrt 2)) -> Erf -> + 1 -> * x, with 0.5 x first or * 0.5
    last, of a Sigmoid's output or of a DequantizeLinear's."""
    root2 = constant or (np.sqrt(2.0) if divide else 1 / np.sqrt(2.0))
    inits = {"c": np.array(root2, F32), "one": np.array(1.0, F32),
             "half": np.array(0.5, F32), "qs": np.array(0.05, F32)}
    if source == "dq":
        nodes = [helper.make_node("QuantizeLinear", ["input", "qs"], ["q"]),
                 helper.make_node("DequantizeLinear", ["q", "qs"], ["x"])]
    else:
        nodes = [helper.make_node("Sigmoid", ["input"], ["x"])]
    nodes += [helper.make_node("Div" if divide else "Mul", ["x", "c"], ["t"]),
              helper.make_node("Erf", ["t"], ["e"]),
              helper.make_node("Add", ["e", "one"], ["e1"])]
    if half_first:
        nodes += [helper.make_node("Mul", ["x", "half"], ["xh"]),
                  helper.make_node("Mul", ["xh", "e1"], ["y"])]
    else:
        nodes += [helper.make_node("Mul", ["x", "e1"], ["xe"]),
                  helper.make_node("Mul", ["xe", "half"], ["y"])]
    return graph_model(nodes, {"input": ("float32", [4, 64])}, {"y": "float32"}, inits,
                       opset=opset)


GELUS = {
    "div_half_first": (dict(divide=True, half_first=True, opset=13, source="sigmoid"), True),
    "div_half_last": (dict(divide=True, half_first=False, opset=17, source="sigmoid"), True),
    "onnx_gelu_opset20": (dict(divide=True, half_first=True, opset=20, source="sigmoid"), True),
    "approximate_root2": (dict(divide=True, half_first=False, opset=13, source="sigmoid",
                               constant=1.4142099618911743), True),
    "multiply": (dict(divide=False, half_first=True, opset=17, source="sigmoid"), False),
    "of_dequantized": (dict(divide=True, half_first=True, opset=17, source="dq"), False),
}


@pytest.mark.parametrize("name", GELUS)
def test_gelu_fusion_as_ort(name: str, tmp_path: Path) -> None:
    arguments, fused = GELUS[name]
    check(gelu_model(**arguments), tmp_path, fused)  # type: ignore[arg-type]


# ------------------------------------------------------------------ MatMul and scale


def scaled_matmul_model(shape: tuple[int, int, int, int], where: str,
                        packed: bool = False) -> onnx.ModelProto:
    """A float MatMul [batch, M, K] x [batch, K, N] (or a 2-D initializer B, `packed`)
    with scalar factors: on A, on both operands, a Div of the product, or on A also read
    elsewhere."""
    batch, m, k, n = shape
    rng = np.random.default_rng(m * k + n)
    inits: dict[str, np.ndarray] = {"s": np.array(0.37, F32), "t": np.array(0.7, F32),
                                    "d": np.array(3.0, F32)}
    inputs = {"a": ("float32", [batch, m, k])}
    if packed:
        inits["b"] = rng.normal(0, 1, (k, n)).astype(F32)
    else:
        inputs["b"] = ("float32", [batch, k, n])
    nodes = []
    a, b, product = "a", "b", "y"
    if where in ("a", "both", "shared"):
        nodes.append(helper.make_node("Mul", ["a", "s"], ["as"]))
        a = "as"
    if where == "both":
        nodes.append(helper.make_node("Mul", ["t", "b"], ["bs"]))
        b = "bs"
    if where == "chained":  # Mul(Mul(a, s), t): ORT's repeated passes fold both
        nodes += [helper.make_node("Mul", ["a", "s"], ["as"]),
                  helper.make_node("Mul", ["as", "t"], ["ast"])]
        a = "ast"
    if where in ("product", "shared"):
        product = "p"
    nodes.append(helper.make_node("MatMul", [a, b], [product]))
    if where == "product":
        nodes.append(helper.make_node("Div", ["p", "d"], ["y"]))
    if where == "shared":
        nodes += [helper.make_node("ReduceSum", ["as"], ["rs"], keepdims=1),
                  helper.make_node("Add", ["p", "rs"], ["y"])]
    model: onnx.ModelProto = graph_model(nodes, inputs, {"y": "float32"}, inits, opset=17)
    return model


SCALED = {
    "a_small": (dict(shape=(2, 4, 8, 4), where="a")),
    "both_one_row": (dict(shape=(1, 1, 300, 7), where="both")),
    "product_k_blocks": (dict(shape=(1, 3, 600, 64), where="product")),
    "a_one_column": (dict(shape=(2, 5, 33, 1), where="a")),
    "shared_scaling": (dict(shape=(2, 4, 8, 4), where="shared")),
    "chained": (dict(shape=(2, 4, 8, 4), where="chained")),
    "packed_k_blocks": (dict(shape=(1, 4, 1000, 17), where="a", packed=True)),
    "packed_one_row": (dict(shape=(1, 1, 600, 3), where="a", packed=True)),
}


@pytest.mark.parametrize("name", SCALED)
def test_matmul_scale_fusion_as_ort(name: str, tmp_path: Path) -> None:
    check(scaled_matmul_model(**SCALED[name]), tmp_path, True)  # type: ignore[arg-type]


# ------------------------------------------------------------ residual + LayerNorm


def skip_model(shape: list[int], bias: str | None, *, beta: bool = True, axis: int = -1,
               shared: bool = False, n: int | None = None) -> onnx.ModelProto:
    """LayerNormalization(Add(a, s)), with a constant bias added first to a (`bias` "a":
    ORT's format 1) or to s ("s": format 2); `shared`: the sum is read again after."""
    rng = np.random.default_rng(shape[-1] + len(shape))
    c = shape[-1]
    params = [c] if axis == -1 else shape[axis:]
    inits = {"g": rng.normal(1, 0.2, params).astype(F32), "b": rng.normal(0, 0.2, params)
             .astype(F32), "bb": rng.normal(0, 0.2, c).astype(F32)}
    nodes = [helper.make_node("Sigmoid", ["a"], ["a1"]), helper.make_node("Tanh", ["s"], ["s1"])]
    left, right = "a1", "s1"
    if bias == "a":
        nodes.append(helper.make_node("Add", ["a1", "bb"], ["ab"]))
        left = "ab"
    if bias == "s":
        nodes.append(helper.make_node("Add", ["s1", "bb"], ["sb"]))
        right = "sb"
    nodes.append(helper.make_node("Add", [left, right], ["v"]))
    nodes.append(helper.make_node("LayerNormalization", ["v", "g"] + (["b"] if beta else []),
                                  ["n" if shared else "y"], axis=axis, epsilon=1e-5))
    if shared:
        nodes.append(helper.make_node("Add", ["n", "v"], ["y"]))
    model: onnx.ModelProto = graph_model(
        nodes, {"a": ("float32", shape), "s": ("float32", shape)}, {"y": "float32"}, inits,
        opset=17)
    return model


SKIPS = {
    "format3": (dict(shape=[1, 6, 32], bias=None), True),
    "format1_bias": (dict(shape=[2, 3, 100], bias="a"), True),
    "format2_bias": (dict(shape=[1, 6, 32], bias="s"), True),
    "no_beta": (dict(shape=[1, 6, 32], bias=None, beta=False), True),
    "short_rows": (dict(shape=[1, 6, 7], bias="a"), True),
    "two_dimensional": (dict(shape=[6, 32], bias="a"), False),
    "sum_read_again": (dict(shape=[1, 6, 32], bias=None, shared=True), False),
    "middle_axis": (dict(shape=[1, 6, 32], bias=None, axis=1), False),
}


@pytest.mark.parametrize("name", SKIPS)
def test_skip_layer_norm_fusion_as_ort(name: str, tmp_path: Path) -> None:
    arguments, fused = SKIPS[name]
    check(skip_model(**arguments), tmp_path, fused)  # type: ignore[arg-type]


def bias_gelu_model(shape: list[int]) -> onnx.ModelProto:
    """Add(x, bias) -> GELU (ORT's BiasGelu) and x * Sigmoid(x) (its QuickGelu)."""
    rng = np.random.default_rng(len(shape))
    inits = {"bb": rng.normal(0, 0.2, shape[-1]).astype(F32), "c": np.array(np.sqrt(2), F32),
             "one": np.array(1.0, F32), "half": np.array(0.5, F32)}
    nodes = [helper.make_node("Tanh", ["a"], ["a1"]), helper.make_node("Add", ["a1", "bb"], ["x"]),
             helper.make_node("Div", ["x", "c"], ["t"]), helper.make_node("Erf", ["t"], ["e"]),
             helper.make_node("Add", ["e", "one"], ["e1"]),
             helper.make_node("Mul", ["x", "e1"], ["xe"]),
             helper.make_node("Mul", ["xe", "half"], ["g"]),
             helper.make_node("Sigmoid", ["g"], ["sg"]),
             helper.make_node("Mul", ["g", "sg"], ["y"])]
    model: onnx.ModelProto = graph_model(nodes, {"a": ("float32", shape)}, {"y": "float32"},
                                         inits, opset=17)
    return model


@pytest.mark.parametrize("shape", [[1, 6, 32], [5, 100]])
def test_bias_gelu_and_quick_gelu_need_no_fusion(shape: list[int]) -> None:
    report = codegen.verify(bias_gelu_model(shape), samples=8, cflags=SANITIZE)
    assert report.ok, report.outputs


@in_qemu
@pytest.mark.parametrize("board", ["cortex-m4f", "cortex-m0plus"])
def test_fused_float_chains_on_cortex_m(board: str) -> None:
    """The kernels the fusions add, on FPU and soft-float cores."""
    for model in (layer_norm_model([2, 3, 41], [-1], simplified=True),
                  gelu_model(True, True, 13, "sigmoid"),
                  scaled_matmul_model((1, 3, 300, 8), "both"),
                  skip_model([1, 4, 20], "s")):
        report = codegen.verify(model, board=board, samples=2)
        assert report.ok, report.outputs
