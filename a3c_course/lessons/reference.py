"""Reference learning curves: is my run on track?

The course ships the metrics of its own training runs in `a3c_course/data/reference/<game>/`: the
episode and evaluation records of each run's `metrics.jsonl`, gzipped (`<game>-seed<S>.jsonl.gz`),
and runs.json, each run's command and config. A run's curve is the moving average of its training
episodes' raw scores; the reference band is the range of those curves over the shipped runs (min to
max, with the median), by agent steps or by wall-clock minutes.

    from a3c_course.lessons.reference import plot_reference
    plot_reference(result.history, game="pong", by="minutes")   # your run over the band
    plot_reference(game="pong")                                # the band alone

Wall-clock time depends on the machine: the shipped runs' machine and commands are in runs.json
beside them. Steps do not: compare by steps when your machine differs.
"""

from __future__ import annotations

import functools
import gzip
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from a3c_course.lessons.pretrained import data_folder
from a3c_course.lessons.reports import moving_average

AXES = {"steps": "agent steps", "minutes": "wall-clock minutes"}
SUFFIX = ".jsonl.gz"  # an hour of Breakout is 10,000 episode records: 1 MB as text, 0.1 MB gzipped


def reference_games() -> list[str]:
    """The games with shipped reference runs."""
    root = data_folder() / "reference"
    return sorted(p.name for p in root.iterdir() if p.is_dir() and any(p.glob(f"*{SUFFIX}")))


def reference_runs(game: str) -> dict[str, list[dict[str, Any]]]:
    """{run name: its records} for every shipped run of `game`; ValueError naming the choices.

    The files are read once per process (the training panel redraws every few seconds); treat the
    records as read-only.
    """
    if not isinstance(game, str) or game.lower() not in reference_games():
        raise ValueError(
            f"game: no reference runs for {game!r}; available: {', '.join(reference_games())}"
        )
    return _read_runs(game.lower())


@functools.cache
def _read_runs(game: str) -> dict[str, list[dict[str, Any]]]:
    folder: Path = data_folder() / "reference" / game
    runs = {}
    for path in sorted(folder.glob(f"*{SUFFIX}")):
        lines = gzip.decompress(path.read_bytes()).decode().splitlines()
        runs[path.name.removesuffix(SUFFIX)] = [json.loads(line) for line in lines if line.strip()]
    return runs


def score_curve(
    history: Sequence[dict[str, Any]], by: str = "steps", window: int = 20
) -> tuple[np.ndarray, np.ndarray]:
    """(x, y): the moving average over `window` training episodes of their raw scores, at each
    episode's end, in agent steps or in minutes (the records' elapsed_s)."""
    if by not in AXES:
        raise ValueError(f"by must be one of {', '.join(map(repr, AXES))}, got {by!r}")
    episodes = [r for r in history if r.get("kind") == "episode"]
    if by == "steps":
        x = np.array([r["steps"] for r in episodes], dtype=float)
    else:
        x = np.array([r["elapsed_s"] / 60 for r in episodes], dtype=float)
    return x, moving_average([r["score"] for r in episodes], window)


def reference_band(
    game: str, by: str = "steps", points: int = 200, window: int = 20
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(x, low, median, high) of the shipped runs' score curves on a common grid of `points`,
    from 0 to where the shortest run ends (each curve is linearly interpolated)."""
    curves = [score_curve(h, by, window) for h in reference_runs(game).values()]
    curves = [(x, y) for x, y in curves if x.size >= 2]
    if not curves:
        raise ValueError(f"the reference runs of {game!r} hold no episodes")
    end = min(x[-1] for x, _ in curves)
    grid = np.linspace(min(x[0] for x, _ in curves), end, points)
    ys = np.stack([np.interp(grid, x, y) for x, y in curves])
    return grid, ys.min(0), np.median(ys, 0), ys.max(0)


def plot_reference(
    history: Sequence[dict[str, Any]] | None = None,
    *,
    game: str = "pong",
    by: str = "steps",
    window: int = 20,
    label: str = "your run",
    ax=None,
):
    """The shipped runs' band (min-max over runs, median line) and, if given, your run's curve
    (TrainResult.history or the records of metrics.jsonl) on top. Returns the Figure."""
    from matplotlib.figure import Figure

    if ax is None:
        figure = Figure(figsize=(6.4, 3.6), dpi=100)
        ax = figure.subplots()
    else:
        figure = ax.figure
    x, low, median, high = reference_band(game, by, window=window)
    runs = len(reference_runs(game))
    ax.fill_between(x, low, high, color="0.8", label=f"course runs (min-max of {runs})")
    ax.plot(x, median, color="0.45", lw=1.5, label="course runs (median)")
    if history:
        mine_x, mine_y = score_curve(history, by, window)
        if mine_x.size:
            ax.plot(mine_x, mine_y, color="C3", lw=2, label=label)
    ax.set_xlabel(AXES[by])
    ax.set_ylabel(f"training score (mean of {window} episodes)")
    ax.set_title(f"{game}: your run against the course's reference runs")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    return figure
