"""Faults a user can cause while training, each answered in one line that names the path and what to
do, with nothing half-written and what is kept named: a full disk (metrics, a snapshot or the
checkpoint, the report), a folder that cannot be written, a run folder deleted mid-run, a kernel
restarted while the training panel trains, a session that ends (every process killed at once).

The disk and the read-only folder are real: small tmpfs filesystems mounted for the test (root
only; elsewhere these tests skip, saying so)."""

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from process_tools import children_of, wait_for

from a3c_course.cli.train import write_report
from a3c_course.training.checkpoint import load_checkpoint
from a3c_course.training.config import TrainConfig
from a3c_course.training.files import TEMPORARY, StorageError
from a3c_course.training.run_folder import FolderDeleted
from a3c_course.training.runlock import hold_run_folder
from a3c_course.training.trainer import train

COMMAND = str(Path(sys.executable).parent / "a3c-course")
CARTPOLE = ["--game", "CartPole-v1", "--workers", "2", "--envs-per-worker", "2",
            "--hidden-size", "16", "--quiet"]  # fmt: skip


@contextlib.contextmanager
def small_disk(tmp_path: Path, size: str, read_only: bool = False):
    """A tmpfs of `size` (e.g. "64k") mounted at tmp_path/disk, unmounted afterwards."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small filesystem needs root")
    place = tmp_path / "disk"
    place.mkdir()
    options = f"size={size}" + (",ro" if read_only else "")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(place)],
                             capture_output=True, text=True)  # fmt: skip
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield place
    finally:
        subprocess.run(["umount", "-l", str(place)], check=False)


def run_cli(*args: str, timeout: float = 150) -> subprocess.CompletedProcess:
    return subprocess.run([COMMAND, "train", *args], capture_output=True, text=True,
                          timeout=timeout)  # fmt: skip


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "error" in line or "warning" in line]


def assert_nothing_half_written(folder: Path) -> None:
    """No temporary file is left, and every .pt file in the folder loads."""
    assert not [p.name for p in folder.rglob(f"*{TEMPORARY}*")]
    for path in folder.rglob("*.pt"):
        if path.name == "optimizer.pt":
            continue
        load_checkpoint(path)  # CheckpointError if cut short


@pytest.mark.slow
def test_a_full_disk_while_writing_the_metrics_ends_the_run_in_one_line(tmp_path):
    with small_disk(tmp_path, "16k") as disk:
        out = disk / "run"
        done = run_cli(*CARTPOLE, "--eval-episodes", "0", "--minutes", "1", "--out", str(out))
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
        [line] = error_lines(done.stderr)
        assert line.startswith(f"a3c-course train: error: no space left on the disk of {out} ")
        assert "write metrics.jsonl" in line and "another disk (--out)" in line
        assert "The run stopped at" in line and f"no checkpoint was kept in {out}" in line
        assert_nothing_half_written(out)


@pytest.mark.slow
def test_a_full_disk_at_a_snapshot_or_the_checkpoint_keeps_what_was_saved_whole(tmp_path):
    with small_disk(tmp_path, "200k") as disk:
        out = disk / "run"
        config = TrainConfig(game="CartPole-v1", workers=2, envs_per_worker=2, hidden_size=64,
                             max_minutes=1, eval_mode="after", eval_interval_s=1, eval_episodes=1,
                             out_dir=str(out))  # fmt: skip
        with pytest.raises(StorageError) as caught:  # in this process: the CLI's line is tested above
            train(config, progress=False)
        line = str(caught.value)
        assert line.startswith(f"no space left on the disk of {out}") and "\n" not in line
        assert ".pt: free some space there" in line and "The run stopped at" in line
        assert_nothing_half_written(out)
        kept = out / "checkpoint.pt"
        assert (f"kept: {kept} of " in line) == kept.exists()


@pytest.mark.slow
def test_a_full_disk_while_writing_the_report_is_a_warning_and_leaves_no_partial_file(
    tmp_path, capsys
):
    with small_disk(tmp_path, "1m") as disk:
        out = disk / "run"
        config = TrainConfig(game="CartPole-v1", workers=1, envs_per_worker=2, hidden_size=16,
                             eval_episodes=0, max_steps=1000, out_dir=str(out))  # fmt: skip
        assert train(config, progress=False).stop_reason == "max_steps"
        filler = disk / "filler"
        with contextlib.suppress(OSError), open(filler, "wb") as file:
            while True:  # fill the disk to its last block
                file.write(b"\0" * 4096)
                file.flush()
        before = sorted(p.name for p in out.iterdir())
        write_report(str(out))
        [line] = error_lines(capsys.readouterr().err)
        assert line.startswith("a3c-course train: warning: no report written: no space left")
        assert "(the checkpoint and the metrics are kept)" in line
        assert sorted(p.name for p in out.iterdir()) == before  # no partial picture or video
        assert_nothing_half_written(out)


@pytest.mark.slow
def test_a_folder_that_cannot_be_written_is_refused_before_anything_starts(tmp_path):
    with small_disk(tmp_path, "64k", read_only=True) as disk:
        done = run_cli(*CARTPOLE, "--steps", "1000", "--out", str(disk / "run"))
        assert done.returncode == 2 and "Traceback" not in done.stderr
        [line] = error_lines(done.stderr)
        assert line == (
            f"a3c-course train: error: cannot write to the output folder {disk / 'run'}: "
            "Read-only file system"
        )
        config = TrainConfig(game="CartPole-v1", max_steps=1000, out_dir=str(disk))
        with pytest.raises(StorageError) as caught:  # train() itself, as the panel calls it
            train(config, progress=False)
        assert str(caught.value) == (
            f"cannot write {disk / '.a3c-run.lock'}: Read-only file system; give the run a folder "
            "you can write to (--out)"
        )


@pytest.mark.slow
def test_a_run_folder_deleted_mid_run_stops_the_run_and_saves_its_network_again(tmp_path):
    out = tmp_path / "run"
    config = TrainConfig(game="CartPole-v1", workers=2, envs_per_worker=2, hidden_size=16,
                         eval_episodes=0, max_minutes=2, out_dir=str(out))  # fmt: skip

    def delete_the_folder(result):
        if result.steps >= 3_000 and out.exists():
            subprocess.run(["rm", "-rf", str(out)], check=True)

    with pytest.raises(FolderDeleted) as caught:
        train(config, on_metrics=delete_the_folder, progress=False)
    message = str(caught.value)
    assert message.startswith(f"the run folder {out} was deleted while the run trained")
    assert "\n" not in message and f"kept: {out / 'checkpoint.pt'} of " in message
    steps = load_checkpoint(out / "checkpoint.pt").metadata["steps"]
    assert steps >= 3_000 and f"of {steps:,} agent steps" in message
    with hold_run_folder(out):  # the run let go of the folder
        pass


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_kernel_restarted_while_the_training_panel_trains_leaves_no_process_and_frees_the_folder(
    tmp_path,
):
    from jupyter_client.manager import start_new_kernel

    out = tmp_path / "run"
    manager, client = start_new_kernel(kernel_name="python3")
    try:
        code = (
            "from a3c_course.lessons.panels import TrainingPanel\n"
            "from a3c_course.training.config import TrainConfig\n"
            f"config = TrainConfig(game='CartPole-v1', hidden_size=16, eval_episodes=0, "
            f"max_minutes=5, out_dir={str(out)!r})\n"
            "panel = TrainingPanel(config)\n"
            "panel.start()\n"
        )
        reply = client.execute_interactive(code, timeout=60)
        assert reply["content"]["status"] == "ok"
        kernel = manager.provisioner.process.pid
        wait_for(lambda: (out / "metrics.jsonl").exists() and len(children_of(kernel)) >= 2)
        workers = children_of(kernel)
        manager.restart_kernel(now=True)  # as the notebook's "Restart kernel": the old one is killed
        gone, alive = psutil.wait_procs(workers, timeout=20)
        assert alive == [], [p.name() for p in alive]
        with hold_run_folder(out):  # free again
            pass
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_session_that_ends_mid_run_leaves_nothing_half_written_and_the_run_resumes(tmp_path):
    """Colab's session end: the machine goes, every process of the run killed at the same moment
    (here: SIGKILL to the run's whole process group, snapshots and checkpoints every second)."""
    out = tmp_path / "run"
    run = subprocess.Popen(
        [COMMAND, "train", *CARTPOLE, "--minutes", "5", "--eval-mode", "after",
         "--eval-interval-s", "1", "--eval-episodes", "1", "--no-report", "--out", str(out)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    wait_for(lambda: len(list((out / "snapshots").glob("*.pt"))) >= 3)
    everyone = [psutil.Process(run.pid), *children_of(run.pid)]
    os.killpg(run.pid, signal.SIGKILL)
    gone, alive = psutil.wait_procs(everyone, timeout=15)
    assert alive == []
    for path in [*out.glob("*.pt"), *(out / "snapshots").glob("*.pt")]:
        if path.name != "optimizer.pt" and TEMPORARY not in path.name:
            load_checkpoint(path)  # every file under its own name is whole
    before = load_checkpoint(out / "checkpoint.pt").metadata["steps"]
    resumed = subprocess.run(
        [COMMAND, "train", *CARTPOLE, "--resume", "--minutes", "0.05", "--eval-episodes", "0",
         "--no-report", "--out", str(out)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert load_checkpoint(out / "checkpoint.pt").metadata["steps"] > before
    assert_nothing_half_written(out)  # a killed writer's temporary file is cleared on resume
