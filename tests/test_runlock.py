"""One run per folder: a second run into a folder in use stops at once and writes nothing there;
the hold ends however its holder ends (normal end, error, SIGKILL), children included."""

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil
import pytest
from process_tools import children_of, wait_for

from a3c_course.lessons.panels import TrainingPanel
from a3c_course.training.checkpoint import load_checkpoint
from a3c_course.training.config import TrainConfig
from a3c_course.training.runlock import LOCK_NAME, RunFolderInUse, hold_run_folder, holder_of
from a3c_course.training.trainer import train

COMMAND = str(Path(sys.executable).parent / "a3c-course")
CARTPOLE_RUN = [
    "train", "--game", "CartPole-v1", "--workers", "2", "--envs-per-worker", "2",
    "--hidden-size", "16", "--eval-episodes", "0", "--quiet", "--no-report",
]  # fmt: skip


def folder_state(folder: Path) -> dict:
    """Every file under folder with its size and modification time."""
    return {
        str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in folder.rglob("*")
    }


def test_a_second_hold_in_the_same_process_is_refused_with_the_holder_named(tmp_path):
    with hold_run_folder(tmp_path / "run"):
        holder = holder_of(tmp_path / "run")
        assert holder["pid"] == os.getpid() and holder["host"] and holder["started"]
        with pytest.raises(RunFolderInUse) as caught:
            with hold_run_folder(tmp_path / "run"):
                pass
        message = str(caught.value)
        assert f"the run folder {tmp_path / 'run'} is in use by another training run" in message
        assert f"process {os.getpid()} on " in message and "another folder (--out)" in message
    with hold_run_folder(tmp_path / "run"):  # released at the end of the block
        pass


def test_the_hold_is_released_when_the_block_raises(tmp_path):
    with pytest.raises(KeyError):
        with hold_run_folder(tmp_path):
            raise KeyError("a run that fails")
    with hold_run_folder(tmp_path):
        pass


def test_train_into_a_held_folder_writes_nothing(tmp_path):
    config = TrainConfig(game="CartPole-v1", hidden_size=16, max_steps=500, out_dir=str(tmp_path))
    with hold_run_folder(tmp_path):
        before = folder_state(tmp_path)
        for resume in (False, True):
            with pytest.raises(RunFolderInUse, match=f"{tmp_path} is in use"):
                train(config, progress=False, resume=resume)
        assert folder_state(tmp_path) == before


def test_the_training_panel_shows_the_folder_in_use(tmp_path):
    panel = TrainingPanel(TrainConfig(game="CartPole-v1", max_steps=500, out_dir=str(tmp_path)))
    with hold_run_folder(tmp_path):
        panel.start()
        assert panel.wait(30)
    assert "RunFolderInUse" in panel.error and "is in use by another training run" in panel.error
    assert "in use by another training run" in panel.outcome.value
    assert not (tmp_path / "metrics.jsonl").exists()


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_two_processes_racing_for_one_folder(tmp_path):
    """Two `a3c-course train` into one folder, the second started as the first runs: the second
    exits with status 2 naming the first, and the first's files are its own."""
    out = tmp_path / "same"
    first = subprocess.Popen(
        [COMMAND, *CARTPOLE_RUN, "--minutes", "0.15", "--seed", "1", "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for(lambda: holder_of(out).get("pid") == first.pid and (out / "metrics.jsonl").exists())
    second = subprocess.run(
        [COMMAND, *CARTPOLE_RUN, "--minutes", "0.5", "--seed", "2", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert second.returncode == 2
    assert (
        f"error: the run folder {out} is in use by another training run (process {first.pid}"
        in (second.stderr)
    )
    stdout, stderr = first.communicate(timeout=120)
    assert first.returncode == 0, stderr
    assert json.loads((out / "config.json").read_text())["seed"] == 1
    assert load_checkpoint(out / "checkpoint.pt").config.seed == 1
    assert all(json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines())


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_holder_killed_with_sigkill_leaves_no_hold_and_no_process(tmp_path):
    """The parent SIGKILLed mid-run (a snapshot and a checkpoint every second): its workers notice
    and exit, and the run resumes at once."""
    out = tmp_path / "run"
    process = subprocess.Popen(
        [
            COMMAND,
            *CARTPOLE_RUN,
            "--minutes",
            "5",
            "--eval-episodes",
            "1",
            "--eval-mode",
            "after",
            "--eval-interval-s",
            "1",
            "--out",
            str(out),
        ],  # fmt: skip
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for(lambda: (out / "checkpoint.pt").exists() and len(children_of(process.pid)) == 2)
    workers = children_of(process.pid)
    process.send_signal(signal.SIGKILL)
    process.wait(10)
    with hold_run_folder(out):  # free at once, though the workers may still be running
        pass
    gone, alive = psutil.wait_procs(workers, timeout=15)
    assert alive == []
    resumed = subprocess.run(
        [
            COMMAND,
            *CARTPOLE_RUN,
            "--resume",
            "--minutes",
            "0.05",
            "--eval-episodes",
            "1",
            "--out",
            str(out),
        ],  # fmt: skip
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr


def test_forked_children_do_not_keep_the_hold(tmp_path):
    """A holder that dies while its forked child lives on: the child closed its copy of the lock
    file, so the folder is free."""
    pid_file = tmp_path / "child.pid"
    script = textwrap.dedent(
        f"""
        import multiprocessing, os, pathlib, time
        from a3c_course.training.runlock import hold_run_folder
        with hold_run_folder({str(tmp_path)!r}):
            child = multiprocessing.get_context("fork").Process(target=time.sleep, args=(60,))
            child.start()
            pathlib.Path({str(pid_file)!r}).write_text(str(child.pid))
            time.sleep(1.0)  # the child is under way
            os._exit(0)  # dies holding the folder, without releasing it
        """
    )
    subprocess.run([sys.executable, "-c", script], stdout=subprocess.DEVNULL, timeout=30)
    child = psutil.Process(int(pid_file.read_text()))
    try:
        assert child.is_running() and child.status() != psutil.STATUS_ZOMBIE
        with hold_run_folder(tmp_path):
            pass
    finally:
        child.kill()
    assert (tmp_path / LOCK_NAME).exists()
