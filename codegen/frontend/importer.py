"""ONNX -> IR: load and check the model, resolve constants and static shapes, and let
each operator module validate its node and infer its outputs."""

from __future__ import annotations

import heapq
import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from numpy.typing import NDArray
from onnx import numpy_helper

from codegen import ops
from codegen.core.ir import DTYPES, ONNX_TO_DTYPE, Graph, Node, QuantParams, Tensor, itemsize
from codegen.core.limits import DEFAULT_LIMITS, Limits, check_count, check_shape, format_bytes
from codegen.errors import (
    ModelError,
    Onnx2McuError,
    ShapeError,
    UnsupportedError,
    UnsupportedOperatorError,
)

from .folding import fold_constant_subgraphs, is_contrib_qdq
from .tensor_data import (
    check_declared_size,
    check_stored_size,
    dtype_name,
    load_external_data,
    model_tensors,
)

# Each operator also checks its own version (see ops.OpDef.versions).
MIN_OPSET, MAX_OPSET = 10, 28
# Protobuf cannot parse a message over 2 GB; bigger models keep weights in external data.
MAX_PROTOBUF_BYTES = 2**31 - 1

ModelSource = str | os.PathLike[str] | bytes | onnx.ModelProto


def load_model(source: ModelSource, limits: Limits = DEFAULT_LIMITS) -> onnx.ModelProto:
    """Read a model from a path, serialized bytes or a ModelProto. External data is read
    here, from the model's folder only (see tensor_data.load_external_data); a model
    given as bytes or a ModelProto has no folder, so its external tensors stay unread."""
    if isinstance(source, onnx.ModelProto):
        return source
    if isinstance(source, bytes):
        try:
            return onnx.load_from_string(source)
        except Exception as exc:  # protobuf raises several unrelated types for bad files
            raise ModelError(f"model: not a valid ONNX model ({_first_line(exc)})") from None
    path = Path(source)
    if not path.is_file():
        raise ModelError(f"{path}: no such model file")
    size = path.stat().st_size
    if size > MAX_PROTOBUF_BYTES:
        raise ModelError(f"{path}: the file has {size} bytes ({format_bytes(size)}); an ONNX "
                         "file over 2 GB cannot be parsed (large weights belong in external "
                         "data files)")
    try:
        # onnx.load picks the format from the extension (.onnx, .onnxtxt, .json); it must
        # not follow external data locations itself: they are checked below.
        model = onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # protobuf raises several unrelated types for bad files
        raise ModelError(f"{path}: not a valid ONNX model ({_first_line(exc)})") from None
    try:
        load_external_data(model, path.parent, limits)
    except OSError as exc:
        raise ModelError(f"{path}: cannot read its external data ({_first_line(exc)})"
                         ) from None
    return model


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:300]


def parse_input_shape(text: str) -> tuple[str, tuple[int, ...]]:
    """Parse NAME=1x3x32x32 (as given to --input-shape)."""
    name, sep, dims = text.rpartition("=")
    try:
        shape = tuple(int(d) for d in dims.lower().split("x"))
    except ValueError:
        shape = ()
    if not sep or not name or not shape or min(shape) < 1:
        raise ShapeError(f"--input-shape '{text}': expected NAME=D0xD1x..., e.g. x=1x3x32x32")
    return name, shape


def import_model(model: onnx.ModelProto,
                 input_shapes: Mapping[str, tuple[int, ...]] | None = None,
                 limits: Limits = DEFAULT_LIMITS) -> Graph:
    """Build the IR of a model. Raises ModelError/UnsupportedError/ShapeError/LimitError."""
    return _import(model, input_shapes, None, limits)


def survey_model(model: onnx.ModelProto,
                 input_shapes: Mapping[str, tuple[int, ...]] | None = None,
                 limits: Limits = DEFAULT_LIMITS) -> tuple[
                     Graph, list[tuple[str, Onnx2McuError]]]:
    """Import what can be imported and report every node that cannot, all at once, as
    (node name, error). The graph holds the nodes that imported; errors about the file
    itself still raise."""
    problems: list[tuple[str, Onnx2McuError]] = []
    return _import(model, input_shapes, problems, limits), problems


def _import(model: onnx.ModelProto, input_shapes: Mapping[str, tuple[int, ...]] | None,
            problems: list[tuple[str, Onnx2McuError]] | None, limits: Limits) -> Graph:
    # Sizes first: the checker's own messages about absurd tensors name no limit.
    check_count(f"the graph has {len(model.graph.node)} nodes", len(model.graph.node),
                limits, "max_nodes")
    check_count(f"the graph has {len(model.graph.output)} outputs", len(model.graph.output),
                limits, "max_outputs")
    for tensor, where in model_tensors(model):
        check_declared_size(tensor, where, limits)
    _refuse_int64_units(model)
    model = _check_model(model)
    opsets = _opsets(model)
    g = model.graph
    constants = _initializers(g, limits)
    for unknown in sorted(set(input_shapes or {}) - {i.name for i in g.input}):
        raise ShapeError(f"--input-shape: the model has no input named '{unknown}'")

    tensors: dict[str, Tensor] = {}
    inputs: list[str] = []
    notes: list[str] = []
    readers = _first_readers(g)
    for value in g.input:
        if value.name in constants:
            continue  # IR < 4 lists initializers among the inputs
        try:
            tensors[value.name], note = _graph_input(
                value, (input_shapes or {}).get(value.name), limits)
        except (UnsupportedError, ShapeError) as exc:
            reader = readers.get(value.name)
            if reader is None:
                raise
            raise type(exc)(f"{reader}: {exc}") from None
        inputs.append(value.name)
        if note is not None:
            notes.append(note)
    kept, _, slot_values = fold_constant_subgraphs(
        model, topological_node_order(g), {name: tensors[name].shape for name in inputs},
        constants, limits.max_tensor_bytes)
    for name, array in constants.items():
        dtype = str(array.dtype)
        if dtype in ONNX_TO_DTYPE.values():
            tensors[name] = Tensor(name, dtype, tuple(int(d) for d in array.shape))

    nodes = [_read_float_constants(node, slot_values)
             for node in _nodes(g, sorted(kept), opsets, constants, tensors, limits)]
    graph = Graph(name=g.name or "model", inputs=inputs, outputs=[o.name for o in g.output],
                  nodes=[], tensors=tensors, constants=constants, opsets=opsets,
                  doc=model.doc_string, notes=notes, limits=limits)
    if problems is None:
        _check_supported(nodes)
    for node in _topological_order(nodes, set(inputs) | set(constants)):
        if problems is None:
            _infer_node(node, graph, limits)
        else:
            problem = _survey_node(node, graph, limits)
            if problem:
                problems.append((node.name, problem))
                continue
        graph.nodes.append(node)
    if problems is None:
        _check_outputs(g, graph)
    return graph


class NotImportedError(Onnx2McuError):
    """A node skipped in survey mode because an input of it could not be imported."""


def _survey_node(node: Node, graph: Graph, limits: Limits) -> Onnx2McuError | None:
    """Import one node in survey mode; returns what is wrong with it, if anything."""
    if ops.lookup(node) is None:
        return UnsupportedError(f"{node.describe()}: operator not supported")
    for name in node.inputs:
        if name and name not in graph.tensors and name not in graph.constants:
            return NotImportedError(f"{node.describe()}: not checked, its input '{name}' "
                                    "was not imported")
    try:
        _infer_node(node, graph, limits)
    except Onnx2McuError as exc:
        return exc
    return None


def _first_readers(g: onnx.GraphProto) -> dict[str, str]:
    """For error messages: the first node reading each tensor, described."""
    readers: dict[str, str] = {}
    for index, proto in enumerate(g.node):
        node = Node(proto.name or f"{proto.op_type}_{index}", proto.op_type, proto.domain, (), ())
        for name in proto.input:
            readers.setdefault(name, node.describe())
    return readers


def _check_model(model: onnx.ModelProto) -> onnx.ModelProto:
    """Check the model; returns it with its nodes in topological order (a sorted copy
    when the file's order is not one: the caller's ModelProto is never reordered)."""
    if not model.HasField("graph"):
        raise ModelError("model has no graph")
    _check_names(model.graph)
    _check_references(model.graph)
    model = topologically_sorted(model)
    # The checker insists on a shape field for graph inputs and outputs, which ORT does
    # not; exporters often leave output shapes out. Give it an empty one meanwhile.
    g = model.graph
    shapeless = [v.type.tensor_type for v in (*g.input, *g.output)
                 if v.type.HasField("tensor_type") and not v.type.tensor_type.HasField("shape")]
    for ttype in shapeless:
        ttype.shape.SetInParent()
    try:
        onnx.checker.check_model(model)
    except Exception as exc:  # ValidationError, or protobuf errors on broken fields
        raise ModelError(f"invalid ONNX model: {_first_line(exc)}") from None
    finally:
        for ttype in shapeless:
            ttype.ClearField("shape")
    return model


def _is_text_name(name: str | bytes) -> bool:
    # protobuf hands over a name that is not valid UTF-8 as bytes. Any text is fine:
    # names reach the C only escaped in comments and strings, and messages print escaped.
    return isinstance(name, str)


def _check_names(g: onnx.GraphProto) -> None:
    """A name that is not valid UTF-8 (a damaged file) is refused, escaped."""
    named: list[tuple[str, str | bytes]] = [("graph", g.name)]
    named += [("graph input", v.name) for v in g.input]
    named += [("graph output", v.name) for v in g.output]
    named += [("initializer", t.name) for t in g.initializer]
    for index, proto in enumerate(g.node):
        where = f"node {index} ({proto.op_type!r})"
        named.append(("node name", proto.name))
        named += [(f"{where} input", name) for name in proto.input]
        named += [(f"{where} output", name) for name in proto.output]
        named += [(f"{where} attribute", a.name) for a in proto.attribute]
    for what, name in named:
        if not _is_text_name(name):
            raise ModelError(f"{what} name {name[:60]!r} is not valid UTF-8")


def _check_references(g: onnx.GraphProto) -> None:
    """Name the node when an input is missing (the checker's own message spans many
    lines). An input produced by a later node is fine: the nodes get sorted."""
    defined = {i.name for i in g.input} | {i.name for i in g.initializer} | {""}
    defined |= {o for n in g.node for o in n.output}
    for index, proto in enumerate(g.node):
        for name in proto.input:
            if name not in defined:
                raise ModelError(f"{_describe_proto(proto, index)}: input '{name}' is not "
                                 "produced by any node, initializer or graph input")


def _describe_proto(proto: onnx.NodeProto, index: int) -> str:
    return Node(proto.name or f"{proto.op_type}_{index}", proto.op_type, proto.domain, (),
                ()).describe()


def _node_dependencies(g: onnx.GraphProto) -> list[set[int]]:
    """For each node (by index), the nodes producing its inputs. A name that is also a
    graph input or initializer counts as that (the checker refuses the clash)."""
    available = {i.name for i in g.input} | {i.name for i in g.initializer} | {""}
    producer: dict[str, int] = {}
    for index, proto in enumerate(g.node):
        for out in proto.output:
            producer.setdefault(out, index)
    return [{producer[name] for name in proto.input
             if name not in available and name in producer} for proto in g.node]


def topological_node_order(g: onnx.GraphProto) -> list[int]:
    """The node indices in a topological order, stable: of the nodes ready to run, the
    one earliest in the file comes first (Kahn's algorithm with a heap), so a sorted
    graph keeps its order and an unsorted one moves only what its dependencies force.
    A cycle is refused, naming its nodes."""
    depends = _node_dependencies(g)
    users: list[list[int]] = [[] for _ in depends]
    for index, producers in enumerate(depends):
        for producer in producers:
            users[producer].append(index)
    waiting = [len(producers) for producers in depends]
    ready = [index for index, count in enumerate(waiting) if count == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        index = heapq.heappop(ready)
        order.append(index)
        for user in users[index]:
            waiting[user] -= 1
            if waiting[user] == 0:
                heapq.heappush(ready, user)
    if len(order) < len(depends):
        raise ModelError(_cycle_message(g, depends, set(range(len(depends))) - set(order)))
    return order


MAX_CYCLE_NODES_SHOWN = 12


def _cycle_message(g: onnx.GraphProto, depends: list[set[int]], stuck: set[int]) -> str:
    """One line naming the nodes of one cycle among the nodes Kahn could not order. Each
    of those waits on another of them, so walking from one to a producer it waits on
    must come back to a node already seen: that loop is a cycle."""
    path: list[int] = []
    seen: dict[int, int] = {}
    index = min(stuck)
    while index not in seen:
        seen[index] = len(path)
        path.append(index)
        index = min(depends[index] & stuck)
    cycle = path[seen[index]:][::-1]  # walked from consumer to producer: reverse it
    first = cycle.index(min(cycle))  # start at the node earliest in the file
    cycle = cycle[first:] + cycle[:first]
    if len(cycle) == 1:
        return f"{_describe_proto(g.node[cycle[0]], cycle[0])}: reads its own output (a cycle)"
    labels = [f"'{g.node[i].name or f'{g.node[i].op_type}_{i}'}' ({g.node[i].op_type})"
              for i in cycle]
    if len(labels) > MAX_CYCLE_NODES_SHOWN:
        labels = [*labels[:MAX_CYCLE_NODES_SHOWN], f"... ({len(cycle)} nodes in all)"]
    return f"the graph has a cycle: nodes {' -> '.join(labels)} -> {labels[0]} (each " \
        "feeds the next)"


def topologically_sorted(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with its nodes in topological order: the model itself when they are
    (nothing copied), else a sorted copy. ONNX wants sorted graphs, ONNX Runtime sorts
    what it loads, and some tools (AMD Quark) write unsorted ones."""
    order = topological_node_order(model.graph)
    if order == sorted(order):
        return model
    ordered = onnx.ModelProto()
    ordered.CopyFrom(model)
    del ordered.graph.node[:]
    ordered.graph.node.extend(model.graph.node[i] for i in order)
    return ordered


def _opsets(model: onnx.ModelProto) -> dict[str, int]:
    opsets = {("" if o.domain == "ai.onnx" else o.domain): int(o.version)
              for o in model.opset_import}
    version = opsets.get("")
    if version is None:
        raise ModelError("model imports no ai.onnx opset")
    if not MIN_OPSET <= version <= MAX_OPSET:
        raise UnsupportedError(f"ai.onnx opset {version} is not supported; supported: "
                               f"{MIN_OPSET} to {MAX_OPSET}")
    return opsets


def _to_array(tensor: onnx.TensorProto, where: str, limits: Limits) -> NDArray[Any]:
    """The tensor as an array, after checking from its dims that it is within the limits
    and that the data present is what the dims declare (so numpy never allocates an
    absurd size, and its errors never surface)."""
    if tensor.data_location == onnx.TensorProto.EXTERNAL and not tensor.raw_data:
        raise ModelError(f"{where} '{tensor.name}': its data is in an external file, which "
                         "is read only when the model is given as a file path")
    size = check_declared_size(tensor, where, limits)
    check_stored_size(tensor, where, size)
    try:
        return np.asarray(numpy_helper.to_array(tensor))
    except Exception as exc:
        raise ModelError(f"{where} '{tensor.name}': unreadable tensor ({_first_line(exc)})"
                         ) from None


def _initializers(g: onnx.GraphProto, limits: Limits) -> dict[str, NDArray[Any]]:
    constants: dict[str, NDArray[Any]] = {}
    if len(g.sparse_initializer):
        raise UnsupportedError(f"sparse initializer '{g.sparse_initializer[0].values.name}' "
                               "is not supported")
    for init in g.initializer:
        if init.name in constants:
            raise ModelError(f"initializer '{init.name}' is defined twice")
        constants[init.name] = _to_array(init, "initializer", limits)
    return constants


def _graph_input(value: onnx.ValueInfoProto, override: tuple[int, ...] | None,
                 limits: Limits) -> tuple[Tensor, str | None]:
    """The input's tensor, and a note when a dynamic batch axis was taken as 1."""
    if not value.type.HasField("tensor_type"):
        raise UnsupportedError(f"graph input '{value.name}' is not a tensor")
    ttype = value.type.tensor_type
    dtype = ONNX_TO_DTYPE.get(ttype.elem_type)
    if dtype is None:
        type_name = onnx.TensorProto.DataType.Name(ttype.elem_type) \
            if ttype.elem_type in onnx.TensorProto.DataType.values() else str(ttype.elem_type)
        raise UnsupportedError(f"graph input '{value.name}' has dtype {type_name}; "
                               f"supported: {', '.join(ONNX_TO_DTYPE.values())}")
    if not ttype.HasField("shape"):
        if override is None:
            raise ShapeError(f"graph input '{value.name}' has no shape; pass --input-shape "
                             f"{value.name}=D0xD1x...")
        return Tensor(value.name, dtype, override), None
    dims = list(ttype.shape.dim)
    if override is not None:
        if len(override) != len(dims) or any(
                d.HasField("dim_value") and d.dim_value != o for d, o in zip(dims, override,
                                                                              strict=True)):
            declared = "x".join(d.dim_param or str(d.dim_value) or "?" for d in dims)
            raise ShapeError(f"--input-shape {value.name}={'x'.join(map(str, override))} "
                             f"does not match the declared shape {declared}")
        _check_size(override, dtype, f"graph input '{value.name}'", limits)
        return Tensor(value.name, dtype, override), None
    if any(d.HasField("dim_value") and d.dim_value == 0 for d in dims):
        raise UnsupportedError(f"graph input '{value.name}' has a dimension of size 0: "
                               "empty tensors are not supported")
    dynamic = [axis for axis, d in enumerate(dims) if _is_dynamic(d)]
    note = None
    if dynamic == [0] and len(dims) > 1:
        note = _batch_note(value.name, dims)
        dynamic = []
    if dynamic:
        # Name an axis the user must choose; a dynamic batch axis alone would be taken.
        axis = next((a for a in dynamic if a > 0), dynamic[0])
        symbol = dims[axis].dim_param or "?"
        raise ShapeError(f"graph input '{value.name}' has dynamic dimension '{symbol}' "
                         f"(axis {axis}); pass --input-shape {value.name}="
                         f"{_example_shape(dims, 1)}")
    shape = tuple(1 if _is_dynamic(d) else int(d.dim_value) for d in dims)
    _check_size(shape, dtype, f"graph input '{value.name}'", limits)
    return Tensor(value.name, dtype, shape), note


def _is_dynamic(dim: onnx.TensorShapeProto.Dimension) -> bool:
    """A dimension with no size: a dim_param ('N', 'batch_size', 'unk__123'), nothing at
    all, or a negative dim_value (-1, as some exporters write)."""
    return not dim.HasField("dim_value") or dim.dim_value < 1


def _example_shape(dims: list[onnx.TensorShapeProto.Dimension], batch: int) -> str:
    """The declared shape for --input-shape: `batch` on axis 0 when it is dynamic, 1 on
    the other dynamic axes."""
    return "x".join(str(batch if axis == 0 else 1) if _is_dynamic(d) else str(d.dim_value)
                    for axis, d in enumerate(dims))


def _batch_note(name: str, dims: list[onnx.TensorShapeProto.Dimension]) -> str:
    """A leading batch axis is the one dynamic dimension of most exports with dynamic
    axes (torch.onnx.export's dynamic_axes, tf2onnx's 'unk__N' and 'N'): the generated
    code runs one sample at a time, so it is taken as 1, and said so. A rank-1 input is
    not taken: its only axis is the data itself, not a batch of it."""
    symbol = f" '{dims[0].dim_param}'" if dims[0].dim_param else ""
    return (f"input '{name}': dynamic batch axis{symbol} taken as 1 (pass --input-shape "
            f"{name}={_example_shape(dims, 4)} for another)")


def _check_size(shape: tuple[int, ...], dtype: str, what: str, limits: Limits) -> None:
    check_shape(shape, itemsize(dtype), what, limits, dtype)


def _attribute(attr: onnx.AttributeProto, where: str, limits: Limits) -> Any:
    if attr.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
        raise UnsupportedError(f"{where}: subgraph attribute '{attr.name}' is not supported")
    value = onnx.helper.get_attribute_value(attr)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, onnx.TensorProto):
        return _to_array(value, f"{where}: attribute '{attr.name}' tensor", limits)
    if isinstance(value, list):
        return [v.decode("utf-8", errors="replace") if isinstance(v, bytes) else v for v in value]
    return value


def _constant_node_value(node: Node) -> NDArray[Any]:
    if len(node.attrs) != 1:
        raise ModelError(f"{node.describe()}: a Constant needs exactly one value attribute")
    key, value = next(iter(node.attrs.items()))
    if key == "value":
        return np.asarray(value)
    if key == "value_float":
        return np.array(value, dtype=np.float32)
    if key == "value_floats":
        return np.array(value, dtype=np.float32)
    if key in ("value_int", "value_ints"):
        return np.array(value, dtype=np.int64)
    raise UnsupportedError(f"{node.describe()}: Constant attribute '{key}' is not supported")


def _read_float_constants(node: Node, slot_values: Mapping[str, str]) -> Node:
    """The node reading, in its float constant slots (OpDef.float_constants), the constant
    values of a DequantizeLinear that other nodes still read."""
    opdef = ops.lookup(node)
    if opdef is None or not opdef.float_constants or \
            not any(name in slot_values for name in node.inputs):
        return node
    inputs = tuple(slot_values.get(name, name) if slot in opdef.float_constants else name
                   for slot, name in enumerate(node.inputs))
    return replace(node, inputs=inputs)


def _nodes(g: onnx.GraphProto, indexes: list[int], opsets: dict[str, int],
           constants: dict[str, NDArray[Any]], tensors: dict[str, Tensor],
           limits: Limits) -> list[Node]:
    """The IR nodes of g's nodes at `indexes` (in file order)."""
    nodes: list[Node] = []
    for index in indexes:
        proto = g.node[index]
        domain = "" if proto.domain == "ai.onnx" else proto.domain
        opset = opsets.get(domain, 0)
        if is_contrib_qdq(proto):
            # ORT's contrib QuantizeLinear/DequantizeLinear compute what the standard
            # ones do, with an axis from version 1 (ORT runs one kernel for both).
            domain, opset = "", max(opsets.get("", 0), 13)
        name = proto.name or f"{proto.op_type}_{index}"
        probe = Node(name, proto.op_type, domain, (), ())
        attrs = {a.name: _attribute(a, probe.describe(), limits) for a in proto.attribute}
        node = Node(name=name, op_type=proto.op_type, domain=domain,
                    inputs=tuple(proto.input), outputs=tuple(proto.output), attrs=attrs,
                    opset=opset)
        if domain not in opsets:
            raise ModelError(f"{node.describe()}: the model imports no opset for domain "
                             f"'{domain}'")
        if node.op_type == "Constant" and domain == "":
            if len(node.outputs) != 1:
                raise ModelError(f"{node.describe()}: a Constant has exactly one output")
            value = _constant_node_value(node)
            constants[node.outputs[0]] = value
            if str(value.dtype) in DTYPES:
                tensors[node.outputs[0]] = Tensor(node.outputs[0], str(value.dtype),
                                                  tuple(int(d) for d in value.shape))
            continue
        nodes.append(node)
    return nodes


def _refuse_int64_units(model: onnx.ModelProto) -> None:
    """A model `convert --integer-only` wrote with 16-bit units as int64 operators (the
    exact arithmetic for ORT to run) is a reference, not a model to generate from."""
    units = [p.value for p in model.metadata_props if p.key == ops.INT64_UNITS_PROPERTY]
    if units:
        names = units[0].split(",")
        raise UnsupportedError(
            f"node '{names[0]}': this model was written by `onnx2mcu convert "
            f"--integer-only`, its {len(names)} 16-bit unit(s) as int64 operators for ONNX "
            "Runtime to compare with; generate from the original model with --integer-only")


def _check_supported(nodes: list[Node]) -> None:
    """Fail on the first unsupported operator, naming how many more there are."""
    unsupported = [n for n in nodes if ops.lookup(n) is None]
    if not unsupported:
        return
    first = unsupported[0]
    more = ""
    if len(unsupported) > 1:
        others = sorted({f"{n.op_type}" for n in unsupported[1:]})
        more = f" ({len(unsupported) - 1} more unsupported nodes: {', '.join(others)})"
    raise UnsupportedOperatorError(f"{first.describe()}: operator not supported{more}")


def _topological_order(nodes: list[Node], available: set[str]) -> list[Node]:
    """Kahn's algorithm, stable with respect to the file's node order."""
    producers: dict[str, Node] = {}
    for node in nodes:
        for out in node.outputs:
            if not out:
                continue
            if out in producers or out in available:
                raise ModelError(f"{node.describe()}: output '{out}' is defined twice")
            producers[out] = node
    for node in nodes:
        for name in node.inputs:
            if name and name not in producers and name not in available:
                raise ModelError(f"{node.describe()}: input '{name}' is not produced by any "
                                 "node, initializer or graph input")
    ready = set(available)
    remaining = list(nodes)
    order: list[Node] = []
    while remaining:
        progressed = False
        for node in list(remaining):
            if all(not i or i in ready for i in node.inputs):
                order.append(node)
                ready.update(o for o in node.outputs if o)
                remaining.remove(node)
                progressed = True
        if not progressed:
            raise ModelError(f"{remaining[0].describe()}: the graph has a cycle")
    return order


def _infer_node(node: Node, graph: Graph, limits: Limits) -> None:
    opdef = ops.lookup(node)
    assert opdef is not None
    version = ops.operator_version(node)
    if version not in opdef.versions:
        supported = ", ".join(str(v) for v in opdef.versions)
        raise UnsupportedError(f"{node.describe()}: {node.op_type}-{version} (opset "
                               f"{node.opset}) is not supported; supported versions: "
                               f"{supported}")
    inferred = opdef.infer(node, graph)
    for tensor in inferred.outputs:
        _check_size(tensor.shape, tensor.dtype, f"{node.describe()}: output '{tensor.name}'",
                    limits)
        graph.tensors[tensor.name] = tensor
    for name, quant in inferred.quant.items():
        _annotate(graph.tensors[name], quant)


def _annotate(tensor: Tensor, quant: QuantParams) -> None:
    if tensor.quant is None:
        tensor.quant = quant


# What an output may be: also int64 (ArgMax's indices), which no input may be.
OUTPUT_DTYPES = {code: name for name, (_, _, code) in DTYPES.items()}


def _check_outputs(g: onnx.GraphProto, graph: Graph) -> None:
    if not graph.outputs:
        raise ModelError("the graph has no outputs")
    for value in g.output:
        tensor = graph.tensors.get(value.name)
        if tensor is None:
            raise ModelError(f"graph output '{value.name}' is not produced by any node")
        ttype = value.type.tensor_type
        declared = OUTPUT_DTYPES.get(ttype.elem_type)
        if ttype.elem_type and declared != tensor.dtype:
            raise ModelError(f"graph output '{value.name}' is declared as "
                             f"{dtype_name(ttype.elem_type)} but is {tensor.dtype}")
        if ttype.HasField("shape"):
            dims = ttype.shape.dim
            static = [d.dim_value if d.HasField("dim_value") else None for d in dims]
            if len(static) != len(tensor.shape) or any(
                    s is not None and s != t for s, t in zip(static, tensor.shape, strict=False)):
                raise ShapeError(f"graph output '{value.name}' is declared with shape "
                                 f"{static} but computes {list(tensor.shape)}")
