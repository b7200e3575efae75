"""Silent units: counted by hand layer by layer, all silent when pushed below zero, and a dead ReLU
body gets no gradient while a leaky one does."""

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from a3c_course.a3c.model import ActorCritic, standardize_frames
from a3c_course.lessons.diagnostics import random_play_frames, silent_units


@pytest.fixture(scope="module")
def frames():
    return random_play_frames("breakout", count=12, every=3)


def test_random_play_frames_are_preprocessed_screens(frames):
    assert frames.shape == (12, 1, 42, 42) and frames.dtype == torch.float32
    assert 0.0 <= float(frames.min()) and float(frames.max()) <= 1.0
    assert len({bytes(f.numpy()) for f in frames}) > 1  # the game moves on between them
    assert random_play_frames("breakout", count=2, size=84).shape == (2, 1, 84, 84)


def by_hand(model: ActorCritic, frames: torch.Tensor) -> list[float]:
    """The reference: the conv layers applied one by one with torch.relu, maxima taken by hand."""
    x, fractions = standardize_frames(frames), []
    with torch.no_grad():
        for conv in [m for m in model.body if isinstance(m, torch.nn.Conv2d)]:
            x = torch.relu(conv(x))
            fractions.append(sum(float(x[:, c].max()) <= 0 for c in range(x.shape[1])) / x.shape[1])
    return fractions


def test_a_fresh_network_has_few_silent_units_and_the_counts_match_by_hand(frames):
    torch.manual_seed(0)
    model = ActorCritic((1, 42, 42), 4)
    fractions = silent_units(model, frames)
    assert list(fractions) == [f"layer {i}" for i in range(1, 5)]
    assert list(fractions.values()) == by_hand(model, frames)
    assert max(fractions.values()) < 0.5


def kill(model: ActorCritic) -> ActorCritic:
    with torch.no_grad():
        for conv in [m for m in model.body if isinstance(m, torch.nn.Conv2d)]:
            conv.bias.fill_(-1e3)  # below zero for any standardised screen
    return model


@pytest.mark.parametrize("activation, gets_gradient", [("relu", False), ("leaky_relu", True)])
def test_a_body_pushed_below_zero_is_silent_and_only_a_leaky_one_still_learns(
    frames, activation, gets_gradient
):
    model = kill(ActorCritic((1, 42, 42), 4, activation=activation))
    assert set(silent_units(model, frames).values()) == {1.0}
    out = model(frames)
    (out.logits.sum() + out.value.sum()).backward()
    first_conv = model.body[0]
    assert bool(first_conv.weight.grad.abs().sum() > 0) is gets_gradient


def test_a_network_without_a_conv_body_is_refused():
    with pytest.raises(ValueError, match="needs a network with a conv body"):
        silent_units(ActorCritic((4,), 2), torch.zeros(3, 4))


def test_the_dead_units_script_reads_a_shipped_agent():
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, "benchmarks/dead_units.py", "--pretrained", "pong", "--frames", "6"],
        capture_output=True, text=True, timeout=120, cwd=root,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    row = next(line for line in done.stdout.splitlines() if line.startswith("| pretrained pong"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[1] == "relu" and all(cell.endswith("%") for cell in cells[3:])
    assert len(cells) == 7  # name, activation, steps, 4 layers
