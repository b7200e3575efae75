"""ale-py's C++ vector environment beside the course's pipeline: the same frames? how much faster?

    .venv/bin/python benchmarks/vector_env.py --game pong --envs 8 --seconds 8 --rounds 3

The issue on speed names ale-py's `AtariVectorEnv` (emulator, frame skip, max-pooling and grey in
C++ threads) as a way to step a worker's environments. Before any trainer uses it, two questions:

1. **Frames.** Asked for the full grey screen (210x160, no resize), max-pooled over the last two of
   4 frames, does it give the frames, rewards and game overs of `make_env` once the course's own
   crop and resize (`PlayAreaObservation.observation`) are applied? Checked on the deterministic
   game (sticky actions 0, no no-op starts, no FIRE presses: the parts whose random draws or extra
   presses differ between the two), one game or --check-steps agent steps, same actions.
2. **Speed**, one process and one thread (a worker's share of the machine), random actions with
   sticky actions 0.25, interleaved rounds: the course's environments stepped one after another
   (what a worker does now), the vector environment with the course's crop and resize applied in
   Python (the same frames), and the vector environment alone (no crop, no resize: what C++ takes
   over, the rest being Python's).
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import sys
import time
from functools import partial

import numpy as np

from a3c_course.a3c.envs import NATIVE_SCREEN, STICKY_ACTIONS, make_env
from a3c_course.cli.common import positive_float, positive_int
from a3c_course.measure.throughput import machine_description, one_thread


def vector_env(game: str, envs: int, sticky_actions: float, deterministic: bool = False):
    """ale-py's AtariVectorEnv giving the full grey screen, max-pooled, one frame (no stack)."""
    from ale_py.vector_env import AtariVectorEnv

    height, width = NATIVE_SCREEN
    extra = {"noop_max": 0, "use_fire_reset": False} if deterministic else {}
    return AtariVectorEnv(
        game, num_envs=envs, num_threads=1, img_height=height, img_width=width, stack_num=1,
        grayscale=True, maxpool=True, frameskip=4, reward_clipping=False,
        repeat_action_probability=sticky_actions, **extra,
    )  # fmt: skip


def frames_agree(game: str, steps: int) -> tuple[int, int, bool]:
    """(equal frames, frames compared, rewards and game overs all equal) on the deterministic game."""
    course = make_env(
        game, sticky_actions=0.0, noop_max=0, fire_on_life_start=False, clip_rewards=False
    )
    vector = vector_env(game, 1, 0.0, deterministic=True)
    obs, _ = course.reset(seed=0)
    screens, _ = vector.reset(seed=0)
    equal = [np.array_equal(obs, course.observation(screens[0, 0]))]
    same_outcomes = True
    actions = np.random.default_rng(1).integers(0, course.action_space.n, steps)
    for action in actions:
        obs, reward, terminated, truncated, _ = course.step(int(action))
        screens, rewards, terminations, _, _ = vector.step(np.array([action]))
        equal.append(np.array_equal(obs, course.observation(screens[0, 0])))
        same_outcomes &= bool(reward == rewards[0] and terminated == terminations[0])
        if terminated or truncated or terminations[0]:
            break
    vector.close()
    course.close()
    return sum(equal), len(equal), same_outcomes


def speed_course(game: str, envs: int, seconds: float) -> float:
    """Agent steps/s of `envs` course environments stepped one after another, random actions."""
    pipeline = [make_env(game, seed=i) for i in range(envs)]
    rng = np.random.default_rng(0)
    n_actions = pipeline[0].action_space.n
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        frames = []
        for env, action in zip(pipeline, rng.integers(0, n_actions, envs), strict=True):
            obs, _, terminated, truncated, _ = env.step(int(action))
            if terminated or truncated:
                obs, _ = env.reset()
            frames.append(obs)
        np.stack(frames)
        steps += envs
    elapsed = time.perf_counter() - start
    for env in pipeline:
        env.close()
    return steps / elapsed


def speed_vector(game: str, envs: int, seconds: float, crop_resize: bool) -> float:
    """Agent steps/s of the vector environment, with or without the course's crop and resize."""
    vector = vector_env(game, envs, STICKY_ACTIONS)  # make_env's default, as for the course's
    course = make_env(game)  # its outermost wrapper is the course's crop and resize
    vector.reset(seed=0)
    rng = np.random.default_rng(0)
    n_actions = course.action_space.n
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        screens, *_ = vector.step(rng.integers(0, n_actions, envs))
        if crop_resize:
            np.stack([course.observation(screen[0]) for screen in screens])
        steps += envs
    elapsed = time.perf_counter() - start
    vector.close()
    course.close()
    return steps / elapsed


MEASURES = {
    "the course's environments, one after another": speed_course,
    "vector env + the course's crop, resize": partial(speed_vector, crop_resize=True),
    "vector env alone (no crop, resize)": partial(speed_vector, crop_resize=False),
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--game", default="pong", help="game (default: pong)")
    parser.add_argument("--envs", type=positive_int, default=8, help="environments (default: 8)")
    parser.add_argument("--seconds", type=positive_float, default=8.0, help="seconds per measurement")
    parser.add_argument(
        "--rounds", type=positive_int, default=3, help="interleaved rounds (default: 3)"
    )
    parser.add_argument(
        "--check-steps", type=positive_int, default=5000,
        help="agent steps of the frame check at most",
    )  # fmt: skip
    args = parser.parse_args(argv)

    equal, compared, outcomes = frames_agree(args.game, args.check_steps)
    print(f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; {args.game}")
    print(f"machine: {machine_description()}")
    print(
        f"frames (deterministic game): {equal} of {compared} equal; rewards and game overs "
        f"{'all equal' if outcomes else 'DIFFER'}"
    )
    speeds: dict[str, list[float]] = {name: [] for name in MEASURES}
    with one_thread():
        for round_ in range(args.rounds):
            for name, measure in MEASURES.items():
                speeds[name].append(measure(args.game, args.envs, args.seconds))
                print(f"round {round_ + 1}: {name}: {speeds[name][-1]:.0f}", file=sys.stderr)
    base = statistics.median(speeds[next(iter(MEASURES))])
    print(f"\n| {args.envs} environments, one thread | agent steps/s (median of {args.rounds}) "
          "| spread | / the course's |")  # fmt: skip
    print("|---|---:|---:|---:|")
    for name, values in speeds.items():
        median = statistics.median(values)
        spread = (max(values) - min(values)) / median
        print(f"| {name} | {median:,.0f} | {spread:.0%} | {median / base:.2f} |")


if __name__ == "__main__":
    main()
