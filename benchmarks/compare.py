"""Side by side: several settings to one score, seeds interleaved, in one sitting on one host.

    .venv/bin/python benchmarks/compare.py --game pong --target-score 18 --seeds 0,1,2 \
        --setting "defaults=--max-minutes 10" \
        --setting "original-course=--preset original-course --max-minutes 30" \
        --setting "sb3-a2c=sb3: --max-minutes 10" \
        --out runs/compare_pong

A setting is NAME=OPTIONS: time_to_score.py's options, or after "sb3:" sb3_time_to_score.py's. The
runs go seed 0 of every setting, then seed 1 of every setting, and so on, each in its own process,
so that a host that speeds up or slows down during the sitting touches every setting alike. The
raw emulator speed (2 processes, random actions, no network) is measured before the first run and
after the last: its drift is part of the result. Sticky actions 0.25 and the two-in-a-row
statistic are the scripts' own defaults (the course's protocol, a3c_course/training/evaluate.py).

Writes <out>/<NAME>/seed-<S>/ (each script's own run folder and summary), <out>/comparison.json
and <out>/comparison.md: for each setting, each seed's agent steps to the first of two consecutive
evaluations at or above the target ("> budget" where it was not met), their median and range and
its ratio to the first setting's (a bound where a median is a bound), then the same in training
minutes, which hold only for this host and sitting, and the best evaluation means. Agent steps come
first: they are what a setting learns per step, on any machine.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import shlex
import statistics
import subprocess
import sys
from pathlib import Path

from time_to_score import seeds  # this folder is on sys.path when run as a script

from a3c_course.a3c.envs import STICKY_ACTIONS, is_atari, resolve_env_id
from a3c_course.measure.throughput import machine_description, raw_env_speed

HERE = Path(__file__).resolve().parent
SCRIPTS = {"course": "time_to_score.py", "sb3": "sb3_time_to_score.py"}


def setting(text: str) -> tuple[str, str, list[str]]:
    """"NAME=OPTIONS" -> (name, script kind, options)."""
    name, sep, options = text.partition("=")
    if not sep or not name.strip() or "/" in name:
        raise argparse.ArgumentTypeError(f"a setting is NAME=OPTIONS, got {text!r}")
    kind, options = ("sb3", options[4:]) if options.startswith("sb3:") else ("course", options)
    return name.strip(), kind, shlex.split(options)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--game", default="pong", help="the game every setting plays (default: pong)")
    add("--target-score", type=float, default=18.0, help="evaluation mean to reach (default: 18)")
    add("--seeds", type=seeds, default=[0, 1, 2], help="seeds, e.g. 0,1,2 (default: 0,1,2)")
    add("--setting", type=setting, action="append", required=True, dest="settings",
        metavar="NAME=OPTIONS", help="a setting to compare; the first is the baseline")  # fmt: skip
    add("--speed-seconds", type=float, default=15.0, help="seconds per raw-speed measurement")
    add("--out", default="runs/compare", help="output folder (default: runs/compare)")
    return parser


def command(args, name: str, kind: str, options: list[str], seed: int, out: Path) -> list[str]:
    return [
        sys.executable, str(HERE / SCRIPTS[kind]), "--game", args.game,
        "--target-score", str(args.target_score), "--sticky-actions", str(STICKY_ACTIONS),
        *options, "--seeds", str(seed), "--out", str(out / name / f"seed-{seed}"),
        *(["--quiet"] if kind == "course" else []),
    ]  # fmt: skip


def raw_speed(args) -> float:
    return round(raw_env_speed(args.game, processes=2, seconds=args.speed_seconds).steps_per_s)


def one_run(summary_path: Path) -> dict:
    """The run's numbers from its script's summary.json."""
    summary = json.loads(summary_path.read_text())
    [run] = summary["runs"]
    budget_s = run["total_wall_s"]
    return {
        "met": run["met"],
        "minutes": None if not run["met"] else run["wall_s"] / 60,
        "steps": run["steps"],
        "budget_minutes": budget_s / 60,
        "total_steps": run["total_steps"],
        "best": run["best_eval_mean"],
        "command": summary["command"],
    }


def median_of(runs: list[dict], key: str) -> tuple[float, bool]:
    """(median, is_bound): a run that missed counts as more than its budget (math.inf in the sort);
    when the median itself is such a run, the result is the budget, as a lower bound."""
    values = sorted(r[key] if r["met"] else math.inf for r in runs)
    middle = statistics.median_low(values)
    if math.isinf(middle):
        budget = "budget_minutes" if key == "minutes" else "total_steps"
        return min(r[budget] for r in runs if not r["met"]), True
    return middle, False


def ratio(base: tuple[float, bool], other: tuple[float, bool]) -> str:
    """other / base, two medians (agent steps or minutes to the target), in words: how many times
    as long `other` took; a bound where either median is one."""
    (b, b_bound), (o, o_bound) = base, other
    if b_bound and o_bound:
        return "neither median reached the target"
    if b_bound:
        return f"at most {o / b:.2f}x (baseline's median > its budget)"
    if o_bound:
        return f"at least {o / b:.2f}x (this median > its budget)"
    return f"{o / b:.2f}x"


def agent_steps(steps: float) -> str:
    """A count of agent steps for the table: millions (1.23M), or whole below 100,000."""
    return f"{steps / 1e6:.2f}M" if steps >= 100_000 else f"{steps:,.0f}"


def table(args, results: dict[str, list[dict]], speeds: tuple[float, float]) -> str:
    names = list(results)
    protocol = f", sticky actions {STICKY_ACTIONS}" if is_atari(resolve_env_id(args.game)) else ""
    base_steps = median_of(results[names[0]], "steps")
    base_minutes = median_of(results[names[0]], "minutes")
    lines = [
        f"Target {args.target_score:g} (first of two consecutive 10-game evaluations), "
        f"{args.game}{protocol}, seeds {','.join(map(str, args.seeds))}.",
        f"Raw emulator speed (2 processes): {speeds[0]:,.0f} agent steps/s before, "
        f"{speeds[1]:,.0f} after ({(speeds[1] / speeds[0] - 1) * 100:+.1f}%).",
        "",
        "| setting | agent steps to target, per seed | median (range met) | "
        f"/ {names[0]}'s | training minutes, median (this host) | / {names[0]}'s | best means |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, runs in results.items():
        per_seed = ", ".join(
            agent_steps(r["steps"]) if r["met"] else f"> {agent_steps(r['total_steps'])}"
            for r in runs
        )
        steps, steps_bound = median_of(runs, "steps")
        minutes, bound = median_of(runs, "minutes")
        met = [r["steps"] for r in runs if r["met"]]
        spread = f" ({agent_steps(min(met))}-{agent_steps(max(met))})" if met else ""
        first = name == names[0]
        lines.append(
            f"| {name} | {per_seed} | {'> ' if steps_bound else ''}{agent_steps(steps)}{spread} | "
            f"{'-' if first else ratio(base_steps, (steps, steps_bound))} | "
            f"{'> ' if bound else ''}{minutes:.1f} | "
            f"{'-' if first else ratio(base_minutes, (minutes, bound))} | "
            f"{', '.join(format(r['best'], '+.1f') for r in runs)} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    names = [name for name, _, _ in args.settings]
    if len(set(names)) != len(names):
        print(f"compare.py: error: setting names must differ, got {names}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    before = raw_speed(args)
    print(f"raw emulator speed before: {before:,} agent steps/s", flush=True)
    results: dict[str, list[dict]] = {name: [] for name in names}
    for seed in args.seeds:  # interleaved: seed 0 of every setting, then seed 1, ...
        for name, kind, options in args.settings:
            argv_run = command(args, name, kind, options, seed, out)
            print(f"seed {seed}, {name}: {shlex.join(argv_run[1:])}", flush=True)
            subprocess.run(argv_run, check=True)
            results[name].append(one_run(out / name / f"seed-{seed}" / "summary.json"))
    after = raw_speed(args)
    print(f"raw emulator speed after: {after:,} agent steps/s", flush=True)
    text = table(args, results, (before, after))
    record = {
        "started": started,
        "finished": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine_description(),
        "command": shlex.join(["benchmarks/compare.py", *(sys.argv[1:] if argv is None else argv)]),
        "raw_speed_before": before,
        "raw_speed_after": after,
        "results": results,
    }
    (out / "comparison.json").write_text(json.dumps(record, indent=2) + "\n")
    (out / "comparison.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
