"""Slice, Split, Gather with constant indices, Expand, Tile, DepthToSpace and
SpaceToDepth (codegen/ops/views.py, codegen/ops/gather.py, runtime_c/views.c) against
ONNX Runtime on uint8, int8 and float32 tensors, randomized, and in QDQ models, where
DQ -> op -> Q with one quantization runs on the integers."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from conftest import SANITIZE
from modelgen import Case, combine, graph_model
from onnx import helper

import codegen
from codegen.options import Options
from codegen.pipeline import generate_sources

DTYPES = ("uint8", "int8", "float32")
CASES = 10


def random_shape(rng: np.random.Generator, rank: int) -> list[int]:
    return [int(d) for d in rng.integers(1, 6, rank)]


def slice_case(rng: np.random.Generator, p: str, dtype: str) -> Case:
    shape = random_shape(rng, int(rng.integers(1, 5)))
    axes = sorted(rng.choice(len(shape), int(rng.integers(1, len(shape) + 1)), replace=False))
    starts, ends, steps = [], [], []
    for axis in axes:
        n = shape[axis]
        step = int(rng.choice([1, 1, 2, -1, -2, 3]))
        start = int(rng.integers(-n - 1, n + 1))
        end = int(rng.choice([rng.integers(-n - 1, n + 2), 2**31 - 1, -(2**31)]))
        if len(range(*slice(start, end, step).indices(n))) == 0:
            start, end = (0, n) if step > 0 else (n - 1, -n - 1)
        starts.append(start)
        ends.append(end)
        steps.append(step)
    consts = {f"{p}starts": np.array(starts, np.int64), f"{p}ends": np.array(ends, np.int64),
              f"{p}axes": np.array(axes, np.int64), f"{p}steps": np.array(steps, np.int64)}
    node = helper.make_node("Slice", [f"{p}x", *consts], [f"{p}y"], name=f"{p}slice")
    return node, {f"{p}x": (dtype, shape)}, consts, {f"{p}y": dtype}


def split_case(rng: np.random.Generator, p: str, dtype: str) -> Case:
    shape = random_shape(rng, int(rng.integers(1, 5)))
    axis = int(rng.integers(0, len(shape)))
    shape[axis] += 2
    cut = sorted(rng.choice(range(1, shape[axis]), 1 + (shape[axis] > 3), replace=False))
    sizes = np.diff([0, *cut, shape[axis]]).astype(np.int64)
    outs = [f"{p}y{k}" for k in range(len(sizes))]
    node = helper.make_node("Split", [f"{p}x", f"{p}split"], outs, name=f"{p}split",
                            axis=axis - len(shape) if rng.random() < 0.3 else axis)
    return node, {f"{p}x": (dtype, shape)}, {f"{p}split": sizes}, dict.fromkeys(outs, dtype)


def gather_case(rng: np.random.Generator, p: str, dtype: str) -> Case:
    shape = random_shape(rng, int(rng.integers(1, 5)))
    axis = int(rng.integers(0, len(shape)))
    n = shape[axis]
    if rng.random() < 0.4:
        indices = np.array(rng.integers(-n, n), np.int64)  # a scalar: the axis goes
    else:
        indices = rng.integers(-n, n, size=random_shape(rng, int(rng.integers(1, 3)))
                               ).astype(rng.choice([np.int64, np.int32]))
    node = helper.make_node("Gather", [f"{p}x", f"{p}i"], [f"{p}y"], name=f"{p}gather",
                            axis=axis)
    return node, {f"{p}x": (dtype, shape)}, {f"{p}i": indices}, {f"{p}y": dtype}


def expand_case(rng: np.random.Generator, p: str, dtype: str) -> Case:
    shape = random_shape(rng, int(rng.integers(1, 4)))
    target = [d if rng.random() < 0.5 else (int(rng.integers(2, 4)) if d == 1 else 1)
              for d in shape]
    target = [int(d) for d in rng.integers(1, 3, int(rng.integers(0, 2)))] + target
    node = helper.make_node("Expand", [f"{p}x", f"{p}shape"], [f"{p}y"], name=f"{p}expand")
    return (node, {f"{p}x": (dtype, [1 if rng.random() < 0.5 else d for d in shape])},
            {f"{p}shape": np.array(target, np.int64)}, {f"{p}y": dtype})


def tile_case(rng: np.random.Generator, p: str, dtype: str) -> Case:
    shape = random_shape(rng, int(rng.integers(1, 5)))
    repeats = np.array(rng.integers(1, 4, len(shape)), np.int64)
    node = helper.make_node("Tile", [f"{p}x", f"{p}r"], [f"{p}y"], name=f"{p}tile")
    return node, {f"{p}x": (dtype, shape)}, {f"{p}r": repeats}, {f"{p}y": dtype}


def depth_case(rng: np.random.Generator, p: str, dtype: str) -> Case:
    b = int(rng.integers(1, 4))
    if rng.random() < 0.5:
        shape = [int(rng.integers(1, 3)), b * b * int(rng.integers(1, 4)),
                 int(rng.integers(1, 4)), int(rng.integers(1, 4))]
        node = helper.make_node("DepthToSpace", [f"{p}x"], [f"{p}y"], name=f"{p}d2s",
                                blocksize=b, mode=str(rng.choice(["DCR", "CRD"])))
    else:
        shape = [1, int(rng.integers(1, 4)), b * int(rng.integers(1, 4)),
                 b * int(rng.integers(1, 4))]
        node = helper.make_node("SpaceToDepth", [f"{p}x"], [f"{p}y"], name=f"{p}s2d",
                                blocksize=b)
    return node, {f"{p}x": (dtype, shape)}, {}, {f"{p}y": dtype}


MAKERS = {"Slice": slice_case, "Split": split_case, "Gather": gather_case,
          "Expand": expand_case, "Tile": tile_case, "DepthToSpace": depth_case}


@pytest.mark.parametrize("op", sorted(MAKERS))
@pytest.mark.parametrize("seed", [0, 1])
def test_views_match_ort_on_every_dtype(op: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    cases = [MAKERS[op](rng, f"c{i}_", DTYPES[i % 3]) for i in range(CASES)]
    model = combine(cases, opset=13, ms_domain=False)
    report = codegen.verify(model, samples=2, seed=seed, cflags=SANITIZE)
    assert report.ok, report.outputs


def qdq_model(op: str, seed: int) -> onnx.ModelProto:
    """DQ -> op -> Q with one quantization: the op runs on the integers, no float left."""
    rng = np.random.default_rng(seed)
    node, inputs, consts, outputs = MAKERS[op](rng, "v_", "uint8")
    (name, (_, shape)), = inputs.items()
    scale, zp = np.array(0.05, np.float32), np.array(117, np.uint8)
    nodes = [helper.make_node("DequantizeLinear", ["q", "s", "z"], [name])]
    real = helper.make_node(node.op_type, list(node.input), [f"{o}_f" for o in node.output],
                            name=node.name, **{a.name: helper.get_attribute_value(a)
                                               for a in node.attribute})
    nodes.append(real)
    nodes += [helper.make_node("QuantizeLinear", [f"{o}_f", "s", "z"], [o])
              for o in node.output]
    return graph_model(nodes, {"q": ("uint8", shape)}, dict.fromkeys(outputs, "uint8"),
                       {**consts, "s": scale, "z": zp}, opset=13)


@pytest.mark.parametrize("op", sorted(MAKERS))
def test_qdq_views_run_on_integers(op: str) -> None:
    model = qdq_model(op, 3)
    gen = generate_sources(model, Options())
    assert {n.op_type for n in gen.graph.nodes} <= {op, "SpaceToDepth"}, \
        [n.op_type for n in gen.graph.nodes]
    report = codegen.verify(model, samples=2, cflags=SANITIZE)
    assert report.ok, report.outputs


