"""Unit 3 exercises: discounted returns, the backward GAE loop, and the original's truncation bug.

    3.1 discounted_returns(rewards, gamma)                       warm-up: a finished episode
    3.2 gae_one_env(rewards, values, next_values, terminated, truncated, gamma, lam)
                                                                 the backward GAE loop
    3.3 fixed_advantages_and_returns(...)                        find the bug in
                                                                 buggy_advantages_and_returns

Inputs follow a3c_course.a3c.returns' contract for one environment: 1-D tensors of length T, flags as
bool tensors, next_values[t] = V(s_{t+1}) (the final observation's value when step t ended an
episode; the last entry is the bootstrap value V(s_T)).

The expected answers come from explicit sums written here, walking forward from each step (not from
a3c_course.a3c.returns, and not with a backward loop like the one the learner writes).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from a3c_course.lessons.exercises.core import (
    Case,
    _as_array,
    check_cases,
    close,
    naming_error,
    show_pair,
)
from a3c_course.lessons.exercises.unit3_mistakes import returns_cause

# Revealed one at a time by show_hints(unit3.HINTS["3.1"]): the idea, the code's shape, a sketch.
HINTS = {
    "3.1": [
        "Start from the end: the last step's return is just its reward, G_{T-1} = r_{T-1}, because "
        "nothing follows it. Each earlier return is built from the one after it: "
        "G_t = r_t + gamma G_{t+1}.",
        "Walk backwards, <code>for t in reversed(range(len(rewards)))</code>, keeping the return "
        "of the step after in one variable (it starts at 0: G_T = 0) and writing each G_t into a "
        "tensor of length T.",
        "A sketch: <code>returns = torch.zeros(len(rewards))</code> and "
        "<code>following = 0.0</code>; in the backward loop, compute the new "
        "<code>following</code> from <code>rewards[t]</code> and its old value, then store it in "
        "<code>returns[t]</code>.",
    ],
    "3.2": [
        "Use the boxed recursion A_t = delta_t + gamma lam A_{t+1} from the rollout's last step "
        "backwards, with A_T = 0. The flags change two things: a game over (terminated) drops the "
        "bootstrap in delta_t; an episode end of either kind stops the carry of A_{t+1}.",
        "One loop, <code>for t in reversed(range(len(rewards)))</code>, with a running value for "
        "A_{t+1} that starts at 0. At step t: if the episode ended there (either flag), forget the "
        "running value first (it belongs to the next episode); then compute delta_t and the new "
        "running value.",
        "A sketch of one step: <code>if terminated[t] or truncated[t]: following = 0.0</code>; "
        "<code>bootstrap = 0.0 if terminated[t] else next_values[t]</code>; "
        "<code>delta = rewards[t] + gamma * bootstrap - values[t]</code>; then "
        "<code>following = delta + (...) * following</code>, stored in <code>advantages[t]</code>.",
    ],
    "3.3": [
        "Compare the buggy returns with the package's on the example: which step is off first, "
        "and by how much?",
        "<code>done</code> merges two different events. After which of the two should the return "
        "start again from the final observation's value instead of 0?",
        "Two places need the distinction: the restart of R (0 after terminated, "
        "<code>next_values[t]</code> after truncated) and <code>next_value</code> in the TD error. "
        "The GAE carry resets on either.",
    ],
}


# ------------------------------------------------------------------ independent references


def _explicit_discounted_returns(rewards: Sequence[float], gamma: float) -> np.ndarray:
    """G_t = sum_{k=0}^{T-1-t} gamma^k r_{t+k}, each as its own sum."""
    rewards = [float(r) for r in rewards]
    n = len(rewards)
    return np.array([sum(gamma**k * rewards[t + k] for k in range(n - t)) for t in range(n)])


def _explicit_gae_and_returns(
    rewards,
    values,
    next_values,
    terminated,
    truncated,
    gamma: float,
    lam: float,
    *,
    bootstrap_at_game_over=False,
    bootstrap_at_time_limit=True,
    stop_at_game_over=True,
    stop_at_time_limit=True,
    reset_after_storing=False,
    next_from_values=False,
    lam_left_out=False,
) -> tuple[np.ndarray, np.ndarray]:
    """A_t = sum_k (gamma lam)^k delta_{t+k} and R_t = sum_k gamma^k r_{t+k} + gamma^n V(end),
    both walking forward from t and stopping after the step that ends the episode or the rollout.

    The keywords give the right answer by default; changed, they give a learner's likely mistake
    (bootstrapping after a game over, not after a time limit, or carrying on across an end; or,
    written backwards, resetting the running sum only after storing the end step's value, which
    cuts each sum one step early: before an end instead of after it; or values[t + 1] taken for the
    next state's value, which after a reset is the next episode's first state; or lam left out of
    the carry, gamma * A_(t+1) instead of gamma * lam * A_(t+1))."""
    r, v, nv = (np.asarray(_as_array(x), dtype=float) for x in (rewards, values, next_values))
    term, trunc = (np.asarray(_as_array(x), dtype=bool) for x in (terminated, truncated))
    n = len(r)
    advantages, returns = np.zeros(n), np.zeros(n)
    for t in range(n):
        for u in range(t, n):
            time_limit_cut = trunc[u] and not bootstrap_at_time_limit
            follows = bootstrap_at_game_over if term[u] else not time_limit_cut
            after = v[u + 1] if next_from_values and u + 1 < n else nv[u]
            bootstrap = after if follows else 0.0  # nothing follows a game over
            delta = r[u] + gamma * bootstrap - v[u]
            carry = gamma if lam_left_out else gamma * lam
            advantages[t] += carry ** (u - t) * delta
            returns[t] += gamma ** (u - t) * r[u]
            ends = (term[u] and stop_at_game_over) or (trunc[u] and stop_at_time_limit)
            if reset_after_storing:  # the backward loop's reset comes one step late
                ends = u + 1 < n and (term[u + 1] or trunc[u + 1])
            if ends or u == n - 1:  # the episode or the rollout ends after step u
                returns[t] += gamma ** (u - t + 1) * bootstrap
                break
    return advantages, returns


# ------------------------------------------------------------------ 3.1 discounted returns


def _returns_case(description: str, rewards: Sequence[float], gamma: float) -> Case:
    return Case(
        description,
        (torch.tensor(rewards, dtype=torch.float32), gamma),
        _explicit_discounted_returns(rewards, gamma),
    )


def _discounted_returns_cases() -> list[Case]:
    rng = np.random.default_rng(31)
    pong_point = [0.0] * 20 + [1.0]
    noisy = np.round(rng.normal(size=40), 2).tolist()
    return [
        _returns_case("rewards=[1, 1, 1], gamma=0.5", [1.0, 1.0, 1.0], 0.5),
        _returns_case("rewards=[1, 2, 3, 4], gamma=1 (a plain sum)", [1.0, 2.0, 3.0, 4.0], 1.0),
        _returns_case(
            "rewards=[3, -1, 2], gamma=0 (only the reward itself)", [3.0, -1.0, 2.0], 0.0
        ),
        _returns_case("a one-step episode rewards=[5], gamma=0.9", [5.0], 0.9),
        _returns_case("a Pong point: 20 zeros then +1, gamma=0.99", pong_point, 0.99),
        _returns_case("40 random rewards, gamma=0.95", noisy, 0.95),
    ]


def check_discounted_returns(func: Callable) -> bool:
    """3.1: func(rewards (T,), gamma) -> G (T,), G_t = r_t + gamma r_{t+1} + ... to the end."""
    return check_cases(
        "3.1", func, _discounted_returns_cases(), compare=_tensor_close, diagnose=returns_cause
    )


def _tensor_close(got, expected) -> str | None:
    if not isinstance(got, torch.Tensor):  # the later units index and add the returns as tensors
        return f"return a torch tensor of shape (T,), got a {type(got).__name__}"
    return close(got, expected)


# ------------------------------------------------------------------ 3.2 the backward GAE loop


def _flags(text: str) -> torch.Tensor:
    return torch.tensor([c == "1" for c in text])


def _rollout_case(
    description: str,
    rewards,
    values,
    next_values,
    terminated: str,
    truncated: str,
    gamma: float,
    lam: float,
    want: str,
) -> Case:
    """A case for 3.2 (want="advantages") or 3.3 (want="both"); flags are strings like "0010"."""
    args = (
        torch.tensor(rewards, dtype=torch.float32),
        torch.tensor(values, dtype=torch.float32),
        torch.tensor(next_values, dtype=torch.float32),
        _flags(terminated),
        _flags(truncated),
        gamma,
        lam,
    )
    advantages, returns = _explicit_gae_and_returns(
        rewards, values, next_values, _flags(terminated), _flags(truncated), gamma, lam
    )  # from the exact numbers, not their float32 copies
    full = (
        f"{description} (terminated={terminated}, truncated={truncated}, gamma={gamma}, lam={lam})"
    )
    return Case(full, args, advantages if want == "advantages" else (advantages, returns))


def _random_rollout(rng: np.random.Generator, n: int, terminated_at, truncated_at) -> tuple:
    values = np.round(rng.normal(size=n), 2)
    next_values = np.append(values[1:], round(float(rng.normal()), 2))
    for t in (*terminated_at, *truncated_at):
        next_values[t] = round(float(rng.normal()), 2)  # the final observation's value
    terminated = "".join("1" if t in terminated_at else "0" for t in range(n))
    truncated = "".join("1" if t in truncated_at else "0" for t in range(n))
    rewards = np.round(rng.normal(size=n), 2)
    return rewards.tolist(), values.tolist(), next_values.tolist(), terminated, truncated


def _rollout_cases(want: str) -> list[Case]:
    rng = np.random.default_rng(32)
    r, v = [1.0, 0.0, 1.0, 0.0, 1.0], [0.5, 0.4, 0.6, 0.3, 0.2]
    inside = [0.4, 0.6, 0.3, 0.2, 0.7]  # next_values[t] == values[t + 1]; V(s_T) = 0.7
    ended = [0.4, 0.6, 2.0, 0.2, 0.7]  # the episode ends after step 2 on an observation worth 2
    table = [  # (description, next_values, terminated, truncated, lam), all with gamma = 0.9
        ("one episode running past the rollout's end", inside, "00000", "00000", 0.8),
        ("a game over after step 2 (no bootstrap there)", ended, "00100", "00000", 0.8),
        (
            "a time limit after step 2: truncated, so bootstrap from V(final observation) = 2",
            ended,
            "00000",
            "00100",
            0.8,
        ),
        ("a time limit on the rollout's last step", inside, "00000", "00001", 0.8),
        ("lam = 0 (the TD errors)", ended, "00000", "00100", 0.0),
    ]
    cases = [
        _rollout_case(description, r, v, nv, term, trunc, 0.9, lam, want)
        for description, nv, term, trunc, lam in table
    ]
    random_rollout = _random_rollout(rng, 20, terminated_at=(4,), truncated_at=(12,))
    cases.append(
        _rollout_case(
            "20 random steps, a game over after step 4 and a time limit after step 12",
            *random_rollout,
            0.99,
            0.95,
            want,
        )
    )
    return cases


BOOL_ARITHMETIC = (
    "terminated and truncated are bool tensors: use `~terminated[t]` (or `not terminated[t]`, "
    "or `.float()`) instead of `1 - terminated[t]`"
)


def _naming_bool_arithmetic(func: Callable) -> Callable:  # the textbook's (1 - done)
    return naming_error(func, ("the `-` operator", "bool tensor"), BOOL_ARITHMETIC)


def check_gae_one_env(func: Callable) -> bool:
    """3.2: func(rewards, values, next_values, terminated, truncated, gamma, lam) -> A (T,)."""
    return check_cases(
        "3.2",
        _naming_bool_arithmetic(func),
        _rollout_cases("advantages"),
        close,
        lambda case, got: likely_cause(case, got, "advantage"),
    )


# ------------------------------------------------------------------ the likely causes (3.2, 3.3)

# (mistake, the reference's keywords that make it, which flag marks the step where it happens:
# None for a mistake that shows at every step)
MISTAKES = [
    ("carry", dict(stop_at_game_over=False, stop_at_time_limit=False), "either"),
    ("carry", dict(stop_at_time_limit=False), "truncated"),
    ("carry", dict(stop_at_game_over=False), "terminated"),
    ("bootstrap at a game over", dict(bootstrap_at_game_over=True), "terminated"),
    ("no bootstrap at a time limit", dict(bootstrap_at_time_limit=False), "truncated"),
    ("reset after storing", dict(reset_after_storing=True), "either"),
    ("values[t+1]", dict(next_from_values=True), "truncated"),
    ("lambda left out", dict(lam_left_out=True), None),  # wrong at every step, with or without ends
]
# {t}: the step of the largest gap (the index the verdict shows); {k}: the end it crosses.
CAUSES = {
    ("advantage", "carry"): "your advantage at step {t} {gap}{across}: reset the running sum "
    "when an episode terminates or is truncated",
    ("advantage", "bootstrap at a game over"): "your TD error at step {k} bootstraps from "
    "next_values[{k}] although the episode terminated there (game over): nothing follows a game "
    "over, so leave out gamma * next_values[{k}]",
    ("advantage", "no bootstrap at a time limit"): "your TD error at step {k} drops the bootstrap "
    "although a time limit truncated the episode there: the game would go on, so keep "
    "gamma * next_values[{k}]",
    ("advantage", "reset after storing"): "you reset the running sum after storing the advantage "
    "of step {k}, where an episode ends: that advantage still carries the next episode's, and the "
    "steps before it stop one step short of their episode's end (the largest gap is at step {t}); "
    "reset when you reach an end, before computing A_t there, not after storing it",
    ("advantage", "lambda left out"): "you carry gamma * A_(t+1) back without lam (as if "
    "lam = 1): each step back multiplies the running sum by gamma * lam, "
    "A_t = delta_t + gamma * lam * A_(t+1)",
    ("advantage", "values[t+1]"): "your TD error at step {k} bootstraps from values[{next}], "
    "the value of the next episode's first observation (the game was reset after the time limit "
    "at step {k}); bootstrap from next_values[{k}], the value of the final observation",
    ("return", "carry"): "your return at step {t} {gap}{across}: restart the running return "
    "there (from 0 after a game over, from next_values[{k}] after a time limit)",
    ("return", "bootstrap at a game over"): "your return at step {t} {gap} restarts from "
    "next_values[{k}] at the game over at step {k}: nothing follows a game over, restart from 0",
    ("return", "no bootstrap at a time limit"): "your return at step {t} {gap} restarts from 0 "
    "at the time limit at step {k}: the game would go on, so restart from next_values[{k}] "
    "(bootstrap)",
}


def likely_cause(case: Case, got, quantity: str) -> str | None:
    """Name the mistake when the learner's advantages (or returns) match a known one, else None."""
    got = np.asarray(_as_array(got), dtype=float)
    right = _explicit_gae_and_returns(*case.args)[quantity == "return"]
    if got.shape != right.shape:
        return None
    wrong = np.flatnonzero(~np.isclose(got, right, atol=1e-5, rtol=1e-4))
    if len(wrong) == 0:
        return None
    terminated, truncated = (np.asarray(_as_array(x), dtype=bool) for x in case.args[3:5])
    marked = {"terminated": terminated, "truncated": truncated, "either": terminated | truncated}
    for mistake, keywords, flag in MISTAKES:
        if (quantity, mistake) not in CAUSES:
            continue
        made = _explicit_gae_and_returns(*case.args, **keywords)[quantity == "return"]
        if close(got, made) is not None:
            continue
        if flag is None:  # a mistake tied to no episode end
            return CAUSES[quantity, mistake]
        t = int(np.argmax(np.abs(got - right)))  # the largest gap, as the verdict shows it
        ends = np.flatnonzero(marked[flag][t:])
        if len(ends):
            k = t + int(ends[0])
            same = " (that same step)" * (t == k)
            across = f" carries across the episode end at step {k}{same} into the next episode"
            return CAUSES[quantity, mistake].format(
                t=t, k=k, next=k + 1, gap=f"(the largest gap in your {quantity}s)", across=across
            )
    return None


# ------------------------------------------------------------------ 3.3 find the bug


def buggy_advantages_and_returns(
    rewards, values, next_values, terminated, truncated, gamma: float, lam: float
):
    """GAE advantages and n-step returns for one environment, written like the original course.

    It merges the two flags into one `done`, as the original did (it had only `done`). Run it on
    a rollout with a time limit and compare with a3c_course.a3c.returns: something is wrong.
    """
    n = len(rewards)
    advantages, returns = torch.zeros(n), torch.zeros(n)
    R = next_values[-1]  # start from the bootstrap value V(s_T)
    gae = 0.0
    for t in reversed(range(n)):
        done = bool(terminated[t]) or bool(truncated[t])
        if done:  # the episode ended after step t: nothing follows...
            R, gae = 0.0, 0.0
        next_value = 0.0 if done else next_values[t]
        R = rewards[t] + gamma * R
        delta = rewards[t] + gamma * next_value - values[t]
        gae = delta + gamma * lam * gae
        advantages[t], returns[t] = gae, R
    return advantages, returns


# The example the notebook runs the buggy function on: a time limit after step 2.
TIME_LIMIT_EXAMPLE = dict(
    rewards=torch.tensor([1.0, 0.0, 1.0, 0.0, 1.0]),
    values=torch.tensor([0.5, 0.4, 0.6, 0.3, 0.2]),
    next_values=torch.tensor([0.4, 0.6, 2.0, 0.2, 0.7]),  # the final observation is worth 2.0
    terminated=torch.tensor([False, False, False, False, False]),
    truncated=torch.tensor([False, False, True, False, False]),
    gamma=0.9,
    lam=0.8,
)


def _compare_pair(got, expected) -> str | None:
    """Compare (advantages, returns) and say which of the two differs."""
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return f"expected a pair (advantages, returns), got {type(got).__name__}"
    for name, g, e in zip(("advantages", "returns"), got, expected, strict=True):
        problem = close(g, e)
        if problem is not None:
            return f"the {name} differ: {problem}"
    return None


def _pair_causes(case: Case, got) -> str | None:
    """The likely cause of each of the pair's two halves that is wrong, joined."""
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return None
    halves = zip(got, ("advantage", "return"), strict=True)
    found = [likely_cause(case, half, quantity) for half, quantity in halves]
    return "; and ".join(cause for cause in found if cause) or None


def check_truncation_fix(func: Callable) -> bool:
    """3.3: func(...) -> (advantages (T,), returns (T,)), correct on truncations too."""
    return check_cases(
        "3.3",
        _naming_bool_arithmetic(func),
        _rollout_cases("both"),
        _compare_pair,
        _pair_causes,
        show_pair(("advantages", "returns")),
    )
