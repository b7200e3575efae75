"""Unit 3's solutions: discounted returns, GAE for one environment, the truncation fix."""

import torch


def discounted_returns(rewards, gamma):
    """G_t = r_t + gamma * r_{t+1} + ... + gamma^(T-1-t) * r_{T-1}, for t = 0 .. T-1 (a tensor (T,))."""
    ### BEGIN SOLUTION
    returns = torch.zeros(len(rewards))
    following = 0.0  # G_T = 0: nothing comes after the episode's end
    for t in reversed(range(len(rewards))):
        following = rewards[t] + gamma * following
        returns[t] = following
    return returns
    ### END SOLUTION


def gae_one_env(rewards, values, next_values, terminated, truncated, gamma, lam):
    """GAE advantages A_t for one environment, computed backwards; a tensor (T,)."""
    ### BEGIN SOLUTION
    advantages = torch.zeros(len(rewards))
    following = 0.0  # A_{t+1}; A_T = 0
    for t in reversed(range(len(rewards))):
        if terminated[t] or truncated[t]:
            following = 0.0  # A_{t+1} belongs to the next episode
        bootstrap = 0.0 if terminated[t] else next_values[t]
        delta = rewards[t] + gamma * bootstrap - values[t]
        following = delta + gamma * lam * following
        advantages[t] = following
    return advantages
    ### END SOLUTION


def fixed_advantages_and_returns(rewards, values, next_values, terminated, truncated, gamma, lam):
    """(advantages (T,), returns (T,)) for one environment, right on time limits too."""
    ### BEGIN SOLUTION
    n = len(rewards)
    advantages, returns = torch.zeros(n), torch.zeros(n)
    R, gae = next_values[-1], 0.0
    for t in reversed(range(n)):
        if terminated[t]:
            R, gae = 0.0, 0.0  # game over: nothing follows
        elif truncated[t]:
            R, gae = next_values[t], 0.0  # time limit: the game would go on, bootstrap
        next_value = 0.0 if terminated[t] else next_values[t]
        R = rewards[t] + gamma * R
        delta = rewards[t] + gamma * next_value - values[t]
        gae = delta + gamma * lam * gae
        advantages[t], returns[t] = gae, R
    return advantages, returns
    ### END SOLUTION
