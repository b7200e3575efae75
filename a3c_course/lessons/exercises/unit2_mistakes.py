"""The mistakes the checks of 2.2 and 2.3 can name, and how each is recognised.

2.2: the softmax remade with its max and its sum (or a log-sum-exp) over other axes than the
actions; the cause is named when the learner's probabilities match one of them.

2.3: nn.LSTMCell's step remade with one or several known mistakes (gates read in another order,
an activation swapped, a term left out); the smallest set of mistakes whose cell gives exactly
the learner's output is named, every mistake in it, so that a learner with two sees both. On the
check's diagnosis case every set of up to two mistakes gives a different cell, except gate orders
that swap i and g when both take the same activation (then i * g cannot tell them apart).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import torch

from a3c_course.lessons.exercises.core import Case

# ---------------------------------------------------------------- 2.2 the softmax's axes

_ACTIONS = (
    "the actions are the last axis: take the max and the sum (or the log-sum-exp) over dim=-1, "
    "with keepdim=True"
)


def softmax_over(logits: Any, shift_dim: int | None, sum_dim: int | None) -> np.ndarray:
    """exp(logits - max over shift_dim) / its sum over sum_dim, in float64 (None: every axis)."""
    z = np.asarray(logits, dtype=np.float64)
    with np.errstate(invalid="ignore"):  # 0 / 0 where a far-off max left only zeros: NaN, as yours
        weights = np.exp(z - z.max(axis=shift_dim, keepdims=True))
        return weights / weights.sum(axis=sum_dim, keepdims=True)


def _axis_cause(shift_dim: int | None, sum_dim: int | None) -> list[str]:
    """The wrong half (or halves) of a softmax made over these axes (-1: that half is right, or
    not known), in words."""
    if shift_dim is None and sum_dim is None:  # (a max over every axis but the sum's changes
        # nothing, so a softmax over an axis of states is named by its sum below)
        return [
            "your softmax runs over the whole batch (max and sum with no dim), so only all the "
            f"states together sum to 1, not each state's actions; {_ACTIONS}"
        ]
    causes = []
    if shift_dim is None:
        causes.append(
            "you subtract the largest logit of the whole batch (.max() with no dim), so a state "
            "whose logits all lie far below it gets exp() = 0 everywhere and 0 / 0 = NaN; "
            "subtract each state's own max, logits.max(dim=-1, keepdim=True).values"
        )
    elif shift_dim != -1:
        causes.append(
            f"you subtract the max over dim={shift_dim}, an axis of states, so each action's "
            "logits lose a different amount (that action's largest over the states), which "
            "changes the probabilities; subtract each state's own max, "
            "logits.max(dim=-1, keepdim=True).values"
        )
    if sum_dim is None:
        causes.append(
            "weights.sum() with no dim adds up the whole batch, so only all the states together "
            "sum to 1; sum each state's own, weights.sum(dim=-1, keepdim=True)"
        )
    elif sum_dim != -1:
        causes.append(
            f"you normalise over dim={sum_dim}, an axis of states (a sum, softmax or log-sum-exp "
            f"over dim={sum_dim}), so each action's probabilities add up to 1 across the states "
            f"instead of each state's over its actions; {_ACTIONS}"
        )
    return causes


NO_SHIFT = (
    "you take exp() of the logits as they are: exp(1000) is inf in float32, and inf / inf is NaN; "
    "subtract each state's largest logit first, logits - logits.max(dim=-1, keepdim=True).values, "
    "which changes no probability"
)
NO_KEEPDIM = (
    "a max or a sum taken without keepdim=True has lost its last axis, so it no longer lines up "
    "with the logits (a batch of 3 states: shape (3,) against (3, 4)); keep it: "
    "logits.max(dim=-1, keepdim=True).values "
    "and weights.sum(dim=-1, keepdim=True)"
)


def probabilities_cause(case: Case, got: Any) -> str | None:
    """Name the axis mistake whose softmax the learner's output matches. Where several match (a
    batch of one state cannot tell where the max was taken), name only the half they share."""
    logits = case.args[0]
    got_a = got.detach().cpu().numpy() if isinstance(got, torch.Tensor) else np.asarray(got)
    if got_a.shape != tuple(logits.shape):
        return None
    if not np.isfinite(got_a).all() and np.isfinite(softmax_over(logits, -1, -1)).all():
        with np.errstate(over="ignore", invalid="ignore"):  # the unshifted softmax, as yours
            unshifted = np.exp(np.asarray(logits, dtype=np.float32))
            unshifted = unshifted / unshifted.sum(axis=-1, keepdims=True)
        if np.allclose(got_a, unshifted, equal_nan=True):
            return NO_SHIFT
    dims = [*range(logits.dim() - 1), -1, None]  # each axis of states, the actions, every axis
    found = [
        (shift, total)
        for shift, total in itertools.product(dims, dims)
        if (shift, total) != (-1, -1)
        and np.allclose(
            got_a, softmax_over(logits, shift, total), atol=1e-6, rtol=1e-4, equal_nan=True
        )
    ]
    shifts, sums = {shift for shift, _ in found}, {total for _, total in found}
    shift = shifts.pop() if len(shifts) == 1 else -1
    total = sums.pop() if len(sums) == 1 else -1
    return "; and ".join(_axis_cause(shift, total)) or None


# ---------------------------------------------------------------- 2.3 an LSTM cell by hand

TORCH_ORDER = "ifgo"
# The activations by name, for torch tensors (a learner's cell) and NumPy arrays (the search: a
# few microseconds a cell, where torch's per-call overhead on such small tensors is 50 times more).
ACTIVATIONS = {
    torch.Tensor: {"sigmoid": torch.sigmoid, "tanh": torch.tanh, "identity": lambda t: t},
    np.ndarray: {
        "sigmoid": lambda a: 0.5 * (1 + np.tanh(a / 2)),  # = 1 / (1 + exp(-a)), never overflows
        "tanh": np.tanh,
        "identity": lambda a: a,
    },
}


def lstm_variant(
    args, order=TORCH_ORDER, gate="sigmoid", candidate="tanh", squash="tanh", **mistake
):
    """nn.LSTMCell's step, or the same step with the mistakes the check can name, on torch
    tensors or NumPy arrays.

    order: which gate each of the four chunks is read as; gate, candidate and squash: the
    activations of i, f, o, of g, and of c in h_new; mistake: old_c (h from the old c),
    no_recurrence (h_{t-1} left out), one_bias (bias_hh left out), swapped (returns (c, h)).
    """
    x, h, c, weight_ih, weight_hh, bias_ih, bias_hh = args
    act = ACTIVATIONS[torch.Tensor if isinstance(x, torch.Tensor) else np.ndarray]
    recurrent = 0 if mistake.get("no_recurrence") else h @ weight_hh.T
    gates = x @ weight_ih.T + bias_ih + recurrent + (0 if mistake.get("one_bias") else bias_hh)
    n = gates.shape[1] // 4
    chunk = {name: gates[:, k * n : (k + 1) * n] for k, name in enumerate(order)}
    i, f, o = (act[gate](chunk[name]) for name in "ifo")
    c_new = f * c + i * act[candidate](chunk["g"])
    h_new = o * act[squash](c if mistake.get("old_c") else c_new)
    return (c_new, h_new) if mistake.get("swapped") else (h_new, c_new)


def gate_order_mistakes() -> list[tuple[dict, str]]:
    return [
        (
            {"order": "".join(order)},
            f"your gates read the four chunks as {', '.join(order)}; PyTorch's LSTMCell stacks "
            "them as input, forget, cell (g), output: i, f, g, o = gates.chunk(4, dim=1)",
        )
        for order in itertools.permutations(TORCH_ORDER)
        if "".join(order) != TORCH_ORDER
    ]


# Each is (what the cell does differently, the cause in words).
LSTM_MISTAKES = [
    (
        {"candidate": "sigmoid"},
        "g, the candidate to write, takes tanh (values in (-1, 1)), "
        "not sigmoid: c_new = f * c + i * tanh(g)",
    ),
    (
        {"candidate": "identity"},
        "g, the candidate to write, goes through tanh before it is written: "
        "c_new = f * c + i * tanh(g)",
    ),
    (
        {"gate": "tanh"},
        "the gates i, f and o take sigmoid (a fraction in (0, 1) to let through), not tanh",
    ),
    (
        {"squash": "sigmoid"},
        "h_new = o * tanh(c_new): the cell state goes through tanh, not sigmoid",
    ),
    ({"squash": "identity"}, "h_new = o * tanh(c_new): the tanh of the cell state is missing"),
    ({"old_c": True}, "h_new is computed from the new cell state c_new, not from the old c"),
    (
        {"no_recurrence": True},
        "the gates ignore the previous h: add h @ weight_hh.T (a zero "
        "state hides this; a carried state does not)",
    ),
    ({"one_bias": True}, "PyTorch adds two biases, bias_ih and bias_hh: one is missing"),
    ({"swapped": True}, "return (h_new, c_new) in that order: yours returns (c_new, h_new)"),
]
MOST_MISTAKES_AT_ONCE = 2  # some 270 cells of 3 x 5 to try at most: a fraction of a second


def _as_pair(got: Any) -> tuple[np.ndarray, np.ndarray] | None:
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return None
    try:
        return tuple(
            np.asarray(g.detach() if isinstance(g, torch.Tensor) else g, np.float64) for g in got
        )
    except (TypeError, ValueError):  # not numbers: the check says what was returned
        return None


def _misread_chunks(combo: tuple) -> int:
    order = next((mistake["order"] for mistake, _ in combo if "order" in mistake), TORCH_ORDER)
    return sum(a != b for a, b in zip(order, TORCH_ORDER, strict=True))


def lstm_causes(args: tuple, got: Any) -> str | None:
    """Every mistake of the smallest set whose cell gives the learner's output on args, joined
    with "; and "; None when no set of up to MOST_MISTAKES_AT_ONCE does."""
    catalogue = gate_order_mistakes() + LSTM_MISTAKES
    pair = _as_pair(got)
    if pair is None:
        return None
    args64 = tuple(a.detach().double().numpy() for a in args)
    for size in range(1, MOST_MISTAKES_AT_ONCE + 1):
        found = []
        for combo in itertools.combinations(catalogue, size):
            keys = [key for mistake, _ in combo for key in mistake]
            if len(set(keys)) < len(keys):  # two mistakes of one part (two gate orders, say)
                continue
            merged = {key: value for mistake, _ in combo for key, value in mistake.items()}
            made = lstm_variant(args64, **merged)
            if all(
                g.shape == m.shape and np.allclose(g, m, atol=1e-5, rtol=1e-4)
                for g, m in zip(pair, made, strict=True)
            ):
                found.append(combo)
        if found:
            # Sets that fit equally differ only in the order (on the diagnosis's case, checked
            # by the tests): with i and g squashed alike, as by one sigmoid for all four, i * g
            # cannot tell i's chunk from g's. Name the order closest to PyTorch's.
            return "; and ".join(cause for _, cause in min(found, key=_misread_chunks))
    return None
