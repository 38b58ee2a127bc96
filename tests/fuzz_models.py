"""Structural fuzzing of the importer and the front half of the pipeline.

Real models (examples/tiny_cnn_qop.onnx, a few of the test zoo's QOperator and QDQ models,
random QLinearConvs from tests/modelgen.py) are broken in memory in the ways a hostile or
damaged file can be broken: truncated and bit-flipped bytes, missing, duplicated and
dangling tensors, wrong dtypes, absurd dimensions, out-of-range attributes, cycles,
unknown domains and opsets, external data pointing out of the model's folder, and
tensors that declare far more bytes than they hold.

The oracle: `generate_sources` (import, passes, lowering, planning, emission: everything
`onnx2mcu generate` does except writing and compiling) either succeeds or raises an
Onnx2McuError whose message is one line. Anything else is a crash: another exception
type, a multi-line message, more than TIMEOUT_S seconds, or running into the memory cap.

    python tests/fuzz_models.py --count 50000          # a long campaign (make fuzz)
    python tests/fuzz_models.py --seed 1 --case 123    # replay one case with a traceback

Every case is determined by (seed, case index), so a crash is reproducible by its index.

The mutators are checked too, so that a broken one cannot quietly shrink the campaign:
their calls, the models they changed and their exceptions are counted, and one that raises
on an intact seed model or too often, or changes no model at all, fails the campaign (this
script's exit code, `make fuzz`, and tests/tools/test_fuzz.py).
"""

from __future__ import annotations

import argparse
import contextlib
import random
import resource
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parent))

import modelgen
import zoo

from codegen.core.names import visible
from codegen.errors import Onnx2McuError
from codegen.options import Options
from codegen.pipeline import generate_sources

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "tiny_cnn_qop.onnx"
TIMEOUT_S = 5.0
# Address space beyond what the process already uses; numpy's big allocations are mmaps,
# which RLIMIT_DATA counts, so an allocation of gigabytes fails here as MemoryError.
MEMORY_HEADROOM = 1536 * 2**20

HUGE = 2**40
ABSURD_INTS = (0, -1, -7, 2**31, 2**40, -(2**63), 2**63 - 1)


# --------------------------------------------------------------------------------------
# Seed models
# --------------------------------------------------------------------------------------

ZOO_SEEDS = (("lenet5", "u8-pt"), ("misc_ops", "i8-pc"), ("dscnn", "i8-pt"),
             ("ad_autoencoder", "u8-pc"), ("squeezenet_style", "u8-pt"),
             ("mobilenet_v2_style", "i8-pc"))
QDQ_SEEDS = (("lenet5", "i8-pt"), ("misc_ops", "u8-pt"))


def _conv_seed(seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    configs = [modelgen.random_conv_config(rng, seed * 10 + i) for i in range(2)]
    return modelgen.conv_batch_model(configs).SerializeToString()


def seed_models() -> dict[str, bytes]:
    """Serialized seed models by name, deterministic."""
    seeds = {"tiny_cnn_qop": EXAMPLE.read_bytes()}
    for name, variant in ZOO_SEEDS:
        seeds[f"{name}-{variant}"] = zoo.quantized_model_bytes(name, variant)
    for name, variant in QDQ_SEEDS:
        seeds[f"{name}-{variant}-qdq"] = zoo.qdq_model_bytes(name, variant)
    for seed in (1, 2):
        seeds[f"conv_batch-{seed}"] = _conv_seed(seed)
    return seeds


# --------------------------------------------------------------------------------------
# Mutations. Each takes the model (changed in place), a random source and the case's
# folder, and returns what it did, or None when it does not apply to this model.
# --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Attempt:
    """One call of a mutator: it applied (its step), did not apply (None), or raised."""

    mutator: str
    step: str | None
    error: str = ""  # the exception, when it raised
    first: bool = True  # called on the intact seed model (no earlier step applied)


@dataclass
class Mutated:
    """A broken model: serialized, or a file in `folder` when it needs side files."""

    data: bytes
    steps: list[str]
    needs_file: bool = False
    must_refuse: bool = False  # accepting it would be a bug (escapes, absurd sizes)
    attempts: list[Attempt] = field(default_factory=list)


@dataclass
class Context:
    rng: random.Random
    folder: Path
    needs_file: bool = False
    must_refuse: bool = False


Mutator = Callable[[onnx.ModelProto, Context], str | None]
ByteMutator = Callable[[bytes, random.Random], tuple[bytes, str]]


def _pick(ctx: Context, items: list[object] | tuple[object, ...]) -> object:
    return items[ctx.rng.randrange(len(items))]


def drop_initializer(m: onnx.ModelProto, ctx: Context) -> str | None:
    inits = m.graph.initializer
    if not inits:
        return None
    index = ctx.rng.randrange(len(inits))
    name = inits[index].name
    del inits[index]
    return f"drop initializer '{name}'"


def duplicate_initializer(m: onnx.ModelProto, ctx: Context) -> str | None:
    inits = m.graph.initializer
    if not inits:
        return None
    copy = inits.add()
    copy.CopyFrom(inits[ctx.rng.randrange(len(inits) - 1)])
    return f"duplicate initializer '{copy.name}'"


def dangling_input(m: onnx.ModelProto, ctx: Context) -> str | None:
    nodes = [n for n in m.graph.node if n.input]
    if not nodes:
        return None
    node = _pick(ctx, nodes)
    assert isinstance(node, onnx.NodeProto)
    slot = ctx.rng.randrange(len(node.input))
    node.input[slot] = "ghost"
    return f"node '{node.name}' input {slot} -> 'ghost'"


DTYPES = (TensorProto.FLOAT, TensorProto.UINT8, TensorProto.INT8, TensorProto.INT32,
          TensorProto.INT64, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BOOL,
          TensorProto.STRING, TensorProto.UINT64, TensorProto.BFLOAT16, 0, 999)


def initializer_dtype(m: onnx.ModelProto, ctx: Context) -> str | None:
    if not m.graph.initializer:
        return None
    init = _pick(ctx, list(m.graph.initializer))
    assert isinstance(init, TensorProto)
    init.data_type = int(_pick(ctx, DTYPES))  # type: ignore[call-overload]
    return f"initializer '{init.name}' dtype {init.data_type}"


def value_dtype(m: onnx.ModelProto, ctx: Context) -> str | None:
    values = [*m.graph.input, *m.graph.output]
    value = _pick(ctx, values)
    assert isinstance(value, onnx.ValueInfoProto)
    value.type.tensor_type.elem_type = int(_pick(ctx, DTYPES))  # type: ignore[call-overload]
    return f"value '{value.name}' dtype {value.type.tensor_type.elem_type}"


def initializer_dims(m: onnx.ModelProto, ctx: Context) -> str | None:
    inits = [t for t in m.graph.initializer if t.dims]
    if not inits:
        return None
    init = _pick(ctx, inits)
    assert isinstance(init, TensorProto)
    choice = ctx.rng.randrange(4)
    if choice == 0:
        axis = ctx.rng.randrange(len(init.dims))
        init.dims[axis] = int(_pick(ctx, (-1, 0, HUGE, 2**31, init.dims[axis] + 1)))  # type: ignore[call-overload]
    elif choice == 1:
        init.dims.append(1)
    elif choice == 2:
        del init.dims[0]
    else:
        init.dims[:] = [int(np.prod(init.dims))]
    return f"initializer '{init.name}' dims {list(init.dims)}"


def input_dims(m: onnx.ModelProto, ctx: Context) -> str | None:
    value = _pick(ctx, list(m.graph.input))
    assert isinstance(value, onnx.ValueInfoProto)
    dims = value.type.tensor_type.shape.dim
    choice = ctx.rng.randrange(4)
    if choice == 0 and dims:
        dims[ctx.rng.randrange(len(dims))].dim_value = int(
            _pick(ctx, (-5, 0, HUGE, 2**20, 1, 3)))  # type: ignore[call-overload]
    elif choice == 1:
        dims.add().dim_value = 1
    elif choice == 2 and dims:
        del dims[ctx.rng.randrange(len(dims))]
    else:
        for d in dims:
            d.dim_value = 2**16
    return f"input '{value.name}' dims {[d.dim_value for d in dims]}"


def huge_declared_tensor(m: onnx.ModelProto, ctx: Context) -> str | None:
    """An initializer whose dims declare 2^40 elements but that holds a few bytes."""
    if not m.graph.initializer:
        return None
    init = _pick(ctx, list(m.graph.initializer))
    assert isinstance(init, TensorProto)
    init.dims[:] = [2**20, 2**20]
    ctx.must_refuse = True
    return f"initializer '{init.name}' declares 2^40 elements"


def absurd_int_values(m: onnx.ModelProto, ctx: Context) -> str | None:
    """Shape, axes or zero-point initializers with absurd values (2^40-element reshapes)."""
    inits = [t for t in m.graph.initializer
             if t.data_type in (TensorProto.INT64, TensorProto.INT32)]
    if not inits:
        return None
    init = _pick(ctx, inits)
    assert isinstance(init, TensorProto)
    array = numpy_helper.to_array(init).copy()
    if array.size == 0:
        return None
    flat = array.reshape(-1)
    flat[ctx.rng.randrange(flat.size)] = np.clip(int(_pick(ctx, ABSURD_INTS)),  # type: ignore[call-overload]
                                                 np.iinfo(array.dtype).min,
                                                 np.iinfo(array.dtype).max)
    init.CopyFrom(numpy_helper.from_array(array, init.name))
    return f"initializer '{init.name}' values {flat[:4].tolist()}"


def bad_float_values(m: onnx.ModelProto, ctx: Context) -> str | None:
    inits = [t for t in m.graph.initializer if t.data_type == TensorProto.FLOAT]
    if not inits:
        return None
    init = _pick(ctx, inits)
    assert isinstance(init, TensorProto)
    array = numpy_helper.to_array(init).copy()
    if array.size == 0:
        return None
    value = float(_pick(ctx, (np.nan, np.inf, -np.inf, 0.0, -1.0, 1e38, 1e-45)))  # type: ignore[arg-type]
    array.reshape(-1)[ctx.rng.randrange(array.size)] = value
    init.CopyFrom(numpy_helper.from_array(array, init.name))
    return f"initializer '{init.name}' value {value}"


WINDOW_ATTRS = ("strides", "dilations", "pads", "kernel_shape")


def _window_node(m: onnx.ModelProto, ctx: Context) -> onnx.NodeProto | None:
    nodes = [n for n in m.graph.node if "Conv" in n.op_type or "Pool" in n.op_type]
    return _pick(ctx, nodes) if nodes else None  # type: ignore[return-value]


def window_attribute(m: onnx.ModelProto, ctx: Context) -> str | None:
    """strides 0, dilations 0, negative pads, kernels larger than the input, ..."""
    node = _window_node(m, ctx)
    if node is None:
        return None
    name = str(_pick(ctx, WINDOW_ATTRS))
    length = 4 if name == "pads" else 2
    existing = [a for a in node.attribute if a.name == name]
    if existing:
        length = len(existing[0].ints) or length
        node.attribute.remove(existing[0])
    values = [int(_pick(ctx, (1, 1, 2, 0, -1, 1000, 2**31, HUGE)))  # type: ignore[call-overload]
              for _ in range(length)]
    if ctx.rng.random() < 0.2:
        values = values[:-1] or [0]  # wrong rank
    node.attribute.append(helper.make_attribute(name, values))
    return f"node '{node.name}' {name}={values}"


def conv_group(m: onnx.ModelProto, ctx: Context) -> str | None:
    """A group that does not divide the channels (or is not positive)."""
    convs = [n for n in m.graph.node if "Conv" in n.op_type]
    if not convs:
        return None
    node = _pick(ctx, convs)
    assert isinstance(node, onnx.NodeProto)
    for a in [a for a in node.attribute if a.name == "group"]:
        node.attribute.remove(a)
    group = int(_pick(ctx, (0, -1, 2, 3, 5, 7, 2**31)))  # type: ignore[call-overload]
    node.attribute.append(helper.make_attribute("group", group))
    return f"node '{node.name}' group={group}"


def tiny_input(m: onnx.ModelProto, ctx: Context) -> str | None:
    """Spatial dims of 1 or 2: every kernel downstream is larger than its input."""
    value = _pick(ctx, list(m.graph.input))
    assert isinstance(value, onnx.ValueInfoProto)
    dims = value.type.tensor_type.shape.dim
    size = int(_pick(ctx, (1, 2)))  # type: ignore[call-overload]
    for d in list(dims)[2:]:
        d.dim_value = size
    return f"input '{value.name}' spatial dims {size}"


SCALAR_ATTRS = ("group", "axis", "ceil_mode", "transA", "transB", "keepdims",
                "count_include_pad", "storage_order", "perm", "alpha", "auto_pad", "mode")


def scalar_attribute(m: onnx.ModelProto, ctx: Context) -> str | None:
    """group not dividing channels, axes out of range, unknown enum values, ..."""
    node = _pick(ctx, list(m.graph.node))
    assert isinstance(node, onnx.NodeProto)
    present = [a.name for a in node.attribute]
    name = str(_pick(ctx, present + list(SCALAR_ATTRS) if present else SCALAR_ATTRS))
    for a in list(node.attribute):
        if a.name == name:
            node.attribute.remove(a)
    value: object = _pick(ctx, (*ABSURD_INTS, 3, 2, "SAME_LOWER", "BOGUS", 1.5, [7, 7],
                                [2**40], b"\xff\xfe"))
    node.attribute.append(helper.make_attribute(name, value))
    return f"node '{node.name}' {name}={value!r}"


def make_cycle(m: onnx.ModelProto, ctx: Context) -> str | None:
    nodes = m.graph.node
    if not nodes:
        return None
    i = ctx.rng.randrange(len(nodes))
    j = ctx.rng.randrange(i, len(nodes))
    if not nodes[i].input or not nodes[j].output:
        return None
    nodes[i].input[ctx.rng.randrange(len(nodes[i].input))] = nodes[j].output[0]
    return f"cycle: node {i} reads node {j}'s output"


def reorder_nodes(m: onnx.ModelProto, ctx: Context) -> str | None:
    nodes = list(m.graph.node)
    ctx.rng.shuffle(nodes)
    del m.graph.node[:]
    m.graph.node.extend(nodes)
    return "shuffle nodes"


def drop_or_duplicate_node(m: onnx.ModelProto, ctx: Context) -> str | None:
    nodes = m.graph.node
    if not nodes:
        return None
    index = ctx.rng.randrange(len(nodes))
    if ctx.rng.random() < 0.5:
        del nodes[index]
        return f"drop node {index}"
    nodes.add().CopyFrom(nodes[index])
    return f"duplicate node {index}"


def node_arity(m: onnx.ModelProto, ctx: Context) -> str | None:
    node = _pick(ctx, list(m.graph.node))
    assert isinstance(node, onnx.NodeProto)
    if ctx.rng.random() < 0.5 and node.input:
        del node.input[ctx.rng.randrange(len(node.input)):]
        return f"node '{node.name}' truncated inputs"
    if ctx.rng.random() < 0.5:
        node.input.append(str(_pick(ctx, [*node.input, ""] if node.input else [""])))
        return f"node '{node.name}' extra input"
    node.output.append("extra_out") if ctx.rng.random() < 0.5 else node.ClearField("output")
    return f"node '{node.name}' outputs {list(node.output)}"


def op_type(m: onnx.ModelProto, ctx: Context) -> str | None:
    node = _pick(ctx, list(m.graph.node))
    assert isinstance(node, onnx.NodeProto)
    others = sorted({n.op_type for n in m.graph.node} | {"Reshape", "Transpose", "Concat",
                                                           "Softmax", "MaxPool", "Bogus"})
    node.op_type = str(_pick(ctx, others))
    return f"node '{node.name}' op_type {node.op_type}"


def domains_and_opsets(m: onnx.ModelProto, ctx: Context) -> str | None:
    choice = ctx.rng.randrange(4)
    if choice == 0:
        node = _pick(ctx, list(m.graph.node))
        assert isinstance(node, onnx.NodeProto)
        node.domain = str(_pick(ctx, ("com.evil", "ai.onnx", "com.microsoft", "")))
        return f"node '{node.name}' domain '{node.domain}'"
    if choice == 1:
        opset = _pick(ctx, list(m.opset_import))
        assert isinstance(opset, onnx.OperatorSetIdProto)
        opset.version = int(_pick(ctx, (0, 1, 9, 29, 10**6, -1)))  # type: ignore[call-overload]
        return f"opset '{opset.domain}' version {opset.version}"
    if choice == 2:
        del m.opset_import[ctx.rng.randrange(len(m.opset_import))]
        return "drop an opset import"
    m.opset_import.append(helper.make_opsetid("com.evil", 1))
    m.ir_version = int(_pick(ctx, (0, 3, 11, 99)))  # type: ignore[call-overload]
    return f"unknown domain imported, ir_version {m.ir_version}"


def graph_outputs(m: onnx.ModelProto, ctx: Context) -> str | None:
    choice = ctx.rng.randrange(3)
    if choice == 0:
        del m.graph.output[:]
        return "no graph outputs"
    if not m.graph.output:  # an earlier step removed them
        return None
    out = _pick(ctx, list(m.graph.output))
    assert isinstance(out, onnx.ValueInfoProto)
    if choice == 1:
        out.name = "nowhere"
        return "graph output renamed"
    dims = out.type.tensor_type.shape.dim
    dims.add().dim_value = int(_pick(ctx, (0, -1, 5, HUGE)))  # type: ignore[call-overload]
    return f"graph output '{out.name}' dims {[d.dim_value for d in dims]}"


def clear_tensor_data(m: onnx.ModelProto, ctx: Context) -> str | None:
    if not m.graph.initializer:
        return None
    init = _pick(ctx, list(m.graph.initializer))
    assert isinstance(init, TensorProto)
    if init.raw_data and ctx.rng.random() < 0.5:
        init.raw_data = init.raw_data[: len(init.raw_data) // 2]
        return f"initializer '{init.name}' half its bytes"
    for f in ("raw_data", "float_data", "int32_data", "int64_data"):
        init.ClearField(f)  # type: ignore[arg-type]
    return f"initializer '{init.name}' without data"


ESCAPES = ("../../etc/passwd", "/etc/passwd", "../outside.bin", "sub/../../outside.bin",
           "link_out.bin", "link_dir/outside.bin")


def external_data(m: onnx.ModelProto, ctx: Context) -> str | None:
    """Move an initializer to external data: valid, out of bounds, or out of the folder."""
    if not m.graph.initializer:
        return None
    init = _pick(ctx, list(m.graph.initializer))
    assert isinstance(init, TensorProto)
    payload = numpy_helper.to_array(init).tobytes()
    ctx.needs_file = True
    (ctx.folder.parent / "outside.bin").write_bytes(payload)
    choice = ctx.rng.randrange(4)
    offset, length = 0, len(payload)
    if choice == 0:
        location = str(_pick(ctx, ESCAPES))
        ctx.must_refuse = True
        if location == "link_out.bin":
            (ctx.folder / location).symlink_to(ctx.folder.parent / "outside.bin")
        elif location.startswith("link_dir/"):
            (ctx.folder / "link_dir").symlink_to(ctx.folder.parent)
    elif choice == 1:
        location = "weights.bin"
        (ctx.folder / location).write_bytes(payload)
    elif choice == 2:
        location = "weights.bin"
        (ctx.folder / location).write_bytes(payload)
        # Out of bounds: past the end, one byte too long, far away, negative, huge.
        bounds = ((len(payload), length), (0, length + 1), (2**40, length), (-1, length),
                  (0, 2**40))
        offset, length = bounds[ctx.rng.randrange(len(bounds))]
    else:
        location = str(_pick(ctx, ("missing.bin", "", ".", "sub")))
    _make_external(init, location, offset, length)
    return f"initializer '{init.name}' external at '{location}' [{offset}:+{length}]"


def _make_external(init: TensorProto, location: str, offset: int, length: int) -> None:
    for f in ("float_data", "int32_data", "int64_data", "double_data", "uint64_data"):
        init.ClearField(f)  # type: ignore[arg-type]
    init.raw_data = b"x"  # set_external_data insists on a raw_data field
    onnx.external_data_helper.set_external_data(init, location, offset, length)
    init.data_location = TensorProto.EXTERNAL
    init.ClearField("raw_data")


def two_gigabyte_tensor(m: onnx.ModelProto, ctx: Context) -> str | None:
    """A weight that declares 3 GB, its external file a sparse 3 GB file in the folder."""
    if not m.graph.initializer:
        return None
    init = _pick(ctx, list(m.graph.initializer))
    assert isinstance(init, TensorProto)
    size = 3 * 2**30
    ctx.needs_file = True
    ctx.must_refuse = True
    with open(ctx.folder / "big.bin", "wb") as f:
        f.truncate(size)  # sparse: takes no disk space
    init.data_type = TensorProto.UINT8
    init.dims[:] = [size]
    _make_external(init, "big.bin", 0, size)
    return f"initializer '{init.name}' 3 GB external"


def output_bomb(m: onnx.ModelProto, ctx: Context) -> str | None:
    """A Pad or Resize appended to a 4-D float output, with pads of 10^9 (or 2^40) or
    scales of 10^30 (or inf): an output far over the limits, whose per-index tables were
    built before any size check."""
    outputs = [o for o in m.graph.output
               if o.type.tensor_type.elem_type == TensorProto.FLOAT
               and len(o.type.tensor_type.shape.dim) == 4]
    if not outputs:
        return None
    out = _pick(ctx, outputs)
    assert isinstance(out, onnx.ValueInfoProto)
    name = out.name
    bombed = f"{name}_bomb"
    if ctx.rng.random() < 0.5:
        size = int(_pick(ctx, (10**9, HUGE)))  # type: ignore[call-overload]
        pads = numpy_helper.from_array(np.array([0, 0, 0, size, 0, 0, 0, size], np.int64),
                                       f"{bombed}_pads")
        m.graph.initializer.append(pads)
        node = helper.make_node("Pad", [name, pads.name], [bombed], name=bombed,
                                mode=str(_pick(ctx, ("constant", "edge", "reflect"))))
        step = f"Pad of {size} after output '{name}'"
    else:
        scale = float(_pick(ctx, (1e30, float("inf"), 3e9)))  # type: ignore[arg-type]
        scales = numpy_helper.from_array(np.array([1, 1, scale, scale], np.float32),
                                         f"{bombed}_scales")
        m.graph.initializer.append(scales)
        node = helper.make_node("Resize", [name, "", scales.name], [bombed], name=bombed,
                                mode="nearest")
        step = f"Resize by {scale} after output '{name}'"
    m.graph.node.append(node)
    out.name = bombed
    out.type.tensor_type.ClearField("shape")
    ctx.must_refuse = True
    return step


PROTO_MUTATORS: tuple[Mutator, ...] = (
    drop_initializer, duplicate_initializer, dangling_input, initializer_dtype, value_dtype,
    initializer_dims, input_dims, huge_declared_tensor, absurd_int_values, bad_float_values,
    window_attribute, window_attribute, scalar_attribute, scalar_attribute, make_cycle,
    conv_group, tiny_input,
    reorder_nodes, drop_or_duplicate_node, node_arity, op_type, domains_and_opsets,
    graph_outputs, clear_tensor_data, external_data, two_gigabyte_tensor, output_bomb,
)


def truncate_bytes(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    cut = rng.randrange(len(data))
    return data[:cut], f"truncate at {cut}/{len(data)}"


def flip_bits(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    buf = bytearray(data)
    count = rng.choice((1, 2, 8, 64))
    for _ in range(count):
        i = rng.randrange(len(buf))
        buf[i] ^= 1 << rng.randrange(8)
    return bytes(buf), f"flip {count} bits"


BYTE_MUTATORS: tuple[ByteMutator, ...] = (truncate_bytes, flip_bits)


def _error_line(exc: BaseException) -> str:
    return "".join(traceback.format_exception_only(exc)).strip().splitlines()[-1][:300]


def mutate(seed_data: bytes, rng: random.Random, folder: Path,
           mutators: Sequence[Mutator] | None = None) -> Mutated:
    """One to three structural mutations, or a byte-level one. A mutator that raises is
    recorded in the attempts (the campaign counts them), and the case goes on without
    its step."""
    if rng.random() < 0.2:
        byte_mutator = rng.choice(BYTE_MUTATORS)
        data, step = byte_mutator(seed_data, rng)
        return Mutated(data, [step], attempts=[Attempt(byte_mutator.__name__, step)])
    model = onnx.load_from_string(seed_data)
    ctx = Context(rng, folder)
    steps: list[str] = []
    attempts: list[Attempt] = []
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        mutator = rng.choice(mutators or PROTO_MUTATORS)
        try:
            step = mutator(model, ctx)
        except Exception as exc:
            attempts.append(Attempt(mutator.__name__, None, _error_line(exc), not attempts))
            continue
        attempts.append(Attempt(mutator.__name__, step, first=not attempts))
        if step is not None:
            steps.append(step)
    return Mutated(model.SerializeToString(), steps, ctx.needs_file, ctx.must_refuse,
                   attempts)


# --------------------------------------------------------------------------------------
# The oracle
# --------------------------------------------------------------------------------------

class FuzzTimeout(BaseException):
    """Raised by the alarm; a BaseException so that no `except Exception` swallows it."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    def expire(signum: int, frame: FrameType | None) -> None:
        raise FuzzTimeout(f"more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def memory_cap(headroom: int) -> Iterator[None]:
    """Cap the data segment at what is used now plus `headroom` bytes."""
    used = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    cap = used + headroom
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))


@dataclass(frozen=True)
class Outcome:
    kind: str  # "accepted", "refused" or "crash"
    detail: str  # the error class, or what went wrong
    message: str = ""


def run_oracle(source: bytes | Path, must_refuse: bool) -> Outcome:
    try:
        # numpy warns about overflows in scales derived from absurd parameters; the
        # pipeline then refuses those, which is what is checked here.
        with time_limit(TIMEOUT_S), np.errstate(all="ignore"):
            generate_sources(source, Options())
    except Onnx2McuError as exc:
        # The CLI prints the message through names.visible (a name with a newline in it
        # prints escaped): it must be one line then.
        message = visible(str(exc))
        if not message.strip() or "\n" in message:
            return Outcome("crash", f"{type(exc).__name__} with a multi-line message", message)
        return Outcome("refused", type(exc).__name__, message)
    except FuzzTimeout as exc:
        return Outcome("crash", "timeout", str(exc))
    except Exception as exc:
        detail = "".join(traceback.format_exception_only(exc)).strip().splitlines()[-1]
        return Outcome("crash", type(exc).__name__, detail[:300])
    if must_refuse:
        return Outcome("crash", "accepted a model that must be refused")
    return Outcome("accepted", "")


# --------------------------------------------------------------------------------------
# Campaigns
# --------------------------------------------------------------------------------------

@dataclass
class Crash:
    case: int
    seed_model: str
    steps: list[str]
    outcome: Outcome


@dataclass
class MutatorStats:
    """What one mutator did over a campaign."""

    calls: int = 0
    applied: int = 0  # calls that changed the model (returned a step)
    raised: int = 0
    raised_on_seed: int = 0  # of those, on an intact seed model: always a bug
    first_error: str = ""  # "case N: the exception", the first time it raised

    def record(self, case: int, attempt: Attempt) -> None:
        self.calls += 1
        self.applied += attempt.step is not None
        if attempt.error:
            self.raised += 1
            self.raised_on_seed += attempt.first
            self.first_error = self.first_error or f"case {case}: {attempt.error}"


# A mutator may raise on a model an earlier step broke (an initializer's dims made
# inconsistent, say): that step is then skipped. Once on an intact seed model, or in more
# than MAX_RAISED_SHARE of its calls (and more than MAX_RAISED_FLOOR times, for short
# campaigns), means the mutator itself is broken, and so does producing no model in
# MIN_CALLS_JUDGED calls or more: the campaign fails. Seed 0 over 4000 models: at most
# 2 raises in 185 calls (1.1%), none on a seed model.
MAX_RAISED_SHARE = 0.03
MAX_RAISED_FLOOR = 2
MIN_CALLS_JUDGED = 50


def mutator_problems(stats: dict[str, MutatorStats]) -> list[str]:
    """One line per mutator that raised too often or produced no model."""
    problems = []
    for name, s in sorted(stats.items()):
        first = f" (first error {s.first_error})" if s.raised else ""
        if s.raised_on_seed:
            problems.append(f"{name} raised on {s.raised_on_seed} intact seed models{first}")
        elif s.raised > max(MAX_RAISED_FLOOR, MAX_RAISED_SHARE * s.calls):
            problems.append(f"{name} raised in {s.raised} of {s.calls} calls, over "
                            f"{MAX_RAISED_SHARE:.0%}{first}")
        elif s.applied == 0 and s.calls >= MIN_CALLS_JUDGED:
            problems.append(f"{name} produced no model in {s.calls} calls{first}")
    return problems


def unjudged_mutators(stats: dict[str, MutatorStats]) -> list[str]:
    """Mutators called too rarely to tell whether they still produce models."""
    return [name for name, s in sorted(stats.items()) if s.calls < MIN_CALLS_JUDGED]


def mutator_registry(mutators: Sequence[Mutator]) -> dict[str, MutatorStats]:
    """Empty statistics for every mutator a campaign can pick, so that one never picked
    or never applying shows up with zero models."""
    return {m.__name__: MutatorStats() for m in (*mutators, *BYTE_MUTATORS)}


@dataclass
class Report:
    tried: int = 0
    accepted: int = 0
    refused: Counter[str] = field(default_factory=Counter)
    crashes: list[Crash] = field(default_factory=list)
    seconds: float = 0.0
    refused_samples: list[tuple[int, str]] = field(default_factory=list)
    mutators: dict[str, MutatorStats] = field(default_factory=dict)

    @property
    def mutator_problems(self) -> list[str]:
        return mutator_problems(self.mutators)

    @property
    def ok(self) -> bool:
        return not self.crashes and not self.mutator_problems

    def summary(self) -> str:
        refused = ", ".join(f"{k} {v}" for k, v in self.refused.most_common())
        raised = sum(s.raised for s in self.mutators.values())
        return (f"{self.tried} models in {self.seconds:.1f} s: {self.accepted} accepted, "
                f"{sum(self.refused.values())} refused ({refused}), "
                f"crashes={len(self.crashes)}; {len(self.mutators)} mutators raised "
                f"{raised} times, {len(self.mutator_problems)} broken")

    def mutator_table(self) -> str:
        """calls, models produced and exceptions of each mutator, one line each."""
        return "\n".join(f"  {name:24} {s.calls:6} calls {s.applied:6} applied "
                         f"{s.raised:5} raised" for name, s in sorted(self.mutators.items()))


def case_rng(seed: int, case: int) -> random.Random:
    return random.Random(seed * 1_000_003 + case)


def build_case(seeds: dict[str, bytes], seed: int, case: int, workdir: Path,
               mutators: Sequence[Mutator] | None = None) -> tuple[str, Mutated, bytes | Path]:
    """The mutated model of one case, and what to hand the pipeline: bytes, or a path
    when the model has side files."""
    rng = case_rng(seed, case)
    names = sorted(seeds)
    seed_name = names[rng.randrange(len(names))]
    folder = workdir / f"case{case}" / "model"
    folder.mkdir(parents=True)
    mutated = mutate(seeds[seed_name], rng, folder, mutators)
    source: bytes | Path = mutated.data
    if mutated.needs_file:
        source = folder / "model.onnx"
        source.write_bytes(mutated.data)
    return seed_name, mutated, source


def run_campaign(count: int, seed: int = 0, time_budget: float | None = None,
                 seeds: dict[str, bytes] | None = None,
                 progress: Callable[[Report], None] | None = None,
                 mutators: Sequence[Mutator] | None = None) -> Report:
    """`mutators`: the structural mutators to pick from (default PROTO_MUTATORS)."""
    seeds = seeds or seed_models()
    mutators = mutators or PROTO_MUTATORS
    report = Report(mutators=mutator_registry(mutators))
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="onnx2mcu-fuzz-") as tmp, \
            memory_cap(MEMORY_HEADROOM):
        for case in range(count):
            if time_budget is not None and time.monotonic() - start > time_budget:
                break
            casedir = Path(tmp) / f"c{case}"
            seed_name, mutated, source = build_case(seeds, seed, case, casedir, mutators)
            for attempt in mutated.attempts:
                report.mutators[attempt.mutator].record(case, attempt)
            outcome = run_oracle(source, mutated.must_refuse)
            report.tried += 1
            if outcome.kind == "accepted":
                report.accepted += 1
            elif outcome.kind == "refused":
                report.refused[outcome.detail] += 1
                if not mutated.needs_file and len(report.refused_samples) < 200:
                    report.refused_samples.append((case, outcome.detail))
            else:
                report.crashes.append(Crash(case, seed_name, mutated.steps, outcome))
            _remove_tree(casedir)
            if progress is not None and report.tried % 500 == 0 and report.tried < count:
                report.seconds = time.monotonic() - start
                progress(report)
    report.seconds = time.monotonic() - start
    return report


def _remove_tree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def replay(seed: int, case: int) -> None:
    """Run one case with a traceback, for debugging a crash."""
    seeds = seed_models()
    with tempfile.TemporaryDirectory(prefix="onnx2mcu-fuzz-") as tmp:
        seed_name, mutated, source = build_case(seeds, seed, case, Path(tmp))
        print(f"case {case}: {seed_name}: {'; '.join(mutated.steps)}")
        for attempt in mutated.attempts:
            if attempt.error:
                print(f"mutator {attempt.mutator} raised: {attempt.error}")
        try:
            generate_sources(source, Options())
            print("accepted" + (" (but must be refused)" if mutated.must_refuse else ""))
        except Onnx2McuError as exc:
            print(f"refused: {type(exc).__name__}: {exc}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--time-budget", type=float, default=None, help="seconds")
    parser.add_argument("--case", type=int, default=None, help="replay one case")
    args = parser.parse_args(argv)
    if args.case is not None:
        replay(args.seed, args.case)
        return 0
    report = run_campaign(args.count, args.seed, args.time_budget,
                          progress=lambda r: print(r.summary(), flush=True))
    for crash in report.crashes:
        print(f"CRASH case {crash.case} ({crash.seed_model}: {'; '.join(crash.steps)}): "
              f"{crash.outcome.detail}: {crash.outcome.message[:200]}")
    print("mutators:\n" + report.mutator_table())
    for problem in report.mutator_problems:
        print(f"BROKEN MUTATOR {problem}")
    unjudged = unjudged_mutators(report.mutators)
    if unjudged:
        print(f"note: fewer than {MIN_CALLS_JUDGED} calls, not judged: {', '.join(unjudged)}")
    print(report.summary())
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
