"""Unit 5 exercises (notebook 05): a parameter server's push, and where one server saturates.

    5.1  ParameterServer.push(grads, pulled_at, steps) -> staleness
                                              warm-up  apply on arrival, count the update, its steps
                                                       and how stale the gradient was
    5.2  workers_one_server_feeds(apply_s, reply_s, model_bytes, worker_steps_per_s,
                                  steps_per_update, gbit_per_s) -> float
                                              warm-up  the scaling model's one number

The check of 5.1 plays three workers' pulls and pushes through the learner's server and compares
the weights with torch.optim.Adam stepping the same gradients in the same order on a copy of the
network, and the staleness with the order of events. The cases of 5.2 were worked out by hand.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from a3c_course.a3c.model import ActorCritic
from a3c_course.lessons.exercises.core import Case, call_learner, check_cases, close, report

HINTS = {
    "5.1": [
        "Three jobs, in this order: say how stale the gradient is, apply it, count it. The "
        "staleness is how many updates landed after the worker pulled: <code>self.updates</code> "
        "now, less <code>pulled_at</code>, before you count this one.",
        "Applying is the hand-over of Exercise 4.1's update: set each parameter's "
        "<code>.grad</code> to the matching tensor of <code>grads</code> "
        "(<code>zip(self.model.parameters(), grads)</code>), then one "
        "<code>self.optimizer.step()</code>.",
        "Counting: <code>self.updates += 1</code> and <code>self.steps += steps</code>; return the "
        "staleness you computed first.",
    ],
    "5.2": [
        "Work in updates per second throughout: the server's own time gives one ceiling, its link "
        "another. Turn the link into bytes per second first: <code>gbit_per_s * 1e9 / 8</code>.",
        "The ceilings: <code>1 / (apply_s + reply_s)</code> updates per second, and the link's "
        "bytes per second over <code>model_bytes</code>. The smaller of the two is the limit.",
        "One worker sends <code>worker_steps_per_s / steps_per_update</code> updates per second: "
        "divide the limit by that.",
    ],
}


def _network(seed: int) -> ActorCritic:
    torch.manual_seed(seed)
    return ActorCritic((4,), 2, hidden_size=8)


def _gradient(model, seed: int) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(p.shape, generator=generator) for p in model.parameters()]


# The order of events: (worker, what it does). Each push carries the version its worker pulled.
EVENTS = [("A", "pull"), ("B", "pull"), ("A", "push"), ("A", "pull"), ("C", "pull"),
          ("B", "push"), ("A", "push"), ("C", "push")]  # fmt: skip
EXPECTED_STALENESS = [0, 1, 1, 2]  # B after A's; A after B's; C after B's and A's
STEPS_PER_PUSH = 160


def check_parameter_server(ParameterServer) -> bool:
    """5.1: ParameterServer(model, optimizer) with pull() and push(grads, pulled_at, steps)."""
    name = getattr(ParameterServer, "__name__", "ParameterServer")
    model, reference = _network(0), _network(0)
    adam = torch.optim.Adam(reference.parameters(), lr=1e-2)
    server, problem = call_learner(
        lambda: ParameterServer(model, torch.optim.Adam(model.parameters(), lr=1e-2)),
        "ParameterServer(model, optimizer)",
    )
    if problem is not None:
        return report("5.1", name, problem)
    pulled, staleness = {}, []
    for k, (worker, event) in enumerate(EVENTS):
        if event == "pull":
            result, problem = call_learner(server.pull, f"{worker}'s pull")
            pulled[worker] = result[0] if problem is None else None
        else:
            grads = _gradient(model, k)
            description = f"{worker}'s push (event {k + 1} of {len(EVENTS)})"
            result, problem = call_learner(
                lambda grads=grads, worker=worker: server.push(
                    grads, pulled[worker], STEPS_PER_PUSH
                ),
                description,
            )
            staleness.append(result)
            for param, grad in zip(reference.parameters(), grads, strict=True):
                param.grad = grad.clone()
            adam.step()
        if problem is not None:
            return report("5.1", name, problem)
    return report("5.1", name, _server_problem(server, model, reference, staleness), len(EVENTS))


def _server_problem(server, model, reference, staleness) -> str | None:
    if staleness != EXPECTED_STALENESS:
        hint = ""
        if staleness == [s + 1 for s in EXPECTED_STALENESS]:
            hint = " (one too many each time: compute it before counting this update)"
        elif not any(staleness):
            hint = " (never above 0: is self.updates counted at each push?)"
        return (
            f"the pushes' staleness is {staleness}, expected {EXPECTED_STALENESS}{hint}; events: "
            + ", ".join(f"{w} {e}" for w, e in EVENTS)
        )
    pushes = len(EXPECTED_STALENESS)
    if (server.updates, server.steps) != (pushes, pushes * STEPS_PER_PUSH):
        return (
            f"after {pushes} pushes of {STEPS_PER_PUSH} steps, updates and steps are "
            f"{server.updates} and {server.steps}, expected {pushes} and {pushes * STEPS_PER_PUSH}"
        )
    for (label, got), expected in zip(
        model.named_parameters(), reference.parameters(), strict=True
    ):
        problem = close(got.detach(), expected.detach())
        if problem is not None:
            return (
                f"the weights differ from Adam's after the same {pushes} gradients, in order "
                f"({label}: {problem}); is each gradient handed over and one step taken per push?"
            )
    return None


def check_workers_one_server_feeds(func) -> bool:
    """5.2: the number of workers one server can feed, on cases worked out by hand."""
    cases = [
        # 3 ms a update: 333 updates/s; 600 kB on 1 Gbit/s: 208 updates/s; 8.75 updates/s each.
        Case("a slow link (1 Gbit/s binds)", (2e-3, 1e-3, 600_000, 1_400, 160, 1.0), 23.8095),
        Case("a fast link (the server's time binds)", (2e-3, 1e-3, 600_000, 1_400, 160, 10.0), 38.0952),
        # 0.5 ms: 2,000 updates/s; 5 MB on 10 Gbit/s: 250 updates/s; 2,000 / 100 = 20 each.
        Case("a big network", (0.4e-3, 0.1e-3, 5_000_000, 2_000, 100, 10.0), 12.5),
    ]  # fmt: skip
    return check_cases(
        "5.2", func, cases, lambda got, expected: close(got, expected, rtol=1e-4), _feeds_mistake
    )


# The likely causes of a wrong 5.2: what the learner's number matches, and the cause in words.
FEEDS_MISTAKES = {
    "bits": "the link's speed is in bits a second: divide gbit_per_s * 1e9 by 8 for its bytes a "
    "second before dividing by model_bytes",
    "per update": "a worker sends one update every steps_per_update agent steps: its updates a "
    "second are worker_steps_per_s / steps_per_update",
    "apply only": "the server spends apply_s + reply_s on each update (apply the gradient, then "
    "copy the weights for the reply): the compute ceiling is 1 / (apply_s + reply_s)",
    "larger ceiling": "the first ceiling reached binds: take the smaller of the compute and the "
    "network ceilings (min), not the larger",
    "both ways": "a link is full duplex: the gradient coming in and the weights going out do not "
    "share it, so each update puts model_bytes on it each way, and the network ceiling is the "
    "link's bytes a second / model_bytes",
    "rounded": "return the number as it comes (23.8 workers, say), not rounded to whole workers",
}


def _feeds_variants(apply_s, reply_s, model_bytes, steps_per_s, steps_per_update, gbit_per_s):
    """What each known mistake of 5.2 gives instead of the answer (a list where one mistake can
    give several numbers: rounded down, to the nearest, or up)."""
    compute, network = 1 / (apply_s + reply_s), gbit_per_s * 1e9 / 8 / model_bytes
    per_worker, ceiling = steps_per_s / steps_per_update, min(compute, network)
    answer = ceiling / per_worker
    return {
        "bits": min(compute, gbit_per_s * 1e9 / model_bytes) / per_worker,
        "per update": ceiling / steps_per_s,
        "apply only": min(1 / apply_s, network) / per_worker,
        "larger ceiling": max(compute, network) / per_worker,
        "both ways": min(compute, network / 2) / per_worker,
        "rounded": [math.floor(answer), round(answer), math.ceil(answer)],
    }


def _feeds_mistake(case: Case, got) -> str | None:
    """The cause, when the learner's number is what a known mistake gives on this case (both,
    when two mistakes give the same number here)."""
    causes = [
        FEEDS_MISTAKES[mistake]
        for mistake, wrongs in _feeds_variants(*case.args).items()
        if any(close(got, wrong, rtol=1e-4) is None for wrong in np.atleast_1d(wrongs))
    ]
    return "; or ".join(causes) or None
