"""Unit 5's figures and harnesses (notebook 05_beyond_one_machine), called by name from its cells.

The measurements run the package's own code: the trainer with either backend
(throughput.trainer_speed), the parameter server's costs (scaling.measure_server_costs), and the
scaling model (scaling.ScalingModel). Each plot returns a matplotlib Figure (no pyplot state).
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from a3c_course.lessons.figures.drawing import arrow, box
from a3c_course.measure.scaling import ScalingModel, limits_table
from a3c_course.measure.throughput import machine_description, trainer_speed
from a3c_course.training.config import TrainConfig

SERVER = (
    "parameter server (an actor)\nnetwork $\\theta$, Adam state\napplies each gradient\non arrival"
)
EVALUATOR = "evaluator (an actor)\nscores $\\theta$ every minute;\nwrites the run's files"
WORKER = "worker {i} (an actor)\npull $\\theta$ -> rollout\n-> gradient -> push"


def draw_parameter_server(workers: int = 4, machines: int = 3) -> Figure:
    """The Ray backend's design: on the first machine the parameter server and the evaluator; the
    workers on the other machines, stacked one machine above the next; a gradient goes in (red),
    the weights come back (blue)."""
    if machines < 2 or workers < machines - 1:
        raise ValueError(
            f"need machines >= 2 and workers >= machines - 1, got {machines}, {workers}"
        )
    figure = Figure(figsize=(9.5, 4.6), dpi=80)
    ax = figure.subplots()
    ax.set(xlim=(0, 10), ylim=(0, 5.3))
    ax.set_axis_off()
    box(ax, (0.15, 0.2), (3.1, 4.7), "", "#f4f4f4", ls="--")
    ax.text(1.7, 4.98, "machine 0 (starts the run)", ha="center", fontsize=9)
    box(ax, (0.4, 2.7), (2.6, 1.8), SERVER, "#ffe9a8")
    box(ax, (0.4, 0.5), (2.6, 1.4), EVALUATOR, "#e8e0f5")
    height = 5.0 / (machines - 1)
    for machine, ids in enumerate(np.array_split(np.arange(workers), machines - 1), start=1):
        y = 0.2 + (machines - 1 - machine) * height  # machine 1 at the top
        box(ax, (6.2, y), (3.6, height - 0.15), "", "#f4f4f4", ls="--")
        ax.text(9.7, y + height - 0.35, f"machine {machine}", ha="right", fontsize=9)
        slot = (height - 0.5) / len(ids)
        for k, i in enumerate(ids):
            bottom = y + 0.1 + (len(ids) - 1 - k) * slot
            box(ax, (6.35, bottom), (2.3, slot - 0.15), WORKER.format(i=i), "#cfe3ff", 8)
            middle = bottom + (slot - 0.15) / 2
            arrow(ax, (6.3, middle + 0.1), (3.05, 3.6 + 0.04 * (middle - 2.5)), "tab:red")
            arrow(ax, (3.05, 3.5 + 0.04 * (middle - 2.5)), (6.3, middle - 0.1), "tab:blue")
    ax.set_title(
        "red: one rollout's clipped gradient (push); blue: the weights after the step (its answer)",
        fontsize=10,
    )
    return figure


def measure_staleness(
    config: TrainConfig, counts: tuple[int, ...], seconds: float
) -> dict[str, dict[int, float]]:
    """Mean staleness of the gradients with each backend and worker count: backend -> workers ->
    mean updates by other workers between a worker's pull and its push (a real training run each,
    no evaluator, measured for `seconds` after its first report: throughput.trainer_speed)."""
    return {
        backend: {
            n: trainer_speed(config.replace(backend=backend, workers=n), seconds).staleness
            for n in counts
        }
        for backend in ("hogwild", "ray")
    }


def plot_staleness(measured: dict[str, dict[int, float]]) -> Figure:
    """Bars: each backend's mean staleness per worker count; dashed: n - 1, the staleness when
    every other worker updates once during each rollout of this one."""
    figure = Figure(figsize=(7, 3.4), dpi=80)
    ax = figure.subplots()
    counts = sorted(next(iter(measured.values())))
    x = np.arange(len(counts))
    for k, (backend, values) in enumerate(measured.items()):
        means = [values[n] for n in counts]
        bars = ax.bar(x + (k - 0.5) * 0.38, means, width=0.36, label=backend)
        ax.bar_label(bars, fmt="%.1f", fontsize=8)
    ax.plot(x, [n - 1 for n in counts], "k--", lw=1, label="n - 1")
    ax.set(
        xticks=x,
        xticklabels=[str(n) for n in counts],
        xlabel="workers",
        ylabel="mean staleness (updates)",
        title="How stale a gradient is when it lands",
    )
    ax.legend(fontsize=8)
    return figure


def scaling_summary(model: ScalingModel) -> str:
    """The model's inputs in one line, each labelled measured (on which host) or assumed, then
    where one server saturates (scaling.limits_table)."""
    host = machine_description().split(", load average")[0]
    return (
        f"measured here ({host}): "
        f"server: {model.apply_s * 1e3:.2f} ms to apply a gradient, {model.reply_s * 1e3:.2f} ms "
        f"to copy the weights, {model.ray_s * 1e3:.2f} ms for Ray's part (receiving the gradient, "
        f"sending the answer); {model.model_bytes / 1e6:.2f} MB a gradient; a worker: "
        f"{model.worker_steps_per_s:,.0f} agent steps/s, {model.updates_per_worker:.1f} updates/s"
        "\nassumed: the links' speeds (full duplex, the server's link the only bottleneck)"
        f"\n\n{limits_table(model)}"
    )


def plot_scaling(model: ScalingModel, max_workers: int = 1_000) -> Figure:
    """Agent steps/s against workers: what the workers could make (the slope) and where one
    server stops them: its own time (compute) and its link at 1 and 10 Gbit/s."""
    figure = Figure(figsize=(7.5, 4), dpi=80)
    ax = figure.subplots()
    workers = np.logspace(0, np.log10(max_workers), 200)
    ceilings = {
        "server's compute": model.compute_limit,
        "1 Gbit/s link": model.network_limit(1.0),
        "10 Gbit/s link": model.network_limit(10.0),
    }
    limit = min(ceilings.values())
    ax.loglog(workers, workers * model.worker_steps_per_s, "k:", label="workers alone")
    got = np.minimum(workers * model.worker_steps_per_s, limit * model.steps_per_update)
    ax.loglog(workers, got, "k", lw=2, label="one server")
    for (name, updates), style in zip(ceilings.items(), ("-", "--", "-."), strict=True):
        ax.axhline(updates * model.steps_per_update, ls=style, lw=1, color="tab:red", label=name)
    knee = limit / model.updates_per_worker
    ax.axvline(knee, color="0.6", lw=1)
    ax.text(knee * 1.1, model.worker_steps_per_s * 1.5, f"{knee:,.0f} workers", fontsize=9)
    ax.set(xlabel="workers", ylabel="agent steps/s", title="Where one parameter server saturates")
    ax.legend(fontsize=8, loc="upper left")
    return figure
