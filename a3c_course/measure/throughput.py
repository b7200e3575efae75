"""How fast does training run? Measurements for the benchmarks and notebook 04.

Two measurements, each for a fixed wall time (where a worker's time goes is in `profiling.py`):

    raw_env_speed("pong", processes=2, seconds=10)        the preprocessed environments alone,
                                                          random actions, no network: the ceiling
    trainer_speed(TrainConfig(workers=2, envs_per_worker=4), seconds=10)
                                                          the real trainer (worker processes,
                                                          shared model), no evaluator

The ratio trainer_speed / raw_env_speed, measured in the same run with the same number of processes,
is what the performance targets are stated in: it cancels most of the machine's own speed and load.

Speeds are agent steps per second, all processes together; an agent step is one action, which the
Atari pipeline turns into 4 emulator frames (frame skip).
"""

from __future__ import annotations

import math
import multiprocessing
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from a3c_course.a3c.envs import STICKY_ACTIONS, make_env
from a3c_course.training.config import TrainConfig
from a3c_course.training.worker_loop import env_options

START_UP_S = 120.0  # trainer_speed's allowance for a run's start-up, before its measured seconds

__all__ = [
    "RawSpeed",
    "TrainerSpeed",
    "raw_env_speed",
    "trainer_speed",
    "summarize",
    "machine_description",
    "one_thread",
]


# -- the environments alone ----------------------------------------------------------------------


@dataclass(frozen=True)
class RawSpeed:
    """Random-action speed of `processes` processes, each stepping one preprocessed environment."""

    game: str
    processes: int
    steps_per_s: float  # all processes together: the sum of each process's own rate
    per_process: tuple[float, ...]  # each process's steps/s
    steps: int
    seconds: float  # each process's measuring time (the longest one)


def _raw_env_loop(game: str, seed: int, options: dict[str, Any], seconds: float, barrier) -> tuple:
    """Step one environment with random actions for `seconds`; return (steps, elapsed seconds)."""
    env = make_env(game, seed=seed, **options)
    env.action_space.seed(seed)
    try:
        if barrier is not None:
            barrier.wait()  # every process starts measuring together, after its set-up
        steps, began = 0, time.perf_counter()
        while True:
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            steps += 1
            if terminated or truncated:
                env.reset()
            elapsed = time.perf_counter() - began
            if elapsed >= seconds:
                return steps, elapsed
    finally:
        env.close()


def _raw_env_child(game, seed, options, seconds, barrier, results) -> None:
    torch.set_num_threads(1)
    results.put(_raw_env_loop(game, seed, options, seconds, barrier))


def raw_env_speed(
    game: str = "pong",
    processes: int = 1,
    seconds: float = 5.0,
    *,
    seed: int = 0,
    sticky_actions: float = STICKY_ACTIONS,
    start_method: str | None = None,
) -> RawSpeed:
    """Agent steps/s of `processes` processes stepping the course's preprocessed environment with
    random actions (make_env: emulator, frame skip, grey, crop, resize), no network at all.

    processes=1 runs in this process; more run in child processes (fork on Linux) that start
    measuring together, so that they compete for the cores as the trainer's workers do.
    sticky_actions applies to Atari games only.
    """
    if processes < 1:
        raise ValueError(f"processes must be at least 1, got {processes}")
    if not seconds > 0:
        raise ValueError(f"seconds must be positive, got {seconds}")
    config = TrainConfig(game=game, sticky_actions=sticky_actions, eval_episodes=0)
    options = env_options(config)
    if processes == 1:
        with one_thread():
            results = [_raw_env_loop(game, seed, options, seconds, None)]
    else:
        context = multiprocessing.get_context(start_method or config.start_method)
        barrier, queue = context.Barrier(processes), context.Queue()
        children = [
            context.Process(
                target=_raw_env_child,
                args=(game, seed + i, options, seconds, barrier, queue),
                name=f"raw-env-{i}",
            )
            for i in range(processes)
        ]
        for child in children:
            child.start()
        try:
            results = [queue.get(timeout=seconds + 120.0) for _ in children]
        finally:
            for child in children:
                child.join(5.0)
                if child.is_alive():
                    child.kill()
                    child.join()
    rates = tuple(steps / elapsed for steps, elapsed in results)
    return RawSpeed(
        game=game,
        processes=processes,
        steps_per_s=sum(rates),
        per_process=rates,
        steps=sum(steps for steps, _ in results),
        seconds=max(elapsed for _, elapsed in results),
    )


# -- the trainer ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainerSpeed:
    """The trainer's agent steps/s for one TrainConfig, without an evaluator."""

    workers: int
    envs_per_worker: int
    steps_per_s: float  # steady state: between the first and the last loss report (see steady)
    overall_steps_per_s: float  # all steps over the whole run, start-up included
    steady: bool  # False: too short for two loss reports, steps_per_s is the overall speed
    steps: int
    seconds: float  # the run's wall time, start-up and shut-down included
    staleness: float | None = (
        None  # the gradients' mean staleness, steady if it can be, as the speed
    )


def steady_speed(history: Sequence[dict[str, Any]]) -> float | None:
    """Agent steps/s between the first and the last loss report of a run's history, or None when
    the reports span less than a second (start-up, with its process forks and environment resets,
    is left out: it is not what a long run spends its time on)."""
    losses = [r for r in history if r.get("kind") == "loss"]
    if len(losses) < 2:
        return None
    first, last = losses[0], losses[-1]
    span = last["elapsed_s"] - first["elapsed_s"]
    if span < 1.0:
        return None
    return (last["steps"] - first["steps"]) / span


def trainer_speed(
    config: TrainConfig, seconds: float = 10.0, start_up_s: float = START_UP_S
) -> TrainerSpeed:
    """Run the trainer (`trainer.train`) with config, with no evaluator and no step or score budget,
    in a temporary folder, until `seconds` after its first loss report; return its speed.

    Start-up (forks or Ray's actors, building and resetting the environments, the first rollout)
    takes seconds, more with many environments per worker or many Ray workers on few cores, and is
    not counted: the run stops `seconds` after the first loss report (each worker reports once a
    second), or after start_up_s + seconds in all. steps_per_s is the steady speed between the
    first and the last loss report, or the overall speed when there were not two reports
    (steady=False). staleness likewise leaves out the records made before every worker had
    reported once, where it can.
    """
    from a3c_course.training.trainer import train  # it imports much: keep this module light

    if not seconds > 0:
        raise ValueError(f"seconds must be positive, got {seconds}")
    with tempfile.TemporaryDirectory(prefix="a3c-throughput-") as folder:
        run = config.replace(
            eval_episodes=0,
            max_steps=None,
            target_score=None,
            max_minutes=(start_up_s + seconds) / 60.0,
            out_dir=folder,
        )
        result = train(run, on_metrics=_stop_after(seconds), progress=False)
    overall = result.steps_per_s
    steady = steady_speed(result.history)
    return TrainerSpeed(
        workers=config.workers,
        envs_per_worker=config.envs_per_worker,
        steps_per_s=overall if steady is None else steady,
        overall_steps_per_s=overall,
        steady=steady is not None,
        steps=result.steps,
        seconds=result.elapsed_s,
        staleness=_staleness(result),
    )


def _stop_after(seconds: float) -> Callable[[Any], None]:
    """An on_metrics callback that stops the run (as Ctrl-C does) `seconds` after it first sees a
    loss report."""
    first_report_at = None

    def stop_once_measured(result) -> None:
        nonlocal first_report_at
        now = time.monotonic()
        if first_report_at is None and any(r.get("kind") == "loss" for r in result.history):
            first_report_at = now
        if first_report_at is not None and now - first_report_at >= seconds:
            raise KeyboardInterrupt  # train() stops cleanly, as on Ctrl-C

    return stop_once_measured


def _staleness(result) -> float | None:
    """The steady mean staleness (every worker running), else the whole run's."""
    steady = result.mean_staleness(steady=True)
    return result.mean_staleness() if steady is None else steady


# -- one intra-op thread ----------------------------------------------------------------------


@contextmanager
def one_thread():
    """One intra-op thread, as in a worker process (processes.child_setup); restored afterwards.
    (Stepping one frame at a time, a second thread only waits on the first, and on a busy machine
    it makes such a loop several times slower.)"""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


# -- repeated measurements -----------------------------------------------------------------------


def summarize(values: Sequence[float]) -> dict[str, float]:
    """Median, min, max and the spread (max - min) / median of repeated measurements."""
    values = [float(v) for v in values]
    if not values:
        raise ValueError("summarize needs at least one value")
    median = statistics.median(values)
    low, high = min(values), max(values)
    spread = (high - low) / median if median > 0 else math.nan
    return {"median": median, "min": low, "max": high, "spread": spread, "n": len(values)}


def machine_description() -> str:
    """CPU model, cores, load average, and the library versions that set the speed."""
    import platform

    import ale_py
    import cv2
    import gymnasium

    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        load = "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    except (OSError, AttributeError):
        load = "load average unknown"
    return (
        f"{model}, {multiprocessing.cpu_count()} logical cores, {load}; Python "
        f"{platform.python_version()}, torch {torch.__version__}, gymnasium {gymnasium.__version__}, "
        f"ale-py {ale_py.__version__}, opencv {cv2.__version__}, numpy {np.__version__}"
    )
