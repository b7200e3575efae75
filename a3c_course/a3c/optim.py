"""Shared optimizers: Adam and RMSProp whose state lives in shared memory.

In A3C every worker process updates one shared model with its own gradients (Hogwild: no locks).
An adaptive optimizer keeps state per parameter: Adam its moments m and v and a step counter t,
RMSProp its running mean of squared gradients. If each worker kept its own copy of that state, each
would see only its own share of the updates: its moments would lag, and its bias correction would use
its own step count. So the state is shared too, exactly like the weights: created once, up front, in
shared memory, before the workers start. The paper calls this "shared RMSProp" and found it more
robust than per-thread statistics.

PyTorch's optimizers create their state lazily, on the first `step()`, in the process that runs it:
state created inside a worker would be private to that worker. These classes create every state
tensor in `__init__` (with the keys, shapes and dtypes the stock `step()` expects, so that `step()`
finds the state present and never re-creates it) and move it to shared memory. The stock `step()`
then updates the state in place, which every process sees.

    model.share_memory()
    optimizer = SharedAdam(model.parameters(), lr=1e-4)   # before starting the workers
    # in each worker: compute a gradient, set shared_param.grad, optimizer.step()

Like the weights, the shared state is updated without locks: two workers that step at the same
moment may interleave their writes (and the step counter may miss an increment). Hogwild accepts
such rare, small races for speed.
"""

from __future__ import annotations

import functools

import torch

__all__ = ["SharedAdam", "SharedRMSprop", "make_shared_optimizer", "OPTIMIZERS"]


def _step_counter(fused: bool = False) -> torch.Tensor:
    """The `step` entry as the stock optimizers create it: a 0-dim float tensor on the CPU.

    The fused kernels want float32; otherwise PyTorch uses float64 when that is the default dtype,
    float32 else.
    """
    dtype = torch.float32 if fused or torch.get_default_dtype() != torch.float64 else torch.float64
    return torch.zeros((), dtype=dtype)


def _zeros_like(p: torch.Tensor) -> torch.Tensor:
    return torch.zeros_like(p, memory_format=torch.preserve_format)


def _check_cpu(params) -> None:
    for p in params:
        if p.device.type != "cpu":
            raise ValueError(
                f"shared optimizers keep their state in CPU shared memory; got a parameter on {p.device}"
            )


class _SharedState:
    """What both shared optimizers add to the stock ones: each parameter's state created up front
    (initial_state), then kept in shared memory."""

    def __init__(self, params, *args, **kwargs):
        super().__init__(params, *args, **kwargs)
        for group in self.param_groups:
            _check_cpu(group["params"])
            for p in group["params"]:
                self.state[p].update(self.initial_state(group, p))
        self.share_memory()

    def initial_state(self, group: dict, p: torch.Tensor) -> dict[str, torch.Tensor]:
        """The state the stock optimizer would create for p at its first step."""
        raise NotImplementedError

    def share_memory(self):
        """Move every state tensor to shared memory (in place; called by __init__)."""
        for state in self.state.values():
            for value in state.values():
                if torch.is_tensor(value):
                    value.share_memory_()
        return self

    def load_state_dict(self, state_dict) -> None:
        """Load a saved state, then move it to shared memory (the stock method makes new tensors)."""
        super().load_state_dict(state_dict)
        self.share_memory()


class SharedAdam(_SharedState, torch.optim.Adam):
    """torch.optim.Adam with its state (step, exp_avg, exp_avg_sq) created up front in shared memory.

    Takes the same arguments as torch.optim.Adam; the update is Adam's own (the stock `step()`).
    The original course's defaults (lr=1e-3 in torch, 1e-4 in the course's config) are not changed
    here: pass lr explicitly.
    """

    def initial_state(self, group: dict, p: torch.Tensor) -> dict[str, torch.Tensor]:
        state = {
            "step": _step_counter(bool(group.get("fused"))),
            "exp_avg": _zeros_like(p),
            "exp_avg_sq": _zeros_like(p),
        }
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = _zeros_like(p)
        return state


class SharedRMSprop(_SharedState, torch.optim.RMSprop):
    """torch.optim.RMSprop with its state (step, square_avg, and momentum_buffer when momentum > 0,
    grad_avg when centered) created up front in shared memory: shared statistics, as the A3C paper's
    "shared RMSProp", but with torch's defaults unless given: eps 1e-8 where the paper used 0.1
    (pass eps=0.1 for theirs); its decay alpha 0.99 is torch's default too.

    Takes the same arguments as torch.optim.RMSprop; the update is RMSprop's own (the stock `step()`).
    """

    def initial_state(self, group: dict, p: torch.Tensor) -> dict[str, torch.Tensor]:
        state = {"step": _step_counter(), "square_avg": _zeros_like(p)}
        if group["momentum"] > 0:
            state["momentum_buffer"] = _zeros_like(p)
        if group["centered"]:
            state["grad_avg"] = _zeros_like(p)
        return state


OPTIMIZERS = {"adam": SharedAdam, "rmsprop": SharedRMSprop}


@functools.cache
def fused_adam_on_cpu() -> bool:
    """Whether this PyTorch has a fused Adam kernel for CPU tensors (2.4 and later)."""
    try:
        torch.optim.Adam([torch.zeros(1, requires_grad=True)], fused=True)
    except (RuntimeError, TypeError, ValueError):
        return False
    return True


def make_shared_optimizer(name: str, params, lr: float) -> torch.optim.Optimizer:
    """The shared optimizer called `name` ("adam" or "rmsprop") over params, with learning rate lr.

    Adam runs PyTorch's fused kernel where there is one for the CPU: the same update (the same
    formula, up to float rounding), computed in one pass over each tensor instead of a dozen. For
    the course's network a step takes 0.8 ms instead of 4 (benchmarks/README.md), and a worker
    makes one per rollout.
    """
    try:
        optimizer_class = OPTIMIZERS[name]
    except KeyError:
        raise ValueError(
            f"optimizer must be one of {', '.join(map(repr, OPTIMIZERS))}, got {name!r}"
        ) from None
    options = {"fused": True} if optimizer_class is SharedAdam and fused_adam_on_cpu() else {}
    return optimizer_class(params, lr=lr, **options)
