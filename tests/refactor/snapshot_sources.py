"""Snapshot the generated sources of every zoo and corpus model, to prove that a
refactoring changed no output (issue 33).

    # once: the models, written by the zoo of the checkout at hand
    python tests/refactor/snapshot_sources.py models DIR
    # a snapshot of the code in CHECKOUT (default: this one) over those models
    python tests/refactor/snapshot_sources.py snap --models DIR --out SNAP [--code CHECKOUT]
    # compare two snapshots, the old one through the rename map
    python tests/refactor/snapshot_sources.py compare OLD NEW [--map rename_map.json]

A snapshot is a folder: `index.json` maps each configuration (model, board, memory mode,
options) to its files' digests or to its refusal, and `objects/` holds each distinct
file once (gzip), so that the old files can be renamed and compared with the new ones.
The runtime's own files (`runtime/...`) are compared by name only: their contents are
the runtime library, whose changes are checked by compiling it (instruction counts).
The runtime's fingerprint (RUNTIME_ID), a CRC of the runtime's sources, is replaced by a
placeholder on both sides.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import importlib
import json
import os
import re
import sys
import zlib
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent

BOARDS = ("host", "cortex-m4f", "cortex-m0plus")
MEMORY = ("fast", "min")
# Options beyond the board defaults, on the zoo's QOperator models (the kernel variants
# that the defaults do not reach), host and cortex-m4f, fast memory.
EXTRA: dict[str, dict[str, Any]] = {
    "requant-int": {"requant": "int"},
    "requant-float": {"requant": "float"},
    "reference": {"kernels": "reference"},
    "w8": {"weights": "int8"},
    "w16": {"weights": "int16"},
    "io-quantized": {"io": "quantized"},
    "io-both-caller": {"io": "both", "arena": "caller"},
    "shared-runtime": {"runtime": "../rt", "arena_section": ".sram2"},
}


# ------------------------------------------------------------------------ models

def write_models(out: Path) -> None:
    """The zoo's QOperator and QDQ models, the corpus, the test models and the examples,
    as files in `out` (the zoo is built by ORT's quantizer: write it once, then every
    snapshot reads the same bytes)."""
    sys.path.insert(0, str(REPO / "tests"))
    import zoo  # type: ignore[import-not-found]

    out.mkdir(parents=True, exist_ok=True)
    for name, variant in zoo.ZOO_CASES:
        (out / f"zoo_{name}_{variant}_qop.onnx").write_bytes(
            zoo.quantized_model_bytes(name, variant))
        (out / f"zoo_{name}_{variant}_qdq.onnx").write_bytes(
            zoo.qdq_model_bytes(name, variant))
    for folder in (REPO / "tests" / "corpus", REPO / "tests" / "models", REPO / "examples"):
        for path in sorted(folder.rglob("*.onnx")):
            (out / f"{folder.name}_{path.name}").write_bytes(path.read_bytes())


# ------------------------------------------------------------------------ configurations

def configurations(models: Path) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(key, model file, options) of every configuration."""
    for path in sorted(models.glob("*.onnx")):
        for board in BOARDS:
            for memory in MEMORY:
                yield (f"{path.stem}|{board}|{memory}", str(path),
                       {"board": board, "memory": memory})
        if path.name.startswith("zoo_") and path.stem.endswith("_qop"):
            for board in ("host", "cortex-m4f"):
                for extra, options in EXTRA.items():
                    yield (f"{path.stem}|{board}|fast|{extra}", str(path),
                           {"board": board, "memory": "fast", **options})
        if path.name.startswith("zoo_") and path.stem.endswith("u8-pc_qop"):
            yield (f"{path.stem}|cortex-m4f|min|io-quantized", str(path),
                   {"board": "cortex-m4f", "memory": "min", "io": "quantized"})


def _first(*names: str) -> Any:
    """The first of `module:attribute` that imports (the code moves between versions)."""
    for name in names:
        module, attribute = name.split(":")
        try:
            return getattr(importlib.import_module(module), attribute)
        except (ImportError, AttributeError):
            continue
    raise ImportError(f"none of {names}")


_GENERATE: Any = None


def _generate(model: str, options: dict[str, Any]) -> dict[str, bytes]:
    global _GENERATE
    if _GENERATE is None:
        _GENERATE = (
            _first("codegen.options:Options", "codegen.pipeline:Options"),
            _first("codegen.core.interface:Interface", "codegen.backend.interface:Interface",
                   "codegen.interface:Interface"),
            _first("codegen.pipeline:generate_sources"),
        )
    options_type, interface_type, generate = _GENERATE
    interface_keys = ("io", "arena", "arena_section", "runtime")
    interface = interface_type(**{k: v for k, v in options.items() if k in interface_keys})
    rest = {k: v for k, v in options.items() if k not in interface_keys}
    files: dict[str, bytes] = generate(model, options_type(interface=interface, **rest)).files
    return files


def _snapshot_one(job: tuple[str, str, dict[str, Any], str]) -> tuple[str, dict[str, Any]]:
    key, model, options, objects = job
    try:
        files = _generate(model, options)
    except Exception as error:  # a refusal is part of the behaviour
        return key, {"error": f"{type(error).__name__}: {error}"}
    digests = {}
    for path, data in sorted(files.items()):
        digest = hashlib.sha256(data).hexdigest()
        digests[path] = digest
        target = Path(objects) / digest[:2] / digest
        if not path.startswith("runtime/") and not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_suffix(f".{os.getpid()}")
            tmp.write_bytes(gzip.compress(data, 6))
            tmp.replace(target)
    return key, {"files": digests}


def _init(code: str) -> None:
    sys.path.insert(0, code)
    os.environ.setdefault("OMP_NUM_THREADS", "1")


def runtime_fingerprint(code: Path) -> str:
    """RUNTIME_ID as the code at `code` computes it (a CRC of runtime_c/)."""
    crc = 0
    for path in sorted((code / "runtime_c").iterdir()):
        if path.is_file():
            crc = zlib.crc32(path.name.encode() + b"\0" + path.read_bytes(), crc)
    return f"0x{crc:08x}"


def snapshot(models: Path, out: Path, code: Path, jobs: int, only: str | None) -> None:
    objects = out / "objects"
    objects.mkdir(parents=True, exist_ok=True)
    work = [(k, m, o, str(objects)) for k, m, o in configurations(models)
            if only is None or re.search(only, k)]
    index: dict[str, Any] = {}
    with ProcessPoolExecutor(jobs, initializer=_init, initargs=(str(code),)) as pool:
        for i, (key, entry) in enumerate(pool.map(_snapshot_one, work, chunksize=1)):
            index[key] = entry
            if i % 50 == 0:
                print(f"{i}/{len(work)} {key}", flush=True)
    meta = {"runtime_id": runtime_fingerprint(code), "configurations": len(index)}
    (out / "index.json").write_text(json.dumps({"meta": meta, "index": index}, indent=1,
                                               sort_keys=True))
    print(f"{len(index)} configurations, "
          f"{sum('error' in e for e in index.values())} refused")


# ------------------------------------------------------------------------ comparison

def load_map(path: Path | None) -> tuple[list[tuple[re.Pattern[str], str]], dict[str, str],
                                          set[str], set[str]]:
    """The rename map: symbols (whole identifiers) and runtime files, old -> new, and the
    runtime files added and removed (a header split in parts). Its "runtime_symbols" (the
    runtime's internal helpers) concern the compiled objects only (runtime_objects.py)."""
    if path is None:
        return [], {}, set(), set()
    data = json.loads(path.read_text())
    symbols = [(re.compile(rf"\b{re.escape(old)}\b"), new)
               for old, new in sorted(data.get("symbols", {}).items(),
                                      key=lambda item: -len(item[0]))]
    files: dict[str, str] = data.get("files", {})
    return symbols, files, set(data.get("added_files", ())), set(data.get("removed_files", ()))


def renamed(text: str, symbols: list[tuple[re.Pattern[str], str]],
            files: dict[str, str]) -> str:
    for pattern, new in symbols:
        text = pattern.sub(new, text)
    for old, new in files.items():
        text = re.sub(rf"(?<![A-Za-z0-9_./-]){re.escape(old)}(?![A-Za-z0-9_])", new, text)
    return text


def _read(snap: Path, digest: str) -> bytes:
    return gzip.decompress((snap / "objects" / digest[:2] / digest).read_bytes())


def compare(old: Path, new: Path, rename_map: Path | None) -> int:
    symbols, files, added, removed = load_map(rename_map)
    old_data = json.loads((old / "index.json").read_text())
    new_data = json.loads((new / "index.json").read_text())
    old_id, new_id = old_data["meta"]["runtime_id"], new_data["meta"]["runtime_id"]
    old_index, new_index = old_data["index"], new_data["index"]
    problems: list[str] = []
    same = 0
    missing = sorted(set(old_index) ^ set(new_index))
    problems += [f"{k}: only in {'old' if k in old_index else 'new'}" for k in missing]
    for key in sorted(set(old_index) & set(new_index)):
        a, b = old_index[key], new_index[key]
        if "error" in a or "error" in b:
            if a.get("error") != b.get("error"):
                problems.append(f"{key}: {a.get('error')!r} -> {b.get('error')!r}")
            else:
                same += 1
            continue
        a_files = {("runtime/" + files.get(p[8:], p[8:])) if p.startswith("runtime/") else p: d
                   for p, d in a["files"].items()}
        a_files = {p: d for p, d in a_files.items() if p[8:] not in removed}
        b_files = {p for p in b["files"] if p[8:] not in added or not p.startswith("runtime/")}
        if set(a_files) != b_files:
            problems.append(f"{key}: files {sorted(set(a_files) ^ b_files)}")
            continue
        ok = True
        for path, digest in sorted(a_files.items()):
            if path.startswith("runtime/"):
                continue
            if digest == b["files"][path] and not symbols and not files and old_id == new_id:
                continue
            before = renamed(_read(old, digest).decode(), symbols, files)
            before = before.replace(old_id, "RUNTIME_ID")
            after = _read(new, b["files"][path]).decode().replace(new_id, "RUNTIME_ID")
            if before != after:
                problems.append(f"{key}: {path} differs")
                ok = False
        same += ok
    for line in problems[:200]:
        print(line)
    print(f"{same} of {len(set(old_index) | set(new_index))} configurations identical; "
          f"{len(problems)} differences")
    return 1 if problems else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    models = commands.add_parser("models")
    models.add_argument("out", type=Path)
    snap = commands.add_parser("snap")
    snap.add_argument("--models", type=Path, required=True)
    snap.add_argument("--out", type=Path, required=True)
    snap.add_argument("--code", type=Path, default=REPO)
    snap.add_argument("--jobs", type=int, default=2)
    snap.add_argument("--only", help="a regular expression over configuration keys")
    cmp = commands.add_parser("compare")
    cmp.add_argument("old", type=Path)
    cmp.add_argument("new", type=Path)
    cmp.add_argument("--map", type=Path)
    args = parser.parse_args()
    if args.command == "models":
        write_models(args.out)
    elif args.command == "snap":
        snapshot(args.models, args.out, args.code.resolve(), args.jobs, args.only)
    else:
        return compare(args.old, args.new, args.map)
    return 0


if __name__ == "__main__":
    sys.exit(main())
