"""Row bands (generate --memory min): a block of layers run a band of rows at a time.

The whole tensors inside the block are never alive: each layer's output exists only as
the bands of rows it computed, each kept until the last window that reads it. Nothing is
computed twice: a layer computes its next `rows` output rows when a reader needs them
(Demand), after its own producers have computed the rows it reads. A reader reads a
producer's band itself where the band holds exactly its rows (a pointwise convolution,
an elementwise sum), else a window gathered from the bands that hold them (a 3x3
convolution's rows), which lives only for that read: between two reads, only the rows a
later read needs again are kept, as the bands that hold them. The block's inputs are
read a window at a time; its outputs are placed band by band into whole tensors.

Each band's layer is an ordinary node of the same operator on its window (no padding
above or below: the windows hold the padding rows, the zero point, as the kernel would
read them), lowered by the same family, so the results are exactly those of the whole
layer. The data movement is the `onnx2mcu` domain's RowsWindow / RowsPlace
(codegen/ops/rows.py).

The default mode never bands: it costs cycles (the moves, and the calls per band). The
block is chosen by the arena it leaves: `band_candidates` tries the runs of layers that
can be banded and gives the rewrites with the fewest live bytes at their peak, which the
pipeline lowers and plans to keep the smallest arena (or none, where the whole layers'
overlaps already do better).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from codegen import ops
from codegen.core.ir import Graph, Node, Tensor
from codegen.core.pattern import is_op
from codegen.ops import BAND_DOMAIN as DOMAIN
from codegen.ops import ELEMENTWISE_ROWS as ELEMENTWISE
from codegen.ops import RowAccess

# Output rows per band that the search tries.
BAND_ROWS = (1, 2, 4)


def is_band_tensor(t: Tensor | None, dtypes: tuple[str, ...] = ("int8", "uint8")) -> bool:
    return t is not None and len(t.shape) == 4 and t.shape[0] == 1 and t.dtype in dtypes


def row_access(node: Node, graph: Graph) -> dict[int, RowAccess] | None:
    """How the node reads each of its activation inputs along H (its operator's
    OpDef.bands); None: it cannot run in bands (another operator, a constant or missing
    activation, other than 4-D tensors of one batch, its own conditions)."""
    rule = ops.band_rule(node)
    if rule is None or len(node.outputs) != 1:
        return None
    slots = rule.inputs
    y = graph.tensors.get(node.outputs[0])
    xs = [graph.tensors.get(node.inputs[i]) if i < len(node.inputs) else None for i in slots]
    if not is_band_tensor(y) or not all(is_band_tensor(x, rule.input_dtypes) for x in xs):
        return None
    if any(name and name not in graph.constants
           for i, name in enumerate(node.inputs) if i not in slots):
        return None
    return rule.access(node, graph)


def rows_axis(node: Node) -> int:
    """The axis of the node's inputs along which it reads rows (OpDef.bands)."""
    rule = ops.band_rule(node)
    return rule.rows_axis if rule is not None else 2


def readers_of(graph: Graph, tensor: str) -> list[Node]:
    return [n for n in graph.nodes if tensor in n.inputs]


@dataclass(frozen=True)
class Window:
    """Rows [first, first + rows) of a node's input `slot` (rows outside the tensor are
    its padding)."""

    slot: int
    first: int
    rows: int


@dataclass(frozen=True)
class Fire:
    """Node `node` of the block computes its output rows [first, first + rows)."""

    node: int
    first: int
    windows: tuple[Window, ...]


@dataclass(frozen=True)
class Band:
    """A band a node of the block computed: rows [first, first + real) of its output
    (the band's rows past the tensor's end are not the tensor's)."""

    first: int
    name: str
    real: int


@dataclass
class BlockPlan:
    """A block of consecutive nodes and the order its bands run in."""

    start: int  # index of the block's first node in the graph
    nodes: list[Node]
    access: list[dict[int, RowAccess]]
    rows: int  # output rows each band of a node computes
    events: list[Fire]
    outputs: list[str]  # the block's tensors read after it (placed whole)
    pads: dict[str, int]  # tensor -> its padding byte
    attrs: list[dict[str, Any]]  # each node's attributes for its bands
    # The nodes whose kernel reads a window's rows from the bands themselves (depthwise
    # 3x3 convolutions, with the fast kernels): no window buffer is gathered for them.
    gathering: frozenset[int] = frozenset()

    @cached_property
    def producer(self) -> dict[str, int]:
        return {n.outputs[0]: i for i, n in enumerate(self.nodes)}


@dataclass
class Demand:
    """Runs the block's bands on demand: a band runs when a reader needs its rows, so
    only the rows between what its readers have read and what they need next are kept
    (the layers of a residual block interleave, its shortcut computed just before the
    sum). Records the bands' order."""

    graph: Graph
    nodes: list[Node]
    access: list[dict[int, RowAccess]]
    rows: int
    events: list[Fire] = field(default_factory=list)
    end: dict[str, int] = field(default_factory=dict)  # rows [.., end) exist

    def __post_init__(self) -> None:
        self.producer = {n.outputs[0]: i for i, n in enumerate(self.nodes)}
        self.fired = [0] * len(self.nodes)
        self.end = {t: 0 for t in self.producer}

    def height(self, tensor: str) -> int:
        return self.graph.tensors[tensor].shape[2]

    def demand(self, tensor: str, end: int) -> None:
        """Make rows [.., end) of a tensor the block computes exist (rows past its
        end are padding)."""
        while self.end[tensor] < min(end, self.height(tensor)):
            self.fire(self.producer[tensor])

    def fire(self, index: int) -> None:
        node = self.nodes[index]
        first = self.fired[index] * self.rows
        windows = []
        for slot, a in self.access[index].items():
            window = Window(slot, first * a.stride - a.pad, (self.rows - 1) * a.stride + a.kernel)
            if node.inputs[slot] in self.producer:
                self.demand(node.inputs[slot], window.first + window.rows)
            windows.append(window)
        self.events.append(Fire(index, first, tuple(windows)))
        self.fired[index] += 1
        self.end[node.outputs[0]] = first + self.rows

    def run(self, outputs: Sequence[str]) -> None:
        for tensor in outputs:
            self.demand(tensor, self.height(tensor))


def plan_block(graph: Graph, start: int, end: int, rows: int,
               gather: bool = True) -> BlockPlan | None:
    """The bands of graph.nodes[start:end], each computing `rows` rows of a node's
    output; None where the nodes cannot run in bands, or where the block's outputs (the
    tensors read after it) do not include its last node's. gather: depthwise 3x3 bands
    read their windows' rows from the bands (the fast kernels only)."""
    nodes = graph.nodes[start:end]
    access = [row_access(n, graph) for n in nodes]
    if any(a is None for a in access):
        return None
    accesses = [a for a in access if a is not None]
    inside = {n.name for n in nodes}
    produced = [n.outputs[0] for n in nodes]
    transposed = {n.inputs[0] for n in nodes if rows_axis(n) == 1}
    if transposed & set(produced) or any(
            rows_axis(n) != 1 and transposed & set(n.inputs) for n in nodes):
        return None  # an NHWC tensor is read a row of W x C values at a time, only
    outputs = [t for t in produced if t in graph.outputs or
               any(r.name not in inside for r in readers_of(graph, t))]
    if produced[-1] not in outputs:
        return None
    demand = Demand(graph, nodes, accesses, rows)
    demand.run([produced[-1], *outputs])
    if min(demand.fired) == 0:
        return None  # a node none of the outputs needs
    pads = block_pads(graph, nodes, accesses)
    if pads is None:
        return None
    gathering = frozenset(i for i, n in enumerate(nodes) if gather and reads_bands(n, graph))
    return BlockPlan(start, nodes, accesses, rows, demand.events, outputs, pads,
                     [band_attrs(n, graph) for n in nodes], gathering)


def reads_bands(node: Node, graph: Graph) -> bool:
    """Its operator has a form that reads its window's rows from the bands holding them
    (a depthwise 3x3 convolution's kernel copies each plane's rows anyway)."""
    rule = ops.band_rule(node)
    return rule is not None and rule.gathers is not None and rule.gathers(node, graph)


def block_pads(graph: Graph, nodes: Sequence[Node],
               access: Sequence[dict[int, RowAccess]]) -> dict[str, int] | None:
    """The byte each tensor's windows are padded with: the one its readers pad with
    (a convolution's x_zero_point; None where two disagree); elementwise readers never
    use it."""
    values: dict[str, set[int]] = {}
    for node, reads in zip(nodes, access, strict=True):
        rule = ops.band_rule(node)
        for slot in reads:
            seen = values.setdefault(node.inputs[slot], set())
            if rule is not None and rule.pad_value is not None:
                seen.add(rule.pad_value(node, graph))
    pads: dict[str, int] = {}
    for tensor, seen in values.items():
        if len(seen) > 1:
            return None
        t = graph.tensors[tensor]
        default = int(t.quant.zero_point[0]) if t.quant is not None else 0
        pads[tensor] = seen.pop() if seen else default
    return pads


class Names:
    """Unique names for the tensors and nodes a rewrite adds."""

    def __init__(self, graph: Graph) -> None:
        self.taken = set(graph.tensors) | {n.name for n in graph.nodes}

    def new(self, wanted: str) -> str:
        name = wanted
        while name in self.taken:
            name += "#"
        self.taken.add(name)
        return name


@dataclass
class Rewriter:
    """Builds the banded nodes of one block from its plan's events."""

    graph: Graph
    plan: BlockPlan
    names: Names
    nodes: list[Node] = field(default_factory=list)
    tensors: dict[str, Tensor] = field(default_factory=dict)
    bands: dict[str, list[Band]] = field(default_factory=dict)  # tensor -> its bands so far
    placed: dict[str, str] = field(default_factory=dict)  # output -> its whole tensor now

    def tensor_like(self, original: str, name: str, rows: int, axis: int = 2) -> str:
        t = self.graph.tensors[original]
        shape = list(t.shape)
        shape[axis] = rows
        self.tensors[name] = Tensor(name, t.dtype, tuple(shape), t.quant)
        return name

    def add(self, op: str, name: str, inputs: Sequence[str], output: str,
            **attrs: int) -> None:
        self.nodes.append(Node(self.names.new(name), op, DOMAIN, tuple(inputs), (output,),
                               dict(attrs)))

    def window(self, tensor: str, source: str, source_first: int, rows: int,
               source_rows: int, label: str, axis: int = 2) -> str:
        """A RowsWindow of `rows` rows of `source` from its row `source_first` (rows
        outside [0, source_rows): the padding byte)."""
        out = self.tensor_like(tensor, self.names.new(f"{tensor}@{label}"), rows, axis)
        lo, hi = max(source_first, 0), min(source_first + rows, source_rows)
        layout = {"rows_axis": axis} if axis != 2 else {}
        self.add("RowsWindow", f"window {tensor} {label}", (source,), out,
                 src_first=lo, dst_first=lo - source_first, count=max(0, hi - lo),
                 pad=self.plan.pads.get(tensor, 0), **layout)
        return out

    def input_of(self, index: int, w: Window, label: str) -> str:
        """What a band reads for one input: a whole tensor's window, the producer's band
        itself where it holds exactly the rows read, else a window gathered from the
        bands that hold them."""
        node, access = self.plan.nodes[index], self.plan.access[index][w.slot]
        tensor = node.inputs[w.slot]
        if tensor not in self.plan.producer:  # a whole tensor computed before the block
            axis = rows_axis(node)
            height = self.graph.tensors[tensor].shape[axis]
            return self.window(tensor, tensor, w.first, w.rows, height, label, axis)
        bands = self.bands_of(tensor, w)
        last = w.first + w.rows
        if len(bands) == 1 and bands[0].first == w.first and \
                reads_all_of(access, self.plan.rows, self.plan.rows) and \
                (access == ELEMENTWISE or last <= bands[0].first + bands[0].real):
            return bands[0].name  # rows past the tensor's end are an elementwise band's own
        return self.gather(tensor, bands, w, label)

    def bands_of(self, tensor: str, w: Window) -> list[Band]:
        """The bands of a tensor the block computes that hold rows of the window."""
        return [b for b in self.bands.get(tensor, [])
                if b.first < w.first + w.rows and b.first + b.real > w.first]

    def gathering_node(self, event: Fire) -> Node | None:
        """The band of a depthwise 3x3 convolution that reads its window's rows from the
        bands holding them (QLinearConvGather) instead of a gathered window."""
        node = self.plan.nodes[event.node]
        if event.node not in self.plan.gathering or node.inputs[0] not in self.plan.producer:
            return None
        (w,) = event.windows
        tensor = node.inputs[0]
        bands = self.bands_of(tensor, w)
        rule = ops.band_rule(node)
        assert rule is not None and rule.gathered is not None
        if not 0 < len(bands) <= rule.gathered_sources:
            return None
        source, index = [], []
        for row in range(w.first, w.first + w.rows):
            held = [i for i, b in enumerate(bands) if b.first <= row < b.first + b.real]
            source.append(held[0] if held else -1)
            index.append(row - bands[held[0]].first if held else 0)
        attrs = {**self.plan.attrs[event.node], "window_rows": w.rows,
                 "row_source": source, "row_index": index}
        return rule.gathered(node, [b.name for b in bands], attrs)

    def gather(self, tensor: str, bands: Sequence[Band], w: Window, label: str) -> str:
        """A window of rows [w.first, w.first + w.rows) of a tensor the block computes:
        the rows its bands hold copied in, the padding byte elsewhere."""
        name = self.names.new(f"{tensor}@{label}")
        built: str | None = None
        for band in bands:
            lo, hi = max(band.first, w.first), min(band.first + band.real, w.first + w.rows)
            copied = dict(src_first=lo - band.first, dst_first=lo - w.first, count=hi - lo)
            step = name if band is bands[-1] else self.names.new(f"{name}~{band.first}")
            self.tensor_like(tensor, step, w.rows)
            if built is None:
                self.add("RowsWindow", f"window {tensor} {label}", (band.name,), step,
                         pad=self.plan.pads.get(tensor, 0), **copied)
            else:
                self.add("RowsPlace", f"window {tensor} {label} rows {band.first}..",
                         (built, band.name), step, **copied)
            built = step
        if built is None:
            self.tensor_like(tensor, name, w.rows)
            self.add("RowsWindow", f"window {tensor} {label}", (), name, src_first=0,
                     dst_first=0, count=0, pad=self.plan.pads.get(tensor, 0))
        return name

    def fire(self, event: Fire) -> None:
        node = self.plan.nodes[event.node]
        last = event.first + self.plan.rows - 1
        label = f"rows {event.first}..{last}"
        band = self.gathering_node(event)
        if band is None:
            inputs = list(node.inputs)
            for w in event.windows:
                inputs[w.slot] = self.input_of(event.node, w, f"{node.name} {label}")
            band = replace(node, inputs=tuple(inputs), attrs=dict(self.plan.attrs[event.node]))
        y = node.outputs[0]
        out = self.tensor_like(y, self.names.new(f"{y}@{event.first}"), self.plan.rows)
        # A band keeps its layer's name: its calls are the layer's (inspect and report
        # sum them; the layer's weight storage choice applies).
        self.nodes.append(replace(band, outputs=(out,)))
        height = self.graph.tensors[y].shape[2]
        real = min(self.plan.rows, height - event.first)
        self.bands.setdefault(y, []).append(Band(event.first, out, real))
        if y in self.plan.outputs:
            self.place(y, out, event.first, real, last >= height - 1)

    def place(self, tensor: str, fresh: str, first: int, real: int, last: bool) -> None:
        previous = self.placed.get(tensor)
        name = tensor if last else self.names.new(f"{tensor}@upto{first}")
        if not last:
            self.tensors[name] = replace(self.graph.tensors[tensor], name=name)
        inputs = [i for i in (previous, fresh) if i is not None]
        self.add("RowsPlace", f"place {tensor} rows {first}..", inputs, name,
                 src_first=0, dst_first=first, count=real)
        self.placed[tensor] = name

    def rewrite(self) -> None:
        for event in self.plan.events:
            if isinstance(event, Fire):
                self.fire(event)


def reads_all_of(access: RowAccess, rows: int, band: int) -> bool:
    """Would a band of `band` output rows, run on all `rows` rows of a buffer from its
    first, compute its rows (a convolution ignores rows below its last window)?"""
    if access == ELEMENTWISE:
        return rows == band
    return rows >= access.kernel and (rows - access.kernel) // access.stride + 1 == band


def band_attrs(node: Node, graph: Graph) -> dict[str, Any]:
    """The node's attributes for a band (a convolution's explicit pads without those
    above and below: its window holds them)."""
    rule = ops.band_rule(node)
    if rule is None or rule.band_attrs is None:
        return dict(node.attrs)
    return rule.band_attrs(node, graph)


def band_block(graph: Graph, plan: BlockPlan) -> Graph:
    """The graph with the block's nodes replaced by their bands."""
    rewriter = Rewriter(graph, plan, Names(graph))
    rewriter.rewrite()
    end = plan.start + len(plan.nodes)
    internal = set(plan.producer) - set(plan.outputs)
    tensors = {k: v for k, v in graph.tensors.items() if k not in internal}
    tensors.update(rewriter.tensors)
    nodes = [*graph.nodes[:plan.start], *rewriter.nodes, *graph.nodes[end:]]
    return replace(graph, nodes=nodes, tensors=tensors)


def release_steps(graph: Graph, size: Callable[[str], int]) -> dict[int, int]:
    """step -> the 8-bit bytes that die after it: each tensor after its last read, and a
    tensor read only a window of rows at a time row by row (as the planner places the
    largest such tensor)."""
    reads: dict[str, list[tuple[int, Node]]] = {}
    born = {name: 0 for name in graph.inputs}
    for step, node in enumerate(graph.nodes):
        for name in set(node.inputs):
            if name:
                reads.setdefault(name, []).append((step, node))
        for name in node.outputs:
            born[name] = step
    released: dict[int, int] = {}
    for name, readers in reads.items():
        if name in graph.outputs or not size(name):
            continue
        if all(is_op(n, "RowsWindow", DOMAIN) for _, n in readers):
            rows = graph.tensors[name].shape[int(readers[0][1].attrs.get("rows_axis", 2))]
            death = [born.get(name, 0)] * rows
            for step, n in readers:
                first = int(n.attrs.get("src_first", 0))
                for row in range(first, min(rows, first + int(n.attrs.get("count", 0)))):
                    death[row] = max(death[row], step)
            for step in death:
                released[step] = released.get(step, 0) + size(name) // rows
        else:
            last = readers[-1][0]
            released[last] = released.get(last, 0) + size(name)
    return released


def live_peak(graph: Graph) -> int:
    """The most 8-bit activation bytes alive at once (graph inputs and outputs included),
    a buffer carried from band to band counted once: what the search compares."""
    return live_profile(graph)[0]


def live_profile(graph: Graph) -> tuple[int, int]:
    """live_peak, and the index of the node at which it is reached."""
    def size(name: str) -> int:
        # Float tensors are the caller's I/O (--io float) or gone (--io quantized).
        t = graph.tensors.get(name)
        return 0 if t is None or name in graph.constants or t.dtype == "float32" \
            else t.nbytes

    released = release_steps(graph, size)
    live = sum(size(name) for name in graph.inputs)
    peak, at = live, 0
    for step, node in enumerate(graph.nodes):
        carried = is_op(node, "RowsPlace", DOMAIN) and len(node.inputs) == 2
        added = sum(size(o) for o in node.outputs) - (size(node.inputs[0]) if carried else 0)
        live += added
        if live > peak:
            peak, at = live, step
        live -= released.get(step, 0)
        if carried:
            live += size(node.inputs[0])  # counted in the output's instead
    return peak, at


def band_runs(graph: Graph, keep_whole: frozenset[str] = frozenset()
              ) -> Iterator[tuple[int, int]]:
    """The maximal runs [start, end) of consecutive nodes that can run in bands (none of
    keep_whole's nodes)."""
    start = None
    for i, node in enumerate([*graph.nodes, None]):
        ok = node is not None and node.domain != DOMAIN and node.name not in keep_whole \
            and row_access(node, graph) is not None
        if ok and start is None:
            start = i
        elif not ok and start is not None:
            yield start, i
            start = None


def banded(graph: Graph, start: int, end: int, rows: int, gather: bool = True) -> Graph | None:
    plan = plan_block(graph, start, end, rows, gather)
    return band_block(graph, plan) if plan is not None else None


# Candidates band_candidates gives for the pipeline to lower and plan: the estimate
# counts whole buffers only (no kernel's overlap of its input), so the best few by it are
# planned and the smallest arena kept.
CANDIDATES = 3


# Block starts and ends the search tries on either side of the peak, at first (evenly
# spread over the run), and then around the best so far.
GRID = 8


def spread(lo: int, hi: int, count: int) -> list[int]:
    """At most `count` integers evenly over [lo, hi], both ends included."""
    if hi - lo + 1 <= count:
        return list(range(lo, hi + 1))
    return sorted({lo + round(i * (hi - lo) / (count - 1)) for i in range(count)})


def band_candidates(graph: Graph, limit: int = CANDIDATES,
                    keep_whole: frozenset[str] = frozenset(),
                    gather: bool = True) -> list[Graph]:
    """The graph with one block banded, for the `limit` blocks whose rewrite has the
    fewest live bytes at its peak (below the graph's own); of equal peaks, the longest
    bands (the fewest calls) first. A block must hold the node at the graph's peak; its
    start and end are searched on a grid, then around the best. keep_whole: nodes no
    block may hold; gather: as plan_block's."""
    own, at = live_profile(graph)
    scored: dict[tuple[int, int, int], tuple[int, Graph]] = {}

    def score(start: int, end: int, rows: int) -> None:
        if (start, end, rows) in scored or end - start < 2:
            return
        candidate = banded(graph, start, end, rows, gather)
        if candidate is not None:
            scored[(start, end, rows)] = (live_peak(candidate), candidate)

    for run_start, run_end in band_runs(graph, keep_whole):
        if not run_start <= at < run_end:
            continue
        starts, ends = spread(run_start, at, GRID), spread(at + 1, run_end, GRID)
        for start in starts:
            for end in ends:
                for rows in BAND_ROWS:
                    score(start, end, rows)
        for _ in range(2):  # refine around the best so far
            if not scored:
                break
            start, end, rows = min(scored, key=lambda k: (scored[k][0], -k[2]))
            for s in range(max(run_start, start - 3), min(at, start + 3) + 1):
                for e in range(max(at + 1, end - 3), min(run_end, end + 3) + 1):
                    score(s, e, rows)
    ranked = sorted((peak, -key[2], key) for key, (peak, _) in scored.items() if peak < own)
    return [scored[key][1] for _, _, key in ranked[:limit]]
