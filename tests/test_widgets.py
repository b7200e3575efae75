"""The notebook panels, driven through their methods and widget values (no browser needed)."""

import importlib.util
import io
import multiprocessing
import os

import imageio.v2 as imageio
import pytest
import torch

from a3c_course.a3c.envs import resolve_env_id
from a3c_course.a3c.model import ActorCritic
from a3c_course.lessons.panels import GameplayPanel, HyperparameterPanel, TrainingPanel
from a3c_course.lessons.panels.gameplay import PRETRAINED, find_checkpoints
from a3c_course.lessons.panels.settings import config_from_values
from a3c_course.training.checkpoint import load_checkpoint, save_checkpoint
from a3c_course.training.config import TrainConfig


def test_the_panel_builds_the_config_its_controls_show():
    panel = HyperparameterPanel(TrainConfig(game="pong", optimizer="rmsprop", seed=7))
    config = panel.set(
        game="breakout", lr=5e-4, gamma=0.95, gae_lambda=0.9, entropy_coef=0.02, workers=3,
        envs_per_worker=4, rollout_steps=10, max_minutes=5, max_steps=20_000,
    )  # fmt: skip
    assert config == TrainConfig(
        game="breakout", lr=5e-4, gamma=0.95, gae_lambda=0.9, entropy_coef=0.02, workers=3,
        envs_per_worker=4, rollout_steps=10, max_minutes=5.0, max_steps=20_000,
        optimizer="rmsprop", seed=7,  # what the panel does not show comes from the base config
    )  # fmt: skip
    assert config.lr == pytest.approx(5e-4)
    assert panel.config is config and panel.error is None
    assert "ALE/Breakout-v5: 3 workers x 4 envs" in panel.message.value
    assert "5 min or 20,000 steps" in panel.message.value


def test_the_settings_menu_loads_a_preset_into_every_control_and_back():
    from a3c_course.training.config import BREAKOUT, preset

    panel = HyperparameterPanel(TrainConfig(game="pong", eval_episodes=0, max_minutes=10))
    panel.preset.value = "breakout"  # as a learner picks it from the menu
    config = panel.config
    expected = TrainConfig(eval_episodes=0, max_minutes=10).replace(**preset("breakout"), out_dir=None)
    assert config == expected
    assert config.game == "breakout" and config.life_loss_terminal and config.out_dir == "runs/breakout"
    assert panel.controls["game"].value == "breakout"
    on_panel = {k: v for k, v in BREAKOUT.items() if k in panel.controls}
    assert all(panel.controls[k].value == pytest.approx(v) for k, v in on_panel.items())
    assert config.activation == "leaky_relu"  # off the sliders: from the preset, and said so
    assert panel.message.value.endswith("a lost life ends the episode, leaky_relu; 10 min</span>")
    panel.set(lr=2e-4)  # a slider moved after the preset wins
    assert panel.config.lr == pytest.approx(2e-4) and panel.config.life_loss_terminal
    panel.preset.value = "course defaults"
    assert panel.config == TrainConfig(game="pong", eval_episodes=0, max_minutes=10)
    assert not panel.controls["life_loss_terminal"].value
    with pytest.raises(ValueError, match="preset: 'fastest' is not one of 'course defaults', "):
        panel.use_preset("fastest")


def test_the_backend_menu_picks_ray_where_ray_is_installed():
    panel = HyperparameterPanel(TrainConfig(game="CartPole-v1"))
    config = panel.set(backend="ray")
    if importlib.util.find_spec("ray") is None:  # Colab's stack: the course without its extras
        assert config is None and "pip install 'a3c-course[cluster]'" in panel.error
    else:
        assert config.backend == "ray" and "on Ray" in panel.message.value
    assert panel.set(backend="hogwild").backend == "hogwild"


def test_zero_budgets_mean_no_limit():
    config = config_from_values(TrainConfig(), {"max_minutes": 0, "max_steps": 0})
    assert config.max_minutes is None and config.max_steps is None
    panel = HyperparameterPanel()
    panel.set(max_minutes=0, max_steps=0)
    assert "until Stop" in panel.message.value


@pytest.mark.parametrize(
    "values, message",
    [
        (
            {"max_minutes": -5.0},
            "max_minutes must be a positive number of minutes, or None, got -5.0",
        ),
        ({"max_steps": -10}, "max_steps must be an integer &gt;= 1, or None, got -10"),
    ],
)
def test_a_bad_value_shows_its_error_in_place_instead_of_raising(values, message):
    panel = HyperparameterPanel()
    assert panel.set(**values) is None
    assert panel.config is None and message.replace("&gt;", ">") == panel.error
    assert "Error:" in panel.message.value and message in panel.message.value
    # Fixing the value clears the error.
    assert panel.set(max_minutes=1.0, max_steps=0) is not None
    assert "Error" not in panel.message.value


def test_sliders_clamp_to_their_range_and_the_text_boxes_are_validated():
    panel = HyperparameterPanel()
    panel.controls["gamma"].value = 1.7  # a slider cannot go past its end
    assert panel.read().gamma == 1.0
    # A value typed in code that TrainConfig rejects: shown in place, nothing raised.
    panel.base = TrainConfig(game="CartPole-v1")
    panel.controls["game"].options = ["CartPole-v1", "no-such-game"]
    panel.controls["game"].value = "no-such-game"
    assert panel.config is None and "game: Unknown game 'no-such-game'" in panel.error


def test_training_refuses_to_start_with_invalid_settings(tmp_path):
    settings = HyperparameterPanel(TrainConfig(game="CartPole-v1", out_dir=str(tmp_path)))
    settings.set(max_minutes=-1.0)
    training = TrainingPanel(settings)
    assert training.start() is False and training.thread is None
    assert "fix the settings first: max_minutes must be" in training.status.value


SMALL = dict(
    game="CartPole-v1", workers=2, envs_per_worker=2, hidden_size=16, lr=1e-3,
    eval_episodes=1, eval_interval_s=0.3,
)  # fmt: skip


@pytest.mark.timeout(120)
def test_stop_ends_training_cleanly_with_no_process_left(tmp_path):
    panel = TrainingPanel(TrainConfig(**SMALL, max_minutes=2.0, out_dir=str(tmp_path)))
    assert panel.start() is True
    assert panel.start_button.disabled and not panel.stop_button.disabled
    seen_children = {}
    for _ in range(600):  # wait for the live plot to show some progress
        seen_children.update({child.pid: child for child in multiprocessing.active_children()})
        if len(seen_children) == 3 and panel.plot.value and "steps" in panel.status.value:
            break
        panel.wait(0.1)
    names = sorted(child.name for child in seen_children.values())
    assert names == ["a3c-evaluator", "a3c-worker-0", "a3c-worker-1"]
    png = imageio.imread(io.BytesIO(panel.plot.value))
    assert png.ndim == 3 and png.shape[0] > 100  # a real picture of the learning curve
    panel.stop()
    assert panel.wait(60), "training did not stop"
    assert multiprocessing.active_children() == []
    assert all(not child.is_alive() for child in seen_children.values())
    assert panel.result.stop_reason == "interrupted" and panel.error is None
    checkpoint = load_checkpoint(tmp_path / "checkpoint.pt")
    assert checkpoint.metadata["stop_reason"] == "interrupted"
    assert "Stopped (interrupted)" in panel.outcome.value
    assert str(tmp_path / "checkpoint.pt") in panel.outcome.value
    assert not panel.start_button.disabled and panel.stop_button.disabled
    assert panel.progress.value == 1.0 and panel.progress.bar_style == "success"


@pytest.mark.timeout(120)
def test_a_run_that_reaches_its_budget_shows_its_result(tmp_path):
    panel = TrainingPanel(lambda: TrainConfig(**SMALL, max_steps=1500, out_dir=str(tmp_path)))
    panel.start()
    assert panel.wait(90)
    assert panel.result.stop_reason == "max_steps" and panel.result.steps >= 1500
    assert "Stopped (max_steps)" in panel.outcome.value
    assert panel.plot.value  # the final state was drawn
    assert multiprocessing.active_children() == []


def read_video(path):
    return imageio.mimread(path, memtest=False)


@pytest.fixture
def cartpole_checkpoint(tmp_path):
    torch.manual_seed(0)
    model = ActorCritic((4,), 2, 16)
    return save_checkpoint(
        tmp_path / "runs" / "cp" / "checkpoint.pt", model, TrainConfig(game="CartPole-v1")
    )


def test_gameplay_panel_plays_a_checkpoint_and_shows_video_and_scores(
    cartpole_checkpoint, tmp_path
):
    panel = GameplayPanel(
        "CartPole-v1", runs=tmp_path / "runs", video_dir=tmp_path / "videos", max_steps=100
    )
    assert panel.checkpoint.options == (str(cartpole_checkpoint),)
    panel.checkpoint.value = str(cartpole_checkpoint)
    panel.episodes.value, panel.policy.value = 2, "sampled"
    assert panel.play() is True
    assert len(panel.scores) == 2 and all(s >= 1 for s in panel.scores)
    assert "episode 1: score" in panel.message.value and "episode 2: score" in panel.message.value
    assert "sampled actions" in panel.message.value
    assert panel.video.value.startswith("<video") and "base64," in panel.video.value
    frames = read_video(panel.path)  # CartPole's score is its length: one frame more per episode
    assert len(frames) == sum(int(s) + 1 for s in panel.scores)


def test_gameplay_panel_random_play_and_errors_in_place(cartpole_checkpoint, tmp_path):
    panel = GameplayPanel("pong", runs=tmp_path / "none", video_dir=tmp_path, max_steps=50)
    assert panel.checkpoint.options == (PRETRAINED,)  # Pong has a shipped agent
    assert panel.play() is True and "random play on pong" in panel.message.value
    panel.checkpoint.value = str(cartpole_checkpoint)  # trained on CartPole, asked to play Pong
    assert panel.play() is False
    assert "was trained on CartPole-v1, not on ALE/Pong-v5" in panel.message.value
    assert panel.video.value == "" and panel.scores == []
    panel.checkpoint.value = str(tmp_path / "missing.pt")
    assert panel.play() is False and "does not exist" in panel.message.value


def test_find_checkpoints_lists_newest_first(tmp_path):
    config = TrainConfig(game="CartPole-v1")
    old = save_checkpoint(tmp_path / "a" / "checkpoint.pt", ActorCritic((4,), 2, 8), config)
    new = save_checkpoint(tmp_path / "b" / "checkpoint.pt", ActorCritic((4,), 2, 8), config)
    os.utime(old, (1, 1))
    assert find_checkpoints(tmp_path) == [str(new), str(old)]
    assert find_checkpoints(tmp_path / "nowhere") == []


def test_training_plot_adds_the_reference_band_for_a_game_that_has_one():
    import struct

    from a3c_course.lessons.panels.training import learning_curve_png

    history = [
        {"kind": "episode", "steps": 100 * i, "elapsed_s": float(i), "score": -21.0 + i % 3}
        for i in range(1, 30)
    ]

    def width(png: bytes) -> int:
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        return struct.unpack(">I", png[16:20])[0]  # the IHDR chunk's width

    alone = width(learning_curve_png(history, 20, "CartPole-v1", game="CartPole-v1"))
    for game in ("pong", "breakout"):
        with_band = width(learning_curve_png(history, 20, resolve_env_id(game), game=game))
        assert with_band == 2 * alone  # two panels side by side: the run, and the run over the band


def test_evaluate_plays_whole_games_and_says_so(cartpole_checkpoint, tmp_path):
    panel = GameplayPanel("CartPole-v1", str(cartpole_checkpoint), video_dir=tmp_path, eval_games=2)
    assert panel.evaluate() is True
    assert len(panel.result.scores) == 2
    text = panel.evaluation.value
    assert f"{cartpole_checkpoint}: mean {panel.result.mean:+.1f}" in text
    assert "over 2 whole games" in text and "shipped agent" not in text  # no CartPole agent
    panel.checkpoint.value = ""
    assert panel.evaluate() is False and "Evaluate needs a checkpoint" in panel.evaluation.value


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_evaluate_shows_the_shipped_agents_score_and_whether_the_games_match(tmp_path):
    from a3c_course.lessons import pretrained
    from a3c_course.lessons.pretrained import card_sticky_actions

    card = pretrained.card("pong")
    torch.manual_seed(0)
    mine = save_checkpoint(tmp_path / "checkpoint.pt", ActorCritic((1, 42, 42), 6, 32),
                           TrainConfig(game="pong", hidden_size=32))  # fmt: skip
    panel = GameplayPanel("pong", str(mine), video_dir=tmp_path, eval_games=1)
    panel.sticky.value = 0.25 if card_sticky_actions(card) != 0.25 else 0.0
    assert panel.evaluate() is True
    text = panel.evaluation.value
    assert f"from its card: mean {pretrained.held_out(card)['mean']:+.1f}" in text
    assert "held-out games (none used to train or choose it)" in text  # the held-out score, not the deciding games'
    assert "Not the same game" in text and PRETRAINED in text
    panel.checkpoint.value, panel.sticky.value = PRETRAINED, card_sticky_actions(card)
    assert panel.evaluate() is True
    assert panel.evaluation.value.startswith(f"{PRETRAINED}: mean")
    assert "Not the same game" not in panel.evaluation.value
    assert panel.result.mean in card["evaluation"]["scores"]  # its card's first game, replayed


def test_a_cards_sticky_actions_come_from_its_key_else_its_command():
    from a3c_course.lessons.pretrained import card_sticky_actions

    assert card_sticky_actions({"evaluation": {"sticky_actions": 0.25, "command": "x"}}) == 0.25
    assert card_sticky_actions({"evaluation": {"command": "evaluate --sticky-actions 0"}}) == 0.0
    no_flag = {"evaluation": {"command": "a3c-course evaluate --pretrained pong"}}
    assert card_sticky_actions(no_flag) == TrainConfig().sticky_actions
