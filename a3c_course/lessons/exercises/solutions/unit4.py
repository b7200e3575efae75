"""Unit 4's solutions: the Hogwild update, the original update fixed, shared Adam state."""

import torch

from a3c_course.lessons.original_course import ensure_shared_grads  # the original's, verbatim


def update(local_model, shared_model, optimizer, loss, max_grad_norm):
    """Apply exactly this loss's gradient, clipped to max_grad_norm, to the shared model with one
    optimizer step; return the gradient norm before clipping (a float)."""
    ### BEGIN SOLUTION
    local_model.zero_grad()  # clear what an earlier rollout left
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(local_model.parameters(), max_grad_norm)
    for local, shared in zip(local_model.parameters(), shared_model.parameters(), strict=True):
        shared.grad = local.grad  # every time, no "only if None" shortcut
    optimizer.step()
    return float(norm)
    ### END SOLUTION


def fixed_update(local_model, shared_model, optimizer, loss, max_grad_norm):
    """The original update with the smallest change that applies one rollout's gradient per step."""
    ### BEGIN SOLUTION
    optimizer.zero_grad()
    local_model.zero_grad()  # the fix: the optimizer never clears the LOCAL gradients
    loss.backward()
    torch.nn.utils.clip_grad_norm_(local_model.parameters(), max_grad_norm)
    ensure_shared_grads(local_model, shared_model)
    optimizer.step()
    ### END SOLUTION


def share_adam_state(optimizer):
    """Create step, exp_avg and exp_avg_sq for every parameter of optimizer (a torch.optim.Adam),
    zero, in shared memory, before any step."""
    ### BEGIN SOLUTION
    for group in optimizer.param_groups:
        for p in group["params"]:
            state = optimizer.state[p]
            state["step"] = torch.zeros(()).share_memory_()  # a float tensor, incremented in place
            state["exp_avg"] = torch.zeros_like(p).share_memory_()
            state["exp_avg_sq"] = torch.zeros_like(p).share_memory_()
    ### END SOLUTION
