"""The original course's update code: its `train.py`, verbatim, in the one place the course keeps it.

The course grew out of an older one whose `train.py` (79 lines) each worker process ran. Two of its
pieces run here, quoted as they were, comments included (three of those comments mislead: the
appendix's fault 5):

- `ensure_shared_grads`, lines 10-14 of `train.py` (Block B), exactly as written;
- `original_update`, lines 74-78 (Block H, the update), the body of the original's loop made a
  function. Its arguments name what the loop had in scope: the worker's `model` is `local_model`,
  the loss `(policy_loss + 0.5 * value_loss)` is `loss`, and the clip's literal 40 is
  `max_grad_norm`, whose default is that 40.

One spelling is today's: `torch.nn.utils.clip_grad_norm_` for the original's `clip_grad_norm`,
which PyTorch 2.x deprecates (a FutureWarning at each call site, its removal announced); the two clip
alike (the appendix's fault 4 runs both). Nothing else is changed.

On PyTorch 2.x this update is wrong: `optimizer.zero_grad()` sets the shared `.grad` to None instead
of zeroing it in place, so the alias that `ensure_shared_grads` made once is dropped, the local
gradients are never cleared, and update k applies the sum of k rollouts' gradients. Exercise 4.2
(notebook 04) asks for the smallest fix, and `a3c_course.lessons.figures.async_training` measures it;
the appendix (notebooks/appendix_original_code.ipynb) runs it beside the course's
`a3c_course.a3c.worker.update_shared`.
"""

from __future__ import annotations

import torch

# A quotation: the formatter leaves it as the original wrote it.
# fmt: off


# Implementing a function to make sure the models share the same gradient
def ensure_shared_grads(model, shared_model):
    for param, shared_param in zip(model.parameters(), shared_model.parameters()):  # noqa: B905
        if shared_param.grad is not None:
            return
        shared_param._grad = param.grad


def original_update(local_model, shared_model, optimizer, loss, max_grad_norm=40.0):
    """Block H of the original train.py: one worker's update of the shared model (wrong on
    PyTorch 2.x: each update applies the sum of every rollout's gradient so far)."""
    optimizer.zero_grad() # initializing the optimizer
    loss.backward() # we give 2x more importance to the policy loss than the value loss because the policy loss is smaller
    torch.nn.utils.clip_grad_norm_(local_model.parameters(), max_grad_norm) # clamping the values of gradient between 0 and 40 to prevent the gradient from taking huge values and degenerating the algorithm
    ensure_shared_grads(local_model, shared_model) # making sure the model of the agent and the shared model share the same gradient
    optimizer.step() # running the optimization step


# fmt: on
