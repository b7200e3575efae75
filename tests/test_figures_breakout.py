"""Unit 4's Breakout figures: the returns with and without a lost life as an end, by hand."""

import numpy as np
import pytest

from a3c_course.lessons.figures import breakout


def test_a_lost_life_cuts_the_return_there_and_nowhere_else():
    rewards = [1.0, 0.0, 0.0, 1.0]  # a brick, the ball lost at step 1, a brick at the end
    lives = [5, 5, 4, 4, 4]
    g = 0.9
    assert breakout.lost_life_steps(lives).tolist() == [1]
    whole = breakout.game_returns(rewards, lives, g)
    per_life = breakout.game_returns(rewards, lives, g, life_loss_terminal=True)
    np.testing.assert_allclose(whole, [1 + g**3, g**2, g, 1.0], rtol=1e-6)
    np.testing.assert_allclose(per_life, [1.0, 0.0, g, 1.0], rtol=1e-6)


def test_the_figure_draws_both_returns_and_marks_each_lost_life():
    game = {"rewards": [0.0, 1.0, 0.0, 0.0, 1.0, 0.0], "lives": [3, 3, 3, 2, 2, 1, 0]}
    figure = breakout.plot_life_loss_returns(game, gamma=0.5)
    ax = figure.axes[0]
    curves = [line for line in ax.lines if len(line.get_xdata()) == 6]
    marks = [line for line in ax.lines if line.get_linestyle() == ":"]
    assert len(curves) == 2 and len(marks) == 3
    assert curves[1].get_ydata()[2] == pytest.approx(0.0)  # step 2 lost a life: nothing after it
    assert curves[0].get_ydata()[2] == pytest.approx(0.5 * 1.0 * 0.5)  # ... unless the game goes on
