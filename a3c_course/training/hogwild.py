"""The Hogwild backend: the processes of one training run on this machine, and nothing else.

The worker processes (run_worker: worker_loop.worker_loop through a SharedMemoryLink) share the model's
weights and the optimizer's state in shared memory and update them without locks; with eval_mode
"live" an evaluator process (run_evaluator: evaluate.evaluation_loop) scores the shared weights
beside them. This module starts those processes with
`multiprocessing.get_context(config.start_method)`, hands the parent the records they send through
one queue, notices a child that died, and stops them all so that none outlives the run.

The parent's bookkeeping (records, metrics.jsonl, progress, snapshots, checkpoints, stop reasons)
is the trainer's (trainer.py) and does not depend on how the workers run.
"""

from __future__ import annotations

import queue as queue_module
from collections.abc import Callable, Sequence
from typing import Any

import torch.multiprocessing as mp

from a3c_course.a3c.model import ActorCritic
from a3c_course.a3c.worker import apply_gradient, sync_from_shared
from a3c_course.training.config import TrainConfig
from a3c_course.training.evaluate import evaluation_loop
from a3c_course.training.processes import (
    StopOrOrphaned,
    child_setup,
    report_crash,
    sigint_ignored,
    stop_children,
)
from a3c_course.training.seeds import next_starts, start_number
from a3c_course.training.worker_loop import learning_rate, worker_loop

JOIN_TIMEOUT_S = 10.0  # time the children get to stop on their own before they are terminated


class SharedMemoryLink:
    """The workers' and the evaluator's link (worker.ParameterLink) to the parameters on this
    machine: the shared model and the shared optimizer, updated in place without locks (Hogwild).

    Staleness is counted with a shared update counter: the updates that other workers applied
    between this worker's pull and its push.
    """

    def __init__(self, config, shared_model, optimizer, stop_event, step_counter, updates, queue):
        self.config = config
        self.shared_model, self.optimizer = shared_model, optimizer
        self.stop_event, self.queue = stop_event, queue
        self.step_counter, self.update_counter = step_counter, updates
        self.pulled_at = 0  # the update counter at this process's last pull

    @property
    def architecture(self) -> dict:
        return self.shared_model.architecture

    def watch_parent(self) -> None:
        """In a child process: stop also when the parent has died (processes.StopOrOrphaned)."""
        self.stop_event = StopOrOrphaned(self.stop_event)

    def stopped(self) -> bool:
        return self.stop_event.is_set()

    def wait(self, timeout: float) -> bool:
        return self.stop_event.wait(timeout)

    @property
    def steps(self) -> int:
        return self.step_counter.value

    def pull(self, model) -> None:
        self.pulled_at = self.update_counter.value
        sync_from_shared(model, self.shared_model)

    def push(self, model, steps: int) -> tuple[int, int]:
        lr = learning_rate(self.config, self.step_counter.value)
        apply_gradient(self.shared_model, self.optimizer, [p.grad for p in model.parameters()], lr)
        with self.step_counter.get_lock():
            self.step_counter.value += steps
            total = self.step_counter.value
        with self.update_counter.get_lock():
            staleness = self.update_counter.value - self.pulled_at
            self.update_counter.value += 1
        return total, staleness

    def send(self, record) -> None:
        self.queue.put(record)


def run_worker(worker_id: int, config: TrainConfig, link: SharedMemoryLink, start: int) -> None:
    """The target of a worker process (its start number: seeds.worker_seeds). On any error the
    traceback goes to the parent through the queue and the process exits with status 1."""
    child_setup()
    link.watch_parent()
    try:
        worker_loop(worker_id, config, link, start)
    except BaseException:
        report_crash(link.queue, worker_id)


def run_evaluator(
    config: TrainConfig, link: SharedMemoryLink, best_mean: float | None, first_round: int
) -> None:
    """The target of the evaluator process (eval_mode "live"); errors as run_worker's."""
    child_setup()
    link.watch_parent()
    try:
        evaluation_loop(config, link, best_mean, first_round)
    except BaseException:
        report_crash(link.queue, "evaluator")


class HogwildBackend:
    """config.workers worker processes on one shared model (and the live evaluator, if asked)."""

    def __init__(
        self,
        config: TrainConfig,
        shared_model: ActorCritic,
        optimizer,
        steps: int = 0,
        starts: Sequence[int] = (),
    ):
        self.config = config
        self.starts = list(starts)  # each worker's next start number (seeds.worker_seeds)
        self.shared_model = shared_model
        self.optimizer = optimizer
        self.context = mp.get_context(config.start_method)
        self.stop_event = self.context.Event()
        self.step_counter = self.context.Value("q", steps)  # every worker adds its steps
        self.update_counter = self.context.Value("q", 0)  # the optimizer steps, for staleness
        self.queue = self.context.Queue()
        self.children: list = []

    @property
    def worker_starts(self) -> list[int]:
        """Each worker's next start number (seeds.worker_seeds), for the checkpoint."""
        return self.starts

    @property
    def steps(self) -> int:
        """The run's agent steps so far, all workers together."""
        return self.step_counter.value

    def start(
        self, live_evaluator: bool, best_mean: float | None = None, first_round: int = 0
    ) -> None:
        """Start the workers and, if live_evaluator, the evaluator (which saves best.pt when its
        mean beats best_mean, and numbers its rounds from first_round)."""
        link = SharedMemoryLink(
            self.config,
            self.shared_model,
            self.optimizer,
            self.stop_event,
            self.step_counter,
            self.update_counter,
            self.queue,
        )
        pending = [
            self.context.Process(
                target=run_worker,
                args=(worker_id, self.config, link, start_number(self.starts, worker_id)),
                name=f"a3c-worker-{worker_id}",
                daemon=False,
            )
            for worker_id in range(self.config.workers)
        ]
        if live_evaluator:
            pending.append(
                self.context.Process(
                    target=run_evaluator,
                    args=(self.config, link, best_mean, first_round),
                    name="a3c-evaluator",
                    daemon=False,
                )
            )
        self.starts = next_starts(self.starts, range(self.config.workers))
        for child in pending:
            child.start()
            self.children.append(child)  # only started children are joined

    def latest_model(self) -> ActorCritic:
        """The shared model itself: its weights are the latest."""
        return self.shared_model

    def optimizer_state(self) -> dict[str, Any]:
        return self.optimizer.state_dict()

    def receive(self, timeout: float) -> list[dict[str, Any]]:
        """Wait up to timeout for a message, then take every message already waiting."""
        records = []
        try:
            records.append(self.queue.get(timeout=timeout))
            while True:
                records.append(self.queue.get_nowait())
        except queue_module.Empty:
            pass
        return records

    def dead_child(self) -> str | None:
        """What happened to a child that exited with an error; None while none has. (A worker that
        ran out of steps exits with 0.)"""
        failed = [c for c in self.children if c.exitcode not in (None, 0)]
        if not failed:
            return None
        child = failed[0]
        how = f"signal {-child.exitcode}" if child.exitcode < 0 else f"exit code {child.exitcode}"
        message = f"{child.name} died ({how}) without sending a traceback"
        if self.config.start_method != "fork" and child.exitcode == 1:
            message += (
                f" (its error is on stderr; under {self.config.start_method} a script that"
                ' starts training must do so under `if __name__ == "__main__":`)'
            )
        return message

    def stop(self, take: Callable[[list[dict[str, Any]]], None]) -> None:
        """Ask every child to stop, wait for them, terminate stragglers; hand the records that still
        arrive to take (a child cannot exit while its queued messages are unread). A second Ctrl-C
        cannot cut this short and leave children behind."""
        with sigint_ignored():
            self.stop_event.set()
            stop_children(self.children, JOIN_TIMEOUT_S, lambda: take(self._safe_receive(0.05)))
            take(self._safe_receive(0.0))
            self.queue.close()

    def _safe_receive(self, timeout: float) -> list[dict[str, Any]]:
        try:
            return self.receive(timeout)
        except (OSError, EOFError, ValueError):  # a child killed mid-message
            return []
