"""Static memory planning: every intermediate activation gets an offset in one arena.

Lifetimes come from the call order. Tensors are placed largest first, each at the lowest
offset that does not overlap a tensor live at the same time (greedy by size, first fit).
"""

from __future__ import annotations

from dataclasses import dataclass

from .program import Program

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
    # The most bytes live at any one call: no plan can use less.
    lower_bound: int

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
    external = {t.name for t in program.inputs} | {t.name for t in program.outputs}
    external |= set(program.constants)
    lifetimes: dict[str, tuple[int, int]] = {}
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
    return lifetimes


def plan_arena(program: Program, alignment: int = ALIGNMENT) -> ArenaPlan:
    lifetimes = tensor_lifetimes(program)
    scratch = {scratch_name(i): call.scratch_bytes for i, call in enumerate(program.calls)}
    sizes = {name: _align(scratch[name] if name in scratch else program.tensors[name].nbytes,
                          alignment) for name in lifetimes}
    order = sorted(lifetimes, key=lambda n: (-sizes[n], lifetimes[n][0], n))
    placed: list[Placement] = []
    for name in order:
        first, last = lifetimes[name]
        size = sizes[name]
        busy = sorted((p.offset, p.offset + p.size) for p in placed
                      if p.first <= last and first <= p.last)
        offset = 0
        for begin, end in busy:
            if offset + size <= begin:
                break
            offset = max(offset, end)
        placed.append(Placement(name, offset, size, first, last))
    total = max((p.offset + p.size for p in placed), default=0)
    steps = len(program.calls)
    live_bytes = [sum(sizes[n] for n, (a, b) in lifetimes.items() if a <= s <= b)
                  for s in range(steps)]
    return ArenaPlan({p.tensor: p for p in placed}, total, max(live_bytes, default=0))
