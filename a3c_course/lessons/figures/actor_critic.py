"""Unit 2's figures and harnesses (notebook 02, the actor-critic network).

The notebook builds the network by hand; the plotting, the game-playing loops and the bookkeeping
behind its pictures live here. Every function takes the pieces it draws (frames, a model, logits)
as arguments, so the notebook's hand-built network and the package's `ActorCritic` both fit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import matplotlib.pyplot as plt
import numpy as np
import torch
from torch import nn

# Unit 2 calls figures.random_play_frames too (a redundant alias marks a re-export).
from a3c_course.lessons.diagnostics import random_play_frames as random_play_frames
from a3c_course.measure.throughput import one_thread  # the notebook calls figures.one_thread too


def _numpy(x) -> np.ndarray:
    """A tensor or array as a NumPy array (matplotlib warns when handed tensors)."""
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def entropy(logits: torch.Tensor) -> torch.Tensor:
    """H(pi) of each row of logits, from log-probabilities (finite for any logits)."""
    log_p = torch.log_softmax(logits, dim=-1)
    return -(log_p.exp() * log_p).sum(dim=-1)


def plot_two_action_entropy(max_gap: float = 8.0):
    """The entropy of a two-action policy with logits (gap, 0), against the gap."""
    gaps = torch.linspace(-max_gap, max_gap, 201)
    h = entropy(torch.stack([gaps, torch.zeros_like(gaps)], dim=1))
    fig, ax = plt.subplots(figsize=(6, 2.8))
    ax.plot(_numpy(gaps), _numpy(h))
    ax.axhline(math.log(2), color="k", ls="--", lw=1, label="ln 2 = 0.69 (uniform)")
    ax.set(xlabel=r"logit gap $z_1 - z_2$", ylabel=r"$H(\pi)$")
    ax.legend()
    fig.tight_layout()
    return fig


def plot_frame_motion(previous: np.ndarray, current: np.ndarray):
    """Two consecutive (1, 42, 42) frames and their difference (red: appeared, blue: gone)."""
    fig, axes = plt.subplots(1, 3, figsize=(9, 3.2))
    pictures = (
        (previous[0], "gray", (0, 1), "frame t-1"),
        (current[0], "gray", (0, 1), "frame t (the network's input)"),
        (current[0] - previous[0], "coolwarm", (-0.5, 0.5), "frame t minus frame t-1"),
    )
    for ax, (image, cmap, (low, high), title) in zip(axes, pictures, strict=True):
        ax.imshow(image, cmap=cmap, vmin=low, vmax=high)
        ax.set_title(title)
        ax.axis("off")
    fig.tight_layout()
    return fig


def feature_maps(conv_body: nn.Sequential, x: torch.Tensor) -> list[torch.Tensor]:
    """The first sample's activations after each ReLU of conv_body, for input x (B, C, H, W)."""
    maps = []
    with torch.no_grad():
        for layer in conv_body:
            x = layer(x)
            if isinstance(layer, nn.ReLU):
                maps.append(x[0])
    return maps


def plot_feature_maps(obs: np.ndarray, maps: Sequence[torch.Tensor], channels: int = 8):
    """One row per block: the input frame, then the first `channels` maps of that block."""
    fig, axes = plt.subplots(len(maps), channels + 1, figsize=(12, 1.4 * len(maps)))
    for row, block in enumerate(maps):
        axes[row, 0].imshow(obs[0], cmap="gray")
        axes[row, 0].set_ylabel(f"conv{row + 1}\n{block.shape[1]}x{block.shape[2]}", fontsize=9)
        for col in range(channels):
            axes[row, col + 1].imshow(_numpy(block[col]), cmap="viridis")
            if row == 0:
                axes[row, col + 1].set_title(f"channel {col}", fontsize=9)
    axes[0, 0].set_title("input", fontsize=9)
    for ax in axes.flat:
        ax.set_xticks([])
        ax.set_yticks([])
    fig.suptitle("Feature maps after each conv + ReLU block (random weights)")
    fig.tight_layout()
    return fig


def parameter_table(modules: dict[str, nn.Module], formula: dict[str, int]) -> str:
    """One row per module: its tensors' shapes, its parameter count and share of the total.

    Raises AssertionError when a module's count differs from formula[name].
    """
    counts = {name: sum(p.numel() for p in module.parameters()) for name, module in modules.items()}
    for name, count in counts.items():
        assert count == formula[name], (
            f"{name}: {count} parameters, the formula says {formula[name]}"
        )
    total = sum(counts.values())
    rows = [f"{'layer':<14} {'tensors':<44} {'parameters':>10} {'share':>7}"]
    for name, module in modules.items():
        shapes = ", ".join("x".join(map(str, p.shape)) for p in module.parameters())
        rows.append(f"{name:<14} {shapes:<44} {counts[name]:>10,} {counts[name] / total:>7.1%}")
    rows.append(f"{'total':<14} {'':<44} {total:>10,} {1:>7.1%}")
    return "\n".join(rows)


class StepOutputs(NamedTuple):
    value: torch.Tensor  # (T,)
    logits: torch.Tensor  # (T, n_actions)
    h: torch.Tensor  # (T, hidden)
    c: torch.Tensor  # (T, hidden)


def run_steps(model: nn.Module, frames: np.ndarray | torch.Tensor) -> StepOutputs:
    """Run model on frames (T, 1, 42, 42) one step at a time from an empty memory (h, c) of zeros,
    carrying the memory from step to step.

    model(frames (B, ...), (h, c)) must return (value, logits, (h, c)): the notebook's hand-built
    network and the package's ActorCritic both do.
    """
    hidden = model.lstm.hidden_size
    memory = (torch.zeros(1, hidden), torch.zeros(1, hidden))
    outputs = []
    with torch.no_grad(), one_thread():
        for frame in torch.as_tensor(frames):
            value, logits, memory = model(frame.unsqueeze(0), memory)
            outputs.append((value[0, 0], logits[0], memory[0][0], memory[1][0]))
    return StepOutputs(*(torch.stack(column) for column in zip(*outputs, strict=True)))


def plot_entropy_by_actor_scale(h: torch.Tensor, actor_weight: torch.Tensor, scales=(1, 100)):
    """Histograms of the first policy's entropy for N memories h (N, hidden), with the actor's
    weights multiplied by each scale (1: the actor as initialised, rows of length 0.01)."""
    fig, ax = plt.subplots(figsize=(7, 3))
    n_actions = actor_weight.shape[0]
    bins = np.linspace(0, math.log(n_actions) + 0.05, 60)
    for number, scale in enumerate(scales):
        alpha = 1.0 if number == 0 else 0.7
        norm = actor_weight.norm(dim=1).mean().item() * scale
        label = f"actor rows of length {norm:.2g}"
        entropies = _numpy(entropy(h @ (actor_weight * scale).T))
        ax.hist(entropies, bins=bins, alpha=alpha, label=label)
    ax.axvline(math.log(n_actions), color="k", ls="--", label=f"ln {n_actions} (uniform)")
    ax.set(xlabel="entropy of the first policy when every unit of h is +-1", ylabel="memories h")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_sampling(probs, frequencies, greedy: int, action_names: Sequence[str], n_samples: int):
    """Bars: the policy, the frequencies of n_samples sampled actions, the greedy action's box."""
    xs = np.arange(len(action_names))
    fig, ax = plt.subplots(figsize=(7, 3))
    ax.bar(xs - 0.2, _numpy(probs), width=0.4, label=r"$\pi(a \mid s)$")
    ax.bar(xs + 0.2, _numpy(frequencies), width=0.4, label=f"frequency in {n_samples:,} samples")
    ax.bar(greedy, 1.0, width=0.9, fill=False, ls="--", label="greedy: always this one")
    ax.set_xticks(xs, action_names, fontsize=8)
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def record_play(model: nn.Module, n_steps: int, seed: int, greedy: bool = False, game="pong"):
    """Let model play n_steps of game; keep each step's screen, policy, value, action and reward.

    greedy: take the most probable action (as evaluations do) instead of sampling it (as
    training does). Returns a dict of arrays, one row per step.
    """
    from a3c_course.a3c.envs import frame_options, make_env
    from a3c_course.a3c.model import choose_action

    # the frames the network was built for (84x84 for the shipped Pong agent); a network built in
    # Unit 2 by hand has no obs_shape and reads the course's 42x42
    fits = frame_options(model.obs_shape) if hasattr(model, "obs_shape") else {}
    env = make_env(game, seed=seed, render_mode="rgb_array", **fits)
    frame, _ = env.reset(seed=seed)
    hidden = model.lstm.hidden_size
    memory = (torch.zeros(1, hidden), torch.zeros(1, hidden))
    record = {"screen": [], "probs": [], "value": [], "action": [], "reward": []}
    with torch.no_grad(), one_thread():
        for _ in range(n_steps):
            value, logits, memory = model(torch.from_numpy(frame).unsqueeze(0), memory)
            action = choose_action(logits, greedy).item()
            record["screen"].append(env.render())
            record["probs"].append(torch.softmax(logits, -1)[0].numpy())
            record["value"].append(value.item())
            record["action"].append(action)
            frame, reward, terminated, truncated, _ = env.step(action)
            record["reward"].append(reward)
            if terminated or truncated:
                break
    env.close()
    return {key: np.array(values) for key, values in record.items()}


def plot_play_step(episode: dict, t: int, action_names: Sequence[str], title: str = ""):
    """Step t of a recorded game: the screen, the policy, and the value over the whole game with
    the points scored (green) and conceded (red). The titles are in plain words: the notebook shows
    this figure as its goal, before it names the policy and the value."""
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.2), gridspec_kw={"width_ratios": [1, 1.4, 1.8]})
    axes[0].imshow(episode["screen"][t])
    axes[0].set_title(f"step {t}: {action_names[episode['action'][t]]}", fontsize=10)
    axes[0].axis("off")
    n_actions = len(action_names)
    axes[1].bar(range(n_actions), episode["probs"][t])
    axes[1].axhline(1 / n_actions, color="k", ls="--", lw=1)
    axes[1].set_xticks(range(n_actions), action_names, rotation=45, fontsize=7)
    axes[1].set_ylim(0, 1)
    axes[1].set_title(f"action probabilities (dashed: 1/{n_actions} each)", fontsize=10)
    axes[2].plot(episode["value"], lw=1)
    for sign, colour in ((1, "tab:green"), (-1, "tab:red")):
        for step in np.flatnonzero(np.sign(episode["reward"]) == sign):
            axes[2].axvline(step, color=colour, ls=":", lw=1.5)
    axes[2].axvline(t, color="k", lw=1)
    axes[2].set_xlabel("step (dotted: a point won, green, or lost, red)")
    axes[2].set_title(
        f"critic's estimate of points to come: {episode['value'][t]:.3g}", fontsize=10
    )
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig


def play_viewer(episodes: dict[str, dict], action_names: Sequence[str]):
    """A widget: choose a recorded game, move a slider over its steps, see plot_play_step."""
    import ipywidgets as widgets

    choice = widgets.Dropdown(options=list(episodes), description="game")
    longest = max(len(episode["value"]) for episode in episodes.values())
    slider = widgets.IntSlider(
        value=0, min=0, max=longest - 1, description="step", continuous_update=False
    )

    def show(name, t):
        t = min(t, len(episodes[name]["value"]) - 1)
        plot_play_step(episodes[name], t, action_names, title=name)
        plt.show()

    output = widgets.interactive_output(show, {"name": choice, "t": slider})
    return widgets.VBox([widgets.HBox([choice, slider]), output])
