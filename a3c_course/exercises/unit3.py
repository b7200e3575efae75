"""Unit 3 exercises: discounted returns, the backward GAE loop, and the original's truncation bug.

    3.1 discounted_returns(rewards, gamma)                       warm-up: a finished episode
    3.2 gae_one_env(rewards, values, next_values, terminated, truncated, gamma, lam)
                                                                 the backward GAE loop
    3.3 fixed_advantages_and_returns(...)                        find the bug in
                                                                 buggy_advantages_and_returns

Inputs follow a3c_course.returns' contract for one environment: 1-D tensors of length T, flags as
bool tensors, next_values[t] = V(s_{t+1}) (the final observation's value when step t ended an
episode; the last entry is the bootstrap value V(s_T)).

The expected answers come from explicit sums written here, walking forward from each step (not from
a3c_course.returns, and not with a backward loop like the one the learner writes).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from a3c_course.exercises.core import Case, _as_array, check_cases, close

# ------------------------------------------------------------------ independent references


def _explicit_discounted_returns(rewards: Sequence[float], gamma: float) -> np.ndarray:
    """G_t = sum_{k=0}^{T-1-t} gamma^k r_{t+k}, each as its own sum."""
    rewards = [float(r) for r in rewards]
    n = len(rewards)
    return np.array([sum(gamma**k * rewards[t + k] for k in range(n - t)) for t in range(n)])


def _explicit_gae_and_returns(
    rewards, values, next_values, terminated, truncated, gamma: float, lam: float
) -> tuple[np.ndarray, np.ndarray]:
    """A_t = sum_k (gamma lam)^k delta_{t+k} and R_t = sum_k gamma^k r_{t+k} + gamma^n V(end),
    both walking forward from t and stopping after the step that ends the episode or the rollout."""
    r, v, nv = (np.asarray(_as_array(x), dtype=float) for x in (rewards, values, next_values))
    term, trunc = (np.asarray(_as_array(x), dtype=bool) for x in (terminated, truncated))
    n = len(r)
    advantages, returns = np.zeros(n), np.zeros(n)
    for t in range(n):
        for u in range(t, n):
            bootstrap = 0.0 if term[u] else nv[u]  # nothing follows a game over
            delta = r[u] + gamma * bootstrap - v[u]
            advantages[t] += (gamma * lam) ** (u - t) * delta
            returns[t] += gamma ** (u - t) * r[u]
            if term[u] or trunc[u] or u == n - 1:  # the episode or the rollout ends after step u
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
    """3.1: func(rewards (T,), gamma) -> G (T,), G_t = r_t + gamma r_{t+1} + ... to the episode's end."""
    return check_cases("3.1", func, _discounted_returns_cases())


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


def check_gae_one_env(func: Callable) -> bool:
    """3.2: func(rewards, values, next_values, terminated, truncated, gamma, lam) -> A (T,)."""
    return check_cases("3.2", func, _rollout_cases("advantages"))


# ------------------------------------------------------------------ 3.3 find the bug


def buggy_advantages_and_returns(
    rewards, values, next_values, terminated, truncated, gamma: float, lam: float
):
    """GAE advantages and n-step returns for one environment, written like the original course.

    It merges the two flags into one `done`, as the original did (it had only `done`). Run it on
    a rollout with a time limit and compare with a3c_course.returns: something is wrong.
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


def _compare_pair(got, expected) -> str | None:
    """Compare (advantages, returns) and say which of the two differs."""
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return f"expected a pair (advantages, returns), got {type(got).__name__}"
    for name, g, e in zip(("advantages", "returns"), got, expected, strict=True):
        problem = close(g, e)
        if problem is not None:
            return f"the {name} differ: {problem}"
    return None


def check_truncation_fix(func: Callable) -> bool:
    """3.3: func(...) -> (advantages (T,), returns (T,)), correct on truncations too."""
    return check_cases("3.3", func, _rollout_cases("both"), compare=_compare_pair)
