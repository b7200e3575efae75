"""Unit 4 exercise checks: correct answers pass, stubs are NOT ATTEMPTED, and the mistakes a learner
is likely to make (accumulating gradients, no clipping, no step, the wrong norm returned, optimizer
state that is not shared or not created up front) fail with a message that says what differs."""

import pytest
import torch
import torch.multiprocessing as mp

from a3c_course.a3c.worker import update_shared
from a3c_course.lessons.exercises import unit4
from a3c_course.lessons.original_course import ensure_shared_grads, original_update

# ------------------------------------------------------------------ correct answers


def update(local_model, shared_model, optimizer, loss, max_grad_norm):
    local_model.zero_grad()
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(local_model.parameters(), max_grad_norm)
    for local, shared in zip(local_model.parameters(), shared_model.parameters(), strict=True):
        shared.grad = local.grad
    optimizer.step()
    return float(norm)


def update_with_copied_grads(local_model, shared_model, optimizer, loss, max_grad_norm):
    """Copies instead of aliasing, and clears the shared gradients too: also correct."""
    optimizer.zero_grad()
    for p in local_model.parameters():
        p.grad = None
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(local_model.parameters(), max_grad_norm)
    for local, shared in zip(local_model.parameters(), shared_model.parameters(), strict=True):
        shared.grad = local.grad.clone()
    optimizer.step()
    return norm  # a 0-dim tensor is accepted


def fixed_update(local_model, shared_model, optimizer, loss, max_grad_norm):
    optimizer.zero_grad()
    local_model.zero_grad()  # the fix
    loss.backward()
    torch.nn.utils.clip_grad_norm_(local_model.parameters(), max_grad_norm)
    ensure_shared_grads(local_model, shared_model)
    optimizer.step()


def fixed_update_pytorch1_style(local_model, shared_model, optimizer, loss, max_grad_norm):
    optimizer.zero_grad(set_to_none=False)  # zeroes the aliased local gradients in place
    loss.backward()
    torch.nn.utils.clip_grad_norm_(local_model.parameters(), max_grad_norm)
    ensure_shared_grads(local_model, shared_model)
    optimizer.step()


def share_adam_state(optimizer):
    for group in optimizer.param_groups:
        for p in group["params"]:
            state = optimizer.state[p]
            state["step"] = torch.zeros(()).share_memory_()
            state["exp_avg"] = torch.zeros_like(p).share_memory_()
            state["exp_avg_sq"] = torch.zeros_like(p).share_memory_()


def stub(*args, **kwargs):
    raise NotImplementedError


@pytest.mark.parametrize(
    ("check", "answer", "exercise_id", "cases"),
    [
        (unit4.check_update, update, "4.1", 3),
        (unit4.check_update, update_with_copied_grads, "4.1", 3),
        (unit4.check_update, update_shared, "4.1", 3),
        (unit4.check_fixed_update, fixed_update, "4.2", 2),
        (unit4.check_fixed_update, fixed_update_pytorch1_style, "4.2", 2),
        (unit4.check_fixed_update, update_shared, "4.2", 2),
        (unit4.check_shared_adam_state, share_adam_state, "4.3", 3),
    ],
)
def test_correct_answers_pass(check, answer, exercise_id, cases, capsys):
    assert check(answer) is True
    out = capsys.readouterr().out
    assert out.startswith(f"PASSED [{exercise_id}] {answer.__name__}: all {cases} cases agree")


@pytest.mark.parametrize(
    ("check", "exercise_id"),
    [
        (unit4.check_update, "4.1"),
        (unit4.check_fixed_update, "4.2"),
        (unit4.check_shared_adam_state, "4.3"),
    ],
)
def test_a_stub_is_not_attempted(check, exercise_id, capsys):
    assert check(stub) is False
    assert capsys.readouterr().out.startswith(f"NOT ATTEMPTED [{exercise_id}] stub")


# ------------------------------------------------------------------ wrong answers are caught


def original_pattern_with_norm(local_model, shared_model, optimizer, loss, max_grad_norm):
    """The original's update (accumulates under PyTorch 2.x), returning the norm as asked."""
    optimizer.zero_grad()
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(local_model.parameters(), max_grad_norm)
    ensure_shared_grads(local_model, shared_model)
    optimizer.step()
    return float(norm)


def without_clipping(local_model, shared_model, optimizer, loss, max_grad_norm):
    local_model.zero_grad()
    loss.backward()
    norm = torch.cat([p.grad.reshape(-1) for p in local_model.parameters()]).norm()
    for local, shared in zip(local_model.parameters(), shared_model.parameters(), strict=True):
        shared.grad = local.grad
    optimizer.step()
    return float(norm)


def clipping_after_the_step(local_model, shared_model, optimizer, loss, max_grad_norm):
    local_model.zero_grad()
    loss.backward()
    for local, shared in zip(local_model.parameters(), shared_model.parameters(), strict=True):
        shared.grad = local.grad
    optimizer.step()
    return float(torch.nn.utils.clip_grad_norm_(local_model.parameters(), max_grad_norm))


def without_a_step(local_model, shared_model, optimizer, loss, max_grad_norm):
    local_model.zero_grad()
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(local_model.parameters(), max_grad_norm)
    for local, shared in zip(local_model.parameters(), shared_model.parameters(), strict=True):
        shared.grad = local.grad
    return float(norm)


def without_handing_over(local_model, shared_model, optimizer, loss, max_grad_norm):
    local_model.zero_grad()
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(local_model.parameters(), max_grad_norm)
    optimizer.step()  # the shared parameters have no .grad: Adam skips them
    return float(norm)


def two_steps(local_model, shared_model, optimizer, loss, max_grad_norm):
    norm = update(local_model, shared_model, optimizer, loss, max_grad_norm)
    optimizer.step()
    return norm


def returning_the_clipped_norm(local_model, shared_model, optimizer, loss, max_grad_norm):
    update(local_model, shared_model, optimizer, loss, max_grad_norm)
    return float(torch.cat([p.grad.reshape(-1) for p in local_model.parameters()]).norm())


def returning_nothing(local_model, shared_model, optimizer, loss, max_grad_norm):
    update(local_model, shared_model, optimizer, loss, max_grad_norm)


def handing_over_only_once(local_model, shared_model, optimizer, loss, max_grad_norm):
    """Clears the local gradients with set_to_none, but keeps ensure_shared_grads' early return
    and never clears the shared .grad: from rollout 2 on the optimizer reuses rollout 1's gradient."""
    local_model.zero_grad()
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(local_model.parameters(), max_grad_norm)
    ensure_shared_grads(local_model, shared_model)
    optimizer.step()
    return float(norm)


def raising_an_error(local_model, shared_model, optimizer, loss, max_grad_norm):
    raise ValueError("oops")


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (original_pattern_with_norm, "on rollout 2 of 5"),
        (original_pattern_with_norm, "gradients from earlier rollouts are accumulating"),
        (without_clipping, "above max_grad_norm=10"),
        (clipping_after_the_step, "before optimizer.step(), not after"),
        (without_a_step, "the shared weights did not change: the optimizer took no step"),
        (without_handing_over, "the shared parameters' .grad was None"),
        (two_steps, "the optimizer took 2 steps on this rollout"),
        (two_steps, "Take exactly one optimizer.step() per rollout"),
        (returning_the_clipped_norm, "(that is the norm after clipping), expected the norm before"),
        (returning_nothing, "got None"),
        (handing_over_only_once, "on rollout 2 of 5"),
        (handing_over_only_once, "given rollout 1's gradient again"),
        (handing_over_only_once, "Hand the gradients over on every update"),
        (raising_an_error, "it raised ValueError: oops"),
    ],
    ids=lambda x: x.__name__ if callable(x) else x[:30],
)
def test_wrong_updates_fail_with_a_reason(wrong, message, capsys):
    assert unit4.check_update(wrong) is False
    out = capsys.readouterr().out
    assert out.startswith(f"FAILED [4.1] {wrong.__name__}: "), out
    assert message in out, out


def test_the_original_update_itself_fails_4_2_with_the_numbers(capsys):
    assert unit4.check_fixed_update(original_update) is False
    out = capsys.readouterr().out
    assert out.startswith("FAILED [4.2] original_update: on rollout 2 of 5"), out
    assert "gradients from earlier rollouts are accumulating" in out
    assert "ratio" in out and "cosine" in out


@pytest.mark.parametrize("wrong", [without_clipping, two_steps, handing_over_only_once])
def test_other_wrong_fixes_fail_4_2(wrong, capsys):
    assert unit4.check_fixed_update(wrong) is False
    assert capsys.readouterr().out.startswith(f"FAILED [4.2] {wrong.__name__}")


def fix_that_drops_the_optimizers_zero_grad(local_model, shared_model, optimizer, loss, norm):
    """Clears the local gradients but no longer the shared ones: ensure_shared_grads then never
    hands over again, and every step reuses rollout 1's gradient."""
    local_model.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(local_model.parameters(), norm)
    ensure_shared_grads(local_model, shared_model)
    optimizer.step()


def test_a_fix_that_hands_over_once_is_told_why(capsys):
    assert unit4.check_fixed_update(fix_that_drops_the_optimizers_zero_grad) is False
    out = capsys.readouterr().out
    assert "given rollout 1's gradient again" in out
    assert "a hand-over skipped while the shared .grad is set" in out


def test_the_reference_applies_one_rollouts_clipped_gradient():
    """The reference itself: its applied gradients have the clipped norms, and differ per rollout."""
    scenario = unit4.Scenario("test", (50.0, 1.0), max_grad_norm=10.0)
    trace = unit4.reference_trace(scenario)
    assert trace.norms[0] > 10.0 > trace.norms[1]
    assert float(trace.applied[0].norm()) == pytest.approx(10.0, rel=1e-5)
    assert float(trace.applied[1].norm()) == pytest.approx(trace.norms[1], rel=1e-6)


def state_not_shared(optimizer):
    for group in optimizer.param_groups:
        for p in group["params"]:
            optimizer.state[p] = {
                "step": torch.zeros(()),
                "exp_avg": torch.zeros_like(p),
                "exp_avg_sq": torch.zeros_like(p),
            }


def state_from_a_dummy_step(optimizer):
    for group in optimizer.param_groups:
        for p in group["params"]:
            p.grad = torch.zeros_like(p)
    optimizer.step()
    for state in optimizer.state.values():
        for value in state.values():
            value.share_memory_()


def first_group_only(optimizer):
    for p in optimizer.param_groups[0]["params"]:
        optimizer.state[p] = {
            "step": torch.zeros(()).share_memory_(),
            "exp_avg": torch.zeros_like(p).share_memory_(),
            "exp_avg_sq": torch.zeros_like(p).share_memory_(),
        }


def step_as_a_python_number(optimizer):
    for group in optimizer.param_groups:
        for p in group["params"]:
            optimizer.state[p] = {
                "step": 0,
                "exp_avg": torch.zeros_like(p).share_memory_(),
                "exp_avg_sq": torch.zeros_like(p).share_memory_(),
            }


def moments_without_second(optimizer):
    for group in optimizer.param_groups:
        for p in group["params"]:
            optimizer.state[p] = {
                "step": torch.zeros(()).share_memory_(),
                "exp_avg": torch.zeros_like(p).share_memory_(),
            }


def step_counter_shared_by_all(optimizer):
    """One step tensor for every parameter: stock step() then counts once per parameter."""
    step = torch.zeros(()).share_memory_()
    for group in optimizer.param_groups:
        for p in group["params"]:
            optimizer.state[p] = {
                "step": step,
                "exp_avg": torch.zeros_like(p).share_memory_(),
                "exp_avg_sq": torch.zeros_like(p).share_memory_(),
            }


def moments_of_the_wrong_shape(optimizer):
    for group in optimizer.param_groups:
        for p in group["params"]:
            optimizer.state[p] = {
                "step": torch.zeros(()).share_memory_(),
                "exp_avg": torch.zeros(p.numel()).share_memory_(),
                "exp_avg_sq": torch.zeros(p.numel()).share_memory_(),
            }


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (state_not_shared, "is not in shared memory"),
        (state_from_a_dummy_step, "is not zero before any step"),
        (first_group_only, "has no state: create it for every parameter of every group"),
        (step_as_a_python_number, "state['step'] is a int, expected a tensor"),
        (moments_without_second, "has no 'exp_avg_sq'"),
        (step_counter_shared_by_all, "this process sees step counts"),
        (moments_of_the_wrong_shape, "has shape"),
    ],
    ids=lambda x: x.__name__ if callable(x) else x[:30],
)
def test_wrong_shared_state_fails_with_a_reason(wrong, message, capsys):
    assert unit4.check_shared_adam_state(wrong) is False
    out = capsys.readouterr().out
    assert out.startswith(f"FAILED [4.3] {wrong.__name__}: "), out
    assert message in out, out
    assert mp.active_children() == []


def test_a_child_step_failure_is_reported_not_hidden(capsys):
    """A state the stock step() cannot use: the child's traceback reaches the verdict."""

    def bad_step_tensor(optimizer):
        for group in optimizer.param_groups:
            for p in group["params"]:
                optimizer.state[p] = {
                    "step": torch.zeros(()).share_memory_(),
                    "exp_avg": torch.zeros(()).expand(p.shape).share_memory_(),
                    "exp_avg_sq": torch.zeros_like(p).share_memory_(),
                }

    result = unit4.check_shared_adam_state(bad_step_tensor)
    out = capsys.readouterr().out
    assert result is False and out.startswith("FAILED [4.3] bad_step_tensor"), out
    assert mp.active_children() == []


# ------------------------------------------------------------------ the notebook's helpers


def test_fill_from_child_writes_into_shared_memory():
    tensor = torch.zeros(3).share_memory_()
    child = mp.get_context("fork").Process(target=unit4.fill_from_child, args=(tensor, 7.0))
    child.start()
    child.join(30)
    assert child.exitcode == 0
    assert tensor.tolist() == [7.0, 7.0, 7.0]


def test_hogwild_probe_measures_steps_and_staleness():
    import time

    from a3c_course.a3c.optim import make_shared_optimizer
    from a3c_course.training.backend import build_shared_model
    from a3c_course.training.config import TrainConfig

    config = TrainConfig(game="CartPole-v1", workers=2, envs_per_worker=2, rollout_steps=5)
    shared_model = build_shared_model(config)
    optimizer = make_shared_optimizer("adam", shared_model.parameters(), 1e-3)
    context = mp.get_context("fork")
    queue = context.Queue()
    start = time.monotonic()
    children = [
        context.Process(
            target=unit4.hogwild_probe,
            args=(w, config, shared_model, optimizer, 1.0, 1, start, queue),
        )
        for w in range(2)
    ]
    for child in children:
        child.start()
    results = sorted((queue.get(timeout=60) for _ in children), key=lambda r: r["worker"])
    for child in children:
        child.join(30)
    assert [child.exitcode for child in children] == [0, 0]
    assert all("error" not in r for r in results), results
    for r in results:
        assert r["updates"] == len(r["staleness"]) == len(r["times"]) > 0
        assert r["steps"] == r["updates"] * 5 * 2
        assert all(s >= 0 for s in r["staleness"])
        assert all(synced < updated for synced, updated in r["times"])
    counter = optimizer.state[next(iter(shared_model.parameters()))]["step"]
    # Hogwild may lose an increment of the shared counter in a race, never gain one.
    assert int(counter) <= sum(r["updates"] for r in results)
    assert int(counter) >= 0.9 * sum(r["updates"] for r in results)
