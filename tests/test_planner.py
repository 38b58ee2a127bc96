"""The arena planner: tensors live at the same time never share bytes, offsets are
aligned, and the arena is never smaller than the peak of live bytes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from codegen.ir import Tensor
from codegen.planner import ALIGNMENT, plan_arena, tensor_lifetimes
from codegen.program import KernelCall, Program


def chain_program(sizes: list[int], reads: list[list[int]]) -> Program:
    """Call i writes tensor t{i} and reads the tensors listed in reads[i]."""
    tensors = {"in": Tensor("in", "uint8", (4,)), "out": Tensor("out", "uint8", (4,))}
    calls = []
    for i, size in enumerate(sizes):
        tensors[f"t{i}"] = Tensor(f"t{i}", "int8", (size,))
        inputs = tuple(f"t{j}" for j in reads[i]) or ("in",)
        calls.append(KernelCall("k", f"n{i}", inputs, (f"t{i}",)))
    calls.append(KernelCall("k", "last", (f"t{len(sizes) - 1}",), ("out",)))
    return Program("p", [tensors["in"]], [tensors["out"]], tensors, calls)


@st.composite
def programs(draw: st.DrawFn) -> Program:
    n = draw(st.integers(1, 25))
    sizes = [draw(st.integers(1, 5000)) for _ in range(n)]
    reads = [sorted(draw(st.sets(st.integers(0, i - 1), max_size=3))) if i else []
             for i in range(n)]
    return chain_program(sizes, reads)


@settings(max_examples=300, deadline=None)
@given(programs())
def test_live_tensors_never_overlap(program: Program) -> None:
    plan = plan_arena(program)
    lifetimes = tensor_lifetimes(program)
    placed = list(plan.placements.values())
    assert {p.tensor for p in placed} == set(lifetimes)
    for p in placed:
        assert p.offset % ALIGNMENT == 0
        assert p.size >= program.tensors[p.tensor].nbytes
        assert p.offset + p.size <= plan.size
    for a in placed:
        for b in placed:
            if a.tensor < b.tensor and a.first <= b.last and b.first <= a.last:
                assert a.offset + a.size <= b.offset or b.offset + b.size <= a.offset
    assert plan.lower_bound <= plan.size


def test_a_chain_reuses_memory() -> None:
    # t0 -> t1 -> t2 -> t3: only neighbours are live together.
    program = chain_program([1000, 1000, 1000, 1000], [[], [0], [1], [2]])
    plan = plan_arena(program)
    assert plan.size == 2000 == plan.lower_bound
