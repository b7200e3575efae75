"""Why many games at once: the returns of one game are correlated from step to step, those of
parallel games much less (notebook 04, section 2). Random play in several Pong games, the
correlation of the returns k steps apart in one game and across games at one moment, and its
figure.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from matplotlib.figure import Figure

from a3c_course.a3c.envs import make_env

LAGS_SHOWN = 30  # the figure's steps apart: a rollout (20) and a little beyond


def correlations(samples: np.ndarray, max_lag: int = 60) -> tuple[np.ndarray, float]:
    """Correlation of two samples k steps apart in one game (k = 0..max_lag), and of two
    different games at the same step. samples: (games, T, features)."""
    centred = samples - samples.mean(axis=(0, 1))
    if centred.shape[2] > 1:  # vectors (e.g. frames): the cosine between centred vectors
        centred = centred / np.linalg.norm(centred, axis=2, keepdims=True)
    else:  # a number per step: the usual correlation coefficient
        centred = centred / np.sqrt((centred**2).mean())
    n_steps = samples.shape[1]
    lagged = [
        (centred[:, : n_steps - k] * centred[:, k:]).sum(-1).mean() for k in range(max_lag + 1)
    ]
    gram = np.einsum("itd,jtd->tij", centred, centred)  # every pair of games, each step
    return np.array(lagged), float(gram[:, ~np.eye(len(samples), dtype=bool)].mean())


def effective_size(n: int, rho: float) -> float:
    """n samples whose pairs have mean correlation rho are worth this many independent ones."""
    return n / (1 + (n - 1) * max(rho, 0.0))


@dataclass
class Decorrelation:
    frames: np.ndarray  # (games, T, 42 * 42): what the figure's top rows show
    return_lag: np.ndarray  # one game, k = 0.. steps apart
    return_across: float  # two games, same moment

    def table(self) -> str:
        """The correlations the figure draws: one game at 1, 5 and 20 steps apart, and two games
        at one moment (the mean over every pair of different games, at every step)."""
        lines = ["correlation of the returns R_t of two steps"]
        lines += [
            f"  one game, {k:2d} step{'s' if k > 1 else ' '} apart   {self.return_lag[k]:6.2f}"
            for k in (1, 5, 20)
        ]
        lines.append(f"  two games, same moment     {self.return_across:6.2f}")
        return "\n".join(lines)

    def worth(self) -> str:
        """What n samples are worth in independent ones (effective_size), for n steps in a row of
        one game (their pairs' mean correlation: the lag curve over every pair's distance) and for
        one step of each of n games."""
        n = len(self.frames)
        one = np.mean([self.return_lag[abs(a - b)] for a in range(n) for b in range(n) if a != b])
        return (
            f"{n} steps in a row of one game (mean correlation {one:.2f}) are worth "
            f"{effective_size(n, one):.1f} independent samples; one step of each of {n} games "
            f"(mean correlation {self.return_across:.2f}), {effective_size(n, self.return_across):.1f}"
        )


def measure_decorrelation(games=8, steps=300, warm_up=50, tail=300, gamma=0.99) -> Decorrelation:
    """Random play in `games` Pong games (seeds 0..): the frames and the discounted returns R_t of
    `steps` steps after `warm_up`; `tail` more rewards complete each R_t."""
    total = warm_up + steps + tail
    frames = np.zeros((games, steps, 42 * 42), dtype=np.float32)
    rewards = np.zeros((games, total), dtype=np.float32)
    for i in range(games):
        env = make_env("pong", seed=i, sticky_actions=0.0)  # random play: no need for stickiness
        for t in range(total):
            obs, rewards[i, t], terminated, truncated, _ = env.step(env.action_space.sample())
            if terminated or truncated:
                obs, _ = env.reset()
            if warm_up <= t < warm_up + steps:
                frames[i, t - warm_up] = obs.reshape(-1)
        env.close()
    returns, following = np.zeros_like(rewards), np.zeros(games)
    for t in reversed(range(total)):  # R_t = r_t + gamma R_{t+1}, backwards
        following = rewards[:, t] + gamma * following
        returns[:, t] = following
    return_lag, return_across = correlations(returns[:, warm_up : warm_up + steps, None])
    return Decorrelation(frames, return_lag, return_across)


def plot_decorrelation(d: Decorrelation, rollout_steps: int = 20) -> Figure:
    """Top: one game's consecutive frames, and every game at one moment. Bottom: the correlation
    of the returns against the distance k in steps, with the across-games level."""
    columns, middle = min(8, len(d.frames)), d.frames.shape[1] // 2
    figure = Figure(figsize=(10, 5.6), dpi=80, layout="constrained")
    top, bottom = figure.subfigures(2, 1, height_ratios=[1, 1.1])
    strip = top.subplots(2, columns, squeeze=False)
    for j in range(columns):
        strip[0, j].imshow(d.frames[0, middle + j].reshape(42, 42), cmap="gray", vmin=0, vmax=1)
        strip[0, j].set_title(f"step {middle + j}", fontsize=8)
        strip[1, j].imshow(d.frames[j, middle].reshape(42, 42), cmap="gray", vmin=0, vmax=1)
        strip[1, j].set_title(f"game {j}", fontsize=8)
    for ax in strip.flat:
        ax.set_xticks([])
        ax.set_yticks([])
    strip[0, 0].set_ylabel(f"game 0,\n{columns} steps\nin a row", fontsize=8)
    strip[1, 0].set_ylabel(f"{columns} games,\nstep {middle}", fontsize=8)
    ax = bottom.subplots()
    shown = min(LAGS_SHOWN, len(d.return_lag) - 1)
    ax.plot(range(shown + 1), d.return_lag[: shown + 1], label="one game, k steps apart")
    ax.axhline(d.return_across, color="tab:red", ls="--", label="two games, same moment")
    ax.axvspan(0, rollout_steps, color="0.9", zorder=0, label="within one rollout")
    ax.set(xlabel="k (steps apart)", ylabel="correlation", ylim=(-0.2, 1.05), xlim=(0, shown))
    ax.set_title("the returns $R_t$ of two steps ($\\gamma$ = 0.99)", fontsize=10)
    ax.legend(fontsize=8, loc="center right")
    return figure
