"""Transpose (codegen/ops/transpose.py, runtime_c/transpose.c) against ONNX Runtime: the
tiled 2-D path that NHWC <-> NCHW and matrix transposes take (batched or not, sizes
around the tile), the strided copy for the other permutations, and the alias for
permutations of size-1 axes, on uint8, int8 and float32."""

from __future__ import annotations

import itertools

import pytest
from conftest import SANITIZE
from modelgen import graph_model
from onnx import helper

import codegen
from codegen.options import Options
from codegen.pipeline import generate_sources

CASES = [([1, 3, 17, 5], [0, 2, 3, 1], "q8_transpose_2d"),  # NCHW -> NHWC
         ([1, 33, 2, 19], [0, 3, 1, 2], "q8_transpose_2d"),  # NHWC -> NCHW
         ([16, 16], [1, 0], "q8_transpose_2d"),
         ([3, 31, 18], [0, 2, 1], "q8_transpose_2d"),  # batched (attention heads)
         ([2, 3, 4], [2, 0, 1], "q8_transpose_2d"),
         ([2, 3, 4, 5], [0, 2, 1, 3], "q8_transpose"),
         ([2, 3, 4], [1, 0, 2], "q8_transpose"),
         ([4, 1, 5], [1, 0, 2], "q8_copy")]  # a size-1 axis moves: an alias (copied out)


@pytest.mark.parametrize("dtype", ["uint8", "int8", "float32"])
@pytest.mark.parametrize("case", CASES)
def test_transpose_matches_ort(dtype: str, case: tuple[list[int], list[int], str]
                               ) -> None:
    shape, perm, kernel = case
    model = graph_model([helper.make_node("Transpose", ["x"], ["y"], perm=perm)],
                        {"x": (dtype, shape)}, {"y": dtype})
    calls = [c.function for c in generate_sources(model, Options()).program.calls]
    assert calls == [kernel], calls
    report = codegen.verify(model, samples=2, cflags=SANITIZE)
    assert report.ok, report.outputs


def test_every_rank_3_permutation() -> None:
    for perm in itertools.permutations(range(3)):
        model = graph_model([helper.make_node("Transpose", ["x"], ["y"], perm=list(perm))],
                            {"x": ("uint8", [5, 7, 18])}, {"y": "uint8"})
        report = codegen.verify(model, samples=1, cflags=SANITIZE)
        assert report.ok, (perm, report.outputs)
