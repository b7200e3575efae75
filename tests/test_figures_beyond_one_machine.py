"""Unit 5's figures: the diagram names every worker and machine; the staleness and scaling plots
show what they are given; the summary carries the model's numbers."""

import pytest

from a3c_course.lessons.figures import beyond_one_machine as figures
from a3c_course.measure.scaling import ScalingModel

MODEL = ScalingModel(
    apply_s=2e-3, reply_s=1e-3, model_bytes=600_000, worker_steps_per_s=1_400, steps_per_update=160
)


def texts(figure):
    return [t.get_text() for ax in figure.axes for t in ax.texts]


def test_the_diagram_puts_the_server_on_machine_0_and_spreads_the_workers():
    shown = texts(figures.draw_parameter_server(workers=5, machines=3))
    assert [t for t in shown if t.startswith("machine")] == [
        "machine 0 (starts the run)", "machine 1", "machine 2"
    ]  # fmt: skip
    assert sum(t.startswith("worker") for t in shown) == 5
    assert any(t.startswith("parameter server") for t in shown)
    with pytest.raises(ValueError, match="need machines >= 2 and workers >= machines - 1"):
        figures.draw_parameter_server(workers=1, machines=3)


def test_the_staleness_plot_labels_each_backend_and_count():
    figure = figures.plot_staleness({"hogwild": {2: 0.9, 4: 2.8}, "ray": {2: 1.0, 4: 3.1}})
    ax = figure.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["2", "4"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["n - 1", "hogwild", "ray"]
    assert sorted(t.get_text() for t in ax.texts) == ["0.9", "1.0", "2.8", "3.1"]


def test_the_scaling_plot_bends_where_the_lowest_ceiling_binds():
    figure = figures.plot_scaling(MODEL, max_workers=1_000)
    one_server = next(line for line in figure.axes[0].lines if line.get_label() == "one server")
    assert one_server.get_ydata().max() == pytest.approx(MODEL.network_limit(1.0) * 160)
    assert "24 workers" in texts(figure)  # 208.3 updates/s over 8.75 updates/s a worker


def test_the_summary_states_the_inputs_and_the_limits():
    summary = figures.scaling_summary(MODEL)
    assert summary.startswith("measured here (")  # the host, then the measured inputs
    assert "server: 2.00 ms to apply a gradient, 1.00 ms to copy the weights, 0.00 ms for Ray's part" in summary
    assert "\nassumed: the links' speeds" in summary
    assert "| one server | 1 Gbit/s | network | 24 | 33,333 |" in summary
    assert "| one server | 10 Gbit/s | compute | 38 | 53,333 |" in summary
