"""Agents trained by the course's own trainer, shipped inside the package.

    from a3c_course.lessons import pretrained

    pretrained.available()                 # ["pong", ...]
    model = pretrained.load("pong")        # a ready ActorCritic, in eval mode
    card = pretrained.card("pong")         # how it was trained, and how it scores
    evaluate(pretrained.checkpoint("pong"), episodes=10)

Each agent is an ordinary course checkpoint (`a3c_course/data/<game>.pt`, loaded weights-only)
plus a card (`<game>.json`): the exact training command, seed, package and torch versions, the
machine, the training time, and the evaluation that produced the quoted score, with the command
that reproduces it. The weights are stored in float16, half the size; they load into the float32
network, and the card's scores were measured with the weights as shipped.

The command line: `a3c-course play --pretrained pong --out pong.mp4`,
`a3c-course evaluate --pretrained pong`.
"""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

from a3c_course.a3c.envs import FRAME_SIZE, STICKY_ACTIONS
from a3c_course.a3c.model import ActorCritic
from a3c_course.training.checkpoint import Checkpoint, load_checkpoint, model_from_checkpoint


def data_folder() -> Path:
    """Where the package's data files live: the agents here, reference runs in reference/<game>/."""
    return Path(str(resources.files("a3c_course") / "data"))


def available() -> list[str]:
    """The games with a shipped agent."""
    return sorted(path.stem for path in data_folder().glob("*.pt"))


def path(game: str) -> Path:
    """The shipped checkpoint file of `game`'s agent; ValueError naming the choices if none."""
    if not isinstance(game, str) or game.lower() not in available():
        raise ValueError(
            f"game: no pretrained agent for {game!r}; available: {', '.join(available()) or 'none'}"
        )
    return data_folder() / f"{game.lower()}.pt"


def checkpoint(game: str) -> Checkpoint:
    """The shipped agent as a loaded Checkpoint (for `evaluate`, `load_player`, ...)."""
    return load_checkpoint(path(game), expect_game=game)


def load(game: str) -> ActorCritic:
    """A ready network for `game`, with the shipped weights, in eval mode."""
    return model_from_checkpoint(checkpoint(game))


def card(game: str) -> dict[str, Any]:
    """How the agent was trained and evaluated (see the module's docstring)."""
    return json.loads(path(game).with_suffix(".json").read_text())


def card_sticky_actions(card: dict[str, Any]) -> float:
    """The sticky actions of a shipped agent's card evaluation: its own key, else its command's
    flag, else the course's default (what a command without the flag plays)."""
    evaluation = card["evaluation"]
    if "sticky_actions" in evaluation:
        return float(evaluation["sticky_actions"])
    flag = re.search(r"--sticky-actions[ =]([0-9.]+)", evaluation.get("command", ""))
    return float(flag.group(1)) if flag else STICKY_ACTIONS


def held_out(card: dict[str, Any]) -> dict[str, Any]:
    """The card's score on games that no decision used (its `evaluation_held_out`): the one to
    quote. The card's own `evaluation` chose among snapshots (or, for Pong, when to stop)."""
    return card.get("evaluation_held_out") or card["evaluation"]


def summary(game: str) -> str:
    """One line for a notebook or a terminal: the score on fresh games and the agent steps it
    trained (no minutes: they depend on the machine and its load; the card's note has them)."""
    info = card(game)
    evaluation, training = held_out(info), info["training"]
    size = training["config"].get("frame_size", FRAME_SIZE)  # cards before the option: 42
    return (
        f"{game}: mean score {evaluation['mean']:+.1f} (min {evaluation['min']:+.0f}, max "
        f"{evaluation['max']:+.0f}) over {evaluation['episodes']} "
        f"held-out games (none used to train or choose it), "
        f"greedy, sticky actions {card_sticky_actions(info):g}; trained {training['steps']:,} "
        "agent steps"
        + ("" if size == FRAME_SIZE else f", on {size}x{size} frames")
    )
