"""The command line as a Unix tool: a closed standard output (`onnx2mcu boards | head -1`)
ends the command quietly with status 141, as a process killed by SIGPIPE."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from codegen import cli

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "tiny_cnn_qop.onnx"
COMMAND = [sys.executable, "-m", "codegen.cli"]
PRINTING_COMMANDS = {
    "boards": ["boards"],
    "inspect": ["inspect", str(EXAMPLE)],
    "report": ["report", str(EXAMPLE)],
}


@pytest.mark.parametrize("buffered", [True, False], ids=["buffered", "unbuffered"])
@pytest.mark.parametrize("command", sorted(PRINTING_COMMANDS))
def test_reader_gone_before_the_first_write(command: str, buffered: bool) -> None:
    """The read end of the pipe is closed before onnx2mcu starts: every write fails."""
    env = dict(os.environ)
    env.pop("PYTHONUNBUFFERED", None)
    if not buffered:
        env["PYTHONUNBUFFERED"] = "1"
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = subprocess.run([*COMMAND, *PRINTING_COMMANDS[command]], stdout=write_end,
                                stderr=subprocess.PIPE, text=True, env=env, timeout=300,
                                check=False)
    finally:
        os.close(write_end)
    assert result.returncode == cli.BROKEN_PIPE_STATUS == 141, result.stderr
    assert result.stderr == ""


@pytest.mark.parametrize("command", ["boards", "inspect"])
def test_piped_into_head(command: str) -> None:
    """`onnx2mcu ... | head -1`: the first line, and nothing on stderr. Whether head has
    gone before the last write is a race, so 0 and 141 are both right."""
    producer = subprocess.Popen([*COMMAND, *PRINTING_COMMANDS[command]],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert producer.stdout is not None and producer.stderr is not None
    head = subprocess.run(["head", "-1"], stdin=producer.stdout, capture_output=True,
                          text=True, timeout=300, check=False)
    producer.stdout.close()  # head's copy was the only reader left
    stderr = producer.stderr.read().decode()
    producer.stderr.close()
    assert producer.wait(timeout=300) in (0, 141), stderr
    assert stderr == ""
    expected = {"boards": "board ", "inspect": "model "}[command]
    assert head.stdout.startswith(expected), head.stdout


def test_broken_pipe_of_our_own_is_an_internal_error(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Only a closed standard output is the reader having had enough; a BrokenPipeError
    from anything else (stdout still open) is a bug and says so."""
    def broken(args: object) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setitem(cli.COMMANDS, "boards", broken)
    assert cli.main(["boards"]) == 3
    assert "internal error: BrokenPipeError" in capsys.readouterr().err
