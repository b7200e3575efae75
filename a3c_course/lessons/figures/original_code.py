"""The appendix's harnesses and figures (notebooks/appendix_original_code.ipynb).

The original course's `train.py` mapped to the package (`BLOCKS`, `plot_block_map`); the course's
update beside the original's (`a3c_course.lessons.original_course.original_update`), and the
experiment that shows why gradient clipping does not rescue the original on PyTorch 2.x
(`run_changing_rollouts`, `plot_stale_gradients`); a game that never ends, to count the steps a
time limit allows; and the small scripts, each run in a fresh Python, that show the process-level
faults (no `__main__` guard, `OMP_NUM_THREADS` set after `import torch`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass

import gymnasium as gym
import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F

from a3c_course.a3c.model import ActorCritic
from a3c_course.a3c.optim import SharedAdam
from a3c_course.a3c.returns import a3c_loss
from a3c_course.a3c.worker import sync_from_shared, update_shared

# The blocks of the original train.py: (letter, its lines, what it does, the course's equivalent).
BLOCKS = (
    ("A", "1-7", "imports", "envs.make_env, model.ActorCritic"),
    ("B", "10-14", "ensure_shared_grads", "step 4 of worker.update_shared"),
    ("C", "16-24", "set-up: seeds, env, model", "worker_loop.worker_loop, EnvRunner"),
    ("D", "25-33", "top of the loop: sync, LSTM state", "worker.sync_from_shared"),
    ("E", "34-57", "the rollout", "worker.collect_rollout, model.sample_action"),
    ("F", "58-62", "the bootstrap value", "collect_rollout's next_values"),
    ("G", "63-73", "returns, advantages, loss", "returns.n_step_returns, gae, a3c_loss"),
    ("H", "74-78", "the update", "worker.update_shared, optim.SharedAdam"),
)


def plot_block_map(blocks=BLOCKS):
    """train.py's blocks (left) joined to the package's functions that do their job today (right)."""
    fig, ax = plt.subplots(figsize=(9.5, 4.0))
    for row, (letter, lines, job, course) in enumerate(blocks):
        y = len(blocks) - 1 - row
        ax.text(
            0.0,
            y,
            f"{letter}  {job}  (lines {lines})",
            va="center",
            ha="left",
            fontsize=9,
            bbox=dict(boxstyle="round", fc="tab:red", alpha=0.15),
        )
        ax.annotate("", xy=(0.58, y), xytext=(0.48, y), arrowprops=dict(arrowstyle="->"))
        ax.text(
            0.6,
            y,
            course,
            va="center",
            ha="left",
            fontsize=9,
            family="monospace",
            bbox=dict(boxstyle="round", fc="tab:blue", alpha=0.15),
        )
    ax.text(0.0, len(blocks) - 0.2, "the original train.py", fontweight="bold", va="bottom")
    ax.text(0.6, len(blocks) - 0.2, "a3c_course today", fontweight="bold", va="bottom")
    ax.set(xlim=(-0.02, 1.02), ylim=(-0.6, len(blocks) + 0.3))
    ax.axis("off")
    return fig


def course_update(local_model, shared_model, optimizer, loss, max_grad_norm=40.0):
    """The course's update, `a3c_course.a3c.worker.update_shared`."""
    update_shared(local_model, shared_model, optimizer, loss, max_grad_norm)


def small_models(seed=0):
    """(local model, shared model in shared memory, SharedAdam at the original's lr 1e-4)."""
    torch.manual_seed(seed)
    shared_model = ActorCritic((4,), 2, hidden_size=64).share_memory()
    local_model = ActorCritic((4,), 2, hidden_size=64)
    return local_model, shared_model, SharedAdam(shared_model.parameters(), lr=1e-4)


def _fixed_targets(batch=20):
    """Actions, advantages and returns of a stand-in rollout (the same for every rollout)."""
    generator = torch.Generator().manual_seed(0)
    torch.randn(batch, 4, generator=generator)  # keeps the draws of the original experiment
    actions = torch.randint(0, 2, (batch,), generator=generator)
    return actions, torch.randn(batch, generator=generator), torch.randn(batch, generator=generator)


def stand_in_loss(model, obs, targets):
    """The A3C loss of a batch of independent steps: obs (B, 4) and targets (actions, A, R)."""
    actions, advantages, returns = targets
    out = model(obs)
    log_pi = F.log_softmax(out.logits, dim=1)
    entropy = -(log_pi.exp() * log_pi).sum(1)
    log_probs = log_pi.gather(1, actions[:, None])[:, 0]
    return a3c_loss(log_probs, entropy, out.value[:, 0], advantages, returns).total


def _flat(grads):
    return torch.cat([g.flatten() for g in grads])


@dataclass
class UpdateTrace:
    """Per rollout: the norm of the gradient the optimizer applied, and its cosine with the
    rollout's own gradient (1: exactly this rollout's direction)."""

    norms: np.ndarray
    cosines: np.ndarray


def run_changing_rollouts(update, rollouts=200, seed=1):
    """Play `rollouts` stand-in rollouts (fresh observations each) through `update`."""
    local_model, shared_model, optimizer = small_models()
    targets, batches = _fixed_targets(), torch.Generator().manual_seed(seed)
    norms, cosines = [], []
    for _ in range(rollouts):
        sync_from_shared(local_model, shared_model)
        obs = torch.randn(len(targets[0]), 4, generator=batches)
        params = list(local_model.parameters())
        own = _flat(torch.autograd.grad(stand_in_loss(local_model, obs, targets), params))
        update(local_model, shared_model, optimizer, stand_in_loss(local_model, obs, targets))
        applied = _flat([p.grad for p in shared_model.parameters()])
        norms.append(float(applied.norm()))
        cosines.append(float(applied @ own / (applied.norm() * own.norm())))
    return UpdateTrace(np.array(norms), np.array(cosines))


def plot_stale_gradients(traces, max_grad_norm=40.0):
    """Left: the applied gradient's norm per rollout; right: its cosine with the rollout's own."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.2), layout="constrained")
    colours = iter(("tab:red", "tab:blue", "tab:green"))
    for name, trace in traces.items():
        colour = next(colours)
        left.plot(trace.norms, color=colour, label=name)
        right.plot(trace.cosines, color=colour, label=name)
    left.axhline(max_grad_norm, color="k", lw=0.8, ls=":")
    left.set(
        xlabel="rollout",
        ylabel="applied gradient norm",
        title=f"Norm: climbs to the clip ({max_grad_norm:g}) and stays",
    )
    right.set(
        xlabel="rollout",
        ylabel="cosine(applied, own)",
        ylim=(-0.1, 1.05),
        title="Direction: how much of it is this rollout's?",
    )
    left.legend(loc="center right")
    return fig


class NeverEnding(gym.Env):
    """A game that never ends by itself, with a reward of 1 per step."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        return np.zeros(1, np.float32), 1.0, False, False, {}


def steps_until_time_limit(max_episode_steps):
    """(steps, terminated, truncated) of one episode of NeverEnding under Gymnasium's TimeLimit."""
    env = gym.wrappers.TimeLimit(NeverEnding(), max_episode_steps=max_episode_steps)
    env.reset(seed=0)
    steps, terminated, truncated = 0, False, False
    while not (terminated or truncated):
        _, _, terminated, truncated, _ = env.step(0)
        steps += 1
    return steps, terminated, truncated


# The shape of the original main.py, without torch: start a worker at the top level of the script.
UNGUARDED_SCRIPT = """\
import multiprocessing as mp
def work():
    print("child: working")
process = mp.get_context("spawn").Process(target=work)
process.start(); process.join()
print("parent: child exit code", process.exitcode)
"""
GUARDED_SCRIPT = """\
import multiprocessing as mp
def work():
    print("child: working")
if __name__ == "__main__":
    process = mp.get_context("spawn").Process(target=work)
    process.start(); process.join()
    print("parent: child exit code", process.exitcode)
"""


def run_script(source, timeout=60):
    """Run `source` as the main script of a fresh Python; return (stdout lines, stderr lines)."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "main.py")
        with open(path, "w") as file:
            file.write(source)
        result = subprocess.run(
            [sys.executable, path], capture_output=True, text=True, timeout=timeout
        )
    return result.stdout.splitlines(), [line.strip() for line in result.stderr.splitlines()]


def child_error(stderr_lines, lines=2):
    """The first lines of the message after the child's RuntimeError, or [] if there is none."""
    for i, line in enumerate(stderr_lines):
        if line.startswith("RuntimeError"):
            return [text for text in stderr_lines[i + 1 :] if text][:lines]
    return []


_THREADS_SCRIPT = """\
import os, sys
if sys.argv[1] == "before":
    os.environ["OMP_NUM_THREADS"] = "1"
import torch
threads = torch.get_num_threads()
if sys.argv[1] == "after":
    os.environ["OMP_NUM_THREADS"] = "1"  # the original main.py's order
print(threads, torch.get_num_threads())
"""


def threads_with_omp_set(order):
    """torch's thread count (at import, now) in a fresh Python that sets OMP_NUM_THREADS=1
    "before" or "after" `import torch` (the variable removed from its environment first)."""
    clean = {name: value for name, value in os.environ.items() if name != "OMP_NUM_THREADS"}
    out = subprocess.run(
        [sys.executable, "-c", _THREADS_SCRIPT, order],
        env=clean,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout.split()
    return int(out[0]), int(out[1])
