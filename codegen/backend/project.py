"""Every file and folder a command writes goes through here, so that nothing of the
user's is lost:

- never half-written: everything goes to a temporary sibling first (named with the
  writing process's id) and is moved into place by rename at the end; temporaries of a
  process that no longer runs (killed outright) are removed by the next write beside them;
- never over a user's file or a non-empty folder without --force;
- never onto an input of the command, even with --force: an output file that is one of
  the inputs, or an output folder that holds one, is refused;
- an output that is a symbolic link is followed: the file or folder it points to is
  written and the link kept (a dangling link is refused).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from codegen.errors import OutputError


def _is_nonempty_dir(path: Path) -> bool:
    return path.is_dir() and any(path.iterdir())


def followed(out: Path) -> Path:
    """The path an output is written at: `out` itself, or where its symbolic links lead
    (so that a link to a folder elsewhere writes there and stays a link)."""
    out = Path(out).absolute()
    if not out.is_symlink():
        return out
    target = out.resolve()
    if not target.parent.is_dir():
        raise OutputError(f"{out} is a symbolic link to {target}, whose folder does not "
                          "exist")
    return target


def source_paths(*sources: object) -> list[Path]:
    """The files among a command's inputs (a model or data set given by path; arrays and
    protos in memory are not files)."""
    return [Path(os.fsdecode(s)) for s in sources
            if isinstance(s, (str, os.PathLike)) and not isinstance(s, bytes)]


def check_not_an_input(out: Path, inputs: Sequence[Path], folder: bool) -> None:
    """An output never replaces an input of the command: not the file itself, and for a
    folder, nothing it holds (the model beside its generated project, a runtime)."""
    real = Path(out).resolve()
    for given in inputs:
        source = Path(given).resolve()
        if source == real or (folder and real in source.parents):
            what = "is" if source == real else "holds"
            raise OutputError(f"{out} {what} {given}, an input of this command: it is "
                              "never replaced, even with --force; choose another output")


def check_output_dir(out: Path, force: bool, inputs: Sequence[Path] = ()) -> Path:
    """Refuse before any work what write_project would refuse; the folder to write."""
    target = followed(out)
    if target.exists() and not target.is_dir():
        raise OutputError(f"{out} exists and is not a folder")
    check_not_an_input(target, inputs, folder=True)
    if _is_nonempty_dir(target):
        if not force:
            raise OutputError(f"{out} is not empty; pass --force to replace its contents")
        locked = read_only_folder(target)
        if locked is not None:
            raise OutputError(f"{out} cannot be replaced: {locked} is read-only")
    return target


def read_only_folder(root: Path) -> Path | None:
    """A folder in `root` (itself included) whose entries cannot be removed: replacing
    `root` would leave its old copy half-removed beside it."""
    for folder, _, _ in os.walk(root):
        if not os.access(folder, os.W_OK | os.X_OK):
            return Path(folder)
    return None


def write_files(root: Path, files: Mapping[str, bytes]) -> None:
    for rel, data in sorted(files.items()):
        path = root / rel
        if ".." in Path(rel).parts or Path(rel).is_absolute():
            raise OutputError(f"refusing to write outside the output folder: {rel}")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def missing_parents(path: Path) -> list[Path]:
    """The ancestors of `path` that do not exist yet, outermost first."""
    return [p for p in reversed(path.parents) if not p.exists()]


def remove_if_empty(folders: list[Path]) -> None:
    """Remove the folders that are still empty, innermost first."""
    for folder in reversed(folders):
        try:
            folder.rmdir()
        except OSError:  # not empty, or already gone: keep what is not ours
            return


def write_project(out: Path, files: Mapping[str, bytes], force: bool = False,
                  inputs: Sequence[Path] = ()) -> None:
    """Atomically make `out` contain exactly `files`. On failure or interruption, nothing
    is left: not the staging folder, nor the parent folders created for `out`."""
    out = check_output_dir(out, force, inputs)
    created = missing_parents(out)
    try:
        _replace_folder(out, files)
    except BaseException as exc:
        remove_if_empty(created)
        if isinstance(exc, OSError):
            raise OutputError(f"cannot write {out}: {exc.strerror or exc}") from None
        raise


@contextmanager
def signals_deferred() -> Iterator[None]:
    """SIGINT and SIGTERM held back (delivered at the end) while the folders are swapped
    and the replaced one removed: an interruption inside that removal would leave half
    of the old folder behind. Only the main thread of a POSIX process can do it."""
    if (not hasattr(signal, "pthread_sigmask")
            or threading.current_thread() is not threading.main_thread()):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def temporary_prefix(out: Path, kind: str) -> str:
    """The name of a temporary beside `out` starts so: hidden, the output's name, what it
    is (tmp, old), the writing process's id."""
    return f".{out.name}.{kind}-{os.getpid()}-"


def is_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def remove_dead_temporaries(out: Path) -> None:
    """The temporaries beside `out` whose process no longer runs (a SIGKILL leaves them):
    removed. Those of a running process (another write in progress) stay."""
    try:
        entries = list(out.parent.iterdir())
    except OSError:
        return
    for entry in entries:
        for kind in ("tmp", "old"):
            prefix = f".{out.name}.{kind}-"
            if not entry.name.startswith(prefix):
                continue
            pid = entry.name[len(prefix):].split("-", 1)[0]
            if not pid.isdigit() or is_running(int(pid)) or entry.is_symlink():
                continue
            if entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)


def new_folder(parent: Path, prefix: str) -> Path:
    """A new empty folder in `parent` with a unique name starting with `prefix`. Not
    tempfile.mkdtemp: its mode 0700 would stick to the folder once renamed into place;
    os.mkdir gives 0777 less the user's umask, as any folder the user makes."""
    for _ in range(100):
        folder = parent / f"{prefix}{secrets.token_hex(4)}"
        try:
            folder.mkdir()
        except FileExistsError:
            continue
        return folder
    raise FileExistsError(f"no free name for a folder {prefix}* in {parent}")


def _replace_folder(out: Path, files: Mapping[str, bytes]) -> None:
    """Write `files` into a hidden sibling of `out`, then swap it in by rename."""
    out.parent.mkdir(parents=True, exist_ok=True)
    remove_dead_temporaries(out)
    staging = new_folder(out.parent, temporary_prefix(out, "tmp"))
    old: Path | None = None
    swapped = False
    try:
        write_files(staging, files)
        with signals_deferred():
            if out.exists():
                old = new_folder(out.parent, temporary_prefix(out, "old"))
                os.rmdir(old)
                os.rename(out, old)
            os.rename(staging, out)
            swapped = True
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
                old = None
    except BaseException as exc:
        if swapped and isinstance(exc, KeyboardInterrupt):
            # A signal held back during the swap arrives as it ends: the output is whole,
            # and the message says so (cli.interrupted_status).
            exc.completed_output = out  # type: ignore[attr-defined]
        if old is not None and old.exists() and not out.exists():
            os.rename(old, out)
            old = None
        shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)


def check_output_file(out: Path, force: bool, inputs: Sequence[Path] = ()) -> Path:
    """Refuse to replace a user's file unless forced, an input of the command ever, and
    never replace a folder. The file to write (symbolic links followed)."""
    target = followed(out)
    if target.is_dir():
        raise OutputError(f"{out} is a folder")
    check_not_an_input(target, inputs, folder=False)
    if target.exists() and not force:
        raise OutputError(f"{out} exists; pass --force to replace it")
    return target


def write_output_file(out: Path, data: bytes, force: bool = False,
                      inputs: Sequence[Path] = ()) -> Path:
    """Write one file atomically: a temporary sibling renamed into place, so a failure
    never leaves half a file (nor an old file half-replaced)."""
    return write_output_with(out, lambda path: path.write_bytes(data), force, inputs)


def write_output_with(out: Path, write: Callable[[Path], object], force: bool = False,
                      inputs: Sequence[Path] = ()) -> Path:
    """As write_output_file, the file made by `write(path)` (a library's own saver).
    Returns the path written (symbolic links followed)."""
    target = check_output_file(out, force, inputs)
    created = missing_parents(target)
    # Not mkstemp: its 0600 mode would stick to the file; a new file keeps the user's umask.
    staging = target.with_name(f"{temporary_prefix(target, 'tmp')}{secrets.token_hex(4)}")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        remove_dead_temporaries(target)
        write(staging)
        os.replace(staging, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            staging.unlink(missing_ok=True)
        remove_if_empty(created)
        if isinstance(exc, OSError):
            raise OutputError(f"cannot write {out}: {exc.strerror or exc}") from None
        raise
    return target
