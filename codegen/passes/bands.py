"""Row bands (generate --memory min): a block of layers run a band of rows at a time.

The whole tensors inside the block are never alive: each layer's output is kept only as a
window of rows (its history buffer, NCHW planes of a few rows) that slides down the
tensor, long enough for the layers that read it, as line-buffered image pipelines keep
them. Nothing is computed twice: at band t a layer computes its next `rows` output rows,
`delay` rows behind where band t would put them, far enough for the rows it reads to be
computed already by its producers in the same band. The block's inputs are read a window
at a time; its outputs are placed band by band into whole tensors.

Each band's layer is an ordinary node of the same operator on its window (no padding
above or below: the windows hold the padding rows, the zero point, as the kernel would
read them), lowered by the same family, so the results are exactly those of the whole
layer. The data movement is the `onnx2mcu` domain's RowsWindow / RowsShift / RowsPlace
(codegen/ops/rows.py).

The default mode never bands: it costs cycles (the moves, and the calls per band). The
block is chosen by the arena it leaves: `band_for_memory` tries the runs of layers that
can be banded and keeps the rewrite with the least live bytes at its peak.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import ModelError
from ..ir import Graph, Node, Tensor
from ..ops._geometry import sliding_window
from ..ops.rows import DOMAIN

# The operators a band can run, and the inputs each reads a window of rows of.
BAND_INPUTS: dict[tuple[str, str], tuple[int, ...]] = {
    ("QLinearConv", ""): (0,),
    ("QLinearAdd", "com.microsoft"): (0, 3),
}
# The input whose zero point pads a convolution's window (x_zero_point).
CONV_ZERO_POINT = 2
# Rows per band of the block's last output that the search tries.
BAND_ROWS = (1, 2, 4)


@dataclass(frozen=True)
class RowAccess:
    """How a node reads an input along H: output row j reads input rows
    [j * stride - pad, j * stride - pad + kernel)."""

    kernel: int
    stride: int
    pad: int


ELEMENTWISE = RowAccess(1, 1, 0)


@dataclass(frozen=True)
class Stream:
    """A tensor the block computes, band by band: band t holds its rows
    [t * rows - delay, (t + 1) * rows - delay) (those outside [0, height) are virtual:
    padding, never stored in the whole tensor)."""

    rows: int
    delay: int
    height: int

    def first(self, band: int) -> int:
        return band * self.rows - self.delay

    def computed(self, band: int) -> bool:
        """Does band `band` hold any real row?"""
        first = self.first(band)
        return first < self.height and first + self.rows > 0

    def real(self, band: int) -> tuple[int, int]:
        """The band's real rows, as [first, end) within the band."""
        first = self.first(band)
        lo = min(max(0, -first), self.rows)
        return lo, max(lo, min(self.rows, self.height - first))


@dataclass(frozen=True)
class Reader:
    node: int  # index in the block
    slot: int  # input index
    access: RowAccess
    output: Stream  # the reader's own output stream

    def window_start(self, band: int) -> int:
        """The first input row the reader's band `band` reads."""
        return self.output.first(band) * self.access.stride - self.access.pad

    @property
    def lag(self) -> int:
        """How far the window starts behind band t * rows of its input stream."""
        return self.output.delay * self.access.stride + self.access.pad

    @property
    def window_rows(self) -> int:
        return (self.output.rows - 1) * self.access.stride + self.access.kernel

    def reads_all_of(self, rows: int) -> bool:
        """Would the reader's band, run on a window of `rows` rows, give its band's rows
        (a convolution ignores rows below its last window)?"""
        if self.access == ELEMENTWISE:
            return rows == self.output.rows
        return rows >= self.access.kernel and \
            (rows - self.access.kernel) // self.access.stride + 1 == self.output.rows


@dataclass
class BlockPlan:
    """A block of consecutive nodes and the streams its band schedule gives."""

    start: int  # index of the block's first node in the graph
    nodes: list[Node]
    access: list[dict[int, RowAccess]]
    streams: dict[str, Stream]  # the tensors the block computes
    readers: dict[str, list[Reader]]  # every tensor the block reads
    outputs: list[str]  # the block's tensors read after it (placed whole)
    bands: range
    pads: dict[str, int] = field(default_factory=dict)  # tensor -> its padding byte

    def history_rows(self, tensor: str) -> int:
        """Rows the history buffer of a computed tensor keeps (its band's rows alone:
        no buffer)."""
        stream = self.streams[tensor]
        lag = max([stream.delay, *(r.lag for r in self.readers.get(tensor, []))])
        return stream.rows + lag - stream.delay


def is_band_tensor(t: Tensor | None) -> bool:
    return t is not None and len(t.shape) == 4 and t.shape[0] == 1 and \
        t.dtype in ("int8", "uint8")


def row_access(node: Node, graph: Graph) -> dict[int, RowAccess] | None:
    """How the node reads each of its activation inputs along H; None: it cannot run in
    bands (another operator, a constant or missing activation, other than 4-D 8-bit
    tensors, dilation, an elementwise broadcast)."""
    slots = BAND_INPUTS.get((node.op_type, node.domain))
    if slots is None or len(node.outputs) != 1:
        return None
    y = graph.tensors.get(node.outputs[0])
    xs = [graph.tensors.get(node.inputs[i]) if i < len(node.inputs) else None for i in slots]
    if not is_band_tensor(y) or not all(is_band_tensor(x) for x in xs):
        return None
    if any(name and name not in graph.constants
           for i, name in enumerate(node.inputs) if i not in slots):
        return None
    assert y is not None
    if node.op_type == "QLinearAdd":
        return {i: ELEMENTWISE for i in slots} if all(
            x is not None and x.shape == y.shape for x in xs) else None
    x, w = xs[0], graph.constants.get(node.inputs[3])
    if x is None or w is None or w.ndim != 4 or len(node.inputs) < 3:
        return None
    try:
        window = sliding_window(node, x.shape, tuple(w.shape[2:]), is_conv=True)
    except ModelError:
        return None
    if window.dilations != (1, 1) or min(window.pads_begin[1], window.pads_end[1]) < 0 or \
            window.output[0] != y.shape[2]:
        return None
    return {0: RowAccess(window.kernel[0], window.strides[0], window.pads_begin[0])}


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def readers_of(graph: Graph, tensor: str) -> list[Node]:
    return [n for n in graph.nodes if tensor in n.inputs]


def plan_block(graph: Graph, start: int, end: int, last_rows: int,
               later: Sequence[int] = ()) -> BlockPlan | None:
    """The band schedule of graph.nodes[start:end] with `last_rows` rows of the last
    node's output per band; None where the nodes do not chain into one (a stride that
    does not divide the rows, an output nothing inside decides the band of).

    Each node runs as early as the rows it reads allow, `later[i]` bands of its own
    rows later than that (node i of the block): a later node needs longer history of
    what it reads and none of what it computes, and where strides round a delay up, a
    block started a row later saves a row of every buffer after the stride."""
    nodes = graph.nodes[start:end]
    access = [row_access(n, graph) for n in nodes]
    if any(a is None for a in access):
        return None
    accesses = [a for a in access if a is not None]
    produced = {n.outputs[0]: i for i, n in enumerate(nodes)}
    inside = {n.name for n in nodes}
    outputs = [t for t in produced if t in graph.outputs or
               any(r.name not in inside for r in readers_of(graph, t))]
    last = nodes[-1].outputs[0]
    if last not in outputs:
        return None
    rows: dict[str, int] = {last: last_rows}
    for node, reads in zip(reversed(nodes), reversed(accesses), strict=True):
        n = rows.get(node.outputs[0])
        if n is None:
            return None
        for slot, a in reads.items():
            need = n * a.stride
            if node.inputs[slot] in produced and \
                    rows.setdefault(node.inputs[slot], need) != need:
                return None
    streams: dict[str, Stream] = {}
    readers: dict[str, list[Reader]] = {}
    for i, (node, reads) in enumerate(zip(nodes, accesses, strict=True)):
        delays = [ceil_div(streams[node.inputs[s]].delay + a.kernel - a.stride - a.pad,
                           a.stride)
                  for s, a in reads.items() if node.inputs[s] in streams]
        y = node.outputs[0]
        extra = later[i] if i < len(later) else 0
        stream = Stream(rows[y], max(delays, default=0) + extra, graph.tensors[y].shape[2])
        streams[y] = stream
        for s, a in reads.items():
            readers.setdefault(node.inputs[s], []).append(Reader(i, s, a, stream))
    first = min(s.delay // s.rows for s in streams.values())
    bands = max(ceil_div(streams[y].height + streams[y].delay, streams[y].rows)
                for y in outputs)
    pads = block_pads(graph, nodes, readers)
    if pads is None:
        return None
    return BlockPlan(start, nodes, accesses, streams, readers, outputs,
                     range(first, bands), pads)


def block_pads(graph: Graph, nodes: Sequence[Node],
               readers: dict[str, list[Reader]]) -> dict[str, int] | None:
    """The byte each tensor's windows are padded with: the x_zero_point of the
    convolutions reading it (None where two disagree); elementwise readers never use it."""
    pads: dict[str, int] = {}
    for tensor, rs in readers.items():
        values = set()
        for r in rs:
            node = nodes[r.node]
            if node.op_type == "QLinearConv":
                values.add(int(graph.constants[node.inputs[CONV_ZERO_POINT]].reshape(-1)[0]))
        if len(values) > 1:
            return None
        t = graph.tensors[tensor]
        default = t.quant.zero_point[0] if t.quant is not None else 0
        pads[tensor] = values.pop() if values else int(default)
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
    """Builds the banded nodes of one block."""

    graph: Graph
    plan: BlockPlan
    names: Names
    nodes: list[Node] = field(default_factory=list)
    tensors: dict[str, Tensor] = field(default_factory=dict)
    history: dict[str, str] = field(default_factory=dict)  # tensor -> its buffer now
    placed: dict[str, str] = field(default_factory=dict)  # output -> its whole tensor now

    def tensor_like(self, original: str, name: str, rows: int) -> str:
        t = self.graph.tensors[original]
        n, c, _, w = t.shape
        self.tensors[name] = Tensor(name, t.dtype, (n, c, rows, w), t.quant)
        return name

    def add(self, op: str, name: str, inputs: Sequence[str], output: str,
            **attrs: int) -> None:
        self.nodes.append(Node(self.names.new(name), op, DOMAIN, tuple(inputs), (output,),
                               dict(attrs)))

    def window(self, tensor: str, source: str | None, source_first: int, rows: int,
               label: str, source_rows: int | None = None) -> str:
        """A RowsWindow of `rows` rows of `source` starting at its row `source_first`
        (rows of it outside [0, source_rows): the padding byte)."""
        out = self.tensor_like(tensor, self.names.new(f"{tensor}@{label}"), rows)
        pad = self.plan.pads.get(tensor, 0)
        if source is None:
            self.add("RowsWindow", f"pad {tensor} {label}", (), out, pad=pad)
            return out
        height = self.tensors[source].shape[2] if source in self.tensors else \
            self.graph.tensors[source].shape[2]
        limit = height if source_rows is None else source_rows
        lo, hi = max(source_first, 0), min(source_first + rows, limit)
        self.add("RowsWindow", f"window {tensor} {label}", (source,), out,
                 src_first=lo, dst_first=lo - source_first, count=max(0, hi - lo), pad=pad)
        return out

    def input_band(self, reader: Reader, tensor: str, band: int,
                   fresh: dict[str, str]) -> str:
        """What the reader's band reads of `tensor`: its history buffer or fresh band
        itself when the rows line up, else a window of it."""
        label = f"{self.plan.nodes[reader.node].name}:{band}"
        start = reader.window_start(band)
        if tensor not in self.plan.streams:  # a whole tensor computed before the block
            return self.window(tensor, tensor, start, reader.window_rows, label)
        stream = self.plan.streams[tensor]
        held = self.plan.history_rows(tensor)
        source = self.history.get(tensor) if held > stream.rows else fresh.get(tensor)
        if source is None:
            return self.window(tensor, None, 0, reader.window_rows, label)
        offset = start - (stream.first(band) + stream.rows - held)
        if offset == 0 and reader.reads_all_of(held):
            return source
        return self.window(tensor, source, offset, reader.window_rows, label, held)

    def buffer_view(self, reader: Reader, tensor: str, band: int) -> str | None:
        """The history buffer itself, where an elementwise reader's rows are its first
        rows of each plane (QLinearAddRows reads them through its strides)."""
        stream = self.plan.streams.get(tensor)
        if reader.access != ELEMENTWISE or stream is None or tensor not in self.history:
            return None
        held = self.plan.history_rows(tensor)
        top = stream.first(band) + stream.rows - held
        return self.history[tensor] if held > stream.rows and \
            reader.window_start(band) == top else None

    def band_node(self, index: int, band: int, fresh: dict[str, str]) -> None:
        node, reads = self.plan.nodes[index], self.plan.access[index]
        y = node.outputs[0]
        stream = self.plan.streams[y]
        inputs = list(node.inputs)
        attrs = band_attrs(node, self.graph)
        op, domain = node.op_type, node.domain
        for slot in reads:
            reader = next(r for r in self.plan.readers[node.inputs[slot]]
                          if r.node == index and r.slot == slot)
            view = self.buffer_view(reader, node.inputs[slot], band) \
                if node.op_type == "QLinearAdd" and op == node.op_type else None
            if view is not None:
                inputs[slot] = view
                op, domain = "QLinearAddRows", DOMAIN
                attrs = {"view_slot": slot,
                         "view_rows": self.plan.history_rows(node.inputs[slot])}
            else:
                inputs[slot] = self.input_band(reader, node.inputs[slot], band, fresh)
        first = stream.first(band)
        out = self.tensor_like(y, self.names.new(f"{y}@{band}"), stream.rows)
        self.nodes.append(replace(node, name=self.names.new(
            f"{node.name} rows {first}..{first + stream.rows - 1}"), op_type=op,
            domain=domain, inputs=tuple(inputs), outputs=(out,), attrs=attrs))
        fresh[y] = out

    def keep_history(self, tensor: str, band: int, fresh: str | None) -> None:
        """Slide the tensor's history buffer down by a band, the fresh rows at its end."""
        stream = self.plan.streams[tensor]
        held = self.plan.history_rows(tensor)
        if held == stream.rows or not self.in_use(tensor, band):
            return
        lo, hi = stream.real(band) if fresh is not None else (0, 0)
        pad = self.plan.pads.get(tensor, 0)
        name = self.tensor_like(tensor, self.names.new(f"{tensor}@history{band}"), held)
        previous = self.history.get(tensor)
        base = held - stream.rows
        copied = dict(src_first=lo, dst_first=base + lo, count=hi - lo, pad=pad)
        inputs = [i for i in (previous, fresh) if i is not None]
        if previous is None:
            self.add("RowsWindow", f"start history of {tensor}", inputs, name, **copied)
        else:
            self.add("RowsShift", f"history of {tensor} band {band}", inputs, name,
                     shift=stream.rows, **copied)
        self.history[tensor] = name

    def in_use(self, tensor: str, band: int) -> bool:
        """Is the buffer read at this band or later?"""
        return any(r.output.computed(b) for r in self.plan.readers.get(tensor, [])
                   for b in range(band, self.plan.bands.stop))

    def place(self, tensor: str, band: int, fresh: str, last: bool) -> None:
        stream = self.plan.streams[tensor]
        lo, hi = stream.real(band)
        previous = self.placed.get(tensor)
        name = tensor if last else self.names.new(f"{tensor}@upto{band}")
        if not last:
            self.tensors[name] = replace(self.graph.tensors[tensor], name=name)
        inputs = [i for i in (previous, fresh) if i is not None]
        self.add("RowsPlace", f"place {tensor} band {band}", inputs, name,
                 src_first=lo, dst_first=stream.first(band) + lo, count=hi - lo)
        self.placed[tensor] = name

    def rewrite(self) -> None:
        plan = self.plan
        last_band = {t: max(b for b in plan.bands if s.computed(b))
                     for t, s in plan.streams.items()}
        for band in plan.bands:
            fresh: dict[str, str] = {}
            for index, node in enumerate(plan.nodes):
                y = node.outputs[0]
                if plan.streams[y].computed(band):
                    self.band_node(index, band, fresh)
                if y in plan.readers:
                    self.keep_history(y, band, fresh.get(y))
                if y in plan.outputs and y in fresh:
                    self.place(y, band, fresh[y], band == last_band[y])


def band_attrs(node: Node, graph: Graph) -> dict[str, Any]:
    """The node's attributes for a band: a convolution's explicit pads without those
    above and below (its window holds them)."""
    attrs = dict(node.attrs)
    if node.op_type != "QLinearConv":
        return attrs
    x = graph.tensors[node.inputs[0]]
    w = graph.constants[node.inputs[3]]
    window = sliding_window(node, x.shape, tuple(w.shape[2:]), is_conv=True)
    attrs.pop("auto_pad", None)
    attrs["pads"] = [0, window.pads_begin[1], 0, window.pads_end[1]]
    return attrs


def band_block(graph: Graph, plan: BlockPlan) -> Graph:
    """The graph with the block's nodes replaced by their bands."""
    rewriter = Rewriter(graph, plan, Names(graph))
    rewriter.rewrite()
    end = plan.start + len(plan.nodes)
    internal = set(plan.streams) - set(plan.outputs)
    tensors = {k: v for k, v in graph.tensors.items() if k not in internal}
    tensors.update(rewriter.tensors)
    nodes = [*graph.nodes[:plan.start], *rewriter.nodes, *graph.nodes[end:]]
    return replace(graph, nodes=nodes, tensors=tensors)


def live_peak(graph: Graph) -> int:
    """The most activation bytes alive at once (graph inputs and outputs included), a
    buffer carried from band to band counted once: what the search compares."""
    last_read: dict[str, int] = {}
    for step, node in enumerate(graph.nodes):
        for name in node.inputs:
            last_read[name] = step
    for name in graph.outputs:
        last_read[name] = len(graph.nodes)

    def size(name: str) -> int:
        t = graph.tensors.get(name)
        return 0 if t is None or name in graph.constants else t.nbytes

    live = sum(size(name) for name in graph.inputs)
    peak = live
    for step, node in enumerate(graph.nodes):
        carried = (node.domain == DOMAIN and node.op_type != "RowsWindow" and \
            len(node.inputs) == 2) or node.op_type == "RowsShift"
        added = sum(size(o) for o in node.outputs) - (size(node.inputs[0]) if carried else 0)
        live += added
        peak = max(peak, live)
        for name in set(node.inputs):
            if name and last_read.get(name) == step and name not in graph.outputs:
                live -= size(name)
        if carried:
            live += size(node.inputs[0])  # counted in the output's instead
    return peak


def band_runs(graph: Graph) -> Iterator[tuple[int, int]]:
    """The maximal runs [start, end) of consecutive nodes that can run in bands."""
    start = None
    for i, node in enumerate([*graph.nodes, None]):
        ok = node is not None and node.domain != DOMAIN and row_access(node, graph) is not None
        if ok and start is None:
            start = i
        elif not ok and start is not None:
            yield start, i
            start = None


@dataclass(frozen=True)
class Candidate:
    start: int
    end: int
    rows: int
    later: tuple[int, ...]


def banded_peak(graph: Graph, candidate: Candidate) -> tuple[int, Graph] | None:
    plan = plan_block(graph, candidate.start, candidate.end, candidate.rows, candidate.later)
    if plan is None:
        return None
    banded = band_block(graph, plan)
    return live_peak(banded), banded


def tune_delays(graph: Graph, candidate: Candidate, peak: int,
                banded: Graph) -> tuple[int, Graph]:
    """Run nodes later, one at a time, while that lowers the peak (greedy)."""
    improved = True
    while improved:
        improved = False
        for i in range(candidate.end - candidate.start):
            for step in (1, 2):
                later = list(candidate.later) + [0] * (candidate.end - candidate.start)
                later[i] += step
                trial = replace(candidate, later=tuple(later[:candidate.end - candidate.start]))
                result = banded_peak(graph, trial)
                if result is not None and result[0] < peak:
                    candidate, (peak, banded), improved = trial, result, True
                    break
    return peak, banded


def band_for_memory(graph: Graph) -> Graph:
    """The graph with the block banded that lowers the peak of live bytes the most (the
    graph as it is when none does)."""
    best: tuple[int, Graph, Candidate] | None = None
    for run_start, run_end in band_runs(graph):
        for start in range(run_start, run_end):
            for end in range(start + 2, run_end + 1):
                for rows in BAND_ROWS:
                    for shift in (0, 1):
                        candidate = Candidate(start, end, rows, (shift,))
                        result = banded_peak(graph, candidate)
                        if result is not None and (best is None or result[0] < best[0]):
                            best = (*result, candidate)
    if best is None or best[0] >= live_peak(graph):
        return graph
    return tune_delays(graph, best[2], best[0], best[1])[1]
