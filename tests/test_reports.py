"""Run reports and model playback: videos that read back with the right frames, a learning curve
that shows the run, files written whole or not at all."""

import imageio.v2 as imageio
import numpy as np
import pytest
import torch

from a3c_course.a3c.model import ActorCritic
from a3c_course.lessons import reports
from a3c_course.lessons.play import CartPoleFrames, ModelPolicy, play_episodes
from a3c_course.lessons.reports import (
    moving_average,
    plot_learning_curve,
    write_gameplay_video,
    write_run_report,
)
from a3c_course.lessons.video import caption, captioned_frames
from a3c_course.training.checkpoint import save_checkpoint
from a3c_course.training.config import TrainConfig


def read_video(path):
    return imageio.mimread(path, memtest=False)


def test_moving_average_matches_explicit_means():
    values = [1.0, 2.0, 6.0, 3.0, 8.0]
    expected = [np.mean(values[max(0, i - 2) : i + 1]) for i in range(5)]
    np.testing.assert_allclose(moving_average(values, 3), expected)
    assert moving_average([], 3).size == 0


def test_model_policy_carries_the_lstm_state_and_repeats_when_seeded():
    torch.manual_seed(0)
    model = ActorCritic((4,), 2, 8)
    policy = ModelPolicy(model, greedy=True)
    obs = np.array([0.1, -0.2, 0.05, 0.3], np.float32)
    policy(obs)
    first_state = policy.state[0].clone()
    policy(obs)
    assert not torch.equal(first_state, policy.state[0])  # the state moved on
    # The same as stepping the network by hand, state carried.
    state = model.initial_state(1)
    for _ in range(2):
        out = model(torch.from_numpy(obs).unsqueeze(0), state)
        state = out.state
    torch.testing.assert_close(policy.state[0], state[0])
    sampled = [ModelPolicy(model, greedy=False, seed=3) for _ in range(2)]
    assert [sampled[0](obs) for _ in range(30)] == [sampled[1](obs) for _ in range(30)]


def test_play_episodes_with_a_model_uses_its_greedy_actions():
    torch.manual_seed(0)
    model = ActorCritic((1, 42, 42), 6, 16)
    (episode,) = play_episodes("pong", model, 1, greedy=True, max_steps=20)
    assert episode.length == 20 and episode.frames[0].shape == (210, 160, 3)
    replay = ModelPolicy(model, greedy=True)
    assert episode.actions == [replay(obs) for obs in episode.observations[:-1]]
    assert len(episode.running_scores) == 20


def test_cartpole_frames_are_drawn_without_pygame():
    (episode,) = play_episodes("CartPole-v1", None, 1, seed=0, max_steps=30)
    assert episode.frames[0].shape == (CartPoleFrames.HEIGHT, CartPoleFrames.WIDTH, 3)
    assert episode.score == episode.length  # +1 per step in CartPole
    assert not np.array_equal(episode.frames[0], episode.frames[-1])  # the cart/pole moved


def test_captions_count_the_raw_score_and_cap_the_frames():
    episodes = play_episodes("CartPole-v1", None, 2, seed=0, max_steps=10)
    frames = captioned_frames(episodes)
    assert len(frames) == sum(e.length + 1 for e in episodes)
    assert frames[0].shape == (200 + 14, 320, 3)
    assert len(captioned_frames(episodes, max_frames=5)) == 5
    band = caption(np.zeros((10, 100, 3), np.uint8), "score 3")
    assert band.shape == (24, 100, 3) and band[:14].max() == 255 and band[14:].max() == 0


def test_gameplay_video_reads_back_with_its_frame_count_and_size(tmp_path):
    path, episodes = write_gameplay_video(
        tmp_path / "play.mp4", "breakout", None, 2, max_steps=40, max_frames=60, agent_view=True
    )
    frames = read_video(path)
    assert len(frames) == 60  # two episodes of 41 frames, capped at 60
    assert frames[0].shape == (210 + 14, 160 + 4 + 210, 3)
    assert [e.length for e in episodes] == [40, 40]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["play.mp4"]  # no temporary file left


def test_a_failing_write_leaves_nothing_behind(tmp_path, monkeypatch):
    def broken(frames, path, fps=30):
        path.write_bytes(b"half a video")
        raise OSError("disk full")

    monkeypatch.setattr("a3c_course.lessons.video.write_video", broken)
    with pytest.raises(OSError, match="disk full"):
        write_gameplay_video(tmp_path / "play.mp4", "CartPole-v1", None, max_steps=5)
    assert list(tmp_path.iterdir()) == []


def test_learning_curve_shows_episodes_and_evaluations():
    history = [{"kind": "episode", "steps": 100 * i, "score": float(i)} for i in range(1, 31)] + [
        {"kind": "eval", "steps": 1500, "mean": 10.0, "min": 8.0, "max": 13.0}
    ]
    figure = plot_learning_curve(history, window=10, title="test")
    ax = figure.axes[0]
    line = ax.get_lines()[0]
    np.testing.assert_allclose(line.get_ydata(), moving_average(range(1, 31), 10))
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == [
        "training episode",
        "mean of the last 10",
        "evaluation (greedy): mean, min-max",
    ]
    assert ax.get_xlabel() == "agent steps (all workers)" and ax.get_ylabel() == "raw game score"
    empty = plot_learning_curve([])
    assert "no finished episode yet" in [t.get_text() for t in empty.axes[0].texts]


def test_run_report_writes_a_png_and_a_short_video(tmp_path):
    torch.manual_seed(0)
    config = TrainConfig(game="CartPole-v1", out_dir=str(tmp_path))
    save_checkpoint(tmp_path / "checkpoint.pt", ActorCritic((4,), 2, 16), config, steps=3000)
    records = [{"kind": "episode", "steps": 10 * i, "score": 10.0 + i} for i in range(50)]
    (tmp_path / "metrics.jsonl").write_text(
        "".join(__import__("json").dumps(r) + "\n" for r in records) + '{"kind": "epi'
    )  # the last line cut short, as after a crash
    report = write_run_report(tmp_path, max_frames=40)
    png = imageio.imread(report.learning_curve)
    assert png.shape[:2] == (360, 640)
    frames = read_video(report.gameplay)
    assert 2 <= len(frames) <= 40 and frames[0].shape == (214, 320, 3)
    assert report.scores and report.scores[0] >= 1
    assert reports.LEARNING_CURVE_NAME == report.learning_curve.name
