"""What kind of model a file holds, read from its ONNX nodes alone: quantized, or a float
model (perhaps behind 8-bit I/O adapters), which `generate` refuses with what to do and
`quantize` takes."""

from __future__ import annotations

import onnx

# Operators that carry quantization: a model with none of them is a float model.
QUANTIZED_OPS = frozenset({"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear",
                           "ConvInteger", "MatMulInteger", "MatMulIntegerToFloat", "QGemm"})


def is_float_model(model: onnx.ModelProto) -> bool:
    """No QuantizeLinear, DequantizeLinear, QLinear* or integer product anywhere."""
    return not any(node.op_type in QUANTIZED_OPS or node.op_type.startswith("QLinear")
                   for node in model.graph.node)


def is_float_model_with_adapters(model: onnx.ModelProto) -> bool:
    """A float model whose only quantized operators are QuantizeLinear nodes writing its
    outputs (tf2onnx --dequantize of an int8-I/O TFLite model: Cast, Sub, Mul on the
    inputs, float weights, QuantizeLinear on the outputs)."""
    outputs = {o.name for o in model.graph.output}
    eight_bit = {i.name for i in model.graph.input if i.type.tensor_type.elem_type in (
        onnx.TensorProto.INT8, onnx.TensorProto.UINT8)}
    adapted = any(n.op_type == "Cast" and n.input and n.input[0] in eight_bit
                  for n in model.graph.node)
    quantized = [n for n in model.graph.node
                 if n.op_type in QUANTIZED_OPS or n.op_type.startswith("QLinear")]
    return adapted and all(n.op_type == "QuantizeLinear" and n.output[0] in outputs
                           for n in quantized)
