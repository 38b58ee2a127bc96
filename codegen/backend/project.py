"""Write a generated project to disk without ever leaving a half-written folder or
overwriting a user's files: everything goes to a temporary sibling folder first and is
moved into place by rename at the end."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from codegen.errors import OutputError


def _is_nonempty_dir(path: Path) -> bool:
    return path.is_dir() and any(path.iterdir())


def check_output_dir(out: Path, force: bool) -> None:
    if out.exists() and not out.is_dir():
        raise OutputError(f"{out} exists and is not a folder")
    if _is_nonempty_dir(out) and not force:
        raise OutputError(f"{out} is not empty; pass --force to replace its contents")


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


def write_project(out: Path, files: Mapping[str, bytes], force: bool = False) -> None:
    """Atomically make `out` contain exactly `files`. On failure or interruption, nothing
    is left: not the staging folder, nor the parent folders created for `out`."""
    out = Path(out).absolute()
    check_output_dir(out, force)
    created = missing_parents(out)
    try:
        _replace_folder(out, files)
    except BaseException:
        remove_if_empty(created)
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
    staging = new_folder(out.parent, f".{out.name}.tmp-")
    old: Path | None = None
    try:
        write_files(staging, files)
        with signals_deferred():
            if out.exists():
                old = new_folder(out.parent, f".{out.name}.old-")
                os.rmdir(old)
                os.rename(out, old)
            os.rename(staging, out)
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
                old = None
    except BaseException:
        if old is not None and old.exists() and not out.exists():
            os.rename(old, out)
            old = None
        shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)


def check_output_file(out: Path, force: bool) -> None:
    """Refuse to replace a user's file unless forced, and never replace a folder."""
    if out.is_dir():
        raise OutputError(f"{out} is a folder")
    if out.exists() and not force:
        raise OutputError(f"{out} exists; pass --force to replace it")


def write_output_file(out: Path, data: bytes, force: bool = False) -> None:
    """Write one file atomically: a temporary sibling renamed into place, so a failure
    never leaves half a file (nor an old file half-replaced)."""
    check_output_file(out, force)
    out.parent.mkdir(parents=True, exist_ok=True)
    # Not mkstemp: its 0600 mode would stick to the file; "xb" keeps the user's umask.
    staging = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    staging.unlink(missing_ok=True)  # left by a killed run of this process id
    try:
        with staging.open("xb") as f:
            f.write(data)
        os.replace(staging, out)
    except BaseException:
        staging.unlink(missing_ok=True)
        raise
