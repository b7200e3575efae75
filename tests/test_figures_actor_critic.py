"""Unit 2's figures and harnesses (a3c_course.lessons.figures.actor_critic) draw and compute what they say."""

import math

import matplotlib
import numpy as np
import pytest
import torch
from torch import nn

matplotlib.use("Agg")

from a3c_course.a3c.model import ActorCritic  # noqa: E402
from a3c_course.lessons.figures import actor_critic as figures  # noqa: E402

ACTIONS = ["NOOP", "FIRE", "RIGHT", "LEFT", "RIGHTFIRE", "LEFTFIRE"]


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return ActorCritic(obs_shape=(1, 42, 42), n_actions=6)


@pytest.fixture(scope="module")
def game(model):
    torch.manual_seed(0)
    return figures.record_play(model, n_steps=12, seed=3)


def test_entropy_is_ln_n_for_equal_logits_and_finite_for_huge_ones():
    got = figures.entropy(torch.tensor([[0.0] * 6, [1000.0, 0.0, 0.0, 0.0, 0.0, 0.0]]))
    assert got[0].item() == pytest.approx(math.log(6)) and got[1].item() == pytest.approx(0.0)


def test_two_action_entropy_peaks_at_ln_2_for_a_zero_gap():
    (ax,) = figures.plot_two_action_entropy().axes
    gaps, entropies = ax.lines[0].get_data()
    assert entropies.max() == pytest.approx(math.log(2), abs=1e-6)
    assert gaps[entropies.argmax()] == pytest.approx(0, abs=1e-6)
    assert entropies[0] < 0.01 and ax.get_ylabel() == r"$H(\pi)$"


def test_frame_motion_shows_both_frames_and_their_difference():
    previous, current = np.zeros((1, 4, 4), np.float32), np.zeros((1, 4, 4), np.float32)
    current[0, 1, 2] = 0.5
    axes = figures.plot_frame_motion(previous, current).axes
    assert [ax.get_title() for ax in axes][2] == "frame t minus frame t-1"
    assert axes[2].images[0].get_array()[1, 2] == 0.5 and axes[2].images[0].get_array().sum() == 0.5


def test_feature_maps_are_taken_after_each_relu_and_drawn_one_row_per_block():
    body = nn.Sequential(nn.Conv2d(1, 3, 3, stride=2, padding=1), nn.ReLU(), nn.Flatten())
    maps = figures.feature_maps(body, torch.randn(2, 1, 8, 8))
    assert len(maps) == 1 and maps[0].shape == (3, 4, 4) and maps[0].min() >= 0
    figure = figures.plot_feature_maps(np.zeros((1, 8, 8)), maps + maps, channels=3)
    assert len(figure.axes) == 2 * 4 and figure.axes[0].get_title() == "input"


def test_parameter_table_counts_and_checks_against_the_formula():
    modules = {"a": nn.Linear(3, 2), "b": nn.Linear(2, 1)}
    table = figures.parameter_table(modules, {"a": 8, "b": 3})
    assert "a              2x3, 2" in table and table.splitlines()[-1].split()[1] == "11"
    with pytest.raises(AssertionError, match="b: 3 parameters, the formula says 4"):
        figures.parameter_table(modules, {"a": 8, "b": 4})


def test_run_steps_carries_the_memory_as_a_batch_would_not(model):
    frames = figures.random_play_frames("pong", count=5, every=1)  # five consecutive steps
    assert frames.shape == (5, 1, 42, 42)
    steps = figures.run_steps(model, frames)
    assert steps.value.shape == (5,) and steps.logits.shape == (5, 6) and steps.h.shape == (5, 128)
    with torch.no_grad():  # step 0 starts from zeros, as the batch does; later steps carry (h, c)
        batch = model(frames)
    assert torch.allclose(steps.value[0], batch.value[0, 0], atol=1e-6)
    assert not torch.allclose(steps.h[1:], batch.state[0][1:], atol=1e-6)


def test_one_thread_restores_the_thread_count():
    before = torch.get_num_threads()
    with figures.one_thread():
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


def test_entropy_by_actor_scale_draws_one_histogram_per_scale():
    weight = torch.randn(6, 16)
    weight = weight * 0.01 / weight.norm(dim=1, keepdim=True)
    h = torch.randint(0, 2, (50, 16)) * 2.0 - 1
    (ax,) = figures.plot_entropy_by_actor_scale(h, weight, scales=(1, 100)).axes
    labels = [text.get_text() for text in ax.get_legend().get_texts()]
    assert sorted(labels) == [
        "actor rows of length 0.01",
        "actor rows of length 1",
        "ln 6 (uniform)",
    ]
    counts = [sum(patch.get_height() for patch in container) for container in ax.containers]
    assert counts == [50, 50]


def test_sampling_draws_policy_frequencies_and_the_greedy_box():
    probs = np.array([0.1, 0.6, 0.1, 0.1, 0.05, 0.05])
    (ax,) = figures.plot_sampling(probs, probs, 1, ACTIONS, n_samples=5000).axes
    policy, frequency, greedy = ax.containers
    assert [bar.get_height() for bar in policy] == pytest.approx(probs)
    assert greedy[0].get_x() + greedy[0].get_width() / 2 == pytest.approx(1)
    assert "frequency in 5,000 samples" in [t.get_text() for t in ax.get_legend().get_texts()]


def test_record_play_keeps_one_row_per_step(game):
    assert game["screen"].shape == (12, 210, 160, 3)
    assert game["probs"].shape == (12, 6) and np.allclose(game["probs"].sum(axis=1), 1, atol=1e-5)
    assert game["value"].shape == game["action"].shape == game["reward"].shape == (12,)


def test_greedy_play_takes_the_most_probable_action(model):
    greedy = figures.record_play(model, n_steps=5, seed=3, greedy=True)
    assert (greedy["action"] == greedy["probs"].argmax(axis=1)).all()


def test_record_play_gives_a_network_the_frames_it_was_built_for():
    # an 84x84 network fed 42x42 frames would fail in its first linear layer
    torch.manual_seed(0)
    played = figures.record_play(ActorCritic(obs_shape=(1, 84, 84), n_actions=6), n_steps=3, seed=3)
    assert played["probs"].shape == (3, 6)


def test_play_step_marks_the_step_and_the_points(game):
    game = dict(game, reward=np.array([0.0] * 4 + [1.0] + [0.0] * 4 + [-1.0, 0.0, 0.0]))
    screen, policy, value = figures.plot_play_step(game, 6, ACTIONS, title="t").axes
    assert screen.get_title().startswith("step 6: ")
    # plain words: the goal shows this figure before the notebook defines pi and V
    assert policy.get_title() == "action probabilities (dashed: 1/6 each)"
    assert value.get_title().startswith("critic's estimate of points to come: ")
    assert [bar.get_height() for bar in policy.patches] == pytest.approx(game["probs"][6])
    marks = {(line.get_xdata()[0], line.get_color()) for line in value.lines[1:]}
    assert marks == {(4, "tab:green"), (9, "tab:red"), (6, "k")}


def test_play_viewer_offers_every_game_and_every_step(game):
    viewer = figures.play_viewer({"a": game, "b": dict(game, value=game["value"][:5])}, ACTIONS)
    choice, slider = viewer.children[0].children
    assert list(choice.options) == ["a", "b"] and (slider.min, slider.max) == (0, 11)
