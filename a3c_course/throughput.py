"""How fast does training run, and where does the time go? Measurements for the benchmarks and notebook 04.

Three measurements, each for a fixed wall time (and `network_layer_times`, the network's own layers
timed alone):

    raw_env_speed("pong", processes=2, seconds=10)        the preprocessed environments alone,
                                                          random actions, no network: the ceiling
    trainer_speed(TrainConfig(workers=2, envs_per_worker=4), seconds=10)
                                                          the real trainer (worker processes,
                                                          shared model), no evaluator
    profile_worker(TrainConfig(envs_per_worker=4), seconds=10)
                                                          one worker's loop in this process, its
                                                          time split into parts

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
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from .config import TrainConfig
from .envs import STICKY_ACTIONS, make_env
from .model import ActorCritic
from .optim import make_shared_optimizer
from .worker import (
    EnvRunner,
    collect_rollout,
    env_options,
    make_worker_envs,
    rollout_loss,
    sync_from_shared,
)

__all__ = [
    "RawSpeed",
    "TrainerSpeed",
    "WorkerProfile",
    "PROFILE_PARTS",
    "raw_env_speed",
    "trainer_speed",
    "profile_worker",
    "LayerTime",
    "network_layer_times",
    "layer_table",
    "summarize",
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


def trainer_speed(config: TrainConfig, seconds: float = 10.0) -> TrainerSpeed:
    """Run the trainer (`trainer.train`) with config for `seconds` of wall time, with no evaluator
    and no step or score budget, in a temporary folder; return its speed.

    steps_per_s is the steady speed between the first and the last loss report (each worker reports
    once a second), or the overall speed when the run is too short for two reports (steady=False).
    Start-up (forks, building and resetting the environments, the first rollout) takes seconds,
    more with many environments per worker: measure for 10 s or more.
    """
    from .trainer import train  # the trainer imports much; keep this module light to import

    if not seconds > 0:
        raise ValueError(f"seconds must be positive, got {seconds}")
    with tempfile.TemporaryDirectory(prefix="a3c-throughput-") as folder:
        run = config.replace(
            eval_episodes=0,
            max_steps=None,
            target_score=None,
            max_minutes=seconds / 60.0,
            out_dir=folder,
        )
        result = train(run, progress=False)
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
    )


# -- one worker, taken apart ---------------------------------------------------------------------

# The parts of a worker's time, in the order of its loop. Their shares add up to 1.
PROFILE_PARTS = {
    "emulator": "the ALE emulator itself (4 frames per agent step)",
    "preprocessing": "the wrappers around it: max-pool, grey, crop, resize, reward clip, statistics",
    "forward": "the network's forward passes (one batched pass per step, plus bootstraps)",
    "rollout_other": "the rest of collect_rollout: sampling, numpy <-> tensor, stacking, LSTM resets",
    "loss": "rollout_loss: GAE, n-step returns, the A3C loss",
    "backward": "loss.backward() through the rollout (conv layers and the LSTM, T steps)",
    "clip": "zero_grad, gradient-norm clipping, handing the gradients to the shared model",
    "optimizer": "the shared optimizer's step",
    "sync": "sync_from_shared: copying the shared weights into the local model",
    "other": "the loop itself: what no part above accounts for",
}


@dataclass(frozen=True)
class WorkerProfile:
    """Where one worker's time goes: seconds per part (PROFILE_PARTS) over `rollouts` rollouts."""

    envs_per_worker: int
    rollout_steps: int
    hidden_size: int
    rollouts: int
    steps: int
    seconds: float
    parts: dict[str, float] = field(default_factory=dict)  # seconds per part

    @property
    def steps_per_s(self) -> float:
        return self.steps / self.seconds

    def shares(self) -> dict[str, float]:
        """Each part's fraction of the total time."""
        return {name: value / self.seconds for name, value in self.parts.items()}

    def per_step_ms(self) -> dict[str, float]:
        """Each part's milliseconds per agent step (all environments of the worker together)."""
        return {name: 1000.0 * value / self.steps for name, value in self.parts.items()}

    def table(self) -> str:
        """A markdown table: part, share of the time, ms per agent step, what it is."""
        lines = [
            f"{self.envs_per_worker} env(s) per worker, {self.rollout_steps}-step rollouts, "
            f"LSTM {self.hidden_size}: {self.steps_per_s:.0f} agent steps/s "
            f"({self.steps} steps, {self.rollouts} rollouts, {self.seconds:.1f} s)",
            "",
            "| part | share | ms per agent step | what |",
            "|---|---:|---:|---|",
        ]
        shares, per_step = self.shares(), self.per_step_ms()
        for name, what in PROFILE_PARTS.items():
            lines.append(f"| {name} | {shares[name]:.1%} | {per_step[name]:.3f} | {what} |")
        return "\n".join(lines)


class _Clock:
    """Accumulates seconds per part name."""

    def __init__(self) -> None:
        self.seconds = dict.fromkeys(PROFILE_PARTS, 0.0)

    @contextmanager
    def part(self, name: str):
        began = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] += time.perf_counter() - began


def _time_method(obj: Any, name: str, clock: _Clock, part: str) -> None:
    """Replace obj.<name> by a timed call of itself (an instance attribute: only this object)."""
    original = getattr(obj, name)

    def timed(*args, **kwargs):
        began = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            clock.seconds[part] += time.perf_counter() - began

    setattr(obj, name, timed)


def _instrument_env(env, clock: _Clock, outer: dict[str, float]) -> None:
    """Time the emulator (the innermost env: ALE) and the whole pipeline's step/reset.

    The innermost env's step and reset are patched on the instance, so the wrappers above it
    (AtariPreprocessing's frame skip and no-ops call them several times per agent step) are timed
    as emulator time; the outermost step/reset gives the pipeline's total, and preprocessing is
    the difference.
    """
    inner = env.unwrapped
    _time_method(inner, "step", clock, "emulator")
    _time_method(inner, "reset", clock, "emulator")
    for name in ("step", "reset"):
        original = getattr(env, name)

        def timed(*args, _original=original, **kwargs):
            began = time.perf_counter()
            try:
                return _original(*args, **kwargs)
            finally:
                outer["env"] += time.perf_counter() - began

        setattr(env, name, timed)


def timed_update_shared(
    local_model: torch.nn.Module,
    shared_model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    loss: torch.Tensor,
    max_grad_norm: float,
    clock: _Clock,
) -> float:
    """worker.update_shared, line for line, with each stage timed (update_shared has no hooks
    between its stages). tests/test_throughput.py checks that both make the same update."""
    with clock.part("clip"):
        local_model.zero_grad(set_to_none=True)
    with clock.part("backward"):
        loss.backward()
    with clock.part("clip"):
        norm = torch.nn.utils.clip_grad_norm_(local_model.parameters(), max_grad_norm)
        for local, shared in zip(local_model.parameters(), shared_model.parameters(), strict=True):
            shared.grad = local.grad
    with clock.part("optimizer"):
        optimizer.step()
    return float(norm)


@contextmanager
def one_thread():
    """One intra-op thread, as in a worker process (worker.child_setup); restored afterwards.
    (Stepping one frame at a time, a second thread only waits on the first, and on a busy machine
    it makes such a loop several times slower.)"""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def profile_worker(
    config: TrainConfig, seconds: float = 5.0, *, warmup_rollouts: int = 2
) -> WorkerProfile:
    """Run one worker's loop (sync, rollout, loss, update) in this process, with one thread, for
    `seconds`, and split its time into PROFILE_PARTS.

    The loop is worker.worker_loop's, with the same public pieces: sync_from_shared,
    collect_rollout and rollout_loss are called as they are; the environments are timed by
    patching their step/reset methods and the network's forward passes with forward hooks.
    update_shared is replaced by timed_update_shared, a copy with timers between its stages.
    The first warmup_rollouts rollouts are not counted (first calls allocate memory).
    """
    if not seconds > 0:
        raise ValueError(f"seconds must be positive, got {seconds}")
    config = config.replace(workers=1, eval_episodes=0)
    torch.manual_seed(config.seed)
    with one_thread():
        probe = make_env(config.game)
        shared = ActorCritic.for_env(probe, **config.network_options).share_memory()
        probe.close()
        optimizer = make_shared_optimizer(config.optimizer, shared.parameters(), config.lr)
        local = ActorCritic(**shared.architecture)
        clock, outer = _Clock(), {"env": 0.0}
        envs = make_worker_envs(config, 0)
        for env in envs:
            _instrument_env(env, clock, outer)
        forward_began: list[float] = []
        local.register_forward_pre_hook(
            lambda module, args: forward_began.append(time.perf_counter())
        )

        def forward_done(module, args, output):
            clock.seconds["forward"] += time.perf_counter() - forward_began.pop()

        local.register_forward_hook(forward_done)
        runner = EnvRunner(envs, shared.hidden_size)
        try:
            for _ in range(warmup_rollouts):
                _profiled_rollout(config, local, shared, optimizer, runner, _Clock(), {"env": 0.0})
            clock.seconds = dict.fromkeys(PROFILE_PARTS, 0.0)
            outer["env"] = 0.0
            steps = rollouts = 0
            began = time.perf_counter()
            while True:
                steps += _profiled_rollout(config, local, shared, optimizer, runner, clock, outer)
                rollouts += 1
                total = time.perf_counter() - began
                if total >= seconds:
                    break
        finally:
            runner.close()
    parts = dict(clock.seconds)
    parts["preprocessing"] = max(outer["env"] - parts["emulator"], 0.0)
    parts["other"] = max(total - sum(v for k, v in parts.items() if k != "other"), 0.0)
    return WorkerProfile(
        envs_per_worker=config.envs_per_worker,
        rollout_steps=config.rollout_steps,
        hidden_size=shared.hidden_size,
        rollouts=rollouts,
        steps=steps,
        seconds=total,
        parts=parts,
    )


def _profiled_rollout(config, local, shared, optimizer, runner, clock, outer) -> int:
    """One pass of the worker's loop; the clock gets every part but preprocessing and other."""
    with clock.part("sync"):
        sync_from_shared(local, shared)
    env_before, forward_before = outer["env"], clock.seconds["forward"]
    began = time.perf_counter()
    rollout, _ = collect_rollout(local, runner, config.rollout_steps)
    collect = time.perf_counter() - began
    # What collect_rollout spent outside the environments and the forward passes.
    clock.seconds["rollout_other"] += (
        collect - (outer["env"] - env_before) - (clock.seconds["forward"] - forward_before)
    )
    with clock.part("loss"):
        loss = rollout_loss(rollout, config)
    timed_update_shared(local, shared, optimizer, loss.total, config.max_grad_norm, clock)
    return rollout.steps


# -- the network's layers, one at a time ---------------------------------------------------------


@dataclass(frozen=True)
class LayerTime:
    """Milliseconds per call of one part of the network on a batch: forward, and backward alone."""

    name: str
    batch: int
    forward_ms: float
    backward_ms: float

    @property
    def per_step_ms(self) -> float:
        """Forward plus backward, per agent step (per input of the batch)."""
        return (self.forward_ms + self.backward_ms) / self.batch


def network_layer_times(model: ActorCritic, batch: int, repeats: int = 30) -> list[LayerTime]:
    """Time each part of `model` alone, with one thread, on a batch of the shape it sees in the
    network: each body layer with its activation, the LSTM cell, the two heads. The median of
    `repeats` calls (after two warm-up calls) of the forward pass with autograd on, and of the
    backward pass alone. Which layer costs most is what says where a faster network must change.
    """
    if not (isinstance(batch, int) and batch >= 1):
        raise ValueError(f"batch must be an integer >= 1, got {batch!r}")
    if not (isinstance(repeats, int) and repeats >= 1):
        raise ValueError(f"repeats must be an integer >= 1, got {repeats!r}")
    children = list(model.body)
    blocks = [children[i : i + 2] for i in range(0, len(children), 2)]  # (layer, activation)
    if len(blocks) > 1 and len(blocks[-1]) == 1:  # the conv body's closing Flatten
        flatten = blocks.pop()
        blocks[-1] += flatten
    times = []
    with one_thread():
        x = torch.randn(batch, *model.obs_shape)
        if model.has_conv_body:
            x = x.contiguous(memory_format=torch.channels_last)
        for i, block in enumerate(blocks):
            part = torch.nn.Sequential(*block)
            with torch.no_grad():
                y = part(x)
            name = f"body {i + 1}, {type(block[0]).__name__}: {_shape(x)} -> {_shape(y)}"
            times.append(_time_part(name, part, (x.requires_grad_(i > 0),), repeats))
            x = y
        zeros = torch.zeros(batch, model.hidden_size)
        lstm = lambda inputs: model.lstm(inputs, (zeros, zeros))  # noqa: E731
        times.append(_time_part(f"LSTM cell: {_shape(x)} -> {model.hidden_size}", lstm,
                                (x.requires_grad_(),), repeats))  # fmt: skip
        heads = lambda h: (model.critic(h), model.actor(h))  # noqa: E731
        times.append(_time_part(f"heads: {model.hidden_size} -> 1 + {model.n_actions}", heads,
                                (zeros.clone().requires_grad_(),), repeats))  # fmt: skip
    model.zero_grad(set_to_none=True)  # leave the model as it came
    return times


def _shape(x: torch.Tensor) -> str:
    return " x ".join(map(str, x.shape[1:]))


def _time_part(name: str, part, inputs: tuple, repeats: int) -> LayerTime:
    forward, backward = [], []
    for _ in range(repeats + 2):
        began = time.perf_counter()
        outputs = part(*inputs)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        middle = time.perf_counter()
        torch.autograd.backward(outputs, [torch.ones_like(out) for out in outputs])
        forward.append(middle - began)
        backward.append(time.perf_counter() - middle)
    batch = inputs[0].shape[0]
    return LayerTime(name, batch, 1000 * statistics.median(forward[2:]),
                     1000 * statistics.median(backward[2:]))  # fmt: skip


def layer_table(times: Sequence[LayerTime]) -> str:
    """A markdown table of network_layer_times' result, with each part's share and a total."""
    total = sum(t.forward_ms + t.backward_ms for t in times)
    lines = [
        f"the network's parts alone, {times[0].batch} inputs per call, one thread:",
        "",
        "| part | forward ms | backward ms | share | ms per agent step |",
        "|---|---:|---:|---:|---:|",
    ]
    for t in times:
        share = (t.forward_ms + t.backward_ms) / total
        lines.append(f"| {t.name} | {t.forward_ms:.3f} | {t.backward_ms:.3f} | {share:.0%} "
                     f"| {t.per_step_ms:.4f} |")  # fmt: skip
    per_step = sum(t.per_step_ms for t in times)
    lines.append(f"| **all** | | | 100% | {per_step:.4f} |")
    return "\n".join(lines)


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
