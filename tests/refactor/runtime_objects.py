"""Compile every runtime source for the cores and compare their machine code.

A refactoring of runtime_c/ (files split, helpers and kernels renamed, enums merged) must
leave the compiled kernels as they were: then every firmware built from them, and with
byte-identical generated sources (snapshot_sources.py), runs the same instructions.

    python tests/refactor/runtime_objects.py dump --code CHECKOUT --out DIR
    python tests/refactor/runtime_objects.py compare OLD_DIR NEW_DIR [--map rename_map.json]

`dump` compiles each runtime_c/*.c of CHECKOUT with each board's own flags (the Cortex-M
boards with arm-none-eabi-gcc, the host with cc -O2) and writes its disassembly with the
raw instruction bytes. `compare` applies the rename map (its "symbols" and "files") to the
old disassembly and reports every object whose instructions differ. An object whose
instructions are the same but for immediate operands (an enum renumbered) passes only when
the map names it under "renumbered" with the reason; the differing operands are printed.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BOARDS = ("cortex-m0plus", "cortex-m3", "cortex-m4f", "cortex-m33", "cortex-m7")
HOST_FLAGS = ["-O2"]


def board_flags(code: Path, board: str) -> list[str]:
    data = tomllib.loads((code / "boards" / f"{board}.toml").read_text())
    return [str(flag) for flag in data["cflags"]]


def disassembly(compiler: str, objdump: str, flags: list[str], source: Path,
                include: Path, work: Path) -> str:
    obj = work / (source.stem + ".o")
    subprocess.run([compiler, "-std=c99", *flags, "-I", str(include), "-c", "-o", str(obj),
                    str(source)], check=True)
    text = subprocess.run([objdump, "-d", "-z", str(obj)], check=True, capture_output=True,
                          text=True).stdout
    # The first lines name the object file.
    return "\n".join(line for line in text.splitlines()[2:] if "file format" not in line)


def dump(code: Path, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    targets = [(board, "arm-none-eabi-gcc", "arm-none-eabi-objdump", board_flags(code, board))
               for board in BOARDS if shutil.which("arm-none-eabi-gcc")]
    targets.append(("host", "cc", "objdump", HOST_FLAGS))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for board, compiler, objdump, flags in targets:
            for source in sorted((code / "runtime_c").glob("*.c")):
                text = disassembly(compiler, objdump, flags, source, code / "runtime_c", work)
                (out / f"{board}__{source.stem}.dis").write_text(text)
            print(f"{board}: {len(list((code / 'runtime_c').glob('*.c')))} objects", flush=True)


def renamed(text: str, rename_map: dict[str, dict[str, str]]) -> str:
    both = {**rename_map.get("symbols", {}), **rename_map.get("runtime_symbols", {})}
    for old, new in sorted(both.items(), key=lambda kv: -len(kv[0])):
        text = re.sub(rf"\b{re.escape(old)}\b", new, text)
    return text


IMMEDIATE = re.compile(r"#-?(0x[0-9a-f]+|\d+)")


def instructions(text: str) -> list[str]:
    """The mnemonics and operands of a disassembly, without addresses and encodings."""
    lines = []
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and parts[0].strip().endswith(":"):
            lines.append("\t".join(parts[2:]).strip())
    return lines


def immediate_changes(old: str, new: str) -> list[str] | None:
    """The operands that differ when only immediates do, else None."""
    a, b = instructions(old), instructions(new)
    if len(a) != len(b):
        return None
    changes = []
    for x, y in zip(a, b, strict=True):
        if x == y:
            continue
        if IMMEDIATE.sub("#N", x) != IMMEDIATE.sub("#N", y):
            return None
        changes.append(f"{x}  ->  {y}")
    return changes


def compare(old: Path, new: Path, map_path: Path | None) -> int:
    rename_map = json.loads(map_path.read_text()) if map_path else {}
    files = {Path(k).stem: Path(v).stem for k, v in rename_map.get("files", {}).items()
             if k.endswith(".c")}
    problems, same = [], 0
    for path in sorted(old.glob("*.dis")):
        board, stem = path.stem.split("__", 1)
        target = new / f"{board}__{files.get(stem, stem)}.dis"
        if not target.exists():
            problems.append(f"{path.stem}: no object in the new runtime")
            continue
        before, after = renamed(path.read_text(), rename_map), target.read_text()
        if before == after:
            same += 1
            continue
        changes = immediate_changes(before, after)
        reason = rename_map.get("renumbered", {}).get(files.get(stem, stem))
        if changes is None:
            problems.append(f"{path.stem}: instructions differ")
        elif reason is None:
            problems.append(f"{path.stem}: immediates differ ({len(changes)} operands) "
                            "and the map gives no reason")
        else:
            print(f"{path.stem}: same {len(instructions(after))} instructions, "
                  f"{len(changes)} immediates renumbered ({reason})")
            for change in changes:
                print(f"    {change}")
            same += 1
    extra = {p.stem for p in new.glob("*.dis")} - {
        f"{p.stem.split('__')[0]}__{files.get(p.stem.split('__', 1)[1], p.stem.split('__', 1)[1])}"
        for p in old.glob("*.dis")}
    problems += [f"{name}: only in the new runtime" for name in sorted(extra)]
    for line in problems:
        print(line)
    print(f"{same} objects the same; {len(problems)} differences")
    return 1 if problems else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    d = commands.add_parser("dump")
    d.add_argument("--code", type=Path, default=REPO)
    d.add_argument("--out", type=Path, required=True)
    c = commands.add_parser("compare")
    c.add_argument("old", type=Path)
    c.add_argument("new", type=Path)
    c.add_argument("--map", type=Path)
    args = parser.parse_args()
    if args.command == "dump":
        dump(args.code, args.out)
        return 0
    return compare(args.old, args.new, args.map)


if __name__ == "__main__":
    sys.exit(main())
