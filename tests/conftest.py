"""Shared test set-up: the layers of the suite, an isolated build cache, a cache of
generated models, the sanitizer flags every generated project is compiled with in the
tests, and what makes the suite hold on any CPU.

The suite is layered by folder (docs/testing.md), each folder a marker of the same name:
unit (pure Python), kernels (C kernels called directly), ops (operator families against
ONNX Runtime), networks (whole models: zoo, corpus, QDQ), targets (the generated
project, firmware, QEMU, cycles) and tools (the commands as users run them). `make
test-fast` runs the first three on the host: without their tests marked qemu.

ORT picks some kernels by CPU (codegen.oracle.cpu). On a CPU profile whose ORT runs other
kernels than the generated C follows for a model's nodes, a test that compares that
model with ORT is skipped with the reason: explicitly by `skip_where_ort_differs` (or
the `ort_kernels` marker) before the work, and otherwise by `codegen.verify` itself,
which the fixture below turns into a skip wherever its report lists such a difference.
ONNX2MCU_CPU_PROFILE=<name> forces a profile (make test-cpu-profiles runs each)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import onnx
import pytest
from numpy.typing import NDArray

import codegen
from codegen import api
from codegen.errors import OptionError

# Every generated project in the tests is compiled with the strict warning flags (always
from codegen.options import Options
from codegen.oracle.cpu import (
    FAMILIES,
    CpuProfile,
    FamilyUse,
    KernelFamily,
    current_profile,
    differences,
)
from codegen.oracle.verify import VerifyReport, reference_model, run_ort
from codegen.oracle.verify import cpu_profile as local_cpu_profile
from codegen.pipeline import Generated, generate_sources
from codegen.target.firmware import cross_toolchain_available
from codegen.target.qemu import qemu_available

TestFunction = TypeVar("TestFunction", bound=Callable[..., Any])


def compiler_accepts(flag: str) -> bool:
    """Whether cc compiles a one-line C file with `flag`."""
    try:
        probe = subprocess.run(["cc", flag, "-x", "c", "-c", "-o", "/dev/null", "-"],
                               input=b"int x;\n", capture_output=True, check=False)
    except OSError:
        return False
    return probe.returncode == 0


def linker_works(flag: str) -> bool:
    """Whether cc links a sanitized program with `flag`."""
    with tempfile.TemporaryDirectory() as tmp:
        try:
            probe = subprocess.run(["cc", flag, "-fsanitize=address,undefined", "-x", "c",
                                    "-o", f"{tmp}/probe", "-"],
                                   input=b"int main(void) { return 0; }\n",
                                   capture_output=True, check=False)
        except OSError:
            return False
    return probe.returncode == 0


# Every generated project in the tests is compiled with the strict warning flags (always
# on) and run under AddressSanitizer and UndefinedBehaviorSanitizer (with float-to-int
# overflow, which -fsanitize=undefined leaves out, where cc has it:
# tests/ops/test_extreme_inputs.py says so when it has not); any report aborts. One set of
# flags for every test, so each runtime object is compiled once per run. The gold linker
# where there is one: it links the sanitized harnesses in half the time of ld.bfd (a
# quarter of the suite's time is spent building them). Line tables only (-g1): the
# sanitizers' reports keep their file:line frames, and the runtime objects compile in
# two thirds of the time full debug information takes.
FLOAT_CAST_OVERFLOW = "-fsanitize=float-cast-overflow"
HAS_FLOAT_CAST_OVERFLOW = compiler_accepts(FLOAT_CAST_OVERFLOW)
GOLD = "-fuse-ld=gold"
SANITIZE = ("-O1", "-g1", "-fno-omit-frame-pointer", "-fsanitize=address,undefined",
            "-fno-sanitize-recover=all",
            *((FLOAT_CAST_OVERFLOW,) if HAS_FLOAT_CAST_OVERFLOW else ()),
            *((GOLD,) if linker_works(GOLD) else ()))
FAMILY_BY_KEY = {f.key: f for f in FAMILIES}

# In the layers `make test-fast` runs (unit, kernels, ops), a test that builds firmware
# and runs it on a Cortex-M board in QEMU carries the marker `qemu` (in_qemu): `make
# test` runs them, `make test-fast` (the host) leaves them out. The other layers' QEMU
# tests are not marked: test-fast does not run those layers. Skipped, with the reason,
# where the cross tools or QEMU are missing (`make cortex-m-tools` installs them).
CORTEX_M_TOOLS = cross_toolchain_available() and qemu_available()
_NEEDS_CORTEX_M_TOOLS = pytest.mark.skipif(
    not CORTEX_M_TOOLS, reason="needs arm-none-eabi-gcc, -size, -nm and qemu-system-arm "
    "(make cortex-m-tools)")


# The RV32 boards' tools (make riscv-tools): riscv64-unknown-elf-gcc with picolibc and
# qemu-system-riscv32.
RISCV_TOOLS = cross_toolchain_available("riscv") and qemu_available("riscv")
NEEDS_RISCV_TOOLS = pytest.mark.skipif(
    not RISCV_TOOLS, reason="needs riscv64-unknown-elf-gcc, picolibc and qemu-system-riscv32 "
    "(make riscv-tools)")


def on_board(board: str) -> Any:
    """A board parameter that skips, with the reason, where its kind's tools are missing."""
    return pytest.param(board, marks=NEEDS_RISCV_TOOLS if board.startswith(
        ("riscv", "esp32", "gd32v")) else _NEEDS_CORTEX_M_TOOLS)


def in_qemu(test: TestFunction) -> TestFunction:
    """Mark a test that runs on a Cortex-M board in QEMU (see CORTEX_M_TOOLS)."""
    return pytest.mark.qemu(_NEEDS_CORTEX_M_TOOLS(test))


# The build cache a run made for itself (about 2 GB after a whole run): removed at its
# end. xdist's workers inherit the variable, so only the process that made it removes it.
_RUN_CACHE: list[str] = []


def pytest_unconfigure(config: pytest.Config) -> None:
    for folder in _RUN_CACHE:
        shutil.rmtree(folder, ignore_errors=True)


def pytest_configure(config: pytest.Config) -> None:
    if "ONNX2MCU_CACHE_DIR" not in os.environ:
        os.environ["ONNX2MCU_CACHE_DIR"] = tempfile.mkdtemp(prefix="onnx2mcu-test-cache-")
        _RUN_CACHE.append(os.environ["ONNX2MCU_CACHE_DIR"])
    os.environ.setdefault("ASAN_OPTIONS", "detect_leaks=0:abort_on_error=0")
    os.environ.setdefault("UBSAN_OPTIONS", "print_stacktrace=1")
    try:  # a misspelt ONNX2MCU_CPU_PROFILE stops the run here, not in every test
        current_profile()
    except OptionError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.addinivalue_line(
        "markers", "ort_kernels(*families): the test compares with ORT kernels of these "
        f"codegen.oracle.cpu families ({', '.join(FAMILY_BY_KEY)}); skipped on a CPU profile whose "
        "ORT runs others")
    for layer in LAYERS:
        config.addinivalue_line("markers", f"{layer}: a test of the {layer} layer")
    config.addinivalue_line(
        "markers", "qemu: a test of the unit, kernels or ops layers that runs the "
        "generated code on a Cortex-M board in QEMU (make test-fast leaves it out)")
    config.addinivalue_line(
        "markers", "cpu_differences_expected: codegen.verify returns its report even where "
        "ORT on this CPU profile runs other kernels (tests of the notes themselves)")


LAYERS = ("unit", "kernels", "ops", "networks", "targets", "tools")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each test is marked with its layer, the folder it lives in."""
    tests = Path(__file__).resolve().parent
    for item in items:
        folder = Path(str(item.fspath)).resolve().parent
        if folder.parent == tests and folder.name in LAYERS:
            item.add_marker(getattr(pytest.mark, folder.name))


def pytest_report_header(config: pytest.Config) -> str:
    return f"onnx2mcu: {local_cpu_profile().describe()}"


def family_reason(family: KernelFamily, profile: CpuProfile) -> str:
    return (f"{family.what} follow {family.follows}, which ORT does not run on this CPU "
            f"({profile.label})")


def skip_reason(uses: Sequence[FamilyUse], profile: CpuProfile) -> str:
    return "; ".join(family_reason(use.family, profile) for use in uses)


def pytest_runtest_setup(item: pytest.Item) -> None:
    for marker in item.iter_markers("ort_kernels"):
        unknown = [key for key in marker.args if key not in FAMILY_BY_KEY]
        if unknown:
            raise pytest.UsageError(f"ort_kernels: unknown families {unknown}")
        profile = local_cpu_profile()
        for key in marker.args:
            if not FAMILY_BY_KEY[key].holds_on(profile):
                pytest.skip(family_reason(FAMILY_BY_KEY[key], profile))


# Generated models of this process, by model and options: helpers that need a model's
# program or graph again (the skips, ORT's reference) lower it once per configuration.
_GENERATED: dict[tuple[str, str], Generated] = {}
_GENERATED_LIMIT = 64


def model_key(model: onnx.ModelProto | str | Path) -> str:
    """What identifies a model's content: its bytes' digest, or a file's path, size and
    modification time."""
    if isinstance(model, onnx.ModelProto):
        return hashlib.sha256(model.SerializeToString()).hexdigest()
    stat = Path(model).stat()
    return f"{Path(model).resolve()}:{stat.st_size}:{stat.st_mtime_ns}"


def generated(model: onnx.ModelProto | str | Path, **options: Any) -> Generated:
    """generate_sources(model, Options(**options)), once per model and options in this
    process. The result is shared: read it, never change it."""
    key = (model_key(model), repr(Options(**options)))
    gen = _GENERATED.get(key)
    if gen is None:
        if len(_GENERATED) >= _GENERATED_LIMIT:
            _GENERATED.pop(next(iter(_GENERATED)))
        gen = _GENERATED[key] = generate_sources(model, Options(**options))
    return gen


def skip_where_ort_differs(model: onnx.ModelProto | str | Path, **options: Any) -> None:
    """Skip the test where this CPU's ORT computes some node of the model (generated
    with these Options) with other kernels than the generated C follows."""
    graph = generated(model, **options).graph
    profile = local_cpu_profile()
    uses = differences(graph, profile)
    if uses:
        pytest.skip(skip_reason(uses, profile))


def ort_reference(model: onnx.ModelProto | str | Path,
                  samples: Sequence[Mapping[str, NDArray[Any]]],
                  **options: Any) -> list[dict[str, NDArray[Any]]]:
    """ORT's outputs on verify's reference: the model with its QDQ rules set, and with
    int8 weights moved to uint8 where this CPU's ORT saturates u8 x s8 products."""
    gen = generated(model, **options)
    reference = reference_model(gen.model, gen.graph, gen.qdq_rules)
    feeds = [{t.name: np.asarray(s[t.name]).astype(np.dtype(t.dtype))
              for t in gen.program.inputs} for s in samples]
    return run_ort(reference.model, feeds, config=reference.config)


@pytest.fixture(autouse=True)
def _verify_skips_where_ort_differs(request: pytest.FixtureRequest,
                                    monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """codegen.verify on a model that this CPU's ORT computes with other kernels than
    the generated C follows skips the test (a safety net behind skip_where_ort_differs).
    Where ORT runs them all, as on this project's CI, it never fires."""
    if request.node.get_closest_marker("cpu_differences_expected") is None:
        real = api.verify

        def verify(*args: Any, **kwargs: Any) -> VerifyReport:
            report = real(*args, **kwargs)
            if report.cpu_differences:
                profile = local_cpu_profile()
                pytest.skip("; ".join(family_reason(FAMILY_BY_KEY[key], profile)
                                      for key in report.cpu_differences))
            return report

        monkeypatch.setattr(api, "verify", verify)
        monkeypatch.setattr(codegen, "verify", verify)
    yield


@pytest.fixture
def cpu_profile() -> CpuProfile:
    """The CPU profile the tests run under (detected, or forced)."""
    return local_cpu_profile()


@pytest.fixture
def sanitize() -> tuple[str, ...]:
    return SANITIZE


@pytest.fixture
def repo_root() -> Path:
    return Path(__file__).resolve().parent.parent
