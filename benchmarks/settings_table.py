"""What differs between the settings that benchmarks/README.md compares: a markdown table, built
from the settings themselves (TrainConfig, the presets, sb3_time_to_score.py's Zoo settings) so
that the table cannot drift from what ran.

    .venv/bin/python benchmarks/settings_table.py                  # defaults, original course, SB3
    .venv/bin/python benchmarks/settings_table.py --game breakout  # with the breakout preset

Samples per update: the transitions whose gradient one optimizer step applies (one worker's
rollout: environments x steps; SB3's A2C: all 16 environments x 5 steps). Updates per 1,000 agent
steps follow from it. Both the course's pipeline and SB3's AtariWrapper start games with up to 30
random no-ops, skip 4 frames with max-pooling, clip rewards to their sign and use the minimal
action set; the table lists only what differs, and what the reader needs to tell runs apart.
"""

from __future__ import annotations

import argparse
import sys

from sb3_time_to_score import (  # this folder is on sys.path when run as a script
    A2C_DEFAULTS,
    ZOO_ATARI,
)

from a3c_course.a3c.model import default_hidden_size
from a3c_course.training.config import PRESETS, TrainConfig

SB3_SAMPLES = ZOO_ATARI["n_envs"] * A2C_DEFAULTS["n_steps"]


def rate(lr: float) -> str:
    """7e-4, not 0.0007: as the papers write learning rates."""
    return f"{lr:.0e}".replace("e-0", "e-")


SB3_COLUMN = {
    "algorithm": "A2C: synchronous, one learner",
    "optimizer": f"RMSprop (TF-like, eps 1e-5), lr {rate(A2C_DEFAULTS['learning_rate'])}",
    "rollout steps (n-step returns)": str(A2C_DEFAULTS["n_steps"]),
    "environments": f"{ZOO_ATARI['n_envs']} in one learner",
    "samples per update": str(SB3_SAMPLES),
    "updates per 1,000 agent steps": f"{1000 / SB3_SAMPLES:.1f}",
    "gradient clip (global norm)": f"{A2C_DEFAULTS['max_grad_norm']:g}",
    "value-loss weight": f"{ZOO_ATARI['vf_coef']:g}",
    "entropy weight": f"{ZOO_ATARI['ent_coef']:g}",
    "GAE lambda": f"{A2C_DEFAULTS['gae_lambda']:g}",
    "frames": f"84x84 grey, {ZOO_ATARI['frame_stack']} stacked",
    "network": "Nature DQN convs (32-64-64), ReLU, fc 512; no LSTM",
    "a lost life ends the episode": "yes (returns; the game plays on)",
}


def course_column(config: TrainConfig) -> dict[str, str]:
    """The table's rows for one of the course's settings."""
    hidden = config.hidden_size or default_hidden_size(frames=True)
    samples = config.envs_per_worker * config.rollout_steps
    return {
        "algorithm": f"A3C: {config.workers} asynchronous workers (Hogwild), one shared model",
        "optimizer": f"{'Adam' if config.optimizer == 'adam' else config.optimizer}, "
        f"shared, lr {rate(config.lr)}"
        + (f" decayed to 0 over {config.lr_anneal_steps:,}" if config.lr_anneal_steps else ""),
        "rollout steps (n-step returns)": str(config.rollout_steps),
        "environments": f"{config.envs_per_worker} per worker, {config.workers} workers",
        "samples per update": str(samples),
        "updates per 1,000 agent steps": f"{1000 / samples:.1f}",
        "gradient clip (global norm)": f"{config.max_grad_norm:g}",
        "value-loss weight": f"{config.value_coef:g}",
        "entropy weight": f"{config.entropy_coef:g}",
        "GAE lambda": f"{config.gae_lambda:g}",
        "frames": f"{config.frame_size}x{config.frame_size} grey, 1 (the LSTM remembers)",
        "network": f"4 convs of {config.conv_filters} (3x3, stride 2), {config.activation}, "
        f"LSTM {hidden}",
        "a lost life ends the episode": "yes (returns and LSTM state; the game plays on)"
        if config.life_loss_terminal
        else "no",
    }


def settings_table(game: str = "pong") -> str:
    """The markdown table: a row per setting, a column per compared setting."""
    columns = {"course defaults": course_column(TrainConfig(game=game))}
    if game == "breakout":
        columns["`--preset breakout`"] = course_column(TrainConfig(**PRESETS["breakout"]))
    columns["`--preset original-course`"] = course_column(
        TrainConfig(**{**PRESETS["original-course"], "game": game})
    )
    columns["SB3's A2C, RL Zoo's Atari settings"] = SB3_COLUMN
    names = list(columns)
    lines = ["| setting | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for row in SB3_COLUMN:
        lines.append(f"| {row} | " + " | ".join(columns[name][row] for name in names) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", choices=("pong", "breakout"), default="pong")
    args = parser.parse_args(argv)
    sys.stdout.write(settings_table(args.game))
    return 0


if __name__ == "__main__":
    sys.exit(main())
