"""The command line run inside the test process: codegen.cli.main with its standard
streams captured and its exit status returned, as a subprocess.CompletedProcess.

It runs the same code as `onnx2mcu ...` without the second or so an interpreter takes to
start and import onnx. Each file that runs many cases this way keeps at least one case
through a real subprocess (the console entry point, what the interpreter itself prints).
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

from codegen import cli


@contextlib.contextmanager
def working_directory(folder: Path | None) -> Iterator[None]:
    previous = os.getcwd()
    if folder is not None:
        os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(previous)


def run_cli(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    argv = [str(arg) for arg in args]
    out, err = io.StringIO(), io.StringIO()
    with working_directory(cwd), contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err):
        try:
            status = cli.main(argv)
        except SystemExit as exc:  # argparse's usage errors
            status = exc.code if isinstance(exc.code, int) else 1
    return subprocess.CompletedProcess(["onnx2mcu", *argv], status, out.getvalue(),
                                       err.getvalue())
