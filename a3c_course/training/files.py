"""One atomic write for every file a run keeps: a checkpoint, the optimizer's state, a snapshot,
a figure, a video.

    replace_atomically(path, lambda temp: torch.save(payload, temp))

The content goes to a temporary file beside path, is flushed to the disk (fsync), and only then
renamed over path, and the folder's entry is flushed too. A reader sees the old file or the new
one, never half of one: not after a crash, a full disk, Ctrl-C or a power cut. On any error the
temporary file is removed and path is left as it was.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

READABLE = 0o644  # mkstemp makes files only their owner can read; a run's files are for sharing


def replace_atomically(path: str | os.PathLike, write: Callable[[Path], object]) -> Path:
    """Call write(temp) for a temporary file beside path (with path's suffix, for writers that
    choose a format by it), make it durable, then rename it to path; return path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp_name = tempfile.mkstemp(
        dir=path.parent, prefix=f".{path.name}.", suffix=f".tmp{path.suffix}"
    )
    os.close(handle)
    temp = Path(temp_name)
    try:
        os.chmod(temp, READABLE)
        write(temp)
        _fsync(temp)
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    _fsync_folder(path.parent)
    return path


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
