"""Train until an evaluation score is reached (or a time limit) and report when it was first met.

    .venv/bin/python benchmarks/time_to_score.py --game pong --target-score 18 --max-minutes 30 \
        --seeds 0,1,2 --out runs/time_to_score

For each seed: train with the given TrainConfig settings for --max-minutes (or --max-steps), then
report the training time, the agent steps and the emulator frames (agent steps x frame skip) at
the first of two consecutive evaluations whose means reached --target-score (--consecutive).
Writes <out>/seed-<S>/ (the run: checkpoint, metrics.jsonl, learning_curve.png) and
<out>/summary.json (every seed, and the median and spread over the seeds that met the target).

    .venv/bin/python benchmarks/time_to_score.py --from-runs runs/pong-seed0 runs/pong-seed1 \
        runs/pong-seed2 --target-score 18

reads finished runs instead (their metrics.jsonl and config.json, e.g. from `a3c-course train`) and
reports the same numbers for each, without training. With --rescore, the runs' snapshots (eval_mode
"after") are scored again, with the evaluation settings given (--sticky-actions, --eval-episodes,
--eval-max-episode-steps; the run's own otherwise): one training run, several evaluation protocols.

    .venv/bin/python benchmarks/time_to_score.py --from-runs runs/tts/seed-0 --rescore \
        --sticky-actions 0.25 --out runs/tts_sticky

An evaluation plays the greedy policy for --eval-episodes episodes, with the run's sticky actions
and random no-op starts, so its episodes differ. By default here (--eval-mode after) the trainer
keeps a snapshot of the weights every --eval-interval-s seconds and scores the snapshots once
training has stopped: the workers have both cores to themselves, and "wall_s" is the training time
at which the snapshot was taken, the way sb3_time_to_score.py stops SB3's clock while it is
evaluated. With --eval-mode live the evaluator is a process beside the workers that shares the cores
with them, and training stops at the first evaluation that meets the target; "wall_s" is when its
result reached the trainer, "steps" the step count when it started.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import sys
from pathlib import Path

from a3c_course.a3c.envs import is_atari
from a3c_course.cli.train import flag_type
from a3c_course.lessons.reports import plot_learning_curve, save_figure
from a3c_course.measure.throughput import machine_description, summarize
from a3c_course.training.config import PRESETS, TrainConfig, preset
from a3c_course.training.evaluate import score_snapshots
from a3c_course.training.run_record import (
    CONFIG_NAME,
    METRICS_NAME,
    SNAPSHOTS_NAME,
    read_metrics,
    training_score,
)
from a3c_course.training.trainer import train

FRAME_SKIP = 4  # make_env's Atari frame skip: one agent step is 4 emulator frames
# Defaults that differ from TrainConfig's: the target (Pong +18 over 10 evaluation episodes),
# scored from snapshots after training, so that the clock counts training alone.
SCRIPT_DEFAULTS = {"target_score": 18.0, "eval_episodes": 10, "eval_mode": "after"}
HANDLED_HERE = {"seed", "out_dir"}  # --seeds and --out
# A run's numbers at the first evaluation that met the target (sb3_time_to_score.py adds one).
WHEN_MET_KEYS = ("wall_s", "wall_with_eval_s", "steps", "frames")
# The statistic quoted: the time of the first of this many consecutive evaluations at or above
# the target (benchmarks/README.md, "The protocol"); --consecutive changes it.
CONSECUTIVE = 2
# What --rescore may change: how the snapshots are evaluated, not how the run trained.
RESCORE_FIELDS = ("sticky_actions", "eval_episodes", "eval_max_episode_steps")


def seeds(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a list such as 0,1,2, got {text!r}") from None
    if min(values) < 0:
        raise argparse.ArgumentTypeError(f"seeds must be >= 0, got {text!r}")
    return values


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Every other option is a TrainConfig field ('none' for no limit where allowed).",
    )
    help_text = TrainConfig.field_help()
    for f in dataclasses.fields(TrainConfig):
        if f.name in HANDLED_HERE:
            continue
        if f.name in SCRIPT_DEFAULTS:
            default = f" (default here: {SCRIPT_DEFAULTS[f.name]})"
        elif f.default is not dataclasses.MISSING:
            default = f" (default: {f.default})"
        else:
            default = ""
        parser.add_argument(
            "--" + f.name.replace("_", "-"),
            dest=f.name,
            type=flag_type(f.name),
            default=argparse.SUPPRESS,
            help=help_text[f.name] + ("" if "default:" in help_text[f.name] else default),
        )
    parser.add_argument(
        "--preset",
        choices=list(PRESETS),
        default=None,
        help="start from a named preset of config.py (an option given beside it wins)",
    )
    parser.add_argument(
        "--seeds", type=seeds, default=[0], help="seeds, one run each, e.g. 0,1,2 (default: 0)"
    )
    parser.add_argument(
        "--out", default="runs/time_to_score", help="output folder (default: runs/time_to_score)"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument(
        "--consecutive",
        type=int,
        default=CONSECUTIVE,
        help="the target is met at the first of this many evaluations in a row that reach it "
        f"(default: {CONSECUTIVE}, the course's protocol)",
    )
    parser.add_argument(
        "--from-runs",
        nargs="+",
        type=Path,
        metavar="RUN",
        help="report on these finished runs' folders instead of training",
    )
    parser.add_argument(
        "--rescore",
        action="store_true",
        help="with --from-runs: score the runs' snapshots again, with the evaluation settings "
        "given here (--sticky-actions, --eval-episodes, --eval-max-episode-steps)",
    )
    return parser


def independent(evaluations: list[dict], min_gap_s: float) -> list[dict]:
    """The evaluations (sorted by steps) that each come at least min_gap_s of training after the
    one kept before it: the end-of-training snapshot, taken moments after the last periodic one,
    scores nearly the same weights and must not count as a second, confirming evaluation."""
    kept: list[dict] = []
    for record in evaluations:
        if not kept or record.get("elapsed_s", 0.0) - kept[-1].get("elapsed_s", 0.0) >= min_gap_s:
            kept.append(record)
    return kept


def first_met(
    history: list[dict], target: float, consecutive: int = CONSECUTIVE, min_gap_s: float = 0.0
) -> dict | None:
    """The first of `consecutive` evaluations in a row (by steps) whose means all reach target, or
    None. One lucky evaluation of 10 games can pass a target that the policy does not hold.
    Evaluations closer than min_gap_s of training to the one before are left out (`independent`)."""
    evaluations = sorted((r for r in history if r["kind"] == "eval"), key=lambda r: r["steps"])
    evaluations = independent(evaluations, min_gap_s)
    for k in range(len(evaluations) - consecutive + 1):
        if all(r["mean"] >= target for r in evaluations[k : k + consecutive]):
            return evaluations[k]
    return None


def run_seed(config: TrainConfig, target: float, quiet: bool, consecutive: int) -> dict:
    """Train one seed; with eval_mode "live" and consecutive 1, stop at the first evaluation that
    meets target (the trainer stops on one evaluation, so a longer streak trains to the budget)."""
    if config.eval_mode == "live" and consecutive == 1:
        config = config.replace(target_score=target)
    result = train(config, progress=not quiet)
    return report(
        config, target, result.history, result.stop_reason, result.steps, result.elapsed_s,
        consecutive,
    )  # fmt: skip


def read_run(
    folder: Path,
    target_score: float,
    rescore: dict | None = None,
    out=None,
    consecutive: int = CONSECUTIVE,
) -> dict:
    """The report of a finished run's folder (metrics.jsonl, config.json), for target_score.

    rescore: evaluation settings (RESCORE_FIELDS) to score the run's snapshots again with, instead
    of reading its evaluations; the report (and its curve) then goes to out/<the run's name>.
    """
    config = TrainConfig.from_dict(json.loads((folder / CONFIG_NAME).read_text()))
    config = config.replace(out_dir=str(folder))
    history = read_metrics(folder / METRICS_NAME)
    training = [r for r in history if r["kind"] != "eval"] or [{"steps": 0, "elapsed_s": 0.0}]
    if rescore is not None:
        snapshots = sorted((folder / SNAPSHOTS_NAME).glob("*.pt"))
        if not snapshots:
            raise ValueError(f"{folder} has no snapshots to score (train with --eval-mode after)")
        config = config.replace(**rescore, out_dir=str(Path(out) / folder.name))
        history = training + list(score_snapshots(config, snapshots))
    last = max(training, key=lambda r: r["elapsed_s"])
    return report(
        config, target_score, history, "finished run", last["steps"], last["elapsed_s"],
        consecutive,
    )  # fmt: skip


def report(
    config: TrainConfig, target, history, stop_reason, total_steps, total_wall_s, consecutive
) -> dict:
    frame_skip = FRAME_SKIP if is_atari(config.env_id) else 1
    met = first_met(history, target, consecutive, min_gap_s=config.eval_interval_s / 2)
    figure = plot_learning_curve(
        history,
        window=config.score_window,
        title=f"{config.game}, seed {config.seed}: target {target:g}",
    )
    if met is not None:
        figure.axes[0].axvline(met["steps"], color="tab:green", ls="--", lw=1)
    curve = save_figure(figure, Path(config.out_dir) / "learning_curve.png")
    evaluations = [r for r in history if r["kind"] == "eval"]
    return {
        "seed": config.seed,
        "target_score": target,
        "consecutive": consecutive,
        "met": met is not None,
        "wall_s": None if met is None else met["elapsed_s"],
        "steps": None if met is None else met["steps"],
        "frames": None if met is None else met["steps"] * frame_skip,
        "eval_mean": None if met is None else met["mean"],
        "stop_reason": stop_reason,
        "total_steps": total_steps,
        "total_wall_s": round(total_wall_s, 3),
        "best_eval_mean": max((r["mean"] for r in evaluations), default=None),
        # Machado et al.'s statistic beside the greedy evaluations: the last 100 training
        # episodes' mean at the run's end and at each million agent steps it passed
        "training_score": training_score(history, total_steps),
        "training_scores_by_steps": {
            steps: training_score(history, steps)
            for steps in range(1_000_000, total_steps + 1, 1_000_000)
        },
        "evaluations": len(evaluations),
        "learning_curve": str(curve),
        "config": config.to_dict(),
    }


def shared_config(runs: list[dict]) -> dict:
    """The settings every run shares; a setting that differs maps to each run's value, in order.

    Seeds and output folders always differ and are listed under "seeds" and each run instead.
    """
    configs = [run["config"] for run in runs]
    shared = {}
    for key in configs[0]:
        if key in HANDLED_HERE:
            continue
        values = [config[key] for config in configs]
        shared[key] = values[0] if all(v == values[0] for v in values) else {"differs": values}
    return shared


def write_summary(
    out: Path, script: str, argv: list[str] | None, target: float, runs: list[dict]
) -> dict:
    """Write <out>/summary.json: the command, the machine, the settings the runs share, each run,
    and the median and spread of every "when met" number over the runs that met the target."""
    met = [r for r in runs if r["met"]]
    summary = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine_description(),
        "command": " ".join([f"benchmarks/{script}", *(sys.argv[1:] if argv is None else argv)]),
        "config": shared_config(runs),
        "target_score": target,
        "seeds": [r["seed"] for r in runs],
        "met": f"{len(met)}/{len(runs)}",
        "runs": runs,
    }
    for key in WHEN_MET_KEYS:
        if key in runs[0]:
            summary[key] = summarize([r[key] for r in met]) if met else None
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    values = {**SCRIPT_DEFAULTS, **(preset(args.preset) if args.preset else {})}
    values.update(
        {
            f.name: getattr(args, f.name)
            for f in dataclasses.fields(TrainConfig)
            if hasattr(args, f.name)
        }
    )
    target = values.pop("target_score")  # run_seed passes it on with eval_mode "live"
    if target is None:
        print("time_to_score.py: error: --target-score is required", file=sys.stderr)
        return 2
    try:
        base = TrainConfig(**values)
    except ValueError as error:
        print(f"time_to_score.py: error: {error}", file=sys.stderr)
        return 2
    if base.eval_episodes < 1:
        print("time_to_score.py: error: --eval-episodes must be at least 1", file=sys.stderr)
        return 2
    out = Path(args.out)
    runs = []
    if args.rescore and not args.from_runs:
        print("time_to_score.py: error: --rescore needs --from-runs", file=sys.stderr)
        return 2
    given = [
        name for name in RESCORE_FIELDS if hasattr(args, name)
    ]  # options left out keep the run's
    rescore = {name: values[name] for name in given} if args.rescore else None
    if args.from_runs:
        sources = [(None, folder) for folder in args.from_runs]
    else:
        sources = [(seed, None) for seed in args.seeds]
    for seed, folder in sources:
        if folder is None:
            config = base.replace(seed=seed, out_dir=str(out / f"seed-{seed}"))
            run = run_seed(config, target, args.quiet, args.consecutive)
        else:
            try:
                run = read_run(folder, target, rescore, out, args.consecutive)
            except ValueError as error:
                print(f"time_to_score.py: error: {error}", file=sys.stderr)
                return 2
            seed = run["seed"]
        runs.append(run)
        when = (
            f"met after {run['wall_s']:.1f} s, {run['steps']:,} steps, {run['frames']:,} frames "
            f"(eval mean {run['eval_mean']:.1f})"
            if run["met"]
            else f"not met ({run['stop_reason']} after {run['total_wall_s']:.0f} s, "
            f"best eval mean {run['best_eval_mean']})"
        )
        print(f"seed {seed}: target {target:g} {when}", flush=True)
    summary = write_summary(out, "time_to_score.py", argv, target, runs)
    met = [r for r in runs if r["met"]]
    if met:
        w, s = summary["wall_s"], summary["steps"]
        print(
            f"target {target:g} met by {len(met)}/{len(runs)} seeds: wall time median "
            f"{w['median']:.1f} s (min {w['min']:.1f}, max {w['max']:.1f}), agent steps median "
            f"{s['median']:,.0f} (min {s['min']:,.0f}, max {s['max']:,.0f})"
        )
    else:
        print(f"target {target:g} met by 0/{len(runs)} seeds")
    print(f"summary: {out / 'summary.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
