"""`a3c-course train`: every TrainConfig field is a flag (built from its Setting in config.py);
--preset, --resume and the run's report.

a3c-course train --game pong --workers 2 --minutes 30 --out runs/pong
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import sys
from collections.abc import Callable

from a3c_course.cli.common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    UsageError,
    add_command,
    check_writable,
)
from a3c_course.training.checkpoint import CheckpointError, load_checkpoint
from a3c_course.training.config import PRESETS, RAY_MISSING, TrainConfig, preset


def boolean(text: str) -> bool:
    """'true'/'false' (also yes/no, on/off, 1/0) as a bool; anything else is a usage error."""
    words = {"true": True, "yes": True, "on": True, "1": True}
    words.update({"false": False, "no": False, "off": False, "0": False})
    if text.lower() not in words:
        raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
    return words[text.lower()]


def flag_type(name: str) -> Callable[[str], object]:
    """The converter of the flag for TrainConfig field `name`: its Setting's kind, and `none` as
    None where the field allows None."""
    setting = TrainConfig.settings()[name]
    convert = boolean if setting.kind is bool else setting.kind
    if not setting.optional:
        return convert

    def parse(text: str):
        return None if text.lower() == "none" else convert(text)

    parse.__name__ = convert.__name__  # argparse names the type in its error messages
    return parse


def flag_help(field: dataclasses.Field) -> str:
    """A field's help line in --help: its Setting's help, its default and what `none` means."""
    setting = field.metadata["setting"]
    if field.default_factory is not dataclasses.MISSING:
        default = field.default_factory()
    else:
        default = field.default
    if default is None:
        return f"{setting.help} (default: none, meaning {setting.none_means})"
    none = f"; 'none' for {setting.none_means}" if setting.optional else ""
    return f"{setting.help} (default: {default}){none}"


def add_train(subparsers) -> None:
    parser = add_command(
        subparsers, "train", run_train, "train an agent with asynchronous workers (A3C)"
    )
    for field in dataclasses.fields(TrainConfig):  # every field a flag, all read from its Setting
        setting = field.metadata["setting"]
        parser.add_argument(
            *setting.aliases,
            "--" + field.name.replace("_", "-"),
            dest=field.name,
            type=flag_type(field.name),
            choices=setting.options() or None,
            default=argparse.SUPPRESS,  # only what the user gives overrides TrainConfig's defaults
            metavar=None if setting.choices else setting.metavar,
            help=flag_help(field),
        )
    parser.add_argument(
        "--preset",
        choices=list(PRESETS),
        default=argparse.SUPPRESS,
        help="start from a named preset's settings (a flag given beside it wins): "
        + "; ".join(f"{name}: {_describe(values)}" for name, values in PRESETS.items()),
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue the run saved in --out: its weights, optimizer state, metrics and step "
        "count; its settings, except those given here. --steps counts all the run's steps, "
        "--minutes this session's",
    )
    parser.add_argument(
        "--no-report",
        dest="report",
        action="store_false",
        help="do not write learning_curve.png and gameplay.mp4 at the end",
    )


def _describe(values: dict) -> str:
    return ", ".join(f"{key} {value}" for key, value in values.items())


def config_from_args(args: argparse.Namespace, base: TrainConfig | None = None) -> TrainConfig:
    """TrainConfig from the flags given; the others from base (default: TrainConfig's defaults)."""
    values = {
        f.name: getattr(args, f.name)
        for f in dataclasses.fields(TrainConfig)
        if hasattr(args, f.name)
    }
    if getattr(args, "preset", None) is not None:
        values = {**preset(args.preset), **values}
    try:
        return base.replace(**values) if base is not None else TrainConfig(**values)
    except ValueError as error:
        raise UsageError(str(error)) from None


def resumed_config(args: argparse.Namespace) -> TrainConfig:
    """The saved run's config (from --out's checkpoint) with the flags given on top."""
    from a3c_course.training.checkpoint import CHECKPOINT_NAME

    out_dir = config_from_args(args).out_dir
    try:
        saved = load_checkpoint(f"{out_dir}/{CHECKPOINT_NAME}").config
    except CheckpointError as error:
        raise UsageError(f"--resume: {error}") from None
    where = {"ray_address": None} if hasattr(args, "backend") else {}  # a new backend: its own
    return config_from_args(args, saved.replace(out_dir=out_dir, **where))


def run_train(args: argparse.Namespace) -> int:
    """Train an A3C agent: worker processes update one shared model (Hogwild), an evaluator process
    scores it with the greedy policy; with --backend ray the workers are Ray actors, on this
    machine or a cluster (--address), around one parameter server. Stops at the first budget
    reached (--steps, --minutes, --target-score) or on Ctrl-C, then writes checkpoint.pt,
    metrics.jsonl and config.json into --out, with a learning curve (learning_curve.png) and a
    short video of the final agent (gameplay.mp4)."""
    from a3c_course.training.files import StorageError
    from a3c_course.training.run_record import WorkerError
    from a3c_course.training.runlock import RunFolderInUse
    from a3c_course.training.trainer import train  # imported here: `--help` stays fast

    config = resumed_config(args) if args.resume else config_from_args(args)
    if config.backend == "ray" and importlib.util.find_spec("ray") is None:
        raise UsageError(RAY_MISSING)
    check_writable(config.out_dir)
    budgets = ", ".join(
        text
        for text in (
            config.max_steps and f"{config.max_steps:,} steps",
            config.max_minutes and f"{config.max_minutes:g} minutes",
            config.target_score is not None and f"score {config.target_score:g}",
        )
        if text
    )
    print(
        f"{'Resuming' if args.resume else 'Training'} on {config.env_id}: {config.workers} "
        f"workers x {config.envs_per_worker} environments, until {budgets or 'Ctrl-C'}. "
        f"Output: {config.out_dir}/"
    )
    try:
        result = train(config, progress=not args.quiet, resume=args.resume)
    except (CheckpointError, ValueError, RunFolderInUse) as error:  # nothing to continue, or busy
        raise UsageError(str(error)) from None
    except WorkerError as error:
        print(f"a3c-course train: {error}", file=sys.stderr)
        print(f"The model so far is saved in {error.result.checkpoint}", file=sys.stderr)
        return EXIT_FAILED
    except StorageError as error:  # a full disk, a folder deleted or not writable: one line
        print(f"a3c-course train: error: {error}", file=sys.stderr)
        return EXIT_FAILED
    last = result.last_evaluation()
    recent = result.recent_score()
    print(
        f"Stopped ({result.stop_reason}) after {result.steps:,} agent steps in "
        f"{result.elapsed_s / 60:.1f} min ({result.steps_per_s:.0f} steps/s)."
    )
    if recent is not None:
        print(f"Mean raw score of the last {config.score_window} training episodes: {recent:.2f}")
    if last is not None:
        print(
            f"Last evaluation at {last['steps']:,} steps: mean score {last['mean']:.2f} over {len(last['scores'])} episodes"
        )
    print(f"Checkpoint: {result.checkpoint}\nMetrics:    {result.metrics_path}")
    if args.report:
        write_report(config.out_dir)
    return EXIT_INTERRUPTED if result.stop_reason == "interrupted" else EXIT_OK


def write_report(out_dir: str) -> None:
    """The learning curve and a gameplay video beside the checkpoint; a failure here is a warning
    (the checkpoint and metrics are already safe)."""
    from a3c_course.lessons.reports import write_run_report

    print("Writing the learning curve and a gameplay video of the final agent...", flush=True)
    try:
        report = write_run_report(out_dir)
    except Exception as error:
        print(
            f"a3c-course train: warning: no report written: {error} (the checkpoint and the "
            "metrics are kept)",
            file=sys.stderr,
        )
        return
    print(f"Learning curve: {report.learning_curve}\nGameplay video: {report.gameplay}")
