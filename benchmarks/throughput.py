"""Trainer throughput next to the raw environment speed, measured side by side in one run.

    .venv/bin/python benchmarks/throughput.py --workers 2 --envs 1,4,8 --seconds 10 --repeats 3

For each worker count w: the raw speed of w processes stepping the preprocessed environment with
random actions (no network), then the trainer (w workers, no evaluator) with each number of
environments per worker. Each measurement runs --seconds of wall time and is repeated --repeats
times (in rounds, so slow drifts of the machine's load hit every point alike); the table shows the
median, the spread (max - min) / median, and the ratio of the trainer's median to the raw median.
"""

from __future__ import annotations

import argparse
import datetime
import sys

from a3c_course.config import TrainConfig
from a3c_course.throughput import machine_description, raw_env_speed, summarize, trainer_speed


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


def positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text!r}")
    return value


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text!r}")
    return value


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
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    base = TrainConfig(game=args.game, eval_episodes=0)
    if args.rollout_steps is not None:
        base = base.replace(rollout_steps=args.rollout_steps)
    if args.hidden_size is not None:
        base = base.replace(hidden_size=args.hidden_size)
    raw: dict[int, list[float]] = {w: [] for w in args.workers}
    trainer: dict[tuple[int, int], list[float]] = {
        (w, e): [] for w in args.workers for e in args.envs
    }
    unsteady: set[tuple[int, int]] = set()  # points where a run was too short for a steady speed
    for repeat in range(args.repeats):
        for w in args.workers:
            raw[w].append(raw_env_speed(args.game, w, args.seconds).steps_per_s)
            print(f"repeat {repeat + 1}: raw, {w} process(es): {raw[w][-1]:.0f} steps/s",
                  file=sys.stderr, flush=True)  # fmt: skip
            for e in args.envs:
                config = base.replace(workers=w, envs_per_worker=e)
                speed = trainer_speed(config, args.seconds)
                trainer[w, e].append(speed.steps_per_s)
                if not speed.steady:
                    unsteady.add((w, e))
                print(f"repeat {repeat + 1}: trainer {w} x {e}: {trainer[w, e][-1]:.0f} steps/s",
                      file=sys.stderr, flush=True)  # fmt: skip
    today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"{today}; {args.game}; {args.seconds:g} s per measurement, {args.repeats} repeat(s); "
          f"rollout {base.rollout_steps} steps, LSTM {base.hidden_size or 'default'}")  # fmt: skip
    print(f"machine: {machine_description()}")
    print()
    print("| workers | envs/worker | trainer steps/s (median) | spread | raw steps/s (median) "
          "| spread | trainer / raw |")  # fmt: skip
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for w in args.workers:
        r = summarize(raw[w])
        for e in args.envs:
            t = summarize(trainer[w, e])
            mark = "*" if (w, e) in unsteady else ""
            print(
                f"| {w} | {e} | {t['median']:.0f}{mark} | {t['spread']:.0%} | {r['median']:.0f} "
                f"| {r['spread']:.0%} | {t['median'] / r['median']:.0%}{mark} |"
            )
    if unsteady:
        print()
        print(
            "\\* too short for a steady speed (fewer than two loss reports): the overall speed, "
            "start-up included, is shown; measure longer (--seconds)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
