"""Where a model's instructions go on an emulated Cortex-M core: instructions per function
and, with --disasm FUNC, the function's disassembly with each instruction's execution
count. A developer's tool for kernel work (QEMU TCG plugin qemu/pcprofile.c); the counts
include the harness around one inference (input and output copies).

    .venv/bin/python bench/profile.py resnet8|MODEL.onnx [--board cortex-m4f] [--variant i8-pc]
        [--top 20] [--disasm dot_2x2] [--integer-only] [--io quantized]
"""

from __future__ import annotations

import argparse
import bisect
import subprocess
import sys
from collections import Counter
from pathlib import Path

import onnx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import zoo  # noqa: E402

from codegen.backend.interface import Interface  # noqa: E402
from codegen.options import Options  # noqa: E402
from codegen.oracle.verify import random_inputs  # noqa: E402
from codegen.pipeline import generate_sources  # noqa: E402
from codegen.target.build import (  # noqa: E402
    cache_key,
    cached_build,
    compile_in,
    compiler_identity,
    host_compiler,
)
from codegen.target.cycles import (  # noqa: E402
    cycle_model_for,
    disassemble,
    instruction_costs,
)
from codegen.target.firmware import build_firmware, elf_tool  # noqa: E402
from codegen.target.qemu import run_firmware  # noqa: E402


def profiler_plugin() -> Path:
    cc = host_compiler()
    files = {name: (ROOT / "qemu" / name).read_bytes()
             for name in ("pcprofile.c", "qemu_plugin_api.h")}
    flags = ["-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Werror"]
    entry, _ = cached_build(
        cache_key(compiler_identity(cc) + "pc profile", flags, files), files,
        "build/libpcprofile.so",
        lambda folder: compile_in(folder, [cc, *flags, "-o", "build/libpcprofile.so",
                                           "pcprofile.c"], "building the profiling plugin"))
    return entry / "build" / "libpcprofile.so"


def function_table(elf: Path) -> list[tuple[int, int, str]]:
    out = subprocess.run([elf_tool("nm", elf), "-S", "--defined-only", str(elf)],
                         capture_output=True, text=True, check=True).stdout
    table = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTwW":
            table.append((int(parts[0], 16) & ~1, int(parts[1], 16), parts[3]))
    return sorted(table)


def pc_counts(log: str) -> Counter[int]:
    counts: Counter[int] = Counter()
    for line in log.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "PC":
            counts[int(parts[1], 16)] += int(parts[2])
    return counts


def static_cycles(elf: Path, cpu: str, counts: Counter[int]) -> Counter[int]:
    """Each instruction's count times its cost after its static predecessor (the cycle
    model's table; taken-branch refills left out): where a function's cycles go."""
    model = cycle_model_for(cpu)
    if model is None:
        return Counter()
    instructions = disassemble(elf)
    costs = instruction_costs(instructions, model)
    return Counter({insn.address: counts[insn.address] * cost.after_previous
                    for insn, cost in zip(instructions, costs, strict=True)
                    if insn.address in counts})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model")
    parser.add_argument("--board", default="cortex-m4f")
    parser.add_argument("--variant", default="i8-pc")
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--weights", choices=["auto", "int8", "int16"], default="auto")
    parser.add_argument("--disasm", help="annotate this function's disassembly")
    parser.add_argument("--io", choices=["float", "quantized"], default="float",
                        help="the entry point's I/O, as generate --io (quantized: no "
                             "QuantizeLinear of the input in the count)")
    parser.add_argument("--integer-only", action="store_true",
                        help="as generate --integer-only (the 16-bit kernels of A16W8 models)")
    args = parser.parse_args()
    model = (onnx.load(args.model) if args.model.endswith(".onnx")
             else zoo.quantized_model(args.model, args.variant))
    gen = generate_sources(model, Options(board=args.board, weights=args.weights,
                                          integer_only=args.integer_only,
                                          interface=Interface(io=args.io)))
    build = build_firmware(gen.files, gen.name, gen.board, size=False)
    data = random_inputs(gen.program.inputs, 1, seed=0)
    _, log = run_firmware(build.elf, gen.board, gen.program.inputs, gen.program.outputs,
                          data, ["-plugin", str(profiler_plugin())])
    counts = pc_counts(log)
    table = function_table(build.elf)
    starts = [start for start, _, _ in table]
    per_function: Counter[str] = Counter()
    for pc, n in counts.items():
        i = bisect.bisect_right(starts, pc) - 1
        name = table[i][2] if i >= 0 and pc < table[i][0] + max(table[i][1], 2) else "?"
        per_function[name] += n
    cycles = static_cycles(build.elf, gen.board.cpu, counts)
    per_function_cycles: Counter[str] = Counter()
    for pc, n in cycles.items():
        i = bisect.bisect_right(starts, pc) - 1
        name = table[i][2] if i >= 0 and pc < table[i][0] + max(table[i][1], 2) else "?"
        per_function_cycles[name] += n
    total = sum(counts.values())
    total_cycles = sum(cycles.values())
    print(f"{total:,d} instructions executed (whole run, one inference)"
          + (f", about {total_cycles:,d} cycles (static costs, branch refills left out)"
             if total_cycles else ""))
    for name, n in per_function.most_common(args.top):
        c = per_function_cycles.get(name, 0)
        print(f"{n:>12,d} {100 * n / total:6.2f}%  {c:>12,d} cycles  {name}")
    if args.disasm:
        dis = subprocess.run([elf_tool("objdump", build.elf), "-d", f"--disassemble={args.disasm}",
                              str(build.elf)], capture_output=True, text=True,
                             check=True).stdout
        for line in dis.splitlines():
            head = line.split(":", 1)[0].strip()
            try:
                pc = int(head, 16)
            except ValueError:
                print(line)
                continue
            print(f"{counts.get(pc, 0):>10,d} {cycles.get(pc, 0):>10,d} {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
