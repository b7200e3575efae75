"""Where one worker's time goes: emulator, preprocessing, forward, backward, loss, optimizer, sync.

    .venv/bin/python benchmarks/profile_worker.py --envs 1,4 --seconds 10
    .venv/bin/python benchmarks/profile_worker.py --envs 16 --layers     # and each layer alone
    .venv/bin/python benchmarks/profile_worker.py --game breakout --envs 2 --kernels onednn,native --rounds 3

Runs one worker's loop in this process (one thread, as in a worker process) for --seconds per
setting, and prints for each number of environments per worker a markdown table of the parts'
shares of the time and milliseconds per agent step. See a3c_course.measure.profiling.profile_worker for how
each part is timed. With --layers, also a table of the network's parts (each conv layer, the LSTM
cell, the heads) timed alone on a batch of that many inputs (profiling.network_layer_times).
With --kernels, each listed choice of convolution kernels in turn ("auto": the workers' own,
worker_loop.uses_onednn), --rounds times, interleaved, then each choice's median agent steps/s.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import sys

from a3c_course.a3c.envs import make_env
from a3c_course.a3c.model import ActorCritic
from a3c_course.cli.common import positive_float, positive_int
from a3c_course.measure.profiling import layer_table, network_layer_times, profile_worker
from a3c_course.measure.throughput import machine_description
from a3c_course.training.config import TrainConfig


def env_counts(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a list such as 1,4, got {text!r}") from None
    if min(values) < 1:
        raise argparse.ArgumentTypeError(f"counts must be at least 1, got {text!r}")
    return values


KERNELS = {"auto": None, "native": False, "onednn": True}  # profile_worker's onednn argument


def kernel_choices(text: str) -> list[str]:
    choices = text.split(",")
    wrong = [choice for choice in choices if choice not in KERNELS]
    if wrong:
        raise argparse.ArgumentTypeError(f"kernels must be among {', '.join(KERNELS)}, got {wrong}")
    return choices


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--game", default="pong", help="game (default: pong)")
    parser.add_argument(
        "--envs", type=env_counts, default=[1, 4],
        help="environments per worker, a list (default: 1,4)",
    )  # fmt: skip
    parser.add_argument(
        "--seconds", type=positive_float, default=10.0, help="wall time per setting (default: 10)"
    )
    parser.add_argument(
        "--rollout-steps", type=int, default=None, help="rollout length (default: TrainConfig's)"
    )
    parser.add_argument(
        "--hidden-size", type=int, default=None, help="LSTM size (default: TrainConfig's)"
    )
    parser.add_argument(
        "--layers", action="store_true",
        help="also time each part of the network alone (a batch of --envs inputs)",
    )  # fmt: skip
    parser.add_argument(
        "--kernels", type=kernel_choices, default=["auto"],
        help="convolution kernels, a list of auto, native, onednn (default: auto, the workers')",
    )  # fmt: skip
    parser.add_argument(
        "--rounds", type=positive_int, default=1,
        help="rounds over the --kernels choices (default: 1)",
    )  # fmt: skip
    return parser


def model_for(config: TrainConfig) -> ActorCritic:
    env = make_env(config.game)
    try:
        return ActorCritic.for_env(env, **config.network_options)
    finally:
        env.close()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    base = TrainConfig(game=args.game, eval_episodes=0)
    if args.rollout_steps is not None:
        base = base.replace(rollout_steps=args.rollout_steps)
    if args.hidden_size is not None:
        base = base.replace(hidden_size=args.hidden_size)
    today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"{today}; {args.game}; {args.seconds:g} s per setting")
    print(f"machine: {machine_description()}")
    for envs in args.envs:
        speeds: dict[str, list[float]] = {choice: [] for choice in args.kernels}
        for _ in range(args.rounds):
            for choice in args.kernels:
                config = base.replace(envs_per_worker=envs)
                profile = profile_worker(config, args.seconds, onednn=KERNELS[choice])
                speeds[choice].append(profile.steps_per_s)
                print(f"\n{envs} environments, kernels {choice}:\n{profile.table()}")
        if len(args.kernels) > 1 or args.rounds > 1:
            print(f"\n{envs} environments, agent steps/s (median of {args.rounds}):", ", ".join(
                f"{choice} {statistics.median(values):,.0f}" for choice, values in speeds.items()
            ))  # fmt: skip
        if args.layers:
            print()
            print(layer_table(network_layer_times(model_for(base), envs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
