"""Where one worker's time goes: its loop taken apart, and the network's layers timed alone.

    profile_worker(TrainConfig(envs_per_worker=4), seconds=10)   one worker's loop in this process,
                                                                  its time split into PROFILE_PARTS
    network_layer_times(model, batch=16)                         each layer of the network alone

Used by benchmarks/profile_worker.py and notebook 04; the speeds of whole runs (the environments
alone, the trainer) are in `throughput.py`. Times are wall-clock, with one intra-op thread, as in a
worker process.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch

from a3c_course.a3c.envs import make_env
from a3c_course.a3c.model import ActorCritic
from a3c_course.a3c.optim import make_shared_optimizer
from a3c_course.a3c.worker import EnvRunner, LocalLink, worker_step
from a3c_course.measure.throughput import one_thread
from a3c_course.training.config import TrainConfig
from a3c_course.training.seeds import network_seed
from a3c_course.training.worker_loop import (
    conv_kernels,
    env_options,
    make_worker_envs,
    step_options,
    uses_onednn,
)

__all__ = [
    "PROFILE_PARTS",
    "WorkerProfile",
    "profile_worker",
    "LayerTime",
    "network_layer_times",
    "layer_table",
]


# -- one worker, taken apart ---------------------------------------------------------------------

# The parts of a worker's time, in the order of its loop. Their shares add up to 1.
PROFILE_PARTS = {
    "emulator": "the ALE emulator itself (4 frames per agent step)",
    "preprocessing": "the wrappers around it: max-pool, grey, crop, resize, reward clip, statistics",
    "forward": "the network's forward passes (one batched pass per step, plus bootstraps)",
    "rollout_other": "the rest of collect_rollout: sampling, numpy <-> tensor, stacking, LSTM resets",
    "loss": "rollout_loss: GAE, n-step returns, the A3C loss",
    "backward": "loss.backward() through the rollout (conv layers and the LSTM, T steps)",
    "clip": "zero_grad and gradient-norm clipping",
    "optimizer": "the push: the gradient handed to the shared model, the shared optimizer's step",
    "sync": "the pull: copying the shared weights into the local model",
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
    """Accumulates seconds per part name; clock(part) times a block (worker.Clock)."""

    def __init__(self) -> None:
        self.seconds = dict.fromkeys([*PROFILE_PARTS, "rollout"], 0.0)

    @contextmanager
    def __call__(self, name: str):
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


def profile_worker(
    config: TrainConfig,
    seconds: float = 5.0,
    *,
    warmup_rollouts: int = 2,
    onednn: bool | None = None,
) -> WorkerProfile:
    """Run one worker's loop (sync, rollout, loss, update) in this process, with one thread, for
    `seconds`, and split its time into PROFILE_PARTS.

    Each pass is the workers' own worker_step, on a LocalLink to a shared model, with a clock
    passed in for its parts; inside the rollout, the environments are timed by patching their
    step/reset methods and the network's forward passes with forward hooks.
    The first warmup_rollouts rollouts are not counted (first calls allocate memory).
    onednn: the convolution kernels (True: oneDNN's, False: PyTorch's own); None: the workers'
    choice for config.envs_per_worker (worker_loop.uses_onednn).
    """
    if not seconds > 0:
        raise ValueError(f"seconds must be positive, got {seconds}")
    config = config.replace(workers=1, eval_episodes=0)
    torch.manual_seed(network_seed(config.seed))
    if onednn is None:
        onednn = uses_onednn(config.envs_per_worker)  # the workers' own choice
    with one_thread(), conv_kernels(onednn):
        probe = make_env(config.game, **env_options(config))
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
        link, options = LocalLink(shared, optimizer), step_options(config)
        try:
            for _ in range(warmup_rollouts):
                _profiled_step(local, runner, link, options, _Clock())
            clock.seconds, outer["env"] = _Clock().seconds, 0.0  # in place: the hooks hold it
            steps = rollouts = 0
            began = time.perf_counter()
            while True:
                steps += _profiled_step(local, runner, link, options, clock)
                rollouts += 1
                total = time.perf_counter() - began
                if total >= seconds:
                    break
        finally:
            runner.close()
    parts = {part: clock.seconds[part] for part in PROFILE_PARTS}
    parts["preprocessing"] = max(outer["env"] - parts["emulator"], 0.0)
    # The rest of collect_rollout: what it spent outside the environments and the forward passes.
    parts["rollout_other"] = max(clock.seconds["rollout"] - outer["env"] - parts["forward"], 0.0)
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


def _profiled_step(local, runner, link, options, clock) -> int:
    """One worker_step with the clock: its agent steps."""
    return worker_step(local, runner, link, clock=clock, **options).rollout.steps


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
