"""One atomic write for every file a run keeps: a checkpoint, the optimizer's state, a snapshot,
a figure, a video.

    replace_atomically(path, lambda temp: figure.savefig(temp))   # write(temp) writes the content
    save_torch(payload, path)                                      # a torch.save payload

The content goes to a temporary file beside path, is flushed to the disk (fsync), and only then
renamed over path, and the folder's entry is flushed too. A reader sees the old file or the new
one, never half of one: not after a crash, a full disk, Ctrl-C or a power cut. On any error the
temporary file is removed, path is left as it was, and a StorageError says in one line which file
could not be written, why, and what to do. A writer killed outright (SIGKILL, a machine gone) can
leave its temporary file behind; remove_stray_temporaries clears a folder of them.
"""

from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

READABLE = 0o644  # mkstemp makes files only their owner can read; a run's files are for sharing
TEMPORARY = ".tmp"  # in every temporary file's name: .<name>.<random>.tmp<suffix>


class StorageError(OSError):
    """A file could not be written: its message is one line naming the file, why, and what to do."""

    def __init__(self, message: str, code: int | None = None):
        super().__init__(message)
        self.errno = code

    def __str__(self) -> str:
        return self.args[0]


def storage_error(path: str | os.PathLike, error: OSError) -> StorageError:
    """The StorageError for an OSError met while writing path."""
    path = Path(path)
    if isinstance(error, StorageError):
        return error
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        message = (
            f"no space left on the disk of {path.parent} to write {path.name}: free some space "
            "there, or give the run a folder on another disk (--out)"
        )
    elif error.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        message = (
            f"cannot write {path}: {error.strerror or error}; give the run a folder you can "
            "write to (--out)"
        )
    elif error.errno == errno.ENOENT and not path.parent.exists():
        message = f"cannot write {path}: its folder {path.parent} no longer exists"
    else:
        message = f"cannot write {path}: {error.strerror or error}"
    return StorageError(message, error.errno)


def replace_atomically(path: str | os.PathLike, write: Callable[[Path], object]) -> Path:
    """Call write(temp) for a temporary file beside path (with path's suffix, for writers that
    choose a format by it), make it durable, then rename it to path; return path."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temp_name = tempfile.mkstemp(
            dir=path.parent, prefix=f".{path.name}.", suffix=f"{TEMPORARY}{path.suffix}"
        )
    except OSError as error:
        raise storage_error(path, error) from error
    os.close(handle)
    temp = Path(temp_name)
    try:
        os.chmod(temp, READABLE)
        write(temp)
        _fsync(temp)
        os.replace(temp, path)
    except BaseException as error:
        temp.unlink(missing_ok=True)
        cause = _os_error_in(error)
        if cause is not None:
            raise storage_error(path, cause) from error
        raise
    _fsync_folder(path.parent)
    return path


def _os_error_in(error: BaseException) -> OSError | None:
    """The OSError behind error, if any: torch.save on a full disk raises its zip writer's
    RuntimeError ("unexpected pos ...") while handling the OSError that caused it."""
    while error is not None:
        if isinstance(error, OSError):
            return error
        error = error.__cause__ or error.__context__
    return None


def remove_stray_temporaries(folder: str | os.PathLike) -> list[Path]:
    """Remove the temporary files that writers killed mid-write left in folder (call it only while
    no writer can be at work there: the run folder held); return those removed."""
    strays = [
        p for p in Path(folder).glob(f".*{TEMPORARY}*") if p.is_file() and p.name.count(".") >= 3
    ]
    for stray in strays:
        stray.unlink(missing_ok=True)
    return strays


def save_torch(payload: Any, path: str | os.PathLike) -> Path:
    """torch.save(payload) to path, atomically. Through a Python file object: a full disk then
    raises the OSError behind the zip writer's error (torch's own file writer only says
    "iostream error")."""

    def write(temp: Path) -> None:
        with open(temp, "wb") as file:
            torch.save(payload, file)

    return replace_atomically(path, write)


def _fsync(path: Path) -> None:
    """Flush a written file's content to the disk."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _fsync_folder(folder: Path) -> None:
    """Make the rename itself durable (POSIX); a no-op where folders cannot be opened."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)
