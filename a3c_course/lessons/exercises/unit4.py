"""Unit 4 exercises (notebook 04): the Hogwild update, the original's accumulation bug, shared Adam.

    4.1  update(local_model, shared_model, optimizer, loss, max_grad_norm) -> float
                                                        warm-up  one rollout's gradient, clipped,
                                                                 handed to the shared model, one step
    4.2  fixed_update(local_model, shared_model, optimizer, loss, max_grad_norm)
                                                        medium   fix the original course's update
                                                                 (original_course.original_update)
                                                                 keeping its ensure_shared_grads
    4.3  share_adam_state(optimizer) -> None            hard     create a torch.optim.Adam's state up
                                                                 front, in shared memory

The checks of 4.1 and 4.2 play several "rollouts" (fixed batches of a small ActorCritic's A3C loss)
through the learner's function, exactly as a worker does: sync the local model from the shared one,
compute the loss on the local model, update. The expected shared weights after each rollout come from
an independent reference: this rollout's gradient alone (torch.autograd.grad on a separate copy of
the network), clipped by hand, then one step of a fresh torch.optim.Adam. Not from the package's
update_shared. That machinery, and the diagnosis of a wrong update, is in `update_trace.py`.

The module also holds the small functions that notebook 04 runs in child processes: a function sent to
a child process under the spawn start method must be importable by name, so it cannot be defined in a
notebook cell.
"""

from __future__ import annotations

import signal
import time
import traceback
from collections.abc import Callable
from contextlib import contextmanager

import torch
import torch.multiprocessing as mp

from a3c_course.a3c.model import ActorCritic
from a3c_course.a3c.worker import EnvRunner, LocalLink, worker_step
from a3c_course.lessons.exercises.core import call_learner, report
from a3c_course.lessons.exercises.update_trace import (
    Scenario,
    diagnose,
    new_network,
    reference_trace,
    returned_problem,
    trace_updates,
)
from a3c_course.training.seeds import worker_seeds
from a3c_course.training.worker_loop import make_worker_envs, step_options

HINTS = {
    "4.1": [
        "The gradients live on the <b>local</b> model, the optimizer holds the <b>shared</b> "
        "parameters. Each call must start from clean local gradients, compute this loss's "
        "gradient, clip it, give it to the shared parameters, and take one step.",
        "Five statements, in this order: <code>local_model.zero_grad()</code>, "
        "<code>loss.backward()</code>, <code>norm = torch.nn.utils.clip_grad_norm_(...)</code> "
        "(it rescales in place and returns the norm <i>before</i> clipping), the hand-over, "
        "<code>optimizer.step()</code>; return <code>float(norm)</code>.",
        "The hand-over: walk through the local and the shared parameters side by side (both "
        "models list them in the same order) and make each shared parameter's gradient the local "
        "one's; the same tensor will do, no copy is needed. Do it at every call, even when the "
        "shared parameter still holds a gradient: that one is the last rollout's (handing over "
        "only while the shared .grad is None would keep an old tensor: local_model.zero_grad() "
        "gives the local model new ones).",
    ],
    "4.2": [
        "Which tensors does <code>optimizer.zero_grad()</code> touch? The optimizer was built on the "
        "<b>shared</b> parameters. What does it do to their <code>.grad</code> in PyTorch 2.x?",
        "<code>loss.backward()</code> adds into the local parameters' <code>.grad</code>. Since "
        "nothing clears them any more, rollout k's backward pass adds to the sum of rollouts "
        "1..k-1.",
        "One added call before <code>loss.backward()</code> fixes it: clear the gradients of the "
        "model whose parameters <code>backward()</code> writes into (every <code>nn.Module</code> "
        "has the method). Another way: make <code>optimizer.zero_grad</code> zero the aliased "
        "tensors in place, as PyTorch 1.x did (look at its argument).",
    ],
    "4.3": [
        "Create by hand what a stock Adam's first step creates (try one on a small tensor and "
        "print <code>adam.state</code>): for each parameter <code>p</code>, "
        "<code>optimizer.state[p]</code> is a dict with <code>'step'</code>, "
        "<code>'exp_avg'</code> and <code>'exp_avg_sq'</code>.",
        "Loop over <code>optimizer.param_groups</code> and each group's <code>'params'</code>; create "
        "<code>torch.zeros(())</code> for the step (a float tensor, so that <code>step()</code> can "
        "increment it in place) and <code>torch.zeros_like(p)</code> for both moments.",
        "Then call <code>.share_memory_()</code> on each of the three tensors. Do not take a dummy "
        "<code>step()</code> to create the state: it would count a step (and Adam's bias correction "
        "uses the count).",
    ],
}


# ------------------------------------------------------------------ checks 4.1 and 4.2


def _check_update(exercise_id: str, func: Callable, scenarios, want_norm: bool) -> bool:
    name = getattr(func, "__name__", "your function")
    for scenario in scenarios:
        got, problem = call_learner(lambda s=scenario: trace_updates(func, s), scenario.description)
        if problem is not None:
            return report(exercise_id, name, problem)
        expected = reference_trace(scenario)
        for k in range(len(scenario.scales)):
            if not torch.allclose(got.weights[k], expected.weights[k], atol=1e-5, rtol=1e-4):
                return report(exercise_id, name, diagnose(got, expected, k, scenario))
            if want_norm:
                problem = returned_problem(got.returned[k], expected.norms[k], k, scenario)
                if problem is not None:
                    return report(exercise_id, name, problem)
    return report(exercise_id, name, None, len(scenarios))


def _update_scenarios() -> list[Scenario]:
    return [
        Scenario(
            "5 rollouts, gradient norms about 3, max_grad_norm=40: no clipping", (1.0,) * 5, 40.0
        ),
        Scenario(
            "4 rollouts, the first two 50x larger, max_grad_norm=10: those two are clipped",
            (50.0, 50.0, 1.0, 1.0),
            10.0,
            seed=1,
        ),
        Scenario("1 rollout", (1.0,), 40.0, seed=2),
    ]


def check_update(func: Callable) -> bool:
    """4.1: func(local_model, shared_model, optimizer, loss, max_grad_norm) -> the gradient norm before
    clipping; each call applies exactly this loss's gradient, clipped, with one optimizer step."""
    return _check_update("4.1", func, _update_scenarios(), want_norm=True)


def check_fixed_update(func: Callable) -> bool:
    """4.2: the original update, fixed: one rollout's gradient per step, over several rollouts."""
    return _check_update("4.2", func, _update_scenarios()[:2], want_norm=False)


# ------------------------------------------------------------------ 4.3 shared Adam state


def step_in_child(optimizer: torch.optim.Optimizer, grads: list[torch.Tensor], results) -> None:
    """Child process: give the optimizer's parameters these gradients, take one step, report back.

    Puts "ok" or the traceback on `results` (a SimpleQueue), so that an error shows in the parent
    rather than on the child's stderr.
    """
    torch.set_num_threads(1)
    try:
        params = [p for group in optimizer.param_groups for p in group["params"]]
        for p, g in zip(params, grads, strict=True):
            p.grad = g.clone()
        optimizer.step()
        results.put("ok")
    except BaseException:
        results.put(traceback.format_exc())


def step_in_child_process(optimizer: torch.optim.Optimizer, grads: list[torch.Tensor]) -> None:
    """Run step_in_child in a forked child process (the state it sees is inherited, not pickled) and
    wait for it; raise RuntimeError with the child's traceback if its step failed."""
    context = mp.get_context("fork")
    results = context.SimpleQueue()
    child = context.Process(target=step_in_child, args=(optimizer, grads, results))
    child.start()
    try:
        child.join(60)
    finally:
        if child.is_alive():
            child.kill()
            child.join()
    outcome = results.get() if not results.empty() else f"exit code {child.exitcode}"
    if outcome != "ok":
        raise RuntimeError(f"the step in the child process failed:\n{outcome}")


def _adam_for_check(seed: int) -> tuple[torch.optim.Adam, list[torch.Tensor]]:
    """A stock Adam over a small network's shared parameters, in two groups with their own lr."""
    network = new_network(seed).share_memory()
    body = [p for name, p in network.named_parameters() if name.startswith(("body", "lstm"))]
    heads = [p for name, p in network.named_parameters() if not name.startswith(("body", "lstm"))]
    optimizer = torch.optim.Adam([{"params": body}, {"params": heads, "lr": 3e-3}], lr=1e-2)
    return optimizer, body + heads


def _gradients(params, seed: int) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(p.shape, generator=generator) for p in params]


def _state_problem(optimizer, params) -> str | None:
    """What is missing or unshared in the state before any step."""
    for i, p in enumerate(params):
        state = optimizer.state.get(p)
        if not state:
            return f"parameter {i} (shape {tuple(p.shape)}) has no state: create it for every parameter of every group"
        for key in ("step", "exp_avg", "exp_avg_sq"):
            if key not in state:
                return f"parameter {i}'s state has no {key!r} (it has {sorted(state)})"
            value = state[key]
            if not torch.is_tensor(value):
                return (
                    f"parameter {i}'s state[{key!r}] is a {type(value).__name__}, expected a tensor"
                )
            if key != "step" and value.shape != p.shape:
                return f"parameter {i}'s state[{key!r}] has shape {tuple(value.shape)}, expected {tuple(p.shape)}"
            if float(value.abs().sum()) != 0.0:
                return (
                    f"parameter {i}'s state[{key!r}] is not zero before any step "
                    f"(got {float(value.reshape(-1)[0]):g}...): create it, do not take a step"
                )
            if not value.is_shared():
                return f"parameter {i}'s state[{key!r}] is not in shared memory (call .share_memory_() on it)"
    return None


def _stock_adam_reference(seed: int, gradient_seeds) -> list[torch.Tensor]:
    """Weights after stock Adam steps (state created lazily, as usual), one per gradient seed."""
    optimizer, params = _adam_for_check(seed)
    for gradient_seed in gradient_seeds:
        for p, g in zip(params, _gradients(params, gradient_seed), strict=True):
            p.grad = g
        optimizer.step()
    return [p.detach().clone() for p in params]


def _weights_problem(params, expected, what: str) -> str | None:
    for i, (p, e) in enumerate(zip(params, expected, strict=True)):
        if not torch.allclose(p.detach(), e, atol=1e-6, rtol=1e-5):
            gap = float((p.detach() - e).abs().max())
            return f"{what}: parameter {i}'s weights differ from a stock torch.optim.Adam's by up to {gap:.3g}"
    return None


def check_shared_adam_state(func: Callable) -> bool:
    """4.3: func(optimizer) creates a torch.optim.Adam's state (step, exp_avg, exp_avg_sq) for every
    parameter, up front, in shared memory; a step taken in a child process is then seen here."""
    exercise_id, name = "4.3", getattr(func, "__name__", "your function")
    optimizer, params = _adam_for_check(seed=3)
    _, problem = call_learner(lambda: func(optimizer), "a fresh Adam")
    if problem is not None:
        return report(exercise_id, name, problem)
    problem = _state_problem(optimizer, params)
    if problem is not None:
        return report(exercise_id, name, f"on a fresh Adam (2 parameter groups): {problem}")
    kept = {id(p): {k: v.data_ptr() for k, v in optimizer.state[p].items()} for p in params}

    # One step in a child process: this process must see it, in the weights and in the state.
    try:
        step_in_child_process(optimizer, _gradients(params, 10))
    except RuntimeError as error:
        return report(
            exercise_id, name, f"the stock optimizer.step() failed with your state: {error}"
        )
    steps = [float(optimizer.state[p]["step"]) for p in params]
    if any(s != 1.0 for s in steps):
        return report(
            exercise_id,
            name,
            f"a child process took one step, but this process sees step counts {sorted(set(steps))} "
            "(expected 1.0): the step counters are not shared",
        )
    first = params[0]
    want = 0.1 * _gradients(params, 10)[0]  # exp_avg after one step: (1 - beta1) * g
    got = optimizer.state[first]["exp_avg"]
    if not torch.allclose(got, want, atol=1e-6):
        return report(
            exercise_id,
            name,
            "a child process took one step, but this process sees exp_avg "
            f"{float(got.reshape(-1)[0]):.4g}..., expected (1 - beta1) * g = "
            f"{float(want.reshape(-1)[0]):.4g}...: the moments are not shared",
        )
    problem = _weights_problem(params, _stock_adam_reference(3, [10]), "after the child's step")
    if problem is not None:
        return report(exercise_id, name, problem)

    # Two more steps here: the stock step() must keep using the same (shared) tensors.
    for gradient_seed in (11, 12):
        for p, g in zip(params, _gradients(params, gradient_seed), strict=True):
            p.grad = g
        optimizer.step()
    for p in params:
        now = {k: v.data_ptr() for k, v in optimizer.state[p].items()}
        if any(now.get(k) != ptr for k, ptr in kept[id(p)].items()):
            return report(
                exercise_id,
                name,
                "optimizer.step() replaced some state tensors by new (unshared) ones; create them "
                "with the dtypes and shapes Adam uses (step: a 0-dim float tensor; moments: zeros_like(p))",
            )
    problem = _weights_problem(params, _stock_adam_reference(3, [10, 11, 12]), "after 3 steps")
    if problem is not None:
        return report(exercise_id, name, problem)
    return report(exercise_id, name, None, 3)


# ------------------------------------------------------------------ child processes of notebook 04


def fill_from_child(tensor: torch.Tensor, value: float) -> None:
    """Child process: write value into every element of tensor (notebook 04's share_memory demo)."""
    tensor.fill_(value)


class _ProbeClock:
    """A clock for worker_step (a3c.worker.Clock) that notes, after the pull, when it ended and
    the shared Adam's step counter; after the push, when it ended and the updates that other
    workers made in between (the counter's rise, less this worker's own update)."""

    def __init__(self, counter: torch.Tensor, start: float):
        self.counter, self.start = counter, start
        self.staleness: list[int] = []
        self.times: list[tuple[float, float]] = []

    @contextmanager
    def __call__(self, part: str):
        yield
        if part == "sync":
            self.synced_at, self.seen = time.monotonic() - self.start, int(self.counter)
        elif part == "optimizer":
            self.staleness.append(max(int(self.counter) - self.seen - 1, 0))
            self.times.append((self.synced_at, time.monotonic() - self.start))


def hogwild_probe(
    worker_id, config, shared_model, optimizer, seconds, threads, start, queue
) -> None:
    """Child process: the workers' own step (a3c.worker.worker_step: pull, rollout, loss, push) run
    for `seconds` with `threads` intra-op threads, with a clock that measures what the workers do
    not report.

    Puts one dict on queue: steps and updates done, the loop's duration, and per rollout the
    staleness, i.e. how many updates by other workers landed on the shared model between this
    worker's pull and the end of its own update (read from the shared optimizer's step counter), and
    the (pull, update) times in seconds since `start` (time.monotonic() in the parent; the clock is
    system-wide). On an error it puts {"worker": id, "error": traceback}.
    """
    torch.set_num_threads(threads)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops us
    try:
        torch.manual_seed(worker_seeds(config.seed, worker_id, config.envs_per_worker).torch)
        local = ActorCritic(**shared_model.architecture)
        runner = EnvRunner(make_worker_envs(config, worker_id), shared_model.hidden_size)
        counter = optimizer.state[next(iter(shared_model.parameters()))]["step"]  # shared
        link, options = LocalLink(shared_model, optimizer), step_options(config)
        clock, steps, updates = _ProbeClock(counter, start), 0, 0
        began = time.monotonic()
        try:
            while time.monotonic() - began < seconds:
                steps += worker_step(local, runner, link, clock=clock, **options).rollout.steps
                updates += 1
        finally:
            runner.close()
        duration = time.monotonic() - began
        queue.put(
            {
                "worker": worker_id,
                "steps": steps,
                "updates": updates,
                "seconds": duration,
                "steps_per_s": steps / duration,
                "staleness": clock.staleness,
                "times": clock.times,
            }
        )
    except BaseException:
        queue.put({"worker": worker_id, "error": traceback.format_exc()})
