"""Package manifests that let a firmware ecosystem take a generated project as it is.

PlatformIO: every project carries a `library.json`, so the folder dropped into a
PlatformIO project's `lib/` builds as a library (the model and its kernels, never the
harness or the board files), and `pio pkg pack` turns it into a package. A model
generated with `--runtime` depends on the shared runtime's own library
(`onnx2mcu_runtime`), found by name beside it in `lib/` (no registry involved).
"""

from __future__ import annotations

import json
from typing import Any

from codegen.version import __version__

PLATFORMIO_RUNTIME_NAME = "onnx2mcu_runtime"
KEYWORDS = ["onnx", "onnx2mcu", "tinyml", "int8", "neural-network", "inference"]


def _manifest_text(manifest: dict[str, Any]) -> str:
    return json.dumps(manifest, indent=2) + "\n"


def platformio_model_manifest(name: str, board: str, opt_flags: list[str],
                              own_runtime: bool) -> str:
    """library.json of a generated project: the model's source, its own runtime/ (or a
    dependency on the shared runtime), built at the board's optimization level."""
    sources = [f"+<{name}.c>"] + (["+<runtime/*.c>"] if own_runtime else [])
    exported = [f"{name}.c", f"{name}.h", f"{name}.json", "library.json"]
    manifest: dict[str, Any] = {
        "name": name,
        "version": __version__,
        "description": f"The ONNX model '{name}' compiled to integer C99 by onnx2mcu "
                       f"{__version__} (board '{board}'): no heap, const weights, a "
                       f"statically planned arena",
        "keywords": KEYWORDS,
        "frameworks": "*",
        "platforms": "*",
        "headers": f"{name}.h",
        "build": {
            "srcDir": ".",
            "includeDir": ".",
            # Only the model and its kernels: the harness, startup code and size build
            # of the folder are the project's own, not the library's.
            "srcFilter": ["-<*>", *sources],
            "flags": opt_flags,
        },
        "export": {"include": exported + (["runtime"] if own_runtime else [])},
    }
    if not own_runtime:
        manifest["dependencies"] = [{"name": PLATFORMIO_RUNTIME_NAME,
                                     "version": __version__}]
    return _manifest_text(manifest)


def platformio_runtime_manifest() -> str:
    """library.json of the shared runtime (onnx2mcu runtime -o DIR)."""
    return _manifest_text({
        "name": PLATFORMIO_RUNTIME_NAME,
        "version": __version__,
        "description": f"The kernels of onnx2mcu {__version__}, shared by every model "
                       f"generated with --runtime",
        "keywords": KEYWORDS,
        "frameworks": "*",
        "platforms": "*",
        "build": {"srcDir": ".", "includeDir": ".", "srcFilter": ["-<*>", "+<*.c>"],
                  "flags": ["-O2"]},
        "export": {"exclude": ["build"]},
    })
