"""The CPU profile (codegen.oracle.cpu): CPU flags to profile in the order ORT's MLAS chooses its
kernels, the ONNX2MCU_CPU_PROFILE override of each profile, and what verify says under
each: one short note per kernel family that ORT computes otherwise on that CPU, the u8 x
s8 reference it models, the details under --verbose, and the skip helpers of the suite."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import conftest
import onnx
import pytest
from conftest import skip_where_ort_differs
from zoo import qdq_model, quantized_model

from codegen import ops
from codegen.core.ir import Node
from codegen.errors import OptionError
from codegen.options import Options
from codegen.oracle import cpu
from codegen.oracle.cpu import FAMILIES, PROFILE_ENV, PROFILES, SATURATION_ENV, current_profile
from codegen.oracle.verify import Reference, reference_model
from codegen.pipeline import generate_sources

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tiny_cnn_qop.onnx"

BASE = "fpu sse sse2 ssse3 sse4_1 sse4_2 popcnt xsave"
AVX2 = f"{BASE} avx f16c fma avx2 bmi1 bmi2"
AVX512 = f"{AVX2} avx512f avx512dq avx512cd avx512bw avx512vl"
CPUS = {
    # name: (platform.machine(), /proc/cpuinfo flags or None, expected profile)
    "Nehalem": ("x86_64", BASE, "x86-sse"),
    "Sandy Bridge (AVX, no AVX2/FMA)": ("x86_64", f"{BASE} avx", "x86-sse"),
    "Haswell": ("x86_64", AVX2, "x86-avx2"),
    "Zen 2": ("x86_64", f"{AVX2} sse4a sha_ni clzero", "x86-avx2"),
    "Alder Lake (AVX-VNNI)": ("x86_64", f"{AVX2} avx_vnni sha_ni", "x86-avx2-vnni"),
    "Skylake-X": ("x86_64", AVX512, "x86-avx512"),
    "Knights Landing (AVX-512F without BW/DQ/VL)": (
        "x86_64", f"{AVX2} avx512f avx512cd avx512er avx512pf", "x86-avx512"),
    # platform.cpp: the AVX-512 core kernel replaces the AVX-VNNI one.
    "AVX-512 core with AVX-VNNI only": ("x86_64", f"{AVX512} avx_vnni", "x86-avx512"),
    "Cascade Lake": ("x86_64", f"{AVX512} avx512_vnni", "x86-avx512-vnni"),
    "Ice Lake": ("x86_64", f"{AVX512} avx512ifma avx512vbmi avx512_vbmi2 avx512_vnni "
                           "avx512_bitalg avx512_vpopcntdq", "x86-avx512-vnni"),
    "Zen 4": ("x86_64", f"{AVX512} avx512ifma avx512vbmi avx512_vbmi2 avx512_vnni "
                        "avx512_bf16 avx512_bitalg avx512_vpopcntdq", "x86-avx512-vnni"),
    "Sapphire Rapids (AMX)": ("x86_64", f"{AVX512} avx512_vnni avx_vnni amx_bf16 amx_tile "
                                        "amx_int8", "x86-avx512-vnni"),
    "AMX without AVX-512 VNNI": ("x86_64", f"{AVX512} amx_tile amx_int8", "x86-avx512-vnni"),
    "Linux aarch64 (no x86 flags)": ("aarch64", None, "arm64"),
    "macOS Apple silicon": ("arm64", None, "arm64"),
    "x86-64 without /proc/cpuinfo": ("AMD64", None, "unknown"),
    "riscv64": ("riscv64", "rv64imafdc", "unknown"),
}

# The families each profile's ORT computes with other kernels than the generated C follows,
# among those the two misc_ops models below use (no float reductions or interpolations).
# Left out: families the misc_ops models do not use, and the glibc ones, which the C
# library decides (with the CPU).
LEFT_OUT = {"eigen-sse-sums", "sgemm-m1-sums", "x86-scalar-float", "glibc-logf",
            "glibc-fma", "matmul-nbits-avx512"}
ALL = {f.key for f in FAMILIES} - LEFT_OUT
DIFFERING = {
    "x86-avx512-vnni": set(), "x86-avx512": set(),
    "x86-avx2-vnni": {"float-avx512f", "dq-lstm-avx512"},
    "x86-avx2": {"float-avx512f", "dq-lstm-avx512"},
    "x86-sse": {"float-avx512f", "fma3-activations", "qlinear-add", "layernorm-avx2",
                "dq-lstm-avx512"},
    "arm64": ALL, "unknown": ALL,
}


@pytest.mark.parametrize("name", CPUS)
def test_profile_from_cpu_flags(name: str) -> None:
    machine, flags, expected = CPUS[name]
    profile = cpu.profile_from_cpu(machine, None if flags is None else flags.split())
    assert profile.name == expected


def test_cpu_flags_are_read_from_the_x86_flags_line(tmp_path: Path) -> None:
    x86 = tmp_path / "x86"
    x86.write_text("processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu avx2 fma\n\n"
                   "processor\t: 1\nflags\t\t: fpu avx2 fma\n")
    assert cpu.read_cpu_flags(str(x86)) == {"fpu", "avx2", "fma"}
    arm = tmp_path / "arm"
    arm.write_text("processor\t: 0\nFeatures\t: fp asimd asimddp\nCPU part\t: 0xd0c\n")
    assert cpu.read_cpu_flags(str(arm)) is None
    assert cpu.read_cpu_flags(str(tmp_path / "missing")) is None


def test_this_machine_is_detected_as_its_own_profile(monkeypatch: pytest.MonkeyPatch) -> None:
    """Undisturbed detection agrees with the flags and the probe: x86-avx512-vnni here."""
    monkeypatch.delenv(PROFILE_ENV, raising=False)
    monkeypatch.delenv(SATURATION_ENV, raising=False)
    from codegen.oracle.verify import _probe_saturation, cpu_profile

    profile = cpu_profile()
    assert profile.forced_by == "" and profile.label == profile.name
    assert profile.u8s8_saturates == _probe_saturation()
    flags = cpu.profile_from_cpu(platform.machine(), cpu.read_cpu_flags())
    assert (profile.arch, profile.avx512f, profile.fma) == (flags.arch, flags.avx512f,
                                                            flags.fma)


def never_probed() -> bool:
    raise AssertionError("a forced profile must not run ORT's probe")


@pytest.mark.parametrize("name", PROFILES)
def test_each_profile_can_be_forced(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PROFILE_ENV, name)
    monkeypatch.delenv(SATURATION_ENV, raising=False)
    profile = current_profile(never_probed)
    assert profile.name == name and profile.forced_by == PROFILE_ENV
    assert profile.label == f"{name}, forced"
    assert profile == replace(PROFILES[name], forced_by=PROFILE_ENV)
    assert DIFFERING[name] == {f.key for f in FAMILIES if not f.holds_on(profile)} - LEFT_OUT
    header = conftest.pytest_report_header(None)  # type: ignore[arg-type]
    assert header.startswith(f"onnx2mcu: CPU profile {name} (")
    assert header.endswith(f"forced by {PROFILE_ENV}")


@pytest.mark.parametrize("value", ["x86-avx3", "X86-AVX2", "avx2", "arm"])
def test_an_unknown_profile_is_refused_by_name(value: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PROFILE_ENV, value)
    with pytest.raises(OptionError) as info:
        current_profile(never_probed)
    message = str(info.value)
    assert PROFILE_ENV in message and repr(value) in message
    assert all(name in message for name in PROFILES)


def test_the_cli_refuses_an_unknown_profile_in_one_line() -> None:
    result = subprocess.run([sys.executable, "-m", "codegen.cli", "verify", str(EXAMPLE),
                             "--samples", "1"], capture_output=True, text=True,
                            env={**os.environ, PROFILE_ENV: "pentium"})
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.count("\n") == 1 and "'pentium' is not a CPU profile" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_saturation_override_applies_over_a_profile(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PROFILE_ENV, "x86-avx2")
    monkeypatch.setenv(SATURATION_ENV, "0")
    profile = current_profile(never_probed)
    assert profile.name == "x86-avx2-vnni" and not profile.u8s8_saturates
    assert profile.forced_by == f"{PROFILE_ENV} and {SATURATION_ENV}"
    monkeypatch.setenv(PROFILE_ENV, "arm64")
    monkeypatch.setenv(SATURATION_ENV, "1")
    profile = current_profile(never_probed)  # no such CPU: the arm64 profile, saturating
    assert profile.name == "arm64" and profile.u8s8_saturates
    monkeypatch.delenv(PROFILE_ENV)
    monkeypatch.setattr(cpu, "_flags_profile", lambda: PROFILES["x86-avx512-vnni"])
    profile = current_profile(never_probed)
    assert profile.name == "x86-avx512" and profile.forced_by == SATURATION_ENV


@pytest.mark.parametrize("flags,probe,expected", [
    ("x86-avx2", False, "x86-avx2-vnni"), ("x86-avx2-vnni", True, "x86-avx2"),
    ("x86-avx512", False, "x86-avx512-vnni"), ("x86-avx512-vnni", False, "x86-avx512-vnni"),
])
def test_ort_s_probe_wins_over_the_flags(flags: str, probe: bool, expected: str,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PROFILE_ENV, raising=False)
    monkeypatch.delenv(SATURATION_ENV, raising=False)
    monkeypatch.setattr(cpu, "_flags_profile", lambda: PROFILES[flags])
    profile = current_profile(lambda: probe)
    assert profile.name == expected and profile.forced_by == ""


def test_the_families_name_registered_operators() -> None:
    for family in FAMILIES:
        for domain, op_type in family.ops:
            node = Node("n", op_type, domain, (), ())
            assert ops.lookup(node) is not None, (family.key, op_type)


def references(name: str, monkeypatch: pytest.MonkeyPatch) -> list[Reference]:
    """verify's reference for two zoo models under a forced profile: the QOperator
    misc_ops (QLinearAdd, QLinearMul, QLinearSigmoid, u8 x s8 convolutions) and its QDQ
    int8 form under x86 rules (float islands: Conv, GlobalAveragePool, Sigmoid)."""
    monkeypatch.setenv(PROFILE_ENV, name)
    monkeypatch.delenv(SATURATION_ENV, raising=False)
    refs = []
    for model, rules in ((quantized_model("misc_ops", "u8-pt"), "auto"),
                         (qdq_model("misc_ops", "i8-pt"), "x86")):
        gen = generate_sources(model, Options(qdq_rules=rules))
        refs.append(reference_model(gen.model, gen.graph, gen.qdq_rules))
    return refs


@pytest.mark.parametrize("name", PROFILES)
def test_verify_notes_per_profile(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    qop, qdq = references(name, monkeypatch)
    profile = PROFILES[name]
    differing = set(qop.cpu_differences) | set(qdq.cpu_differences)
    # misc_ops has no LayerNormalization and no DynamicQuantizeLSTM: verify notes only the
    # families a model uses.
    assert differing == DIFFERING[name] - {"layernorm-avx2", "dq-lstm-avx512"}
    for ref in (qop, qdq):
        assert all(len(f"note: {note}") < 100 for note in ref.notes), ref.notes
        warned = [note for note in ref.notes if note.endswith("may differ")]
        assert len(warned) == len(ref.cpu_differences)
        assert all(f"; ORT on {name} may differ" in note for note in warned)
        assert ref.details[0 if ref is qop else 1].startswith(f"CPU profile {name} (")
    assert sum("float island(s) follow ORT's AVX-512F kernels" in note
               for note in qdq.notes) == ("float-avx512f" in DIFFERING[name])
    u8s8 = [note for note in qop.notes if "u8 x s8" in note]
    assert len(u8s8) == 1
    if profile.u8s8_saturates:
        assert "saturates" in u8s8[0]
        assert qop.description == "the model with int8 weights moved to uint8"
    else:
        assert "exactly" in u8s8[0] and qop.description == "the model as given"
    assert qdq.config == {"session.qdqisint8allowed": "0"}


def test_the_int8_rules_are_set_explicitly_for_either_platform() -> None:
    model = qdq_model("misc_ops", "i8-pt")
    for rules, value in (("x86", "0"), ("arm", "1")):
        gen = generate_sources(model, Options(qdq_rules=rules))
        ref = reference_model(gen.model, gen.graph, gen.qdq_rules)
        assert ref.config == {"session.qdqisint8allowed": value}
        (note,) = [note for note in ref.notes if "int8 QDQ" in note]
        assert len(note) < 100 and f"ORT's {rules.replace('arm', 'ARM')} rules" in note
        assert any(f"session.qdqisint8allowed={value}" in d for d in ref.details)


def verify_cli(model: Path, *args: str, profile: str) -> list[str]:
    result = subprocess.run([sys.executable, "-m", "codegen.cli", "verify", str(model),
                             "--samples", "1", "--qdq-rules", "x86", *args],
                            capture_output=True, text=True,
                            env={**os.environ, PROFILE_ENV: profile})
    assert result.returncode in (0, 1), result.stderr
    return result.stdout.splitlines()


def test_verify_prints_short_notes_and_the_details_under_verbose(tmp_path: Path) -> None:
    """The int8 rules note is one short line; --verbose adds the longer story, the CPU
    profile first among the CPU's."""
    model = tmp_path / "misc_i8.onnx"
    onnx.save(qdq_model("misc_ops", "i8-pt"), model)
    plain = verify_cli(model, profile="x86-avx2")
    notes = [line for line in plain if line.startswith("note: ")]
    assert notes and all(len(line) < 100 for line in notes), notes
    assert not [line for line in plain if line.startswith("detail: ")]
    assert "note: 17 int8 QDQ activation(s) follow ORT's x86 rules " \
           "(session.qdqisint8allowed=0)" in plain
    assert "note: 2 float island(s) follow ORT's AVX-512F kernels; ORT on x86-avx2 may " \
           "differ" in notes
    verbose = verify_cli(model, "--verbose", profile="x86-avx2")
    details = [line for line in verbose if line.startswith("detail: ")]
    assert [line for line in verbose if line.startswith("note: ")] == notes
    assert any("session.qdqisint8allowed=0, ORT's x86 behaviour" in d for d in details)
    assert any(d.startswith("detail: CPU profile x86-avx2 (") for d in details)
    assert any("NCHWc blocks of 8, not 16" in d for d in details)


def test_skip_helpers_follow_the_profile(monkeypatch: pytest.MonkeyPatch) -> None:
    model = quantized_model("resnet8", "u8-pt")  # QLinearAdd
    monkeypatch.delenv(SATURATION_ENV, raising=False)
    for name in ("x86-avx512-vnni", "x86-avx512", "x86-avx2-vnni", "x86-avx2"):
        monkeypatch.setenv(PROFILE_ENV, name)
        skip_where_ort_differs(model)  # holds: no skip
    for name in ("x86-sse", "arm64", "unknown"):
        monkeypatch.setenv(PROFILE_ENV, name)
        with pytest.raises(pytest.skip.Exception, match=rf"QLinearAdd node\(s\) follow ORT's "
                           rf"AVX2 FMA kernel, which ORT does not run on this CPU \({name}, "
                           "forced\\)"):
            skip_where_ort_differs(model)


@pytest.mark.ort_kernels("qlinear-add", "fma3-activations")
def test_the_marker_runs_a_test_only_where_its_families_hold(
        cpu_profile: cpu.CpuProfile) -> None:
    assert cpu_profile.arch == cpu.X86_64 and cpu_profile.fma


@pytest.mark.cpu_differences_expected
def test_verify_reports_the_differences_it_notes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under a profile whose ORT runs other kernels, verify still compares (here, where
    this machine's ORT runs the AVX-512F ones, identically) and lists the families."""
    import codegen

    monkeypatch.setenv(PROFILE_ENV, "x86-sse")
    report = codegen.verify(quantized_model("resnet8", "u8-pt"), samples=1)
    assert report.cpu_differences == ["qlinear-add"]
    assert any(note.endswith("may differ") for note in report.notes)
