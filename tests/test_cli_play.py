"""The command line's play, train reports and --resume: files that read back, one-line errors."""

import json
import os

import imageio.v2 as imageio
import pytest
import torch

from a3c_course.a3c.model import ActorCritic
from a3c_course.cli.main import main
from a3c_course.training.checkpoint import load_checkpoint, save_checkpoint
from a3c_course.training.config import TrainConfig

SMALL_RUN = [
    "--game", "CartPole-v1", "--workers", "2", "--envs-per-worker", "2", "--hidden-size", "16",
    "--eval-episodes", "1", "--eval-interval-s", "0.2", "--lr", "1e-3", "--quiet",
]  # fmt: skip


@pytest.fixture
def cartpole_checkpoint(tmp_path):
    torch.manual_seed(0)
    return save_checkpoint(
        tmp_path / "cp.pt", ActorCritic((4,), 2, 16), TrainConfig(game="CartPole-v1")
    )


def test_play_a_checkpoint_writes_a_video_with_every_episode(cartpole_checkpoint, tmp_path, capsys):
    out = tmp_path / "videos" / "play.mp4"
    args = ["play", "--checkpoint", str(cartpole_checkpoint), "--out", str(out), "--episodes", "2"]
    assert main([*args, "--sample"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == f"Playing 2 episode(s) of CartPole-v1 with {cartpole_checkpoint}..."
    lengths = [int(line.split("(")[1].split()[0]) for line in printed[1:3]]
    assert printed[3] == f"Video: {out}"
    frames = imageio.mimread(out, memtest=False)
    assert len(frames) == sum(n + 1 for n in lengths) and frames[0].shape == (214, 320, 3)


def test_play_at_random_needs_a_game_and_shows_the_agent_view(tmp_path, capsys):
    out = tmp_path / "pong.gif"
    assert (
        main(["play", "--game", "pong", "--out", str(out), "--max-steps", "30", "--agent-view"])
        == 0
    )
    assert "with random play" in capsys.readouterr().out
    frames = imageio.mimread(out)
    assert frames[0].shape[:2] == (224, 374) and 1 <= len(frames) <= 31  # a GIF merges repeats


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--game", "pong"], "was trained on CartPole-v1, not on ALE/Pong-v5"),
        (["--out", "video.avi"], "--out must end in .mp4 or .gif, got video.avi"),
    ],
)
def test_play_rejects_a_checkpoint_for_another_game_and_unknown_formats(
    cartpole_checkpoint, tmp_path, capsys, extra, message
):
    out = ["--out", str(tmp_path / "v.mp4")] if "--out" not in extra else []
    assert main(["play", "--checkpoint", str(cartpole_checkpoint), *out, *extra]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
    assert list(tmp_path.glob("*.mp4")) == []


def test_play_errors_for_missing_inputs_and_unwritable_folders(tmp_path, capsys):
    assert main(["play", "--out", str(tmp_path / "v.mp4")]) == 2
    assert "random play (no --checkpoint) needs --game" in capsys.readouterr().err
    assert main(["play", "--checkpoint", str(tmp_path / "no.pt"), "--out", "v.mp4"]) == 2
    assert "no checkpoint at" in capsys.readouterr().err
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    if os.access(locked, os.W_OK):  # root ignores permissions: use a path under a file instead
        locked = tmp_path / "a_file"
        locked.write_text("")
    assert main(["play", "--game", "pong", "--out", str(locked / "v.mp4")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"a3c-course play: error: cannot write to the output folder {locked}")
    assert err.count("\n") == 1


@pytest.mark.timeout(180)
def test_train_writes_its_report_and_resume_continues_the_count(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["train", *SMALL_RUN, "--steps", "1500", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"Learning curve: {out}/learning_curve.png" in printed
    assert f"Gameplay video: {out}/gameplay.mp4" in printed
    assert imageio.imread(out / "learning_curve.png").ndim == 3
    assert len(imageio.mimread(out / "gameplay.mp4", memtest=False)) >= 2
    first = load_checkpoint(out / "checkpoint.pt")
    first_records = (out / "metrics.jsonl").read_text().splitlines()
    steps = first.metadata["steps"]

    # Resume with a larger step budget and a new learning rate; the rest comes from the run.
    assert main(["train", "--resume", "--out", str(out), "--steps", "3000", "--lr", "5e-4",
                 "--quiet", "--no-report"]) == 0  # fmt: skip
    printed = capsys.readouterr().out
    assert printed.startswith("Resuming on CartPole-v1: 2 workers x 2 environments, until 3,000")
    second = load_checkpoint(out / "checkpoint.pt")
    assert second.config.lr == 5e-4 and second.config.envs_per_worker == 2
    assert (
        second.metadata["steps"] >= 3000
        and second.metadata["elapsed_s"] > first.metadata["elapsed_s"]
    )
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    kept = [json.dumps(r) for r in records[: len(first_records)]]
    assert kept == first_records  # the first session's history is kept, in order
    later = records[len(first_records) :]
    assert later and all(r["steps"] > steps - 2 * 2 * 20 for r in later)
    assert max(r["steps"] for r in later) >= 3000
    assert "Learning curve" not in printed  # --no-report

    # Nothing left to do, or nothing to resume: one-line errors, no files touched.
    before = (out / "checkpoint.pt").read_bytes()
    assert main(["train", "--resume", "--out", str(out), "--steps", "1000", "--quiet"]) == 2
    assert "already has" in capsys.readouterr().err
    assert (out / "checkpoint.pt").read_bytes() == before
    assert main(["train", "--resume", "--out", str(tmp_path / "empty"), "--quiet"]) == 2
    assert "--resume: no checkpoint at" in capsys.readouterr().err
    assert main(["train", "--resume", "--out", str(out), "--game", "pong", "--quiet"]) == 2
    assert "was trained on CartPole-v1, not on ALE/Pong-v5" in capsys.readouterr().err


def test_train_refuses_an_unwritable_output_folder(tmp_path, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    assert main(["train", *SMALL_RUN, "--out", str(blocker / "run")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        f"a3c-course train: error: cannot write to the output folder {blocker}/run"
    )
