"""One A3C worker: collect a rollout with a local copy of the shared model, then update the shared model.

The original course's `train()` rebuilt, with its faults fixed. One pass of the worker's loop:

    sync_from_shared(local, shared)              copy the shared weights into the local model
    rollout, episodes = collect_rollout(...)     n steps in each of the worker's environments
    loss = update_shared(local, shared, ...)     loss -> gradient (one rollout's) -> shared optimizer

The pieces are plain functions, so a notebook can call them in its own process, one at a time,
without any multiprocessing; `worker_loop` strings them together, with a link to the shared
parameters (a ParameterLink): shared memory in a child process (hogwild.py), or a parameter server
reached from a Ray actor (cluster.py). The loop is the same; only the link differs.

What changed from the original, and why:
- Exactly one rollout's gradient per optimizer step. The original's `ensure_shared_grads` made the
  shared parameters' `.grad` alias the local ones, then relied on `optimizer.zero_grad()` to zero
  them in place. Since PyTorch 2.0, `zero_grad()` sets the shared `.grad` to None instead, the local
  gradients are never zeroed, and each `backward()` adds to them: update k applied the sum of k
  rollouts' gradients. Here the local gradients are cleared before each backward pass and handed to
  the shared parameters after it, every time.
- Episode lengths are counted in agent steps (the original counted rollouts), and a time limit is a
  truncation (bootstrap from V of the final observation), not a game over.
- Several environments per worker (`envs_per_worker`) are stepped together with one batched forward
  pass per step: the same algorithm for each environment, far fewer calls into the network.
  One environment per worker is the paper's A3C.
- The LSTM state is carried from one rollout to the next but detached at the rollout's start
  (truncated backpropagation through time), and zeroed for an environment whose episode ended.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import gymnasium as gym
import numpy as np
import torch

from a3c_course.a3c.envs import is_atari, make_env
from a3c_course.a3c.model import ActorCritic, RecurrentState, reset_state_where, sample_action
from a3c_course.a3c.returns import A3CLoss, a3c_loss, gae, n_step_returns
from a3c_course.training.config import TrainConfig

# How often a worker sends its averaged losses to the parent (episodes are sent as they end).
REPORT_INTERVAL_S = 1.0


class Episode(NamedTuple):
    """A finished episode: its raw game score (unclipped) and its length in agent steps."""

    score: float
    length: int
    env_index: int


@dataclass
class Rollout:
    """T steps of B environments; every tensor is (T, B), in the contract of `a3c_course.a3c.returns`.

    log_probs, entropies and values carry the computation graph (the loss backpropagates through
    them); next_values is a target: V(s_{t+1}), the final observation's value where an episode was
    truncated at step t, 0 where it terminated, and the bootstrap value V(s_T) in the last row.
    """

    observations: torch.Tensor  # (T, B, *obs_shape): s_t, the observation each action was chosen on
    actions: torch.Tensor  # long
    log_probs: torch.Tensor
    entropies: torch.Tensor
    values: torch.Tensor
    rewards: torch.Tensor  # clipped training rewards
    next_values: torch.Tensor
    terminated: torch.Tensor  # bool: a game over (or a lost life, with life_loss_terminal)
    truncated: torch.Tensor  # bool; never True together with terminated

    @property
    def steps(self) -> int:
        """Agent steps in this rollout, all environments together (T * B)."""
        return self.rewards.numel()


class EnvRunner:
    """A worker's environments and where they stand: the current observations (B, *obs_shape),
    the LSTM state (h, c) and the lives left, all carried from one rollout to the next.

    life_loss_terminal: a lost life counts as an episode's end for the returns (no bootstrap across
    it, the LSTM state starts afresh) while the game itself plays on, so the scores stay whole games.
    A lost ball then costs the value of everything after it at once, not 100s of steps later.
    """

    def __init__(self, envs: list[gym.Env], hidden_size: int, life_loss_terminal: bool = False):
        if not envs:
            raise ValueError("EnvRunner needs at least one environment")
        self.envs = envs
        self.life_loss_terminal = life_loss_terminal
        starts = [env.reset() for env in envs]
        self.obs = _batch([obs for obs, _ in starts])
        self.lives = [info.get("lives", 0) for _, info in starts]
        zeros = torch.zeros(len(envs), hidden_size)
        self.state: RecurrentState = (zeros, zeros.clone())

    def life_lost(self, index: int, info: dict, ended: bool) -> bool:
        """Record environment `index`'s lives; True if it lost one and life_loss_terminal is on."""
        lives, self.lives[index] = self.lives[index], info.get("lives", 0)
        return self.life_loss_terminal and not ended and self.lives[index] < lives

    @property
    def batch_size(self) -> int:
        return len(self.envs)

    def close(self) -> None:
        for env in self.envs:
            env.close()


def _batch(observations: list[np.ndarray]) -> torch.Tensor:
    """Stack B observations into a new float32 tensor (new memory each step: autograd keeps the
    previous step's input for the backward pass, so it must not be overwritten)."""
    return torch.from_numpy(np.stack(observations).astype(np.float32, copy=False))


def env_options(config: TrainConfig) -> dict[str, Any]:
    """make_env options for training environments: the time limit; on Atari, sticky actions and
    the frame size."""
    options: dict[str, Any] = {"max_episode_steps": config.max_episode_steps}
    if is_atari(config.env_id):
        options["sticky_actions"] = config.sticky_actions
        options["size"] = config.frame_size
    return options


def env_seed(config: TrainConfig, worker_id: int, env_index: int) -> int:
    """A distinct seed for each environment of each worker (the evaluator uses other seeds)."""
    return config.seed + 1 + worker_id * config.envs_per_worker + env_index


def make_worker_envs(config: TrainConfig, worker_id: int) -> list[gym.Env]:
    """The envs_per_worker seeded environments of worker `worker_id`."""
    options = env_options(config)
    return [
        make_env(config.game, seed=env_seed(config, worker_id, j), **options)
        for j in range(config.envs_per_worker)
    ]


def sync_from_shared(local_model: torch.nn.Module, shared_model: torch.nn.Module) -> None:
    """Copy the shared weights into the local model, in place (no new tensors, no state_dict)."""
    with torch.no_grad():
        for local, shared in zip(local_model.parameters(), shared_model.parameters(), strict=True):
            local.copy_(shared)


def collect_rollout(
    model: ActorCritic, runner: EnvRunner, steps: int
) -> tuple[Rollout, list[Episode]]:
    """Run `steps` steps in each of the runner's environments with one batched forward pass per step.

    Returns the rollout and the episodes that ended during it. The runner keeps the observations
    and the LSTM state where the rollout stopped; the state is detached here, at the rollout's
    start, so the backward pass stops at the rollout's edge (truncated backpropagation through time).
    """
    envs, batch = runner.envs, runner.batch_size
    obs = runner.obs
    state = (runner.state[0].detach(), runner.state[1].detach())
    observations, actions, log_probs, entropies, values = [], [], [], [], []
    rewards = np.zeros((steps, batch), dtype=np.float32)
    terminated = np.zeros((steps, batch), dtype=bool)
    truncated = np.zeros((steps, batch), dtype=bool)
    end_values = torch.zeros(steps, batch)  # V(final observation) where an episode was truncated
    episodes: list[Episode] = []

    for t in range(steps):
        out = model(obs, state)
        sample = sample_action(out.logits)
        observations.append(obs)
        actions.append(sample.action)
        log_probs.append(sample.log_prob)
        entropies.append(sample.entropy)
        values.append(out.value.squeeze(1))

        next_obs, final_obs = [], {}
        for i, (env, action) in enumerate(zip(envs, sample.action.tolist(), strict=True)):
            o, reward, term, trunc, info = env.step(action)
            rewards[t, i] = reward
            terminated[t, i] = term or runner.life_lost(i, info, term or trunc)
            truncated[t, i] = trunc and not term
            if term or trunc:
                episode = info["episode"]  # RecordEpisodeStatistics: raw score, agent steps
                episodes.append(Episode(float(episode["r"]), int(episode["l"]), i))
                if truncated[t, i]:
                    final_obs[i] = o
                o, reset_info = env.reset()
                runner.life_lost(i, reset_info, True)
            next_obs.append(o)

        state = out.state
        if final_obs:  # bootstrap a truncated episode from its final observation
            ended = list(final_obs)
            with torch.no_grad():
                final = model(_batch(list(final_obs.values())), (state[0][ended], state[1][ended]))
            end_values[t, ended] = final.value.squeeze(1)
        done = terminated[t] | truncated[t]
        if done.any():
            state = reset_state_where(state, torch.from_numpy(done))
        obs = _batch(next_obs)

    with torch.no_grad():
        bootstrap = model(obs, state).value.squeeze(1)  # V(s_T), where the rollout was cut
    runner.obs, runner.state = obs, (state[0].detach(), state[1].detach())

    values_t = torch.stack(values)
    ended = torch.from_numpy(terminated | truncated)
    next_values = torch.cat([values_t[1:].detach(), bootstrap.unsqueeze(0)])
    next_values = torch.where(ended, end_values, next_values)  # 0 after a game over
    rollout = Rollout(
        observations=torch.stack(observations),
        actions=torch.stack(actions),
        log_probs=torch.stack(log_probs),
        entropies=torch.stack(entropies),
        values=values_t,
        rewards=torch.from_numpy(rewards),
        next_values=next_values,
        terminated=torch.from_numpy(terminated),
        truncated=torch.from_numpy(truncated),
    )
    return rollout, episodes


def rollout_loss(rollout: Rollout, config: TrainConfig) -> A3CLoss:
    """The A3C loss of a rollout: GAE advantages for the policy, n-step returns for the critic."""
    r = rollout
    advantages = gae(
        r.rewards,
        r.values.detach(),
        r.next_values,
        r.terminated,
        r.truncated,
        config.gamma,
        config.gae_lambda,
    )
    returns = n_step_returns(r.rewards, r.next_values, r.terminated, r.truncated, config.gamma)
    return a3c_loss(
        r.log_probs,
        r.entropies,
        r.values,
        advantages,
        returns,
        entropy_coef=config.entropy_coef,
        value_coef=config.value_coef,
    )


def local_gradient(local_model: torch.nn.Module, loss: torch.Tensor, max_grad_norm: float) -> float:
    """Leave exactly this loss's gradient, clipped, in the local model's .grad; return its norm
    before clipping.

    1. clear the local gradients (so nothing from an earlier rollout remains)
    2. backward: the local gradients are this rollout's, and only this rollout's
    3. rescale them so that their norm is at most max_grad_norm
    """
    local_model.zero_grad(set_to_none=True)
    loss.backward()
    return float(torch.nn.utils.clip_grad_norm_(local_model.parameters(), max_grad_norm))


def apply_gradient(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    grads: list[torch.Tensor],
    lr: float | None = None,
) -> None:
    """One optimizer step on model with these gradients (one per parameter, in order).

    4. hand them to the parameters (every time: no "only if None" shortcut)
    5. one step of the optimizer (at rate lr, when given)
    """
    for param, grad in zip(model.parameters(), grads, strict=True):
        param.grad = grad
    if lr is not None:
        for group in optimizer.param_groups:
            group["lr"] = lr
    optimizer.step()


def update_shared(
    local_model: torch.nn.Module,
    shared_model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    loss: torch.Tensor,
    max_grad_norm: float,
) -> float:
    """Apply exactly this loss's gradient to the shared model; return the gradient norm before clipping.

    The five steps of local_gradient (1-3) and apply_gradient (4-5).
    """
    norm = local_gradient(local_model, loss, max_grad_norm)
    apply_gradient(shared_model, optimizer, [p.grad for p in local_model.parameters()])
    return norm


def annealed_lr(config: TrainConfig, steps: int) -> float:
    """The learning rate after `steps` agent steps: config.lr, or with lr_anneal_steps its linear
    decay to 0 at that many steps (the A3C paper's schedule)."""
    if config.lr_anneal_steps is None:
        return config.lr
    return config.lr * max(0.0, 1.0 - steps / config.lr_anneal_steps)


def _floats(loss: A3CLoss) -> dict[str, float]:
    return {name: float(term.detach()) for name, term in loss._asdict().items()}


class _LossAverage:
    """Averages the loss terms over the rollouts between two reports."""

    def __init__(self) -> None:
        self.sums: dict[str, float] = {}
        self.count = 0

    def add(self, values: dict[str, float]) -> None:
        for name, value in values.items():
            self.sums[name] = self.sums.get(name, 0.0) + value
        self.count += 1

    def pop(self) -> dict[str, float]:
        means = {name: total / self.count for name, total in self.sums.items()}
        means["rollouts"] = self.count
        self.sums, self.count = {}, 0
        return means


class ParameterLink(Protocol):
    """A worker's way to the shared parameters; what differs between the backends.

    hogwild.SharedMemoryLink: the parameters and the optimizer in this machine's shared memory.
    cluster.ServerLink: a parameter server (a Ray actor), perhaps on another machine.
    """

    architecture: dict[str, Any]  # ActorCritic(**architecture) builds the local model

    def stopped(self) -> bool:
        """True once the run is stopping."""

    def wait(self, timeout: float) -> bool:
        """Wait up to timeout seconds for the run to stop; True if it did."""

    @property
    def steps(self) -> int:
        """The run's agent steps, all workers together (as of the last pull or push)."""

    def pull(self, model: torch.nn.Module) -> None:
        """Copy the latest shared weights into model."""

    def push(self, model: torch.nn.Module, steps: int) -> tuple[int, int]:
        """Apply the gradient in model's .grad to the shared weights and count steps agent steps;
        return the run's steps so far and the gradient's staleness: the updates applied by others
        since this worker's last pull."""

    def send(self, record: dict[str, Any]) -> None:
        """Send a record (an episode, losses, an evaluation) to the parent."""


def worker_loop(worker_id: int, config: TrainConfig, link: ParameterLink) -> None:
    """Pull, rollout, gradient, push, report; until the run stops or the step budget is spent.

    The same loop for both backends: only the link to the shared parameters differs.
    """
    torch.manual_seed(config.seed + 1 + worker_id)
    local_model = ActorCritic(**link.architecture)
    runner = EnvRunner(
        make_worker_envs(config, worker_id), local_model.hidden_size, config.life_loss_terminal
    )
    losses = _LossAverage()
    next_report = time.monotonic() + REPORT_INTERVAL_S
    try:
        while not link.stopped():
            link.pull(local_model)
            rollout, episodes = collect_rollout(local_model, runner, config.rollout_steps)
            loss = rollout_loss(rollout, config)
            grad_norm = local_gradient(local_model, loss.total, config.max_grad_norm)
            steps, staleness = link.push(local_model, rollout.steps)
            for episode in episodes:
                link.send(
                    {
                        "kind": "episode",
                        "worker": worker_id,
                        "steps": steps,
                        "score": episode.score,
                        "length": episode.length,
                    }
                )
            losses.add({**_floats(loss), "grad_norm": grad_norm, "staleness": staleness})
            if time.monotonic() >= next_report:
                link.send({"kind": "loss", "worker": worker_id, "steps": steps, **losses.pop()})
                next_report = time.monotonic() + REPORT_INTERVAL_S
            if config.max_steps is not None and steps >= config.max_steps:
                break
        if losses.count:
            link.send({"kind": "loss", "worker": worker_id, "steps": steps, **losses.pop()})
    finally:
        runner.close()
