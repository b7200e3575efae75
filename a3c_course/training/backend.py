"""How a run's workers run: the Backend protocol that both backends implement, and make_backend.

The trainer (trainer.py) is the parent's bookkeeping, the same whatever runs the workers; a
backend is only what differs: how the workers start, reach the parameters, report and stop.

    hogwild.HogwildBackend      worker processes on this machine, one model in shared memory
    ray_backend.RayBackend      worker actors on a Ray cluster around a parameter server
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import torch

from a3c_course.a3c.envs import make_env
from a3c_course.a3c.model import ActorCritic
from a3c_course.training.config import TrainConfig
from a3c_course.training.hogwild import HogwildBackend
from a3c_course.training.seeds import network_seed
from a3c_course.training.worker_loop import env_options

Records = list[dict[str, Any]]


class Backend(Protocol):
    """What the trainer asks of a backend."""

    config: TrainConfig

    @property
    def steps(self) -> int:
        """The run's agent steps so far, all workers together."""

    @property
    def worker_starts(self) -> list[int]:
        """Each worker's next start number (seeds.worker_seeds), kept in the checkpoint so that a
        resumed run's workers play fresh seeds."""

    def start(
        self, live_evaluator: bool, best_mean: float | None = None, first_round: int = 0
    ) -> None:
        """Start the workers and, if live_evaluator, the evaluator (which saves best.pt when its
        mean beats best_mean, and numbers its rounds from first_round)."""

    def receive(self, timeout: float) -> Records:
        """Wait up to timeout for records (episodes, losses, evaluations), then take all waiting."""

    def dead_child(self) -> str | None:
        """What happened to a worker or evaluator that failed; None while none has."""

    def stop(self, take: Callable[[Records], None]) -> None:
        """Stop every worker and the evaluator, handing take the records that still arrive; none
        may outlive this call."""

    def latest_model(self) -> ActorCritic:
        """A model holding the latest weights (for checkpoints and snapshots)."""

    def optimizer_state(self) -> dict[str, Any]:
        """The shared optimizer's state_dict (kept beside the checkpoint for resuming)."""


def build_shared_model(config: TrainConfig) -> ActorCritic:
    """The network for config.game, its initial weights seeded from config.seed (seeds.py), in
    shared memory."""
    probe = make_env(config.game, **env_options(config))  # the workers' frames: their size
    torch.manual_seed(network_seed(config.seed))
    model = ActorCritic.for_env(probe, **config.network_options)
    probe.close()
    return model.share_memory()


def make_backend(
    config: TrainConfig, model: ActorCritic, optimizer, steps: int, starts: Sequence[int] = ()
) -> Backend:
    """The backend that config.backend names, holding model and optimizer (steps so far, and the
    workers' next start numbers: a resumed run's)."""
    if config.backend == "ray":
        # Ray is an optional extra: imported only when asked for.
        from a3c_course.training.ray_backend import RayBackend

        return RayBackend(config, model, optimizer, steps, starts)
    return HogwildBackend(config, model, optimizer, steps, starts)
