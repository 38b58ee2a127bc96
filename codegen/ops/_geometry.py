"""Sliding-window geometry shared by convolutions and pools: attribute parsing, ORT's
padding and output-size rules, and the q8_window / q8_dims parameter structs."""

from __future__ import annotations

from dataclasses import dataclass

from codegen.core.ir import Node
from codegen.core.program import CStruct
from codegen.errors import ModelError, ShapeError, UnsupportedError

from ._common import attr_int, attr_ints, attr_str


@dataclass(frozen=True)
class Window:
    """Per spatial axis (1 or 2 axes): kernel, strides, dilations, leading pads and
    output size. Leading pads may be negative (ORT's SAME padding when kernel < stride)."""

    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    pads_begin: tuple[int, ...]
    pads_end: tuple[int, ...]
    output: tuple[int, ...]


INT32_MAX = 2**31 - 1


def _trunc_div(a: int, b: int) -> int:
    """C/C++ integer division (truncates toward zero), as ORT computes pads."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _same_pads(node: Node, auto_pad: str, size: int, k: int, s: int, d: int,
               is_conv: bool) -> tuple[int, int]:
    if d != 1:
        raise UnsupportedError(f"{node.describe()}: auto_pad {auto_pad} with dilations != 1 is "
                               "not supported (ONNX Runtime rejects it too)")
    target = (size + s - 1) // s
    needed = (target - 1) * s + k - size
    if needed < 0 and is_conv:
        # kernel < stride: ORT 1.32's convolutions place the windows as if one more
        # element of padding were needed, its pools do not (both measured exhaustively,
        # tests/ops/test_window_padding.py); the ONNX spec leaves this case open.
        needed += 1
    head = _trunc_div(needed + 1, 2) if auto_pad == "SAME_LOWER" else _trunc_div(needed, 2)
    return head, needed - head


def sliding_window(node: Node, x_shape: tuple[int, ...], kernel: tuple[int, ...],
                   ceil_mode: bool = False, is_conv: bool = False) -> Window:
    """Validate the window attributes of `node` and compute pads and output size the
    way ORT does. `kernel` comes from the weights (conv) or kernel_shape (pools)."""
    spatial = len(x_shape) - 2
    strides = tuple(attr_ints(node, "strides", None) or [1] * spatial)
    dilations = tuple(attr_ints(node, "dilations", None) or [1] * spatial)
    pads = tuple(attr_ints(node, "pads", None) or [0] * (2 * spatial))
    auto_pad = attr_str(node, "auto_pad", "NOTSET")
    if len(kernel) != spatial or len(strides) != spatial or len(dilations) != spatial or \
            len(pads) != 2 * spatial:
        raise ModelError(f"{node.describe()}: kernel/strides/dilations/pads do not match the "
                         f"{spatial}-D input")
    if min(strides) < 1 or min(dilations) < 1:
        raise ModelError(f"{node.describe()}: strides and dilations must be >= 1")
    if min(pads) < 0:
        raise ModelError(f"{node.describe()}: pads must be >= 0, got {list(pads)}")
    if min(kernel) < 1:
        raise ModelError(f"{node.describe()}: empty kernel {list(kernel)}")
    for name, values in (("strides", strides), ("dilations", dilations), ("pads", pads)):
        if max(values) > INT32_MAX:
            raise ModelError(f"{node.describe()}: {name} {list(values)} go beyond 2^31 - 1, "
                             "the range of the C int the kernels take them in")

    begin: list[int] = []
    end: list[int] = []
    output: list[int] = []
    for i in range(spatial):
        size, k, s, d = x_shape[2 + i], kernel[i], strides[i], dilations[i]
        dk = d * (k - 1) + 1
        if dk > INT32_MAX or size + pads[i] + pads[spatial + i] > INT32_MAX:
            raise ModelError(f"{node.describe()}: the dilated kernel ({dk}) or the padded "
                             f"input on spatial axis {i} goes beyond 2^31 - 1, the range of "
                             "the C int the kernels index with")
        if auto_pad in ("NOTSET", "VALID"):
            head, tail = (pads[i], pads[spatial + i]) if auto_pad == "NOTSET" else (0, 0)
            span = size + head + tail - dk
            if span < 0:
                out = 0
            elif ceil_mode:
                out = -(-span // s) + 1
                # The last window must start inside the input or its leading padding.
                if (out - 1) * s >= size + head:
                    out -= 1
            else:
                out = span // s + 1
        elif auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            head, tail = _same_pads(node, auto_pad, size, k, s, d, is_conv)
            out = (size + s - 1) // s
        else:
            raise ModelError(f"{node.describe()}: unknown auto_pad '{auto_pad}'")
        if out < 1:
            raise ShapeError(f"{node.describe()}: the kernel ({dk} after dilation) is larger "
                             f"than the padded input ({size}) on spatial axis {i}")
        begin.append(head)
        end.append(tail)
        output.append(out)
    return Window(tuple(kernel), strides, dilations, tuple(begin), tuple(end), tuple(output))


def pool_kernel(node: Node, x_shape: tuple[int, ...]) -> tuple[int, ...]:
    kernel = attr_ints(node, "kernel_shape", None)
    if kernel is None:
        raise ModelError(f"{node.describe()}: kernel_shape is required")
    if len(x_shape) not in (3, 4):
        raise UnsupportedError(f"{node.describe()}: {len(x_shape) - 2}-D pooling is not "
                               "supported; supported: 1-D and 2-D")
    return tuple(kernel)


def ceil_mode(node: Node) -> bool:
    value = attr_int(node, "ceil_mode", 0)
    if value not in (0, 1):
        raise ModelError(f"{node.describe()}: ceil_mode must be 0 or 1")
    return bool(value)


def dims_struct(shape: tuple[int, ...]) -> CStruct:
    """q8_dims of an NCHW or NCW tensor (1-D: h = 1)."""
    n, c, *spatial = shape
    h, w = (1, spatial[0]) if len(spatial) == 1 else (spatial[0], spatial[1])
    return CStruct("q8_dims", (("n", n), ("c", c), ("h", h), ("w", w)))


def window_struct(window: Window) -> CStruct:
    """q8_window; a 1-D window is a 2-D one with a 1-row kernel."""
    def pair(values: tuple[int, ...], neutral: int) -> tuple[int, int]:
        return (neutral, values[0]) if len(values) == 1 else (values[0], values[1])

    kh, kw = pair(window.kernel, 1)
    sh, sw = pair(window.strides, 1)
    dh, dw = pair(window.dilations, 1)
    pt, pl = pair(window.pads_begin, 0)
    return CStruct("q8_window", (
        ("kernel_h", kh), ("kernel_w", kw), ("stride_h", sh), ("stride_w", sw),
        ("dilation_h", dh), ("dilation_w", dw), ("pad_top", pt), ("pad_left", pl)))


def conv_window(node: Node, x_shape: tuple[int, ...], w_shape: tuple[int, ...]) -> Window:
    kernel = tuple(w_shape[2:])
    declared = attr_ints(node, "kernel_shape", None)
    if declared is not None and tuple(declared) != kernel:
        raise ModelError(f"{node.describe()}: kernel_shape {declared} does not match the "
                         f"weight shape {list(w_shape)}")
    return sliding_window(node, x_shape, kernel, is_conv=True)


def conv_groups(node: Node, x_shape: tuple[int, ...], w_shape: tuple[int, ...]) -> int:
    groups = attr_int(node, "group", 1)
    if groups < 1 or x_shape[1] != w_shape[1] * groups or w_shape[0] % groups:
        raise ModelError(f"{node.describe()}: {x_shape[1]} input channels, weights "
                         f"{list(w_shape)} and group {groups} are inconsistent")
    return groups
