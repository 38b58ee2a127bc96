"""The command line as a Unix tool: a closed standard output (`onnx2mcu boards | head -1`)
ends the command quietly with status 141, as a process killed by SIGPIPE; the folders
and files written for the user take the user's umask."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from codegen import cli

REPO = Path(__file__).resolve().parents[2]
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


# --------------------------------------------------------------------------------------
# What onnx2mcu writes for the user takes the user's umask, like any file they make
# --------------------------------------------------------------------------------------

def modes(root: Path) -> dict[str, int]:
    """The permission bits of `root` and of everything under it, by relative path."""
    found = {".": stat.S_IMODE(root.stat().st_mode)}
    for path in sorted(root.rglob("*")):
        found[str(path.relative_to(root))] = stat.S_IMODE(path.stat().st_mode)
    return found


@pytest.mark.parametrize("umask,folder_mode,file_mode",
                         [(0o022, 0o755, 0o644), (0o077, 0o700, 0o600)],
                         ids=["umask022", "umask077"])
def test_outputs_follow_the_umask(umask: int, folder_mode: int, file_mode: int,
                                  tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    np.savez(tmp_path / "in.npz", input=np.zeros((1, 3, 32, 32), np.float32))
    previous = os.umask(umask)
    try:
        commands = [
            ["generate", str(EXAMPLE), "-o", str(tmp_path / "project")],
            ["convert", str(EXAMPLE), "-o", str(tmp_path / "converted.onnx")],
            ["report", str(EXAMPLE), "--format", "html", "--output", str(tmp_path / "r.html"),
             "--svg", str(tmp_path / "arena.svg")],
            ["run", str(EXAMPLE), "--inputs", str(tmp_path / "in.npz"), "--output",
             str(tmp_path / "out.npz")],
        ]
        for command in commands:
            assert cli.main(command) == 0, capsys.readouterr().err
        # Replacing a project keeps to the umask too (a new staging folder swapped in).
        assert cli.main(["generate", str(EXAMPLE), "-o", str(tmp_path / "again"),
                         "--force"]) == 0
        assert cli.main(["generate", str(EXAMPLE), "-o", str(tmp_path / "again"),
                         "--force"]) == 0
    finally:
        os.umask(previous)
    for project in ("project", "again"):
        written = modes(tmp_path / project)
        folders = {p for p in written if (tmp_path / project / p).is_dir()}
        assert {p: m for p, m in written.items() if p in folders} == dict.fromkeys(
            folders, folder_mode)
        assert {p: m for p, m in written.items() if p not in folders} == {
            p: file_mode for p in written if p not in folders}
        assert len(written) > len(folders) > 1  # the runtime/ subfolder and files
    for name in ("converted.onnx", "r.html", "arena.svg", "out.npz"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == file_mode, name


def test_ctrl_c_while_still_importing_is_one_line() -> None:
    """SIGINT while the console script is still importing numpy, onnx and the rest: the
    one line and status 130 of any interrupted command, no traceback."""
    import shutil
    import signal
    import time

    script = shutil.which("onnx2mcu", path=str(Path(sys.executable).parent))
    assert script is not None
    process = subprocess.Popen([script, "boards"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    time.sleep(0.3)  # the interpreter has started; the imports take about a second
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    if process.returncode == 0:
        pytest.skip("the imports had finished before the signal (a very fast machine)")
    assert process.returncode == 130 and "Traceback" not in err, err
    assert err.strip() == "onnx2mcu: interrupted by SIGINT"
