"""Unit 3's testbed and figures (a3c_course.lessons.figures.advantages): the testbed's numbers are right,
and each figure draws the data it says it draws."""

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
import torch

from a3c_course.lessons.figures import advantages as fig


@pytest.fixture(scope="module")
def episodes():
    return fig.record_episodes(3, np.random.default_rng(0))


def test_the_recorded_episodes_end_by_the_pole_falling(episodes):
    assert [len(e["rewards"]) for e in episodes] == [28, 47, 18]  # the notebook's first three
    assert all(e["terminated"] and not e["truncated"] for e in episodes)
    assert all(e["states"].shape == (len(e["rewards"]), 4) for e in episodes)


def test_a_time_limit_truncates():
    short = fig.record_episodes(4, np.random.default_rng(5), max_episode_steps=10)
    assert any(e["truncated"] for e in short)
    assert all(len(e["rewards"]) <= 10 for e in short)


def test_true_values_of_a_falling_pole_and_the_critics_bias(episodes):
    last_state = episodes[0]["states"][-1:]  # one step before the pole falls: one reward, then 0
    assert fig.true_values(last_state, 50, np.random.default_rng(1))[0] == pytest.approx(1.0)
    states = episodes[1]["states"]
    v = np.zeros(len(states))
    assert fig.critic(states, v).mean() == pytest.approx(fig.CRITIC_BIAS, abs=0.5)


def test_n_step_target_by_hand():
    rewards, next_values = [1.0, 1.0, 1.0], [5.0, 6.0, 7.0]
    no_end = [False, False, False]
    assert fig.n_step_target(rewards, next_values, no_end, 0, 1, 0.5) == 1 + 0.5 * 5
    assert fig.n_step_target(rewards, next_values, no_end, 0, None, 0.5) == 1.75 + 0.125 * 7
    assert fig.n_step_target(rewards, next_values, [False, True, False], 0, None, 0.5) == 1.5


def test_the_bias_variance_experiment_trades_bias_for_variance(episodes, capsys):
    result = fig.bias_variance_experiment(
        episodes, n_states=3, n_rollouts=20, rollouts_for_v=4, rollouts_for_q=50,
        lambdas=(0.0, 0.5, 1.0),
    )
    assert result.errors.shape == (3, 3, 20)
    assert capsys.readouterr().err == ""  # no progress bar: a saved notebook would keep its "0%"
    assert result.variance[0] == pytest.approx(0.0, abs=1e-12)  # deterministic physics
    assert result.variance[-1] > result.variance[0] and result.bias[-1] < result.bias[0]
    assert np.allclose(result.mse, result.bias**2 + result.variance)
    assert "smallest mean squared error at lambda" in result.table()
    figure = fig.plot_bias_variance(result)
    lines = figure.axes[0].get_lines()
    assert np.allclose(lines[0].get_ydata(), result.bias**2)
    assert np.allclose(lines[2].get_ydata(), result.mse)
    best = result.lambdas[result.mse.argmin()]
    assert np.allclose(lines[3].get_xdata(), best) and f"{best:.2f}" in lines[3].get_label()
    assert "bias$^2$" in lines[0].get_label()
    hist = fig.show_lambda(result, 0.5)
    assert len(hist.axes) == 2 and "0.50" in hist.axes[0].get_title()


def test_the_discount_figures():
    figure = fig.plot_discount_weights()
    lines = figure.axes[0].get_lines()
    curves, dots = lines[::2], lines[1::2]  # each curve is followed by the dot at its horizon
    assert np.allclose(curves[2].get_ydata()[100], 0.99**100)
    assert [float(dot.get_xdata()[0]) for dot in dots] == pytest.approx([2, 10, 100])
    assert np.allclose([dot.get_ydata()[0] for dot in dots], [0.25, 0.9**10, 0.99**100])
    assert "horizon 100 steps, weight there 0.37" in curves[2].get_label()
    assert "horizon 100 steps" in fig.show_discount(0.99).axes[0].get_title()


def test_the_estimates_along_an_episode(episodes):
    steps = len(episodes[0]["rewards"])
    v_true = np.linspace(9, 1, steps)
    q_true = v_true + 0.1
    estimates = fig.plot_estimates(episodes[0]["rewards"], q_true, v_true + 1)
    truth, monte_carlo = (line.get_ydata() for line in estimates.axes[0].get_lines()[:2])
    assert np.allclose(truth, q_true) and "Q(s_t" in estimates.axes[0].get_lines()[0].get_label()
    assert monte_carlo[-1] == 1.0 and monte_carlo[0] == pytest.approx((1 - 0.9**steps) / 0.1)


def test_the_gae_weights_sum_to_one():
    figure = fig.plot_gae_weights()
    for line in figure.axes[0].get_lines():
        assert line.get_ydata().sum() == pytest.approx(1.0)


def test_the_timeline_shows_three_episodes_and_two_stops():
    ax = fig.draw_rollout_timeline().axes[0]
    texts = [text.get_text() for text in ax.texts]
    assert [name for name in texts if name.startswith("episode")] == [
        "episode 1", "episode 2", "episode 3"
    ]
    assert texts.count("x") == 2 and any("truncated" in text for text in texts)


def test_the_time_limit_targets():
    figure = fig.plot_time_limit_targets(np.ones(4), np.ones(3), np.zeros(3), 30)
    assert "30-step" in figure.axes[0].get_title() and len(figure.axes[0].get_lines()) == 3


def test_the_policy_gradient_picture():
    assert after_step_moves_the_taken_action()
    with_return, with_advantage = fig.baseline_samples()
    assert with_return.mean() == pytest.approx(0.25, abs=0.2)  # unbiased, both
    assert with_advantage.mean() == pytest.approx(0.25, abs=0.05)
    assert with_advantage.std() < with_return.std() / 5  # the baseline removes most of the noise
    figure = fig.plot_policy_gradient()
    assert len(figure.axes) == 2 and len(figure.axes[0].patches) == 9  # 3 bars x 3 policies


def after_step_moves_the_taken_action():
    before = torch.softmax(torch.tensor([0.5, 0.0, -0.5]), 0)[0]
    return fig.after_one_step(2.0)[0] > before > fig.after_one_step(-2.0)[0]


def test_the_backward_pass_picture():
    deltas, advantages = [0.86, -0.40, 0.67], [0.572, -0.40, 0.67]
    ax = fig.draw_gae_backward(deltas, advantages, 0.72, ends=[False, True, False]).axes[0]
    texts = [text.get_text() for text in ax.texts]
    assert any("+0.57" in text and "step 0" in text for text in texts)
    assert texts.count("x") == 1 and sum("0.72" in text for text in texts) == 2  # one carry cut
    assert any("= 0" in text for text in texts)  # A_T = 0 after the rollout


def test_code_of_leaves_out_the_docstring():
    def documented(x):
        """A docstring
        on two lines."""
        return x + 1

    code = fig.code_of(documented)
    assert "docstring" not in code and "return x + 1" in code and code.startswith("def documented")


def test_the_timeline_names_the_flags_that_stop_the_recursion():
    texts = [text.get_text() for text in fig.draw_rollout_timeline().axes[0].texts]
    footer = next(text for text in texts if text.startswith("grey arrows"))
    assert "terminated or truncated" in footer and "done" not in footer


def test_the_notebooks_measurements_shrink_only_under_the_tests(monkeypatch):
    calls = []
    monkeypatch.setattr(
        fig, "true_values", lambda states, games, rng, first_actions=None: calls.append(games)
    )
    monkeypatch.setattr(fig, "bias_variance_experiment", lambda episodes, **kw: calls.append(kw))
    monkeypatch.setenv("A3C_COURSE_FAST", "0")
    fig.monte_carlo_values(np.zeros((1, 4)), np.random.default_rng(0))
    fig.measure_bias_variance([])
    monkeypatch.setenv("A3C_COURSE_FAST", "1")
    fig.monte_carlo_values(np.zeros((1, 4)), np.random.default_rng(0))
    fig.measure_bias_variance([])
    assert calls[0] == fig.GAMES_PER_STATE and calls[1] == {}  # the learner's: the full settings
    assert calls[2] < fig.GAMES_PER_STATE and calls[3]["n_rollouts"] < 400


def test_the_testbed_figure_draws_the_followed_episode(capsys):
    data = fig.testbed()
    assert fig.testbed() is data  # computed once
    assert len(data["episodes"]) == 20 and len(data["rewards"]) == 47
    assert np.allclose(data["v_hat"], fig.critic(data["episodes"][1]["states"], data["v_true"]))
    figure = fig.plot_testbed_episode()
    assert "lasted [28, 47, 18" in capsys.readouterr().out
    truth = figure.axes[0].get_lines()[0]
    assert np.allclose(truth.get_ydata(), data["q_true"])
