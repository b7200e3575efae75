"""One A3C worker: collect a rollout with a local copy of the shared model, then update the shared model.

The original course's `train()` rebuilt, with its faults fixed. One pass of a worker:

    link.pull(local)                             copy the shared weights into the local model
    rollout, episodes = collect_rollout(...)     n steps in each of the worker's environments
    loss = rollout_loss(rollout, ...)            Unit 3's A3C loss
    local_gradient(local, loss.total, ...)       exactly this rollout's gradient, clipped
    link.push(local, rollout.steps)              the gradient -> the shared optimizer's step

`worker_step` is that pass, the one every caller runs: both backends' workers
(a3c_course.training.worker_loop), the profiler and the notebooks' probes, which time its parts
with a clock passed in. The link to the shared parameters (a ParameterLink) is what differs:
shared memory (LocalLink here; the Hogwild backend's across processes), or a parameter server
reached from a Ray actor. The pieces are plain functions, so a notebook can call them one at a
time, in its own process, without any multiprocessing.

How, and why:
- Exactly one rollout's gradient per optimizer step: the local gradients are cleared before each
  backward pass and handed to the shared parameters after it, every time. (The original course's
  update summed every past rollout's gradient under PyTorch 2.x: the appendix notebook shows it.)
- A time limit is a truncation (bootstrap from V of the final observation), not a game over.
- Several environments per worker (`envs_per_worker`) are stepped together with one batched forward
  pass per step: the same algorithm for each environment, far fewer calls into the network.
  One environment per worker is the paper's A3C.
- The LSTM state is carried from one rollout to the next but detached at the rollout's start
  (truncated backpropagation through time), and zeroed for an environment whose episode ended.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import gymnasium as gym
import numpy as np
import torch

from a3c_course.a3c.model import ActorCritic, RecurrentState, reset_state_where, sample_action
from a3c_course.a3c.returns import A3CLoss, a3c_loss, gae, n_step_returns


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

    life_loss_terminal: a lost life counts as an episode's end for the returns and the LSTM state (no
    bootstrap across it, the state starts afresh) while the game itself plays on, so the scores stay
    whole games.
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


def rollout_loss(
    rollout: Rollout,
    *,
    gamma: float = 0.99,
    gae_lambda: float = 1.0,
    entropy_coef: float = 0.01,
    value_coef: float = 0.5,
) -> A3CLoss:
    """The A3C loss of a rollout: GAE advantages for the policy, n-step returns for the critic.

    The defaults are the course's (TrainConfig's): discount 0.99, lambda 1 (n-step advantages),
    entropy bonus 0.01, value loss weighed 0.5.
    """
    r = rollout
    advantages = gae(
        r.rewards, r.values.detach(), r.next_values, r.terminated, r.truncated, gamma, gae_lambda
    )
    returns = n_step_returns(r.rewards, r.next_values, r.terminated, r.truncated, gamma)
    return a3c_loss(
        r.log_probs,
        r.entropies,
        r.values,
        advantages,
        returns,
        entropy_coef=entropy_coef,
        value_coef=value_coef,
    )


# A clock times the parts of a step: clock("backward") is a context manager around that part.
# The profiler and the notebooks' probes pass one; the workers pass none (no_clock).
Clock = Callable[[str], AbstractContextManager]


def no_clock(part: str) -> AbstractContextManager:
    """The clock that times nothing."""
    return nullcontext()


def local_gradient(
    local_model: torch.nn.Module, loss: torch.Tensor, max_grad_norm: float, clock: Clock = no_clock
) -> float:
    """Leave exactly this loss's gradient, clipped, in the local model's .grad; return its norm
    before clipping.

    1. clear the local gradients (so nothing from an earlier rollout remains)
    2. backward: the local gradients are this rollout's, and only this rollout's
    3. rescale them so that their norm is at most max_grad_norm
    """
    with clock("clip"):
        local_model.zero_grad(set_to_none=True)
    with clock("backward"):
        loss.backward()
    with clock("clip"):
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


def annealed_lr(lr: float, anneal_steps: int | None, steps: int) -> float:
    """The learning rate after `steps` agent steps: lr, or with anneal_steps its linear decay to 0
    at that many steps (the A3C paper's schedule)."""
    if anneal_steps is None:
        return lr
    return lr * max(0.0, 1.0 - steps / anneal_steps)


class ParameterLink(Protocol):
    """A worker's way to the shared parameters; what differs between the backends.

    LocalLink (below): a model and its optimizer within this process's reach.
    training.hogwild.SharedMemoryLink: the same in shared memory, for worker processes.
    training.ray_backend.ServerLink: a parameter server (a Ray actor), perhaps on another machine.
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


class LocalLink:
    """The plainest ParameterLink: a shared model and its optimizer within this process's reach
    (in shared memory for child processes). The notebooks and the profiler run worker_step on it.

    lr: a function of the run's steps giving the learning rate of each push (None: the optimizer's).
    """

    def __init__(self, shared_model: ActorCritic, optimizer, lr: Callable[[int], float] | None = None):
        self.shared_model, self.optimizer, self.lr = shared_model, optimizer, lr
        self.steps, self.updates, self.pulled_at = 0, 0, 0
        self.records: list[dict[str, Any]] = []

    @property
    def architecture(self) -> dict[str, Any]:
        return self.shared_model.architecture

    def stopped(self) -> bool:
        return False

    def wait(self, timeout: float) -> bool:
        return False

    def pull(self, model: torch.nn.Module) -> None:
        self.pulled_at = self.updates
        sync_from_shared(model, self.shared_model)

    def push(self, model: torch.nn.Module, steps: int) -> tuple[int, int]:
        lr = self.lr(self.steps) if self.lr is not None else None
        apply_gradient(self.shared_model, self.optimizer, [p.grad for p in model.parameters()], lr)
        staleness = self.updates - self.pulled_at
        self.steps, self.updates = self.steps + steps, self.updates + 1
        return self.steps, staleness

    def send(self, record: dict[str, Any]) -> None:
        self.records.append(record)


class StepResult(NamedTuple):
    """What one worker_step did: its rollout and the episodes that ended in it, the loss, the
    gradient's norm before clipping, the run's steps after the push and the gradient's staleness."""

    rollout: Rollout
    episodes: list[Episode]
    loss: A3CLoss
    grad_norm: float
    steps: int
    staleness: int


def worker_step(
    local_model: ActorCritic,
    runner: EnvRunner,
    link: ParameterLink,
    rollout_steps: int,
    max_grad_norm: float,
    clock: Clock = no_clock,
    **loss_coefficients: float,
) -> StepResult:
    """One pass of an A3C worker: pull, roll out, one rollout's gradient, push.

    loss_coefficients: rollout_loss's (gamma, gae_lambda, entropy_coef, value_coef).
    clock: times the parts "sync" (the pull), "rollout", "loss", "backward", "clip" and
    "optimizer" (the push); the profiler splits the rollout's time further with hooks.
    """
    with clock("sync"):
        link.pull(local_model)
    with clock("rollout"):
        rollout, episodes = collect_rollout(local_model, runner, rollout_steps)
    with clock("loss"):
        loss = rollout_loss(rollout, **loss_coefficients)
    grad_norm = local_gradient(local_model, loss.total, max_grad_norm, clock)
    with clock("optimizer"):
        steps, staleness = link.push(local_model, rollout.steps)
    return StepResult(rollout, episodes, loss, grad_norm, steps, staleness)
