"""Unit 4's figures and harnesses (notebook 04_async_training), called by name from its cells.

Each function returns a matplotlib Figure (the object API, no pyplot state) or plain data, so that
the notebook shows it and the tests can look inside. The measurements run the package's own code:
the probe is the worker loop of `a3c_course.a3c.worker`, the gradient table the exercise's traces.
"""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import time

import numpy as np
import torch
import torch.multiprocessing as mp
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from a3c_course.a3c.model import ActorCritic
from a3c_course.a3c.optim import SharedAdam, make_shared_optimizer
from a3c_course.a3c.worker import apply_gradient, update_shared
from a3c_course.lessons.exercises import unit4
from a3c_course.lessons.figures.decorrelation import (  # noqa: F401 (section 2's, called from here)
    Decorrelation,
    correlations,
    effective_size,
    measure_decorrelation,
    plot_decorrelation,
)
from a3c_course.lessons.figures.drawing import arrow as _arrow
from a3c_course.lessons.figures.drawing import box as _box
from a3c_course.lessons.original_course import original_update
from a3c_course.lessons.pretrained import data_folder
from a3c_course.training.backend import build_shared_model
from a3c_course.training.config import TrainConfig
from a3c_course.training.processes import stop_children

# ------------------------------------------------------------------ the picture of A3C


SHARED = "shared model $\\theta$ and the optimizer's state\nin shared memory"
WORKER = (
    "worker {i} (a process): local copy $\\theta'$\nrollout -> loss -> gradient\n"
    "one batched forward pass"
)
SYNC = "blue: sync, copy $\\theta$ into $\\theta'$"
UPDATE = "red: one optimizer step on $\\theta$\nwith its gradient (no lock)"


def draw_workers(config: TrainConfig | None = None) -> Figure:
    """config.workers worker processes around one shared model; inside each, its
    config.envs_per_worker environments stepped together (one batched forward pass)."""
    config = config or TrainConfig(game="pong")
    n, envs = config.workers, config.envs_per_worker
    figure = Figure(figsize=(9.5, 4.2), dpi=80)
    ax = figure.subplots()
    ax.set(xlim=(0, 10), ylim=(-0.9, 4.4))
    ax.set_axis_off()
    _box(ax, (2.8, 3.1), (4.4, 1.0), SHARED, "#ffe9a8")
    width = 9.6 / n
    for i in range(n):
        x, shift = 0.2 + i * width, 0.8 * i / max(n - 1, 1)
        _box(ax, (x, 0.45), (width - 0.4, 1.3), WORKER.format(i=i), "#cfe3ff")
        env_w = (width - 0.4) / envs
        for e in range(envs):
            _box(ax, (x + e * env_w + 0.05, -0.75), (env_w - 0.1, 0.6), f"env {e}", "#e3f2d9", 8)
        middle = x + (width - 0.4) / 2
        _arrow(ax, (4.6 + shift, 3.05), (middle - 0.3, 1.85), "tab:blue")
        _arrow(ax, (middle + 0.3, 1.85), (4.8 + shift, 3.05), "tab:red")
    ax.text(0.1, 2.5, SYNC, color="tab:blue", fontsize=9)
    ax.text(6.6, 2.5, UPDATE, color="tab:red", fontsize=9)
    title = (
        f"{n} workers, asynchronous across workers; {envs} environments in each, stepped together"
    )
    ax.set_title(title, fontsize=10)
    return figure


# ------------------------------------------------------------------ processes and shared memory


def write_in_child(data, value: float) -> None:
    """Child process: write value into every element of data (a NumPy array or a tensor), for
    section 3's demo. A NumPy array reaches a child as a copy under every start method (inherited
    by fork, pickled by spawn); a tensor in shared memory is the parent's own memory."""
    data[:] = value


# ------------------------------------------------------------------ Hogwild: the probe


def run_probe(config: TrainConfig, workers: int, seconds: float, threads: int = 1):
    """Run unit4.hogwild_probe (the workers' step, with a clock) in `workers` processes for
    `seconds`; return (their reports, sorted by worker; the shared Adam's step counter)."""
    shared_model = build_shared_model(config)
    optimizer = make_shared_optimizer(config.optimizer, shared_model.parameters(), config.lr)
    context = mp.get_context(config.start_method)
    queue, start, children = context.Queue(), time.monotonic(), []
    try:
        for worker_id in range(workers):
            args = (worker_id, config, shared_model, optimizer, seconds, threads, start, queue)
            children.append(context.Process(target=unit4.hogwild_probe, args=args))
            children[-1].start()
        reports = [queue.get(timeout=seconds + 120) for _ in children]
    finally:  # never leave a child behind, even after an error or the stop button
        stop_children(children, timeout=10, while_waiting=lambda: time.sleep(0.05))
    for report in reports:
        if "error" in report:
            raise RuntimeError(f"worker {report['worker']} failed:\n{report['error']}")
    counter = optimizer.state[next(iter(shared_model.parameters()))]["step"]
    return sorted(reports, key=lambda r: r["worker"]), int(counter)


def staleness_table(probes: dict) -> str:
    """One line per worker count: the staleness of its updates, mean and max. (Not how many
    updates: that depends on the machine and on what else it runs.)"""
    lines = ["workers | staleness tau: mean  max"]
    for workers, (reports, _counter) in probes.items():
        tau = np.concatenate([r["staleness"] for r in reports])
        lines.append(f"{workers:7d} | {tau.mean():19.2f} {tau.max():4d}")
    return "\n".join(lines)


TIMELINE = (
    "bar = one rollout (sync -> update), triangle = its update, number = updates by the other "
    "worker in between (staleness)"
)


def plot_staleness(reports: list[dict], rollouts: int | None = None) -> Figure:
    """Two workers' run: a bar per rollout (sync to update), a triangle at its update, and above it
    the staleness (the other worker's updates in between). From the moment both workers run (every
    worker's second rollout: its first one includes starting up) to the end of the run, or only the
    first `rollouts` rollouts' worth of time when given."""
    begin = max(r["times"][min(1, len(r["times"]) - 1)][0] for r in reports)
    end = max(u for r in reports for _, u in r["times"])
    if rollouts is not None:
        duration = np.median([u - s for r in reports for s, u in r["times"]])
        end = min(end, begin + rollouts * duration)
    figure = Figure(figsize=(9, 2.4), dpi=80, layout="constrained")
    ax = figure.subplots()
    for r, colour in zip(reports, ("tab:blue", "tab:orange"), strict=False):
        for k, ((synced, updated), tau) in enumerate(zip(r["times"], r["staleness"], strict=True)):
            if begin <= synced and updated <= end:
                y, synced, updated = r["worker"], synced - begin, updated - begin
                bar = {"color": colour, "lw": 8, "alpha": 0.25 if k % 2 else 0.5}
                ax.plot([synced, updated], [y, y], solid_capstyle="butt", **bar)
                ax.plot(updated, y, "v", color=colour, ms=7)
                ax.text((synced + updated) / 2, y + 0.22, str(tau), ha="center", fontsize=8)
    ax.set(yticks=[0, 1], yticklabels=["worker 0", "worker 1"], ylim=(-0.5, 1.6))
    ax.set_xlabel("seconds since both workers were running (each one's start-up left out)")
    ax.set_title(TIMELINE, fontsize=9)
    return figure


# ------------------------------------------------------------------ the update, and Adam's state


def update_without_clearing(local_model, shared_model, optimizer, loss, max_grad_norm) -> float:
    """Section 5's update without its step 1 (local_model.zero_grad()): backward() adds into the
    local .grad, so each update hands over the sum of every rollout's gradient so far."""
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(local_model.parameters(), max_grad_norm)
    apply_gradient(shared_model, optimizer, [p.grad for p in local_model.parameters()])  # 4 and 5
    return float(norm)


def plot_accumulation(rollouts: int = 8) -> Figure:
    """The same rollouts through update_shared and through update_without_clearing: per rollout,
    the norm of the gradient each gave the optimizer, and (without clearing) of the rollout's own."""
    scenario = unit4.Scenario(f"{rollouts} rollouts", (1.0,) * rollouts, max_grad_norm=40.0)
    cleared = unit4.trace_updates(update_shared, scenario)
    summed = unit4.trace_updates(update_without_clearing, scenario)
    k = np.arange(1, rollouts + 1)
    figure = Figure(figsize=(7, 3.2), dpi=80, layout="constrained")
    ax = figure.subplots()
    norms = lambda tensors: [float(t.norm()) for t in tensors]  # noqa: E731
    ax.plot(k, norms(cleared.applied), "o-", label="with step 1: given to the optimizer")
    ax.plot(k, norms(summed.applied), "o-", label="without step 1: given to the optimizer")
    ax.plot(k, norms(summed.own), "o:", color="tab:orange", alpha=0.6,
            label="without step 1: the rollout's own gradient")  # fmt: skip
    top = 1.7 * max(norms(summed.applied))  # room for the legend above the lines
    ax.set(xlabel="rollout k", ylabel="gradient norm", ylim=(0, top), xticks=k)
    ax.set_title(
        "one update per rollout, with and without clearing the local gradients", fontsize=10
    )
    ax.legend(fontsize=8, loc="upper left")
    return figure


def gradient_table(rollouts: int = 8) -> str:
    """Two runs of the same rollouts from the same start, one through the original update and one
    through a3c_course.a3c.worker.update_shared. Per rollout and per run: the norm of that
    rollout's own gradient and of what the optimizer was given; for the original's run also their
    ratio and the cosine of what it was given with the sum of its rollouts 1..k."""
    scenario = unit4.Scenario(f"{rollouts} rollouts", (1.0,) * rollouts, max_grad_norm=40.0)
    original = unit4.trace_updates(original_update, scenario)
    fixed = unit4.trace_updates(update_shared, scenario)
    lines = [
        "   | run 1, the original update:               | run 2, update_shared:",
        " k | own gradient  given  ratio  cos(sum 1..k) | own gradient  given",
    ]
    for k in range(rollouts):
        own, given = original.own[k], original.applied[k]
        running = torch.stack(original.own[: k + 1]).sum(0)
        cosine = float(given @ running / (given.norm() * running.norm()))
        lines.append(
            f"{k + 1:2d} | {own.norm():12.3f} {given.norm():6.3f} {given.norm() / own.norm():6.2f}"
            f" {cosine:14.3f} | {fixed.own[k].norm():12.3f} {fixed.applied[k].norm():6.3f}"
        )
    return "\n".join(lines)


def alternate_updates(shared_state: bool, updates: int = 200, lr: float = 0.01):
    """One weight, two workers alternating with gradients +1.0 (A) and -0.2 (B), with one shared
    Adam or a private Adam each: (the weight after each update, each Adam's step count)."""
    w = torch.nn.Parameter(torch.zeros(()))
    adams = [torch.optim.Adam([w], lr=lr) for _ in range(1 if shared_state else 2)]
    path = []
    for k in range(updates):
        w.grad = torch.tensor(1.0 if k % 2 == 0 else -0.2)
        adams[0 if shared_state else k % 2].step()
        path.append(float(w.detach()))
    return np.array(path), [int(adam.state[w]["step"]) for adam in adams]


def plot_private_vs_shared(updates: int = 200) -> Figure:
    """The weight under alternate_updates, with private Adams and with one shared Adam."""
    figure = Figure(figsize=(7, 2.8), dpi=80)
    ax = figure.subplots()
    for shared, name in ((False, "a private Adam per worker"), (True, "one shared Adam")):
        path, counts = alternate_updates(shared, updates)
        ax.plot(path, label=f"{name}: step counts {counts}, final weight {path[-1]:+.2f}")
    ax.set(xlabel="update (A, B, A, B, ...)", ylabel="the weight")
    # an optimizer steps against the gradient: a positive sum moves the weight down
    ax.set_title(
        "gradients +1.0 (worker A) and -0.2 (worker B): their sum, +0.8, should move it down",
        fontsize=10,
    )
    ax.legend(fontsize=8)
    return figure


def state_after_a_child_step() -> list[str]:
    """A stock Adam and SharedAdam over shared weights; one step() in a child process: what the
    parent sees of the weights and of the optimizer's state afterwards."""
    lines = []
    for make_optimizer in (torch.optim.Adam, SharedAdam):
        torch.manual_seed(0)
        model = ActorCritic((4,), 2, hidden_size=16).share_memory()
        optimizer = make_optimizer(model.parameters(), lr=1e-3)
        first = next(model.parameters())
        before = first.detach().clone()
        unit4.step_in_child_process(optimizer, [torch.ones_like(p) for p in model.parameters()])
        state = optimizer.state.get(first)
        seen = "none: it was created in the child, and died with it"
        if state:
            seen = (
                f"step {float(state['step']):.0f}, exp_avg[0] {float(state['exp_avg'][0, 0]):.2f}"
            )
        lines.append(
            f"{make_optimizer.__name__:>10}: weights changed here: "
            f"{not torch.equal(first, before)}; optimizer state seen here: {seen}"
        )
    return lines


# ------------------------------------------------------------------ your run against the course's


# How long, how evaluated, where: not what is learnt.
NOT_COMPARED = set(
    "seed max_minutes max_steps target_score out_dir start_method eval_episodes eval_mode "
    "eval_interval_s eval_max_episode_steps score_window".split()
)


def reference_settings_differ(config: TrainConfig, game: str = "pong") -> list[str]:
    """The settings (other than budgets, seeds, folders and evaluation) in which the course's
    reference runs of `game` differ from config: the band is a fair yardstick where none do."""
    runs = json.loads((data_folder() / "reference" / game / "runs.json").read_text())
    theirs: dict[str, set] = {}
    for run in runs.values():
        for key, value in run.get("config", {}).items():  # "_machine" holds no config
            theirs.setdefault(key, set()).add(value)
    mine = config.to_dict()
    return [
        f"{key}: the course's runs {', '.join(map(repr, sorted(values, key=repr)))}, "
        f"yours {mine[key]!r}"
        for key, values in theirs.items()
        if key in mine and key not in NOT_COMPARED and values != {mine[key]}
    ]


# ------------------------------------------------------------------ optional sections


def unpickle_in_a_fresh_interpreter(function) -> str:
    """Pickle `function` here and unpickle it in a fresh Python, as the spawn start method does:
    'found <name>' or the error the fresh interpreter raised."""
    load = "import pickle, sys; print('found', pickle.loads(sys.stdin.buffer.read()).__name__)"
    command = [sys.executable, "-c", load]
    run = subprocess.run(command, input=pickle.dumps(function), capture_output=True)
    return run.stdout.decode().strip() or run.stderr.decode().strip().splitlines()[-1]


def live_curve(title: str, window: int = 20, target: float | None = None):
    """An on_metrics callback for trainer.train that redraws the learning curve in one output."""
    from IPython.display import display

    from a3c_course.lessons.reports import plot_learning_curve

    handle = display("waiting for the first episodes...", display_id=True)

    def on_metrics(result):
        figure = Figure(figsize=(7.5, 3.4), dpi=80)
        ax = figure.subplots()
        heading = f"{title}: {result.steps:,} steps in {result.elapsed_s:.0f} s"
        plot_learning_curve(result.history, ax=ax, window=window, title=heading)
        if target is not None:
            ax.axhline(target, color="tab:green", ls="--", lw=1)
        handle.update(figure)

    return on_metrics


def plot_run_diagnostics(records: list[dict], config: TrainConfig) -> Figure:
    """From a run's metrics.jsonl: the learning curve, the policy's entropy per step and the
    gradient norm before clipping, per worker."""
    from a3c_course.lessons.reports import plot_learning_curve

    figure = Figure(figsize=(11, 2.8), dpi=80)
    curve, entropy, norm = figure.subplots(1, 3)
    plot_learning_curve(records, ax=curve, window=config.score_window)
    losses = [r for r in records if r["kind"] == "loss"]
    for worker in sorted({r["worker"] for r in losses}):
        mine = [r for r in losses if r["worker"] == worker]
        steps = [r["steps"] for r in mine]
        # the logged entropy is summed over a rollout's steps (Unit 3's loss): per step, divide
        per_step = [r["entropy"] / config.rollout_steps for r in mine]
        entropy.plot(steps, per_step, ".-", label=f"worker {worker}")
        norm.plot(steps, [r["grad_norm"] for r in mine], ".-", label=f"worker {worker}")
    entropy.set(xlabel="agent steps", title="policy entropy per step (nats)", ylim=(0, None))
    norm.axhline(config.max_grad_norm, color="0.5", ls=":")  # larger gradients are rescaled
    norm.set(xlabel="agent steps", title="gradient norm before clipping", ylim=(0, None))
    entropy.legend(fontsize=8)
    for ax in figure.axes:
        ax.xaxis.set_major_locator(MaxNLocator(4))  # step counts are long numbers
    figure.tight_layout()
    return figure


def plot_speeds(speeds: dict[str, dict[int, float]], title: str) -> Figure:
    """Agent steps/s against the number of workers, one line per kind of worker."""
    figure = Figure(figsize=(6.5, 3.2), dpi=80)
    ax = figure.subplots()
    for kind, by_workers in speeds.items():
        style = "o--" if "emulator" in kind else "o-"
        ax.plot(list(by_workers), list(by_workers.values()), style, label=kind)
    ax.set(xlabel="workers (processes)", ylabel="agent steps/s", ylim=(0, None), title=title)
    ax.set_xticks(sorted({w for by in speeds.values() for w in by}))
    ax.legend(fontsize=8)
    return figure
