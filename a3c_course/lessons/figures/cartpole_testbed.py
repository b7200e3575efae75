"""Unit 3's CartPole testbed: a fixed policy, its true values by Monte-Carlo, an imperfect critic,
and the bias-variance experiment that measures each advantage estimate against the truth.
`a3c_course.lessons.figures.advantages` draws what this computes (and re-exports it for the notebook).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from gymnasium.envs.classic_control.cartpole import CartPoleVectorEnv

from a3c_course.a3c import returns
from a3c_course.a3c.envs import make_env

GAMMA = 0.9  # horizon 10 steps, which suits the policy's ~35-step episodes
POLICY_WEIGHTS = np.array([0.0, 0.0, 2.0, 0.5])  # (cart x, cart v, pole angle, pole angular v)
CRITIC_BIAS, CRITIC_NOISE = 1.0, 1.0
LAMBDAS = np.round(np.linspace(0, 1, 21), 2)  # 0, 0.05, ..., 1
_error_rng = np.random.default_rng(123)
_ERROR_FREQUENCIES = _error_rng.normal(size=4) * np.array([10.0, 10.0, 100.0, 10.0])
_ERROR_PHASE = _error_rng.uniform(0, 2 * np.pi)

# ------------------------------------------------------------------ the testbed


def prob_right(states):
    """pi(right | s) = sigmoid(2 angle + 0.5 angular velocity), for a batch of states (N, 4)."""
    return 1.0 / (1.0 + np.exp(-np.asarray(states) @ POLICY_WEIGHTS))


def policy_actions(states, rng):
    return (rng.random(len(states)) < prob_right(states)).astype(np.int64)


def cartpoles_at(states):
    """Gymnasium's vectorised CartPole, one copy per row of states (N, 4), put in those states."""
    envs = CartPoleVectorEnv(num_envs=len(states))
    envs.reset(seed=0)  # sizes the batch; we then overwrite its physical state
    envs.state = np.array(states, dtype=np.float64).T.copy()
    return envs


def sampled_returns(states, rng, first_actions=None, horizon=60):
    """One discounted return per row of states, playing the policy until the pole falls.

    first_actions, if given, are taken first (for Q(s, a)). 60 steps suffice: 0.9^60 = 0.002.
    """
    total = np.zeros(len(states))
    index = np.arange(len(states))  # which rows the CartPoles still running belong to
    envs, alive = cartpoles_at(states), np.ones(len(states), dtype=bool)
    for k in range(horizon):
        first = k == 0 and first_actions is not None
        actions = first_actions[index] if first else policy_actions(envs.state.T, rng)
        _, reward, terminated, _, _ = envs.step(actions)
        total[index[alive]] += GAMMA**k * reward[alive]
        alive &= ~terminated
        if not alive.any():
            break
        if alive.mean() < 0.5:  # drop the fallen ones to save time
            index, envs = index[alive], cartpoles_at(envs.state.T[alive])
            alive = np.ones(len(index), dtype=bool)
    return total


def true_values(states, n_rollouts, rng, first_actions=None, chunk=400_000):
    """Monte-Carlo V(s) (or Q(s, a) with first_actions): the mean of n_rollouts sampled returns."""
    states = np.asarray(states)
    out = np.zeros(len(states))
    rows = max(1, chunk // n_rollouts)
    for start in range(0, len(states), rows):
        part = slice(start, start + rows)
        repeated = np.repeat(states[part], n_rollouts, axis=0)
        firsts = None if first_actions is None else np.repeat(first_actions[part], n_rollouts)
        out[part] = sampled_returns(repeated, rng, firsts).reshape(-1, n_rollouts).mean(axis=1)
    return out


def critic(states, values):
    """The imperfect critic: the true values plus 1, plus a fixed wiggly error of the state."""
    wiggle = np.sqrt(2) * np.sin(np.asarray(states) @ _ERROR_FREQUENCIES + _ERROR_PHASE)
    return values + CRITIC_BIAS + CRITIC_NOISE * wiggle


def record_episodes(n_episodes, rng, max_episode_steps=None):
    """Play the policy with make_env("CartPole-v1"); per episode: states (L, 4), actions, rewards,
    the final state and how it ended (terminated, truncated)."""
    env = make_env("CartPole-v1", max_episode_steps=max_episode_steps)
    episodes = []
    for episode in range(n_episodes):
        env.reset(seed=episode)
        states, actions, rewards, ended = [], [], [], False
        while not ended:
            states.append(np.array(env.unwrapped.state, dtype=np.float64))
            actions.append(int(policy_actions(states[-1][None], rng)[0]))
            _, reward, terminated, truncated, _ = env.step(actions[-1])
            rewards.append(reward)
            ended = terminated or truncated
        final = np.array(env.unwrapped.state, dtype=np.float64)
        episodes.append(
            dict(
                states=np.array(states),
                actions=np.array(actions),
                rewards=np.array(rewards),
                final_state=final,
                terminated=terminated,
                truncated=truncated,
            )
        )
    env.close()
    return episodes


def n_step_target(rewards, next_values, terminated, t, n, gamma=GAMMA, truncated=None):
    """sum_{k<m} gamma^k r_{t+k} + gamma^m V(s_{t+m}), m = min(n, steps to the episode's or the
    rollout's end); n=None: to the end. Nothing is added after a game over (terminated)."""
    total, horizon = 0.0, len(rewards) if n is None else min(t + n, len(rewards))
    for u in range(t, horizon):
        total += gamma ** (u - t) * float(rewards[u])
        if terminated[u]:
            return total
        if u == horizon - 1 or (truncated is not None and truncated[u]):
            return total + gamma ** (u - t + 1) * float(next_values[u])  # bootstrap
    return total


# ------------------------------------------------------------------ the bias-variance experiment


@dataclass
class BiasVariance:
    """The errors Q-hat_lambda - Q for each lambda (L,), start state (K,) and rollout (M,)."""

    lambdas: np.ndarray
    errors: np.ndarray  # (L, K, M)

    @property
    def bias(self):  # root mean square over the states of the mean error over the rollouts
        return np.sqrt((self.errors.mean(axis=2) ** 2).mean(axis=1))

    @property
    def variance(self):  # variance over the rollouts, averaged over the states
        return self.errors.var(axis=2).mean(axis=1)

    @property
    def mse(self):
        return (self.errors**2).mean(axis=(1, 2))

    def table(self, every=2) -> str:
        rows = ["lambda  bias   variance   mean squared error"]
        for i in range(0, len(self.lambdas), every):
            row = (self.lambdas[i], self.bias[i], self.variance[i], self.mse[i])
            rows.append("{:<6.1f} {:6.3f} {:9.3f} {:12.3f}".format(*row))
        best = self.lambdas[self.mse.argmin()]
        return "\n".join([*rows, f"smallest mean squared error at lambda = {best:.2f}"])


def _rollouts_from(start_states, start_actions, n_rollouts, steps, rng):
    """n_rollouts of `steps` steps from each (s, a): visited states, still in play, game overs."""
    n = len(start_states) * n_rollouts
    visited = np.zeros((n, steps + 1, 4))
    in_play = np.ones((n, steps + 1), dtype=bool)
    game_over = np.zeros((n, steps), dtype=bool)
    visited[:, 0] = np.repeat(start_states, n_rollouts, axis=0)
    envs = cartpoles_at(visited[:, 0])
    for t in range(steps):
        first = np.repeat(start_actions, n_rollouts)
        _, _, terminated, _, _ = envs.step(first if t == 0 else policy_actions(envs.state.T, rng))
        game_over[:, t] = terminated & in_play[:, t]
        in_play[:, t + 1] = in_play[:, t] & ~terminated
        visited[:, t + 1] = envs.state.T
    return visited, in_play, game_over


def bias_variance_experiment(
    episodes,
    n_states=16,
    n_rollouts=400,
    steps=20,
    rollouts_for_v=100,
    rollouts_for_q=4000,
    lambdas=LAMBDAS,
    seed=2,
):
    """The error of Q-hat_lambda = A_0^GAE + V-hat(s_0) against the true Q(s, a), for each lambda.

    From n_states (s, a) picked in the recorded episodes: the true Q(s, a), n_rollouts rollouts of
    `steps` steps (what a worker collects), the critic at every visited state (its true value by
    Monte-Carlo, plus the critic's error), and the package's GAE on all rollouts at once.
    """
    rng = np.random.default_rng(seed)
    all_states = np.concatenate([e["states"] for e in episodes])
    all_actions = np.concatenate([e["actions"] for e in episodes])
    picked = rng.choice(len(all_states), size=n_states, replace=False)
    states, actions = all_states[picked], all_actions[picked]
    q_true = true_values(states, rollouts_for_q, rng, first_actions=actions)
    v_start = true_values(states, rollouts_for_q, rng)
    visited, in_play, game_over = _rollouts_from(states, actions, n_rollouts, steps, rng)
    needed = in_play.copy()
    needed[:, 0] = False
    # Rollouts from the same (s, a) share their first states exactly (the physics is deterministic):
    # value each distinct state once, so the critic is a function of the state, as a network is.
    distinct, which = np.unique(visited[needed], axis=0, return_inverse=True)
    values_distinct = np.zeros(len(distinct))
    # No progress bar: a notebook saved after running would keep only its first state ("0%").
    for start in range(0, len(distinct), 2000):
        part = slice(start, start + 2000)
        values_distinct[part] = true_values(distinct[part], rollouts_for_v, rng)
    v_visited = np.zeros(in_play.shape)
    v_visited[needed] = values_distinct[which.reshape(-1)]
    v_visited[:, 0] = np.repeat(v_start, n_rollouts)
    v_hat = torch.tensor(np.where(in_play, critic(visited, v_visited), 0.0)).T  # (steps + 1, N)
    rewards = torch.tensor(in_play[:, :-1], dtype=torch.float64).T  # +1 for each step played
    ends = torch.tensor(game_over).T
    errors = np.zeros((len(lambdas), n_states, n_rollouts))
    for i, lam in enumerate(lambdas):
        no_limit = torch.zeros_like(ends)
        a = returns.gae(rewards, v_hat[:-1], v_hat[1:], ends, no_limit, GAMMA, float(lam))
        q_hat = (a[0] + v_hat[0]).numpy().reshape(n_states, n_rollouts)
        errors[i] = q_hat - q_true[:, None]
    return BiasVariance(np.asarray(lambdas), errors)
