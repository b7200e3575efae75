"""What each worker of a run does: A3C's worker_step, again and again, until the run stops.

    worker_loop(worker_id, config, link)

The same loop for both backends (a Hogwild worker process, a Ray worker actor): only the link to
the shared parameters differs. Around the algorithm's step (a3c_course.a3c.worker.worker_step) it
adds what a run needs: the worker's environments, seeded from the run's seed (seeds.py), its
reports to the parent (each finished episode, and the averaged losses once a second), and the
step budget.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from typing import Any

import gymnasium as gym
import torch

from a3c_course.a3c.envs import is_atari, make_env
from a3c_course.a3c.model import ActorCritic
from a3c_course.a3c.returns import A3CLoss
from a3c_course.a3c.worker import EnvRunner, ParameterLink, annealed_lr, worker_step
from a3c_course.training.config import TrainConfig
from a3c_course.training.seeds import worker_seeds

# How often a worker sends its averaged losses to the parent (episodes are sent as they end).
REPORT_INTERVAL_S = 1.0
# Up to this many inputs a call (a worker's environments), PyTorch's own convolution kernels beat
# oneDNN's on the course's small network: one Breakout-preset worker (2 a call) made 1.25 times the
# agent steps per second with them, a Pong worker at 8 about the same; at 16, oneDNN's took less
# than half the time (benchmarks/README.md, *Where a worker's time goes*). The same numbers either
# way, up to float rounding.
NATIVE_KERNELS_UP_TO = 8


def uses_onednn(inputs_per_call: int) -> bool:
    """Whether oneDNN's convolution kernels are the faster ones for this many inputs a call."""
    return inputs_per_call > NATIVE_KERNELS_UP_TO


@contextmanager
def conv_kernels(onednn: bool) -> Iterator[None]:
    """Within: oneDNN's convolution kernels, or PyTorch's own (in this process)."""
    before = torch.backends.mkldnn.enabled
    torch.backends.mkldnn.enabled = onednn
    try:
        yield
    finally:
        torch.backends.mkldnn.enabled = before


def env_options(config: TrainConfig) -> dict[str, Any]:
    """make_env options for training environments: the time limit; on Atari, sticky actions and
    the frame size."""
    options: dict[str, Any] = {"max_episode_steps": config.max_episode_steps}
    if is_atari(config.env_id):
        options["sticky_actions"] = config.sticky_actions
        options["size"] = config.frame_size
    return options


def make_worker_envs(config: TrainConfig, worker_id: int, start: int = 0) -> list[gym.Env]:
    """The envs_per_worker environments of worker `worker_id` at its start number `start`, each
    with its own seed (seeds.worker_seeds)."""
    options = env_options(config)
    seeds = worker_seeds(config.seed, worker_id, config.envs_per_worker, start)
    return [make_env(config.game, seed=seed, **options) for seed in seeds.envs]


def loss_coefficients(config: TrainConfig) -> dict[str, float]:
    """rollout_loss's coefficients, from a run's settings."""
    return {
        "gamma": config.gamma,
        "gae_lambda": config.gae_lambda,
        "entropy_coef": config.entropy_coef,
        "value_coef": config.value_coef,
    }


def step_options(config: TrainConfig) -> dict[str, Any]:
    """worker_step's settings (rollout length, gradient clip, loss coefficients) from a config."""
    return {
        "rollout_steps": config.rollout_steps,
        "max_grad_norm": config.max_grad_norm,
        **loss_coefficients(config),
    }


def learning_rate(config: TrainConfig, steps: int) -> float:
    """The learning rate of a push at `steps` agent steps of the run."""
    return annealed_lr(config.lr, config.lr_anneal_steps, steps)


def _floats(loss: A3CLoss) -> dict[str, float]:
    return {name: float(term.detach()) for name, term in loss._asdict().items()}


class _LossAverage:
    """Averages the loss terms over the rollouts between two reports."""

    def __init__(self) -> None:
        self.sums: dict[str, float] = {}
        self.count = 0

    def add(self, values: dict[str, float]) -> None:
        for name, value in values.items():
            self.sums[name] = self.sums.get(name, 0.0) + value
        self.count += 1

    def pop(self) -> dict[str, float]:
        means = {name: total / self.count for name, total in self.sums.items()}
        means["rollouts"] = self.count
        self.sums, self.count = {}, 0
        return means


def worker_loop(worker_id: int, config: TrainConfig, link: ParameterLink, start: int = 0) -> None:
    """worker_step and report; until the run stops or the step budget is spent.

    start: how many times this worker was started before in this run (a replaced Ray actor: 1, 2,
    ...): each start has its own seeds.
    """
    torch.manual_seed(worker_seeds(config.seed, worker_id, config.envs_per_worker, start).torch)
    local_model = ActorCritic(**link.architecture)
    envs = make_worker_envs(config, worker_id, start)
    runner = EnvRunner(envs, local_model.hidden_size, config.life_loss_terminal)
    options = step_options(config)
    losses = _LossAverage()
    next_report = time.monotonic() + REPORT_INTERVAL_S
    steps = 0
    # The runner is closed however the loop ends; the kernels are the ones for its batch.
    with closing(runner), conv_kernels(uses_onednn(config.envs_per_worker)):
        while not link.stopped():
            step = worker_step(local_model, runner, link, **options)
            steps = step.steps
            for episode in step.episodes:
                link.send(
                    {
                        "kind": "episode",
                        "worker": worker_id,
                        "steps": steps,
                        "score": episode.score,
                        "length": episode.length,
                    }
                )
            losses.add(
                {**_floats(step.loss), "grad_norm": step.grad_norm, "staleness": step.staleness}
            )
            if time.monotonic() >= next_report:
                link.send({"kind": "loss", "worker": worker_id, "steps": steps, **losses.pop()})
                next_report = time.monotonic() + REPORT_INTERVAL_S
            if config.max_steps is not None and steps >= config.max_steps:
                break
        if losses.count:
            link.send({"kind": "loss", "worker": worker_id, "steps": steps, **losses.pop()})
