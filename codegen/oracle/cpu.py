"""The CPU profile: which of ONNX Runtime's CPU-dependent kernels the local ORT runs.

ORT's MLAS picks its kernels once, from the CPU's features (lib/platform.cpp). These
choices change results, and so decide what verify can compare here:

- u8 x s8 products (QLinearConv, QLinearMatMul, MatMulInteger, QGemm): the AVX2 and
  AVX-512 (BW/DQ/VL) GEMM kernels add pairs of products with int16 saturation
  (vpmaddubsw). AVX-VNNI, AVX-512 VNNI, AMX, the SSE2 baseline of Linux builds and ARM
  compute exactly. The generated C is exact; verify compares it with the same model
  with its int8 weights moved to uint8 where ORT saturates, so this holds on every CPU.
- float islands: SGEMM, the convolutions, the pools and softmax's exponentials have
  AVX-512F kernels (NCHWc blocks of 16), which the generated C follows. Without
  AVX-512F, ORT runs FMA3, AVX, SSE or NEON kernels that add in another order.
- logistic and tanh (float Sigmoid and Tanh, QLinearSigmoid's table): FMA3 kernels on
  x86-64 with AVX2 and FMA, AVX-512F included; elsewhere generic kernels (SSE:
  unfused multiply-adds; ARM: NEON).
- QLinearAdd: an AVX2 kernel with fused multiply-adds on x86-64 with AVX2 and FMA; an
  SSE2 kernel (unfused) without them; a fixed-point NEON kernel on ARM.
- QLinearMul: one SSE2 kernel (unfused) on every x86-64; a NEON kernel on ARM.

What else onnx2mcu generates (QuantizeLinear's division, the requantization,
QLinearSoftmax's table of exp() in double, the other lookup tables) ORT computes with
the same operations on every CPU. ORT's int8 QDQ fusion rules differ between x86 and
ARM too, but verify sets them explicitly (session.qdqisint8allowed).

The profile comes from platform.machine() and /proc/cpuinfo's flags, following
platform.cpp's order; ORT itself is asked whether it saturates u8 x s8 products (verify's
probe), and its answer wins over the flags. ONNX2MCU_CPU_PROFILE=<name> forces a profile:
verify then notes what would differ on that CPU and models its u8 x s8 arithmetic, and
the test suite skips the checks that would not hold there. ONNX2MCU_ORT_U8S8_SATURATES=0
or 1 forces only the u8 x s8 behaviour, over either.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from functools import lru_cache

from codegen import ops
from codegen.core.ir import Graph, Node
from codegen.errors import OptionError

PROFILE_ENV = "ONNX2MCU_CPU_PROFILE"
# Set to 1/0 to override the u8 x s8 saturation probe (tests use it for both paths).
SATURATION_ENV = "ONNX2MCU_ORT_U8S8_SATURATES"

X86_64, ARM64, UNKNOWN = "x86-64", "arm64", "unknown"


@dataclass(frozen=True)
class CpuProfile:
    """What ORT computes on a kind of CPU, as far as the generated C is concerned."""

    name: str
    summary: str
    arch: str  # X86_64, ARM64 or UNKNOWN
    avx512f: bool  # ORT runs its AVX-512F float kernels
    fma: bool  # ORT runs its AVX2/FMA3 kernels (needs both AVX2 and FMA)
    u8s8_saturates: bool  # ORT adds u8 x s8 products in saturating int16 pairs
    forced_by: str = ""  # the environment variable(s) that chose it; "" when detected

    @property
    def label(self) -> str:
        """The name, marked when an environment variable chose it."""
        return f"{self.name}, forced" if self.forced_by else self.name

    def describe(self) -> str:
        how = f"forced by {self.forced_by}" if self.forced_by else (
            "detected from the CPU's flags and ORT's u8 x s8 probe")
        u8s8 = "saturated" if self.u8s8_saturates else "exact"
        return f"CPU profile {self.name} ({self.summary}; u8 x s8 products {u8s8}), {how}"


PROFILES: dict[str, CpuProfile] = {p.name: p for p in (
    CpuProfile("x86-avx512-vnni", "x86-64 with AVX-512F and VNNI or AMX", X86_64,
               avx512f=True, fma=True, u8s8_saturates=False),
    CpuProfile("x86-avx512", "x86-64 with AVX-512F, without VNNI", X86_64,
               avx512f=True, fma=True, u8s8_saturates=True),
    CpuProfile("x86-avx2-vnni", "x86-64 with AVX2, FMA and AVX-VNNI, without AVX-512F", X86_64,
               avx512f=False, fma=True, u8s8_saturates=False),
    CpuProfile("x86-avx2", "x86-64 with AVX2 and FMA, without AVX-512F or VNNI", X86_64,
               avx512f=False, fma=True, u8s8_saturates=True),
    CpuProfile("x86-sse", "x86-64 without AVX2 or FMA", X86_64,
               avx512f=False, fma=False, u8s8_saturates=False),
    CpuProfile("arm64", "64-bit ARM", ARM64, avx512f=False, fma=False, u8s8_saturates=False),
    CpuProfile("unknown", "a CPU whose features are unknown: none of ORT's x86-64 kernels "
               "assumed", UNKNOWN, avx512f=False, fma=False, u8s8_saturates=False),
)}


def profile_from_cpu(machine: str, flags: Iterable[str] | None) -> CpuProfile:
    """The profile of a CPU from platform.machine() and its /proc/cpuinfo flags (None:
    unreadable), in the order MLAS's platform.cpp chooses its kernels."""
    arch = machine.lower()
    if arch in ("aarch64", "arm64"):
        return PROFILES["arm64"]
    if arch not in ("x86_64", "amd64") or flags is None:
        return PROFILES["unknown"]
    have = set(flags)
    if not {"avx", "avx2", "fma"} <= have:
        return PROFILES["x86-sse"]  # the SSE2 u8 x s8 kernel widens to int16: exact
    exact = "avx_vnni" in have
    if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= have:
        # The AVX-512 core kernel replaces the AVX-VNNI one; only AVX-512 VNNI is exact.
        exact = "avx512_vnni" in have
    if {"amx_tile", "amx_int8"} <= have:
        exact = True
    width = "avx512" if "avx512f" in have else "avx2"
    return PROFILES[f"x86-{width}" + ("-vnni" if exact else "")]


def with_saturation(profile: CpuProfile, saturates: bool) -> CpuProfile:
    """The same CPU, whose ORT does (or does not) saturate u8 x s8 products: the sibling
    profile (x86-avx2 <-> x86-avx2-vnni, ...), or this one with the flag changed."""
    if profile.u8s8_saturates == saturates:
        return profile
    for other in PROFILES.values():
        if (other.arch, other.avx512f, other.fma, other.u8s8_saturates) == (
                profile.arch, profile.avx512f, profile.fma, saturates):
            return replace(other, forced_by=profile.forced_by)
    return replace(profile, u8s8_saturates=saturates)


def read_cpu_flags(path: str = "/proc/cpuinfo") -> frozenset[str] | None:
    """The CPU's feature flags (Linux x86), or None when they cannot be read."""
    try:
        with open(path, encoding="ascii", errors="replace") as info:
            for line in info:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        return None
    return None


@lru_cache(maxsize=1)
def _flags_profile() -> CpuProfile:
    return profile_from_cpu(platform.machine(), read_cpu_flags())


@lru_cache(maxsize=1)
def has_modern_glibc() -> bool:
    """Is this Python (and so ORT's library) linked with glibc 2.28 or later?"""
    library, version = platform.libc_ver()
    if library != "glibc":
        return False
    try:
        major, minor = (int(part) for part in version.split(".")[:2])
    except ValueError:
        return False
    return (major, minor) >= (2, 28)


def profile_named(name: str) -> CpuProfile:
    profile = PROFILES.get(name.strip())
    if profile is None:
        raise OptionError(f"{PROFILE_ENV}={name!r} is not a CPU profile; known: "
                          f"{', '.join(PROFILES)}")
    return profile


def current_profile(probe: Callable[[], bool] | None = None) -> CpuProfile:
    """This CPU's profile, or the one ONNX2MCU_CPU_PROFILE forces. probe() asks ORT
    whether it saturates u8 x s8 products; it is not called for a forced profile."""
    name = os.environ.get(PROFILE_ENV, "").strip()
    forced = os.environ.get(SATURATION_ENV)
    if name:
        profile = replace(profile_named(name), forced_by=PROFILE_ENV)
    else:
        profile = _flags_profile()
        if probe is not None and forced not in ("0", "1"):
            profile = with_saturation(profile, probe())
    if forced in ("0", "1"):
        by = f"{profile.forced_by} and {SATURATION_ENV}" if profile.forced_by else SATURATION_ENV
        profile = replace(with_saturation(profile, forced == "1"), forced_by=by)
    return profile


# ---------------------------------------------------------------- kernel families


@dataclass(frozen=True)
class KernelFamily:
    """Operators whose ORT kernel is chosen by the CPU, and which one the C follows."""

    key: str
    ops: frozenset[tuple[str, str]]  # (domain, op_type)
    what: str  # "float island(s)", counted in notes
    follows: str  # the kernels the generated C reproduces, briefly
    elsewhere: str  # what ORT runs on a CPU where they differ
    needs: str  # "avx512f", "fma" or "x86": the profile feature the kernels need; "glibc":
    # ORT's C library (glibc 2.28 or later, whose logf onnx2mcu reproduces); "glibc-fma":
    # that, on a CPU where glibc runs its FMA build (x86-64 with FMA and AVX2, arm64)
    # Which nodes of those op types it covers, where their attributes or shapes decide.
    covers: Callable[[Node, Graph], bool] = lambda node, graph: True

    def holds_on(self, profile: CpuProfile) -> bool:
        """Does ORT on this CPU run the kernels the generated C reproduces?"""
        if self.needs == "glibc":
            return has_modern_glibc()
        if self.needs == "glibc-fma":  # glibc's ifunc picks its FMA build by the CPU
            return has_modern_glibc() and (profile.fma or profile.arch == ARM64)
        if profile.arch != X86_64:
            return False
        return self.needs == "x86" or bool(getattr(profile, self.needs))


FAMILIES = (
    KernelFamily(
        "float-avx512f",
        frozenset(("", op) for op in ("Conv", "ConvTranspose", "Gemm", "MatMul",
                                      "AveragePool", "GlobalAveragePool", "Softmax",
                                      "LogSoftmax", "Exp")),
        "float island(s)", "ORT's AVX-512F kernels",
        "without AVX-512F, ORT's SGEMM, convolution, pooling, softmax and exp kernels are "
        "FMA3, AVX, SSE or NEON ones, which add in another order (NCHWc blocks of 8, not "
        "16) and scale exponentials in two steps", "avx512f"),
    KernelFamily(
        "matmul-nbits-avx512", frozenset({("", "MatMul"), ("", "Gemm")}),
        "MatMulNBits product(s)", "MLAS's AVX-512 MatMulNBits kernel (8-bit weights, A "
        "quantized per block of 32)",
        "without AVX-512, ORT's MatMulNBits runs AVX2 (blocks in pairs, 8 lanes) or NEON "
        "kernels, which add the block products in another order", "avx512f",
        covers=lambda node, graph: _runs_as_matmul_nbits(node, graph)),
    KernelFamily(
        "glibc-logf", frozenset({("", "LogSoftmax")}),
        "LogSoftmax node(s)", "glibc's logf (2.28 and later)",
        "ORT calls the C library's logf, and other C libraries (or glibc before 2.28) may "
        "round some logarithms otherwise", "glibc"),
    KernelFamily(
        "glibc-fma", frozenset({("", "Pow"), ("", "GRU"), ("", "LSTM")}),
        "Pow/GRU/LSTM node(s)", "glibc's powf and expf (2.28 and later) as its FMA build "
        "computes them",
        "ORT calls the C library's powf (Pow) and expf (Elu, Softplus, ScaledTanh "
        "activations): glibc's build for CPUs without FMA and AVX2, other C libraries and "
        "glibc before 2.28 round some of them otherwise", "glibc-fma",
        covers=lambda node, graph: _calls_glibc_fma(node, graph)),
    KernelFamily(
        "fma3-activations",
        frozenset({("", "Sigmoid"), ("", "Tanh"), ("", "Erf"), ("", "GRU"), ("", "LSTM"),
                   ("com.microsoft", "QLinearSigmoid")}),
        "sigmoid/tanh/erf/GRU/LSTM node(s)", "ORT's FMA3 kernels",
        "without AVX2 and FMA, ORT's logistic, tanh and erf are generic kernels (unfused "
        "multiply-adds on SSE, NEON on ARM), and GRU/LSTM packed SGEMMs are SSE or NEON "
        "kernels", "fma"),
    KernelFamily(
        "layernorm-avx2", frozenset({("", "LayerNormalization")}),
        "LayerNormalization node(s)", "MLAS's AVX2 LayerNorm kernel (rows of 8 or more)",
        "without AVX2 and FMA, ORT normalizes every row with its scalar Welford loop",
        "fma"),
    KernelFamily(
        "eigen-sse-sums", frozenset({("", "ReduceMean"), ("", "ReduceSum"),
                                     ("", "InstanceNormalization")}),
        "float reduction(s)", "Eigen's SSE summation of ORT's x86-64 build",
        "off x86-64, ORT's Eigen sums use that CPU's vectors, in an order not measured",
        "x86", covers=lambda node, graph: _summation_order(node, graph) == "rows"),
    KernelFamily(
        "sgemm-m1-sums", frozenset({("", "ReduceMean"), ("", "ReduceSum")}),
        "float reduction(s) over inner axes", "MLAS's single-row SGEMM kernel (AVX)",
        "without AVX, ORT's ones-vector SGEMM adds the values in another order", "fma",
        covers=lambda node, graph: _summation_order(node, graph) == "inner"),
    KernelFamily(
        "x86-scalar-float", frozenset({("", "Resize"), ("", "HardSigmoid"),
                                       ("", "HardSwish")}),
        "float interpolation(s) and hard sigmoid(s)",
        "ORT's plain C++ and Eigen float arithmetic as x86-64 builds run it",
        "ORT's ARM builds may fuse its multiply-adds (GCC contracts a*b + c by default)",
        "x86", covers=lambda node, graph: node.op_type != "Resize" or
        node.attrs.get("mode", "nearest") == "linear"),
    KernelFamily(
        "dq-lstm-avx512", frozenset({("com.microsoft", "DynamicQuantizeLSTM")}),
        "DynamicQuantizeLSTM node(s) with int8 weights",
        "ORT's kernels on AVX-512 CPUs (as measured there)",
        "on an AVX2 CPU without AVX-512 (2026-12-07) ORT's DynamicQuantizeLSTM with int8 "
        "weights gave other values, by up to 1.4, also with the weights moved to uint8 "
        "(uint8 weights matched); the kernels that differ are not yet traced", "avx512f",
        covers=lambda node, graph: _int8_weights(node, graph)),
    KernelFamily(
        "qlinear-add", frozenset({("com.microsoft", "QLinearAdd")}),
        "QLinearAdd node(s)", "ORT's AVX2 FMA kernel",
        "without AVX2 and FMA, ORT's QLinearAdd is an SSE2 kernel (unfused multiply-adds); "
        "on ARM a fixed-point NEON kernel", "fma"),
    KernelFamily(
        "qlinear-mul", frozenset({("com.microsoft", "QLinearMul")}),
        "QLinearMul node(s)", "ORT's x86 SSE2 kernel",
        "off x86-64, ORT's QLinearMul is another (NEON) kernel", "x86"),
)
FAMILY_KEYS = tuple(f.key for f in FAMILIES)


@dataclass(frozen=True)
class FamilyUse:
    """The nodes of a graph whose ORT kernels belong to one family."""

    family: KernelFamily
    nodes: tuple[str, ...]
    op_types: tuple[str, ...]  # sorted, distinct

    def note(self, profile: CpuProfile) -> str:
        """One short line: these nodes may differ on this CPU (its details tell why)."""
        return (f"{len(self.nodes)} {self.family.what} follow {self.family.follows}; "
                f"ORT on {profile.name} may differ")

    def detail(self, profile: CpuProfile) -> str:
        here = ("ORT runs them on this CPU" if self.family.holds_on(profile)
                else self.family.elsewhere)
        return (f"{self.family.what} ({', '.join(self.op_types)}) follow "
                f"{self.family.follows}: {here}")


def _summation_order(node: Node, graph: Graph) -> str:
    """ReduceMean/ReduceSum's order ("rows", "leading", "inner"); "rows" for a table that
    tabulates one (it has no axes of its own)."""
    traits = ops.ort_traits(node, graph)
    return next((order for order in ("leading", "inner") if f"sums-{order}" in traits),
                "rows")


def _runs_as_matmul_nbits(node: Node, graph: Graph) -> bool:
    return "matmul-nbits" in ops.ort_traits(node, graph)


def _int8_weights(node: Node, graph: Graph) -> bool:
    """A node whose weights (input 1) are int8."""
    weights = node.inputs[1] if len(node.inputs) > 1 else ""
    tensor = graph.tensors.get(weights)
    constant = graph.constants.get(weights)
    dtype = tensor.dtype if tensor is not None else (
        str(constant.dtype) if constant is not None else "")
    return dtype == "int8"


def _calls_glibc_fma(node: Node, graph: Graph) -> bool:
    """Pow by an exponent ORT does not square or cube (a table's Pow: assumed so), or a
    GRU/LSTM with an activation ORT computes with expf."""
    if node.op_type in ("GRU", "LSTM"):
        return "expf" in ops.ort_traits(node, graph)
    if node.op_type != "Pow":
        return True
    value = graph.constants.get(node.inputs[1]) if len(node.inputs) > 1 else None
    return value is None or value.size != 1 or float(value.reshape(-1)[0]) not in (2.0, 3.0)


def computed_ops(node: Node) -> list[tuple[str, str]]:
    """The (domain, op_type) whose ORT kernels decide the node's values: its own, and
    for a table (transform/tabulate.py) the float operators it was computed from."""
    ops = [("" if node.domain == "ai.onnx" else node.domain, node.op_type)]
    tabulated = node.attrs.get("tabulates", ())
    if isinstance(tabulated, (list, tuple)):
        ops += [("", str(op)) for op in tabulated]
    return ops


def family_uses(graph: Graph) -> list[FamilyUse]:
    """The kernel families the graph's nodes use, in FAMILIES order."""
    uses = []
    for family in FAMILIES:
        nodes = [n for n in graph.nodes if any(op in family.ops for op in computed_ops(n))
                 and family.covers(n, graph)]
        if nodes:
            ops = {op for n in nodes for _, op in
                   (o for o in computed_ops(n) if o in family.ops)}
            uses.append(FamilyUse(family, tuple(n.name for n in nodes), tuple(sorted(ops))))
    return uses


def differences(graph: Graph, profile: CpuProfile) -> list[FamilyUse]:
    """The families of the graph that ORT computes with other kernels on this CPU."""
    return [use for use in family_uses(graph) if not use.family.holds_on(profile)]
