"""One training run per folder at a time, held with the operating system's file lock.

    with hold_run_folder("runs/pong"):      # RunFolderInUse if another run holds it
        ...train, write into runs/pong...

The hold is a lock on the file `<folder>/.a3c-run.lock`: `flock` on Linux and macOS, `msvcrt.locking`
on Windows. The kernel releases such a lock when its holder exits in any way, Ctrl-C, a crash or
SIGKILL included, so a dead run can never lock the next one out (a PID file can go stale; this
cannot). The lock file also carries who holds it (process id, host, start time, command line), read
only to say so in the error: whether the folder is in use is decided by the lock alone.

Two holds of one folder conflict even inside one process (two training panels in one notebook), as
each opens the file anew. Worker processes forked by the holder inherit the open file; they close
their copy at once (os.register_at_fork), so the hold ends with the run's own process, not with its
last child.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from a3c_course.training.files import storage_error

LOCK_NAME = ".a3c-run.lock"

__all__ = ["LOCK_NAME", "RunFolderInUse", "hold_run_folder", "holder_of"]

if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _try_lock(descriptor: int) -> bool:
        try:
            msvcrt.locking(descriptor, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _unlock(descriptor: int) -> None:
        os.lseek(descriptor, 0, os.SEEK_SET)
        msvcrt.locking(descriptor, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _try_lock(descriptor: int) -> bool:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _unlock(descriptor: int) -> None:
        fcntl.flock(descriptor, fcntl.LOCK_UN)


class RunFolderInUse(RuntimeError):
    """Another training run holds the folder. .folder is the folder, .holder what the lock says
    of its holder (pid, host, started, command; empty when it could not be read)."""

    def __init__(self, folder: Path, holder: dict):
        who = _describe_holder(holder)
        super().__init__(
            f"the run folder {folder} is in use by another training run ({who}): wait for it to "
            "finish or stop it, or train into another folder (--out)"
        )
        self.folder, self.holder = folder, holder


_HELD: set[int] = set()  # this process's lock descriptors, closed in forked children


def _close_inherited_locks() -> None:
    for descriptor in _HELD:
        try:
            os.close(descriptor)  # the parent's copy keeps the lock
        except OSError:
            pass
    _HELD.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_inherited_locks)


@contextmanager
def hold_run_folder(folder: str | os.PathLike):
    """Hold folder (created if missing) for one run for the duration of the block; raise
    RunFolderInUse at once, writing nothing, when another run holds it."""
    folder = Path(folder)
    lock_path = folder / LOCK_NAME
    try:
        folder.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as error:
        raise storage_error(lock_path, error) from error
    try:
        if not _try_lock(descriptor):
            raise RunFolderInUse(folder, holder_of(folder))
        _HELD.add(descriptor)
        try:
            try:
                _write_holder(descriptor)
            except OSError as error:
                raise storage_error(lock_path, error) from error
            yield lock_path
        finally:
            _HELD.discard(descriptor)
            _unlock(descriptor)
    finally:
        os.close(descriptor)


def holder_of(folder: str | os.PathLike) -> dict:
    """What the lock file says of the run that holds (or last held) folder; {} when unreadable."""
    try:
        return json.loads((Path(folder) / LOCK_NAME).read_text() or "{}")
    except (OSError, ValueError):
        return {}


def _write_holder(descriptor: int) -> None:
    """Record this process as the holder. (Windows' lock on the first byte is mandatory, so there
    another process cannot read the record while it is held: its error says so, without the holder.)"""
    holder = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
        "command": " ".join(sys.argv),
    }
    os.ftruncate(descriptor, 0)
    os.lseek(descriptor, 0, os.SEEK_SET)
    os.write(descriptor, (json.dumps(holder) + "\n").encode())


def _describe_holder(holder: dict) -> str:
    if not holder.get("pid"):
        return "its holder is not recorded"
    text = f"process {holder['pid']} on {holder.get('host', '?')}, started {holder.get('started', '?')}"
    if holder.get("command"):
        text += f": {holder['command']}"
    return text
