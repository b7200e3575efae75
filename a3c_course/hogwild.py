"""The Hogwild backend: the processes of one training run on this machine, and nothing else.

The worker processes (worker.run_worker) share the model's weights and the optimizer's state in
shared memory and update them without locks; with eval_mode "live" an evaluator process
(evaluate.run_evaluator) scores the shared weights beside them. This module starts those processes
with `multiprocessing.get_context(config.start_method)`, hands the parent the records they send
through one queue, notices a child that died, and stops them all so that none outlives the run.

The parent's bookkeeping (records, metrics.jsonl, progress, snapshots, checkpoints, stop reasons)
is the trainer's (trainer.py) and does not depend on how the workers run.
"""

from __future__ import annotations

import queue as queue_module
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

import torch.multiprocessing as mp

from .config import TrainConfig
from .evaluate import run_evaluator
from .model import ActorCritic
from .worker import run_worker

JOIN_TIMEOUT_S = 10.0  # time the children get to stop on their own before they are terminated


class HogwildBackend:
    """config.workers worker processes on one shared model (and the live evaluator, if asked)."""

    def __init__(self, config: TrainConfig, shared_model: ActorCritic, optimizer, steps: int = 0):
        self.config = config
        self.shared_model = shared_model
        self.optimizer = optimizer
        self.context = mp.get_context(config.start_method)
        self.stop_event = self.context.Event()
        self.step_counter = self.context.Value("q", steps)  # every worker adds its steps
        self.queue = self.context.Queue()
        self.children: list = []

    @property
    def steps(self) -> int:
        """The run's agent steps so far, all workers together."""
        return self.step_counter.value

    def start(self, live_evaluator: bool, best_mean: float | None = None) -> None:
        """Start the workers and, if live_evaluator, the evaluator (which saves best.pt when its
        mean beats best_mean)."""
        shared = (self.stop_event, self.step_counter, self.queue)
        pending = [
            self.context.Process(
                target=run_worker,
                args=(worker_id, self.config, self.shared_model, self.optimizer, *shared),
                name=f"a3c-worker-{worker_id}",
                daemon=False,
            )
            for worker_id in range(self.config.workers)
        ]
        if live_evaluator:
            pending.append(
                self.context.Process(
                    target=run_evaluator,
                    args=(self.config, self.shared_model, *shared),
                    kwargs={"best_mean": best_mean},
                    name="a3c-evaluator",
                    daemon=False,
                )
            )
        for child in pending:
            child.start()
            self.children.append(child)  # only started children are joined

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
        with _sigint_ignored():
            self.stop_event.set()
            deadline = time.monotonic() + JOIN_TIMEOUT_S
            while any(c.is_alive() for c in self.children) and time.monotonic() < deadline:
                take(self._safe_receive(0.05))
            for child in self.children:
                if child.is_alive():
                    child.terminate()
                    child.join(2.0)
                if child.is_alive():
                    child.kill()
                    child.join(2.0)
            take(self._safe_receive(0.0))
            self.queue.close()

    def _safe_receive(self, timeout: float) -> list[dict[str, Any]]:
        try:
            return self.receive(timeout)
        except (OSError, EOFError, ValueError):  # a child killed mid-message
            return []


class _sigint_ignored:
    """Ignore Ctrl-C inside the block (only possible in the main thread; elsewhere a no-op)."""

    def __enter__(self):
        self.previous = None
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        return self

    def __exit__(self, *exc):
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)
        return False
