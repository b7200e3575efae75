"""Ship a trained agent and reference curves with the package (a maintainer's tool).

    .venv/bin/python tools/ship_agent.py agent runs/pong-seed0 --game pong \
        --command "a3c-course train --game pong --seed 0 --minutes 15 --out runs/pong-seed0"
    .venv/bin/python tools/ship_agent.py reference runs/pong-seed0 runs/pong-seed1 --game pong \
        --commands "a3c-course train --seed 0 ..." "a3c-course train --seed 1 ..." \
        --measured-by "benchmarks/compare.py ... (date, raw emulator speed)"

agent: takes the run's best.pt (the evaluated weights with the best mean; checkpoint.pt with
    --last; with --select K, the best of the K snapshots whose training evaluations scored highest,
    re-scored on --select-episodes games of other seeds than the card's), stores its weights in
    float16 as a3c_course/data/<game>.pt, evaluates that file with `a3c_course.training.evaluate` (the code
    behind `a3c-course evaluate`) over --episodes games under the course's protocol (sticky actions
    0.25) and again in the deterministic game (sticky actions 0), and writes the card
    a3c_course/data/<game>.json: the training command, seed, versions, machine, training time and
    steps, and both evaluations with the commands that reproduce them.
rescore: evaluates a shipped agent again, both protocols, the same games, after the evaluation's
    environment changed; the card keeps its training part and records why (`rescored`).
held-out: scores a shipped agent on games no decision ever used (seeds from HELD_OUT_SEED; the
    card's own games, seeds 0-29, chose what happened to the Pong run after them), greedy and
    with sampled actions (its own stochastic policy, as the agent plays while learning: the
    nearest a finished agent comes to Machado et al.'s statistic), sticky actions 0.25 both; the
    card records them as `evaluation_held_out` and `evaluation_sampled`.
reference: copies each run's episode and evaluation records (no loss records: they are most of
    the file and the band does not use them), gzipped, to
    a3c_course/data/reference/<game>/<game>-seed<seed>.jsonl.gz, and records each run's config and
    training command in runs.json beside them, with the machine and --measured-by (the sitting).
"""

from __future__ import annotations

import argparse
import datetime
import gzip
import json
import sys
from pathlib import Path

import torch

import a3c_course
from a3c_course.a3c.envs import STICKY_ACTIONS
from a3c_course.lessons.reference import SUFFIX
from a3c_course.measure.throughput import machine_description
from a3c_course.training.checkpoint import (
    BEST_CHECKPOINT_NAME,
    CHECKPOINT_NAME,
    load_checkpoint,
    model_from_checkpoint,
    save_checkpoint,
)
from a3c_course.training.evaluate import evaluate
from a3c_course.training.run_record import CONFIG_NAME, METRICS_NAME, read_metrics

DATA = Path(a3c_course.__file__).parent / "data"


SELECTION_SEED = 10_000  # selection games never reuse the card's seeds (0 .. episodes - 1)
HELD_OUT_SEED = 1_000_000  # games no training, selection or card evaluation has used


def select_snapshot(run: Path, game: str, count: int, episodes: int) -> Path:
    """Of the `count` snapshots with the best training evaluations, the one that scores best on
    `episodes` fresh games (seeds from SELECTION_SEED): one lucky 10-game mean does not choose."""
    evaluations = [r for r in read_metrics(run / METRICS_NAME) if r.get("snapshot")]
    candidates = sorted(evaluations, key=lambda r: r["mean"], reverse=True)[:count]
    scored = []
    for record in candidates:
        path = run / "snapshots" / record["snapshot"]
        mean = evaluate(load_checkpoint(path, expect_game=game), game, episodes,
                        seed=SELECTION_SEED).mean  # fmt: skip
        print(f"  {record['snapshot']}: training evaluation {record['mean']:+.1f}, now {mean:+.2f}")
        scored.append((mean, path))
    return max(scored)[1]


def evaluation_record(
    checkpoint, game: str, episodes: int, sticky: float, label: str, seed: int = 0,
    greedy: bool = True,
) -> dict:  # fmt: skip
    result = evaluate(checkpoint, game, episodes, seed=seed, sticky_actions=sticky, greedy=greedy)
    flags = "" if sticky == STICKY_ACTIONS else f" --sticky-actions {sticky:g}"
    flags += (f" --seed {seed}" if seed else "") + ("" if greedy else " --sample")
    policy = "greedy" if greedy else "sampled actions"
    return {
        "command": f"a3c-course evaluate --pretrained {game} --episodes {episodes}{flags}",
        "protocol": label,
        "sticky_actions": sticky,
        "episodes": episodes,
        "policy": f"{policy}, full games, up to 30 random no-ops (seed {seed} + k for game k), "
        "raw score",
        "mean": result.mean,
        "std": result.std,
        "min": result.min,
        "max": result.max,
        "capped": sum(result.capped),
        "scores": result.scores,
    }


def ship_agent(
    run: Path, game: str, command: str, episodes: int, last: bool, select: int = 0,
    select_episodes: int = 20, note: str | None = None,
) -> Path:  # fmt: skip
    if select:
        source = select_snapshot(run, game, select, select_episodes)
    else:
        source = run / (CHECKPOINT_NAME if last else BEST_CHECKPOINT_NAME)
    checkpoint = load_checkpoint(source, expect_game=game)
    model = model_from_checkpoint(checkpoint).half()  # float16 storage: half the size
    target = DATA / f"{game}.pt"
    save_checkpoint(target, model, checkpoint.config, **checkpoint.metadata)
    shipped = load_checkpoint(target, expect_game=game)  # evaluate the file exactly as shipped
    protocol, deterministic = card_evaluations(shipped, game, episodes)
    history = read_metrics(run / METRICS_NAME)
    at_save = [r for r in history if r["steps"] <= checkpoint.metadata["steps"]]
    card = {
        "game": game,
        "source": f"{source.name} of the run (steps {checkpoint.metadata['steps']:,})"
        + (f", chosen of {select} snapshots by {select_episodes} fresh games" if select else ""),
        "training": {
            "command": command,
            "seed": checkpoint.config.seed,
            "config": checkpoint.config.to_dict(),
            "steps": int(checkpoint.metadata["steps"]),
            "minutes": round(at_save[-1]["elapsed_s"] / 60, 1) if at_save else None,
            "eval_mean_during_training": checkpoint.metadata.get("eval_mean"),
            **({"note": note} if note else {}),
        },
        "evaluation": protocol,
        "evaluation_deterministic": deterministic,
        **measured_with(),
    }
    target.with_suffix(".json").write_text(json.dumps(card, indent=2) + "\n")
    print(f"{target}: {target.stat().st_size / 1e6:.2f} MB, evaluation mean {protocol['mean']:+.2f} "
          f"(deterministic: {deterministic['mean']:+.2f})")  # fmt: skip
    return target


# The course's protocol with its game-specific choices (a3c_course/training/evaluate.py).
PROTOCOL = (
    "the course's (sticky actions 0.25, full games, raw score; the minimal action set, up to 30 "
    "no-ops, FIRE at each serve)"
)


def card_evaluations(shipped, game: str, episodes: int) -> tuple[dict, dict]:
    """The card's two evaluations: the course's protocol, then the deterministic game."""
    return (
        evaluation_record(shipped, game, episodes, STICKY_ACTIONS, PROTOCOL),
        evaluation_record(shipped, game, episodes, 0.0, "deterministic (sticky actions 0)"),
    )


def measured_with() -> dict:
    return {
        "package_version": a3c_course.__version__,
        "torch_version": torch.__version__,
        "machine": machine_description().split(", load average")[0],
        "date": datetime.date.today().isoformat(),
    }


def shipped_agent(game: str) -> tuple[Path, dict, object]:
    """A shipped agent's card (its path and contents) and its weights, loaded as shipped."""
    target = DATA / f"{game}.pt"
    card_path = target.with_suffix(".json")
    return card_path, json.loads(card_path.read_text()), load_checkpoint(target, expect_game=game)


def rescore_agent(game: str, reason: str) -> None:
    """Evaluate the shipped agent again (same weights, same games) after the evaluation's
    environment changed, and record why on its card; the training part is kept."""
    card_path, card, shipped = shipped_agent(game)
    episodes = card["evaluation"]["episodes"]
    before = card["evaluation"]["mean"]
    card["evaluation"], card["evaluation_deterministic"] = card_evaluations(shipped, game, episodes)
    card.update(measured_with())
    card["rescored"] = card.get("rescored", []) + [
        {"date": card["date"], "reason": reason, "mean_before": before}
    ]
    card_path.write_text(json.dumps(card, indent=2) + "\n")
    print(f"{card_path}: evaluation mean {before:+.2f} -> {card['evaluation']['mean']:+.2f} "
          f"(deterministic: {card['evaluation_deterministic']['mean']:+.2f})")  # fmt: skip


def score_held_out(game: str, episodes: int) -> None:
    """Score the shipped agent on games no decision used, greedy and sampled, onto its card."""
    card_path, card, shipped = shipped_agent(game)
    label = f"{PROTOCOL}, games no decision used"
    card["evaluation_held_out"] = evaluation_record(
        shipped, game, episodes, STICKY_ACTIONS, label, seed=HELD_OUT_SEED
    )
    card["evaluation_sampled"] = evaluation_record(
        shipped, game, episodes, STICKY_ACTIONS, f"{label}, the policy's sampled actions",
        seed=2 * HELD_OUT_SEED, greedy=False,
    )  # fmt: skip
    card["held_out_measured_with"] = measured_with()
    card_path.write_text(json.dumps(card, indent=2) + "\n")
    print(f"{card_path}: held-out games {card['evaluation_held_out']['mean']:+.2f} greedy, "
          f"{card['evaluation_sampled']['mean']:+.2f} sampled")  # fmt: skip


def ship_reference(runs: list[Path], game: str, commands: list[str], measured_by: str) -> None:
    folder = DATA / "reference" / game
    folder.mkdir(parents=True, exist_ok=True)
    index = {}
    for run, command in zip(runs, commands, strict=True):
        records = [r for r in read_metrics(run / METRICS_NAME) if r["kind"] in ("episode", "eval")]
        config = json.loads((run / CONFIG_NAME).read_text())
        name = f"{game}-seed{config['seed']}"
        text = "".join(json.dumps(r) + "\n" for r in records)
        path = folder / f"{name}{SUFFIX}"
        # mtime 0: the same runs give the same bytes
        path.write_bytes(gzip.compress(text.encode(), mtime=0))
        index[name] = {"command": command, "config": config}
        print(f"{path}: {len(records)} records")
    index_path = folder / "runs.json"
    known = json.loads(index_path.read_text()) if index_path.is_file() else {}
    known.update(index)
    info = {"machine": machine_description().split(", load average")[0], "measured_by": measured_by}
    index_path.write_text(json.dumps({**known, "_machine": info}, indent=2) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="what", required=True)
    agent = commands.add_parser("agent", help="ship a run's best network as <game>.pt + card")
    agent.add_argument("run", type=Path)
    agent.add_argument("--game", required=True)
    agent.add_argument("--command", required=True, help="the command that trained the run")
    agent.add_argument("--episodes", type=int, default=30, help="games per evaluation (30)")
    agent.add_argument("--select", type=int, default=0, metavar="K",
                       help="choose among the K best-scored snapshots by fresh games")  # fmt: skip
    agent.add_argument("--select-episodes", type=int, default=20)
    agent.add_argument("--last", action="store_true", help="ship checkpoint.pt, not best.pt")
    agent.add_argument("--note", help="how the training went, for the card (sessions, host load)")
    rescore = commands.add_parser("rescore", help="evaluate a shipped agent again (its card)")
    rescore.add_argument("--game", required=True)
    rescore.add_argument("--reason", required=True, help="what changed in the evaluation")
    held_out = commands.add_parser("held-out", help="score a shipped agent on unused games")
    held_out.add_argument("--game", required=True)
    held_out.add_argument("--episodes", type=int, default=30, help="games per evaluation (30)")
    reference = commands.add_parser("reference", help="ship runs' curves as reference runs")
    reference.add_argument("runs", type=Path, nargs="+")
    reference.add_argument("--game", required=True)
    reference.add_argument(
        "--commands", nargs="+", required=True, help="the command of each run, in order"
    )
    reference.add_argument(
        "--measured-by", required=True, help="the sitting that made the runs: command, date, raw speed"
    )
    args = parser.parse_args(argv)
    if args.what == "agent":
        ship_agent(args.run, args.game, args.command, args.episodes, args.last, args.select,
                   args.select_episodes, args.note)  # fmt: skip
    elif args.what == "rescore":
        rescore_agent(args.game, args.reason)
    elif args.what == "held-out":
        score_held_out(args.game, args.episodes)
    else:
        ship_reference(args.runs, args.game, args.commands, args.measured_by)
    return 0


if __name__ == "__main__":
    sys.exit(main())
