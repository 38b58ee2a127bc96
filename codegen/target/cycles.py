"""A cycle model of Cortex-M4 (and M33) and Cortex-M0+, applied to the instructions QEMU
executes.

QEMU models no timing. The estimate charges every executed instruction its cost from
Arm's Technical Reference Manuals (Cortex-M4 TRM table 3-1 and section 3.3.2; Cortex-M0+
TRM table 3-1), with zero-wait-state memory, as ../shared/docs/cortex-m-cycles.md sets
out. The firmware's disassembly (arm-none-eabi-objdump) gives each instruction's static
cost here, in Python; the QEMU plugin (qemu/insncount.c) adds a translation block's
costs each time it runs, and a taken branch's refill when the next block does not start
where the previous one falls through.

What it models: each instruction class's issue cost, LDR pipelining and address-
generation stalls between neighbours (M4), LDRD/LDM/PUSH/POP by register count, taken
branches by kind, a 32-bit branch target at a halfword address (M4), unaligned data
accesses (M4 TRM 3.3.2: +1 for a halfword split in two bytes or a word at a halfword
address, +2 for a word at an odd address; the plugin sees each access's address). Beside
that zero-wait figure, on a board whose file gives its flash timing ([flash_timing]: wait
states, cache lines), a board figure: every instruction fetch and every data read of the
flash that misses the board's instruction or data cache (least recently used out) stalls
the wait states; a miss costs the wait states however long the line, and no prefetch
overlaps them with execution (the line streams in behind the first word). What it does
not: the operand-dependent divide time (7 cycles assumed), skipped instructions of an IT
block (charged as executed), dual issue (M7: no model), interrupts, wait states of RAM.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from codegen.errors import ToolchainError

from .firmware import cross_tool

CONDITIONS = ("eq", "ne", "cs", "hs", "cc", "lo", "mi", "pl", "vs", "vc", "hi", "ls", "ge",
              "lt", "gt", "le", "al")
SINGLE_LOADS = frozenset({"ldr", "ldrb", "ldrh", "ldrsb", "ldrsh", "ldrex", "ldrexb",
                          "ldrexh", "ldrt", "ldrbt", "ldrht", "ldrsbt", "ldrsht"})
SINGLE_STORES = frozenset({"str", "strb", "strh", "strex", "strexb", "strexh", "strt",
                           "strbt", "strht"})
MULTIPLE = frozenset({"ldm", "ldmia", "ldmfd", "ldmdb", "ldmea", "stm", "stmia", "stmea",
                      "stmdb", "stmfd", "push", "pop"})
PAIRS = frozenset({"ldrd", "strd"})
DIVIDES = frozenset({"sdiv", "udiv"})
# Multiplies: one cycle on M4 (single-cycle multiplier) and on M0+ (MULS, fast option).
MULTIPLIES = frozenset({
    "mul", "mla", "mls", "smull", "umull", "smlal", "umlal", "umaal", "smulbb", "smulbt",
    "smultb", "smultt", "smulwb", "smulwt", "smlabb", "smlabt", "smlatb", "smlatt",
    "smlawb", "smlawt", "smlalbb", "smlalbt", "smlaltb", "smlaltt", "smlad", "smladx",
    "smlsd", "smlsdx", "smlald", "smlaldx", "smlsld", "smlsldx", "smuad", "smuadx",
    "smusd", "smusdx", "smmul", "smmulr", "smmla", "smmlar", "smmls", "smmlsr", "usad8",
    "usada8"})
LONG_MULTIPLIES = frozenset({"smull", "umull", "smlal", "umlal", "umaal", "smlalbb",
                             "smlalbt", "smlaltb", "smlaltt", "smlald", "smlaldx", "smlsld",
                             "smlsldx"})
# Instructions that write no core register (or only flags).
NO_DESTINATION = frozenset({"cmp", "cmn", "tst", "teq", "nop", "dsb", "dmb", "isb", "bkpt",
                            "svc", "cpsid", "cpsie", "wfi", "wfe", "sev", "yield", "msr",
                            "pld", "pli"})
FP_MULTIPLY_ADD = frozenset({"vmla", "vmls", "vnmla", "vnmls", "vfma", "vfms", "vfnma",
                             "vfnms"})
FP_LONG = frozenset({"vdiv", "vsqrt"})
FP_MULTIPLE = frozenset({"vldm", "vldmia", "vldmdb", "vstm", "vstmia", "vstmdb", "vpush",
                         "vpop"})
DIRECT_BRANCHES = frozenset({"b", "bl", "cbz", "cbnz"})
REGISTER_BRANCHES = frozenset({"bx", "blx"})
TABLE_BRANCHES = frozenset({"tbb", "tbh"})
DIVIDE_CYCLES = 7  # SDIV/UDIV take 2 to 12 cycles by operands on M4


@dataclass(frozen=True)
class Instruction:
    address: int
    size: int  # 2 or 4 bytes
    mnemonic: str  # lower case, without .w/.n
    operands: str

    @property
    def base(self) -> str:
        return base_mnemonic(self.mnemonic)


@dataclass(frozen=True)
class Cost:
    """What one instruction costs: alone (after a taken branch), after its static
    predecessor in a block, and the refill when it branches away."""
    alone: int
    after_previous: int
    taken_penalty: int
    unaligned_target: int  # extra cycles when a branch lands on it


def _known(base: str) -> bool:
    return (base in SINGLE_LOADS or base in SINGLE_STORES or base in MULTIPLE
            or base in PAIRS or base in DIVIDES or base in MULTIPLIES or base in KNOWN_OTHER
            or base in DIRECT_BRANCHES or base in REGISTER_BRANCHES or base in TABLE_BRANCHES
            or base in FP_KNOWN or base.startswith(("vsel", "vrint", "vcvt"))
            or re.fullmatch(r"it[te]{0,3}", base) is not None)


FP_KNOWN = frozenset({
    "vadd", "vsub", "vmul", "vnmul", "vdiv", "vsqrt", "vabs", "vneg", "vcmp", "vcmpe",
    "vmov", "vmrs", "vmsr", "vldr", "vstr", "vmaxnm", "vminnm", *FP_MULTIPLY_ADD,
    *FP_MULTIPLE})


KNOWN_OTHER = frozenset({
    "adc", "add", "addw", "adr", "and", "asr", "bfc", "bfi", "bic", "clz", "cmn", "cmp",
    "eor", "lsl", "lsr", "mov", "movw", "movt", "mvn", "neg", "orn", "orr", "rbit", "rev",
    "rev16", "revsh", "ror", "rrx", "rsb", "sbc", "sbfx", "sub", "subw", "sxtb", "sxth",
    "sxtb16", "sxtab", "sxtah", "sxtab16", "teq", "tst", "ubfx", "uxtb", "uxth", "uxtb16",
    "uxtab", "uxtah", "uxtab16", "ssat", "usat", "ssat16", "usat16", "qadd", "qsub",
    "qdadd", "qdsub", "qadd8", "qadd16", "qsub8", "qsub16", "qasx", "qsax", "sadd8",
    "sadd16", "ssub8", "ssub16", "sasx", "ssax", "uadd8", "uadd16", "usub8", "usub16",
    "uasx", "usax", "uqadd8", "uqadd16", "uqsub8", "uqsub16", "shadd8", "shadd16",
    "shsub8", "shsub16", "uhadd8", "uhadd16", "uhsub8", "uhsub16", "sel", "pkhbt", "pkhtb",
    "nop", "dsb", "dmb", "isb", "bkpt", "svc", "cpsid", "cpsie", "wfi", "wfe", "sev",
    "yield", "mrs", "msr", "udf",
    "pld", "pli"})  # preload hints: issued like a NOP on M4


def base_mnemonic(mnemonic: str) -> str:
    """The instruction without its data type (.f32), width (.w/.n), flag-setting S or
    condition: 'addseq.w' -> 'add', 'vmovpl.f32' -> 'vmov', 'bls.n' -> 'b'."""
    stem = mnemonic.split(".")[0]
    candidates = [stem]
    if stem[-2:] in CONDITIONS:
        candidates.append(stem[:-2])
    for candidate in list(candidates):
        if candidate.endswith("s"):
            candidates.append(candidate[:-1])
    for candidate in candidates:
        if _known(candidate):
            return candidate
    return stem


def known_mnemonic(insn: Instruction) -> bool:
    """Whether the cost tables have a class for the instruction."""
    return _known(insn.base)


_LINE = re.compile(r"^\s*([0-9a-f]+):\t([0-9a-f]{4}(?: [0-9a-f]{4})?)\s*\t(\S+)\s*(.*)$")


def parse_disassembly(text: str) -> list[Instruction]:
    """Thumb instructions of `objdump -d` output (data such as literal pools skipped)."""
    instructions = []
    for line in text.splitlines():
        match = _LINE.match(line)
        if match is None:
            continue
        address, raw, mnemonic, operands = match.groups()
        if mnemonic.startswith("."):  # .word, .short: data in a code section
            continue
        mnemonic = mnemonic.lower()
        if mnemonic.endswith((".w", ".n")):
            mnemonic = mnemonic[:-2]
        # Comments and symbol names (<label>) carry no operands.
        operands = re.sub(r"<[^>]*>", "", operands.split(";")[0].split("@")[0]).strip()
        operands = operands.lower()
        instructions.append(Instruction(int(address, 16), 2 * len(raw.split()), mnemonic,
                                        operands))
    return instructions


def disassemble(elf: Path) -> list[Instruction]:
    result = subprocess.run([cross_tool("objdump"), "-d", str(elf)], capture_output=True,
                            text=True, timeout=120, check=False)
    if result.returncode != 0:
        raise ToolchainError(f"objdump failed on {elf}: {result.stderr.strip()}")
    return parse_disassembly(result.stdout)


# ---------------------------------------------------------------- operands

_REGISTER = re.compile(r"\b(r\d{1,2}|sp|lr|pc|ip|fp|sl|sb)\b")
ALIASES = {"ip": "r12", "fp": "r11", "sl": "r10", "sb": "r9"}


def _registers(text: str) -> list[str]:
    return [ALIASES.get(r, r) for r in _REGISTER.findall(text)]


def register_list_size(operands: str) -> int:
    """Registers in a {...} list, ranges counted: '{r4-r7, lr}' -> 5, '{d8-d9}' -> 2."""
    inside = operands[operands.index("{") + 1:operands.index("}")]
    count = 0
    for item in (i.strip() for i in inside.split(",") if i.strip()):
        if "-" in item:
            first, last = item.split("-")
            count += int(last.strip()[1:]) - int(first.strip()[1:]) + 1
        else:
            count += 1
    return count


def fp_words(operands: str) -> int:
    """32-bit words moved by VLDM/VSTM/VPUSH/VPOP: two per D register."""
    inside = operands[operands.index("{") + 1:operands.index("}")]
    return register_list_size(operands) * (2 if inside.strip().startswith("d") else 1)


def address_registers(insn: Instruction) -> list[str]:
    """The core registers a memory access computes its address from."""
    if "[" in insn.operands:
        inside = insn.operands[insn.operands.index("[") + 1:insn.operands.index("]")]
        return _registers(inside)
    if insn.base in MULTIPLE or insn.base in FP_MULTIPLE:
        if insn.base in ("push", "pop", "vpush", "vpop"):
            return ["sp"]
        return _registers(insn.operands.split(",")[0])
    return []


def written_registers(insn: Instruction) -> list[str]:
    """Core registers an ALU or multiply instruction writes (for address-generation
    stalls)."""
    base = insn.base
    if (base in NO_DESTINATION or base in DIRECT_BRANCHES or base in REGISTER_BRANCHES
            or base in TABLE_BRANCHES or base.startswith(("v", "it"))):
        return []
    # Loads write through the load path: a load used as the next address only loses the
    # pipelining (see m4_cost), it does not stall address generation.
    if (base in SINGLE_STORES or base in SINGLE_LOADS or base in PAIRS
            or base in MULTIPLE):
        return []
    regs = _registers(insn.operands)
    if not regs:
        return []
    return regs[:2] if base in LONG_MULTIPLIES else regs[:1]


def is_memory(insn: Instruction) -> bool:
    base = insn.base
    return (base in SINGLE_LOADS or base in SINGLE_STORES or base in PAIRS
            or base in MULTIPLE or base in FP_MULTIPLE or base in ("vldr", "vstr"))


def writes_pc(insn: Instruction) -> bool:
    """A load, POP or data-processing instruction with the PC as destination."""
    base = insn.base
    if base in MULTIPLE and "{" in insn.operands:
        return "pc" in _registers(insn.operands[insn.operands.index("{"):])
    if base in SINGLE_LOADS or base in KNOWN_OTHER:
        regs = _registers(insn.operands.split(",")[0])
        return regs == ["pc"]
    return False


# ---------------------------------------------------------------- Cortex-M4 / M33

def m4_issue_cycles(insn: Instruction) -> int:
    """Cycles of the instruction itself (TRM table 3-1), before neighbours and branches."""
    base = insn.base
    if base in SINGLE_LOADS:
        return 2
    if base in SINGLE_STORES:
        # STR with a register offset takes 2, with an immediate 1.
        inside = insn.operands[insn.operands.index("[") + 1:insn.operands.index("]")]
        return 2 if len(_registers(inside)) > 1 else 1
    if base in PAIRS:
        return 3
    if base in MULTIPLE:
        return 1 + register_list_size(insn.operands)
    if base in DIVIDES:
        return DIVIDE_CYCLES
    if base in TABLE_BRANCHES:
        return 2
    if base in FP_MULTIPLY_ADD:
        return 3
    if base in FP_LONG:
        return 14
    if base in FP_MULTIPLE:
        return 1 + fp_words(insn.operands)
    if base in ("vldr", "vstr"):
        return 3 if insn.operands.startswith("d") else 2
    if base in ("vmov", "vmsr", "vmrs") and re.match(r"(r\d|ip|fp|sl|sb|lr|apsr)",
                                                     insn.operands):
        return 1 if base == "vmrs" and insn.operands.startswith("apsr") else 2
    if base == "vmov" and _registers(insn.operands):
        return 2  # core register(s) to S or D register
    return 1


def m4_taken_penalty(insn: Instruction) -> int:
    """Pipeline refill of a taken branch: 1 direct, 2 through a register, 3 from a load."""
    base = insn.base
    if base in DIRECT_BRANCHES:
        return 1
    if base in REGISTER_BRANCHES or base in TABLE_BRANCHES:
        return 2
    if writes_pc(insn):
        return 3 if (base in MULTIPLE or base in SINGLE_LOADS) else 2
    return 0


def m4_cost(insn: Instruction, previous: Instruction | None) -> Cost:
    issue = m4_issue_cycles(insn)
    after = issue
    if previous is not None:
        base, prev = insn.base, previous.base
        if (base in SINGLE_LOADS and prev in SINGLE_LOADS and not writes_pc(previous)
                and not set(address_registers(insn)) & set(written_loads(previous))):
            after -= 1  # pipelined behind the previous single load
        if is_memory(insn) and set(address_registers(insn)) & set(written_registers(previous)):
            after += 1  # the address register was written by the instruction before
    unaligned = 1 if insn.size == 4 and insn.address % 4 == 2 else 0
    return Cost(issue, after, m4_taken_penalty(insn), unaligned)


def written_loads(insn: Instruction) -> list[str]:
    """The register a single load writes."""
    return _registers(insn.operands.split(",")[0])


# ---------------------------------------------------------------- Cortex-M0+

def m0plus_cost(insn: Instruction, previous: Instruction | None) -> Cost:
    """Cortex-M0+ TRM: loads and stores 2, LDM/STM/PUSH/POP 1 + N, taken B 2, BL 3,
    BX/BLX 2, POP with the PC 3 + N; the rest 1 (the fast multiplier's MULS included)."""
    del previous  # a two-stage pipeline: no pairing or address stalls
    base = insn.base
    issue = 1
    if base in SINGLE_LOADS or base in SINGLE_STORES:
        issue = 2
    elif base in MULTIPLE:
        issue = 1 + register_list_size(insn.operands)
    penalty = 0
    if base == "bl":
        penalty = 2
    elif base in DIRECT_BRANCHES or base in REGISTER_BRANCHES:
        penalty = 1
    elif writes_pc(insn):
        penalty = 2 if base in MULTIPLE else 1
    return Cost(issue, issue, penalty, 0)


CYCLE_MODELS = {"cortex-m4": m4_cost, "cortex-m0plus": m0plus_cost}
# The table each core takes: M33 issues like M4 for this code (its DSP extension
# included). M0 (three-stage pipeline: taken branches cost 3), M3 (multi-cycle long
# multiplies) and M7 (dual issue) have none.
CORE_MODELS = {"cortex-m4": "cortex-m4", "cortex-m33": "cortex-m4",
               "cortex-m0plus": "cortex-m0plus"}
ASSUMPTIONS = {
    "cortex-m4": ("zero-wait-state memory (the board figure adds the board's flash), "
                  "unaligned data accesses +1 or +2 as the TRM has them, no fetch stalls, "
                  f"SDIV/UDIV {DIVIDE_CYCLES} cycles, IT-skipped instructions charged as "
                  "executed"),
    "cortex-m0plus": "zero-wait-state memory, the single-cycle multiplier, no fetch stalls",
}


def cycle_model_for(cpu: str) -> str | None:
    """The cycle table for a board's CPU, or None."""
    return CORE_MODELS.get(cpu)


def instruction_costs(instructions: Sequence[Instruction], model: str) -> list[Cost]:
    cost_of = CYCLE_MODELS[model]
    costs = []
    previous: Instruction | None = None
    for insn in instructions:
        adjacent = previous is not None and previous.address + previous.size == insn.address
        costs.append(cost_of(insn, previous if adjacent else None))
        previous = insn
    return costs


def cost_table(instructions: Sequence[Instruction], model: str) -> str:
    """The plugin's cost file: address, cost alone, cost after the previous instruction,
    taken-branch penalty, unaligned-target extra; one instruction per line."""
    lines = [f"{insn.address:x} {c.alone} {c.after_previous} {c.taken_penalty} "
             f"{c.unaligned_target}"
             for insn, c in zip(instructions, instruction_costs(instructions, model),
                                strict=True)]
    return "\n".join(lines) + "\n"
