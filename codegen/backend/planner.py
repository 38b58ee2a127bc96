"""Static memory planning: every intermediate activation gets an offset in one arena.

Lifetimes come from the call order. An elementwise kernel whose input dies at the call
writes its output over that input (in place), so the two share one buffer. A kernel that
reads an input in a known order (a depthwise convolution channel by channel, a pointwise
one pixel by pixel) may write its output over the part of that input it has finished
with, when the input dies at the call: its Overlap bounds the output's offset relative
to the input's. Buffers are placed one by one at the lowest offset that does not overlap
a buffer live at the same time, except as such a bound allows (first fit), in several
orders (largest first, longest-lived first, ...); the smallest arena is kept. The lower
bound is the peak of bytes live at one call with whole tensors, so an arena may end below
it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from codegen.core.program import KernelCall, Overlap, Program

ALIGNMENT = 8


@dataclass(frozen=True)
class Placement:
    tensor: str
    offset: int
    size: int
    first: int  # index of the call that writes it
    last: int  # index of the last call that reads it


@dataclass(frozen=True)
class ArenaPlan:
    placements: dict[str, Placement]
    size: int
    # The most bytes live at any one call, before in-place sharing: no plan without it
    # can use less.
    lower_bound: int
    # tensor -> the tensor whose buffer it reuses (written in place)
    shared: dict[str, str] = field(default_factory=dict)
    # output -> the input whose finished bytes it overwrites (placed overlapping it)
    overlapped: dict[str, str] = field(default_factory=dict)
    # tensors whose rows die one by one (a banded block's input): later buffers take
    # the rows already read
    by_rows: frozenset[str] = frozenset()

    def offset(self, tensor: str) -> int:
        return self.placements[tensor].offset


def _align(n: int, alignment: int) -> int:
    return (n + alignment - 1) // alignment * alignment


def scratch_name(step: int) -> str:
    """The arena entry of call `step`'s scratch buffer."""
    return f"#scratch{step}"


def tensor_lifetimes(program: Program) -> dict[str, tuple[int, int]]:
    """[first write, last read] call indices of every tensor that lives in the arena,
    and of every call's scratch buffer (live during that call only)."""
    external = set(program.constants)
    lifetimes: dict[str, tuple[int, int]] = {}
    if program.io == "float":  # the caller's buffers
        external |= {t.name for t in program.inputs} | {t.name for t in program.outputs}
    else:  # in the arena: an input from before the first call (the caller writes it)
        for t in program.inputs:
            lifetimes[program.root(t.name)] = (0, 0)
    for step, call in enumerate(program.calls):
        if call.scratch_bytes:
            lifetimes[scratch_name(step)] = (step, step)
        for name in call.outputs:
            if name not in external and name not in lifetimes:
                lifetimes[name] = (step, step)
        for name in call.inputs:
            root = program.root(name)  # reading an alias keeps its storage alive
            if root in lifetimes:
                lifetimes[root] = (lifetimes[root][0], step)
    if program.io != "float":  # an output until after the last call (the caller reads it)
        end = max(len(program.calls) - 1, 0)
        for t in program.outputs:
            root = program.root(t.name)
            lifetimes[root] = (lifetimes.get(root, (0, 0))[0], end)
    return lifetimes


def in_place_storage(program: Program, lifetimes: dict[str, tuple[int, int]],
                     sizes: dict[str, int]) -> dict[str, str]:
    """tensor -> the tensor whose buffer it takes over (in place), resolved to the first
    of a chain (x -> add -> clamp share one buffer)."""
    storage: dict[str, str] = {}
    for step, call in enumerate(program.calls):
        if call.in_place is None or len(call.outputs) != 1:
            continue
        out, source = call.outputs[0], program.root(call.inputs[call.in_place])
        if out not in lifetimes or source not in lifetimes or out in storage:
            continue
        owner = storage.get(source, source)
        # The input must die here, and no other input of the call may share its buffer.
        others = {storage.get(program.root(t), program.root(t))
                  for i, t in enumerate(call.inputs) if i != call.in_place}
        if lifetimes[source][1] == step and sizes[out] == sizes[source] and owner not in others:
            storage[out] = owner
    return storage


def buffer_lifetimes(lifetimes: dict[str, tuple[int, int]],
                     storage: dict[str, str]) -> dict[str, tuple[int, int]]:
    """Each buffer's [first, last] over every tensor it holds."""
    merged: dict[str, tuple[int, int]] = {}
    for name, (first, last) in lifetimes.items():
        owner = storage.get(name, name)
        a, b = merged.get(owner, (first, last))
        merged[owner] = (min(a, first), max(b, last))
    return merged


# (output buffer, input buffer) -> the Overlap that bounds their offsets
Pairs = dict[tuple[str, str], Overlap]


def overlap_pairs(program: Program, lifetimes: dict[str, tuple[int, int]],
                  storage: dict[str, str], buffers: dict[str, tuple[int, int]]) -> Pairs:
    """The buffers a call's Overlap lets overlap: its output's, which starts at the call,
    and its input's, which ends there (no later call reads it, and no other input of the
    call is held in it)."""
    pairs: Pairs = {}
    for step, call in enumerate(program.calls):
        if call.overlap is None or len(call.outputs) != 1:
            continue
        out, source = call.outputs[0], program.root(call.inputs[call.overlap.input])
        if out not in lifetimes or source not in lifetimes:
            continue
        y, x = storage.get(out, out), storage.get(source, source)
        others = {storage.get(program.root(t), program.root(t))
                  for i, t in enumerate(call.inputs) if i != call.overlap.input}
        if y != x and x not in others and buffers[x][1] == step and buffers[y][0] == step:
            pairs[(y, x)] = call.overlap
    return pairs


def forbidden_starts(name: str, size: int, other: Placement,
                     pairs: Pairs) -> list[tuple[int, int]]:
    """The open intervals of offsets at which `name` (size bytes) may not start, given
    `other`, live at the same time: where the two would overlap, less what an Overlap
    between them allows."""
    low, high = other.offset - size, other.offset + other.size
    if (overlap := pairs.get((name, other.tensor))) is not None:
        # name is the output: free at or below other + max_shift
        point, free_below = other.offset + overlap.max_shift, True
    elif (overlap := pairs.get((other.tensor, name))) is not None:
        # name is the input: free at or above other - max_shift
        point, free_below = other.offset - overlap.max_shift, False
    else:
        return [(low, high)]
    if overlap.exact:
        return [(low, min(high, point)), (max(low, point), high)]
    return [(max(low, point), high)] if free_below else [(low, min(high, point))]


def lowest_free_start(intervals: list[tuple[int, int]], alignment: int) -> int:
    """The lowest aligned offset >= 0 inside none of the open intervals."""
    # Their union as disjoint open intervals, in order (touching ones stay apart: the
    # point between is free); the answer is 0 or the aligned end of one of them.
    merged: list[list[int]] = []
    for a, b in sorted((a, b) for a, b in intervals if a < b):
        if merged and a < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    j = 0
    for c in (0, *(_align(max(b, 0), alignment) for _, b in merged)):
        while j < len(merged) and merged[j][1] <= c:
            j += 1
        if j == len(merged) or not merged[j][0] < c:
            return c
    raise AssertionError("no free offset")  # the end of the last interval is free


def readers_by_tensor(program: Program) -> dict[str, list[tuple[int, KernelCall]]]:
    """root tensor -> the (step, call) of each call reading it."""
    readers: dict[str, list[tuple[int, KernelCall]]] = {}
    for step, call in enumerate(program.calls):
        for root in {program.root(t) for t in call.inputs}:
            readers.setdefault(root, []).append((step, call))
    return readers


def row_pieces(program: Program, name: str, lifetime: tuple[int, int],
               readers: list[tuple[int, KernelCall]]) -> list[Placement]:
    """A tensor that every reader reads a window of rows at a time (RowsRead), as pieces
    of rows of its planes, each alive until the last call that reads it (offsets from the
    tensor's start); none for any other tensor."""
    reads = [(step, call.rows_read) for step, call in readers
             if call.rows_read is not None and program.root(call.inputs[0]) == name and
             sum(program.root(t) == name for t in call.inputs) == 1]
    if not reads or len(reads) != len(readers):
        return []
    shape = reads[0][1]
    assert shape is not None
    if any(r is None or (r.planes, r.rows, r.row_bytes) !=
           (shape.planes, shape.rows, shape.row_bytes) for _, r in reads):
        return []
    death = [lifetime[0]] * shape.rows
    for step, r in reads:
        assert r is not None
        for row in range(max(r.first, 0), min(r.end, shape.rows)):
            death[row] = max(death[row], step)
    pieces = []
    for plane in range(shape.planes):
        row = 0
        while row < shape.rows:
            end = row
            while end < shape.rows and death[end] == death[row]:
                end += 1
            offset = (plane * shape.rows + row) * shape.row_bytes
            pieces.append(Placement(name, offset, (end - row) * shape.row_bytes,
                                    lifetime[0], death[row]))
            row = end
    return pieces


def place_first_fit(order: list[str], lifetimes: dict[str, tuple[int, int]],
                    sizes: dict[str, int], pairs: Pairs | None = None,
                    alignment: int = ALIGNMENT,
                    fixed: Sequence[Placement] = ()) -> list[Placement]:
    """Each tensor, in `order`, at the lowest offset free during its whole lifetime
    (around the `fixed` placements)."""
    placed: list[Placement] = list(fixed)
    by_time = TimeIndex()
    for p in placed:
        by_time.add(p)
    for name in order:
        first, last = lifetimes[name]
        size = sizes[name]
        intervals = [interval for p in by_time.live(first, last)
                     for interval in forbidden_starts(name, size, p, pairs or {})]
        placement = Placement(name, lowest_free_start(intervals, alignment), size, first,
                              last)
        placed.append(placement)
        by_time.add(placement)
    return placed


def live_bytes_by_step(lifetimes: dict[str, tuple[int, int]], sizes: dict[str, int],
                       steps: int) -> list[int]:
    """The bytes live at each step: each lifetime adds its size where it starts and
    takes it back after it ends (one pass, not a sum over all tensors per step)."""
    change = [0] * (steps + 1)
    for name, (a, b) in lifetimes.items():
        first, last = max(a, 0), min(b, steps - 1)
        if first <= last:
            change[first] += sizes[name]
            change[last + 1] -= sizes[name]
    live, total = [], 0
    for step in range(steps):
        total += change[step]
        live.append(total)
    return live


class TimeIndex:
    """Placements by the spans of steps they live in: the ones live during a lifetime
    are found among those of its buckets, not among all placed so far (which made
    planning quadratic in the number of tensors: 10,000 layers took most of a minute).
    The result does not depend on the order they are found in (lowest_free_start sorts)."""

    BUCKET = 32  # steps

    def __init__(self) -> None:
        self.buckets: dict[int, list[Placement]] = {}

    def add(self, p: Placement) -> None:
        for bucket in range(p.first // self.BUCKET, p.last // self.BUCKET + 1):
            self.buckets.setdefault(bucket, []).append(p)

    def live(self, first: int, last: int) -> list[Placement]:
        """The placements live at some step from first to last, each once."""
        found: dict[int, Placement] = {}
        for bucket in range(first // self.BUCKET, last // self.BUCKET + 1):
            for p in self.buckets.get(bucket, ()):
                if p.first <= last and first <= p.last:
                    found.setdefault(id(p), p)
        return list(found.values())


# Placement orders tried (the smallest arena wins; ties keep the earlier one): first fit
# is sensitive to the order, and no single order is best on every graph.
OrderKey = Callable[[str, dict[str, tuple[int, int]], dict[str, int]], tuple[Any, ...]]
ORDERS: tuple[tuple[str, OrderKey], ...] = (
    ("size", lambda n, life, size: (-size[n], life[n][0], n)),
    ("size, then longest", lambda n, life, size: (-size[n], -(life[n][1] - life[n][0]), n)),
    ("area", lambda n, life, size: (-size[n] * (life[n][1] - life[n][0] + 1), n)),
    ("longest", lambda n, life, size: (-(life[n][1] - life[n][0]), -size[n], n)),
    ("start", lambda n, life, size: (life[n][0], -size[n], n)),
)


def plan_arena(program: Program, alignment: int = ALIGNMENT, in_place: bool = True) -> ArenaPlan:
    lifetimes = tensor_lifetimes(program)
    scratch = {scratch_name(i): call.scratch_bytes for i, call in enumerate(program.calls)}
    sizes = {name: _align(scratch[name] if name in scratch else program.tensors[name].nbytes,
                          alignment) for name in lifetimes}
    storage = in_place_storage(program, lifetimes, sizes) if in_place else {}
    buffers = buffer_lifetimes(lifetimes, storage)
    pairs = overlap_pairs(program, lifetimes, storage, buffers) if in_place else {}
    # The largest tensor read a window of rows at a time (a banded block's input) goes
    # first, at offset 0, as pieces that die row by row: later buffers take its rows.
    pieces: list[Placement] = []
    readers = readers_by_tensor(program)
    read_by_rows = {program.root(c.inputs[0]) for c in program.calls if c.rows_read}
    for name in sorted(read_by_rows & set(buffers), key=lambda n: (-sizes[n], n)):
        if name not in storage and name not in storage.values() and \
                not any(name in pair for pair in pairs):
            pieces = row_pieces(program, name, buffers[name], readers.get(name, []))
            if pieces:
                break
    whole = pieces[0].tensor if pieces else None
    best: list[Placement] | None = None
    best_total = 0
    # First fit is greedy: an overlap taken early can crowd what comes later (misc_ops
    # packs tighter without), so the plans without the overlaps compete too.
    for allowed in ({}, pairs) if pairs else ({},):
        for _, key in ORDERS:
            order = sorted((n for n in buffers if n != whole),
                           key=lambda n: key(n, buffers, sizes))
            placed = place_first_fit(order, buffers, sizes, allowed, alignment, pieces)
            total = max((p.offset + p.size for p in placed), default=0)
            if best is None or total < best_total:
                best, best_total = placed, total
    assert best is not None
    if whole is not None:
        best = [p for p in best if p.tensor != whole]
        best.append(Placement(whole, 0, sizes[whole], *buffers[whole]))
        best_total = max(best_total, sizes[whole])
    steps = len(program.calls)
    live_bytes = live_bytes_by_step(lifetimes, sizes, steps)
    offsets = {p.tensor: p.offset for p in best}
    placements = {name: Placement(name, offsets[storage.get(name, name)], sizes[name], a, b)
                  for name, (a, b) in lifetimes.items()}
    overlapped = {y: x for (y, x) in pairs
                  if offsets[y] < offsets[x] + sizes[x] and offsets[x] < offsets[y] + sizes[y]}
    return ArenaPlan(placements, best_total, max(live_bytes, default=0),
                     {name: owner for name, owner in storage.items()}, overlapped,
                     frozenset([whole] if whole is not None else []))
