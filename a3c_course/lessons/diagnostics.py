"""Is the network still alive? Silent units in the conv body.

A ReLU unit whose input is negative for every observation outputs 0 everywhere and gets no gradient:
nothing can bring it back, it is **dead**. A run whose conv body has died outputs the same policy
and value for every screen and plays like a random player for good, however long it trains. At a
learning rate of 7e-4 with Adam, Breakout runs lost units early: one lost its whole last conv layer
within 0.7M agent steps (benchmarks/README.md). Leaky ReLU and ELU units can be silent too
(negative everywhere), but they still pass a gradient and can come back.

    from a3c_course.lessons.diagnostics import random_play_frames, silent_units
    frames = random_play_frames("breakout", 60)
    silent_units(model, frames)   # {"layer 1": 0.0, "layer 2": 0.25, "layer 3": 0.0, "layer 4": 0.06}
"""

from __future__ import annotations

import numpy as np
import torch

from a3c_course.a3c.envs import FRAME_SIZE, make_env
from a3c_course.a3c.model import ACTIVATIONS, ActorCritic


def random_play_frames(
    game: str, count: int = 60, seed: int = 1, every: int = 5, size: int = FRAME_SIZE
) -> torch.Tensor:
    """`count` preprocessed observations (count, 1, size, size) of random play, one every `every`
    steps; size: the frames the network reads (its obs_shape[-1])."""
    env = make_env(game, seed=seed, size=size)
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    frames = []
    try:
        while len(frames) < count:
            for _ in range(every):
                obs, _, terminated, truncated, _ = env.step(int(rng.integers(env.action_space.n)))
                if terminated or truncated:
                    obs, _ = env.reset()
            frames.append(obs)
    finally:
        env.close()
    return torch.from_numpy(np.stack(frames).astype(np.float32))


def silent_units(model: ActorCritic, observations: torch.Tensor) -> dict[str, float]:
    """For each conv layer, the fraction of its channels (filters) that output nothing above 0, at
    any position, on any of `observations`. For a ReLU body, silent means dead."""
    if not model.has_conv_body:
        raise ValueError("silent_units needs a network with a conv body (screens, not vectors)")
    activations = [m for m in model.body if isinstance(m, tuple(ACTIVATIONS.values()))]
    peaks: list[torch.Tensor] = []  # per layer, each channel's largest output

    def keep_peak(module, inputs, output):
        peaks.append(output.amax(dim=(0, 2, 3)))

    hooks = [m.register_forward_hook(keep_peak) for m in activations]
    try:
        with torch.no_grad():
            model(observations)  # the forward pass as in training: screens standardised first
    finally:
        for hook in hooks:
            hook.remove()
    return {f"layer {i}": float((peak <= 0).float().mean()) for i, peak in enumerate(peaks, 1)}
