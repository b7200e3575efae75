"""n-step returns, generalised advantage estimation (GAE) and the A3C loss.

Contract shared by every function here. A rollout has T steps over B environments; tensors are
(T, B) (a single environment is B = 1; 1-D (T,) inputs are accepted and treated as B = 1):

    rewards[t]      r_t, the reward of the step taken from s_t
    values[t]       V(s_t), the critic's value of the observation the action was chosen on
    next_values[t]  V(s_{t+1}), the value of the observation that step t returned. When step t ended
                    an episode, s_{t+1} is that episode's final observation (not the next episode's
                    first one). Inside an episode next_values[t] == values[t + 1]; the last entry is
                    the bootstrap value V(s_T) that the rollout was cut at.
    terminated[t]   step t ended the episode for good (game over): nothing follows, V(s_{t+1}) := 0
    truncated[t]    step t was cut by a time limit: the game would go on, so bootstrap from V(s_{t+1})

    delta_t = r_t + gamma * (1 - terminated_t) * V(s_{t+1}) - V(s_t)
    A_t     = delta_t + gamma * lambda * (1 - done_t) * A_{t+1},  done_t = terminated_t or truncated_t
"""

from __future__ import annotations

from typing import NamedTuple

import torch


def _as_time_by_env(x: torch.Tensor) -> torch.Tensor:
    x = torch.as_tensor(x)
    return x.unsqueeze(1) if x.dim() == 1 else x


def _validate(gamma: float, lam: float = 1.0) -> None:
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be in [0, 1], got {gamma}")
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"gae_lambda must be in [0, 1], got {lam}")


def td_errors(rewards, values, next_values, terminated, gamma: float) -> torch.Tensor:
    """delta_t = r_t + gamma * (1 - terminated_t) * V(s_{t+1}) - V(s_t), shape (T, B)."""
    _validate(gamma)
    rewards, values, next_values = map(_as_time_by_env, (rewards, values, next_values))
    alive = 1.0 - _as_time_by_env(terminated).float()
    return rewards + gamma * alive * next_values - values


def gae(
    rewards, values, next_values, terminated, truncated, gamma: float, lam: float
) -> torch.Tensor:
    """Generalised advantage estimates A_t, shape (T, B), computed backwards in one pass.

    lam = 0 gives the one-step TD errors; lam = 1 gives the n-step advantages R_t - V(s_t).
    """
    _validate(gamma, lam)
    deltas = td_errors(rewards, values, next_values, terminated, gamma)
    done = _as_time_by_env(terminated).bool() | _as_time_by_env(truncated).bool()
    carry = gamma * lam * (1.0 - done.float())
    advantages = torch.zeros_like(deltas)
    next_advantage = torch.zeros_like(deltas[0])
    for t in reversed(range(deltas.shape[0])):
        next_advantage = deltas[t] + carry[t] * next_advantage
        advantages[t] = next_advantage
    return advantages


def n_step_returns(rewards, next_values, terminated, truncated, gamma: float) -> torch.Tensor:
    """Discounted returns bootstrapped from the critic, shape (T, B).

    R_t = r_t + gamma * (1 - terminated_t) * (V(s_{t+1}) if the episode or the rollout is cut after t
                                              else R_{t+1})
    So each R_t sums the rewards up to the end of its episode or of the rollout, whichever comes
    first, plus the discounted value of the observation reached there (0 after a game over).
    """
    _validate(gamma)
    rewards, next_values = _as_time_by_env(rewards), _as_time_by_env(next_values)
    alive = 1.0 - _as_time_by_env(terminated).float()
    cut = _as_time_by_env(terminated).bool() | _as_time_by_env(truncated).bool()
    returns = torch.zeros_like(rewards)
    following = next_values[-1]
    for t in reversed(range(rewards.shape[0])):
        following = torch.where(cut[t], next_values[t], following)
        following = rewards[t] + gamma * alive[t] * following
        returns[t] = following
    return returns


class A3CLoss(NamedTuple):
    total: torch.Tensor  # policy + value_coef * value: what backward() is called on
    policy: torch.Tensor  # -sum(log pi(a|s) * A) - entropy_coef * sum(H)
    value: torch.Tensor  # 1/2 * sum((R - V)^2)
    entropy: torch.Tensor  # sum(H), reported for logging (higher: more exploration)

    def as_floats(self) -> dict[str, float]:
        return {name: float(term) for name, term in self._asdict().items()}


def a3c_loss(
    log_probs: torch.Tensor,
    entropies: torch.Tensor,
    values: torch.Tensor,
    advantages: torch.Tensor,
    returns: torch.Tensor,
    entropy_coef: float = 0.01,
    value_coef: float = 0.5,
) -> A3CLoss:
    """The A3C loss over a rollout, all inputs (T, B).

    Sums run over the T steps, as in the paper and the original course, and are averaged over the B
    environments, so that one environment per worker gives exactly the original's loss. The
    advantages and returns are targets: they are detached, so the policy term sends no gradient into
    the critic through A, and the value term regresses V towards R without moving R.
    """
    log_probs, entropies, values, advantages, returns = map(
        _as_time_by_env, (log_probs, entropies, values, advantages, returns)
    )
    n_envs = log_probs.shape[1]
    entropy = entropies.sum() / n_envs
    policy = -(log_probs * advantages.detach()).sum() / n_envs - entropy_coef * entropy
    value = 0.5 * (returns.detach() - values).pow(2).sum() / n_envs
    return A3CLoss(policy + value_coef * value, policy, value, entropy)
