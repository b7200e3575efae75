"""The parameter server: the network and the optimizer; each pushed gradient applied on arrival.

Plain PyTorch, no Ray: the Ray backend (ray_backend.py) runs it as an actor, and notebook 05, the
scaling model (a3c_course.measure.scaling) and the tests call it directly. A worker pulls the
weights with their version (the updates applied so far) and pushes a gradient with the version it
pulled; the gradient's staleness is the updates that other workers' gradients made in between.
"""

from __future__ import annotations

from typing import Any

import torch

from a3c_course.a3c.model import ActorCritic
from a3c_course.a3c.optim import make_shared_optimizer
from a3c_course.a3c.worker import apply_gradient
from a3c_course.training.worker_loop import learning_rate


def copy_weights(model: torch.nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in model.parameters()]


def load_weights(model: torch.nn.Module, weights: list[torch.Tensor]) -> None:
    with torch.no_grad():
        for param, value in zip(model.parameters(), weights, strict=True):
            param.copy_(value)


class ParameterServer:
    """The network and the optimizer; each pushed gradient is applied on arrival.

    A reply is (updates, weights, steps, stopping): the number of updates applied so far (the
    weights' version), the weights, the run's agent steps, and whether the run is stopping.
    """

    def __init__(self, config, architecture, weights, optimizer_state, steps: int):
        self.config = config
        self.model = ActorCritic(**architecture)
        load_weights(self.model, weights)
        self.optimizer = make_shared_optimizer(config.optimizer, self.model.parameters(), config.lr)
        if optimizer_state is not None:
            self.optimizer.load_state_dict(optimizer_state)
        self.steps, self.updates, self.stopping = steps, 0, False
        self.records: list[dict[str, Any]] = []
        self.staleness: list[int] = []  # of every gradient applied, in order

    def pull(self) -> tuple:
        return self.updates, copy_weights(self.model), self.steps, self.stopping

    def push(self, grads: list[torch.Tensor], pulled_at: int, steps: int) -> tuple:
        """Apply one worker's gradient; return the reply and the gradient's staleness."""
        lr = learning_rate(self.config, self.steps)
        apply_gradient(self.model, self.optimizer, grads, lr)
        staleness = self.updates - pulled_at
        self.staleness.append(staleness)
        self.updates += 1
        self.steps += steps
        return self.pull(), staleness

    def post(self, record: dict[str, Any]) -> None:
        self.records.append(record)

    def drain(self) -> tuple[list[dict[str, Any]], int]:
        """The records posted since the last drain, and the run's steps."""
        records, self.records = self.records, []
        return records, self.steps

    def stop(self) -> None:
        self.stopping = True

    def is_stopping(self) -> bool:
        return self.stopping

    def state(self) -> tuple[list[torch.Tensor], dict[str, Any], int]:
        """The weights, the optimizer's state and the steps: what a checkpoint keeps."""
        return copy_weights(self.model), self.optimizer.state_dict(), self.steps

    def staleness_counts(self) -> list[int]:
        return list(self.staleness)
