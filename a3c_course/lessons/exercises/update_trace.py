"""Playing rollouts through a learner's update function, and saying what went wrong (checks 4.1, 4.2).

A scenario is several "rollouts" in a row: fixed batches of a small ActorCritic's A3C loss. The
learner's function sees them as a worker would (sync the local model from the shared one, compute the
loss on the local model, update); the reference applies each rollout's own gradient, clipped by hand,
with one step of a fresh torch.optim.Adam (independent of the package's update_shared). When the
shared weights part, `diagnose` names the likely cause: no step, a stale or accumulated gradient,
clipping after the step, or a missing clip.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from a3c_course.a3c.model import ActorCritic
from a3c_course.a3c.optim import SharedAdam
from a3c_course.a3c.returns import a3c_loss

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


def new_network(seed: int) -> ActorCritic:
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
    network = new_network(scenario.seed)
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
    shared_model = new_network(scenario.seed).share_memory()
    local_model = new_network(scenario.seed + 1)
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


def diagnose(got: Trace, expected: Trace, k: int, scenario: Scenario) -> str:
    """Why the shared weights after rollout k (0-based) differ, when they agreed before it."""
    where = f"on rollout {k + 1} of {len(scenario.scales)} ({scenario.description})"
    before = got.weights[k - 1] if k else _flat(new_network(scenario.seed).parameters())
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
                "gradients over on every update: an alias made once (a hand-over skipped while the "
                "shared .grad is set) goes stale when local_model.zero_grad() replaces the local "
                "tensors"
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


def returned_problem(got: object, norm: float, k: int, scenario: Scenario) -> str | None:
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
