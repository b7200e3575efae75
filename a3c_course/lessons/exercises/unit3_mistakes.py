"""Exercise 3.1's known mistakes: what each gives on a case's rewards, and the sentence naming it.

The check compares a learner's wrong returns with each mistaken version of G_t computed here (in
float64, from the case's rewards) and names the one it matches; 3.2's and 3.3's causes live in
unit3.py beside their checks.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from a3c_course.lessons.exercises.core import Case


def _backwards(rewards: np.ndarray, gamma: float, discount_own: bool = False) -> np.ndarray:
    out, following = np.zeros(len(rewards)), 0.0
    for t in reversed(range(len(rewards))):
        following = (
            gamma * (rewards[t] + following) if discount_own else rewards[t] + gamma * following
        )
        out[t] = following
    return out


def _forwards(rewards: np.ndarray, gamma: float) -> np.ndarray:
    out, before = np.zeros(len(rewards)), 0.0
    for t in range(len(rewards)):
        before = rewards[t] + gamma * before
        out[t] = before
    return out


def _without_own_reward(rewards: np.ndarray, gamma: float) -> np.ndarray:
    right = _backwards(rewards, gamma)
    return gamma * np.append(right[1:], 0.0)  # G_t stored before r_t was added


def _last_step_missed(rewards: np.ndarray, gamma: float) -> np.ndarray:
    out = np.zeros(len(rewards))  # reversed(range(T - 1)): step T-1 never visited
    out[:-1] = _backwards(rewards[:-1], gamma) if len(rewards) > 1 else out[:-1]
    return out


def _first_step_missed(rewards: np.ndarray, gamma: float) -> np.ndarray:
    out = _backwards(rewards, gamma)  # range(T - 1, 0, -1): step 0 never stored
    out[0] = 0.0
    return out


MISTAKES = {
    "forwards": (
        _forwards,
        # the first case, rewards [1, 1, 1], gives the same numbers for both slips
        "each G_t adds up the rewards before t (a forward walk, or the right returns in reverse "
        "order); the return looks ahead: loop t from the last step down to 0 "
        "(reversed(range(len(rewards)))) and store G_t at index t",
    ),
    "rewards only": (
        lambda rewards, gamma: rewards.copy(),
        "each G_t is just r_t: nothing is carried back from later steps; keep a running sum "
        "from the last step backwards, G_t = r_t + gamma * G_(t+1)",
    ),
    # the first case, rewards [1, 1, 1], gives the same numbers for both slips
    "last step missed": (
        _last_step_missed,
        "each G_t holds G_(t+1) and the last is 0: you store G_t before adding r_t, or your loop "
        "stops before step T-1 (range(T - 1)?); add r_t first, then store, for every step of "
        "reversed(range(len(rewards)))",
    ),
    "first step missed": (
        _first_step_missed,
        "the first step's return is 0: your loop stops before step 0 (range(T - 1, 0, -1)?); "
        "reversed(range(len(rewards))) visits every step",
    ),
    "without own reward": (
        _without_own_reward,
        "each G_t leaves out r_t itself (stored before adding it?); add r_t first, "
        "G_t = r_t + gamma * G_(t+1), then store it",
    ),
    "discounts own reward": (
        lambda rewards, gamma: _backwards(rewards, gamma, discount_own=True),
        "you discount r_t too; the reward of step t itself counts in full: "
        "G_t = r_t + gamma * G_(t+1)",
    ),
    "no discount": (
        lambda rewards, gamma: _backwards(rewards, 1.0),
        "you add the rewards up without gamma; multiply what follows by gamma at each step back",
    ),
}


def returns_cause(case: Case, got: Any) -> str | None:
    """The known mistake whose returns the learner's match, in words, or None."""
    if isinstance(got, torch.Tensor) and not got.is_floating_point():
        return (
            "your returns are integers (a tensor made with an integer dtype cuts off every "
            "fraction); make it a float tensor, e.g. torch.zeros(len(rewards))"
        )
    rewards, gamma = np.asarray(case.args[0], dtype=np.float64), float(case.args[1])
    got_a = np.asarray(got.detach() if isinstance(got, torch.Tensor) else got, dtype=np.float64)
    for mistaken, sentence in MISTAKES.values():
        wrong = mistaken(rewards, gamma)
        if got_a.shape == wrong.shape and np.allclose(got_a, wrong, atol=1e-4, rtol=1e-4):
            return sentence
    return None
