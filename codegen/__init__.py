"""onnx2mcu: quantized ONNX models to bit-exact, malloc-free C for microcontrollers.

    import codegen
    codegen.generate("model.onnx", "out/")               # write the C project
    outputs = codegen.run("model.onnx", {"x": x})        # compile and run it on the host
    report = codegen.verify("model.onnx", samples=10)    # compare with ONNX Runtime
    codegen.write_runtime("rt/")                         # one runtime for several models
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

from .version import __version__

if TYPE_CHECKING:
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

# The public names, imported on first use: `import codegen` itself is cheap, so that the
# console script below can take Ctrl-C while numpy, onnx and the rest are still loading.
_HOMES = {"Interface": "codegen.backend.interface",
          **dict.fromkeys(("GenerateResult", "convert", "generate", "run", "verify",
                           "write_runtime"), "codegen.api"),
          **dict.fromkeys(("ModelError", "Onnx2McuError", "OptionError", "OutputError",
                           "ShapeError", "ToolchainError", "UnsupportedError"),
                          "codegen.errors")}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'codegen' has no attribute '{name}'")
    value = getattr(importlib.import_module(_HOMES[name]), name)
    globals()[name] = value
    return value


def main() -> int:
    """The console script `onnx2mcu`: Ctrl-C during the imports ends it as it ends a
    command (one line, status 130), not with a traceback of the import machinery."""
    try:
        from codegen import cli
    except KeyboardInterrupt:
        print("onnx2mcu: interrupted by SIGINT", file=sys.stderr)
        return 130
    return cli.main()


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
