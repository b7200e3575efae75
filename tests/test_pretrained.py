"""The agents shipped with the package: they load weights-only, play, and beat a random player;
the reference band draws with and without a learner's run."""

import json
import re
import shlex

import pytest
import torch

from a3c_course.a3c.envs import FRAME_SIZE, STICKY_ACTIONS
from a3c_course.a3c.model import COURSE_NETWORK
from a3c_course.cli.main import build_parser, main
from a3c_course.cli.train import config_from_args
from a3c_course.lessons import pretrained
from a3c_course.lessons.play import play_episodes
from a3c_course.lessons.reference import (
    plot_reference,
    reference_band,
    reference_games,
    reference_runs,
    score_curve,
)
from a3c_course.training.config import BREAKOUT, TrainConfig
from a3c_course.training.evaluate import evaluate

# A uniformly random player's mean score (Mnih et al. 2015), and how far above it the shipped
# agent must score over two games (a fraction of its card's margin, measured: see each test).
RANDOM = {"pong": -20.7, "breakout": 1.7}
FAR_ABOVE_RANDOM = {"pong": 15.0, "breakout": 50.0}
SHIPPED = ["breakout", "pong"]
# The settings of each game's reference runs (benchmarks/README.md): Pong's are the defaults,
# Breakout's the `breakout` preset.
REFERENCE_SETTINGS = {"breakout": BREAKOUT, "pong": {}}
# Both games' runs are five independently seeded ones (training/seeds.py).
REFERENCE_RUNS = {"breakout": 5, "pong": 5}


def config_of_command(command: str, saved: TrainConfig) -> TrainConfig:
    """The TrainConfig that `a3c-course train ...` builds today, on the saved run's platform."""
    args = build_parser().parse_args(shlex.split(command)[1:])
    return config_from_args(args).replace(start_method=saved.start_method)


def test_both_games_ship_an_agent():
    assert pretrained.available() == SHIPPED


@pytest.mark.parametrize("game", SHIPPED)
def test_each_agent_ships_with_a_card_that_says_how_it_was_made(game):
    card = pretrained.card(game)
    assert card["game"] == game
    assert card["training"]["command"].startswith("a3c-course train")
    assert card["evaluation"]["episodes"] >= 10
    assert card["evaluation"]["command"].startswith(f"a3c-course evaluate --pretrained {game} --episodes")
    assert len(card["evaluation"]["scores"]) == card["evaluation"]["episodes"]
    for key in ("package_version", "torch_version", "machine", "date"):
        assert card[key]
    assert f"{game}: mean score" in pretrained.summary(game)


@pytest.mark.parametrize("game", SHIPPED)
def test_the_card_names_the_network_the_agent_has(game):
    """The card's settings rebuild the shipped network (not whatever the defaults are today)."""
    training = pretrained.card(game)["training"]
    config = TrainConfig.from_dict(training["config"])
    network = pretrained.checkpoint(game).network
    hidden = config.hidden_size or COURSE_NETWORK["hidden_size"]  # None: the default for frames
    assert (config.activation, config.conv_filters, hidden) == (
        network["activation"],
        network["conv_filters"],
        network["hidden_size"],
    )


@pytest.mark.parametrize("game", SHIPPED)
def test_the_card_records_both_protocols(game):
    card = pretrained.card(game)
    protocol, deterministic = card["evaluation"], card["evaluation_deterministic"]
    assert protocol["sticky_actions"] == STICKY_ACTIONS and deterministic["sticky_actions"] == 0.0
    assert protocol["episodes"] >= 30 and len(protocol["scores"]) == protocol["episodes"]
    assert "--sticky-actions" not in protocol["command"]  # the default is the protocol
    assert deterministic["command"].endswith("--sticky-actions 0")
    assert "sticky actions 0.25" in pretrained.summary(game)


@pytest.mark.parametrize("game", SHIPPED)
def test_the_card_scores_the_agent_on_games_no_decision_used(game):
    """Beside the card's own 30 games (seeds 0-29, which chose what happened to one run after
    them), the agent is scored greedy and with sampled actions on games of seeds that no training
    run, snapshot selection (seeds from 10,000) or card evaluation used; each command replays it."""
    card = pretrained.card(game)
    selection = range(10_000, 10_000 + 100)
    for key, flag in (("evaluation_held_out", ""), ("evaluation_sampled", " --sample")):
        evaluation = card[key]
        seed = int(re.search(r"--seed (\d+)", evaluation["command"]).group(1))
        games = range(seed, seed + evaluation["episodes"])
        assert evaluation["episodes"] >= 30 and len(evaluation["scores"]) == evaluation["episodes"]
        assert not set(games) & (set(range(card["evaluation"]["episodes"])) | set(selection))
        assert evaluation["command"].endswith(flag) and evaluation["sticky_actions"] == STICKY_ACTIONS
    assert card["evaluation_held_out"]["command"] != card["evaluation_sampled"]["command"]


@pytest.mark.parametrize("game", SHIPPED)
def test_the_summary_names_frames_other_than_the_courses(game):
    size = pretrained.checkpoint(game).network["obs_shape"][-1]  # what the network reads
    assert (f"{size}x{size} frames" in pretrained.summary(game)) == (size != FRAME_SIZE)
    assert TrainConfig.from_dict(pretrained.card(game)["training"]["config"]).frame_size == size


@pytest.mark.parametrize("game", SHIPPED)
def test_the_cards_command_still_trains_with_the_cards_settings(game):
    """Defaults change; the shipped command must name every setting that differs from today's."""
    training = pretrained.card(game)["training"]
    saved = TrainConfig.from_dict(training["config"])
    rebuilt = config_of_command(training["command"], saved)
    assert rebuilt.replace(out_dir=saved.out_dir) == saved  # out_dir: where it wrote, not how


@pytest.mark.parametrize("game, actions", [("pong", 6), ("breakout", 4)])
def test_shipped_checkpoint_loads_with_weights_only_loading(game, actions):
    payload = torch.load(pretrained.path(game), map_location="cpu", weights_only=True)
    assert payload["format"] == "a3c-course-checkpoint"
    model = pretrained.load(game)
    assert not model.training and model.n_actions == actions
    assert all(p.dtype == torch.float32 for p in model.parameters())  # float16 on disk only
    assert pretrained.path(game).stat().st_size < 1.5e6


def test_unknown_game_names_the_choices():
    with pytest.raises(ValueError, match="no pretrained agent for 'tetris'; available: .*pong"):
        pretrained.load("tetris")


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("game", SHIPPED)
def test_the_agent_beats_a_random_player_by_far(game):
    # One full game with random no-op starts (a seed the card's evaluation did not use), sticky
    # actions 0.25: the margins are wide enough for one. Measured: pong +17 (2026-12-06; random
    # -20.7), breakout 225 (2026-12-06; random 1.7).
    result = evaluate(pretrained.checkpoint(game), episodes=1, seed=100)
    assert result.mean > RANDOM[game] + FAR_ABOVE_RANDOM[game], result.scores
    assert not any(result.capped)


@pytest.mark.parametrize("game", SHIPPED)
def test_the_card_reports_the_evaluation_of_the_shipped_weights(game):
    card = pretrained.card(game)["evaluation"]
    assert card["mean"] == pytest.approx(sum(card["scores"]) / len(card["scores"]))
    assert card["mean"] > RANDOM[game] + FAR_ABOVE_RANDOM[game]


def test_play_and_evaluate_take_pretrained_on_the_command_line(tmp_path, capsys):
    out = tmp_path / "pong.mp4"
    assert main(["play", "--pretrained", "pong", "--out", str(out), "--max-steps", "60"]) == 0
    assert out.stat().st_size > 0
    assert "pong.pt" in capsys.readouterr().out
    assert main(["evaluate", "--pretrained", "pong", "--episodes", "1", "--max-steps", "50"]) == 0
    assert "score: mean" in capsys.readouterr().out
    assert main(["evaluate", "--pretrained", "pong", "--game", "breakout"]) == 2
    assert "trained on ALE/Pong-v5, not on ALE/Breakout-v5" in capsys.readouterr().err
    assert main(["evaluate", "--pretrained", "tetris"]) == 2
    assert "no pretrained agent for 'tetris'" in capsys.readouterr().err


def test_pretrained_agent_plays_in_a_video_recording():
    episodes = play_episodes("pong", pretrained.load("pong"), 1, max_steps=30)
    assert len(episodes[0].frames) == 31  # the first screen, then one after each of 30 actions


def test_both_games_ship_reference_runs():
    assert reference_games() == sorted(REFERENCE_SETTINGS)


@pytest.mark.parametrize("game", sorted(REFERENCE_SETTINGS))
def test_reference_runs_are_distinct_seeds_with_their_commands(game):
    runs = reference_runs(game)
    assert len(runs) == REFERENCE_RUNS[game]
    index = json.loads((pretrained.path(game).parent / f"reference/{game}/runs.json").read_text())
    seeds = set()
    for name, records in runs.items():
        assert index[name]["command"].startswith("a3c-course train")
        config = TrainConfig.from_dict(index[name]["config"])
        assert config_of_command(index[name]["command"], config).replace(
            hidden_size=config.hidden_size
        ) == config  # the command reproduces the run (hidden_size: None and 128 build one network)
        assert {r["kind"] for r in records} == {"episode", "eval"}
        # the documented settings; only the seed, the budget and the evaluation's rhythm vary
        expected = TrainConfig(
            **REFERENCE_SETTINGS[game],
            seed=config.seed,
            max_minutes=config.max_minutes,
            max_steps=config.max_steps,
            eval_mode="after",
            eval_interval_s=config.eval_interval_s,
        )
        assert config.replace(out_dir=expected.out_dir, hidden_size=None) == expected
        assert config.hidden_size in (None, COURSE_NETWORK["hidden_size"])  # None: the default
        seeds.add(config.seed)
    assert len(seeds) == len(runs)  # distinct seeds, not one run several times


def test_score_curve_is_the_moving_average_of_episode_scores():
    history = [
        {"kind": "episode", "steps": 10 * i, "elapsed_s": 6.0 * i, "score": float(i)}
        for i in range(1, 5)
    ] + [{"kind": "loss", "steps": 50, "elapsed_s": 30.0}]
    x, y = score_curve(history, "steps", window=2)
    assert x.tolist() == [10, 20, 30, 40] and y.tolist() == [1.0, 1.5, 2.5, 3.5]
    x, _ = score_curve(history, "minutes", window=2)
    assert x.tolist() == [0.1, 0.2, 0.3, 0.4]
    with pytest.raises(ValueError, match="by must be one of 'steps', 'minutes', got 'hours'"):
        score_curve(history, "hours")


@pytest.mark.parametrize("game", sorted(REFERENCE_SETTINGS))
def test_reference_band_orders_low_median_high(game):
    for by in ("steps", "minutes"):
        x, low, median, high = reference_band(game, by, points=50)
        assert x.shape == low.shape == median.shape == high.shape == (50,)
        assert (low <= median).all() and (median <= high).all()
        assert (x[1:] > x[:-1]).all()
    with pytest.raises(ValueError, match="no reference runs for 'tetris'"):
        reference_band("tetris")


@pytest.mark.parametrize("game", sorted(REFERENCE_SETTINGS))
def test_reference_plot_with_and_without_a_learners_run(game):
    alone = plot_reference(game=game)
    assert [line.get_label() for line in alone.axes[0].lines] == ["course runs (median)"]
    mine = next(iter(reference_runs(game).values()))
    figure = plot_reference(mine, game=game, by="minutes", label="my run")
    assert [line.get_label() for line in figure.axes[0].lines][-1] == "my run"
    assert figure.axes[0].get_xlabel() == "wall-clock minutes"
