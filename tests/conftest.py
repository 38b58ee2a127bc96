"""Shared test set-up: an isolated build cache, and the sanitizer flags every generated
project is compiled with in the tests."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

# Every generated project in the tests is compiled with the strict warning flags (always
# on) and run under AddressSanitizer and UndefinedBehaviorSanitizer; any report aborts.
SANITIZE = ("-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined",
            "-fno-sanitize-recover=all")


def pytest_configure(config: pytest.Config) -> None:
    if "ONNX2MCU_CACHE_DIR" not in os.environ:
        os.environ["ONNX2MCU_CACHE_DIR"] = tempfile.mkdtemp(prefix="onnx2mcu-test-cache-")
    os.environ.setdefault("ASAN_OPTIONS", "detect_leaks=0:abort_on_error=0")
    os.environ.setdefault("UBSAN_OPTIONS", "print_stacktrace=1")


@pytest.fixture
def sanitize() -> tuple[str, ...]:
    return SANITIZE


@pytest.fixture
def repo_root() -> Path:
    return Path(__file__).resolve().parent.parent
