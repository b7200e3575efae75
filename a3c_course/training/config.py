"""TrainConfig: every setting of a training run, validated, in one place.

The notebooks, the widgets and the command line all build a `TrainConfig`; the trainer, the workers
and the checkpoints all read it. An invalid value fails at once, with a message that names the field,
the value and what is allowed, instead of deep inside a worker process minutes later.

    config = TrainConfig(game="pong", workers=2, max_minutes=10)
    smaller_step = config.replace(lr=5e-4)    # a validated copy (the config is frozen)
    TrainConfig.from_dict(config.to_dict())   # plain data, for checkpoints and JSON

The class body is a table: each field's `Setting` holds its help text, type, bounds or choices, and
command-line flag. Validation and `a3c-course train` (cli/train.py) are loops over that table.

The defaults keep the original course's algorithm (gamma 0.99, lambda 1.0, entropy 0.01, value 0.5,
gradient-norm clip 40, Adam, 20-step rollouts) with more agent steps a second: 8 environments per
worker in one batched forward pass, and a smaller network (model.COURSE_NETWORK); lr 7e-4, on 42x42
frames with sticky actions 0.25. What they reach by agent steps, over five independently seeded
runs, is in benchmarks/README.md; no comparison with the original's settings is claimed.
"""

from __future__ import annotations

import dataclasses
import math
import multiprocessing
import sys
from collections.abc import Callable, Sequence
from dataclasses import MISSING, dataclass, field
from typing import Any

from a3c_course.a3c.envs import FRAME_SIZE, STICKY_ACTIONS, is_atari, resolve_env_id
from a3c_course.a3c.model import ACTIVATIONS, COURSE_NETWORK, ORIGINAL_CONV_BODY, ORIGINAL_NETWORK
from a3c_course.a3c.optim import OPTIMIZERS

# The original course's worker: one environment per worker (the A3C paper's shape) with
# pytorch-a3c's and the original course's 20-step rollouts and Adam at lr 1e-4.
ORIGINAL_WORKER = {"envs_per_worker": 1, "rollout_steps": 20, "lr": 1e-4}
# The original course's settings and network (32 filters, ELU, LSTM 256) on this course's pipeline;
# what still differs from its train.py is listed in notebooks/appendix_original_code.ipynb.
ORIGINAL_COURSE = {**ORIGINAL_WORKER, **ORIGINAL_NETWORK}
# Breakout, the original course's game: a lost life ends the episode for the returns and the LSTM
# state (the game plays on), lr 5e-4 and leaky ReLU, chosen by screening runs (benchmarks/exploratory.md);
# what they reach: benchmarks/README.md, "Breakout: the `breakout` preset's reference runs, five
# independent seeds".
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
# ray: worker actors on a Ray cluster, one parameter server (ray_backend.py; the [cluster] extra).
BACKENDS = ("hogwild", "ray")
RAY_MISSING = "backend 'ray' needs Ray: pip install 'a3c-course[cluster]' (or pip install ray)"


def default_start_method() -> str:
    """ "fork" on Linux (fast: children start with the parent's memory), "spawn" elsewhere.

    macOS offers fork but it is unsafe there with many system libraries; Windows has only spawn.
    """
    if sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods():
        return "fork"
    return "spawn"


@dataclass(frozen=True)
class Setting:
    """Everything about one TrainConfig field but its default: what it means, the values it
    takes, and its command-line flag. Validation, `a3c-course train --help` and the tests read it."""

    help: str  # one line, shown by `a3c-course train --help`
    kind: type  # int, float, str or bool: what the value must be, and how the flag reads it
    low: float | None = None  # numbers: the lower bound
    low_open: bool = False  # True: low itself is not allowed, as in (0, 1]
    high: float | None = None  # numbers: the upper bound (itself allowed)
    choices: tuple[str, ...] | Callable[[], Sequence[str]] = ()  # a callable: this machine's
    says: str = ""  # how an error words what is allowed, where the bounds alone say it less well
    none_means: str = ""  # what None means (`none` on the command line); only these allow None
    aliases: tuple[str, ...] = ()  # short flags besides --the-field-name
    metavar: str = ""  # the flag's placeholder in --help (N, X, BOOL, TEXT unless set)

    @property
    def optional(self) -> bool:
        """Whether None is allowed: exactly where the Setting says what None means."""
        return bool(self.none_means)

    def options(self) -> tuple[str, ...]:
        """The allowed values (empty: any non-empty string)."""
        return tuple(self.choices() if callable(self.choices) else self.choices)

    def allowed(self) -> str:
        """What an error message says is allowed: "an integer >= 1", "in (0, 1]", ..."""
        if self.says:
            return self.says
        if self.kind is bool:
            return "True or False"
        if self.kind is str:
            if not self.choices:
                return "a non-empty string"
            where = " on this machine" if callable(self.choices) else ""
            return f"one of {', '.join(map(repr, self.options()))}{where}"
        if self.low is not None and self.high is not None:
            text = f"in {'(' if self.low_open else '['}{self.low:g}, {self.high:g}]"
        elif self.kind is int:
            text = f"an integer >= {self.low}"
        elif self.low == 0 and self.low_open:
            text = "a positive number"
        elif self.low is not None:
            text = f"a number {'>' if self.low_open else '>='} {self.low:g}"
        else:
            text = "a finite number"
        return text + (", or None" if self.optional else "")

    def check(self, name: str, value: Any) -> Any:
        """value, if allowed (a float field's ints become floats); else ValueError."""
        if value is None and self.optional:
            return None

        def fail(allowed: str) -> None:
            raise ValueError(f"{name} must be {allowed}, got {value!r}")

        if self.kind is bool:
            if not isinstance(value, bool):
                fail(self.allowed())
            return value
        if self.kind is str:
            if not isinstance(value, str) or not value:
                fail("a non-empty string")
            if self.choices and value not in self.options():
                fail(self.allowed())
            return value
        number = int if self.kind is int else (int, float)
        if isinstance(value, bool) or not isinstance(value, number) or not math.isfinite(value):
            fail(self.allowed())
        too_low = self.low is not None and (value < self.low or self.low_open and value == self.low)
        if too_low or (self.high is not None and value > self.high):
            fail(self.allowed())
        return float(value) if self.kind is float else value


def _field(default: Any, help: str, kind: type, default_factory: Any = MISSING, **rules) -> Any:
    """A TrainConfig field with its Setting (`rules`: the Setting's bounds, choices, flag...)."""
    rules.setdefault("metavar", {int: "N", float: "X", bool: "BOOL", str: "TEXT"}[kind])
    setting = Setting(help, kind, **rules)
    return field(default=default, default_factory=default_factory, metadata={"setting": setting})


@dataclass(frozen=True)
class TrainConfig:
    """The settings of one A3C training run. Frozen: make changed copies with `replace(...)`."""

    # fmt: off
    # What to learn, with how many processes.
    game: str = _field(
        "pong", kind=str, metavar="GAME", help="game: pong, breakout, any ALE id, or CartPole-v1",
    )
    workers: int = _field(
        2, kind=int, low=1,
        help="workers, each updating the shared model (processes; Ray actors with backend ray)",
    )
    envs_per_worker: int = _field(
        8, kind=int, low=1,
        help="environments per worker, stepped with one batched forward pass (1 is the paper's A3C)",
    )
    # The algorithm.
    lr: float = _field(
        7e-4, kind=float, low=0, low_open=True, says="a positive number, e.g. 1e-4",
        help="learning rate of the shared optimizer (the original's: 1e-4)",
    )
    lr_anneal_steps: int | None = _field(
        None, kind=int, low=1, none_means="a constant rate",
        help="anneal the learning rate linearly from lr to 0 over this many agent steps, all "
        "workers together (the A3C paper's schedule)",
    )
    gamma: float = _field(
        0.99, kind=float, low=0, low_open=True, high=1, help="discount factor, in (0, 1]",
    )
    gae_lambda: float = _field(
        1.0, kind=float, low=0, high=1,
        help="GAE lambda, in [0, 1] (1: n-step advantages, 0: TD errors)",
    )
    entropy_coef: float = _field(
        0.01, kind=float, low=0, help="weight of the entropy bonus (exploration)",
    )
    value_coef: float = _field(
        0.5, kind=float, low=0, low_open=True, help="weight of the value loss in the total loss",
    )
    max_grad_norm: float = _field(
        40.0, kind=float, low=0, low_open=True,
        help="rescale each rollout's gradient to at most this norm",
    )
    rollout_steps: int = _field(
        20, kind=int, low=1,
        help="steps per rollout: the n of the n-step returns (the original's: 20)",
    )
    optimizer: str = _field(
        "adam", kind=str, choices=tuple(OPTIMIZERS), help="shared optimizer: adam or rmsprop",
    )
    hidden_size: int | None = _field(
        None, kind=int, low=1, none_means="128 for Atari frames, 64 for vector observations",
        help="size of the LSTM's hidden state",
    )
    activation: str = _field(
        COURSE_NETWORK["activation"], kind=str, choices=tuple(ACTIVATIONS),
        help="activation of the conv body: relu (the paper's), elu (the original course's) or "
        "leaky_relu (its units cannot die)",
    )
    conv_filters: int = _field(
        COURSE_NETWORK["conv_filters"], kind=int, low=1,
        help="filters of each of the conv body's four convolutions (the original course's: 32)",
    )
    seed: int = _field(
        0, kind=int, low=0, help="the run's seed: every worker's, environment's and evaluation game's seed derives from it; two runs share none",
    )
    # Environments.
    life_loss_terminal: bool = _field(
        False, kind=bool,
        help="Atari: a lost life ends the episode for the returns and the LSTM state (no "
        "bootstrap across it, the state starts afresh) while the game plays on; scores stay whole "
        "games (the breakout preset turns it on)",
    )
    max_episode_steps: int | None = _field(
        None, kind=int, low=1, none_means="the game's own limit",
        help="cut training episodes after this many agent steps",
    )
    frame_size: int = _field(
        FRAME_SIZE, kind=int, low=16,  # four stride-2 convolutions: at least 1x1 left
        help="Atari: the side of the square grey frame the agent sees (42: pytorch-a3c's and the "
        "original course's; 84: DQN's)",
    )
    sticky_actions: float = _field(
        STICKY_ACTIONS, kind=float, low=0, high=1, says="a probability in [0, 1]",
        help="Atari: probability that the emulator repeats the previous action (Machado et al. "
        "2018's recommendation and ALE v5's default: 0.25; 0 makes each game deterministic, the original "
        "course's)",
    )
    # Budgets: training stops at the first one reached (or on Ctrl-C).
    max_steps: int | None = _field(
        None, kind=int, low=1, none_means="no limit", aliases=("--steps",),
        help="stop after this many agent steps, all workers together",
    )
    max_minutes: float | None = _field(
        30.0, kind=float, low=0, low_open=True, none_means="no limit", aliases=("--minutes",),
        says="a positive number of minutes, or None",
        help="stop after this many minutes of wall time",
    )
    target_score: float | None = _field(
        None, kind=float, none_means="no target",
        help="stop when the mean evaluation score reaches this (without an evaluator: the mean "
        "raw score of the last score_window training episodes)",
    )
    score_window: int = _field(
        20, kind=int, low=1, help="training episodes averaged for the recent score",
    )
    # Evaluation, in its own process, of the shared model with the greedy policy.
    eval_interval_s: float = _field(
        60.0, kind=float, low=0, low_open=True, says="a positive number of seconds",
        help="seconds between evaluations",
    )
    eval_episodes: int = _field(
        10, kind=int, low=0, help="episodes per evaluation (0: no evaluator process)",
    )
    eval_max_episode_steps: int = _field(
        10_000, kind=int, low=1,
        help="cut an evaluation episode after this many agent steps (a stuck agent cannot stall)",
    )
    eval_mode: str = _field(
        "live", kind=str, choices=EVAL_MODES,
        help="live: an evaluator process scores the shared model while the workers train (it "
        "shares the cores with them); after: a snapshot of the weights every eval_interval_s, "
        "scored once training stops (the workers keep every core, and the clock counts training "
        "alone)",
    )
    # Processes and output.
    backend: str = _field(
        "hogwild", kind=str, choices=BACKENDS,
        help="hogwild: worker processes on this machine sharing one model in shared memory; ray: "
        "worker actors on a Ray cluster and a parameter server (pip install "
        "'a3c-course[cluster]')",
    )
    ray_address: str | None = _field(
        None, kind=str, aliases=("--address",), metavar="ADDRESS",
        none_means="the Ray this process has joined, else a new Ray on this machine for the run",
        help="backend ray: the cluster to join (auto, or HOST:PORT of a `ray start --head`)",
    )
    start_method: str = _field(
        MISSING, kind=str, default_factory=default_start_method,
        choices=multiprocessing.get_all_start_methods,
        help="how child processes start: fork (Linux default) or spawn",
    )
    out_dir: str | None = _field(
        None, kind=str, none_means="runs/<game>", aliases=("--out",), metavar="DIR",
        help="folder for the checkpoint and metrics",
    )
    # fmt: on

    def __post_init__(self) -> None:
        for name, setting in self.settings().items():  # each field by its Setting
            object.__setattr__(self, name, setting.check(name, getattr(self, name)))
        # The rules that involve the game's name or several fields.
        try:
            resolve_env_id(self.game)
        except ValueError as error:
            raise ValueError(f"game: {error}") from None
        if self.eval_mode == "after" and self.eval_episodes > 0 and self.target_score is not None:
            raise ValueError(
                f"target_score must be None with eval_mode 'after', got {self.target_score!r}: "
                "its evaluations come only once training has stopped (use eval_mode 'live')"
            )
        if self.ray_address is not None and self.backend != "ray":
            raise ValueError(
                f"ray_address must be None with backend {self.backend!r}, got "
                f"{self.ray_address!r}: a cluster address needs backend 'ray'"
            )
        if self.out_dir is None:
            object.__setattr__(self, "out_dir", f"runs/{self.game.lower().replace('/', '_')}")

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
    def settings(cls) -> dict[str, Setting]:
        """Each field's Setting, in the fields' order: the table the class body reads as."""
        return {f.name: f.metadata["setting"] for f in dataclasses.fields(cls)}

    @classmethod
    def field_help(cls) -> dict[str, str]:
        """Each field's one-line description (used by the command line's --help)."""
        return {name: setting.help for name, setting in cls.settings().items()}


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
