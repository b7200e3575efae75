"""Run reports: a learning-curve picture and a gameplay video of the final agent, in the run's folder.

    from a3c_course.lessons.reports import plot_learning_curve, write_run_report

    figure = plot_learning_curve(result.history)           # a matplotlib Figure, for a notebook
    paths = write_run_report("runs/pong")                  # learning_curve.png, gameplay.mp4

`a3c-course train` writes both beside checkpoint.pt, metrics.jsonl and config.json when it stops.
Each file is written under a temporary name and renamed, so a report is either whole or absent.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from a3c_course.training.files import replace_atomically

LEARNING_CURVE_NAME = "learning_curve.png"
GAMEPLAY_NAME = "gameplay.mp4"
REPORT_MAX_FRAMES = 600  # 20 s at 30 frames per second: enough to see the agent, quick to write
REPORT_EPISODE_STEPS = 2000  # one recorded episode is cut after this many agent steps


def moving_average(values: Sequence[float], window: int) -> np.ndarray:
    """Mean of the last `window` values at each position (fewer at the start)."""
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return values
    sums = np.cumsum(np.insert(values, 0, 0.0))
    counts = np.minimum(np.arange(1, values.size + 1), window)
    return (sums[1:] - sums[np.arange(values.size) + 1 - counts]) / counts


def plot_learning_curve(
    history: Sequence[dict[str, Any]], *, window: int = 20, title: str | None = None, ax=None
):
    """Raw game score against agent steps: each training episode (dots), their moving average over
    `window` episodes (line) and each evaluation's mean with its min-max range (squares, bars).

    history: TrainResult.history or the records of metrics.jsonl. Returns the Figure.
    """
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    if ax is None:
        figure = Figure(figsize=(6.4, 3.6), dpi=100)  # not pyplot: no global state, thread-safe
        ax = figure.subplots()
    else:
        figure = ax.figure
    episodes = [r for r in history if r.get("kind") == "episode"]
    evaluations = [r for r in history if r.get("kind") == "eval"]
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    if episodes:
        steps = [r["steps"] for r in episodes]
        scores = [r["score"] for r in episodes]
        ax.scatter(steps, scores, s=6, alpha=0.3, color=colors[0], label="training episode")
        ax.plot(
            steps, moving_average(scores, window), color=colors[0],
            label=f"mean of the last {window}",
        )  # fmt: skip
    if evaluations:
        steps = [r["steps"] for r in evaluations]
        means = np.array([r["mean"] for r in evaluations])
        low = means - np.array([r["min"] for r in evaluations])
        high = np.array([r["max"] for r in evaluations]) - means
        ax.errorbar(
            steps, means, yerr=[low, high], fmt="s", ms=4, capsize=2, color=colors[1],
            label="evaluation (greedy): mean, min-max",
        )  # fmt: skip
    if not episodes and not evaluations:
        ax.text(0.5, 0.5, "no finished episode yet", ha="center", va="center",
                transform=ax.transAxes)  # fmt: skip
    else:
        ax.legend(loc="upper left", fontsize="small")
    ax.set_xlabel("agent steps (all workers)")
    ax.set_ylabel("raw game score")
    if title:
        ax.set_title(title)
    ax.grid(alpha=0.3)
    figure.tight_layout()
    return figure


def save_figure(figure, path: str | os.PathLike, dpi: int = 100) -> Path:
    """Save a matplotlib figure as PNG atomically."""
    path = Path(path)
    return replace_atomically(path, lambda temp: figure.savefig(temp, dpi=dpi, format="png"))


def write_gameplay_video(
    path: str | os.PathLike,
    game: str,
    model=None,
    episodes: int = 1,
    *,
    greedy: bool = True,
    seed: int = 0,
    max_steps: int | None = REPORT_EPISODE_STEPS,
    max_frames: int | None = REPORT_MAX_FRAMES,
    agent_view: bool = False,
    fps: int = 30,
):
    """Record episodes of `model` (None: random play) with a score caption and write them to path
    (.mp4 or .gif) atomically. Returns (path written, the recorded episodes)."""
    from a3c_course.lessons.play import play_episodes
    from a3c_course.lessons.video import VIDEO_FORMATS, captioned_frames, write_video

    path = Path(path)
    if path.suffix.lower() not in VIDEO_FORMATS:
        raise ValueError(
            f"Unknown video extension {path.suffix!r} in {str(path)!r}; use one of "
            f"{', '.join(VIDEO_FORMATS)}."
        )
    if max_frames is not None and max_steps is not None:
        max_steps = min(max_steps, max_frames)  # frames past the cap would never be shown
    recorded = play_episodes(game, model, episodes, greedy=greedy, seed=seed, max_steps=max_steps)
    frames = captioned_frames(recorded, agent_view=agent_view, max_frames=max_frames)
    written = {}

    def write(temp: Path) -> None:
        written["path"] = write_video(frames, temp, fps=fps)
        if written["path"] != temp:  # no ffmpeg: a GIF was written beside temp
            os.replace(written["path"], temp)

    replace_atomically(path, write)
    if written["path"].suffix != path.suffix.lower():  # no ffmpeg: write_video made a GIF
        final = path.with_suffix(written["path"].suffix)
        os.replace(path, final)
        path = final
    return path, recorded


@dataclass
class RunReport:
    learning_curve: Path
    gameplay: Path
    scores: list[float]  # raw score of each recorded episode (cut at the frame cap: so far)


def write_run_report(
    out_dir: str | os.PathLike,
    *,
    seed: int = 0,
    max_frames: int = REPORT_MAX_FRAMES,
) -> RunReport:
    """Write learning_curve.png (from metrics.jsonl) and gameplay.mp4 (one greedy episode of the
    checkpoint's network, at most max_frames frames) into a run's folder."""
    from a3c_course.training.checkpoint import (
        CHECKPOINT_NAME,
        load_checkpoint,
        model_from_checkpoint,
    )
    from a3c_course.training.run_record import METRICS_NAME, read_metrics

    out_dir = Path(out_dir)
    checkpoint = load_checkpoint(out_dir / CHECKPOINT_NAME)
    metrics = out_dir / METRICS_NAME
    history = read_metrics(metrics) if metrics.is_file() else []
    steps = checkpoint.metadata.get("steps")
    title = f"{checkpoint.config.env_id}" + (f" after {steps:,} steps" if steps else "")
    curve = save_figure(
        plot_learning_curve(history, window=checkpoint.config.score_window, title=title),
        out_dir / LEARNING_CURVE_NAME,
    )
    video, episodes = write_gameplay_video(
        out_dir / GAMEPLAY_NAME,
        checkpoint.config.game,
        model_from_checkpoint(checkpoint),
        seed=seed,
        max_frames=max_frames,
    )
    return RunReport(curve, video, [e.score for e in episodes])
