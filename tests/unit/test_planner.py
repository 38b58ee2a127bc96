"""The arena planner: tensors live at the same time never share bytes, offsets are
aligned, and the arena is never smaller than the peak of live bytes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from codegen.backend.planner import (
    ALIGNMENT,
    Placement,
    forbidden_starts,
    live_bytes_by_step,
    lowest_free_start,
    place_first_fit,
    plan_arena,
    tensor_lifetimes,
)
from codegen.core.ir import Graph, Node, Tensor
from codegen.core.program import KernelCall, Program
from codegen.transform.schedule import (
    activation_bytes,
    consumers,
    greedy_memory_order,
    peak_live_bytes,
    schedule_for_memory,
)


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


def elementwise_program(reads_later: bool) -> Program:
    """t0 -> (add in place over t0) -> t1 -> t2; t0 read again afterwards if asked."""
    tensors = {"in": Tensor("in", "uint8", (4,)), "out": Tensor("out", "uint8", (4,))}
    for i, size in enumerate((1000, 1000, 100)):
        tensors[f"t{i}"] = Tensor(f"t{i}", "int8", (size,))
    calls = [KernelCall("k", "n0", ("in",), ("t0",)),
             KernelCall("add", "n1", ("t0", "in"), ("t1",), in_place=0),
             KernelCall("k", "n2", ("t1",) + (("t0",) if reads_later else ()), ("t2",)),
             KernelCall("k", "last", ("t2",), ("out",))]
    return Program("p", [tensors["in"]], [tensors["out"]], tensors, calls)


def test_an_elementwise_output_takes_over_its_dying_input() -> None:
    plan = plan_arena(elementwise_program(reads_later=False))
    assert plan.shared == {"t1": "t0"}
    assert plan.offset("t1") == plan.offset("t0")
    assert plan.size == 1104 < plan.lower_bound == 2000  # the bound is before sharing
    kept = plan_arena(elementwise_program(reads_later=True))
    assert kept.shared == {} and kept.offset("t1") != kept.offset("t0")


@settings(max_examples=200, deadline=None)
@given(programs(), st.lists(st.booleans(), min_size=25, max_size=25))
def test_in_place_sharing_is_safe(program: Program, flags: list[bool]) -> None:
    """With in-place kernels anywhere, two tensors share bytes while both are live only
    when one is written in place over the other as it dies."""
    calls = [KernelCall(c.function, c.node, c.inputs, c.outputs,
                        in_place=0 if flags[i % len(flags)] and c.inputs[0] != "in" else None)
             for i, c in enumerate(program.calls)]
    program = Program(program.name, program.inputs, program.outputs, program.tensors, calls)
    plan = plan_arena(program)
    placed = list(plan.placements.values())
    writer = {c.outputs[0]: c for c in calls}
    for a in placed:
        for b in placed:
            if a.tensor < b.tensor and a.first <= b.last and b.first <= a.last and not (
                    a.offset + a.size <= b.offset or b.offset + b.size <= a.offset):
                first, second = (a, b) if a.first <= b.first else (b, a)
                call = writer[second.tensor]
                assert plan.shared.get(second.tensor) == plan.shared.get(first.tensor,
                                                                         first.tensor)
                assert call.in_place is not None and first.last == second.first
                assert call.inputs[call.in_place] == first.tensor or \
                    plan.shared.get(call.inputs[call.in_place]) == plan.shared.get(
                        first.tensor, first.tensor)


def branching_graph(order: str) -> Graph:
    """Two parallel branches, each a big tensor reduced to a small one, then joined:
    file order "wide" runs both big producers first (both bigs alive together)."""
    tensors = {name: Tensor(name, "uint8", (size,)) for name, size in (
        ("x", 16), ("a", 4000), ("a2", 10), ("b", 4000), ("b2", 10), ("y", 20))}
    node = {n.name: n for n in (
        Node("A", "Op", "", ("x",), ("a",)), Node("A2", "Op", "", ("a",), ("a2",)),
        Node("B", "Op", "", ("x",), ("b",)), Node("B2", "Op", "", ("b",), ("b2",)),
        Node("J", "Op", "", ("a2", "b2"), ("y",)))}
    names = ["A", "B", "A2", "B2", "J"] if order == "wide" else ["A", "A2", "B", "B2", "J"]
    return Graph("g", ["x"], ["y"], [node[n] for n in names], tensors, {}, {"": 13})


def test_schedule_runs_branches_depth_first_when_that_lowers_the_peak() -> None:
    wide = branching_graph("wide")
    assert peak_live_bytes(wide, wide.nodes) == 8010
    scheduled = schedule_for_memory(wide)
    assert [n.name for n in scheduled.nodes] == ["A", "A2", "B", "B2", "J"]
    assert peak_live_bytes(scheduled, scheduled.nodes) == 4020
    deep = branching_graph("deep")
    assert schedule_for_memory(deep).nodes == deep.nodes  # already best: file order kept


# ------------------------------------------------------------------ linear-time forms
# The planner and the scheduler answer from indexes (issue 35: a 10,000-layer chain took
# most of a minute). Each is checked here against the quadratic form it replaced.

def first_fit_by_scan(order: list[str], lifetimes: dict[str, tuple[int, int]],
                      sizes: dict[str, int]) -> list[Placement]:
    placed: list[Placement] = []
    for name in order:
        first, last = lifetimes[name]
        intervals = [interval for p in placed if p.first <= last and first <= p.last
                     for interval in forbidden_starts(name, sizes[name], p, {})]
        placed.append(Placement(name, lowest_free_start(intervals, ALIGNMENT), sizes[name],
                                first, last))
    return placed


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 300), st.integers(0, 120), st.integers(1, 900)),
                min_size=1, max_size=60))
def test_first_fit_by_time_buckets_is_first_fit(spans: list[tuple[int, int, int]]) -> None:
    lifetimes = {f"t{i}": (a, a + d) for i, (a, d, _) in enumerate(spans)}
    sizes = {f"t{i}": s for i, (_, _, s) in enumerate(spans)}
    order = sorted(lifetimes, key=lambda n: (-sizes[n], n))
    assert place_first_fit(order, lifetimes, sizes) == first_fit_by_scan(order, lifetimes,
                                                                          sizes)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(-2, 40), st.integers(0, 30), st.integers(0, 500)),
                max_size=40), st.integers(1, 45))
def test_live_bytes_by_step_is_the_sum_per_step(spans: list[tuple[int, int, int]],
                                                steps: int) -> None:
    lifetimes = {f"t{i}": (a, a + d) for i, (a, d, _) in enumerate(spans)}
    sizes = {f"t{i}": s for i, (_, _, s) in enumerate(spans)}
    assert live_bytes_by_step(lifetimes, sizes, steps) == [
        sum(sizes[n] for n, (a, b) in lifetimes.items() if a <= s <= b) for s in range(steps)]


def greedy_by_scan(graph: Graph) -> list[Node]:
    """The greedy order as it was computed before: the min over every ready node."""
    sizes = activation_bytes(graph)
    producer = {out: i for i, node in enumerate(graph.nodes) for out in node.outputs}
    waiting = [sum(1 for t in set(node.inputs) if t in producer) for node in graph.nodes]
    readers: dict[str, list[int]] = {}
    for i, node in enumerate(graph.nodes):
        for t in set(node.inputs):
            if t in producer:
                readers.setdefault(t, []).append(i)
    remaining = consumers(graph)
    ready = [i for i, w in enumerate(waiting) if w == 0]
    order: list[Node] = []
    while ready:
        def growth(i: int) -> tuple[int, int]:
            node = graph.nodes[i]
            freed = sum(sizes.get(t, 0) for t in set(node.inputs)
                        if t and remaining[t] == node.inputs.count(t))
            return sum(sizes.get(t, 0) for t in node.outputs) - freed, i
        best = min(ready, key=growth)
        ready.remove(best)
        node = graph.nodes[best]
        order.append(node)
        for t in node.inputs:
            if t:
                remaining[t] -= 1
        for out in node.outputs:
            for reader in readers.get(out, []):
                waiting[reader] -= 1
                if waiting[reader] == 0:
                    ready.append(reader)
    return order


@st.composite
def dags(draw: st.DrawFn) -> Graph:
    """Random DAGs of nodes reading up to three earlier tensors (some twice) and writing
    one or two tensors of random sizes, some of them graph outputs."""
    n = draw(st.integers(1, 30))
    tensors = {"x": Tensor("x", "uint8", (4,))}
    nodes, names = [], ["x"]
    outputs = []
    for i in range(n):
        reads = draw(st.lists(st.sampled_from(names), min_size=1, max_size=3))
        writes = [f"n{i}_{k}" for k in range(draw(st.integers(1, 2)))]
        for w in writes:
            tensors[w] = Tensor(w, "uint8", (draw(st.integers(1, 64)),))
            if draw(st.booleans()) and draw(st.booleans()):
                outputs.append(w)
        nodes.append(Node(f"n{i}", "Op", "", tuple(reads), tuple(writes)))
        names += writes
    outputs = outputs or [names[-1]]
    return Graph("g", ["x"], outputs, nodes, tensors, {}, {"": 13})


@settings(max_examples=300, deadline=None)
@given(dags())
def test_the_greedy_order_by_heap_is_the_greedy_order(graph: Graph) -> None:
    assert [n.name for n in greedy_memory_order(graph)] == \
        [n.name for n in greedy_by_scan(graph)]


def test_graph_node_index_follows_the_node_list() -> None:
    a = Node("a", "Op", "", ("x",), ("y",))
    b = Node("b", "Op", "", ("y", "y"), ("z",))
    graph = Graph("g", ["x"], ["z"], [a], {}, {}, {"": 13})
    assert graph.producer("y") is a and graph.readers("y") == []
    graph.nodes.append(b)  # appended: the index follows
    assert graph.readers("y") == [b, b] and graph.producer("z") is b
    graph.nodes = [b]  # replaced: so does it
    assert graph.producer("y") is None and graph.readers("y") == [b, b]
