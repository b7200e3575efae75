"""The appendix's harnesses and figures (a3c_course.lessons.figures.original_code) show what they claim."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from a3c_course.lessons.figures import original_code as appendix  # noqa: E402
from a3c_course.lessons.original_course import original_update  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_the_blocks_cover_train_py_in_order():
    assert [block[0] for block in appendix.BLOCKS] == list("ABCDEFGH")
    spans = [tuple(map(int, block[1].split("-"))) for block in appendix.BLOCKS]
    assert spans[0][0] == 1 and spans[-1][1] == 78
    assert all(first <= last for first, last in spans)
    assert all(a[1] < b[0] for a, b in zip(spans, spans[1:], strict=False))


def test_the_block_map_joins_each_block_to_its_equivalent():
    fig = appendix.plot_block_map()
    texts = [text.get_text() for text in fig.axes[0].texts]
    for letter, lines, job, course in appendix.BLOCKS:
        assert f"{letter}  {job}  (lines {lines})" in texts
        assert course in texts
    arrows = [t for t in fig.axes[0].texts if t.get_text() == ""]  # the annotate arrows
    assert len(arrows) == len(appendix.BLOCKS)


def _applied_gradients(update, rollouts=3):
    """Same loss every rollout: the flattened shared .grad after each update, and one rollout's."""
    local_model, shared_model, optimizer = appendix.small_models()
    targets, obs = (
        appendix._fixed_targets(),
        torch.randn(20, 4, generator=torch.Generator().manual_seed(0)),
    )
    applied = []
    for _ in range(rollouts):
        appendix.sync_from_shared(local_model, shared_model)
        update(
            local_model, shared_model, optimizer, appendix.stand_in_loss(local_model, obs, targets)
        )
        applied.append(appendix._flat([p.grad for p in shared_model.parameters()]).clone())
    own = torch.autograd.grad(
        appendix.stand_in_loss(local_model, obs, targets), list(local_model.parameters())
    )
    return applied, appendix._flat(own)


def test_the_original_update_applies_the_running_sum_and_the_course_one_rollout():
    original, own = _applied_gradients(original_update)
    ratios = [float(g.norm() / own.norm()) for g in original]
    assert ratios == pytest.approx([1, 2, 3], rel=0.02)
    course, own = _applied_gradients(appendix.course_update)
    assert [float(g.norm() / own.norm()) for g in course] == pytest.approx([1, 1, 1], rel=0.02)


@pytest.mark.slow
def test_with_changing_rollouts_the_original_is_pinned_at_the_clip_and_stale():
    original = appendix.run_changing_rollouts(original_update, rollouts=60)
    course = appendix.run_changing_rollouts(appendix.course_update, rollouts=60)
    assert original.norms.shape == original.cosines.shape == (60,)
    assert original.norms[-10:] == pytest.approx(40.0, rel=1e-4)
    assert original.cosines[0] == pytest.approx(1.0, abs=1e-5)
    assert original.cosines[30:].mean() < 0.8
    assert course.cosines == pytest.approx(1.0, abs=1e-4)
    assert course.norms.max() < 5.0


def test_the_stale_gradient_figure_draws_each_trace_on_both_panels():
    traces = {
        "a": appendix.UpdateTrace(np.array([1.0, 2.0, 40.0]), np.array([1.0, 0.7, 0.5])),
        "b": appendix.UpdateTrace(np.array([1.0, 1.1, 0.9]), np.array([1.0, 1.0, 1.0])),
    }
    fig = appendix.plot_stale_gradients(traces, max_grad_norm=40.0)
    left, right = fig.axes
    assert left.get_ylabel() == "applied gradient norm"
    assert right.get_ylabel() == "cosine(applied, own)"
    assert [line.get_label() for line in left.lines[:2]] == ["a", "b"]
    assert np.array_equal(left.lines[0].get_ydata(), traces["a"].norms)
    assert np.array_equal(right.lines[1].get_ydata(), traces["b"].cosines)
    assert list(left.lines[2].get_ydata()) == [40.0, 40.0]  # the clip
    assert [t.get_text() for t in left.get_legend().get_texts()] == ["a", "b"]


def test_time_limit_truncates_the_never_ending_game_at_exactly_n_steps():
    assert appendix.steps_until_time_limit(7) == (7, False, True)


def test_the_unguarded_script_kills_its_child_and_the_guarded_one_works():
    out, err = appendix.run_script(appendix.UNGUARDED_SCRIPT)
    assert out == ["parent: child exit code 1"]
    assert "bootstrapping phase" in " ".join(appendix.child_error(err))
    out, err = appendix.run_script(appendix.GUARDED_SCRIPT)
    assert out == ["child: working", "parent: child exit code 0"]
    assert appendix.child_error(err) == []


@pytest.mark.slow
def test_omp_num_threads_works_only_before_import_torch():
    at_import, now = appendix.threads_with_omp_set("after")
    assert now == at_import
    assert appendix.threads_with_omp_set("before") == (1, 1)
