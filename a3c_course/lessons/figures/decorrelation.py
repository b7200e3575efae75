"""Why many workers: the samples of one stream are correlated, those of parallel streams much less
(notebook 04, section 2). Random play in several Pong environments, the correlation of frames and of
returns k steps apart in one stream and across streams at one moment, and its figure.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from matplotlib.figure import Figure

from a3c_course.a3c.envs import make_env


def correlations(samples: np.ndarray, max_lag: int = 60) -> tuple[np.ndarray, float]:
    """Correlation of two samples k steps apart in one stream (k = 0..max_lag), and of two
    different streams at the same step. samples: (streams, T, features)."""
    centred = samples - samples.mean(axis=(0, 1))
    if centred.shape[2] > 1:  # frames: the cosine between mean-centred pixel vectors
        centred = centred / np.linalg.norm(centred, axis=2, keepdims=True)
    else:  # a number per step: the usual correlation coefficient
        centred = centred / np.sqrt((centred**2).mean())
    n_steps = samples.shape[1]
    lagged = [
        (centred[:, : n_steps - k] * centred[:, k:]).sum(-1).mean() for k in range(max_lag + 1)
    ]
    gram = np.einsum("itd,jtd->tij", centred, centred)  # every pair of streams, each step
    return np.array(lagged), float(gram[:, ~np.eye(len(samples), dtype=bool)].mean())


def effective_size(n: int, rho: float) -> float:
    """n samples whose pairs have mean correlation rho are worth this many independent ones."""
    return n / (1 + (n - 1) * max(rho, 0.0))


@dataclass
class Decorrelation:
    frames: np.ndarray  # (streams, T, 42 * 42)
    frame_lag: np.ndarray
    frame_across: float
    return_lag: np.ndarray
    return_across: float

    def table(self) -> str:
        n = len(self.frames)
        one = np.mean([self.return_lag[abs(a - b)] for a in range(n) for b in range(n) if a != b])
        lines = ["correlation of two samples        frames   returns R_t"]
        lines += [
            f"  one stream, {k:2d} steps apart      {self.frame_lag[k]:6.2f}"
            f"   {self.return_lag[k]:8.2f}"
            for k in (1, 5, 20, 60)
        ]
        lines.append(
            f"  two streams, same moment      {self.frame_across:6.2f}   {self.return_across:8.2f}"
        )
        lines.append(
            f"{n} steps of one stream are worth {effective_size(n, one):.1f} independent "
            f"samples; {n} streams at one moment, {effective_size(n, self.return_across):.1f}"
        )
        return "\n".join(lines)


def measure_decorrelation(streams=8, steps=300, warm_up=50, tail=300, gamma=0.99) -> Decorrelation:
    """Random play in `streams` Pong environments (seeds 0..): the frames and the discounted
    returns R_t of `steps` steps after `warm_up`; `tail` more rewards complete each R_t."""
    total = warm_up + steps + tail
    frames = np.zeros((streams, steps, 42 * 42), dtype=np.float32)
    rewards = np.zeros((streams, total), dtype=np.float32)
    for i in range(streams):
        env = make_env("pong", seed=i, sticky_actions=0.0)  # random play: no need for stickiness
        for t in range(total):
            obs, rewards[i, t], terminated, truncated, _ = env.step(env.action_space.sample())
            if terminated or truncated:
                obs, _ = env.reset()
            if warm_up <= t < warm_up + steps:
                frames[i, t - warm_up] = obs.reshape(-1)
        env.close()
    returns, following = np.zeros_like(rewards), np.zeros(streams)
    for t in reversed(range(total)):  # R_t = r_t + gamma R_{t+1}, backwards
        following = rewards[:, t] + gamma * following
        returns[:, t] = following
    frame_lag, frame_across = correlations(frames)
    return_lag, return_across = correlations(returns[:, warm_up : warm_up + steps, None])
    return Decorrelation(frames, frame_lag, frame_across, return_lag, return_across)


def plot_decorrelation(d: Decorrelation, rollout_steps: int = 20) -> Figure:
    """Top: one stream's consecutive frames, and five streams at one moment. Bottom: correlation
    against the distance k in steps, for frames and for returns, with the across-streams level."""
    figure = Figure(figsize=(10, 6.2), dpi=80, layout="constrained")
    top, bottom = figure.subfigures(2, 1, height_ratios=[1, 1.2])
    columns, middle = min(5, len(d.frames)), d.frames.shape[1] // 2
    strip = top.subplots(2, columns, squeeze=False)
    for j in range(columns):
        strip[0, j].imshow(d.frames[0, middle + j].reshape(42, 42), cmap="gray", vmin=0, vmax=1)
        strip[0, j].set_title(f"stream 0, step {middle + j}", fontsize=8)
        strip[1, j].imshow(d.frames[j, middle].reshape(42, 42), cmap="gray", vmin=0, vmax=1)
        strip[1, j].set_title(f"stream {j}, step {middle}", fontsize=8)
    for ax in strip.flat:
        ax.set_xticks([])
        ax.set_yticks([])
    strip[0, 0].set_ylabel("one worker", fontsize=9)
    strip[1, 0].set_ylabel(f"{columns} workers", fontsize=9)
    for ax, lag, across, what in zip(
        bottom.subplots(1, 2),
        (d.frame_lag, d.return_lag),
        (d.frame_across, d.return_across),
        ("frames (mean-centred)", "returns $R_t$, $\\gamma$ = 0.99"),
        strict=True,
    ):
        ax.plot(lag, label="one stream, k steps apart")
        ax.axhline(across, color="tab:red", ls="--", label="two streams, same moment")
        ax.axvspan(0, rollout_steps, color="0.9", zorder=0, label="within one rollout")
        ax.set(xlabel="k (steps apart)", ylabel="correlation", title=what, ylim=(-0.2, 1.05))
    figure.axes[-2].legend(fontsize=8)
    return figure
