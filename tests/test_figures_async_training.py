"""Notebook 04's figures and harnesses (a3c_course.lessons.figures.async_training): each draws or measures
what its cell says, on small inputs."""

import sys
import types
from types import SimpleNamespace

import matplotlib
import numpy as np
import pytest
import torch
import torch.multiprocessing as mp

matplotlib.use("Agg")

from a3c_course.lessons.exercises import unit4  # noqa: E402
from a3c_course.lessons.figures import async_training as figures  # noqa: E402
from a3c_course.training.config import TrainConfig  # noqa: E402


def texts(ax) -> list[str]:
    return [t.get_text() for t in ax.texts]


def test_the_diagram_draws_each_worker_and_its_environments():
    figure = figures.draw_workers(TrainConfig(game="pong", workers=3, envs_per_worker=2))
    ax = figure.axes[0]
    labels = texts(ax)
    assert sum(label.startswith("worker ") for label in labels) == 3
    assert labels.count("env 0") == labels.count("env 1") == 3 and "env 2" not in labels
    assert "3 workers" in ax.get_title() and "2 environments" in ax.get_title()
    assert len(ax.patches) == 1 + 3 + 3 * 2 + 2 * 3  # shared box, workers, envs, two arrows each


def test_correlations_of_a_game_and_across_games():
    rng = np.random.default_rng(0)
    walk = np.cumsum(rng.normal(size=(6, 400, 1)), axis=1)  # a slow random walk per game
    lagged, across = figures.correlations(walk, max_lag=10)
    assert lagged[0] == pytest.approx(1.0) and lagged[1] > 0.8 and lagged[10] < lagged[1]
    assert abs(across) < 0.5
    assert figures.effective_size(8, 1.0) == pytest.approx(1.0)
    assert figures.effective_size(8, -0.1) == 8


def test_decorrelation_is_measured_on_pong_and_drawn():
    d = figures.measure_decorrelation(games=3, steps=80, warm_up=5, tail=60)
    assert d.frames.shape == (3, 80, 42 * 42)
    assert d.return_lag[1] > 0.8 and d.return_lag[0] == pytest.approx(1.0)
    table = d.table()
    assert "one game,  1 step  apart" in table and "two games, same moment" in table
    assert "worth" not in table  # the effective sizes are the optional section's: worth()
    worth = d.worth()
    assert "3 steps in a row of one game (mean correlation" in worth and "each of 3 games" in worth
    figure = figures.plot_decorrelation(d, rollout_steps=20)
    strip, curve = figure.axes[:-1], figure.axes[-1]
    assert len(strip) == 2 * 3  # a row of frames per game and of games per step
    assert [ax.get_title() for ax in strip[3:]] == ["game 0", "game 1", "game 2"]
    assert len(curve.lines) == 2  # the lag curve and the across level
    shown = len(curve.lines[0].get_ydata())
    assert shown == 31 and np.allclose(curve.lines[0].get_ydata(), d.return_lag[:shown])


def fake_reports():
    """Two workers alternating 1-second rollouts, each update seen by the other's next one."""
    times = {0: [(t, t + 1.0) for t in np.arange(0.0, 12, 1.0)]}
    times[1] = [(s + 0.5, u + 0.5) for s, u in times[0]]
    return [{"worker": w, "times": times[w], "staleness": [1] * 12} for w in (0, 1)]


def test_the_staleness_timeline_draws_a_bar_and_a_triangle_per_rollout():
    figure = figures.plot_staleness(fake_reports(), rollouts=5)
    ax = figure.axes[0]
    triangles = [line for line in ax.lines if line.get_marker() == "v"]
    bars = [line for line in ax.lines if line.get_marker() != "v"]
    assert len(triangles) == len(bars) > 0 and set(texts(ax)) == {"1"}
    assert all(bar.get_xdata()[1] - bar.get_xdata()[0] == pytest.approx(1.0) for bar in bars)
    # by default the whole run, from when both run (worker 1's second rollout, at 1.5 s) on
    whole = figures.plot_staleness(fake_reports()).axes[0]
    starts = sorted(line.get_xdata()[0] for line in whole.lines if line.get_marker() != "v")
    assert len(starts) == 10 + 11 and starts[0] == pytest.approx(0.0)


@pytest.mark.timeout(120)
def test_the_probe_runs_workers_and_tables_their_staleness():
    config = TrainConfig(game="CartPole-v1", workers=2, envs_per_worker=2, rollout_steps=5)
    reports, counter = figures.run_probe(config, 2, seconds=1.0)
    assert [r["worker"] for r in reports] == [0, 1] and mp.active_children() == []
    updates = sum(r["updates"] for r in reports)
    assert 0.9 * updates <= counter <= updates
    table = figures.staleness_table({2: (reports, counter)})
    row = table.splitlines()[1].split("|")
    tau = np.concatenate([r["staleness"] for r in reports])
    assert row[0] == "      2 " and [float(x) for x in row[1].split()] == [
        pytest.approx(tau.mean(), abs=0.005),
        tau.max(),
    ]


def test_the_gradient_table_shows_the_original_summing_rollouts():
    lines = figures.gradient_table(rollouts=4).splitlines()
    assert "run 1, the original update" in lines[0] and "run 2, update_shared" in lines[0]
    rows = [[float(x) for x in row.replace("|", " ").split()] for row in lines[2:]]
    assert len(rows) == 4
    first, second = rows[:2]
    assert first[3] == pytest.approx(1.0)  # rollout 1: the original is still right (ratio 1)
    assert second[3] > 1.05 and second[4] == pytest.approx(1.0)  # then the sum, cosine 1
    # run 2, in its own run: update_shared gives each rollout's own gradient, every time
    assert all(row[6] == pytest.approx(row[5]) for row in rows)
    assert second[5] == pytest.approx(second[1])  # both runs start alike: rollout 2 is the same


def test_without_clearing_the_optimizer_is_given_the_running_sum():
    scenario = unit4.Scenario("4 rollouts", (1.0,) * 4, max_grad_norm=40.0)
    trace = unit4.trace_updates(figures.update_without_clearing, scenario)
    for k in range(4):
        running = torch.stack(trace.own[: k + 1]).sum(0)
        assert torch.allclose(trace.applied[k], running, atol=1e-5)
    ax = figures.plot_accumulation(rollouts=4).axes[0]
    with_step_1, without, own = (line.get_ydata() for line in ax.lines)
    assert without[0] == pytest.approx(with_step_1[0]) and without[1] > 1.05 * own[1]


def test_private_adams_cancel_and_a_shared_one_follows_the_sum():
    private, private_counts = figures.alternate_updates(shared_state=False, updates=200)
    shared, shared_counts = figures.alternate_updates(shared_state=True, updates=200)
    assert private_counts == [100, 100] and shared_counts == [200]
    assert abs(private[-1]) < 0.05 < -shared[-1]
    ax = figures.plot_private_vs_shared(updates=50).axes[0]
    assert len(ax.lines) == 2 and "step counts [25, 25]" in ax.get_legend().texts[0].get_text()
    assert "their sum, +0.8, should move it down" in ax.get_title()  # against the gradient


def test_only_shared_adam_state_survives_a_step_in_a_child():
    stock, shared = figures.state_after_a_child_step()
    assert "Adam: weights changed here: True" in stock and "died with it" in stock
    assert shared.strip().startswith("SharedAdam") and "step 1, exp_avg[0] 0.10" in shared


def test_reference_settings_are_compared_with_yours():
    import json

    from a3c_course.lessons.pretrained import data_folder

    runs = json.loads((data_folder() / "reference" / "pong" / "runs.json").read_text())
    theirs = next(run["config"] for run in runs.values() if "config" in run)
    same = TrainConfig.from_dict({**theirs, "seed": 5, "max_minutes": 10.0, "out_dir": "x"})
    assert figures.reference_settings_differ(same) == []
    different = figures.reference_settings_differ(same.replace(lr=theirs["lr"] * 2))
    assert different == [f"lr: the course's runs {theirs['lr']!r}, yours {theirs['lr'] * 2!r}"]


def test_a_notebook_function_cannot_be_found_by_a_fresh_interpreter(monkeypatch):
    def cell_function(tensor, value):
        tensor.fill_(value)

    cell_function.__module__, cell_function.__qualname__ = "__main__", "cell_function"
    monkeypatch.setattr(sys.modules["__main__"], "cell_function", cell_function, raising=False)
    assert "AttributeError" in figures.unpickle_in_a_fresh_interpreter(cell_function)
    found = figures.unpickle_in_a_fresh_interpreter(unit4.fill_from_child)
    assert found == "found fill_from_child"


def test_the_live_curve_redraws_one_output_with_the_target(monkeypatch):
    import IPython.display

    shown = []
    handle = types.SimpleNamespace(update=shown.append)
    monkeypatch.setattr(IPython.display, "display", lambda *args, **kwargs: handle)
    on_metrics = figures.live_curve("CartPole-v1", window=5, target=195)
    history = [{"kind": "episode", "steps": 10 * i, "score": float(i)} for i in range(1, 12)]
    on_metrics(SimpleNamespace(history=history, steps=110, elapsed_s=3.0))
    ax = shown[-1].axes[0]
    assert "110 steps in 3 s" in ax.get_title()
    assert any(line.get_ydata()[0] == 195 for line in ax.lines)  # the target line


def test_run_diagnostics_draw_one_line_per_worker():
    config = TrainConfig(game="CartPole-v1", rollout_steps=10)
    records = [{"kind": "episode", "steps": i, "score": 20.0, "elapsed_s": 1.0} for i in range(5)]
    records += [
        {"kind": "loss", "worker": w, "steps": s, "entropy": 6.9, "grad_norm": 3.0}
        for s in (10, 20)
        for w in (0, 1)
    ]
    figure = figures.plot_run_diagnostics(records, config)
    _, entropy, norm = figure.axes
    assert len(entropy.lines) == 2 and np.allclose(entropy.lines[0].get_ydata(), 0.69)
    assert norm.lines[-1].get_ydata()[0] == config.max_grad_norm  # the clipping level


def test_speeds_are_plotted_per_kind_of_worker():
    speeds = {"the defaults": {1: 1000.0, 2: 1900.0}, "emulator alone": {1: 3000.0, 2: 6000.0}}
    ax = figures.plot_speeds(speeds, "title").axes[0]
    assert [line.get_label() for line in ax.lines] == list(speeds)
    assert list(ax.lines[1].get_ydata()) == [3000.0, 6000.0] and ax.lines[1].get_linestyle() == "--"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("method", mp.get_all_start_methods())
def test_the_child_s_write_reaches_shared_memory_only_under_every_start_method(method):
    """Section 3's demo must show the same under fork (Linux's default) and spawn (macOS's and
    Windows'): a NumPy array comes back unchanged, a shared tensor with the child's 7s. (A plain
    tensor would not do: torch.multiprocessing moves one that it pickles for a spawned child into
    shared memory.)"""
    context = mp.get_context(method)
    plain, shared = np.zeros(4), torch.zeros(4).share_memory_()
    for data in (plain, shared):
        child = context.Process(target=figures.write_in_child, args=(data, 7.0))
        child.start()
        child.join(timeout=60)
        assert child.exitcode == 0
    assert plain.tolist() == [0.0] * 4 and shared.tolist() == [7.0] * 4
