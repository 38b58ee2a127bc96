"""ORT's NCHWc layout, as onnx2mcu models it (its NchwcTransformer at ORT_ENABLE_ALL,
measured on ORT 1.32): which float convolutions run NCHWc kernels, which tensors ORT then
holds in that layout, and the pools that follow it. The float Conv (ops/conv/float_conv.py)
and the pools (ops/average_pool.py) choose their kernels by it, and ORT's Conv + Add fusion
(codegen/transform/float_fusions.py) asks it through the registry."""

from __future__ import annotations

from codegen.core.ir import Graph, Node, Tensor
from codegen.core.pattern import Index
from codegen.errors import UnsupportedError

from . import OWN_DOMAIN
from ._common import attr_int
from ._float import producer, refuse
from ._geometry import ceil_mode, conv_groups, conv_window

# ORT_ENABLE_ALL runs float AveragePool on channel counts that are a multiple of the
# NCHWc block (16 floats with AVX-512F, the CPU these kernels follow) with NCHWc kernels,
# and keeps their outputs in that layout through Relu and Sigmoid. GlobalAveragePool
# goes NCHWc only on such an input, an NCHWc convolution's output (float-initializer
# weights, ops/qlinear_conv.py) or a graph input (measured on ORT 1.32).
NCHWC_BLOCK = 16


NCHWC_PASS_THROUGH = ("Relu", "Sigmoid")


def nchwc_pool(x: Tensor) -> bool:
    return len(x.shape) == 4 and x.shape[1] % NCHWC_BLOCK == 0


def nchwc_average_pool(node: Node, graph: Graph) -> bool:
    include_pad = attr_int(node, "count_include_pad", 0) == 1
    return nchwc_pool(graph.tensors[node.inputs[0]]) and not (ceil_mode(node) and include_pad)


def pool_input_nchwc(node: Node, graph: Graph, tensor: str) -> bool:
    """Whether ORT holds `tensor` in NCHWc layout; refuses layouts not measured."""
    while True:
        source = producer(graph, tensor)
        if source is None or source.domain:
            return False
        if source.op_type == "AveragePool":
            return nchwc_average_pool(source, graph)
        if source.op_type == "Conv":
            return conv_is_nchwc(source, graph)
        if source.op_type not in NCHWC_PASS_THROUGH and any(
                pool_input_nchwc(node, graph, t) for t in source.inputs if t and
                graph.tensors[t].dtype == "float32" and t not in graph.constants):
            raise refuse(node, f"its input comes through {source.op_type} from an NCHWc "
                          "pool, a layout whose summation order onnx2mcu has not measured")
        if source.op_type not in NCHWC_PASS_THROUGH:
            return False
        tensor = source.inputs[0]


# ORT's NchwcTransformer keeps a convolution's output in its NCHWc layout through these
# activations, fusing them into the convolution (measured on ORT 1.32).
NCHWC_ACTIVATIONS = ("Relu", "Clip", "Sigmoid", "LeakyRelu", "HardSigmoid")


def nchwc_layout(graph: Graph, index: Index, tensor: str) -> bool | None:
    """Whether ORT holds a float tensor in NCHWc layout: True, False, or None where
    onnx2mcu cannot tell."""
    node = index.producer.get(tensor)
    if node is None:
        readers = index.readers.get(tensor, [])
        return None if any(conv_is_nchwc(r, graph) for r in readers) else False
    if node.op_type in ("Conv", "ConvAdd") and conv_is_nchwc(node, graph):
        return True
    if not node.domain and node.op_type in NCHWC_ACTIVATIONS:
        return nchwc_layout(graph, index, node.inputs[0])
    float_inputs = [t for t in node.inputs if t and t not in graph.constants and
                    t in graph.tensors and graph.tensors[t].dtype == "float32"]
    layouts = [nchwc_layout(graph, index, t) for t in float_inputs]
    if not node.domain and node.op_type == "Add" and layouts and all(layouts):
        return True
    return False if all(layout is False for layout in layouts) else None


def check_nchwc_readers(node: Node, graph: Graph) -> None:
    """ORT fuses an Add that alone reads an NCHWc convolution's output into it (the sum
    joins before the bias) when the other addend is NCHWc too; transform/float_fusions.py
    makes such pairs one ConvAdd. An Add left here whose other addend's layout onnx2mcu
    cannot tell is refused. (The pools that read the NCHWc layout follow it:
    ops/average_pool.py.)"""
    index = Index.of(graph)
    readers = index.readers.get(node.outputs[0], [])
    if len(readers) != 1 or readers[0].op_type not in ("Add", "Sum") or readers[0].domain:
        return
    others = [t for t in readers[0].inputs if t and t != node.outputs[0]]
    if not all(nchwc_layout(graph, index, t) is False for t in others):
        raise refuse(node, f"ONNX Runtime fuses the {readers[0].op_type} node "
                     f"'{readers[0].name}' into this convolution of float-initializer weights "
                     "(its NCHWc Sum input, added before the bias), which onnx2mcu does not "
                     "reproduce yet")


def conv_is_nchwc(node: Node, graph: Graph) -> bool:
    """Does ORT run this Conv with an NCHWc kernel (so its output is in that layout)?"""
    if (node.op_type, node.domain) == ("ConvAdd", OWN_DOMAIN):
        return True
    if node.op_type != "Conv" or node.domain or node.inputs[0] not in graph.tensors or \
            node.inputs[1] not in graph.tensors:
        return False
    x_shape, w_shape = graph.tensors[node.inputs[0]].shape, graph.tensors[node.inputs[1]].shape
    try:
        return nchwc_algorithm(node, graph, x_shape, w_shape) not in (None, "sgemm")
    except UnsupportedError:
        return False


def nchwc_algorithm(node: Node, graph: Graph, x_shape: tuple[int, ...],
                    w_shape: tuple[int, ...]) -> str | None:
    """Which of ORT's float convolution kernels computes this Conv (measured on ORT
    1.32): its NchwcTransformer takes a 2-D Conv whose weights (and bias, if any) are
    float initializers: with group 1, fewer input channels than the block, the
    NCHW-input kernel; a multiple of 4 input channels, the pointwise kernel (1x1, no
    padding) or the direct NCHWc one; a depthwise convolution of a multiple of 16
    channels, the depthwise kernel. Group 1 on other channel counts, and every Conv on
    dequantized weights, runs MLAS's SGEMM convolution; other grouped convolutions of
    float weights (measured to differ from it) are refused."""
    bias = node.input(2)
    if node.inputs[1] not in graph.constants or len(w_shape) != 4 or (
            bias is not None and bias not in graph.constants):
        return "sgemm"
    groups, channels = conv_groups(node, x_shape, w_shape), x_shape[1]
    filters = w_shape[0]
    window = conv_window(node, x_shape, w_shape)
    pointwise = window.kernel == (1, 1) and not any(window.pads_begin) and \
        not any(window.pads_end)
    if groups > 1:
        if filters % NCHWC_BLOCK or w_shape[1] != 1 or filters != groups:
            return None
        return "nchw"  # the depthwise kernel: each channel alone, as the NCHW one
    if channels < NCHWC_BLOCK:
        return "nchw"
    if channels % 4:
        return "sgemm"
    return "pointwise" if pointwise else "nchwc"
