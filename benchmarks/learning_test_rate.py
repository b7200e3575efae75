"""How often the CartPole learning test's run misses its target, and why: many seeded runs under
the full test suite's load, with what each run's losses looked like.

    .venv/bin/python benchmarks/learning_test_rate.py --runs 50 --hogs 2 --out runs/learning_rate.jsonl

Each run is tests/test_trainer.py's (its CARTPOLE settings and LEARNS_CARTPOLE target: the mean
training score of 20 episodes at 195), with seeds 1, 2, ... and a larger step budget, beside
--hogs processes that keep a core busy each, as the suite's second pytest worker and its tests do.
Every run's line records the steps at which it reached the target (or that it did not), and its
loss reports over time (entropy, value loss, gradient norm, staleness), so that a run that stalls
can be told apart: a collapsed policy (entropy near 0), a value scale that runs away, staleness.
The summary prints the steps-to-target quantiles and the miss rate at several budgets.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from test_trainer import CARTPOLE, LEARNS_CARTPOLE  # noqa: E402  the test's own settings

from a3c_course.measure.throughput import machine_description  # noqa: E402
from a3c_course.training.config import TrainConfig  # noqa: E402
from a3c_course.training.trainer import train  # noqa: E402

BUDGETS = (200_000, 300_000, 400_000, 600_000, 800_000, 1_000_000)


def hog() -> None:
    """Keep one core busy until killed."""
    while True:
        pass


def one_run(seed: int, max_steps: int) -> dict:
    """One learning-test run with this seed; what it reached and how its losses went."""
    settings = {**CARTPOLE, **LEARNS_CARTPOLE, "seed": seed, "max_steps": max_steps}
    settings["max_minutes"] = 15.0
    with tempfile.TemporaryDirectory(prefix="a3c-rate-") as folder:
        began = time.monotonic()
        result = train(TrainConfig(**settings, out_dir=folder), progress=False)
        seconds = time.monotonic() - began
    losses = [r for r in result.history if r["kind"] == "loss"]
    scores = [r["score"] for r in result.episodes()]
    return {
        "seed": seed,
        "reached": result.stop_reason == "target_score",
        "steps": result.steps,
        "seconds": round(seconds, 1),
        "stop_reason": result.stop_reason,
        "recent_score": result.recent_score(),
        "best_window": max(
            (statistics.fmean(scores[i - 20 : i]) for i in range(20, len(scores) + 1)), default=None
        ),
        "losses": [
            {key: r[key] for key in ("steps", "entropy", "value", "grad_norm", "staleness")}
            for r in losses
        ],
    }


def steps_to_target(runs: list[dict]) -> list[float]:
    """Each run's steps to the target; a run that missed counts as infinitely many."""
    return sorted(r["steps"] if r["reached"] else float("inf") for r in runs)


def summary(runs: list[dict]) -> str:
    needed = steps_to_target(runs)
    reached = [s for s in needed if s != float("inf")]
    lines = [f"{len(runs)} runs; reached 195 within the budget: {len(reached)}"]
    if reached:
        quantiles = statistics.quantiles(reached, n=10) if len(reached) > 1 else reached
        lines.append(
            f"steps to the target: median {statistics.median(reached):,.0f}, 10%-90% "
            f"{quantiles[0]:,.0f}-{quantiles[-1]:,.0f}, max {max(reached):,.0f}"
        )
    for budget in BUDGETS:
        missed = sum(s > budget for s in needed)
        lines.append(f"budget {budget:>9,}: missed by {missed} of {len(runs)} ({missed / len(runs):.0%})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--hogs", type=int, default=2, help="busy processes beside each run")
    parser.add_argument("--max-steps", type=int, default=1_000_000)
    parser.add_argument("--out", type=Path, required=True, help="one JSON line per run")
    args = parser.parse_args(argv)
    print(machine_description(), flush=True)
    hogs = [multiprocessing.Process(target=hog, daemon=True) for _ in range(args.hogs)]
    for process in hogs:
        process.start()
    runs = []
    try:
        with args.out.open("a") as out:
            for seed in range(args.first_seed, args.first_seed + args.runs):
                run = one_run(seed, args.max_steps)
                out.write(json.dumps(run) + "\n")
                out.flush()
                runs.append(run)
                print(f"seed {seed}: {'reached' if run['reached'] else 'MISSED'} at "
                      f"{run['steps']:,} steps, {run['seconds']} s", flush=True)  # fmt: skip
    finally:
        for process in hogs:
            process.kill()
    print(summary(runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
