"""The samples an entry point of the generated C takes, made from the data a user has.

A user's data is keyed by the graph's input names (or positional, as np.savez writes it),
in the model's float domain, as the float model takes it. The quantized entry point of
--io quantized|both takes the quantized tensors instead. For each of its inputs the data
is found under the graph input's name (or the quantized tensor's own name):
- an integer array is taken as it is: the quantized values (their range is checked when
  the sample is encoded);
- a float array is quantized with the input's own scale and zero point exactly as the
  model's QuantizeLinear computes it in ORT (MLAS: a float32 division, clamp, round half
  to even), so the quantized entry point computes, bit for bit, what the float one
  computes on the same data.

A file given to `run` may hold one sample or many on a first axis: split_given tells them
apart by the inputs' shapes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from codegen.arith.numerics import quantize_constant_like_ort
from codegen.backend.io_boundary import Entry, dequantized
from codegen.core.dataset import fit_batch_axis, with_leading_axes
from codegen.core.ir import Tensor
from codegen.core.program import Program
from codegen.errors import InputDataError


def match_inputs(data: Mapping[str, Any], inputs: Sequence[str]) -> dict[str, Any]:
    """Arrays keyed by input name, or positional arr_0, arr_1, ... as np.savez writes."""
    if all(n in data for n in inputs):
        return {n: data[n] for n in inputs}
    positional = [f"arr_{i}" for i in range(len(inputs))]
    if len(data) == len(inputs) and all(p in data for p in positional):
        return {n: data[p] for n, p in zip(inputs, positional, strict=True)}
    missing = next(n for n in inputs if n not in data)
    raise InputDataError(f"no data for model input '{missing}' (given: "
                         f"{', '.join(sorted(data)) or 'nothing'})")


def graph_inputs(program: Program, entry: Entry) -> list[tuple[Tensor, Tensor]]:
    """Each input of `entry` with the graph input it stands for (itself for the float
    entry point and for a graph input that is already integer)."""
    if entry.quantized and program.boundary is not None:
        return list(zip(program.boundary.float_inputs, entry.inputs, strict=True))
    return [(t, t) for t in entry.inputs]


def keyed(data: Mapping[str, Any], pairs: Sequence[tuple[Tensor, Tensor]]) -> dict[str, Any]:
    """The arrays of `data` keyed by the entry's input names: found under the graph
    input's name or the entry tensor's own, else positionally."""
    found: dict[str, Any] = {}
    for graph_input, tensor in pairs:
        for key in dict.fromkeys((graph_input.onnx_name, graph_input.name, tensor.onnx_name,
                                  tensor.name)):
            if key in data:
                found[tensor.name] = data[key]
                break
    if len(found) == len(pairs):
        return found
    names = [g.onnx_name for g, _ in pairs]
    by_graph_name = match_inputs(data, names)  # positional, or the error naming the input
    return {t.name: by_graph_name[g.onnx_name] for g, t in pairs}


def quantized_like_ort(array: NDArray[Any], tensor: Tensor) -> NDArray[Any]:
    """A float array as the graph input's QuantizeLinear quantizes it in ORT."""
    quant = tensor.quant
    assert quant is not None
    values = np.asarray(array, np.float32)
    axis = None if quant.per_tensor else quant.axis
    return quantize_constant_like_ort(values, np.asarray(quant.scale, np.float32),
                                      np.asarray(quant.zero_point, np.int64), axis,
                                      tensor.dtype)


def quantizes(graph_input: Tensor, tensor: Tensor) -> bool:
    """Does the entry point take `graph_input` (a float input) as quantized `tensor`?"""
    return graph_input is not tensor and graph_input.dtype == "float32" \
        and tensor.quant is not None


def check_quantized_values(array: NDArray[Any], graph_input: Tensor, tensor: Tensor) -> None:
    """Integer data for a quantized input is the quantized values: in the type's range."""
    info = np.iinfo(np.dtype(tensor.dtype))
    if array.size and (array.min() < info.min or array.max() > info.max):
        raise InputDataError(f"input '{graph_input.onnx_name}': integer data is taken as its "
                             f"quantized values ({tensor.dtype}), but holds values outside "
                             f"[{info.min}, {info.max}]; give float32 data to have it "
                             "quantized")


def entry_sample(program: Program, entry: Entry, sample: Mapping[str, Any]) -> dict[str, Any]:
    """One sample of the user's data as `entry` takes it (see the module's docstring)."""
    pairs = graph_inputs(program, entry)
    fitted = fit_batch_axis(keyed(sample, pairs), entry.inputs)
    for graph_input, tensor in pairs:
        array = np.asarray(fitted[tensor.name])
        if not quantizes(graph_input, tensor):
            continue
        if array.dtype.kind in "iub":
            check_quantized_values(array, graph_input, tensor)
        elif array.dtype.kind == "f" and tensor.shape == tuple(array.shape):
            fitted[tensor.name] = quantized_like_ort(array, tensor)
    return fitted


def reading_notes(program: Program, entry: Entry, sample: Mapping[str, Any]) -> list[str]:
    """What was made of integer data for a quantized input (the one reading that cannot
    be told from float values by the numbers alone), said once."""
    pairs = graph_inputs(program, entry)
    found = keyed(sample, pairs)
    notes = []
    for graph_input, tensor in pairs:
        if quantizes(graph_input, tensor) and np.asarray(found[tensor.name]).dtype.kind in "iub":
            assert tensor.quant is not None
            notes.append(f"input '{graph_input.onnx_name}': integer data taken as its quantized "
                         f"values ({tensor.dtype}, scale {tensor.quant.scale[0]:.9g}, zero point "
                         f"{tensor.quant.zero_point[0]}), as the quantized entry point takes "
                         "them; float32 data is quantized as the model's QuantizeLinear does")
    return notes


def float_domain(program: Program, entry: Entry,
                 arrays: Mapping[str, NDArray[Any]]) -> dict[str, NDArray[Any]]:
    """A data set (samples on the first axis) for the float model beside `entry`: integer
    data for a quantized input dequantized as the model's DequantizeLinear computes it,
    under the graph input's name. The quantized entry point then takes the very integers
    given (QuantizeLinear of DequantizeLinear is the identity on them), and the float
    model the values they stand for."""
    out = dict(arrays)
    for graph_input, tensor in graph_inputs(program, entry):
        if not quantizes(graph_input, tensor):
            continue
        key = next((k for k in dict.fromkeys((graph_input.onnx_name, graph_input.name,
                                              tensor.onnx_name, tensor.name)) if k in out),
                   None)
        if key is None or np.asarray(out[key]).dtype.kind not in "iub":
            continue
        quant = tensor.quant
        assert quant is not None
        if not quant.per_tensor:
            raise InputDataError(f"input '{graph_input.onnx_name}' is quantized per axis: give "
                                 "its data as float32")
        values = np.asarray(out.pop(key))
        check_quantized_values(values, graph_input, tensor)
        out[graph_input.onnx_name] = dequantized(values.astype(np.dtype(tensor.dtype)), tensor)
    return out


def entry_samples(program: Program, entry: Entry,
                  samples: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [entry_sample(program, entry, sample) for sample in samples]


def split_given(program: Program, entry: Entry,
                data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The samples of one file of inputs: one sample when every array has its input's
    shape (its leading axes of 1 may be left out), else as many as the first axis counts
    when every array has that axis in front of its input's shape."""
    pairs = graph_inputs(program, entry)
    arrays = {name: np.asarray(value) for name, value in keyed(data, pairs).items()}
    shapes = {t.name: t.shape for _, t in pairs}
    if all(with_leading_axes(tuple(a.shape), shapes[n]) is not None
           for n, a in arrays.items()):
        return [arrays]
    counts = {a.shape[0] for a in arrays.values() if a.ndim}
    if len(counts) == 1 and all(a.ndim and with_leading_axes(tuple(a.shape[1:]), shapes[n])
                                is not None for n, a in arrays.items()):
        count = counts.pop()
        if count == 0:
            raise InputDataError("the inputs hold no sample (their first axis is 0)")
        return [{n: a[i] for n, a in arrays.items()} for i in range(count)]
    return [arrays]  # encoding the sample names the input whose shape does not fit
