"""Trainer throughput next to the raw environment speed, measured side by side in one run.

    .venv/bin/python benchmarks/throughput.py --workers 2 --envs 1,4,8 --seconds 10 --repeats 3

For each worker count w: the raw speed of w processes stepping the preprocessed environment with
random actions (no network), then the trainer (w workers, no evaluator) with each number of
environments per worker (and each network of --networks). Each measurement runs --seconds of wall
time and is repeated --repeats times (in rounds, so slow drifts of the machine's load hit every
point alike); the table shows the median, the spread (max - min) / median, and the ratio of the
trainer's median to the raw median.

    .venv/bin/python benchmarks/throughput.py --workers 2, --envs 16, --networks default,original
"""

from __future__ import annotations

import argparse
import datetime
import sys

from a3c_course.a3c.envs import is_atari
from a3c_course.a3c.model import ACTIVATIONS, ORIGINAL_NETWORK, default_hidden_size
from a3c_course.cli.common import positive_float, positive_int
from a3c_course.measure.throughput import (
    machine_description,
    raw_env_speed,
    summarize,
    trainer_speed,
)
from a3c_course.training.config import TrainConfig


def counts(text: str) -> list[int]:
    """ "3" -> [1, 2, 3]; "1,4,8" -> [1, 4, 8]; "2," -> [2] (a list of one). Duplicates dropped."""
    try:
        values = (
            [int(part) for part in text.split(",") if part.strip()]
            if "," in text
            else list(range(1, int(text) + 1))
        )
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected N or a list such as 1,4,8, got {text!r}"
        ) from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"counts must be at least 1, got {text!r}")
    return list(dict.fromkeys(values))


def networks(text: str) -> dict[str, dict]:
    """ "default,original,relu/16/128" -> each name with its TrainConfig network settings:
    default: TrainConfig's; original: the original course's (model.ORIGINAL_NETWORK);
    ACTIVATION/FILTERS/LSTM: those three."""
    chosen = {}
    for name in [part.strip() for part in text.split(",") if part.strip()]:
        if name == "default":
            chosen[name] = {}
        elif name == "original":
            chosen[name] = dict(ORIGINAL_NETWORK)
        else:
            try:
                activation, filters, hidden = name.split("/")
                chosen[name] = {"activation": activation, "conv_filters": int(filters),
                                "hidden_size": int(hidden)}  # fmt: skip
            except ValueError:
                raise argparse.ArgumentTypeError(
                    f"a network is default, original or ACTIVATION/FILTERS/LSTM such as "
                    f"relu/32/128, got {name!r}"
                ) from None
            if activation not in ACTIVATIONS:
                raise argparse.ArgumentTypeError(
                    f"activation must be one of {', '.join(ACTIVATIONS)}, got {activation!r}"
                )
    if not chosen:
        raise argparse.ArgumentTypeError(f"expected at least one network, got {text!r}")
    return chosen


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Prints a markdown table. Measure on an otherwise idle machine: other processes "
        "take cores from both the raw and the trainer measurements, but not always alike.",
    )
    parser.add_argument("--game", default="pong", help="game (default: pong)")
    parser.add_argument(
        "--workers", type=counts, default=counts("2"),
        help="worker counts: N for 1..N, or a list such as 1,2 or 2, (default: 2)",
    )  # fmt: skip
    parser.add_argument(
        "--envs", type=counts, default=[1, 4], metavar="K",
        help="environments per worker: K for 1..K, or a list such as 1,4,8 (default: 1,4)",
    )  # fmt: skip
    parser.add_argument(
        "--seconds",
        type=positive_float,
        default=10.0,
        help="wall time per measurement (default: 10)",
    )
    parser.add_argument(
        "--repeats", type=positive_int, default=3, help="repeats of every measurement (default: 3)"
    )
    parser.add_argument(
        "--rollout-steps", type=positive_int, default=None,
        help="rollout length (default: TrainConfig's)",
    )  # fmt: skip
    parser.add_argument(
        "--hidden-size", type=positive_int, default=None, help="LSTM size (default: TrainConfig's)"
    )
    parser.add_argument(
        "--networks", type=networks, default=networks("default"),
        help="networks to measure side by side: default (TrainConfig's), original (the original "
        "course's: ELU, 32 filters, LSTM 256) or ACTIVATION/FILTERS/LSTM such as relu/32/128 "
        "(default: default)",
    )  # fmt: skip
    return parser


def describe(name: str, settings: dict, base: TrainConfig) -> str:
    """ "original (elu/32/256)": a network's name with its activation, filters and LSTM size."""
    if "/" in name:
        return name
    config = base.replace(**settings)
    hidden = config.hidden_size
    if hidden is None:  # the network's own default for the game's observations
        hidden = default_hidden_size(frames=is_atari(config.env_id))
    return f"{name} ({config.activation}/{config.conv_filters}/{hidden})"


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    base = TrainConfig(game=args.game, eval_episodes=0)
    if args.rollout_steps is not None:
        base = base.replace(rollout_steps=args.rollout_steps)
    if args.hidden_size is not None:
        base = base.replace(hidden_size=args.hidden_size)
    raw: dict[int, list[float]] = {w: [] for w in args.workers}
    points = [(w, e, n) for w in args.workers for e in args.envs for n in args.networks]
    trainer: dict[tuple[int, int, str], list[float]] = {point: [] for point in points}
    unsteady: set[tuple] = set()  # points where a run was too short for a steady speed
    for repeat in range(args.repeats):
        for w in args.workers:
            raw[w].append(raw_env_speed(args.game, w, args.seconds).steps_per_s)
            print(f"repeat {repeat + 1}: raw, {w} process(es): {raw[w][-1]:.0f} steps/s",
                  file=sys.stderr, flush=True)  # fmt: skip
            for point in [p for p in points if p[0] == w]:
                _, e, name = point
                config = base.replace(workers=w, envs_per_worker=e, **args.networks[name])
                speed = trainer_speed(config, args.seconds)
                trainer[point].append(speed.steps_per_s)
                if not speed.steady:
                    unsteady.add(point)
                print(f"repeat {repeat + 1}: trainer {w} x {e}, {name}: "
                      f"{trainer[point][-1]:.0f} steps/s", file=sys.stderr, flush=True)  # fmt: skip
    today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"{today}; {args.game}; {args.seconds:g} s per measurement, {args.repeats} repeat(s); "
          f"rollout {base.rollout_steps} steps, LSTM {base.hidden_size or 'default'}")  # fmt: skip
    print(f"machine: {machine_description()}")
    print()
    several = len(args.networks) > 1
    print(
        "| workers | envs/worker | "
        + ("network | " if several else "")
        + "trainer steps/s (median) | spread | raw steps/s (median) | spread | trainer / raw |"
    )
    print("|---:|---:|" + ("---|" if several else "") + "---:|---:|---:|---:|---:|")
    for w, e, name in points:
        r, t = summarize(raw[w]), summarize(trainer[w, e, name])
        mark = "*" if (w, e, name) in unsteady else ""
        print(
            f"| {w} | {e} | " + (f"{describe(name, args.networks[name], base)} | " if several else "") +
            f"{t['median']:.0f}{mark} | {t['spread']:.0%} | {r['median']:.0f} "
            f"| {r['spread']:.0%} | {t['median'] / r['median']:.0%}{mark} |"
        )  # fmt: skip
    if unsteady:
        print()
        print(
            "\\* too short for a steady speed (fewer than two loss reports): the overall speed, "
            "start-up included, is shown; measure longer (--seconds)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
