"""Keeping a run: its zip, the Drive copy, the panels' "Keep this run" button (outside Colab;
tests/test_colab.py has the Colab download)."""

import shutil
import sys
import threading
import zipfile

import pytest
import torch

from a3c_course.lessons import keep_run
from a3c_course.lessons.keep_run import (
    DRIVE_FOLDER,
    RunFolderError,
    copy_to_drive,
    unpack_run,
    zip_run,
)
from a3c_course.lessons.panels import GameplayPanel, TrainingPanel
from a3c_course.lessons.panels.gameplay import PRETRAINED
from a3c_course.lessons.reports import plot_learning_curve, save_figure
from a3c_course.training.checkpoint import load_checkpoint
from a3c_course.training.config import TrainConfig
from a3c_course.training.run_record import read_metrics
from a3c_course.training.runlock import RunFolderInUse, hold_run_folder

# What a kept run holds: enough to replay it (checkpoint, best), resume it (optimizer, config,
# metrics) and show it (the report's figure); not its snapshots, lock or temporary files.
KEPT = ["best.pt", "checkpoint.pt", "config.json", "learning_curve.png", "metrics.jsonl",
        "optimizer.pt"]  # fmt: skip


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A short CartPole run trained through the training panel (a few seconds), with a report
    figure, plus the leftovers a kept run must leave out."""
    folder = tmp_path_factory.mktemp("trained") / "runs" / "cartpole"
    config = TrainConfig(
        game="CartPole-v1", workers=1, envs_per_worker=2, hidden_size=16, eval_episodes=1,
        eval_interval_s=0.2, eval_mode="after", max_steps=400, out_dir=str(folder),
    )  # fmt: skip
    panel = TrainingPanel(config)
    assert panel.keeper.button.disabled  # nothing to keep before a run
    panel.start()
    assert panel.wait(90) and panel.result.stop_reason == "max_steps", panel.outcome.value
    figure = plot_learning_curve(read_metrics(folder / "metrics.jsonl"))
    save_figure(figure, folder / "learning_curve.png")
    (folder / ".checkpoint.pt.x1y2.tmp.pt").write_bytes(b"half a file")  # a writer killed mid-write
    (folder / "earlier.zip").write_bytes(b"an earlier zip")
    assert (folder / "snapshots").is_dir() and (folder / ".a3c-run.lock").is_file()
    return panel, folder


@pytest.fixture
def run(trained, tmp_path):
    """A copy of the trained run's folder, this test's own."""
    return shutil.copytree(trained[1], tmp_path / "runs" / "cartpole")


def test_the_zip_holds_what_the_run_needs_and_its_checkpoint_reloads(run, tmp_path):
    steps = load_checkpoint(run / "checkpoint.pt").metadata["steps"]
    path = zip_run(run)
    assert path == run.parent / f"cartpole-{steps}-steps.zip"  # beside the folder, by its steps
    with zipfile.ZipFile(path) as archive:
        assert sorted(archive.namelist()) == [f"cartpole/{name}" for name in KEPT]
        assert archive.testzip() is None
    assert sorted(p.name for p in run.parent.iterdir()) == ["cartpole", path.name]  # no temp left

    folder = unpack_run(path, into=tmp_path / "later")  # a later session, another disk
    assert folder == tmp_path / "later" / "cartpole"
    original = load_checkpoint(run / "checkpoint.pt")
    unpacked = load_checkpoint(folder / "checkpoint.pt")
    assert unpacked.config == original.config and unpacked.metadata == original.metadata
    assert all(torch.equal(unpacked.model_state[k], v) for k, v in original.model_state.items())
    player = GameplayPanel("CartPole-v1", str(folder / "best.pt"), video_dir=tmp_path, max_steps=50)
    assert player.play() is True, player.message.value  # replays from the unpacked folder


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda folder: None, "no run folder {folder}: it does not exist"),
        (lambda folder: folder.mkdir(parents=True), "the run folder {folder} is empty"),
        (
            lambda folder: (folder.mkdir(parents=True), (folder / "metrics.jsonl").write_text("")),
            "no checkpoint.pt in {folder}",
        ),
    ],
    ids=["missing", "empty", "no-checkpoint"],
)
def test_a_folder_with_no_run_gives_one_line_naming_it(tmp_path, make, message):
    folder = tmp_path / "runs" / "pong"
    make(folder)
    with pytest.raises(RunFolderError) as error:
        zip_run(folder)
    assert str(error.value).startswith(message.format(folder=folder))
    assert "\n" not in str(error.value)
    assert not list(tmp_path.rglob("*.zip"))


def test_a_folder_a_run_is_training_in_is_not_zipped(run):
    with hold_run_folder(run):  # as a training run holds it
        with pytest.raises(RunFolderInUse, match=f"the run folder {run} is in use"):
            zip_run(run)
    assert not list(run.parent.glob("*.zip"))


def test_the_zip_is_copied_to_drive_only_when_drive_is_mounted(run, tmp_path):
    path = zip_run(run)
    assert copy_to_drive(path, drive_root=tmp_path / "MyDrive") is None  # not mounted
    assert not (tmp_path / "MyDrive").exists()
    (tmp_path / "MyDrive").mkdir()  # mounted
    copy = copy_to_drive(path, drive_root=tmp_path / "MyDrive")
    assert copy == tmp_path / "MyDrive" / DRIVE_FOLDER / path.name
    assert copy.read_bytes() == path.read_bytes()
    assert [p.name for p in copy.parent.iterdir()] == [path.name]  # no temporary file left


@pytest.mark.parametrize("in_colab", [True, False])
def test_what_keeping_says_with_and_without_drive(run, tmp_path, in_colab):
    drive = tmp_path / "MyDrive"
    unmounted = keep_run.keep_run(run, drive_root=drive).lines(in_colab)
    assert unmounted[0].startswith(f"Kept {run.parent}/cartpole-")
    assert "checkpoint.pt" in unmounted[0]
    mount = "from google.colab import drive; drive.mount('/content/drive')"
    assert any(mount in line for line in unmounted) == in_colab  # only Colab can mount it
    drive.mkdir()
    kept = keep_run.keep_run(run, drive_root=drive)
    assert kept.files == KEPT and kept.drive.is_file()
    assert f"Copied to Google Drive: {kept.drive}" in kept.lines(in_colab)
    assert f"unpack_run('{kept.drive}')" in kept.lines(in_colab)[-1]


def test_the_command_line_keeps_a_run_or_says_why_not(run, tmp_path, capsys):
    assert keep_run.main([str(run), "--drive", str(tmp_path / "nowhere")]) == 0
    assert capsys.readouterr().out.startswith(f"Kept {run.parent}/cartpole-")
    with pytest.raises(SystemExit) as exit:
        keep_run.main([str(tmp_path / "missing")])
    assert exit.value.code == 2
    missing = tmp_path / "missing"
    assert capsys.readouterr().err == f"error: no run folder {missing}: it does not exist (train a run into it first)\n"


def test_the_training_panel_keeps_the_run_it_trained(trained, tmp_path, monkeypatch):
    panel, folder = trained
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)  # JupyterLab, not Colab
    monkeypatch.chdir(folder.parent.parent)  # the notebook's folder: runs/ is in it
    panel.keeper.drive_root = tmp_path / "no-drive"
    assert panel.keeper.button in panel.widget.children and not panel.keeper.button.disabled
    panel.keeper.button.click()  # as the learner clicks it
    zip_path = panel.keeper.kept.zip
    assert zip_path.parent == folder.parent and zip_path.is_file()
    assert f"Kept {zip_path}" in panel.keeper.message.value
    (link,) = panel.keeper.output.outputs
    assert f'<a href="runs/{zip_path.name}" download=' in link["data"]["text/html"]
    assert "Google Drive" not in panel.keeper.message.value  # outside Colab, no Drive: no word


def test_the_training_panel_keeps_nothing_before_a_run_or_while_one_trains(tmp_path):
    panel = TrainingPanel(TrainConfig(game="CartPole-v1", out_dir=str(tmp_path / "run")))
    assert panel.keep() is False and "no run to keep yet" in panel.keeper.message.value
    release = threading.Event()
    panel.thread = threading.Thread(target=release.wait)  # stands in for a training run
    panel.thread.start()
    try:
        assert panel.keep() is False and "still running" in panel.keeper.message.value
    finally:
        release.set()
        panel.thread.join()
    assert not list(tmp_path.rglob("*.zip"))


def test_the_gameplay_panel_keeps_the_run_of_its_checkpoint(run, tmp_path, monkeypatch):
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    panel = GameplayPanel("CartPole-v1", video_dir=tmp_path)
    panel.keeper.drive_root = tmp_path / "MyDrive"
    (tmp_path / "MyDrive").mkdir()
    assert panel.keeper.button in panel.widget.children[7].children  # beside Play and Evaluate
    for box in ("", PRETRAINED):
        panel.checkpoint.value = box
        assert panel.keep() is False
        assert "needs the checkpoint of a run" in panel.keeper.message.value
    snapshot = next((run / "snapshots").glob("*.pt"))
    panel.checkpoint.value = str(snapshot)  # a snapshot's run is the folder above snapshots/
    panel.keeper.button.click()
    assert panel.keeper.kept.zip.parent == run.parent
    assert "Copied to Google Drive" in panel.keeper.message.value
    assert (tmp_path / "MyDrive" / DRIVE_FOLDER / panel.keeper.kept.zip.name).is_file()
    panel.checkpoint.value = str(tmp_path / "gone" / "checkpoint.pt")
    assert panel.keep() is False
    assert f"no run folder {tmp_path / 'gone'}" in panel.keeper.message.value
    assert panel.keeper.output.outputs == ()  # the earlier link is gone with its message
