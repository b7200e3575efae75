"""What a training run records: the result `train` returns, the files it leaves in its folder, and
where a resumed run starts from them.

    <out_dir>/config.json      the TrainConfig
    <out_dir>/metrics.jsonl    every record (episodes, losses, evaluations), one JSON object a line
    <out_dir>/checkpoint.pt    the network when training stopped (checkpoint.py), and best.pt
    <out_dir>/optimizer.pt     the shared optimizer's state (Adam's moments), for resuming
    <out_dir>/snapshots/       eval_mode "after": the weights every eval_interval_s

Files are written atomically (a temporary file, then a rename), so a run killed mid-save keeps the
previous version. The trainer (trainer.py) fills these in; they do not depend on how the workers run.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from a3c_course.a3c.model import ActorCritic
from a3c_course.training.checkpoint import (
    CHECKPOINT_NAME,
    CheckpointError,
    best_eval_mean,
    load_checkpoint,
    load_weights,
    model_from_checkpoint,
    read_torch_file,
    save_checkpoint,
)
from a3c_course.training.config import TrainConfig

METRICS_NAME = "metrics.jsonl"
CONFIG_NAME = "config.json"
OPTIMIZER_NAME = "optimizer.pt"
SNAPSHOTS_NAME = "snapshots"  # eval_mode "after": the weights every eval_interval_s

STOP_REASONS = ("max_steps", "max_minutes", "target_score", "interrupted", "worker_failed")


@dataclass
class TrainResult:
    """A training run's outcome (or, passed to on_metrics, its state so far).

    history: every record received, in order. Each is a dict with "kind" ("episode", "loss",
        "eval" or "note"), "steps" (the global agent-step count when it was made) and "elapsed_s"
        (seconds since the start when the parent received it), plus:
        episode: "worker" (its index), "score" (raw game score), "length" (agent steps)
        loss:    "worker", "total", "policy", "value", "entropy", "grad_norm" (before clipping),
                 "staleness" (updates by other workers between the worker's pull and its push),
                 averaged over "rollouts" rollouts; like the loss terms, "entropy" is summed over a
                 rollout's steps (divide by rollout_steps for the policy's entropy per step)
        eval:    "worker" ("evaluator"), "mean", "std", "min", "max", "scores", "capped",
                 "duration_s"
        note:    "message": something the run had to do, e.g. replace a lost Ray worker
    stop_reason: one of STOP_REASONS; None while training runs.
    checkpoint: the network when training stopped (checkpoint.pt).
    best_checkpoint: the evaluated network with the best mean score (best.pt); None without
        evaluations.
    """

    config: TrainConfig
    history: list[dict[str, Any]] = field(default_factory=list)
    steps: int = 0
    elapsed_s: float = 0.0
    stop_reason: str | None = None
    checkpoint: Path | None = None
    best_checkpoint: Path | None = None
    metrics_path: Path | None = None

    def episodes(self) -> list[dict[str, Any]]:
        return [r for r in self.history if r["kind"] == "episode"]

    def losses(self) -> list[dict[str, Any]]:
        return [r for r in self.history if r["kind"] == "loss"]

    def evaluations(self) -> list[dict[str, Any]]:
        return [r for r in self.history if r["kind"] == "eval"]

    def notes(self) -> list[str]:
        return [r["message"] for r in self.history if r["kind"] == "note"]

    def mean_staleness(self, steady: bool = False) -> float | None:
        """The mean staleness of the run's gradients (None before the first loss record). steady:
        only the loss records made after every worker had reported once (None before then): while
        workers are still starting, the running ones see fewer updates than they will."""
        losses = [r for r in self.losses() if "staleness" in r]
        if steady:
            losses = _after_every_worker_reported(losses, self.config.workers)
        rollouts = sum(r["rollouts"] for r in losses)
        if not rollouts:
            return None
        return sum(r["staleness"] * r["rollouts"] for r in losses) / rollouts

    @property
    def steps_per_s(self) -> float:
        return self.steps / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def recent_score(self, window: int | None = None) -> float | None:
        """Mean raw score of the last `window` training episodes (config.score_window by default)."""
        scores = [r["score"] for r in self.episodes()[-(window or self.config.score_window) :]]
        return sum(scores) / len(scores) if scores else None

    def last_evaluation(self) -> dict[str, Any] | None:
        evaluations = self.evaluations()
        return evaluations[-1] if evaluations else None


class WorkerError(RuntimeError):
    """A worker or the evaluator failed. The message holds its traceback; .result the run so far."""

    def __init__(self, message: str, result: TrainResult):
        super().__init__(message)
        self.result = result


@dataclass
class ResumePoint:
    """Where a resumed run starts: what an earlier run of the same out_dir left on disk."""

    model_state: dict[str, torch.Tensor]
    optimizer_state: dict[str, Any] | None  # None when optimizer.pt is missing (fresh moments)
    steps: int
    elapsed_s: float
    history: list[dict[str, Any]]
    worker_starts: list[int]  # each worker's next start number: the new session's fresh seeds


def read_metrics(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The records of a metrics.jsonl file; a last line cut short by a crash is skipped."""
    records = []
    lines = Path(path).read_text().splitlines()
    for number, line in enumerate(lines, 1):
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            if number == len(lines):
                break
            raise ValueError(f"{path}, line {number}: not a JSON record: {line[:60]!r}") from None
    return records


def load_resume_point(config: TrainConfig, network: ActorCritic) -> ResumePoint:
    """Read the run saved in config.out_dir; CheckpointError when there is none to continue, or it
    was made for another game or for another network than `network` (one built from config)."""
    out_dir = Path(config.out_dir)
    checkpoint = load_checkpoint(out_dir / CHECKPOINT_NAME, expect_game=config.game)
    load_weights(network, checkpoint)  # raises CheckpointError when the networks differ
    if checkpoint.config.optimizer != config.optimizer:
        raise CheckpointError(
            f"{checkpoint.path} was trained with {checkpoint.config.optimizer}, not "
            f"{config.optimizer}: resume with --optimizer {checkpoint.config.optimizer}"
        )
    optimizer_state = None
    if (out_dir / OPTIMIZER_NAME).is_file():
        optimizer_state = read_torch_file(out_dir / OPTIMIZER_NAME, "optimizer state")
    metrics = out_dir / METRICS_NAME
    history = read_metrics(metrics) if metrics.is_file() else []
    steps = int(checkpoint.metadata.get("steps") or 0)
    return ResumePoint(
        checkpoint.model_state,
        optimizer_state,
        steps,
        float(checkpoint.metadata.get("elapsed_s") or 0.0),
        [r for r in history if r.get("steps", 0) <= steps],  # records after the save are lost
        # A checkpoint from before the record: its workers had started once (start number 0).
        checkpoint.metadata.get("worker_starts") or [1] * checkpoint.config.workers,
    )


def snapshot_steps(path: Path) -> int:
    """The step count in a snapshot's name (snapshot-0000123456.pt)."""
    return int(path.stem.split("-")[1])


MACHADO_WINDOW = 100  # Machado et al. 2018: the mean of the last 100 training episodes


def training_score(
    history: list[dict[str, Any]], steps: int, window: int = MACHADO_WINDOW
) -> float | None:
    """Machado et al. 2018's statistic at a budget of `steps` agent steps: the mean raw score of
    the last `window` training episodes (the learning agent's own, sampled actions) finished by
    then, or of all of them when fewer have; None before the first. Beside the course's greedy
    evaluations it says what the learning agent itself scores."""
    scores = [r["score"] for r in history if r["kind"] == "episode" and r["steps"] <= steps]
    return sum(scores[-window:]) / len(scores[-window:]) if scores else None


def save_best_snapshot(
    records: list[dict[str, Any]], snapshots_dir: Path, best_path: Path, config: TrainConfig
) -> None:
    """best.pt: the snapshot of the best of these evaluation records (the earliest of equal
    means), if it beats the run's best so far."""
    if not records:
        return
    best = max(records, key=lambda r: r["mean"])
    previous = best_eval_mean(best_path)
    if previous is not None and best["mean"] <= previous:
        return
    model = model_from_checkpoint(load_checkpoint(snapshots_dir / best["snapshot"]))
    save_checkpoint(
        best_path,
        model,
        config,
        steps=best["steps"],
        eval_mean=best["mean"],
        eval_scores=list(best["scores"]),
    )


def _after_every_worker_reported(losses: list[dict], workers: int) -> list[dict]:
    """The loss records after the first one by which each of the workers had reported."""
    seen = set()
    for index, record in enumerate(losses):
        seen.add(record.get("worker"))
        if len(seen) >= workers:
            return losses[index + 1 :]
    return []
