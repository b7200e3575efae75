"""Keep a run: zip its folder beside it, copy the zip to Google Drive when Drive is mounted.

    from a3c_course.lessons.keep_run import copy_to_drive, keep_run, unpack_run, zip_run

    zip_path = zip_run("runs/pong")        # runs/pong-1234567-steps.zip
    copy_to_drive(zip_path)                # MyDrive/a3c-course-runs/..., or None: Drive not mounted
    kept = keep_run("runs/pong")           # both, with what to say (kept.lines(in_colab=...))
    unpack_run("pong-1234567-steps.zip")   # a later session: back to runs/pong, ready to replay

A Colab session's files are gone when the session ends; the training and gameplay panels' "Keep
this run" button calls keep_run and then offers the zip for download. From a shell:
`python -m a3c_course.lessons.keep_run runs/pong`.

The zip holds what replaying, evaluating or resuming the run needs: every file at the top of the
folder (checkpoint.pt, best.pt, optimizer.pt, config.json, metrics.jsonl, the report's figure and
video), under the folder's name. Left out: the snapshots/ folder (best.pt is the best of them),
the lock and temporary files (hidden), and earlier zips. The folder is held (runlock) while it is
zipped, so a run training in it cannot change it half-way: that gives RunFolderInUse instead.
"""

from __future__ import annotations

import argparse
import os
import shutil
import zipfile
from dataclasses import dataclass
from pathlib import Path

from a3c_course.lessons.colab import DRIVE_MOUNT, DRIVE_ROOT, in_colab
from a3c_course.training.checkpoint import CHECKPOINT_NAME, CheckpointError, load_checkpoint
from a3c_course.training.files import StorageError, replace_atomically
from a3c_course.training.runlock import RunFolderInUse, hold_run_folder

DRIVE_FOLDER = "a3c-course-runs"  # in MyDrive: every kept run, by its zip's name
COMPRESSED = {".json", ".jsonl", ".txt", ".md", ".csv"}  # the rest (.pt, .png, .mp4) barely shrink


class RunFolderError(ValueError):
    """The folder holds no run to keep: missing, empty, or without a checkpoint."""


def kept_files(run_folder: str | os.PathLike) -> list[Path]:
    """The files zip_run puts in the zip, sorted; RunFolderError when there is no run to keep."""
    folder = Path(run_folder)
    if not folder.is_dir():
        raise RunFolderError(
            f"no run folder {folder}: it does not exist (train a run into it first)"
        )
    files = sorted(
        p for p in folder.iterdir()
        if p.is_file() and not p.name.startswith(".") and p.suffix != ".zip"
    )  # fmt: skip
    if not files:
        raise RunFolderError(f"the run folder {folder} is empty: there is no run to keep")
    if not (folder / CHECKPOINT_NAME).is_file():
        raise RunFolderError(
            f"no {CHECKPOINT_NAME} in {folder}: its run has not saved a network (nothing to replay)"
        )
    return files


def zip_name(run_folder: str | os.PathLike) -> str:
    """<folder>-<steps>-steps.zip: a later or another run of the folder gets another name, so
    keeping it does not overwrite an earlier one (on Drive too)."""
    folder = Path(run_folder)
    try:
        steps = load_checkpoint(folder / CHECKPOINT_NAME).metadata.get("steps")
    except CheckpointError:
        steps = None
    name = folder.resolve().name
    return f"{name}-{steps}-steps.zip" if steps is not None else f"{name}.zip"


def zip_run(run_folder: str | os.PathLike, zip_path: str | os.PathLike | None = None) -> Path:
    """Zip the run's files (kept_files) under the folder's name into zip_path (default: beside the
    folder, zip_name), atomically; return its path."""
    folder = Path(run_folder)
    kept_files(folder)  # the one-line error before anything is held or written
    zip_path = Path(zip_path) if zip_path else folder.parent / zip_name(folder)
    prefix = folder.resolve().name

    def write(temp: Path) -> None:
        with zipfile.ZipFile(temp, "w") as archive:
            for path in kept_files(folder):
                method = zipfile.ZIP_DEFLATED if path.suffix in COMPRESSED else zipfile.ZIP_STORED
                archive.write(path, f"{prefix}/{path.name}", compress_type=method)

    with hold_run_folder(folder):  # RunFolderInUse while a run trains in it
        return replace_atomically(zip_path, write)


def copy_to_drive(
    zip_path: str | os.PathLike, drive_root: str | os.PathLike = DRIVE_ROOT
) -> Path | None:
    """Copy the zip into <drive_root>/a3c-course-runs/ (atomically: a copy cut short by the
    session's end leaves no half zip there) and return the copy; None when drive_root is not
    there, i.e. Google Drive is not mounted."""
    if not Path(drive_root).is_dir():
        return None
    target = Path(drive_root) / DRIVE_FOLDER / Path(zip_path).name
    return replace_atomically(target, lambda temp: shutil.copyfile(zip_path, temp))


def unpack_run(zip_path: str | os.PathLike, into: str | os.PathLike = "runs") -> Path:
    """Unzip a kept run into `into` (runs/pong for pong-...zip); return the run's folder."""
    with zipfile.ZipFile(zip_path) as archive:
        names = archive.namelist()
        top = {name.split("/")[0] for name in names}
        if len(top) != 1 or f"{next(iter(top))}/{CHECKPOINT_NAME}" not in names:
            raise RunFolderError(f"{zip_path} is not a kept run: no <run>/{CHECKPOINT_NAME} in it")
        archive.extractall(into)  # extractall drops absolute paths and ".." from the names
    return Path(into) / top.pop()


@dataclass
class Kept:
    """What keep_run did: the zip, the files in it, and its copy on Drive (None: not mounted)."""

    zip: Path
    files: list[str]
    drive: Path | None

    def lines(self, in_colab: bool) -> list[str]:
        """What to tell the learner, one sentence a line (the panels add the download)."""
        size = self.zip.stat().st_size / 1e6
        lines = [f"Kept {self.zip} ({size:.1f} MB): {', '.join(self.files)}."]
        if self.drive is not None:
            lines.append(f"Copied to Google Drive: {self.drive}")
        elif in_colab:
            lines.append(
                f"To keep runs on Google Drive too, mount it ({DRIVE_MOUNT}) and keep again."
            )
        where = self.drive or self.zip.name  # a later Colab session has Drive, not this disk
        lines.append(
            f"In a later session, unpack_run('{where}') (from a3c_course.lessons.keep_run) puts "
            "the run back in runs/, for the gameplay panel or to resume training."
        )
        return lines


def keep_run(run_folder: str | os.PathLike, drive_root: str | os.PathLike = DRIVE_ROOT) -> Kept:
    """zip_run, then copy_to_drive."""
    zip_path = zip_run(run_folder)
    with zipfile.ZipFile(zip_path) as archive:
        files = [name.split("/", 1)[1] for name in archive.namelist()]
    return Kept(zip_path, files, copy_to_drive(zip_path, drive_root))


def main(argv: list[str] | None = None) -> int:
    """python -m a3c_course.lessons.keep_run RUN_FOLDER [--drive ROOT]"""
    parser = argparse.ArgumentParser(prog="python -m a3c_course.lessons.keep_run", description=(
        "Zip a run folder beside it (and copy the zip to Google Drive when it is mounted)."))  # fmt: skip
    parser.add_argument("run_folder", help="a run's folder, e.g. runs/pong")
    parser.add_argument(
        "--drive", default=str(DRIVE_ROOT), help="Drive's root (default: %(default)s)"
    )
    args = parser.parse_args(argv)
    try:
        kept = keep_run(args.run_folder, args.drive)
    except (RunFolderError, RunFolderInUse, StorageError) as error:
        parser.exit(2, f"error: {error}\n")
    print("\n".join(kept.lines(in_colab())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
