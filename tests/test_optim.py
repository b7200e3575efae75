"""Shared optimizers: state created up front in shared memory, seen across processes, and the
same update as PyTorch's own Adam and RMSprop (and as Adam written out by hand)."""

import math

import pytest
import torch
import torch.multiprocessing as mp

from a3c_course.a3c.optim import SharedAdam, SharedRMSprop, make_shared_optimizer


def small_model(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))


def gradient_stream(model, steps, seed=1):
    """The same sequence of gradients for every model copy: one per step."""
    generator = torch.Generator().manual_seed(seed)
    return [
        [torch.randn(p.shape, generator=generator) for p in model.parameters()]
        for _ in range(steps)
    ]


def run(optimizer, model, grads):
    for step_grads in grads:
        for p, g in zip(model.parameters(), step_grads, strict=True):
            p.grad = g.clone()
        optimizer.step()


@pytest.mark.parametrize(
    "shared_class, options",
    [
        (SharedAdam, {}),
        (SharedAdam, {"amsgrad": True}),
        (SharedRMSprop, {}),
        (SharedRMSprop, {"momentum": 0.9, "centered": True}),
    ],
)
def test_state_exists_before_the_first_step_and_is_shared(shared_class, options):
    model = small_model()
    optimizer = shared_class(model.parameters(), lr=1e-3, **options)
    expected = {
        SharedAdam: {"step", "exp_avg", "exp_avg_sq"} | ({"max_exp_avg_sq"} if options else set()),
        SharedRMSprop: {"step", "square_avg"}
        | ({"momentum_buffer", "grad_avg"} if options else set()),
    }[shared_class]
    for p in model.parameters():
        state = optimizer.state[p]
        assert set(state) == expected
        assert state["step"].dim() == 0 and state["step"].dtype == torch.float32
        assert all(t.is_shared() for t in state.values())
        assert all(state[k].shape == p.shape for k in expected - {"step"})


@pytest.mark.parametrize(
    "shared_class, stock_class, options",
    [
        (SharedAdam, torch.optim.Adam, {}),
        (SharedAdam, torch.optim.Adam, {"foreach": True}),
        (SharedAdam, torch.optim.Adam, {"fused": True}),
        (SharedAdam, torch.optim.Adam, {"amsgrad": True, "weight_decay": 0.01}),
        (SharedRMSprop, torch.optim.RMSprop, {}),
        (SharedRMSprop, torch.optim.RMSprop, {"foreach": True}),
        (SharedRMSprop, torch.optim.RMSprop, {"momentum": 0.9, "centered": True}),
    ],
)
def test_same_updates_as_the_stock_optimizer_and_state_stays_shared(
    shared_class, stock_class, options
):
    shared_model, stock_model = small_model(), small_model()
    shared = shared_class(shared_model.parameters(), lr=1e-2, **options)
    stock = stock_class(stock_model.parameters(), lr=1e-2, **options)
    storage = {
        (i, key): t.data_ptr()
        for i, p in enumerate(shared_model.parameters())
        for key, t in shared.state[p].items()
    }
    grads = gradient_stream(shared_model, 5)
    run(shared, shared_model, grads)
    run(stock, stock_model, grads)
    for p, q in zip(shared_model.parameters(), stock_model.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=0, atol=1e-7)
        for key, value in shared.state[p].items():
            torch.testing.assert_close(value, stock.state[q][key], rtol=0, atol=1e-7)
    # The stock step() updated the shared tensors in place: same storage, still shared.
    for i, p in enumerate(shared_model.parameters()):
        for key, t in shared.state[p].items():
            assert t.is_shared() and t.data_ptr() == storage[(i, key)]
    assert float(shared.state[next(shared_model.parameters())]["step"]) == 5


@pytest.mark.parametrize("options", [{}, {"fused": True}])
def test_adam_update_equals_adam_written_out_by_hand(options):
    lr, beta1, beta2, eps = 1e-2, 0.9, 0.999, 1e-8
    model = small_model()
    start = [p.detach().clone() for p in model.parameters()]
    optimizer = SharedAdam(model.parameters(), lr=lr, betas=(beta1, beta2), eps=eps, **options)
    grads = gradient_stream(model, 4)
    run(optimizer, model, grads)
    for index, p in enumerate(model.parameters()):
        theta = start[index].double()
        m = torch.zeros_like(theta)
        v = torch.zeros_like(theta)
        for t, step_grads in enumerate(grads, start=1):
            g = step_grads[index].double()
            m = beta1 * m + (1 - beta1) * g
            v = beta2 * v + (1 - beta2) * g * g
            m_hat, v_hat = m / (1 - beta1**t), v / (1 - beta2**t)
            theta = theta - lr * m_hat / (v_hat.sqrt() + eps)
        torch.testing.assert_close(p.double(), theta, rtol=0, atol=1e-6)


def step_once_with_unit_gradients(model, optimizer):
    """Runs in a child process: one optimizer step with every gradient equal to 1."""
    torch.set_num_threads(1)
    for p in model.parameters():
        p.grad = torch.ones_like(p)
    optimizer.step()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("method, fused", [("fork", False), ("spawn", False), ("fork", True)])
def test_a_step_in_a_child_process_is_seen_by_the_parent(method, fused):
    """The step counter, both moments and the weights updated in a child show up in the parent."""
    lr, beta1, beta2 = 0.1, 0.9, 0.999
    model = small_model()
    model.share_memory()
    before = [p.detach().clone() for p in model.parameters()]
    optimizer = SharedAdam(model.parameters(), lr=lr, betas=(beta1, beta2), fused=fused)
    context = mp.get_context(method)
    child = context.Process(target=step_once_with_unit_gradients, args=(model, optimizer))
    child.start()
    child.join(timeout=100)
    assert child.exitcode == 0
    for p, p0 in zip(model.parameters(), before, strict=True):
        state = optimizer.state[p]
        assert float(state["step"]) == 1.0
        torch.testing.assert_close(state["exp_avg"], torch.full_like(p, 1 - beta1))
        torch.testing.assert_close(state["exp_avg_sq"], torch.full_like(p, 1 - beta2))
        # First Adam step with g = 1: m_hat = v_hat = 1, so every weight moves by -lr.
        torch.testing.assert_close(p.detach(), p0 - lr, rtol=0, atol=1e-6)
    # The parent carries on from the child's state: its step is the second one.
    step_once_with_unit_gradients(model, optimizer)
    p = next(model.parameters())
    assert float(optimizer.state[p]["step"]) == 2.0
    m = (1 - beta1) * beta1 + (1 - beta1)
    assert math.isclose(float(optimizer.state[p]["exp_avg"].flatten()[0]), m, rel_tol=1e-6)


def test_rmsprop_state_is_shared_with_a_child():
    model = small_model()
    model.share_memory()
    optimizer = SharedRMSprop(model.parameters(), lr=0.01, alpha=0.99)
    child = mp.get_context("fork").Process(
        target=step_once_with_unit_gradients, args=(model, optimizer)
    )
    child.start()
    child.join(timeout=60)
    assert child.exitcode == 0
    for p in model.parameters():
        assert float(optimizer.state[p]["step"]) == 1.0
        torch.testing.assert_close(optimizer.state[p]["square_avg"], torch.full_like(p, 0.01))


def test_loading_a_saved_state_keeps_it_shared():
    model = small_model()
    optimizer = SharedAdam(model.parameters(), lr=1e-3)
    run(optimizer, model, gradient_stream(model, 2))
    saved = optimizer.state_dict()
    fresh = SharedAdam(model.parameters(), lr=1e-3)
    fresh.load_state_dict(saved)
    for p in model.parameters():
        assert float(fresh.state[p]["step"]) == 2.0
        assert all(t.is_shared() for t in fresh.state[p].values())


def test_make_shared_optimizer_by_name():
    params = list(small_model().parameters())
    adam = make_shared_optimizer("adam", params, 1e-4)
    assert isinstance(adam, SharedAdam)
    assert adam.defaults["fused"] is True  # the fused CPU kernel (torch >= 2.4, installed here)
    assert isinstance(make_shared_optimizer("rmsprop", params, 1e-4), SharedRMSprop)
    with pytest.raises(ValueError, match="optimizer must be one of 'adam', 'rmsprop', got 'sgd'"):
        make_shared_optimizer("sgd", params, 1e-4)
