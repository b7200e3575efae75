"""One A3C worker: collect a rollout with a local copy of the shared model, then update the shared model.

The original course's `train()` rebuilt, with its faults fixed. One pass of the worker's loop:

    sync_from_shared(local, shared)              copy the shared weights into the local model
    rollout, episodes = collect_rollout(...)     n steps in each of the worker's environments
    loss = update_shared(local, shared, ...)     loss -> gradient (one rollout's) -> shared optimizer

The pieces are plain functions, so a notebook can call them in its own process, one at a time,
without any multiprocessing; `run_worker` strings them together inside a child process.

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

import os
import signal
import sys
import time
import traceback
from dataclasses import dataclass
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np
import torch

from .config import TrainConfig
from .envs import is_atari, make_env
from .model import ActorCritic, RecurrentState, reset_state_where, sample_action
from .returns import A3CLoss, a3c_loss, gae, n_step_returns

# How often a worker sends its averaged losses to the parent (episodes are sent as they end).
REPORT_INTERVAL_S = 1.0


class Episode(NamedTuple):
    """A finished episode: its raw game score (unclipped) and its length in agent steps."""

    score: float
    length: int
    env_index: int


@dataclass
class Rollout:
    """T steps of B environments; every tensor is (T, B), in the contract of `a3c_course.returns`.

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


def update_shared(
    local_model: torch.nn.Module,
    shared_model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    loss: torch.Tensor,
    max_grad_norm: float,
) -> float:
    """Apply exactly this loss's gradient to the shared model; return the gradient norm before clipping.

    1. clear the local gradients (so nothing from an earlier rollout remains)
    2. backward: the local gradients are this rollout's, and only this rollout's
    3. rescale them so that their norm is at most max_grad_norm
    4. hand them to the shared parameters (every time: no "only if None" shortcut)
    5. one step of the shared optimizer
    """
    local_model.zero_grad(set_to_none=True)
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(local_model.parameters(), max_grad_norm)
    for local, shared in zip(local_model.parameters(), shared_model.parameters(), strict=True):
        shared.grad = local.grad
    optimizer.step()
    return float(norm)


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


def worker_loop(
    worker_id: int,
    config: TrainConfig,
    shared_model: ActorCritic,
    optimizer: torch.optim.Optimizer,
    stop_event,
    step_counter,
    queue,
) -> None:
    """Rollout, update, report; until stop_event is set or the step budget is spent."""
    torch.manual_seed(config.seed + 1 + worker_id)
    local_model = ActorCritic(**shared_model.architecture)
    runner = EnvRunner(
        make_worker_envs(config, worker_id), shared_model.hidden_size, config.life_loss_terminal
    )
    losses = _LossAverage()
    next_report = time.monotonic() + REPORT_INTERVAL_S
    try:
        while not stop_event.is_set():
            sync_from_shared(local_model, shared_model)
            rollout, episodes = collect_rollout(local_model, runner, config.rollout_steps)
            loss = rollout_loss(rollout, config)
            if config.lr_anneal_steps is not None:  # this process's copy of the optimizer's rate
                for group in optimizer.param_groups:
                    group["lr"] = annealed_lr(config, step_counter.value)
            grad_norm = update_shared(
                local_model, shared_model, optimizer, loss.total, config.max_grad_norm
            )
            with step_counter.get_lock():
                step_counter.value += rollout.steps
                steps = step_counter.value
            for episode in episodes:
                queue.put(
                    {
                        "kind": "episode",
                        "worker": worker_id,
                        "steps": steps,
                        "score": episode.score,
                        "length": episode.length,
                    }
                )
            losses.add({**_floats(loss), "grad_norm": grad_norm})
            if time.monotonic() >= next_report:
                queue.put({"kind": "loss", "worker": worker_id, "steps": steps, **losses.pop()})
                next_report = time.monotonic() + REPORT_INTERVAL_S
            if config.max_steps is not None and steps >= config.max_steps:
                break
        if losses.count:
            queue.put({"kind": "loss", "worker": worker_id, "steps": steps, **losses.pop()})
    finally:
        runner.close()


def child_setup() -> None:
    """First thing in every child process: one thread, and leave Ctrl-C to the parent.

    One intra-op thread per process: the workers already use every core, more threads only fight
    over them (and a forked child of a parent that used a thread pool can hang in it). Ctrl-C in a
    terminal reaches every process of the group; the parent stops the children in order instead.
    """
    torch.set_num_threads(1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class StopOrOrphaned:
    """The parent's stop event, also set once the parent process has died.

    A parent killed outright (SIGKILL, out of memory) cannot set the event; without this check its
    children would train on alone, with nobody to read their results or to stop them.
    """

    def __init__(self, stop_event):
        self.stop_event, self.parent = stop_event, os.getppid()

    def orphaned(self) -> bool:
        return os.getppid() != self.parent

    def is_set(self) -> bool:
        return self.stop_event.is_set() or self.orphaned()

    def wait(self, timeout: float) -> bool:
        """Like Event.wait, checking on the parent every second."""
        deadline = time.monotonic() + timeout
        while not self.stop_event.wait(min(1.0, max(0.0, deadline - time.monotonic()))):
            if self.orphaned():
                return True
            if time.monotonic() >= deadline:
                return False
        return True


def report_crash(queue, worker_id: int | str) -> None:
    """Send the current exception's traceback to the parent, then exit with status 1."""
    queue.put({"kind": "error", "worker": worker_id, "traceback": traceback.format_exc()})
    queue.close()
    queue.join_thread()  # make sure the message left this process before it exits
    sys.exit(1)


def run_worker(
    worker_id: int,
    config: TrainConfig,
    shared_model: ActorCritic,
    optimizer: torch.optim.Optimizer,
    stop_event,
    step_counter,
    queue,
) -> None:
    """The target of a worker process (see trainer.train). On any error the traceback goes to the
    parent through the queue and the process exits with status 1."""
    child_setup()
    stop_event = StopOrOrphaned(stop_event)
    try:
        worker_loop(worker_id, config, shared_model, optimizer, stop_event, step_counter, queue)
    except BaseException:
        report_crash(queue, worker_id)
