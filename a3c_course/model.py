"""The actor-critic network: a shared body, an LSTM, and two heads.

    frames (B, 1, 42, 42) -> 4 x [conv 3x3 stride 2, 32 filters, ELU] -> (B, 32, 3, 3) -> flatten (B, 288)
    vectors (B, D)        -> 2 x [linear, tanh]                        -> (B, body_size)
    -> LSTMCell(hidden_size) -> critic: linear -> value V(s) (B, 1)
                             -> actor:  linear -> logits of pi(a|s) (B, n_actions)

The actor's outputs are the logits of a policy, not Q-values: softmax(logits) is pi(.|s).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import gymnasium as gym
import torch
from torch import nn
from torch.distributions import Categorical

RecurrentState = tuple[torch.Tensor, torch.Tensor]


class ActorCriticOutput(NamedTuple):
    value: torch.Tensor  # (B, 1)
    logits: torch.Tensor  # (B, n_actions)
    state: RecurrentState  # (h, c), each (B, hidden_size)


class PolicySample(NamedTuple):
    action: torch.Tensor  # (B,) long
    log_prob: torch.Tensor  # (B,) log pi(action | s)
    entropy: torch.Tensor  # (B,) H(pi(. | s))


def conv_body(in_channels: int = 1, filters: int = 32, layers: int = 4) -> nn.Sequential:
    """Four 3x3 stride-2 convolutions with ELU: 42 -> 21 -> 11 -> 6 -> 3."""
    blocks = []
    for i in range(layers):
        blocks += [
            nn.Conv2d(in_channels if i == 0 else filters, filters, 3, stride=2, padding=1),
            nn.ELU(),
        ]
    return nn.Sequential(*blocks, nn.Flatten())


def mlp_body(in_features: int, size: int = 64) -> nn.Sequential:
    """A small body for vector observations (CartPole-style tasks)."""
    return nn.Sequential(nn.Linear(in_features, size), nn.Tanh(), nn.Linear(size, size), nn.Tanh())


def normalized_columns_(weight: torch.Tensor, std: float) -> torch.Tensor:
    """Gaussian weights rescaled so that each output unit's weight vector has norm `std`.

    With std=0.01 the actor's logits start near zero, so the first policy is nearly uniform (maximum
    entropy: the agent explores); with std=1 the critic starts with values of order one.
    """
    with torch.no_grad():
        weight.normal_(0.0, 1.0)
        weight *= std / weight.pow(2).sum(1, keepdim=True).sqrt()
    return weight


def fan_uniform_(weight: torch.Tensor) -> torch.Tensor:
    """Glorot-uniform weights, bound sqrt(6 / (fan_in + fan_out)), as in the original course."""
    fan_in = weight[0].numel()
    fan_out = weight.shape[0] * weight[0, 0].numel() if weight.dim() == 4 else weight.shape[0]
    bound = math.sqrt(6.0 / (fan_in + fan_out))
    with torch.no_grad():
        return weight.uniform_(-bound, bound)


class ActorCritic(nn.Module):
    """Conv (or MLP) body + LSTMCell + critic and actor heads, batched over environments."""

    def __init__(self, obs_shape: tuple[int, ...], n_actions: int, hidden_size: int = 256):
        super().__init__()
        if len(obs_shape) not in (1, 3):
            raise ValueError(f"obs_shape must be (C, H, W) frames or (D,) vectors, got {obs_shape}")
        if n_actions < 1:
            raise ValueError(f"n_actions must be at least 1, got {n_actions}")
        self.obs_shape = tuple(obs_shape)
        self.n_actions = n_actions
        self.hidden_size = hidden_size
        self.body = conv_body(obs_shape[0]) if len(obs_shape) == 3 else mlp_body(obs_shape[0])
        with torch.no_grad():
            body_size = self.body(torch.zeros(1, *obs_shape)).shape[1]
        self.lstm = nn.LSTMCell(body_size, hidden_size)
        self.critic = nn.Linear(hidden_size, 1)
        self.actor = nn.Linear(hidden_size, n_actions)
        self.reset_parameters()

    @classmethod
    def for_env(cls, env: gym.Env, hidden_size: int | None = None) -> ActorCritic:
        """The network that fits an environment's observation and action spaces."""
        obs_shape = env.observation_space.shape
        if hidden_size is None:
            hidden_size = 256 if len(obs_shape) == 3 else 64
        return cls(obs_shape, int(env.action_space.n), hidden_size)

    def reset_parameters(self) -> None:
        for module in self.body:
            if isinstance(module, (nn.Conv2d, nn.Linear)):
                fan_uniform_(module.weight)
                nn.init.zeros_(module.bias)
        nn.init.zeros_(self.lstm.bias_ih)
        nn.init.zeros_(self.lstm.bias_hh)
        normalized_columns_(self.actor.weight, 0.01)
        normalized_columns_(self.critic.weight, 1.0)
        nn.init.zeros_(self.actor.bias)
        nn.init.zeros_(self.critic.bias)

    def initial_state(self, batch_size: int = 1) -> RecurrentState:
        """Zero (h, c) for the start of an episode."""
        zeros = torch.zeros(batch_size, self.hidden_size)
        return zeros, zeros.clone()

    def forward(self, obs: torch.Tensor, state: RecurrentState) -> ActorCriticOutput:
        h, c = self.lstm(self.body(obs), state)
        return ActorCriticOutput(self.critic(h), self.actor(h), (h, c))


def sample_action(logits: torch.Tensor) -> PolicySample:
    """Draw a ~ pi(.|s) for each row of logits, with log pi(a|s) and the policy's entropy."""
    policy = Categorical(logits=logits)
    action = policy.sample()
    return PolicySample(action, policy.log_prob(action), policy.entropy())


def greedy_action(logits: torch.Tensor) -> torch.Tensor:
    """The most probable action of each row (used for evaluation)."""
    return logits.argmax(dim=-1)


def reset_state_where(state: RecurrentState, done: torch.Tensor) -> RecurrentState:
    """Zero the recurrent state of the environments whose episode just ended (done: (B,) bool)."""
    keep = (~done).float().unsqueeze(1)
    return state[0] * keep, state[1] * keep
