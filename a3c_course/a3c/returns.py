"""n-step returns, generalised advantage estimation (GAE) and the A3C loss.

Contract shared by every function here. A rollout has T steps over B environments; tensors are
(T, B). A single environment may pass 1-D (T,) tensors instead: it is treated as B = 1 and, when
every input is 1-D, the result is 1-D too. Inputs must agree in shape once (T,) is read as (T, 1);
a mismatch is an error rather than a silent broadcast (a (T, 1) minus a (T,) would be (T, T)).

    rewards[t]      r_t, the reward of the step taken from s_t
    values[t]       V(s_t), the critic's value of the observation the action was chosen on
    next_values[t]  V(s_{t+1}), the value of the observation that step t returned. When step t ended
                    an episode, s_{t+1} is that episode's final observation (not the next episode's
                    first one). Inside an episode next_values[t] == values[t + 1]; the last entry is
                    the bootstrap value V(s_T) that the rollout was cut at.
    terminated[t]   step t ended the episode for good (game over): nothing follows, V(s_{t+1}) := 0
    truncated[t]    step t was cut by a time limit: the game would go on, so bootstrap from V(s_{t+1})
                    (when both flags are set, terminated wins)

    delta_t = r_t + gamma * (1 - terminated_t) * V(s_{t+1}) - V(s_t)
    A_t     = delta_t + gamma * lambda * (1 - done_t) * A_{t+1},  done_t = terminated_t or truncated_t

with A_T := 0 beyond the rollout's last step (its delta already bootstraps from V(s_T)).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch


def _validate(gamma: float, lam: float | None = None) -> None:
    if not 0.0 <= gamma <= 1.0:  # also rejects NaN
        raise ValueError(f"gamma (the discount) must be in [0, 1], got {gamma!r}")
    if lam is not None and not 0.0 <= lam <= 1.0:
        raise ValueError(f"lam (the GAE lambda) must be in [0, 1], got {lam!r}")


def _rollout_tensors(names: str, *inputs) -> tuple[list[torch.Tensor], bool]:
    """The inputs (named in order by `names`, for the errors) as (T, B) tensors, and whether they
    were all 1-D (T,).

    Raises ValueError, naming the arguments and their shapes, unless every input is (T,) or (T, B)
    with the same T and B once (T,) is read as (T, 1).
    """
    tensors = {name: torch.as_tensor(x) for name, x in zip(names.split(), inputs, strict=True)}
    for name, x in tensors.items():
        if x.dim() not in (1, 2):
            raise ValueError(f"{name} must be (T,) or (T, B), got shape {tuple(x.shape)}")
    as_2d = {name: x.unsqueeze(1) if x.dim() == 1 else x for name, x in tensors.items()}
    shapes = {tuple(x.shape) for x in as_2d.values()}
    if len(shapes) > 1:
        listed = ", ".join(f"{name} {tuple(x.shape)}" for name, x in tensors.items())
        raise ValueError(f"inputs must all be (T,) or all the same (T, B); got {listed}")
    return list(as_2d.values()), all(x.dim() == 1 for x in tensors.values())


def _float(*xs: torch.Tensor) -> list[torch.Tensor]:
    """The tensors in one floating dtype (the widest among them; integers become the default)."""
    dtype = torch.get_default_dtype()
    for x in xs:
        if x.is_floating_point():
            dtype = torch.promote_types(dtype, x.dtype)
    return [x.to(dtype) for x in xs]


def _shaped(result: torch.Tensor, one_dim: bool) -> torch.Tensor:
    return result.squeeze(1) if one_dim else result


def td_errors(rewards, values, next_values, terminated, gamma: float) -> torch.Tensor:
    """delta_t = r_t + gamma * (1 - terminated_t) * V(s_{t+1}) - V(s_t), shape (T, B) (or (T,))."""
    _validate(gamma)
    (rewards, values, next_values, terminated), one_dim = _rollout_tensors(
        "rewards values next_values terminated", rewards, values, next_values, terminated
    )
    rewards, values, next_values = _float(rewards, values, next_values)
    alive = 1.0 - terminated.to(rewards.dtype)
    return _shaped(rewards + gamma * alive * next_values - values, one_dim)


def gae(
    rewards, values, next_values, terminated, truncated, gamma: float, lam: float
) -> torch.Tensor:
    """Generalised advantage estimates A_t, shape (T, B) (or (T,)), computed backwards in one pass.

    A_t = sum_k (gamma * lam)^k * delta_{t+k}, the sum stopping at the end of the episode (either
    flag) or of the rollout, whichever comes first. lam = 0 gives the one-step TD errors; lam = 1
    gives the n-step advantages n_step_returns(...) - values, when next_values[t] == values[t + 1]
    inside episodes. Gradients flow through values and next_values unless they are detached.
    """
    _validate(gamma, lam)
    (rewards, values, next_values, terminated, truncated), one_dim = _rollout_tensors(
        "rewards values next_values terminated truncated",
        *(rewards, values, next_values, terminated, truncated),
    )
    deltas = td_errors(rewards, values, next_values, terminated, gamma)  # (T, B): inputs are 2-D
    done = terminated.bool() | truncated.bool()
    carry = gamma * lam * (1.0 - done.to(deltas.dtype))  # 0 where the episode ended at step t
    advantages = torch.zeros_like(deltas)
    next_advantage = torch.zeros_like(deltas[0])  # A_T := 0: delta_{T-1} bootstraps from V(s_T)
    for t in reversed(range(deltas.shape[0])):
        next_advantage = deltas[t] + carry[t] * next_advantage
        advantages[t] = next_advantage
    return _shaped(advantages, one_dim)


def n_step_returns(rewards, next_values, terminated, truncated, gamma: float) -> torch.Tensor:
    """Discounted returns bootstrapped from the critic, shape (T, B) (or (T,)).

    R_t = r_t + gamma * (1 - terminated_t) * (V(s_{t+1}) if the episode or the rollout is cut after t
                                              else R_{t+1})
    So each R_t sums the rewards up to the end of its episode or of the rollout, whichever comes
    first, plus the discounted value of the observation reached there (0 after a game over).
    """
    _validate(gamma)
    (rewards, next_values, terminated, truncated), one_dim = _rollout_tensors(
        "rewards next_values terminated truncated", rewards, next_values, terminated, truncated
    )
    rewards, next_values = _float(rewards, next_values)
    alive = 1.0 - terminated.to(rewards.dtype)
    cut = terminated.bool() | truncated.bool()
    returns = torch.zeros_like(rewards)
    following = next_values[-1]  # the rollout is cut after its last step: bootstrap V(s_T)
    for t in reversed(range(rewards.shape[0])):
        following = torch.where(cut[t], next_values[t], following)
        following = rewards[t] + gamma * alive[t] * following
        returns[t] = following
    return _shaped(returns, one_dim)


class A3CLoss(NamedTuple):
    total: torch.Tensor  # policy + value_coef * value: what backward() is called on
    policy: torch.Tensor  # -sum(log pi(a|s) * A) - entropy_coef * sum(H)
    value: torch.Tensor  # 1/2 * sum((R - V)^2)
    entropy: torch.Tensor  # sum(H), reported for logging (higher: more exploration)

    def as_floats(self) -> dict[str, float]:
        return {name: float(term.detach()) for name, term in self._asdict().items()}


def a3c_loss(
    log_probs: torch.Tensor,
    entropies: torch.Tensor,
    values: torch.Tensor,
    advantages: torch.Tensor,
    returns: torch.Tensor,
    entropy_coef: float = 0.01,
    value_coef: float = 0.5,
) -> A3CLoss:
    """The A3C loss over a rollout, all inputs (T, B) (or (T,) for one environment).

        policy = -sum_t log pi(a_t|s_t) * A_t - entropy_coef * sum_t H(pi(.|s_t))
        value  = 1/2 * sum_t (R_t - V(s_t))^2
        total  = policy + value_coef * value

    log_probs are log pi(a_t|s_t) of the actions taken, entropies H(pi(.|s_t)), values V(s_t).
    Sums run over the T steps, as in the paper and the original course, and are averaged over the B
    environments, so that one environment per worker gives exactly the original's loss. The
    advantages and returns are targets: they are detached, so the policy term sends no gradient into
    the critic through A, and the value term regresses V towards R without moving R.
    """
    for name, coef in (("entropy_coef", entropy_coef), ("value_coef", value_coef)):
        if not (math.isfinite(coef) and coef >= 0.0):
            raise ValueError(f"{name} must be a finite number >= 0, got {coef!r}")
    (log_probs, entropies, values, advantages, returns), _ = _rollout_tensors(
        "log_probs entropies values advantages returns",
        *(log_probs, entropies, values, advantages, returns),
    )
    n_envs = log_probs.shape[1]
    entropy = entropies.sum() / n_envs
    policy = -(log_probs * advantages.detach()).sum() / n_envs - entropy_coef * entropy
    value = 0.5 * (returns.detach() - values).pow(2).sum() / n_envs
    return A3CLoss(policy + value_coef * value, policy, value, entropy)
