"""Unit 2 exercises (notebook 02): the policy's entropy, a softmax bug, an LSTM cell by hand.

    2.1  entropy_from_logits(logits)             warm-up   H(pi(.|s)) from logits, numerically stable
    2.2  action_probabilities(logits)            medium    find and fix the bug: a softmax over dim=0
    2.3  lstm_cell(x, h, c, w_ih, w_hh, b_ih, b_hh)  hard  one step of torch.nn.LSTMCell by hand

Each check runs the learner's function on cases whose answers come from independent references
(NumPy in float64, closed forms, torch.nn.LSTMCell), prints one verdict line and returns whether the
exercise passed. When 2.2 or 2.3 fails, `unit2_mistakes` names the likely cause if the learner's
output is exactly that of a known mistake: a max or sum over an axis of states (2.2); a cell with
one or more mistakes, each named (gates in another order, sigmoid where tanh belongs, a missing
term; 2.3).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cache

import numpy as np
import torch

from a3c_course.lessons.exercises.core import Case, check_cases, close, naming_error, show_pair
from a3c_course.lessons.exercises.unit2_mistakes import (
    NO_KEEPDIM,
    lstm_causes,
    probabilities_cause,
)

HINTS = {
    "2.1": [
        "Work with log-probabilities, never with probabilities made by <code>exp</code> and a sum: "
        "exp(1000) is inf in float32 (inf / inf is NaN), and a probability that rounds to 0 has "
        "log(0) = -inf.",
        "<code>torch.log_softmax(logits, dim=-1)</code> gives log pi(a|s) over the last axis (the "
        "actions), computed stably; its <code>exp()</code> gives the probabilities. Then "
        "H = -sum_a pi(a|s) log pi(a|s), summed over that same axis.",
        "A sketch: <code>log_p = log_softmax(logits over the actions)</code>, then "
        "<code>H = -(sum over the actions of exp(log_p) * log_p)</code>. Torch operations only, so "
        "the result keeps its graph.",
    ],
    "2.2": [
        "Run the buggy function on a batch of two states and look at its output: do the probabilities "
        "of each state (each row) add up to 1? What adds up to 1 instead?",
        "<code>dim=0</code> is the batch axis of a (B, n_actions) tensor. The actions are always the "
        "<b>last</b> axis, whatever the batch shape: use <code>dim=-1</code>, in both places.",
        "A sketch: subtract each row's own max, kept as a column so that it broadcasts "
        "(<code>logits.max(dim=-1, keepdim=True).values</code>), exponentiate, and divide by the "
        "sum over the same axis, also with <code>keepdim=True</code>.",
    ],
    "2.3": [
        "Each of the four gates adds the same four terms (the equations above): a matrix times x, a "
        "matrix times h, and two biases. PyTorch stacks the four gates' matrices in one: compute all "
        "four gates with one product each.",
        "<code>gates = x @ weight_ih.T + bias_ih + h @ weight_hh.T + bias_hh</code> has shape "
        "(B, 4 * hidden); <code>.chunk(4, dim=1)</code> splits it in PyTorch's order: input, forget, "
        "cell (g), output.",
        "A sketch: <code>i, f, g, o = four chunks</code>; sigmoid for i, f and o, tanh for g; "
        "<code>c_new = (keep part of c) + (write part of g)</code>; "
        "<code>h_new = o * tanh(c_new)</code>.",
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


OVERFLOW_OR_LOG0 = (
    "either exp() of a large logit overflowed (exp(89) is already inf in float32), or a "
    "probability rounded to 0 and log(0) = -inf (0 * -inf is NaN); work with log-probabilities "
    "(torch.log_softmax), which avoid both"
)


def _finite_problem(got, why: str = OVERFLOW_OR_LOG0) -> str | None:
    if not isinstance(got, (torch.Tensor, np.ndarray)):
        return f"return a torch tensor, got a {type(got).__name__}"
    if not np.isfinite(_as_array(got).astype(float)).all():
        return f"got NaN or inf: {why}"
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
        diagnose=entropy_axis_cause,
    )


def entropy_axis_cause(case: Case, got) -> str | None:
    """An entropy summed over the wrong axes, named by the shape it leaves."""
    logits = case.args[0]
    shape = tuple(getattr(got, "shape", ()))
    if logits.dim() > 1 and shape == tuple(logits.shape[1:]):
        return (
            "you add up over dim=0, an axis of states, not over the actions; the actions are "
            "the last axis: .sum(dim=-1) (and log_softmax(..., dim=-1))"
        )
    if logits.dim() > 1 and shape == ():
        return (
            "you add up over every axis (.sum() with no dim); one entropy per state: .sum(dim=-1)"
        )
    return None


# ---------------------------------------------------------------- 2.2 find the bug: softmax dim


def _compare_probabilities(got, expected) -> str | None:
    problem = _finite_problem(
        got,
        "exp() of a large logit overflowed (exp(89) is already inf in float32); subtract each "
        "state's largest logit before exp()",
    )
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
    # PyTorch's words when a reduced axis (no keepdim) meets the logits it came from
    func = naming_error(func, ["must match the size of tensor"], NO_KEEPDIM)
    return check_cases(
        "2.2", func, cases, compare=_compare_probabilities, diagnose=probabilities_cause
    )


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


NEW = ("h_new", "c_new")


def _compare_lstm(got, expected) -> str | None:
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return f"return a pair (h_new, c_new), got a {type(got).__name__}"
    for name, g, e in zip(NEW, got, expected, strict=True):
        problem = _finite_problem(g) or close(g, e, atol=1e-5, rtol=1e-4)
        if problem:
            return f"{name}: {problem}"
    return None


def _show_lstm(expected, got) -> list[str]:
    """h_new and c_new each labelled, expected above got (not the pair stacked into one unlabelled
    (2, batch, hidden) array), under a line that gives their shape."""
    batch, hidden = expected[0].shape
    header = f"  h_new and c_new each have shape (batch, hidden) = ({batch}, {hidden}):"
    return [header, *show_pair(NEW)(expected, got)]


def _lstm_diagnosis(func: Callable) -> Callable[[Case, object], str | None]:
    """The causes read on one carried state, where every known mistake shows (a zero state hides
    a missing h @ weight_hh.T), whichever case failed first: run once, when a case fails."""
    args = _lstm_case("diagnosis", 3, 4, 5, seed=234).args

    @cache
    def causes() -> str | None:
        try:
            got = func(*(a.clone() for a in args))
        except Exception:  # a crash here: the check reports the case's own
            return None
        return lstm_causes(args, got)

    return lambda case, got: causes()


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
    return check_cases("2.3", func, cases, _compare_lstm, _lstm_diagnosis(func), _show_lstm)
