"""Sub-tensor lifetimes: kernels whose output overwrites the bytes of their input that they
have finished with (codegen.core.program.Overlap). For each kernel that declares an Overlap,
randomized layers are built with every output placed at the tightest offset its Overlap
allows against its input (tight_plan, replacing the planner), run under the sanitizers
(and in QEMU for the Cortex-M kernels' assembly), and compared byte for byte with the
plain loops on separate buffers."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import numpy as np
import onnx
import pytest
from conftest import SANITIZE, in_qemu, ort_reference
from modelgen import ConvConfig, conv_batch_model, graph_model
from onnx import helper
from test_qlinear_conv_random import depthwise_3x3_configs, thumb1_sources_on_the_host

import codegen.options
import codegen.pipeline
from codegen.api import run_generated
from codegen.backend.interface import Interface
from codegen.backend.planner import ALIGNMENT, ArenaPlan, Placement, plan_arena, scratch_name
from codegen.backend.planner import tensor_lifetimes as lifetimes_of
from codegen.core.program import Program
from codegen.oracle.verify import random_inputs

QUANTIZED_IO = Interface(io="quantized")  # the inputs in the arena, where they may overlap


def align(n: int) -> int:
    return (n + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT


def tight_plan(program: Program) -> ArenaPlan:
    """Each call in a region of its own: its output at exactly the offset its Overlap
    allows against its input (the largest aligned one for a bound), its scratch after
    both. The program must be independent layers, one call each (conv_batch_model)."""
    lifetimes = lifetimes_of(program)
    placements: dict[str, Placement] = {}
    overlapped: dict[str, str] = {}
    base = 0
    for step, call in enumerate(program.calls):
        x, y = program.root(call.inputs[0]), call.outputs[0]
        size_x, size_y = align(program.tensors[x].nbytes), align(program.tensors[y].nbytes)
        if call.overlap is None:
            shift = size_x
        elif call.overlap.exact:
            shift = call.overlap.max_shift
        else:
            shift = call.overlap.max_shift // ALIGNMENT * ALIGNMENT
        x_at = base + max(0, -shift)
        y_at = x_at + shift
        end = max(x_at + size_x, y_at + size_y)
        for name, at, size in ((x, x_at, size_x), (y, y_at, size_y)):
            placements[name] = Placement(name, at, size, *lifetimes[name])
        if call.scratch_bytes:
            name = scratch_name(step)
            placements[name] = Placement(name, align(end), align(call.scratch_bytes), step, step)
            end = align(end) + align(call.scratch_bytes)
        if call.overlap is not None and y_at < x_at + size_x and x_at < y_at + size_y:
            overlapped[y] = x
        base = align(end)
    assert set(placements) == set(lifetimes), set(lifetimes) ^ set(placements)
    return ArenaPlan(placements, base, plan_arena(program).lower_bound, {}, overlapped)


@pytest.fixture
def tight(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(codegen.pipeline, "plan_arena", tight_plan)
    yield


def pointwise_configs(count: int, seed: int) -> list[ConvConfig]:
    """1x1 convolutions, stride 1, no padding, batch 1: more output channels than input
    and fewer, odd and even pixel counts (the last pixel alone, the last pass short)."""
    rng = np.random.default_rng(seed)
    configs = []
    for i in range(count):
        x_dtype = str(rng.choice(["uint8", "int8"]))
        configs.append(ConvConfig(
            x_dtype=x_dtype, w_dtype="int8" if x_dtype == "int8" else str(
                rng.choice(["uint8", "int8"])),
            batch=1, channels=int(rng.integers(1, 24)), out_channels=int(rng.integers(1, 24)),
            spatial=(int(rng.integers(1, 9)), int(rng.integers(1, 9))), kernel=(1, 1),
            group=1, strides=(1, 1), dilations=(1, 1), pads=(0, 0, 0, 0), auto_pad=None,
            per_channel=bool(rng.random() < 0.5), bias=bool(rng.random() < 0.8),
            big_bias=bool(rng.random() < 0.2), kernel_shape_attr=True, seed=seed + i))
    return configs


def overlap_configs(seed: int) -> list[ConvConfig]:
    """Depthwise 3x3 layers (every stride and padding; stride-1 planes narrow enough for
    one pass of the two-row kernel and wide enough for several) and pointwise layers."""
    depthwise = [replace(c, batch=1) for c in depthwise_3x3_configs(10, seed)]
    wide = replace(depthwise[0], spatial=(21, 40), pads=(1, 1, 1, 1), strides=(1, 1),
                   seed=seed + 50)
    narrow = replace(depthwise[0], spatial=(6, 5), pads=(1, 1, 1, 1), strides=(1, 1),
                     seed=seed + 51)
    return [*depthwise, wide, narrow, *pointwise_configs(10, seed + 100)]


def assert_overlapping_matches_separate(fast: codegen.pipeline.Generated, seed: int,
                                        cflags: tuple[str, ...] = SANITIZE) -> None:
    reference = codegen.pipeline.generate_sources(
        fast.model, codegen.options.Options(requant=fast.program.requant,
                                             kernels="reference", interface=QUANTIZED_IO))
    data = random_inputs(fast.program.inputs, 2, seed=seed)
    for ours, theirs in zip(run_generated(fast, data, cflags),
                            run_generated(reference, data, SANITIZE), strict=True):
        for name, value in ours.items():
            assert np.array_equal(value, theirs[name]), name


def overlapping_kernels(gen: codegen.pipeline.Generated) -> set[str]:
    """The kernels whose output the plan placed over their input."""
    return {c.function.split("_", 2)[1] + ":" + c.function for c in gen.program.calls
            if c.outputs[0] in gen.plan.overlapped}


KERNEL_CHOICES = {
    "host": {},
    "host-int8-weights": {"weights": "int8"},
    "dsp-int16": {"dsp": True, "weights": "int16"},
    "dsp-int8": {"dsp": True, "weights": "int8"},
}


@pytest.mark.parametrize("requant", ["float", "int"])
@pytest.mark.parametrize("choice", list(KERNEL_CHOICES))
def test_outputs_over_their_inputs_are_bit_identical(choice: str, requant: str,
                                                     tight: None) -> None:
    model = conv_batch_model(overlap_configs(7000))
    gen = codegen.pipeline.generate_sources(model, codegen.options.Options(
        requant=requant, interface=QUANTIZED_IO, **KERNEL_CHOICES[choice]))
    kernels = overlapping_kernels(gen)
    assert any("dwconv" in k for k in kernels) and any("im2col" in k for k in kernels), kernels
    if KERNEL_CHOICES[choice].get("dsp"):
        assert any("_rows_" in k for k in kernels), kernels
    assert_overlapping_matches_separate(gen, seed=3)


def test_thumb1_outputs_over_their_inputs_are_bit_identical(tight: None) -> None:
    """Cortex-M0+'s choices (byte convolutions, depthwise offset planes) in their C."""
    model = conv_batch_model(overlap_configs(7200))
    gen = thumb1_sources_on_the_host(model, QUANTIZED_IO)
    kernels = overlapping_kernels(gen)
    assert any("_b8_" in k for k in kernels) and any("3x3_padded" in k for k in kernels)
    assert_overlapping_matches_separate(gen, seed=4, cflags=(*SANITIZE,
                                                             "-DQ8_DW_OFFSET_PLANE=1"))


@in_qemu
@pytest.mark.parametrize("board,weights", [("cortex-m4f", "int8"), ("cortex-m4f", "int16"),
                                           ("cortex-m0plus", "int8")])
def test_outputs_over_their_inputs_in_qemu(board: str, weights: str, tight: None) -> None:
    """The kernels' assembly (SMLAD loops, Thumb-1 dot products) at the tightest offsets."""
    model = conv_batch_model(overlap_configs(7400))
    gen = codegen.pipeline.generate_sources(model, codegen.options.Options(
        board=board, weights=weights, interface=QUANTIZED_IO))
    assert overlapping_kernels(gen)
    assert_overlapping_matches_separate(gen, seed=5, cflags=())


def test_the_planner_overlaps_what_the_kernels_allow() -> None:
    """DS-CNN's depthwise and pointwise layers each write over their input: its arena
    falls from two 8,000-byte tensors to one and a bit (on a board: the host's
    convolution takes a tile of 32 pixels' columns, 5 KB here, for speed)."""
    from zoo import quantized_model

    gen = codegen.pipeline.generate_sources(quantized_model("dscnn", "i8-pc"),
                                            codegen.options.Options(interface=QUANTIZED_IO,
                                                                    board="cortex-m4f"))
    assert len(gen.plan.overlapped) == 8
    assert gen.plan.lower_bound >= 16000 and gen.plan.size < 9000


def transpose_model(seed: int, dtype: str) -> onnx.ModelProto:
    """Independent NHWC -> NCHW transposes (tf2onnx's first node) of random sizes, and a
    2-D one."""
    rng = np.random.default_rng(seed)
    nodes, inputs, outputs = [], {}, {}
    for i in range(8):
        channels = 3 if i < 2 else int(rng.integers(1, 40))  # 3: an RGB image's own loop
        shape = [1, int(rng.integers(1, 20)), int(rng.integers(1, 20)), channels]
        nodes.append(helper.make_node("Transpose", [f"x{i}"], [f"y{i}"], perm=[0, 3, 1, 2]))
        inputs[f"x{i}"] = (dtype, shape)
        outputs[f"y{i}"] = dtype
    nodes.append(helper.make_node("Transpose", ["x8"], ["y8"], perm=[1, 0]))
    inputs["x8"] = (dtype, [int(rng.integers(17, 40)), int(rng.integers(2, 40))])
    outputs["y8"] = dtype
    return graph_model(nodes, inputs, outputs)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32"])
def test_transposes_over_their_inputs_are_bit_identical(dtype: str, tight: None) -> None:
    """q8_transpose_2d with its output (cols - 1) * rows elements before its input, the
    tightest its Overlap allows: three byte channels, the byte and the word tiles."""
    model = transpose_model(7600, dtype)
    gen = codegen.pipeline.generate_sources(model, codegen.options.Options(
        interface=QUANTIZED_IO))
    assert len(gen.plan.overlapped) >= 8, gen.plan.overlapped
    data = random_inputs(gen.program.inputs, 2, seed=6)
    for sample, ours in zip(data, run_generated(gen, data, SANITIZE), strict=True):
        for i in range(8):
            assert np.array_equal(ours[f"y{i}"], sample[f"x{i}"].transpose(0, 3, 1, 2))
        assert np.array_equal(ours["y8"], sample["x8"].T)


def maxpool_model(seed: int) -> onnx.ModelProto:
    """Independent MaxPools of random windows, strides and padding (ceil mode too)."""
    rng = np.random.default_rng(seed)
    nodes, inputs, outputs = [], {}, {}
    for i in range(10):
        k = [int(rng.integers(1, 4)), int(rng.integers(1, 4))]
        pads = [int(rng.integers(0, k[0])), int(rng.integers(0, k[1]))] * 2
        shape = [1, int(rng.integers(1, 6)), int(rng.integers(k[0], 14)),
                 int(rng.integers(k[1], 14))]
        nodes.append(helper.make_node(
            "MaxPool", [f"x{i}"], [f"y{i}"], kernel_shape=k, pads=pads,
            strides=[int(rng.integers(1, 3)), int(rng.integers(1, 3))],
            ceil_mode=int(rng.random() < 0.3)))
        dtype = "int8" if i % 2 else "uint8"
        inputs[f"x{i}"], outputs[f"y{i}"] = (dtype, shape), dtype
    return graph_model(nodes, inputs, outputs)


def test_maxpools_over_their_inputs_are_bit_identical(tight: None) -> None:
    """One plane at a time, each output plane ending where its input plane begins."""
    model = maxpool_model(7800)
    gen = codegen.pipeline.generate_sources(model, codegen.options.Options(
        interface=QUANTIZED_IO))
    assert len(gen.plan.overlapped) >= 8, gen.plan.overlapped
    data = random_inputs(gen.program.inputs, 2, seed=8)
    for ours, theirs in zip(run_generated(gen, data, SANITIZE),
                            ort_reference(model, data, interface=QUANTIZED_IO), strict=True):
        for name, value in theirs.items():
            assert np.array_equal(ours[name], value), name
