"""The Ray backend against Hogwild on this machine, side by side, and a parameter server's costs.

    .venv/bin/python benchmarks/ray_backend.py --game pong --workers 2,4,8 --seconds 20 \
        --repeats 3 --out runs/ray_backend

1. The raw emulator speed (2 processes, random actions, no network), before and after everything.
2. In rounds (so that a drifting host touches every point alike): for each worker count, the
   trainer with the Hogwild backend, then with the Ray backend (Ray started for the run on this
   machine), each for --seconds with no evaluator and the course's defaults otherwise. Steady
   agent steps/s (between the first and the last loss report: start-up left out) and the mean
   staleness of the gradients (updates by other workers between a worker's pull and its push).
3. In each round too, the parameter server's costs per update for this network (their medians
   are reported): the time to apply one gradient and copy the weights for the answer (in this
   process, no Ray), a Ray round trip of the same push to a server actor on this machine as the
   worker waits for it, the server's share of that round trip (the actor's own CPU time per
   push), and the bytes one update moves.

Writes <out>/ray_backend.json and <out>/ray_backend.md (the tables, the command, date and host).
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
from pathlib import Path

from throughput import counts  # this folder is on sys.path

from a3c_course.cli.common import positive_float, positive_int
from a3c_course.measure.scaling import ScalingModel, limits_table, measure_server_costs
from a3c_course.measure.throughput import (
    machine_description,
    raw_env_speed,
    summarize,
    trainer_speed,
)
from a3c_course.training.config import TrainConfig


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--game", default="pong", help="the game (default: pong)")
    add("--workers", type=counts, default=[2, 4, 8], help="worker counts (default: 2,4,8)")
    add("--seconds", type=positive_float, default=20.0, help="seconds per run (default: 20)")
    add("--repeats", type=positive_int, default=3, help="rounds of every run (default: 3)")
    add("--updates", type=positive_int, default=200, help="pushes timed for the server's costs")
    add("--out", default="runs/ray_backend", help="output folder (default: runs/ray_backend)")
    return parser


def raw_speed(game: str) -> float:
    return round(raw_env_speed(game, processes=2, seconds=15.0).steps_per_s)


def measure(args) -> dict:
    config = TrainConfig(game=args.game)
    runs: dict[str, list[dict]] = {}
    costs: list[dict[str, float]] = []
    for round_index in range(args.repeats):
        for workers in args.workers:
            for backend in ("hogwild", "ray"):
                speed = trainer_speed(
                    config.replace(workers=workers, backend=backend), args.seconds
                )
                key = f"{backend}-{workers}"
                runs.setdefault(key, []).append(
                    {"steps_per_s": speed.steps_per_s, "staleness": speed.staleness}
                )
                staleness = "none reported" if speed.staleness is None else f"{speed.staleness:.2f}"
                print(
                    f"round {round_index + 1}, {backend}, {workers} workers: "
                    f"{speed.steps_per_s:,.0f} steps/s, staleness {staleness}",
                    flush=True,
                )
        costs.append(measure_server_costs(config, args.updates))
        print(f"round {round_index + 1}, server costs: {costs[-1]}", flush=True)
    return {
        "runs": runs,
        "costs": {key: statistics.median(c[key] for c in costs) for key in costs[0]},
    }


def table(args, result: dict) -> str:
    config = TrainConfig(game=args.game)
    rollout = config.envs_per_worker * config.rollout_steps
    lines = [
        f"Command: `{' '.join(sys.argv)}`  ",
        f"Date: {result['date']}; host: {result['host']}  ",
        f"Raw emulator speed (2 processes): {result['raw_before']:,} -> {result['raw_after']:,} "
        "agent steps/s",
        "",
        "| workers | Hogwild steps/s | Ray steps/s | Ray / Hogwild | staleness Hogwild | "
        "staleness Ray |",
        "|---|---|---|---|---|---|",
    ]
    for workers in args.workers:
        hogwild, ray_runs = result["runs"][f"hogwild-{workers}"], result["runs"][f"ray-{workers}"]
        h = summarize([r["steps_per_s"] for r in hogwild])
        r = summarize([r["steps_per_s"] for r in ray_runs])
        lines.append(
            f"| {workers} | {h['median']:,.0f} (spread {h['spread']:.0%}) | {r['median']:,.0f} "
            f"(spread {r['spread']:.0%}) | {r['median'] / h['median']:.2f} | "
            f"{statistics.median(x['staleness'] for x in hogwild):.2f} | "
            f"{statistics.median(x['staleness'] for x in ray_runs):.2f} |"
        )
    costs = result["costs"]
    lines += [
        "",
        f"Parameter server, per update ({rollout} agent steps: {config.envs_per_worker} "
        f"environments x {config.rollout_steps} steps): apply the gradient "
        f"{costs['apply_s'] * 1e3:.2f} ms, copy the weights for the answer "
        f"{costs['reply_s'] * 1e3:.2f} ms (in-process); a Ray round trip of one push on this "
        f"machine {costs['round_trip_s'] * 1e3:.2f} ms, of which the server's own CPU time "
        f"{costs['server_push_s'] * 1e3:.2f} ms; the gradient in and the weights out "
        f"{costs['model_bytes'] / 1e6:.3f} MB each.",
        "",
        *scaling_table(result, config, min(args.workers)),
    ]
    return "\n".join(lines) + "\n"


def scaling_table(result: dict, config: TrainConfig, workers: int) -> list[str]:
    """Where one server saturates, from the measured costs and the Ray workers' own speed."""
    ray_speed = statistics.median(r["steps_per_s"] for r in result["runs"][f"ray-{workers}"])
    model = ScalingModel.from_costs(result["costs"], ray_speed / workers, config)
    return [
        f"Scaling model (a3c_course/measure/scaling.py), a worker at {ray_speed / workers:,.0f} agent "
        f"steps/s (the Ray runs with {workers} workers here), {model.updates_per_worker:.1f} "
        f"updates/s each; the server's time per update {model.apply_s * 1e3:.2f} ms to apply, "
        f"{model.reply_s * 1e3:.2f} ms to copy, {model.ray_s * 1e3:.2f} ms for Ray's part "
        "(measured); links assumed full duplex, the server's the only bottleneck, shards each "
        "with its own link:",
        "",
        limits_table(model),
    ]


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    host = machine_description()
    before = raw_speed(args.game)
    print(f"raw emulator speed before: {before:,} agent steps/s", flush=True)
    result = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "host": host,
        "raw_before": before,
        **measure(args),
    }
    result["raw_after"] = raw_speed(args.game)
    print(f"raw emulator speed after: {result['raw_after']:,} agent steps/s", flush=True)
    (out / "ray_backend.json").write_text(json.dumps(result, indent=2) + "\n")
    report = table(args, result)
    (out / "ray_backend.md").write_text(report)
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
