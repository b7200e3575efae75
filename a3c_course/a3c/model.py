"""The actor-critic network: a shared body, an LSTM, and two heads.

    frames (B, 1, 42, 42) -> standardise each frame -> 4 x [conv 3x3 stride 2, F filters, activation]
                          -> (B, F, 3, 3) -> flatten (B, 9F)     (84x84 frames: (B, F, 6, 6), 36F)
    vectors (B, D)        -> 2 x [linear, tanh]                        -> (B, body_size)
    -> LSTMCell(hidden_size) -> critic: linear -> value V(s) (B, 1)
                             -> actor:  linear -> logits of pi(a|s) (B, n_actions)

The actor's outputs are the logits of a policy, not Q-values: softmax(logits) is pi(.|s).

The course's network has F = 16 filters with ReLU and an LSTM of 128 (COURSE_NETWORK); the original
course's had 32 filters with ELU and an LSTM of 256 (ORIGINAL_NETWORK). The smaller one costs less
time per agent step on a CPU; how the two compare is measured in benchmarks/README.md.
"""

from __future__ import annotations

import math
import numbers
from typing import NamedTuple

import gymnasium as gym
import torch
from torch import nn

RecurrentState = tuple[torch.Tensor, torch.Tensor]


class ActorCriticOutput(NamedTuple):
    value: torch.Tensor  # (B, 1)
    logits: torch.Tensor  # (B, n_actions)
    state: RecurrentState  # (h, c), each (B, hidden_size)


class PolicySample(NamedTuple):
    action: torch.Tensor  # (B,) long
    log_prob: torch.Tensor  # (B,) log pi(action | s)
    entropy: torch.Tensor  # (B,) H(pi(. | s))


# The conv body's activation functions, by name.
# leaky_relu: ReLU with slope 0.01 below zero, so that a unit pushed below zero for every input keeps a
# gradient and can come back (a ReLU unit there is dead for good).
ACTIVATIONS = {"relu": nn.ReLU, "elu": nn.ELU, "leaky_relu": nn.LeakyReLU}
# The conv body's activation, filters and the LSTM's size for frames: the course's network, and the
# original course's (ActorCritic(obs_shape, n_actions, **ORIGINAL_NETWORK)).
COURSE_NETWORK = {"activation": "relu", "conv_filters": 16, "hidden_size": 128}
ORIGINAL_NETWORK = {"activation": "elu", "conv_filters": 32, "hidden_size": 256}
VECTOR_HIDDEN_SIZE = 64  # the LSTM's size for vector observations (CartPole-style tasks)
# The original course's conv body alone: what networks saved before the options existed had.
ORIGINAL_CONV_BODY = {key: ORIGINAL_NETWORK[key] for key in ("activation", "conv_filters")}


def default_hidden_size(frames: bool) -> int:
    """The LSTM's size when none is given: COURSE_NETWORK's for frames, VECTOR_HIDDEN_SIZE for vectors."""
    return COURSE_NETWORK["hidden_size"] if frames else VECTOR_HIDDEN_SIZE


def conv_body(
    in_channels: int = 1, filters: int = 16, layers: int = 4, activation: str = "relu"
) -> nn.Sequential:
    """Four 3x3 stride-2 convolutions, each followed by the activation: 42 -> 21 -> 11 -> 6 -> 3
    (84 -> 42 -> 21 -> 11 -> 6)."""
    blocks = []
    for i in range(layers):
        blocks += [
            nn.Conv2d(in_channels if i == 0 else filters, filters, 3, stride=2, padding=1),
            # In place: the activation overwrites the convolution's output (which its backward
            # pass does not need) and its own backward works from its result: less time on CPU.
            ACTIVATIONS[activation](inplace=True),
        ]
    return nn.Sequential(*blocks, nn.Flatten())


def mlp_body(in_features: int, size: int = 64) -> nn.Sequential:
    """A small body for vector observations (CartPole-style tasks)."""
    return nn.Sequential(nn.Linear(in_features, size), nn.Tanh(), nn.Linear(size, size), nn.Tanh())


def normalized_rows_(weight: torch.Tensor, std: float) -> torch.Tensor:
    """Gaussian weights rescaled so that each output unit's weight vector (a row of PyTorch's
    (out, in) weight) has norm `std`. pytorch-a3c calls it normalized_columns_initializer, after
    TensorFlow's (in, out) layout, where an output unit's weights are a column.

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


def _is_positive_int(x) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool) and x >= 1


class ActorCritic(nn.Module):
    """Conv (or MLP) body + LSTMCell + critic and actor heads, batched over environments.

    obs_shape: (C, H, W) for frames (the conv body) or (D,) for vectors (the MLP body).
    n_actions: the number of discrete actions (one logit each).
    hidden_size: the LSTM's size (256 in the original course).
    activation: the conv body's activation, "relu" (the paper's), "elu" (the original course's) or
        "leaky_relu" (as cheap as ReLU, and its units cannot die).
    conv_filters: the filters of each convolution (32 in the original course).
    The defaults are COURSE_NETWORK's; the MLP body (tanh) ignores activation and conv_filters.
    """

    def __init__(
        self,
        obs_shape: tuple[int, ...],
        n_actions: int,
        hidden_size: int = COURSE_NETWORK["hidden_size"],
        activation: str = COURSE_NETWORK["activation"],
        conv_filters: int = COURSE_NETWORK["conv_filters"],
    ):
        super().__init__()
        obs_shape = tuple(obs_shape)
        if len(obs_shape) not in (1, 3) or not all(_is_positive_int(n) for n in obs_shape):
            raise ValueError(
                f"obs_shape must be (C, H, W) frames or (D,) vectors of positive integers, got {obs_shape}"
            )
        if not _is_positive_int(n_actions):
            raise ValueError(f"n_actions must be a positive integer, got {n_actions!r}")
        if not _is_positive_int(hidden_size):
            raise ValueError(f"hidden_size must be a positive integer, got {hidden_size!r}")
        if activation not in ACTIVATIONS:
            raise ValueError(
                f"activation must be one of {', '.join(map(repr, ACTIVATIONS))}, got {activation!r}"
            )
        if not _is_positive_int(conv_filters):
            raise ValueError(f"conv_filters must be a positive integer, got {conv_filters!r}")
        self.obs_shape = tuple(int(n) for n in obs_shape)
        self.n_actions = int(n_actions)
        self.hidden_size = int(hidden_size)
        self.activation = activation
        self.conv_filters = int(conv_filters)
        if len(obs_shape) == 3:
            self.body = conv_body(obs_shape[0], self.conv_filters, activation=activation)
        else:
            self.body = mlp_body(obs_shape[0])
        with torch.no_grad():
            body_size = self.body(torch.zeros(1, *obs_shape)).shape[1]
        self.lstm = nn.LSTMCell(body_size, hidden_size)
        self.critic = nn.Linear(hidden_size, 1)
        self.actor = nn.Linear(hidden_size, n_actions)
        self.reset_parameters()
        if self.has_conv_body:
            # channels_last ("NHWC") lets oneDNN pick faster CPU convolution kernels: 10-17% less
            # forward + backward time at 8-32 environments per worker (benchmarks/README.md). Same
            # numbers up to float rounding; a state_dict loads into it like any other layout.
            self.body.to(memory_format=torch.channels_last)

    @property
    def has_conv_body(self) -> bool:
        return len(self.obs_shape) == 3

    @property
    def architecture(self) -> dict:
        """What it takes to build this network again: `ActorCritic(**model.architecture)`."""
        return {
            "obs_shape": self.obs_shape,
            "n_actions": self.n_actions,
            "hidden_size": self.hidden_size,
            "activation": self.activation,
            "conv_filters": self.conv_filters,
        }

    @classmethod
    def for_env(
        cls,
        env: gym.Env,
        hidden_size: int | None = None,
        activation: str = COURSE_NETWORK["activation"],
        conv_filters: int = COURSE_NETWORK["conv_filters"],
    ) -> ActorCritic:
        """The network that fits an environment's observation and action spaces.

        hidden_size None: default_hidden_size for the observations.
        """
        if not isinstance(env.action_space, gym.spaces.Discrete):
            raise ValueError(
                f"ActorCritic needs a discrete action space (one logit per action), got {env.action_space}"
            )
        if not isinstance(env.observation_space, gym.spaces.Box):
            raise ValueError(
                f"ActorCritic needs a Box observation space (frames or vectors), got {env.observation_space}"
            )
        obs_shape = env.observation_space.shape
        if hidden_size is None:
            hidden_size = default_hidden_size(frames=len(obs_shape) == 3)
        return cls(obs_shape, int(env.action_space.n), hidden_size, activation, conv_filters)

    def reset_parameters(self) -> None:
        """The original course's initialisation.

        - Body (conv and linear) weights: Glorot-uniform, biases zero: signals keep their scale
          through the layers at the start.
        - LSTM: PyTorch's default uniform weights, biases zero.
        - Actor: each action's weight vector has norm 0.01, bias zero. Since every unit of the
          LSTM's output h = o * tanh(c) lies in (-1, 1), |logit| <= 0.01 * sqrt(hidden_size)
          (0.16 for 256) whatever the frames: the first policy is nearly uniform (entropy close to
          log n_actions) and the agent starts by exploring, not by committing to an arbitrary
          action.
        - Critic: a weight vector of norm 1, bias zero: V(s) = w . h starts near zero but on the
          scale of h, free to grow to the scale of the returns.
        """
        for module in self.body:
            if isinstance(module, (nn.Conv2d, nn.Linear)):
                fan_uniform_(module.weight)
                nn.init.zeros_(module.bias)
        nn.init.zeros_(self.lstm.bias_ih)
        nn.init.zeros_(self.lstm.bias_hh)
        normalized_rows_(self.actor.weight, 0.01)
        normalized_rows_(self.critic.weight, 1.0)
        nn.init.zeros_(self.actor.bias)
        nn.init.zeros_(self.critic.bias)

    def initial_state(
        self, batch_size: int = 1, device: torch.device | str | None = None
    ) -> RecurrentState:
        """Zero (h, c), each (batch_size, hidden_size), for the start of an episode.

        device: where the state lives; by default, where the network's parameters are.
        """
        if device is None:
            device = self.actor.weight.device
        zeros = torch.zeros(batch_size, self.hidden_size, device=device)
        return zeros, zeros.clone()

    def forward(self, obs: torch.Tensor, state: RecurrentState | None = None) -> ActorCriticOutput:
        """One step for a batch: obs (B, *obs_shape), state (h, c) each (B, hidden_size).

        state=None starts from zeros (the start of an episode).
        """
        if obs.dim() != len(self.obs_shape) + 1 or tuple(obs.shape[1:]) != self.obs_shape:
            raise ValueError(
                f"obs must have shape (B, {', '.join(map(str, self.obs_shape))}), got "
                f"{tuple(obs.shape)}; add a batch axis with obs.unsqueeze(0) for one observation"
            )
        if state is None:
            state = self.initial_state(obs.shape[0], obs.device)
        if self.has_conv_body:
            obs = standardize_frames(obs).contiguous(memory_format=torch.channels_last)
        h, c = self.lstm(self.body(obs), state)
        return ActorCriticOutput(self.critic(h), self.actor(h), (h, c))


def standardize_frames(frames: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """Each frame (each sample and channel) shifted to mean 0 and scaled to standard deviation 1.

    In Pong the paddles and ball cover about 1.5% of the 42x42 screen and differ from the background
    by 0.36 at most on the [0, 1] scale: divided by 255 alone, the objects barely register against a
    constant 0.34. Standardised, the background is near 0 and the objects stand several units out,
    which is what the original course's running normaliser achieved (with per-process state; this has
    none: the same screen gives the same input in every process). Parameter-free:
    `nn.InstanceNorm2d(C, eps=eps)` computes the same thing. eps only keeps a flat frame (variance
    0) finite; a Pong frame's variance is about 1e-3.
    """
    mean = frames.mean(dim=(-2, -1), keepdim=True)
    centered = frames - mean
    # The variance as the mean square of the centred frame: the same number as
    # frames.var(unbiased=False), at a quarter of its cost on CPU (var's kernel is slow here).
    var = centered.square().mean(dim=(-2, -1), keepdim=True)
    return centered / torch.sqrt(var + eps)


def sample_action(logits: torch.Tensor, generator: torch.Generator | None = None) -> PolicySample:
    """Draw a ~ pi(.|s) for each row of logits, with log pi(a|s) and the policy's entropy.

    The same arithmetic as `torch.distributions.Categorical(logits=logits)` and its `sample()`,
    `log_prob(a)` and `entropy()` (the same numbers and, from the same random state, the same
    actions), written out: the distribution object's checks and bookkeeping cost 4 times these
    few operations, and a worker calls this once per step. generator: draw with it instead of
    torch's global random state (a replayable recording).
    """
    log_probs = logits - logits.logsumexp(dim=-1, keepdim=True)  # log pi(.|s)
    probs = torch.softmax(log_probs, dim=-1)
    action = torch.multinomial(probs, 1, replacement=True, generator=generator).squeeze(-1)
    log_prob = log_probs.gather(-1, action.unsqueeze(-1)).squeeze(-1)
    # Clamped as Categorical does: a probability of exactly 0 (logit -inf) adds 0, not nan.
    entropy = -(log_probs.clamp(min=torch.finfo(log_probs.dtype).min) * probs).sum(-1)
    return PolicySample(action, log_prob, entropy)


def greedy_action(logits: torch.Tensor) -> torch.Tensor:
    """The most probable action of each row (used for evaluation)."""
    return logits.argmax(dim=-1)


def choose_action(
    logits: torch.Tensor, greedy: bool, generator: torch.Generator | None = None
) -> torch.Tensor:
    """Each row's action: the greedy one, or one sampled from pi(.|s) (with generator, if given).
    The one choice that evaluation, videos and the notebooks' players make."""
    return greedy_action(logits) if greedy else sample_action(logits, generator).action


def reset_state_where(state: RecurrentState, done: torch.Tensor) -> RecurrentState:
    """Zero the recurrent state of the environments whose episode just ended.

    done: (B,) booleans (a tensor, array or list), True where (h, c) must start again from zeros.
    The other rows are returned unchanged, still connected to the graph.
    """
    h, c = state
    done = torch.as_tensor(done, dtype=torch.bool, device=h.device)
    if done.shape != h.shape[:1]:
        raise ValueError(
            f"done must have shape ({h.shape[0]},), one flag per row, got {tuple(done.shape)}"
        )
    reset = done.unsqueeze(1)
    return torch.where(reset, torch.zeros_like(h), h), torch.where(reset, torch.zeros_like(c), c)
