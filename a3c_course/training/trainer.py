"""Asynchronous training: one shared model, N workers, one evaluator; on this machine or a cluster.

    from a3c_course.training.config import TrainConfig
    from a3c_course.training.trainer import train

    result = train(TrainConfig(game="pong", workers=2, max_minutes=10))
    result.checkpoint          # runs/pong/checkpoint.pt
    result.evaluations()       # [{"steps": ..., "mean": ..., ...}, ...]

What happens:
1. The parent builds the shared model and moves its weights to shared memory (`share_memory()`),
   and builds the shared optimizer, whose state is in shared memory too (see optim.py).
2. The backend (backend.py) starts the workers and, unless eval_episodes is 0 or eval_mode is
   "after", the evaluator: Hogwild's are processes of this machine (hogwild.py; fork on Linux,
   spawn elsewhere), Ray's are actors around a parameter server (ray_backend.py).
3. Each worker loops (worker_loop.py): copy the shared weights, play a rollout, compute the
   gradient of its loss, apply it to the shared weights with the shared optimizer, without locks
   (Hogwild). Workers send finished episodes and losses to the parent through a queue; the
   evaluator sends its scores.
4. The parent gathers these messages into the metrics history (also written to metrics.jsonl), shows
   progress, calls `on_metrics` for live plots, and stops everything at the first budget reached
   (max_steps, max_minutes, target_score), on Ctrl-C (or a notebook's stop button), or when a child
   fails.
5. Stopping: every child is stopped (none outlives train(); one whose parent was killed outright
   stops at its next rollout) and the checkpoint saved. A child that failed sends its traceback:
   train() raises WorkerError carrying it. A file that cannot be written (a full disk, a deleted
   folder) stops the run with a one-line StorageError saying what is kept (run_folder.py).

With eval_mode "after" no evaluator runs beside the workers: every eval_interval_s the parent saves
a snapshot of the shared weights in <out_dir>/snapshots/ (and one more when training stops), and
once the workers have stopped, the snapshots are scored on every core (evaluate.score_snapshots).
Their eval records carry the steps and the training time at which each snapshot was taken, so a
learning curve or a time to a score counts training alone, with the workers on every core.

Resuming (`train(config, resume=True)`) continues the run saved in config.out_dir: the weights from
checkpoint.pt, the optimizer's state from optimizer.pt (Adam's moments: without them the first
updates would be too large), the history from metrics.jsonl, and the step count and elapsed time,
which go on counting from where they were, as do the workers' start numbers and the evaluation
rounds (seeds.py): a new session plays new games. max_steps counts all the run's steps; max_minutes
counts this session's wall time.

This module is the parent's bookkeeping, the same whatever backend runs the workers; the run's
files and result are run_record.py's.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm

from a3c_course.a3c.optim import make_shared_optimizer
from a3c_course.training.backend import Backend, build_shared_model, make_backend
from a3c_course.training.checkpoint import (
    BEST_CHECKPOINT_NAME,
    CHECKPOINT_NAME,
    CheckpointError,
    best_eval_mean,
    save_checkpoint,
)
from a3c_course.training.config import TrainConfig
from a3c_course.training.evaluate import score_snapshots
from a3c_course.training.files import (
    StorageError,
    remove_stray_temporaries,
    replace_atomically,
    save_torch,
)
from a3c_course.training.run_folder import FolderWatch, MetricsLog, what_is_kept
from a3c_course.training.run_record import (
    CONFIG_NAME,
    METRICS_NAME,
    OPTIMIZER_NAME,
    SNAPSHOTS_NAME,
    TrainResult,
    WorkerError,
    load_resume_point,
    save_best_snapshot,
    snapshot_steps,
)
from a3c_course.training.runlock import hold_run_folder

POLL_S = 0.1  # how long the parent waits for a message before checking budgets and children
CALLBACK_INTERVAL_S = 1.0  # at most one on_metrics call per second


def train(
    config: TrainConfig,
    on_metrics: Callable[[TrainResult], None] | None = None,
    *,
    progress: bool = True,
    resume: bool = False,
) -> TrainResult:
    """Train with config; return the TrainResult (history, checkpoint path, steps, stop reason).

    on_metrics(result): called with the run so far (result.stop_reason is None) at most once per
        second when new records have arrived, and once at the end. Use it for live plots. Raising
        KeyboardInterrupt from it stops training like Ctrl-C.
    progress: show a tqdm progress bar (steps, steps/s, recent score, last evaluation).
    resume: continue the run saved in config.out_dir (see the module's docstring); CheckpointError
        when there is nothing to continue, ValueError when max_steps is already reached.

    The run holds config.out_dir (runlock.hold_run_folder) until it returns: a second run into the
    same folder raises runlock.RunFolderInUse at once and writes nothing there.

    Ctrl-C (KeyboardInterrupt, also a notebook's stop button) stops training cleanly and returns the
    result with stop_reason "interrupted". A failing child raises WorkerError with its traceback;
    the checkpoint is saved first in both cases.
    """
    out_dir = Path(config.out_dir)
    if resume and not out_dir.is_dir():
        raise CheckpointError(f"nothing to resume in {out_dir}: the folder does not exist")
    with hold_run_folder(out_dir):  # RunFolderInUse, before anything is read or written
        return _train_in_held_folder(config, out_dir, on_metrics, progress, resume)


def _train_in_held_folder(config, out_dir, on_metrics, progress, resume) -> TrainResult:
    point = load_resume_point(config, build_shared_model(config)) if resume else None
    if point is not None and config.max_steps is not None and point.steps >= config.max_steps:
        raise ValueError(
            f"the run in {out_dir} already has {point.steps:,} steps, max_steps is "
            f"{config.max_steps:,}: raise max_steps to train on"
        )
    for folder in (out_dir, out_dir / SNAPSHOTS_NAME):
        remove_stray_temporaries(folder)  # left by a writer killed mid-write (the folder is ours)
    if point is None:  # a fresh run: an earlier run's best network and snapshots are not its own
        (out_dir / BEST_CHECKPOINT_NAME).unlink(missing_ok=True)
        for snapshot in (out_dir / SNAPSHOTS_NAME).glob("*.pt"):
            snapshot.unlink()
    settings = json.dumps(config.to_dict(), indent=2) + "\n"
    replace_atomically(out_dir / CONFIG_NAME, lambda temp: temp.write_text(settings))
    shared_model = build_shared_model(config)
    optimizer = make_shared_optimizer(config.optimizer, shared_model.parameters(), config.lr)
    if point is not None:
        with torch.no_grad():
            shared_model.load_state_dict(point.model_state)  # copies into the shared tensors
        if point.optimizer_state is not None:
            optimizer.load_state_dict(point.optimizer_state)
            for group in optimizer.param_groups:
                group["lr"] = config.lr  # the config's rate, not the saved one
    steps, starts = (point.steps, point.worker_starts) if point else (0, [])
    backend = make_backend(config, shared_model, optimizer, steps, starts)
    return _Run(backend, out_dir, on_metrics, progress, point).execute()


def next_multiple(now_s: float, interval_s: float) -> float:
    """The first multiple of interval_s after now_s: after a stall (a machine asleep, a stopped
    process) the next snapshot comes one interval on, not a burst of the ones missed."""
    return (math.floor(now_s / interval_s) + 1) * interval_s


class _Run:
    """The parent's side of one training run: start, watch, stop, save. How the workers run is the
    backend's (backend.Backend)."""

    def __init__(self, backend: Backend, out_dir, on_metrics, progress, point=None):
        config = backend.config
        self.backend = backend
        self.config = config
        self.on_metrics = on_metrics
        self.result = TrainResult(config, metrics_path=out_dir / METRICS_NAME)
        self.checkpoint_path = out_dir / CHECKPOINT_NAME
        self.optimizer_path = out_dir / OPTIMIZER_NAME
        self.best_path = out_dir / BEST_CHECKPOINT_NAME
        self.snapshots_dir = out_dir / SNAPSHOTS_NAME
        self.snapshots: list[Path] = []  # this session's, in order
        self.next_snapshot_s = config.eval_interval_s  # session time of the next snapshot
        self.scores_after = config.eval_episodes > 0 and config.eval_mode == "after"
        self.training_s: float | None = None  # frozen when the workers stop
        self.out_dir, self.folder = out_dir, FolderWatch(out_dir)
        self.elapsed_offset = point.elapsed_s if point else 0.0
        if point is not None:
            self.result.history.extend(point.history)
        self.metrics = MetricsLog(self.result.metrics_path, self.result.history)  # finish() closes
        self.failure: str | None = None
        self.start = time.monotonic()
        self.last_callback = -math.inf
        self.fresh_records = False
        self.progress = progress
        self.bar = None

    # -- the run -----------------------------------------------------------------------------

    def execute(self) -> TrainResult:
        result = self.result
        try:
            self.backend.start(
                live_evaluator=self.config.eval_episodes > 0 and not self.scores_after,
                best_mean=best_eval_mean(self.best_path),
                first_round=len(result.evaluations()),  # a resumed run's rounds go on
            )
            self.bar = tqdm(
                total=self.config.max_steps,
                initial=self.backend.steps,
                unit="step",
                disable=not self.progress,
                smoothing=0.1,
            )
            result.stop_reason = self.watch()
        except KeyboardInterrupt:
            result.stop_reason = "interrupted"
        except StorageError as error:
            self.stop_children()
            raise self.stopped_by(error) from None
        except BaseException:
            self.stop_children()
            self.finish()
            raise
        self.stop_children()
        self.close_bar()
        try:
            if self.scores_after and result.stop_reason != "worker_failed":
                self.score_snapshots()
            self.finish()
        except StorageError as error:
            raise self.stopped_by(error) from None
        if result.stop_reason == "worker_failed":
            raise WorkerError(self.failure or "a training process failed", result)
        if self.on_metrics is not None:
            try:
                self.on_metrics(result)  # the final state, for a last redraw
            except KeyboardInterrupt:
                pass  # already stopped
        return result

    def watch(self) -> str:
        """Gather records until a budget is reached or a child fails; return the stop reason."""
        config = self.config
        while True:
            self.receive(timeout=POLL_S)
            self.result.steps = self.backend.steps
            self.result.elapsed_s = self.elapsed()
            self.show_progress()
            self.folder.check()  # a deleted run folder stops the run (StorageError)
            self.maybe_snapshot()
            if self.failure is not None or self.check_children():
                return "worker_failed"
            if config.max_steps is not None and self.result.steps >= config.max_steps:
                return "max_steps"
            session_s = time.monotonic() - self.start
            if config.max_minutes is not None and session_s >= 60 * config.max_minutes:
                return "max_minutes"
            if config.target_score is not None and self.target_reached():
                return "target_score"
            self.maybe_call_back()

    def receive(self, timeout: float) -> None:
        """Wait up to timeout for the backend's records, and take them."""
        self.take(self.backend.receive(timeout))

    def take(self, records: list[dict[str, Any]]) -> None:
        for record in records:
            self.record(record)

    def record(self, record: dict[str, Any]) -> None:
        if record["kind"] == "error":
            if self.failure is None:
                name = record["worker"]
                who = name if name == "evaluator" else f"worker {name}"
                self.failure = f"{who} failed:\n{record['traceback']}"
            return
        record["elapsed_s"] = round(self.elapsed(), 3)
        self.result.history.append(record)
        self.metrics.write(record)
        self.fresh_records = True
        if record["kind"] == "eval":
            self.save()  # keep a recent checkpoint on disk during long runs
        elif record["kind"] == "note":
            tqdm.write(f"note: {record['message']}")  # above the progress bar, not through it

    def check_children(self) -> bool:
        """True when a child exited with an error (its traceback, or what happened, is kept)."""
        dead = self.backend.dead_child()
        if dead is None:
            return False
        time.sleep(0.2)  # its traceback may still be on its way
        self.receive(timeout=0.0)
        if self.failure is None:
            self.failure = dead
        return True

    def target_reached(self) -> bool:
        target = self.config.target_score
        if self.config.eval_episodes > 0:
            last = self.result.last_evaluation()
            return last is not None and last["mean"] >= target
        if len(self.result.episodes()) < self.config.score_window:
            return False
        return self.result.recent_score() >= target

    def show_progress(self) -> None:
        bar = self.bar
        score, last = self.result.recent_score(), self.result.last_evaluation()
        postfix = {}
        if score is not None:
            postfix["score"] = f"{score:.1f}"
        if last is not None:
            postfix["eval"] = f"{last['mean']:.1f}"
        bar.set_postfix(postfix, refresh=False)
        bar.update(self.result.steps - bar.n)  # redraws at most every bar.mininterval seconds

    def maybe_call_back(self) -> None:
        now = time.monotonic()
        if self.on_metrics is None or not self.fresh_records:
            return
        if now - self.last_callback < CALLBACK_INTERVAL_S:
            return
        self.last_callback, self.fresh_records = now, False
        self.on_metrics(self.result)

    # -- eval_mode "after": snapshots during training, scores once it has stopped --------------

    def maybe_snapshot(self) -> None:
        """Save a snapshot when this session's time passes the next multiple of eval_interval_s."""
        session_s = time.monotonic() - self.start
        if self.scores_after and session_s >= self.next_snapshot_s:
            self.save_snapshot()
            self.next_snapshot_s = next_multiple(session_s, self.config.eval_interval_s)

    def save_snapshot(self) -> None:
        """Save the shared weights as the next snapshot, and the checkpoint with them (as a live
        evaluation does): a run that dies keeps what it had learnt."""
        steps = self.backend.steps
        path = self.snapshots_dir / f"snapshot-{steps:010d}.pt"
        model = self.backend.latest_model()
        save_checkpoint(path, model, self.config, steps=steps, elapsed_s=round(self.elapsed(), 3))
        self.snapshots.append(path)
        self.save()

    def score_snapshots(self) -> None:
        """Score this session's snapshots (and the final weights) now that the workers are idle.
        Ctrl-C (or on_metrics raising KeyboardInterrupt) stops the scoring; what is scored stays."""
        if not self.snapshots or self.backend.steps != snapshot_steps(self.snapshots[-1]):
            self.save_snapshot()  # the network training ended with
        rounds_before = len(self.result.evaluations())
        bar = tqdm(total=len(self.snapshots), unit="snapshot", disable=not self.progress)
        bar.set_description("scoring snapshots")
        try:
            for record in score_snapshots(self.config, self.snapshots, rounds_before):
                self.result.history.append(record)
                self.metrics.write(record)
                self.fresh_records = True
                bar.update(1)
                self.maybe_call_back()
        except KeyboardInterrupt:
            self.result.stop_reason = "interrupted"
        finally:
            bar.close()
        records = self.result.evaluations()[rounds_before:]
        save_best_snapshot(records, self.snapshots_dir, self.best_path, self.config)

    # -- stopping ----------------------------------------------------------------------------

    def stop_children(self) -> None:
        """Stop every child (the backend's stop: none outlives the run), taking their last records."""
        self.backend.stop(self.take)
        self.training_s = self.elapsed()

    def elapsed(self) -> float:
        """Seconds of training, this session's and the earlier sessions' of a resumed run (frozen
        once the workers have stopped: scoring snapshots afterwards is not training)."""
        if self.training_s is not None:
            return self.training_s
        return self.elapsed_offset + time.monotonic() - self.start

    def finish(self) -> None:
        self.result.steps = self.backend.steps
        self.result.elapsed_s = self.elapsed()
        try:
            self.save()
        finally:
            self.metrics.close()
            self.close_bar()
        self.result.checkpoint = self.checkpoint_path
        if self.best_path.is_file():
            self.result.best_checkpoint = self.best_path

    def stopped_by(self, error: StorageError) -> StorageError:
        """A file of the run could not be written: save the network if that still can be done (in a
        new folder, for a deleted one), and say in one line what happened and what is kept."""
        try:
            self.finish()
        except StorageError:
            pass
        steps, kept = self.backend.steps, what_is_kept(self.out_dir)
        return type(error)(
            f"{error}. The run stopped at {steps:,} agent steps; {kept}", error.errno
        )

    def close_bar(self) -> None:
        """Show the final count and close the progress bar (closing twice does nothing)."""
        if self.bar is not None:
            self.result.steps = self.backend.steps
            self.show_progress()
            self.bar.close()

    def save(self) -> None:
        last = self.result.last_evaluation()
        save_checkpoint(
            self.checkpoint_path,
            self.backend.latest_model(),
            self.config,
            steps=self.backend.steps,
            elapsed_s=round(self.elapsed(), 3),
            worker_starts=self.backend.worker_starts,
            stop_reason=self.result.stop_reason,
            recent_score=self.result.recent_score(),
            eval_mean=None if last is None else last["mean"],
        )
        save_torch(self.backend.optimizer_state(), self.optimizer_path)
