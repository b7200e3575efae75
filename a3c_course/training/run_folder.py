"""A run folder while its run trains: the metrics log, whether the folder is still there, and what
it holds if the run must stop because its files cannot be written.

    log = MetricsLog(out_dir / "metrics.jsonl")    # one JSON line a record, on disk once written
    watch = FolderWatch(out_dir)                   # watch.check(): StorageError once it is deleted
    what_is_kept(out_dir)                          # "kept: checkpoint.pt of 12,340 agent steps"

A disk that fills up, a folder that cannot be written or is deleted mid-run: each ends the run with
one StorageError line that names the path, what to do, and what the folder still holds.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from a3c_course.training.checkpoint import CHECKPOINT_NAME, CheckpointError, load_checkpoint
from a3c_course.training.files import StorageError, storage_error


class MetricsLog:
    """metrics.jsonl, a line per record, line-buffered: a record written is in the file, and a
    full disk fails the write that meets it (a StorageError), not a later flush. After a failed
    write the log takes no more (the records that the stopping run still receives are dropped):
    the first failure is the one to report."""

    def __init__(self, path: Path, history: list[dict[str, Any]] = ()):
        self.path, self.failed = path, False
        try:
            self.file = open(path, "w", buffering=1)  # noqa: SIM115  closed by close()
        except OSError as error:
            raise storage_error(path, error) from error
        for record in history:
            self.write(record)

    def write(self, record: dict[str, Any]) -> None:
        if self.failed:
            return
        try:
            self.file.write(json.dumps(record) + "\n")
        except OSError as error:
            self.failed = True
            raise storage_error(self.path, error) from error

    def close(self) -> None:
        """Close the file; a failure to flush its last line is no longer worth a second error."""
        try:
            self.file.close()
        except OSError:
            pass


class FolderWatch:
    """Notices that the run folder was deleted (or replaced) while the run trains."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.identity = self._identity()

    def _identity(self) -> tuple[int, int] | None:
        try:
            status = os.stat(self.folder)
        except FileNotFoundError:
            return None
        return status.st_dev, status.st_ino

    def check(self) -> None:
        """StorageError once the folder is gone or is another folder than the run's."""
        if self._identity() != self.identity:
            raise FolderDeleted(
                f"the run folder {self.folder} was deleted while the run trained: its metrics and "
                "snapshots are gone; keep the folder while a run trains in it"
            )


class FolderDeleted(StorageError):
    """The run folder was deleted mid-run (the run saves its network again in a new one)."""


def what_is_kept(folder: Path) -> str:
    """What a stopped run's folder holds for it: its checkpoint's steps, or that it has none."""
    path = folder / CHECKPOINT_NAME
    try:
        steps = load_checkpoint(path).metadata.get("steps")
    except CheckpointError:
        return f"no checkpoint was kept in {folder}"
    return f"kept: {path} of {steps:,} agent steps" if steps is not None else f"kept: {path}"
