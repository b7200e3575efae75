"""Evaluation: play whole episodes with a trained network and report the raw game scores.

    result = evaluate("runs/pong/checkpoint.pt", episodes=10)
    print(result.summary())            # mean, std, min, max of the raw (unclipped) scores

Evaluation plays the greedy policy (the most probable action) by default, and is always bounded:
an episode is cut after `max_steps_per_episode` agent steps. The original course's test process
could wait forever in Breakout when the greedy policy never pressed FIRE; the course's environments
press FIRE at each life's start (twice, as a sticky action can swallow one press), and the cap makes
sure no other stuck policy can stall either.

The course's protocol, for every Atari number it quotes. It takes sticky actions from Machado et
al. 2018's recommendations but not their statistic (the mean of the learning agent's last 100
training episodes at fixed frame budgets, with no game-specific knowledge): it scores a greedy
policy, and it uses game-specific choices: the minimal action set, FIRE pressed at each life's
start, up to 30 random no-ops at each game's start, and (the breakout preset) a lost life as an
episode's end for the returns and the LSTM state.
- sticky actions 0.25 in training and in evaluation (envs.STICKY_ACTIONS, ALE v5's own default):
  each emulator frame (4 per agent step), the emulator repeats the previous action with
  probability 0.25. Without them Pong is deterministic: a greedy policy replays one fixed game per
  no-op start (at most 30), and scores far above what it holds under sticky actions. Such figures
  may be shown, labelled "deterministic", never as a headline;
- full games: every life, up to the game's own end (the episode cap is a safety net whose hits
  are counted as "capped"), from up to 30 random no-ops; the raw game score, never clipped;
- 10 games per evaluation, the greedy policy (the most probable action): greedy is what a trained
  agent is judged by here, and under sticky actions it no longer replays one game; sampling would
  add the policy's own exploration noise to every score;
- two statistics, each named where it is quoted: the agent steps (then the training time) of the
  first of two consecutive evaluations whose means reach the target, so that one lucky evaluation
  does not count, and beside it Machado et al.'s, the mean of the last 100 training games (sampled
  actions) at fixed agent-step budgets (benchmarks/time_to_score.py reports both); comparisons
  are run on independent seeds (benchmarks/compare.py).

Each evaluation episode is reset with its own seed, so its no-op start and its sticky draws differ.

`evaluation_loop` is the evaluator of training (eval_mode "live"): every `eval_interval_s`
seconds it copies the shared weights and evaluates them while the workers go on learning.
`score_snapshots` scores the snapshots that training saved instead (eval_mode "after"), once the
workers have stopped, several at a time.
"""

from __future__ import annotations

import functools
import math
import multiprocessing
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import gymnasium as gym
import numpy as np
import torch

from a3c_course.a3c.envs import STICKY_ACTIONS, frame_options, is_atari, make_env, resolve_env_id
from a3c_course.a3c.model import ActorCritic, choose_action
from a3c_course.training.checkpoint import (
    BEST_CHECKPOINT_NAME,
    Checkpoint,
    load_checkpoint,
    model_from_checkpoint,
    save_checkpoint,
)
from a3c_course.training.config import TrainConfig
from a3c_course.training.processes import child_setup
from a3c_course.training.seeds import evaluation_seed

DEFAULT_MAX_STEPS_PER_EPISODE = 10_000


@dataclass
class Evaluation:
    """The outcome of evaluation episodes: raw game scores, lengths in agent steps, and whether each
    episode was cut by the step cap (or a time limit) rather than ended by the game."""

    scores: list[float] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    capped: list[bool] = field(default_factory=list)
    interrupted: bool = False  # stopped early by should_stop: fewer episodes than asked

    @property
    def mean(self) -> float:
        return sum(self.scores) / len(self.scores) if self.scores else math.nan

    @property
    def std(self) -> float:
        """Population standard deviation (0 for a single episode)."""
        if not self.scores:
            return math.nan
        mean = self.mean
        return math.sqrt(sum((s - mean) ** 2 for s in self.scores) / len(self.scores))

    @property
    def min(self) -> float:
        return min(self.scores) if self.scores else math.nan

    @property
    def max(self) -> float:
        return max(self.scores) if self.scores else math.nan

    def summary(self) -> str:
        text = (
            f"{len(self.scores)} episodes: mean {self.mean:.2f}, std {self.std:.2f}, "
            f"min {self.min:.2f}, max {self.max:.2f}"
        )
        if any(self.capped):
            text += f" ({sum(self.capped)} cut at the step cap)"
        return text


def evaluation_env(
    game: str, max_steps_per_episode: int, sticky_actions: float = STICKY_ACTIONS, **options
) -> gym.Env:
    """An environment whose episodes end after at most max_steps_per_episode agent steps.

    The cap is a time limit inside the statistics wrapper, so a cut episode still reports its raw
    score. A task with its own, shorter limit (CartPole-v1: 500) keeps it.
    """
    env_id = resolve_env_id(game)
    own_limit = gym.registry[env_id].max_episode_steps
    limit = max_steps_per_episode if own_limit is None else min(own_limit, max_steps_per_episode)
    if is_atari(env_id):
        options["sticky_actions"] = sticky_actions
    return make_env(game, max_episode_steps=limit, **options)


def evaluate(
    model: ActorCritic | Checkpoint | str | os.PathLike,
    game: str | None = None,
    episodes: int = 10,
    *,
    greedy: bool = True,
    max_steps_per_episode: int = DEFAULT_MAX_STEPS_PER_EPISODE,
    seed: int = 0,
    sticky_actions: float = STICKY_ACTIONS,
    should_stop: Callable[[], bool] | None = None,
    parallel: int = 10,
) -> Evaluation:
    """Play `episodes` episodes and return their raw scores.

    model: a network, a loaded Checkpoint, or a checkpoint's path.
    game: the game to play; by default a checkpoint's own game (a model needs it). With a
        checkpoint, a different game is an error.
    greedy: the most probable action (True) or a sample from the policy (False).
    max_steps_per_episode: the cap, in agent steps, after which an episode is cut.
    seed: episode k is reset with seed + k; sampled actions (greedy False) draw from a generator
        seeded with it.
    should_stop: checked every 100 steps; when it returns True the evaluation stops early and the
        result holds the finished episodes, with interrupted=True.
    parallel: how many episodes are played at once, with one batched forward pass per step (the
        network costs far less per frame in a batch). Greedy scores are those of playing the
        episodes one at a time (up to float rounding, which can only matter in an exact tie).
    """
    if episodes < 1:
        raise ValueError(f"episodes must be at least 1, got {episodes}")
    if parallel < 1:
        raise ValueError(f"parallel must be at least 1, got {parallel}")
    if max_steps_per_episode < 1:
        raise ValueError(f"max_steps_per_episode must be at least 1, got {max_steps_per_episode}")
    if not isinstance(model, torch.nn.Module):
        checkpoint = model if isinstance(model, Checkpoint) else load_checkpoint(model)
        game = game or checkpoint.config.game
        model = model_from_checkpoint(checkpoint, expect_game=game)
    if game is None:
        raise ValueError("evaluate needs game=... when given a model rather than a checkpoint")
    # sampled actions come from a generator seeded like the games: the same call, the same scores
    generator = None if greedy else torch.Generator().manual_seed(seed)
    choose = functools.partial(choose_action, greedy=greedy, generator=generator)
    slots = min(episodes, parallel)
    fits = frame_options(model.obs_shape)  # the frame size the network was trained on
    envs = [
        evaluation_env(game, max_steps_per_episode, sticky_actions, **fits) for _ in range(slots)
    ]
    try:
        with torch.no_grad():
            return _play_batched(model, envs, episodes, choose, seed, should_stop)
    finally:
        for env in envs:
            env.close()


def _play_batched(model, envs, episodes, choose, seed, should_stop) -> Evaluation:
    """Play episodes 0..episodes-1 on a pool of environments, one batched forward pass per step.

    Each slot plays one episode at a time; when it ends, the slot starts the next episode not yet
    begun. Episode k is reset with seed + k wherever it runs, so the episodes are the same as if
    they were played one after the other; the results are listed in episode order.
    """
    finished: dict[int, tuple[float, int, bool]] = {}
    episode_of = list(range(len(envs)))  # the episode each slot plays (None: the slot is done)
    next_episode = len(envs)
    obs = [env.reset(seed=seed + k)[0] for k, env in enumerate(envs)]
    h, c = model.initial_state(len(envs))
    step = 0
    while len(finished) < episodes:
        if should_stop is not None and step % 100 == 0 and should_stop():
            return _evaluation(finished, interrupted=True)
        active = [i for i, k in enumerate(episode_of) if k is not None]
        out = model(torch.from_numpy(np.stack([obs[i] for i in active])), (h[active], c[active]))
        h[active], c[active] = out.state
        for i, action in zip(active, choose(out.logits).tolist(), strict=True):
            obs[i], _, terminated, truncated, info = envs[i].step(action)
            if not (terminated or truncated):
                continue
            episode = info["episode"]
            finished[episode_of[i]] = (float(episode["r"]), int(episode["l"]), not terminated)
            h[i], c[i] = 0.0, 0.0
            episode_of[i] = next_episode if next_episode < episodes else None
            if episode_of[i] is not None:
                obs[i] = envs[i].reset(seed=seed + next_episode)[0]
                next_episode += 1
        step += 1
    return _evaluation(finished, interrupted=False)


def _evaluation(finished: dict[int, tuple[float, int, bool]], interrupted: bool) -> Evaluation:
    result = Evaluation(interrupted=interrupted)
    for k in sorted(finished):
        score, length, capped = finished[k]
        result.scores.append(score)
        result.lengths.append(length)
        result.capped.append(capped)
    return result


def evaluation_loop(
    config: TrainConfig, link, best_mean: float | None = None, first_round: int = 0
) -> None:
    """The evaluator of training (eval_mode "live"): every config.eval_interval_s seconds, pull the
    shared weights through link (worker.ParameterLink), evaluate them and send the record; until
    the run stops. The same loop runs in the Hogwild backend's evaluator process and in the Ray
    backend's evaluator actor.

    The evaluated copy that beats best_mean (the best so far; None: any) is saved as best.pt in
    config.out_dir. A3C's policy can slip after its peak, so the last network is not always the
    best one; best.pt keeps the exact weights that earned the score (the shared model has moved on
    by the time an evaluation ends).
    """
    model = ActorCritic(**link.architecture)
    round_index = first_round  # a resumed run's rounds go on: each round has its own games' seeds
    while not link.wait(config.eval_interval_s):
        link.pull(model)
        steps, started = link.steps, time.monotonic()
        result = evaluate(
            model,
            config.game,
            config.eval_episodes,
            max_steps_per_episode=config.eval_max_episode_steps,
            seed=eval_seed(config, round_index),
            sticky_actions=config.sticky_actions,
            should_stop=link.stopped,
        )
        if result.interrupted:
            break
        if best_mean is None or result.mean > best_mean:
            best_mean = result.mean
            save_checkpoint(
                os.path.join(config.out_dir, BEST_CHECKPOINT_NAME),
                model,
                config,
                steps=steps,
                eval_mean=result.mean,
                eval_scores=list(result.scores),
            )
        link.send(_eval_record(result, steps, time.monotonic() - started))
        round_index += 1


def _eval_record(result: Evaluation, steps: int, duration_s: float) -> dict:
    """An evaluation as the trainer records it (see trainer.TrainResult)."""
    return {
        "kind": "eval",
        "worker": "evaluator",
        "steps": steps,
        "mean": result.mean,
        "std": result.std,
        "min": result.min,
        "max": result.max,
        "scores": result.scores,
        "capped": sum(result.capped),
        "duration_s": duration_s,
    }


def eval_seed(config: TrainConfig, round_index: int) -> int:
    """The first game's seed of evaluation round k (seeds.evaluation_seed): apart from the workers'
    seeds, from the other rounds' and from every other run's."""
    return evaluation_seed(config.seed, round_index)


def score_snapshots(
    config: TrainConfig, snapshots: Sequence[str | os.PathLike], first_round: int = 0
) -> Iterator[dict]:
    """Evaluate saved snapshots (checkpoint files) and yield their eval records, in order.

    Each snapshot is played like a live evaluation round (config.eval_episodes greedy episodes, the
    run's sticky actions, its own episode seeds: snapshot k is round first_round + k); the record's
    steps and elapsed_s are the snapshot's own, when training saved it. The snapshots are scored
    several at a time, in one child process per core, started with config.start_method. Closing
    the iterator early (or Ctrl-C) stops the children.
    """
    jobs = [(config, str(path), first_round + k) for k, path in enumerate(snapshots)]
    if not jobs:
        return
    processes = min(len(jobs), os.cpu_count() or 1)
    context = multiprocessing.get_context(config.start_method)
    with context.Pool(processes, initializer=child_setup) as pool:  # exit: terminate()
        yield from pool.imap(_score_snapshot, jobs)


def _score_snapshot(job: tuple[TrainConfig, str, int]) -> dict:
    config, path, round_index = job
    checkpoint = load_checkpoint(path, expect_game=config.game)
    started = time.monotonic()
    result = evaluate(
        checkpoint,
        episodes=config.eval_episodes,
        max_steps_per_episode=config.eval_max_episode_steps,
        seed=eval_seed(config, round_index),
        sticky_actions=config.sticky_actions,
    )
    record = _eval_record(result, int(checkpoint.metadata["steps"]), time.monotonic() - started)
    record["elapsed_s"] = float(checkpoint.metadata["elapsed_s"])
    record["snapshot"] = os.path.basename(path)
    return record
