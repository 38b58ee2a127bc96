"""onnx2mcu as an onnx.backend.base.Backend, so that onnx's own backend test runner can
run node tests through the generated C.

onnx2mcu needs weights, scales, zero points and shapes at generation time. A backend
receives them as run-time inputs, so `run` freezes the inputs that feed such slots into
initializers holding the values it was given, then generates, compiles (cached) and runs
the C for the remaining inputs.
"""

from __future__ import annotations

import unittest
from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
from numpy.typing import NDArray
from onnx import numpy_helper
from onnx.backend.base import Backend, BackendRep

from codegen import ops
from codegen.api import run
from codegen.core.ir import ONNX_TO_DTYPE, Node
from codegen.errors import Onnx2McuError, UnsupportedError
from codegen.frontend.importer import (
    MAX_OPSET,
    MIN_OPSET,
    NotImportedError,
    survey_model,
)


def constant_slot_inputs(model: onnx.ModelProto) -> set[str]:
    """Names of graph inputs that feed an input slot onnx2mcu needs constant."""
    graph_inputs = {i.name for i in model.graph.input}
    names: set[str] = set()
    for proto in model.graph.node:
        node = Node(proto.name, proto.op_type, proto.domain, tuple(proto.input), ())
        opdef = ops.lookup(node)
        if opdef is None:
            continue
        for slot in opdef.constant_inputs:
            if slot < len(proto.input) and proto.input[slot] in graph_inputs:
                names.add(proto.input[slot])
    return names


def freeze_inputs(model: onnx.ModelProto, values: dict[str, NDArray[Any]]) -> onnx.ModelProto:
    """A copy of the model in which the given graph inputs are initializers."""
    frozen = onnx.ModelProto()
    frozen.CopyFrom(model)
    keep = [i for i in frozen.graph.input if i.name not in values]
    del frozen.graph.input[:]
    frozen.graph.input.extend(keep)
    for name, value in values.items():
        frozen.graph.initializer.append(numpy_helper.from_array(np.asarray(value), name))
    return frozen


class Onnx2McuRep(BackendRep):
    def __init__(self, model: onnx.ModelProto, cflags: Sequence[str] = ()) -> None:
        self.model = model
        self.cflags = tuple(cflags)
        initializers = {i.name for i in model.graph.initializer}
        self.input_names = [i.name for i in model.graph.input if i.name not in initializers]

    def run(self, inputs: Any, **kwargs: Any) -> tuple[NDArray[Any], ...]:
        if isinstance(inputs, dict):
            feeds = dict(inputs)
        else:
            arrays = [inputs] if isinstance(inputs, np.ndarray) else list(inputs)
            feeds = dict(zip(self.input_names, arrays, strict=False))
        frozen_names = constant_slot_inputs(self.model)
        model = freeze_inputs(self.model, {n: feeds[n] for n in frozen_names if n in feeds})
        remaining = {n: v for n, v in feeds.items() if n not in frozen_names}
        # A backend sees the actual inputs, so dynamic dimensions take their shapes.
        shapes = {n: tuple(np.shape(v)) for n, v in remaining.items()}
        try:
            outputs = run(model, remaining, input_shapes=shapes, cflags=self.cflags)
        except UnsupportedError as error:
            # A node whose constant inputs arrive only now (is_compatible could not check
            # it): a configuration onnx2mcu refuses is out of scope, and says why.
            raise unittest.SkipTest(f"onnx2mcu does not support it: {error}") from None
        return tuple(outputs[o.name] for o in self.model.graph.output)


class Onnx2McuBackend(Backend):
    @classmethod
    def is_compatible(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> bool:
        """Whether every node is an operator version onnx2mcu implements; dtypes and
        attributes are checked when the model runs."""
        opsets = {o.domain or "": o.version for o in model.opset_import}
        if not MIN_OPSET <= opsets.get("", 0) <= MAX_OPSET:
            return False
        frozen = constant_slot_inputs(model)  # their values arrive with run()
        declared = {i.name: ONNX_TO_DTYPE.get(i.type.tensor_type.elem_type)
                    for i in model.graph.input if i.name not in frozen}
        if None in declared.values():
            return False
        if any(d.HasField("dim_value") and d.dim_value == 0 for i in model.graph.input
               for d in i.type.tensor_type.shape.dim):
            return False  # empty tensors
        for proto in model.graph.node:
            node = Node(proto.name, proto.op_type, proto.domain, (), (),
                        opset=opsets.get(proto.domain, 0))
            opdef = ops.lookup(node)
            if opdef is None or opdef.float_island or \
                    ops.operator_version(node) not in opdef.versions:
                return False
            data = declared.get(proto.input[0]) if proto.input else None
            if opdef.data_dtypes and data is not None and data not in opdef.data_dtypes:
                return False
        # Shapes and attributes: import the nodes whose inputs are all known now; the
        # others are checked when run() supplies the constant values.
        placeholders = {i.name: np.zeros([d.dim_value or 1 for d in i.type.tensor_type.shape.dim],
                                         dtype=onnx.helper.tensor_dtype_to_np_dtype(
                                             i.type.tensor_type.elem_type))
                        for i in model.graph.input if i.name in frozen}
        deferred = {p.name or f"{p.op_type}_{k}" for k, p in enumerate(model.graph.node)
                    if any(name in frozen for name in p.input)}
        try:
            _, problems = survey_model(freeze_inputs(model, placeholders))
        except Onnx2McuError:
            return False
        return all(node in deferred or isinstance(error, NotImportedError)
                   for node, error in problems)

    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> Onnx2McuRep:
        super().prepare(model, device, **kwargs)
        return Onnx2McuRep(model, kwargs.get("cflags", ()))

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return device == "CPU"


prepare = Onnx2McuBackend.prepare
is_compatible = Onnx2McuBackend.is_compatible
supports_device = Onnx2McuBackend.supports_device
