"""Nothing of the user's is lost (issue 35): every command that writes goes through one
guarded write (codegen/backend/project.py). An output never lands on an input of the
command, even with --force; never over a user's file or folder without --force; a
symbolic link is followed (the link kept); a temporary left by a killed run is removed
by the next write beside it; the harness refuses an output that is its input."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from cli_inprocess import run_cli

from codegen.backend.project import remove_dead_temporaries, temporary_prefix

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "tiny_cnn_qop.onnx"
ROOT = os.geteuid() == 0 if hasattr(os, "geteuid") else False


def refused(result: subprocess.CompletedProcess[str], *needles: str) -> str:
    """One line, exit code 2, no traceback; the line holds the needles."""
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("onnx2mcu: error: "), result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def model(tmp_path: Path) -> Path:
    """A copy of the example model in a folder of its own, with its bytes remembered."""
    folder = tmp_path / "models"
    folder.mkdir()
    path = folder / "m.onnx"
    shutil.copyfile(EXAMPLE, path)
    return path


@pytest.fixture
def inputs(tmp_path: Path) -> Path:
    path = tmp_path / "in.npz"
    np.savez(path, input=np.zeros((1, 3, 32, 32), np.float32))
    return path


def test_generate_never_replaces_the_folder_holding_the_model(model: Path) -> None:
    before = model.read_bytes()
    refused(run_cli("generate", str(model), "-o", str(model.parent), "--force"),
            "an input of this command", "even with --force")
    assert model.read_bytes() == before and sorted(os.listdir(model.parent)) == ["m.onnx"]
    refused(run_cli("generate", str(model), "-o", str(model.parent.parent), "--force"),
            "holds")
    assert model.read_bytes() == before


def test_generate_never_replaces_its_shared_runtime(model: Path, tmp_path: Path) -> None:
    runtime = tmp_path / "proj" / "runtime"
    assert run_cli("runtime", "-o", str(runtime)).returncode == 0
    files = sorted(os.listdir(runtime))
    refused(run_cli("generate", str(model), "-o", str(tmp_path / "proj"), "--force",
                    "--runtime", str(runtime)), "an input of this command")
    assert sorted(os.listdir(runtime)) == files


@pytest.mark.parametrize("command", ["report", "convert"])
def test_a_file_output_is_never_the_model(command: str, model: Path) -> None:
    before = model.read_bytes()
    flag = "--output" if command == "report" else "-o"
    refused(run_cli(command, str(model), flag, str(model), "--force"),
            "is", "an input of this command")
    assert model.read_bytes() == before


def test_report_svg_is_never_the_model(model: Path, tmp_path: Path) -> None:
    before = model.read_bytes()
    refused(run_cli("report", str(model), "--svg", str(model), "--force"), "an input")
    assert model.read_bytes() == before


def test_quantize_never_writes_over_its_calibration_data(tmp_path: Path) -> None:
    """The output check comes before any work, so even a float model is not needed to see
    the refusal: the calibration file named as the output stays as it was."""
    data = tmp_path / "cal.npz"
    np.savez(data, input=np.zeros((2, 3, 32, 32), np.float32))
    before = data.read_bytes()
    refused(run_cli("quantize", str(EXAMPLE), "-o", str(data), "--calibration", str(data),
                    "--force"), "an input of this command")
    assert data.read_bytes() == before


def test_run_output_needs_force_and_never_takes_an_input(model: Path, inputs: Path,
                                                         tmp_path: Path) -> None:
    out = tmp_path / "out.npz"
    out.write_bytes(b"the user's own file")
    refused(run_cli("run", str(model), "--inputs", str(inputs), "--output", str(out)),
            "exists; pass --force")
    assert out.read_bytes() == b"the user's own file"
    before = inputs.read_bytes()
    refused(run_cli("run", str(model), "--inputs", str(inputs), "--output", str(inputs),
                    "--force"), "an input of this command")
    # numpy's rule adds .npz: "in" names in.npz too
    refused(run_cli("run", str(model), "--inputs", str(inputs), "--output",
                    str(inputs.with_suffix("")), "--force"), "an input of this command")
    assert inputs.read_bytes() == before
    done = run_cli("run", str(model), "--inputs", str(inputs), "--output", str(out),
                   "--force")
    assert done.returncode == 0, done.stderr
    assert list(np.load(out)) and not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]


def test_an_output_link_is_followed_and_kept(model: Path, tmp_path: Path) -> None:
    """-o a symbolic link to a folder: the project is written where the link points and
    the link stays a link (no hidden .old copy, no folder in its place)."""
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    assert run_cli("generate", str(model), "-o", str(link)).returncode == 0
    assert link.is_symlink() and (real / "m.h").is_file()
    assert run_cli("generate", str(model), "-o", str(link), "--force").returncode == 0
    assert link.is_symlink() and (real / "m.h").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "models", "real"]
    report = tmp_path / "report.txt"
    report.symlink_to(tmp_path / "real.txt")
    assert run_cli("report", str(model), "--output", str(report)).returncode == 0
    assert report.is_symlink() and (tmp_path / "real.txt").is_file()


def test_a_dangling_link_into_nowhere_is_refused(model: Path, tmp_path: Path) -> None:
    link = tmp_path / "dangling"
    link.symlink_to(tmp_path / "no" / "such" / "folder")
    refused(run_cli("generate", str(model), "-o", str(link)), "symbolic link")
    assert link.is_symlink() and not (tmp_path / "no").exists()


@pytest.fixture
def read_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder onnx2mcu may not write into. As root (CI runs as root), permissions do not
    stop anything, so the two system calls that would refuse are made to refuse there."""
    locked = tmp_path / "locked"
    locked.mkdir()
    if not ROOT:
        locked.chmod(0o555)
        yield locked
        locked.chmod(0o755)
        return
    from codegen.backend import project

    real_access, real_mkdir = os.access, Path.mkdir

    def access(path: object, mode: int, **keywords: object) -> bool:
        inside = Path(os.fsdecode(path)).resolve()  # type: ignore[arg-type]
        if (inside == locked or locked in inside.parents) and mode & os.W_OK:
            return False
        return real_access(path, mode)  # type: ignore[arg-type]

    def mkdir(self: Path, *args: object, **keywords: object) -> None:
        if self.absolute().parent == locked:
            raise PermissionError(13, "Permission denied", str(self))
        real_mkdir(self, *args, **keywords)  # type: ignore[arg-type]

    monkeypatch.setattr(project.os, "access", access)
    monkeypatch.setattr(Path, "mkdir", mkdir)
    yield locked


def test_read_only_places_are_refused_in_one_line(model: Path, read_only: Path,
                                                  tmp_path: Path) -> None:
    """-o inside a read-only folder (PermissionError, an internal error before); --force
    over a folder whose subfolder is read-only (its old copy was left half-removed)."""
    refused(run_cli("generate", str(model), "-o", str(read_only / "out")), "cannot write")
    assert not list(read_only.iterdir())
    old = read_only / "old"
    if ROOT:
        os.makedirs(old / "sub")  # Path.mkdir refuses inside the locked folder now
    else:
        read_only.chmod(0o755)
        (old / "sub").mkdir(parents=True)
    (old / "sub" / "keep.c").write_text("int x;\n")
    if not ROOT:
        (old / "sub").chmod(0o555)
    try:
        refused(run_cli("generate", str(model), "-o", str(old), "--force"), "read-only")
        assert (old / "sub" / "keep.c").is_file()
        assert sorted(p.name for p in read_only.iterdir()) == ["old"]
    finally:
        if not ROOT:
            (old / "sub").chmod(0o755)


def test_temporaries_of_dead_processes_go_on_the_next_write(model: Path,
                                                             tmp_path: Path) -> None:
    """What a SIGKILL leaves (a hidden staging folder or file named with the process id)
    is removed by the next write beside it; a running process's temporaries stay."""
    out = tmp_path / "out"
    gone_pid = 2 ** 22 + 12345  # above Linux's default pid_max: never a running process
    stale = tmp_path / f".out.tmp-{gone_pid}-abcd"
    (stale / "build").mkdir(parents=True)
    stale_file = tmp_path / f".out.old-{gone_pid}-ef01"
    stale_file.write_bytes(b"x" * 1000)
    live = tmp_path / f"{temporary_prefix(out, 'tmp')}beef"
    live.mkdir()
    other = tmp_path / ".unrelated.tmp-1-x"
    other.mkdir()
    remove_dead_temporaries(out)
    assert not stale.exists() and not stale_file.exists()
    assert live.exists() and other.exists()
    live.rmdir()
    assert run_cli("generate", str(model), "-o", str(out)).returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [".unrelated.tmp-1-x", "models",
                                                          "out"]


@pytest.mark.parametrize("command", ["generate", "report"])
def test_an_unwritable_place_is_refused_in_one_line(command: str, model: Path,
                                                    tmp_path: Path) -> None:
    """An output under a regular file (as under a read-only folder, which root, as CI
    runs, could still write): one line, exit code 2, and the file untouched."""
    blocker = tmp_path / "notes.txt"
    blocker.write_text("the user's notes\n")
    flag = "-o" if command == "generate" else "--output"
    refused(run_cli(command, str(model), flag, str(blocker / "out")), "cannot write")
    assert blocker.read_text() == "the user's notes\n"


def test_the_harness_refuses_to_write_over_its_input(model: Path, tmp_path: Path) -> None:
    """build/NAME_main IN.bin IN.bin (or a link to it, or another spelling of its path):
    exit code 2 and the samples kept; opening the output would have truncated them."""
    out = tmp_path / "proj"
    assert run_cli("generate", str(model), "-o", str(out)).returncode == 0
    subprocess.run(["make", "-C", str(out), "-s"], check=True, capture_output=True)
    harness = out / "build" / "m_main"
    samples = tmp_path / "in.bin"
    samples.write_bytes(np.random.default_rng(0).random(3 * 32 * 32, np.float32).tobytes())
    before = samples.read_bytes()
    link = tmp_path / "link.bin"
    link.symlink_to(samples)
    for output in (samples, tmp_path / "." / "in.bin", link):
        result = subprocess.run([str(harness), str(samples), str(output)],
                                capture_output=True, text=True, check=False)
        assert result.returncode == 2 and "is the input" in result.stderr, result.stderr
        assert samples.read_bytes() == before
    result = subprocess.run([str(harness), str(samples), str(tmp_path / "out.bin")],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0 and (tmp_path / "out.bin").stat().st_size > 0


@pytest.mark.parametrize("command", ["run", "verify"])
def test_a_data_file_that_is_not_a_zip_is_named_so(command: str, model: Path,
                                                   tmp_path: Path) -> None:
    """Not "contains pickled data" (numpy's guess for any unknown bytes)."""
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip file at all")
    args = (["--inputs", str(bad), "--output", str(tmp_path / "o.npz")] if command == "run"
            else ["--dataset", str(bad)])
    line = refused(run_cli(command, str(model), *args), "not an .npz file", "zip")
    assert "pickle" not in line


def npz_bomb(path: Path, shape: tuple[int, ...]) -> Path:
    """An .npz whose one array declares `shape` float32 in its header and holds a few
    bytes (what a compressed zero array of that shape would decompress to, without it)."""
    import io
    import zipfile

    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f4", "fortran_order": False, "shape": shape})
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("input.npy", header.getvalue() + bytes(64))
    return path


@pytest.mark.parametrize("command", ["run", "verify", "validate", "quantize"])
def test_a_data_file_bomb_is_refused_from_its_header(command: str, model: Path,
                                                     tmp_path: Path) -> None:
    """A small .npz whose array declares 4 GB: refused from the .npy header, before any
    decompression (verify --dataset died in a MemoryError after 7.4 GB)."""
    bomb = npz_bomb(tmp_path / "bomb.npz", (1024, 1024, 1024))
    args = {"run": ["run", str(model), "--inputs", str(bomb), "--output",
                    str(tmp_path / "o.npz")],
            "verify": ["verify", str(model), "--dataset", str(bomb)],
            "validate": ["validate", str(model), "--float-model", str(model), "--dataset",
                         str(bomb)],
            "quantize": ["quantize", str(REPO / "examples" / "stripes" / "stripes_cnn.onnx"),
                         "-o", str(tmp_path / "q.onnx"), "--calibration", str(bomb)]}
    refused(run_cli(*args[command]), "declare 4294967296 bytes", "--max-data-bytes")
    assert not (tmp_path / "o.npz").exists() and not (tmp_path / "q.onnx").exists()


def test_a_fifo_in_a_data_set_folder_is_refused(model: Path, tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    os.mkfifo(folder / "input.npy")
    refused(run_cli("verify", str(model), "--dataset", str(folder)), "not a regular file")


def test_samples_beyond_the_data_limit_are_refused(model: Path) -> None:
    refused(run_cli("verify", str(model), "--samples", "1000000000"),
            "--samples 1000000000", "--max-data-bytes")


def test_a_signal_held_back_during_the_swap_says_the_output_is_whole(
        model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGINT/SIGTERM are held back while the finished folder is moved in place and
    arrive as that ends: the output is whole, and the message says so."""
    import contextlib

    from codegen.backend import project

    @contextlib.contextmanager
    def delivered_at_the_end() -> Iterator[None]:
        yield
        raise KeyboardInterrupt  # the held-back signal, delivered on unblocking

    monkeypatch.setattr(project, "signals_deferred", delivered_at_the_end)
    out = tmp_path / "out"
    result = run_cli("generate", str(model), "-o", str(out))
    assert result.returncode == 130
    assert result.stderr.strip() == \
        f"onnx2mcu: interrupted by SIGINT after {out} was written whole"
    assert (out / "m.c").is_file() and (out / "Makefile").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["models", "out"]
