"""onnx2mcu: quantized ONNX models to bit-exact, malloc-free C for microcontrollers.

    import codegen
    codegen.generate("model.onnx", "out/")               # write the C project
    outputs = codegen.run("model.onnx", {"x": x})        # compile and run it on the host
    report = codegen.verify("model.onnx", samples=10)    # compare with ONNX Runtime
    codegen.write_runtime("rt/")                         # one runtime for several models
"""

from codegen.backend.interface import Interface

from .api import GenerateResult, convert, generate, run, verify, write_runtime
from .errors import (
    ModelError,
    Onnx2McuError,
    OptionError,
    OutputError,
    ShapeError,
    ToolchainError,
    UnsupportedError,
)
from .version import __version__

__all__ = [
    "GenerateResult",
    "Interface",
    "ModelError",
    "Onnx2McuError",
    "OptionError",
    "OutputError",
    "ShapeError",
    "ToolchainError",
    "UnsupportedError",
    "__version__",
    "convert",
    "generate",
    "run",
    "verify",
    "write_runtime",
]
