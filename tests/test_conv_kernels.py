"""A worker's convolution kernels: PyTorch's own for a few inputs a call, oneDNN's for many. The
choice is speed only: both give the same values and gradients, up to float rounding."""

import pytest
import torch

from a3c_course.a3c.model import ActorCritic
from a3c_course.training.worker_loop import conv_kernels, uses_onednn


def test_the_kernels_are_chosen_by_the_inputs_a_call_and_restored_after():
    assert not uses_onednn(2) and not uses_onednn(8) and uses_onednn(16)  # measured choices
    before = torch.backends.mkldnn.enabled
    with conv_kernels(False):
        assert torch.backends.mkldnn.enabled is False
    with conv_kernels(True):
        assert torch.backends.mkldnn.enabled is True
    assert torch.backends.mkldnn.enabled == before
    with pytest.raises(RuntimeError), conv_kernels(False):
        raise RuntimeError("the choice is undone on the way out of an error too")
    assert torch.backends.mkldnn.enabled == before


def outputs_and_gradients(model: ActorCritic, frames: torch.Tensor, onednn: bool):
    """Two steps of the network (through the LSTM), a loss of every output, and its gradients."""
    model.zero_grad(set_to_none=True)
    with conv_kernels(onednn):
        first = model(frames[0])
        second = model(frames[1], first.state)
        loss = sum((out.value.sum() + out.logits.pow(2).sum()) for out in (first, second))
        loss.backward()
    return second.logits.detach(), [p.grad.clone() for p in model.parameters()]


@pytest.mark.parametrize("batch", [2, 8, 16])
def test_both_kernels_give_the_same_values_and_gradients(batch):
    torch.manual_seed(0)
    model = ActorCritic((1, 42, 42), 4, activation="leaky_relu")  # the Breakout preset's network
    frames = torch.rand(2, batch, 1, 42, 42) * 255
    native = outputs_and_gradients(model, frames, onednn=False)
    onednn = outputs_and_gradients(model, frames, onednn=True)
    torch.testing.assert_close(native[0], onednn[0], rtol=1e-4, atol=1e-5)
    for a, b in zip(native[1], onednn[1], strict=True):
        torch.testing.assert_close(a, b, rtol=1e-3, atol=1e-5)
