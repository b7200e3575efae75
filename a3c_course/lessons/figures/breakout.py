"""Unit 4's Breakout section: what a lost life does to the return the critic learns.

Each function draws or computes what one cell of notebooks/04_async_training.ipynb's Breakout
section shows. Figures are returned (matplotlib Figure), not shown.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch

from a3c_course.a3c.returns import n_step_returns


def lost_life_steps(lives: Sequence[int]) -> np.ndarray:
    """The steps t whose action cost a life: lives[t + 1] < lives[t] (lives has one entry more
    than there are steps: the count after reset, then after each step)."""
    return np.flatnonzero(np.diff(np.asarray(lives)) < 0)


def game_returns(
    rewards: Sequence[float], lives: Sequence[int], gamma: float = 0.99, life_loss_terminal=False
) -> np.ndarray:
    """G_t at every step of one whole game, with the worker's rule for its ends: the game over is
    terminal, and with life_loss_terminal each step that loses a life is terminal too."""
    terminated = np.zeros(len(rewards), dtype=bool)
    terminated[-1] = True
    if life_loss_terminal:
        terminated[lost_life_steps(lives)] = True
    rewards_t = torch.tensor(rewards, dtype=torch.float32)
    zeros = torch.zeros_like(rewards_t)
    returns = n_step_returns(
        rewards_t,
        zeros,
        torch.from_numpy(terminated),
        torch.zeros_like(rewards_t, dtype=bool),
        gamma,
    )
    return returns.numpy()


def plot_life_loss_returns(game: dict, gamma: float = 0.99):
    """The return G_t through one game (figures.play_game's record), counted over the whole game
    and with each lost life as an end; dotted lines mark the lost lives."""
    rewards, lives = game["rewards"], game["lives"]
    figure, ax = plt.subplots(figsize=(9, 3.2), layout="constrained")
    ax.plot(game_returns(rewards, lives, gamma), label="the whole game is one episode")
    ax.plot(
        game_returns(rewards, lives, gamma, life_loss_terminal=True),
        label="a lost life ends the episode (life_loss_terminal)",
    )
    for step in lost_life_steps(lives):
        ax.axvline(step, color="0.5", ls=":", lw=1)
    ax.set_xlabel("agent step (dotted: a life lost)")
    ax.set_ylabel(f"return G_t (γ = {gamma:g})")
    ax.legend(fontsize=8)
    plt.close(figure)
    return figure
