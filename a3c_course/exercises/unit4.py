"""Unit 4 exercises (notebook 04): the Hogwild update, the original's accumulation bug, shared Adam.

    4.1  update(local_model, shared_model, optimizer, loss, max_grad_norm) -> float
                                                        warm-up  one rollout's gradient, clipped,
                                                                 handed to the shared model, one step
    4.2  fixed_update(local_model, shared_model, optimizer, loss, max_grad_norm)
                                                        medium   fix `buggy_update` (the original
                                                                 pattern) keeping ensure_shared_grads
    4.3  share_adam_state(optimizer) -> None            hard     create a torch.optim.Adam's state up
                                                                 front, in shared memory

The checks of 4.1 and 4.2 play several "rollouts" (fixed batches of a small ActorCritic's A3C loss)
through the learner's function, exactly as a worker does: sync the local model from the shared one,
compute the loss on the local model, update. The expected shared weights after each rollout come from
an independent reference: this rollout's gradient alone (torch.autograd.grad on a separate copy of
the network), clipped by hand, then one step of a fresh torch.optim.Adam. Not from the package's
update_shared.

The module also holds the small functions that notebook 04 runs in child processes: a function sent to
a child process under the spawn start method must be importable by name, so it cannot be defined in a
notebook cell.
"""

from __future__ import annotations

import math
import signal
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.multiprocessing as mp
import torch.nn.functional as F

from a3c_course.exercises.core import call_learner, report
from a3c_course.model import ActorCritic
from a3c_course.optim import SharedAdam
from a3c_course.returns import a3c_loss
from a3c_course.worker import (
    EnvRunner,
    collect_rollout,
    make_worker_envs,
    rollout_loss,
    sync_from_shared,
    update_shared,
)

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
        "shared parameter still holds a gradient: that one is the last rollout's (the original's "
        "'only if None' shortcut is the bug of section 5).",
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


# ------------------------------------------------------------------ the original's update (4.2)


def ensure_shared_grads(model, shared_model):
    """Verbatim from the original course's train.py: alias the shared .grad to the local one, once."""
    for param, shared_param in zip(model.parameters(), shared_model.parameters()):  # noqa: B905
        if shared_param.grad is not None:
            return
        shared_param._grad = param.grad


def buggy_update(local_model, shared_model, optimizer, loss, max_grad_norm):
    """The original course's update (block H of its train.py), in today's spelling.

    Under PyTorch 1.x it applied one rollout's gradient per step. Under PyTorch 2.x it does not:
    exercise 4.2 asks what changed and for the smallest fix.
    """
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(local_model.parameters(), max_grad_norm)
    ensure_shared_grads(local_model, shared_model)
    optimizer.step()


# ------------------------------------------------------------------ rollouts for the update checks

_OBS_DIM, _ACTIONS, _HIDDEN, _BATCH = 4, 2, 16, 12
_LR = 1e-2  # large enough that one Adam step moves every weight visibly


@dataclass
class Scenario:
    """Several rollouts in a row: each has a fixed batch (from `seed` and its index) and a loss scale."""

    description: str
    scales: tuple[float, ...]
    max_grad_norm: float
    seed: int = 0


def _rollout_loss(model: ActorCritic, seed: int, index: int, scale: float) -> torch.Tensor:
    """The A3C loss of a fixed batch of B independent steps (observations, actions, advantages and
    returns drawn from a generator seeded by seed and index), times scale."""
    generator = torch.Generator().manual_seed(1000 * seed + index)
    obs = torch.randn(_BATCH, _OBS_DIM, generator=generator)
    actions = torch.randint(0, _ACTIONS, (_BATCH,), generator=generator)
    advantages = torch.randn(_BATCH, generator=generator)
    returns = torch.randn(_BATCH, generator=generator)
    out = model(obs)
    log_pi = F.log_softmax(out.logits, dim=-1)
    entropies = -(log_pi.exp() * log_pi).sum(-1)
    log_probs = log_pi.gather(1, actions[:, None])[:, 0]
    return scale * a3c_loss(log_probs, entropies, out.value[:, 0], advantages, returns).total


def _new_network(seed: int) -> ActorCritic:
    torch.manual_seed(seed)
    return ActorCritic((_OBS_DIM,), _ACTIONS, hidden_size=_HIDDEN)


def _flat(tensors) -> torch.Tensor:
    return torch.cat([t.detach().reshape(-1) for t in tensors])


@dataclass
class Trace:
    """What happened at each rollout: the shared weights after it, the gradient the shared optimizer
    was given (None when a shared .grad was missing), and what the update function returned."""

    weights: list[torch.Tensor] = field(default_factory=list)
    applied: list[torch.Tensor | None] = field(default_factory=list)
    returned: list[object] = field(default_factory=list)
    own: list[torch.Tensor] = field(default_factory=list)  # each rollout's own gradient, unclipped
    norms: list[float] = field(default_factory=list)  # reference only: norms before clipping
    steps: list[int] = field(default_factory=list)  # the shared Adam's step count after each update


def reference_trace(scenario: Scenario) -> Trace:
    """The correct outcome: per rollout, its own gradient (autograd.grad on a separate network with
    the same weights), clipped by hand to max_grad_norm, one step of a fresh torch.optim.Adam."""
    network = _new_network(scenario.seed)
    params = list(network.parameters())
    adam = torch.optim.Adam(params, lr=_LR)
    trace = Trace()
    for k, scale in enumerate(scenario.scales):
        grads = torch.autograd.grad(_rollout_loss(network, scenario.seed, k, scale), params)
        norm = math.sqrt(sum(float(g.double().pow(2).sum()) for g in grads))
        coef = min(1.0, scenario.max_grad_norm / (norm + 1e-6))
        for p, g in zip(params, grads, strict=True):
            p.grad = g * coef
        adam.step()
        trace.weights.append(_flat(params).clone())
        trace.applied.append(_flat(g * coef for g in grads))
        trace.own.append(_flat(grads))
        trace.norms.append(norm)
    return trace


def trace_updates(update: Callable, scenario: Scenario) -> Trace:
    """Play the scenario's rollouts through update(local_model, shared_model, optimizer, loss,
    max_grad_norm), as a worker would: before each rollout the local model is synced from the shared
    one (its .grad left alone, as sync_from_shared does); the optimizer is a SharedAdam."""
    shared_model = _new_network(scenario.seed).share_memory()
    local_model = _new_network(scenario.seed + 1)
    optimizer = SharedAdam(shared_model.parameters(), lr=_LR)
    trace = Trace()
    for k, scale in enumerate(scenario.scales):
        with torch.no_grad():
            for local, shared in zip(
                local_model.parameters(), shared_model.parameters(), strict=True
            ):
                local.copy_(shared)
        loss = _rollout_loss(local_model, scenario.seed, k, scale)
        own = torch.autograd.grad(loss, list(local_model.parameters()), retain_graph=True)
        trace.own.append(_flat(own))  # this rollout's gradient, computed aside (no .grad touched)
        trace.returned.append(
            update(local_model, shared_model, optimizer, loss, scenario.max_grad_norm)
        )
        trace.weights.append(_flat(shared_model.parameters()).clone())
        trace.steps.append(int(optimizer.state[next(shared_model.parameters())]["step"]))
        grads = [p.grad for p in shared_model.parameters()]
        trace.applied.append(None if any(g is None for g in grads) else _flat(grads).clone())
    return trace


def _cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(a.double() @ b.double() / (a.double().norm() * b.double().norm() + 1e-30))


def _diagnose(got: Trace, expected: Trace, k: int, scenario: Scenario) -> str:
    """Why the shared weights after rollout k (0-based) differ, when they agreed before it."""
    where = f"on rollout {k + 1} of {len(scenario.scales)} ({scenario.description})"
    before = got.weights[k - 1] if k else _flat(_new_network(scenario.seed).parameters())
    applied, wanted = got.applied[k], expected.applied[k]
    if torch.equal(got.weights[k], before):
        if applied is None:
            return (
                f"{where}: the shared weights did not change: the shared parameters' .grad was "
                "None, so the optimizer skipped them. Hand the local gradients over "
                "(shared.grad = local.grad) before optimizer.step()"
            )
        return (
            f"{where}: the shared weights did not change: the optimizer took no step. Call "
            "optimizer.step() once per rollout, after handing over the gradients"
        )
    if applied is not None and float((applied - wanted).abs().max()) > 1e-4 * (
        1 + float(wanted.abs().max())
    ):
        return _wrong_gradient(got, k, scenario, where, float(wanted.norm()))
    taken = got.steps[k] - (got.steps[k - 1] if k else 0)
    if taken != 1:
        return (
            f"{where}: the optimizer took {taken} steps on this rollout (its step count went "
            f"from {got.steps[k] - taken} to {got.steps[k]}). Take exactly one "
            "optimizer.step() per rollout"
        )
    gap = float((got.weights[k] - expected.weights[k]).abs().max())
    return (
        f"{where}: the shared weights differ by up to {gap:.3g} from one Adam step with this "
        f"rollout's clipped gradient (norm {float(wanted.norm()):.4g}), though the gradient "
        "left on the shared parameters is right: the step saw it before it was clipped. Clip "
        "(clip_grad_norm_) before optimizer.step(), not after"
    )


def _wrong_gradient(got: Trace, k: int, scenario: Scenario, where: str, want_norm: float) -> str:
    """What the gradient given to the optimizer was, when it was not this rollout's (clipped)."""
    applied = got.applied[k]
    got_norm, own = float(applied.norm()), got.own[k]
    for j in range(k):  # an earlier rollout's gradient, handed over once and reused since
        if _cosine(applied, got.own[j]) > 0.9999 and _cosine(applied, own) < 0.99:
            return (
                f"{where}: the optimizer was given rollout {j + 1}'s gradient again (cosine "
                f"{_cosine(applied, got.own[j]):.3f} with it, {_cosine(applied, own):.3f} with "
                f"this rollout's): the shared .grad still holds an old tensor. Hand the "
                "gradients over on every update: an alias made once (ensure_shared_grads returns "
                "early while the shared .grad is set) goes stale when local_model.zero_grad() "
                "replaces the local tensors"
            )
    own_sum = torch.stack(got.own[: k + 1]).sum(0)
    if k > 0 and _cosine(applied, own_sum) > _cosine(applied, own) + 0.05:
        return (
            f"{where}: the optimizer was given a gradient of norm {got_norm:.4g}, but this "
            f"rollout's own gradient (clipped) has norm {want_norm:.4g} (ratio "
            f"{got_norm / want_norm:.2f}). It points along the sum of rollouts 1..{k + 1} "
            f"(cosine {_cosine(applied, own_sum):.3f}) more than along this rollout's own "
            f"(cosine {_cosine(applied, own):.3f}): gradients from earlier rollouts are "
            "accumulating. Clear the local gradients before each backward pass"
        )
    if got_norm > scenario.max_grad_norm * 1.001:
        return (
            f"{where}: the optimizer was given a gradient of norm {got_norm:.4g}, above "
            f"max_grad_norm={scenario.max_grad_norm:g}; expected this rollout's gradient "
            f"rescaled to norm {want_norm:.4g}. Clip (torch.nn.utils.clip_grad_norm_) after "
            "backward and before the step"
        )
    return (
        f"{where}: the optimizer was given a gradient of norm {got_norm:.4g} (cosine "
        f"{_cosine(applied, own):.3f} with this rollout's own), expected this rollout's own "
        f"gradient, clipped, of norm {want_norm:.4g}"
    )


def _returned_problem(got: object, norm: float, k: int, scenario: Scenario) -> str | None:
    where = f"on rollout {k + 1} of {len(scenario.scales)} ({scenario.description})"
    try:
        value = float(got)
    except (TypeError, ValueError):
        return (
            f"{where}: return the gradient norm before clipping as a float (the value "
            f"clip_grad_norm_ returns); expected {norm:.6g}, got {got!r}"
        )
    if not math.isclose(value, norm, rel_tol=1e-4, abs_tol=1e-6):
        clipped = min(norm, scenario.max_grad_norm)
        extra = (
            " (that is the norm after clipping)"
            if math.isclose(value, clipped, rel_tol=1e-4) and norm > scenario.max_grad_norm
            else ""
        )
        return (
            f"{where}: returned {value:.6g}{extra}, expected the norm before clipping, {norm:.6g}"
        )
    return None


def _check_update(exercise_id: str, func: Callable, scenarios, want_norm: bool) -> bool:
    name = getattr(func, "__name__", "your function")
    for scenario in scenarios:
        got, problem = call_learner(lambda s=scenario: trace_updates(func, s), scenario.description)
        if problem is not None:
            return report(exercise_id, name, problem)
        expected = reference_trace(scenario)
        for k in range(len(scenario.scales)):
            if not torch.allclose(got.weights[k], expected.weights[k], atol=1e-5, rtol=1e-4):
                return report(exercise_id, name, _diagnose(got, expected, k, scenario))
            if want_norm:
                problem = _returned_problem(got.returned[k], expected.norms[k], k, scenario)
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
    network = _new_network(seed).share_memory()
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


def hogwild_probe(
    worker_id, config, shared_model, optimizer, seconds, threads, start, queue
) -> None:
    """Child process: the worker loop of a3c_course.worker (sync, rollout, loss, update), run for
    `seconds` with `threads` intra-op threads, measuring what the worker loop does not report.

    Puts one dict on queue: steps and updates done, the loop's duration, and per rollout the
    staleness, i.e. how many updates by other workers landed on the shared model between this
    worker's sync and the end of its own update (read from the shared optimizer's step counter), and
    the (sync, update) times in seconds since `start` (time.monotonic() in the parent; the clock is
    system-wide). On an error it puts {"worker": id, "error": traceback}.
    """
    torch.set_num_threads(threads)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops us
    try:
        torch.manual_seed(config.seed + 1 + worker_id)
        local = ActorCritic(**shared_model.architecture)
        runner = EnvRunner(make_worker_envs(config, worker_id), shared_model.hidden_size)
        counter = optimizer.state[next(iter(shared_model.parameters()))]["step"]  # shared
        staleness, times, steps, updates = [], [], 0, 0
        began = time.monotonic()
        try:
            while time.monotonic() - began < seconds:
                sync_from_shared(local, shared_model)
                synced_at, seen = time.monotonic() - start, int(counter)
                rollout, _ = collect_rollout(local, runner, config.rollout_steps)
                loss = rollout_loss(rollout, config)
                update_shared(local, shared_model, optimizer, loss.total, config.max_grad_norm)
                # Updates since our sync, less our own: those of other workers, up to our step.
                staleness.append(max(int(counter) - seen - 1, 0))
                times.append((synced_at, time.monotonic() - start))
                steps += rollout.steps
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
                "staleness": staleness,
                "times": times,
            }
        )
    except BaseException:
        queue.put({"worker": worker_id, "error": traceback.format_exc()})
