"""Unit 2 exercises (notebook 02): the policy's entropy, a softmax bug, an LSTM cell by hand.

    2.1  entropy_from_logits(logits)             warm-up   H(pi(.|s)) from logits, numerically stable
    2.2  action_probabilities(logits)            medium    find and fix the bug: a softmax over dim=0
    2.3  lstm_cell(x, h, c, w_ih, w_hh, b_ih, b_hh)  hard  one step of torch.nn.LSTMCell by hand

Each check runs the learner's function on cases whose answers come from independent references
(NumPy in float64, closed forms, torch.nn.LSTMCell), prints one verdict line and returns whether the
exercise passed.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch

from a3c_course.exercises.core import Case, check_cases, close

HINTS = {
    "2.1": [
        "Start from log-probabilities, not probabilities: <code>log_p = torch.log_softmax(logits, dim=-1)</code>.",
        "Then H = -sum_a pi(a|s) log pi(a|s): <code>-(log_p.exp() * log_p).sum(dim=-1)</code>.",
        "Why not <code>p = logits.exp() / logits.exp().sum()</code>? exp(1000) is inf in float32 and "
        "inf / inf is NaN. log_softmax subtracts the largest logit first, so nothing overflows.",
    ],
    "2.2": [
        "Run the buggy function on a batch of two states and look at its output: do the probabilities "
        "of each state (each row) add up to 1? What adds up to 1 instead?",
        "<code>dim=0</code> is the batch axis of a (B, n_actions) tensor. The actions are always the "
        "<b>last</b> axis, whatever the batch shape: use <code>dim=-1</code>, in both places.",
        "The max subtracted for stability must be each row's own max "
        "(<code>logits.max(dim=-1, keepdim=True).values</code>), or simply use "
        "<code>torch.softmax(logits, dim=-1)</code>.",
    ],
    "2.3": [
        "Compute all four gates at once: <code>gates = x @ weight_ih.T + bias_ih + h @ weight_hh.T "
        "+ bias_hh</code>, shape (B, 4 * hidden).",
        "Split them in PyTorch's order, input, forget, cell, output: "
        "<code>i, f, g, o = gates.chunk(4, dim=1)</code>; sigmoid for i, f and o, tanh for g.",
        "<code>c_new = f * c + i * g</code> and <code>h_new = o * torch.tanh(c_new)</code>; "
        "return <code>(h_new, c_new)</code>.",
    ],
}


# ---------------------------------------------------------------- independent references (float64)


def _log_softmax_reference(logits) -> np.ndarray:
    z = np.asarray(logits, dtype=np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def _entropy_reference(logits) -> np.ndarray:
    log_p = _log_softmax_reference(logits)
    return -(np.exp(log_p) * log_p).sum(axis=-1)


def _t(values) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float32)


def _as_array(x) -> np.ndarray:
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def _finite_problem(got) -> str | None:
    if not isinstance(got, (torch.Tensor, np.ndarray)):
        return f"return a torch tensor, got a {type(got).__name__}"
    if not np.isfinite(_as_array(got).astype(float)).all():
        return (
            "got NaN or inf: either exp() of a large logit overflowed (exp(89) is already inf in "
            "float32), or a probability rounded to 0 and log(0) = -inf (0 * -inf is NaN); work "
            "with log-probabilities (torch.log_softmax), which avoid both"
        )
    return None


# ---------------------------------------------------------------- 2.1 entropy from logits


def _compare_entropy(got, expected) -> str | None:
    problem = _finite_problem(got) or close(got, expected, atol=1e-5, rtol=1e-4)
    if problem is None and not got.requires_grad:
        return (
            "the values are right, but the result is cut off from the logits' graph (.detach(), "
            ".item() or a detour through NumPy?). The A3C loss needs the entropy's gradient: "
            "use torch operations only"
        )
    return problem


def check_entropy_from_logits(func: Callable[[torch.Tensor], torch.Tensor]) -> bool:
    """2.1: entropy_from_logits(logits (..., n_actions)) -> H(pi) of each policy, shape (...).

    The logits require gradients (as the network's do), so the result must keep its graph.
    """
    generator = torch.Generator().manual_seed(21)
    batch = torch.randn(3, 4, generator=generator) * 2
    rollout = torch.randn(2, 3, 6, generator=generator)
    large = [[1000.0, 999.0, 0.0]]
    p = 1 / (1 + math.exp(-2.0))
    cases = [
        ("uniform logits for 6 actions, shape (1, 6)", torch.zeros(1, 6), [math.log(6)]),
        (
            "two actions with logits [[2, 0]] (closed form: the binary entropy of sigmoid(2))",
            _t([[2.0, 0.0]]),
            [-(p * math.log(p) + (1 - p) * math.log(1 - p))],
        ),
        ("a batch of 3 policies, shape (3, 4)", batch, _entropy_reference(batch)),
        (
            "a rollout of 2 steps x 3 environments, shape (2, 3, 6)",
            rollout,
            _entropy_reference(rollout),
        ),
        ("very large logits [[1000, 999, 0]]", _t(large), _entropy_reference(large)),
        (
            "a one-hot-like policy [[0, -10000, -10000, -10000]] (entropy 0)",
            _t([[0.0, -1e4, -1e4, -1e4]]),
            [0.0],
        ),
        (
            "the batch of 3 shifted by +500 (a constant shift does not change a softmax)",
            batch + 500,
            _entropy_reference(batch),
        ),
    ]
    return check_cases(
        "2.1",
        func,
        [Case(text, (x.clone().requires_grad_(True),), exp) for text, x, exp in cases],
        compare=_compare_entropy,
    )


# ---------------------------------------------------------------- 2.2 find the bug: softmax dim


def _compare_probabilities(got, expected) -> str | None:
    problem = _finite_problem(got)
    if problem:
        return problem
    got_a, exp_a = _as_array(got).astype(float), np.asarray(expected)
    if got_a.shape != exp_a.shape:
        return f"shape {got_a.shape}, expected shape {exp_a.shape}"
    sums = got_a.sum(axis=-1)
    if not np.allclose(sums, 1.0, atol=1e-5):
        return (
            "the probabilities of each state (the last axis, the actions) must sum to 1; "
            f"yours sum to {np.array2string(sums, precision=4, threshold=8)}"
        )
    return close(got, expected, atol=1e-6, rtol=1e-4)


def check_action_probabilities(func: Callable[[torch.Tensor], torch.Tensor]) -> bool:
    """2.2: action_probabilities(logits (..., n_actions)) -> pi(.|s), same shape, each row sums to 1."""
    generator = torch.Generator().manual_seed(22)
    one = _t([0.5, -1.0, 2.0, 0.0])
    batch = torch.randn(3, 4, generator=generator)
    rollout = torch.randn(2, 3, 4, generator=generator) * 3
    large = _t([[1000.0, 999.0, 0.0], [0.0, 1.0, 2.0]])
    cases = [
        Case("one state, shape (4,)", (one,), np.exp(_log_softmax_reference(one))),
        Case(
            "a batch of one state, shape (1, 4)",
            (one[None],),
            np.exp(_log_softmax_reference(one[None])),
        ),
        Case("a batch of 3 states, shape (3, 4)", (batch,), np.exp(_log_softmax_reference(batch))),
        Case(
            "a rollout of 2 steps x 3 environments, shape (2, 3, 4)",
            (rollout,),
            np.exp(_log_softmax_reference(rollout)),
        ),
        Case(
            "large logits [[1000, 999, 0], [0, 1, 2]]",
            (large,),
            np.exp(_log_softmax_reference(large)),
        ),
    ]
    return check_cases("2.2", func, cases, compare=_compare_probabilities)


# ---------------------------------------------------------------- 2.3 an LSTM cell by hand


def _lstm_reference(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):
    cell = torch.nn.LSTMCell(weight_ih.shape[1], weight_hh.shape[1])
    with torch.no_grad():
        for name, value in zip(
            ("weight_ih", "weight_hh", "bias_ih", "bias_hh"),
            (weight_ih, weight_hh, bias_ih, bias_hh),
            strict=True,
        ):
            getattr(cell, name).copy_(value)
        h_new, c_new = cell(x, (h, c))
    return h_new, c_new


def _lstm_case(description, batch, n_in, hidden, seed, scale=1.0, zero_state=False):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, n_in, generator=g)
    if zero_state:
        h, c = torch.zeros(batch, hidden), torch.zeros(batch, hidden)
    else:
        h = torch.rand(batch, hidden, generator=g) * 2 - 1
        c = torch.randn(batch, hidden, generator=g)
    weights = (
        torch.randn(4 * hidden, n_in, generator=g) * scale / math.sqrt(n_in),
        torch.randn(4 * hidden, hidden, generator=g) * scale / math.sqrt(hidden),
        torch.randn(4 * hidden, generator=g) * scale,
        torch.randn(4 * hidden, generator=g) * scale,
    )
    args = (x, h, c, *weights)
    return Case(description, args, _lstm_reference(*args))


def _compare_lstm(got, expected) -> str | None:
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return f"return a pair (h_new, c_new), got a {type(got).__name__}"
    for name, g, e in zip(("h_new", "c_new"), got, expected, strict=True):
        problem = _finite_problem(g) or close(g, e, atol=1e-5, rtol=1e-4)
        if problem:
            return f"{name}: {problem}"
    return None


def check_lstm_cell(func: Callable) -> bool:
    """2.3: lstm_cell(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh) -> (h_new, c_new)."""
    cases = [
        _lstm_case(
            "a batch of 1, 5 inputs, hidden 3, zero state", 1, 5, 3, seed=231, zero_state=True
        ),
        _lstm_case("a batch of 4, 288 inputs, hidden 16, a carried state", 4, 288, 16, seed=232),
        _lstm_case(
            "a batch of 2, 3 inputs, hidden 2, large weights (saturated gates)",
            2,
            3,
            2,
            seed=233,
            scale=5.0,
        ),
    ]
    return check_cases("2.3", func, cases, compare=_compare_lstm)
