"""benchmarks/sb3_time_to_score.py: its checks run everywhere; its tiny training run needs the
optional `bench` extra (stable-baselines3) and skips without it."""

import json
import sys
from pathlib import Path

import benchmark_scripts  # tests/ is on sys.path
import pytest


@pytest.fixture(scope="module")
def script():
    return benchmark_scripts.load("sb3_time_to_score")


@pytest.mark.parametrize(
    ("game", "expected"),
    [
        ("pong", "PongNoFrameskip-v4"),
        ("breakout", "BreakoutNoFrameskip-v4"),
        ("ALE/SpaceInvaders-v5", "SpaceInvadersNoFrameskip-v4"),
    ],
)
def test_sb3_env_id(script, game, expected):
    assert script.sb3_env_id(game) == expected


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--game", "CartPole-v1"], "--game must be an Atari game, got 'CartPole-v1'"),
        (["--eval-episodes", "0"], "--eval-episodes must be at least 1, got 0"),
        (["--threads", "0"], "--threads must be at least 1, got 0"),
        (["--max-minutes", "0"], "--max-minutes must be positive, got 0.0"),
        (["--max-steps", "-5"], "--max-steps must be at least 1, got -5"),
        (["--sticky-actions", "1.5"], "--sticky-actions must be in [0, 1), got 1.5"),
    ],
)
def test_bad_arguments_name_the_option_and_the_value(script, capsys, argv, message, tmp_path):
    assert script.main([*argv, "--out", str(tmp_path)]) == 2
    assert message in capsys.readouterr().err
    assert not any(tmp_path.iterdir())  # nothing trained, nothing written


def test_without_stable_baselines3_it_says_how_to_install(script, capsys, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "stable_baselines3", None)  # import now raises ImportError
    assert script.main(["--out", str(tmp_path)]) == 2
    error = capsys.readouterr().err
    assert "stable-baselines3 is not installed" in error and '".[bench]"' in error


@pytest.mark.slow
def test_tiny_run_meets_a_low_target_at_its_first_two_evaluations(script, capsys, tmp_path):
    pytest.importorskip("stable_baselines3", reason="the optional bench extra is not installed")
    argv = [
        "--target-score", "-100", "--eval-episodes", "1", "--eval-interval-s", "1",
        "--eval-max-episode-steps", "25", "--max-minutes", "1", "--out", str(tmp_path),
    ]  # fmt: skip
    assert script.main(argv) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["met"] == "1/1" and summary["target_score"] == -100
    assert summary["config"]["env_id"] == "PongNoFrameskip-v4" and summary["config"]["n_envs"] == 16
    (run,) = summary["runs"]
    assert run["stop_reason"] == "target score" and run["evaluations"] == script.CONSECUTIVE == 2
    assert run["steps"] > 0 and run["frames"] == 4 * run["steps"]
    assert (
        1.0 <= run["wall_s"] <= run["wall_with_eval_s"]
    )  # the training clock stops while evaluating
    assert Path(run["learning_curve"]).is_file()
    history = json.loads((tmp_path / "seed-0" / "history.json").read_text())
    first, second = [r for r in history if r["kind"] == "eval"]  # met at the first of two in a row
    assert len(first["scores"]) == 1 and first["mean"] == run["eval_mean"]
    assert first["steps"] == run["steps"] < second["steps"]
    assert "met after" in capsys.readouterr().out


def test_two_run_seeds_share_no_sb3_seed(script):
    """SB3 seeds environment i with base + i: drawn bases keep runs 0-4 apart (offsets did not)."""
    used = []
    for seed in range(5):
        drawn = script.sb3_seeds(seed)
        assert 0 <= drawn["model"] < 2**32  # numpy's seed range, which SB3's set_random_seed uses
        used.append(
            {("model", drawn["model"])}
            | {("env", drawn["envs"] + i) for i in range(script.ZOO_ATARI["n_envs"])}
            | {("env", drawn["evaluation"] + i) for i in range(10)}
        )
    for i, mine in enumerate(used):
        for theirs in used[i + 1 :]:
            assert not mine & theirs
    assert script.sb3_seeds(3) == script.sb3_seeds(3)  # a seed replays
