"""Build a generated project with the host C compiler and run its harness.

Builds are cached by the hash of every source file, the compiler's identity and the
flags, so running the same model twice compiles once; each runtime kernel's object is
cached by its own source, so a new model compiles only its own files. A cache entry is created in a
temporary folder and renamed into place, so an interrupted build never leaves a
half-built entry behind.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from codegen.backend.emitter import STRICT_CFLAGS
from codegen.backend.project import write_files
from codegen.core.dataset import converted
from codegen.core.ir import Tensor, numpy_dtype
from codegen.core.resources import runtime_dir
from codegen.errors import InputDataError, ToolchainError

RUN_TIMEOUT_S = 600


def cache_root() -> Path:
    env = os.environ.get("ONNX2MCU_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "onnx2mcu"


def host_compiler() -> str:
    cc = os.environ.get("CC", "cc")
    path = shutil.which(cc)
    if path is None:
        raise ToolchainError(f"no host C compiler '{cc}' found: install one "
                             "(apt-get install gcc) or set CC")
    return path


@lru_cache(maxsize=8)
def compiler_identity(cc: str) -> str:
    try:
        result = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=60,
                                check=False)
    except OSError as exc:
        raise ToolchainError(f"cannot run the C compiler {cc}: {exc}") from None
    return cc + "\n" + result.stdout


@dataclass(frozen=True)
class HostBuild:
    binary: Path
    cached: bool  # True when the binary came from the cache without compiling


def cache_key(identity: str, flags: Sequence[str], files: Mapping[str, bytes]) -> str:
    digest = hashlib.sha256()
    digest.update(identity.encode())
    digest.update("\0".join(flags).encode())
    for rel in sorted(files):
        digest.update(rel.encode() + b"\0" + hashlib.sha256(files[rel]).digest())
    return digest.hexdigest()[:32]


# A staging folder this old belongs to a build that was killed outright (SIGKILL, power
# loss); no build takes that long.
STALE_STAGING_S = 3 * RUN_TIMEOUT_S


def remove_stale_staging(root: Path, now: float) -> None:
    """Remove the staging folders of builds killed before their cleanup could run. They
    are never mistaken for entries (those appear only by rename), but would pile up."""
    for folder in root.glob(".*.tmp-*"):
        try:
            age = now - folder.stat().st_mtime
        except OSError:  # removed meanwhile by another process
            continue
        if age > STALE_STAGING_S:
            shutil.rmtree(folder, ignore_errors=True)


def cached_build(key: str, files: Mapping[str, bytes], product: str,
                 build: Callable[[Path], None]) -> tuple[Path, bool]:
    """The cache entry `key` holding `product` (a path inside it), built by `build` in a
    staging folder that already holds `files` when it is not cached. Returns the entry
    and whether it came from the cache."""
    entry = cache_root() / key
    if (entry / product).exists():
        return entry, True
    cache_root().mkdir(parents=True, exist_ok=True)
    remove_stale_staging(cache_root(), time.time())
    staging = Path(tempfile.mkdtemp(prefix=f".{key}.tmp-", dir=cache_root()))
    try:
        write_files(staging, files)
        (staging / "build").mkdir(exist_ok=True)
        build(staging)
        try:
            os.rename(staging, entry)
        except OSError:
            if not (entry / product).exists():  # another process may have won the race
                raise
            shutil.rmtree(staging, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return entry, False


def compile_in(folder: Path, command: Sequence[str], what: str) -> None:
    result = subprocess.run(list(command), cwd=folder, capture_output=True, text=True,
                            timeout=RUN_TIMEOUT_S, check=False)
    if result.returncode != 0:
        raise ToolchainError(f"{what} failed on the generated code:\n"
                             f"{' '.join(command)}\n{result.stderr.strip()}")


def runtime_headers(files: Mapping[str, bytes]) -> dict[str, bytes]:
    return {rel: data for rel, data in files.items()
            if rel.startswith("runtime/") and rel.endswith(".h")}


def cached_object(compiler: str, identity: str, flags: Sequence[str], source: str,
                  files: Mapping[str, bytes]) -> Path:
    """The object file of one runtime source, cached by that source, the runtime headers,
    the compiler and the flags. The kernels are the same in every project, and compiling
    them is most of a build's time, so a new model recompiles only its own sources."""
    inputs = {source: files[source], **runtime_headers(files)}
    obj = "build/" + Path(source).stem + ".o"
    command = [compiler, *flags, "-Iruntime", "-c", "-o", obj, source]
    entry, _ = cached_build(cache_key(identity + "\nobject " + source, flags, inputs), inputs,
                            obj, lambda folder: compile_in(folder, command, "the C compiler"))
    return entry / obj


def with_plain_link_names(files: Mapping[str, bytes]) -> dict[str, bytes]:
    """The project with the runtime's functions under their own q8_ names. A project's
    runtime links under the model's name (q8_names.h), which only matters beside other
    models; the tools' own builds of one model use the plain names, so the cached kernel
    objects serve every model (tests/targets/test_firmware_component.py links the renamed ones)."""
    out = dict(files)
    if "runtime/q8_names.h" in out:
        out["runtime/q8_names.h"] = (runtime_dir() / "q8_names.h").read_bytes()
    return out


def build_host(files: Mapping[str, bytes], name: str, cflags: Sequence[str] = ()) -> HostBuild:
    """Compile the project's harness (NAME_main.c, NAME.c, runtime/*.c), cached: the
    whole binary by every file, and each runtime object by its own inputs."""
    files = with_plain_link_names(files)
    cc = host_compiler()
    identity = compiler_identity(cc)
    flags = [*STRICT_CFLAGS, *cflags]
    runtime = sorted(r for r in files if r.startswith("runtime/") and r.endswith(".c"))

    def build(folder: Path) -> None:
        objects = [str(cached_object(cc, identity, flags, src, files)) for src in runtime]
        compile_in(folder, [cc, *flags, "-I.", "-Iruntime", "-o", f"build/{name}_main",
                            f"{name}_main.c", f"{name}.c", *objects, "-lm"],
                   "the C compiler")

    entry, cached = cached_build(cache_key(identity, flags, files), files,
                                 f"build/{name}_main", build)
    return HostBuild(entry / "build" / f"{name}_main", cached)


# ---------------------------------------------------------------- raw I/O


def _coerce(tensor: Tensor, value: Any) -> NDArray[Any]:
    array = np.asarray(value)
    target = numpy_dtype(tensor.dtype)
    label = tensor.onnx_name
    if tuple(array.shape) != tensor.shape:
        raise InputDataError(f"input '{label}' has shape {list(array.shape)}, the model "
                             f"expects {list(tensor.shape)}")
    fitted = converted(array, target)
    if fitted is not None:
        return fitted
    if target.kind in "iu" and array.dtype.kind in "iu":
        raise InputDataError(f"input '{label}' has values outside the {tensor.dtype} range")
    raise InputDataError(f"input '{label}' has dtype {array.dtype}, the model expects "
                         f"{tensor.dtype}")


def encode_samples(inputs: Sequence[Tensor],
                   samples: Sequence[Mapping[str, Any]]) -> bytes:
    chunks = []
    for sample in samples:
        for tensor in inputs:
            if tensor.name not in sample:
                raise InputDataError(f"no data for model input '{tensor.name}'")
            array = _coerce(tensor, sample[tensor.name])
            chunks.append(np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<"),
                                                              copy=False).tobytes())
    return b"".join(chunks)


def decode_samples(outputs: Sequence[Tensor], data: bytes,
                   count: int) -> list[dict[str, NDArray[Any]]]:
    per_sample = sum(t.nbytes for t in outputs)
    if len(data) != per_sample * count:
        raise ToolchainError(f"the generated program wrote {len(data)} bytes, expected "
                             f"{per_sample * count}")
    results = []
    offset = 0
    for _ in range(count):
        sample: dict[str, NDArray[Any]] = {}
        for tensor in outputs:
            dtype = numpy_dtype(tensor.dtype).newbyteorder("<")
            chunk = np.frombuffer(data, dtype=dtype, count=tensor.numel, offset=offset)
            # A repeated graph output has an aliased buffer but the same ONNX name.
            sample[tensor.onnx_name] = chunk.astype(
                dtype.newbyteorder("=")).reshape(tensor.shape)
            offset += tensor.nbytes
        results.append(sample)
    return results


def run_binary(binary: Path, inputs: Sequence[Tensor], outputs: Sequence[Tensor],
               samples: Sequence[Mapping[str, Any]],
               env: Mapping[str, str] | None = None) -> list[dict[str, NDArray[Any]]]:
    """Run the harness once over all samples and decode its outputs."""
    payload = encode_samples(inputs, samples)
    with tempfile.TemporaryDirectory(prefix="onnx2mcu-run-") as tmp:
        in_path, out_path = Path(tmp) / "in.bin", Path(tmp) / "out.bin"
        in_path.write_bytes(payload)
        try:
            result = subprocess.run([str(binary), str(in_path), str(out_path)],
                                    capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
                                    check=False, env=None if env is None else dict(env))
        except subprocess.TimeoutExpired:
            raise ToolchainError(f"the generated program did not finish in {RUN_TIMEOUT_S} s"
                                 ) from None
        if result.returncode != 0:
            raise ToolchainError(f"the generated program failed (exit {result.returncode}):\n"
                                 f"{result.stderr.strip()}")
        return decode_samples(outputs, out_path.read_bytes(), len(samples))
