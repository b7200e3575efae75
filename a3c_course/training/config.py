"""TrainConfig: every setting of a training run, validated, in one place.

The notebooks, the widgets and the command line all build a `TrainConfig`; the trainer, the workers
and the checkpoints all read it. An invalid value fails at once, with a message that names the field,
the value and what is allowed, instead of deep inside a worker process minutes later.

    config = TrainConfig(game="pong", workers=2, max_minutes=10)
    faster = config.replace(lr=5e-4)          # a validated copy (the config is frozen)
    TrainConfig.from_dict(config.to_dict())   # plain data, for checkpoints and JSON

The defaults keep the original course's algorithm (gamma 0.99, lambda 1.0, entropy 0.01, value 0.5,
gradient-norm clip 40, Adam, 20-step rollouts: pytorch-a3c's and the original course's settings; the
A3C paper used t_max 5 and shared RMSProp on Atari) and run it faster: 8 environments per worker
stepped with one batched forward pass (160 samples per update; synchronous inside a worker,
asynchronous across workers), lr 7e-4 (A2C's in the OpenAI baselines' Atari runs), and a smaller
network (ReLU, 16 filters, LSTM 128: model.COURSE_NETWORK). Atari games are played under the
field's protocol, sticky actions 0.25 (envs.STICKY_ACTIONS), on 42x42 frames (envs.FRAME_SIZE).
What these settings reach, and in how long, is measured side by side in benchmarks/README.md, with
the command, date and host of every figure.
Each field's help text (also shown by `a3c-course train --help`) sits in its metadata.
"""

from __future__ import annotations

import dataclasses
import math
import multiprocessing
import sys
from dataclasses import dataclass, field
from typing import Any

from a3c_course.a3c.envs import FRAME_SIZE, STICKY_ACTIONS, is_atari, resolve_env_id
from a3c_course.a3c.model import ACTIVATIONS, COURSE_NETWORK, ORIGINAL_CONV_BODY, ORIGINAL_NETWORK
from a3c_course.a3c.optim import OPTIMIZERS

# The original course's worker: the A3C paper's shape (one environment per worker) with pytorch-a3c's
# and the original course's settings: 20-step rollouts, Adam lr 1e-4. (The paper itself used t_max 5,
# shared RMSProp and learning rates sampled per run on Atari.)
ORIGINAL_WORKER = {"envs_per_worker": 1, "rollout_steps": 20, "lr": 1e-4}
# The original course's algorithm and network (32 filters, ELU, LSTM 256) on the course's pipeline.
# What differs from the original's train.py: its faults are fixed (one rollout's gradient per
# update, truncation bootstraps, shared optimizer state created up front, rollouts of 20 agent
# steps counted as steps); the environments are the course's (Gymnasium's AtariPreprocessing with
# no-op starts and max-pooling, FIRE at each life's start, rewards clipped, no running
# normaliser: frames standardised in the network; sticky actions 0.25 unless set to 0); the
# evaluator is bounded and scores whole games; and the game is Pong unless set.
ORIGINAL_COURSE = {**ORIGINAL_WORKER, **ORIGINAL_NETWORK}
# Breakout, the original course's game, as it was measured (benchmarks/README.md): 2 environments
# per worker (the defaults of that day; the 8 of today's were not measured on Breakout), a lost life
# ends the episode for the returns (the game plays on; scores stay whole games), lr 5e-4 and leaky
# ReLU. At 7e-4 (A2C's rate in the baselines' Atari runs) the runs that took off learnt fastest,
# but most stalled at random play, their conv body falling silent (with ReLU one run's last conv
# layer died entirely: diagnostics.py); at 5e-4 six runs of six learnt, the three measured ones
# passing 100 in 35-40 minutes on two cores.
BREAKOUT = {
    "game": "breakout",
    "envs_per_worker": 2,
    "life_loss_terminal": True,
    "lr": 5e-4,
    "activation": "leaky_relu",
}
# Named settings: `--preset NAME` on the command line (a flag given beside it wins) and the panel.
PRESETS: dict[str, dict[str, Any]] = {
    "breakout": BREAKOUT,
    "original-course": ORIGINAL_COURSE,
    "original-worker": ORIGINAL_WORKER,
}


def preset(name: str) -> dict[str, Any]:
    """The settings of a named preset (a copy)."""
    if name not in PRESETS:
        raise ValueError(f"preset: no preset {name!r}; the presets are {', '.join(PRESETS)}")
    return dict(PRESETS[name])


EVAL_MODES = ("live", "after")
# hogwild: worker processes on this machine, one shared model in shared memory (hogwild.py);
# ray: worker actors on a Ray cluster, one parameter server (cluster.py; the [cluster] extra).
BACKENDS = ("hogwild", "ray")
RAY_MISSING = "backend 'ray' needs Ray: pip install 'a3c-course[cluster]' (or pip install ray)"


def default_start_method() -> str:
    """ "fork" on Linux (fast: children start with the parent's memory), "spawn" elsewhere.

    macOS offers fork but it is unsafe there with many system libraries; Windows has only spawn.
    """
    if sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods():
        return "fork"
    return "spawn"


def _field(default: Any, help: str, **kwargs) -> Any:
    return field(default=default, metadata={"help": help}, **kwargs)


@dataclass(frozen=True)
class TrainConfig:
    """The settings of one A3C training run. Frozen: make changed copies with `replace(...)`."""

    # What to learn, with how many processes.
    game: str = _field("pong", "game: pong, breakout, any ALE id, or CartPole-v1")
    workers: int = _field(
        2, "workers, each updating the shared model (processes; Ray actors with backend ray)"
    )
    envs_per_worker: int = _field(
        8, "environments per worker, stepped with one batched forward pass (1 is the paper's A3C)"
    )
    # The algorithm.
    lr: float = _field(7e-4, "learning rate of the shared optimizer (the original's: 1e-4)")
    lr_anneal_steps: int | None = _field(
        None,
        "anneal the learning rate linearly from lr to 0 over this many agent steps, all workers "
        "together (the A3C paper's schedule); None: a constant rate",
    )
    gamma: float = _field(0.99, "discount factor, in (0, 1]")
    gae_lambda: float = _field(1.0, "GAE lambda, in [0, 1] (1: n-step advantages, 0: TD errors)")
    entropy_coef: float = _field(0.01, "weight of the entropy bonus (exploration)")
    value_coef: float = _field(0.5, "weight of the value loss in the total loss")
    max_grad_norm: float = _field(40.0, "rescale each rollout's gradient to at most this norm")
    rollout_steps: int = _field(
        20, "steps per rollout: the n of the n-step returns (the original's: 20)"
    )
    optimizer: str = _field("adam", "shared optimizer: adam or rmsprop")
    hidden_size: int | None = _field(
        None, "LSTM size (default: 128 for Atari frames, 64 for vector observations)"
    )
    activation: str = _field(
        COURSE_NETWORK["activation"],
        "activation of the conv body: relu (the paper's), elu (the original course's) or "
        "leaky_relu (its units cannot die)",
    )
    conv_filters: int = _field(
        COURSE_NETWORK["conv_filters"],
        "filters of each of the conv body's four convolutions (the original course's: 32)",
    )
    seed: int = _field(0, "random seed; worker w, environment e uses seed + offset(w, e)")
    # Environments.
    life_loss_terminal: bool = _field(
        False,
        "Atari: a lost life ends the episode for the returns (no bootstrap across it) while the "
        "game plays on; scores stay whole games (the breakout preset turns it on)",
    )
    max_episode_steps: int | None = _field(
        None, "cut training episodes after this many agent steps (default: the game's own limit)"
    )
    frame_size: int = _field(
        FRAME_SIZE,
        "Atari: the side of the square grey frame the agent sees (42: pytorch-a3c's and the "
        "original course's; 84: DQN's)",
    )
    sticky_actions: float = _field(
        STICKY_ACTIONS,
        "Atari: probability that the emulator repeats the previous action (the field's protocol "
        "and ALE v5's default: 0.25; 0 makes each game deterministic, the original course's)",
    )
    # Budgets: training stops at the first one reached (or on Ctrl-C).
    max_steps: int | None = _field(None, "stop after this many agent steps, all workers together")
    max_minutes: float | None = _field(30.0, "stop after this many minutes of wall time")
    target_score: float | None = _field(
        None,
        "stop when the mean evaluation score reaches this (without an evaluator: the mean raw "
        "score of the last score_window training episodes)",
    )
    score_window: int = _field(20, "training episodes averaged for the recent score")
    # Evaluation, in its own process, of the shared model with the greedy policy.
    eval_interval_s: float = _field(60.0, "seconds between evaluations")
    eval_episodes: int = _field(10, "episodes per evaluation (0: no evaluator process)")
    eval_max_episode_steps: int = _field(
        10_000, "cut an evaluation episode after this many agent steps (a stuck agent cannot stall)"
    )
    eval_mode: str = _field(
        "live",
        "live: an evaluator process scores the shared model while the workers train (it shares "
        "the cores with them); after: a snapshot of the weights every eval_interval_s, scored "
        "once training stops (the workers keep every core, and the clock counts training alone)",
    )
    # Processes and output.
    backend: str = _field(
        "hogwild",
        "hogwild: worker processes on this machine sharing one model in shared memory; ray: worker "
        "actors on a Ray cluster and a parameter server (pip install 'a3c-course[cluster]')",
    )
    ray_address: str | None = _field(
        None,
        "backend ray: the cluster to join (auto, or HOST:PORT of a `ray start --head`); none: "
        "the Ray this process has joined, else a new Ray on this machine for the run",
    )
    start_method: str = _field(
        dataclasses.MISSING,
        "how child processes start: fork (Linux default) or spawn",
        default_factory=default_start_method,
    )
    out_dir: str | None = _field(
        None, "folder for the checkpoint and metrics (default: runs/<game>)"
    )

    def __post_init__(self) -> None:
        _check_str(self, "game")
        try:
            resolve_env_id(self.game)
        except ValueError as error:
            raise ValueError(f"game: {error}") from None
        _check_int(self, "workers", low=1)
        _check_int(self, "envs_per_worker", low=1)
        _check_int(self, "frame_size", low=16)  # four stride-2 convolutions: at least 1x1 left
        _check_float(self, "lr", "a positive number, e.g. 1e-4", low=0.0, low_open=True)
        _check_int(self, "lr_anneal_steps", low=1, optional=True)
        _check_float(self, "gamma", "in (0, 1]", low=0.0, high=1.0, low_open=True)
        _check_float(self, "gae_lambda", "in [0, 1]", low=0.0, high=1.0)
        _check_float(self, "entropy_coef", "a number >= 0", low=0.0)
        _check_float(self, "value_coef", "a positive number", low=0.0, low_open=True)
        _check_float(self, "max_grad_norm", "a positive number", low=0.0, low_open=True)
        _check_int(self, "rollout_steps", low=1)
        _check_str(self, "optimizer")
        if self.optimizer not in OPTIMIZERS:
            _fail(self, "optimizer", f"one of {', '.join(map(repr, OPTIMIZERS))}")
        _check_int(self, "hidden_size", low=1, optional=True)
        _check_str(self, "activation")
        if self.activation not in ACTIVATIONS:
            _fail(self, "activation", f"one of {', '.join(map(repr, ACTIVATIONS))}")
        _check_int(self, "conv_filters", low=1)
        _check_int(self, "seed", low=0)
        if not isinstance(self.life_loss_terminal, bool):
            _fail(self, "life_loss_terminal", "True or False")
        _check_int(self, "max_episode_steps", low=1, optional=True)
        _check_float(self, "sticky_actions", "a probability in [0, 1]", low=0.0, high=1.0)
        _check_int(self, "max_steps", low=1, optional=True)
        _check_float(
            self, "max_minutes", "a positive number of minutes, or None", low=0.0, low_open=True,
            optional=True,
        )  # fmt: skip
        _check_float(self, "target_score", "a finite number, or None", optional=True)
        _check_int(self, "score_window", low=1)
        _check_float(
            self, "eval_interval_s", "a positive number of seconds", low=0.0, low_open=True
        )
        _check_int(self, "eval_episodes", low=0)
        _check_int(self, "eval_max_episode_steps", low=1)
        _check_str(self, "eval_mode")
        if self.eval_mode not in EVAL_MODES:
            _fail(self, "eval_mode", f"one of {', '.join(map(repr, EVAL_MODES))}")
        if self.eval_mode == "after" and self.eval_episodes > 0 and self.target_score is not None:
            raise ValueError(
                f"target_score must be None with eval_mode 'after', got {self.target_score!r}: "
                "its evaluations come only once training has stopped (use eval_mode 'live')"
            )
        _check_str(self, "backend")
        if self.backend not in BACKENDS:
            _fail(self, "backend", f"one of {', '.join(map(repr, BACKENDS))}")
        if self.ray_address is not None:
            _check_str(self, "ray_address")
            if self.backend != "ray":
                raise ValueError(
                    f"ray_address must be None with backend {self.backend!r}, got "
                    f"{self.ray_address!r}: a cluster address needs backend 'ray'"
                )
        _check_str(self, "start_method")
        available = multiprocessing.get_all_start_methods()
        if self.start_method not in available:
            _fail(self, "start_method", f"one of {', '.join(map(repr, available))} on this machine")
        if self.out_dir is None:
            object.__setattr__(self, "out_dir", f"runs/{self.game.lower().replace('/', '_')}")
        else:
            _check_str(self, "out_dir")

    @property
    def env_id(self) -> str:
        """The Gymnasium id of the game ("pong" -> "ALE/Pong-v5")."""
        return resolve_env_id(self.game)

    @property
    def network_options(self) -> dict[str, Any]:
        """The network's settings, for `ActorCritic.for_env(env, **config.network_options)`."""
        return {
            "hidden_size": self.hidden_size,
            "activation": self.activation,
            "conv_filters": self.conv_filters,
        }

    @property
    def total_envs(self) -> int:
        return self.workers * self.envs_per_worker

    def replace(self, **changes: Any) -> TrainConfig:
        """A copy with some fields changed, validated like a new config."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The fields as plain Python values (str, int, float, None): safe for JSON and checkpoints."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> TrainConfig:
        """Rebuild a config from `to_dict()`'s output. Unknown keys are an error.

        A start method that this machine lacks (a checkpoint made with fork, loaded on Windows) is
        replaced by this machine's default: it says how to run, not what was learnt.
        """
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - names)
        if unknown:
            raise ValueError(
                f"unknown TrainConfig field(s): {', '.join(unknown)}; known: {', '.join(sorted(names))}"
            )
        values = dict(values)
        if values.get("start_method") not in multiprocessing.get_all_start_methods():
            values.pop("start_method", None)
        if "activation" not in values:
            values.update(_original_network(values))
        return cls(**values)

    @classmethod
    def field_help(cls) -> dict[str, str]:
        """Each field's one-line description (used by the command line's --help)."""
        return {f.name: f.metadata["help"] for f in dataclasses.fields(cls)}


def _original_network(values: dict[str, Any]) -> dict[str, Any]:
    """The network settings that a config saved before the network options existed stood for: the
    original course's conv body, and its LSTM of 256 for frames where the size was left to the
    default (None)."""
    network = dict(ORIGINAL_CONV_BODY)
    try:
        frames = is_atari(resolve_env_id(values.get("game", "pong")))
    except (TypeError, ValueError):
        frames = False  # an invalid game: __post_init__ says so
    if frames and values.get("hidden_size") is None:
        network["hidden_size"] = ORIGINAL_NETWORK["hidden_size"]
    return network


def _fail(config: TrainConfig, name: str, allowed: str) -> None:
    raise ValueError(f"{name} must be {allowed}, got {getattr(config, name)!r}")


def _check_str(config: TrainConfig, name: str) -> None:
    if not isinstance(getattr(config, name), str) or not getattr(config, name):
        _fail(config, name, "a non-empty string")


def _check_int(config: TrainConfig, name: str, low: int, optional: bool = False) -> None:
    value = getattr(config, name)
    if value is None and optional:
        return
    allowed = f"an integer >= {low}" + (", or None" if optional else "")
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        _fail(config, name, allowed)


def _check_float(
    config: TrainConfig,
    name: str,
    allowed: str,
    low: float = -math.inf,
    high: float = math.inf,
    low_open: bool = False,
    optional: bool = False,
) -> None:
    value = getattr(config, name)
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        _fail(config, name, allowed)
    if value < low or (low_open and value == low) or value > high:
        _fail(config, name, allowed)
    object.__setattr__(config, name, float(value))
