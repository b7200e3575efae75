"""Checks and hints for notebook 01's exercises (environments and preprocessing).

1.1 check_preprocess_frame    preprocess_frame(frame, rows, size=42): RGB screen -> float32 (1, size, size)
1.2 check_skip_frames         skip_frames(env, action, skip=4): repeat an action, sum rewards, max-pool
1.3 check_running_normalizer  RunningNormalizer(alpha, eps): the original course's per-process normaliser

Each check runs the learner's code on several inputs (real game frames and edge cases) and compares
with a reference written here independently: OpenCV's own grey conversion and resize for 1.1, a
scripted emulator for 1.2 (`scripted_game.py`), and the formula of the original's NormalizedEnv for
1.3. When 1.1 or 1.3 fails, `unit1_mistakes` names the likely cause: the known mistake whose
output the learner's matches; when 1.2 raises where only one frame was seen, it names why. HINTS
holds each exercise's hints, from the idea to a close sketch (the notebook shows them one at a
time).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import cv2
import numpy as np

from a3c_course.lessons.exercises.core import Case, NamedMistake, check_cases, close, report
from a3c_course.lessons.exercises.scripted_game import (
    blinking_frames,
    compare_skip,
    play_skip,
    reference_skip_frames,
)
from a3c_course.lessons.exercises.unit1_mistakes import (
    FIRST_FRAME_ZERO,
    ONE_FRAME,
    frame_cause,
    normaliser_cause,
)

HINTS = {
    "1.1": [
        "Section 3 did it on one frame, step by step: crop, grey, resize, scale. Do the same four "
        "steps in that order, with <code>rows</code> and <code>size</code> in place of Breakout's "
        "numbers.",
        "Crop with <code>frame[top:bottom]</code> (<code>top, bottom = rows</code>); grey with "
        "<code>@ LUMA</code> (rounded, if you make it <code>uint8</code>); resize with "
        "<code>cv2.resize(image, (size, size), interpolation=cv2.INTER_AREA)</code> (the size is "
        "(width, height)); divide by 255.",
        "A sketch: <code>crop -> grey -> small = resize(grey) -> small as float32 / 255 -> add a "
        "leading axis</code>; the last step is <code>(...)[None]</code>, which turns (42, 42) into "
        "(1, 42, 42).",
    ],
    "1.2": [
        "Call <code>env.step(action)</code> again and again with the same action, keep every frame "
        "it returns, add up the rewards, and stop as soon as the episode ends.",
        "A <code>for</code> loop over <code>range(skip)</code> with a list of frames and a running "
        "total; <code>break</code> when <code>terminated or truncated</code>. After the loop, pool "
        "the last two frames with <code>np.maximum</code>.",
        "A sketch of the end: <code>pooled = np.maximum(frames[-2], frames[-1]) if len(frames) > 1 "
        "else frames[-1]</code>; return it with the total and the last step's "
        "<code>terminated, truncated, info</code>.",
    ],
    "1.3": [
        "Each instance remembers three things between calls: the two running averages and the "
        "number of frames seen, <code>t</code>. Create them on <code>self</code> in "
        "<code>__init__</code> (not on the class, or all instances would share them).",
        "In <code>__call__</code>: add 1 to <code>t</code>; update both averages with "
        "<code>obs.mean()</code> and <code>obs.std()</code>; divide each by "
        "<code>1 - alpha ** t</code>; then return the standardised <code>obs</code>, with "
        "<code>eps</code> added to the standard deviation.",
        "A sketch: <code>self.mean = self.alpha * self.mean + (1 - self.alpha) * obs.mean()</code> "
        "is one update (the other is the same with std). Store the averages as they are and "
        "correct a copy at each call: "
        "<code>mean_hat = self.mean / (1 - self.alpha ** self.t)</code>.",
    ],
}

# ----------------------------------------------------------------------------------------------
# Frames for the checks: real screens from the games, made once per session.


@cache
def _game_frames(env_id: str, steps: int, seed: int = 0) -> tuple[np.ndarray, ...]:
    """The RGB screens of env_id over `steps` seeded random actions (one emulator frame each)."""
    import gymnasium as gym

    from a3c_course.a3c.envs import register_ale

    register_ale()
    env = gym.make(env_id, frameskip=1, repeat_action_probability=0.0)
    env.reset(seed=seed)
    env.action_space.seed(seed)
    frames = []
    for _ in range(steps):
        frame, *_ = env.step(env.action_space.sample())
        frame.setflags(write=False)
        frames.append(frame)
    env.close()
    return tuple(frames)


def _copy_args(func: Callable, name: str) -> Callable:
    """Give the learner fresh copies of the inputs, so an in-place edit cannot spoil the next case."""

    def run(*args, **kwargs):
        args = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
        return func(*args, **kwargs)

    run.__name__ = name
    return run


def _name(func: Any) -> str:
    return getattr(func, "__name__", "your function")


# ----------------------------------------------------------------------------------------------
# 1.1 Crop, grey, resize, scale.


def reference_preprocess_frame(frame: np.ndarray, rows: tuple[int, int], size: int) -> np.ndarray:
    """OpenCV's luminance grey (the same weights as ALE's grey screen), INTER_AREA resize, /255."""
    top, bottom = rows
    grey = cv2.cvtColor(np.ascontiguousarray(frame), cv2.COLOR_RGB2GRAY)
    small = cv2.resize(grey[top:bottom], (size, size), interpolation=cv2.INTER_AREA)
    return (small.astype(np.float32) / 255.0)[None]


def _compare_observation(got: Any, expected: np.ndarray) -> str | None:
    got_a = np.asarray(got)
    size = expected.shape[-1]
    if got_a.shape != expected.shape:
        if got_a.shape == expected.shape[1:]:
            return f"shape {got_a.shape}: the channel axis is missing; return shape (1, {size}, {size}), e.g. `small[None]`"
        if got_a.ndim == 3 and got_a.shape[-1] == 3:
            return f"shape {got_a.shape}: the frame still has its 3 colour channels; convert it to grey"
        return f"shape {got_a.shape}, expected {expected.shape} (1 channel, {size} x {size} pixels)"
    if got_a.dtype != np.float32:
        return f"dtype {got_a.dtype}; the network takes float32: finish with `.astype(np.float32)`"
    if np.nanmax(got_a) > 1.5:
        return f"values go up to {np.nanmax(got_a):.1f}, expected [0, 1]: divide by 255"
    if close(got_a, expected, atol=1.0 / 255, rtol=0.0) is None:
        return None
    gap = float(np.nanmax(np.abs(got_a.astype(np.float64) - expected)))
    return f"values differ by up to {gap:.3f} (allowed 1/255 = {1 / 255:.4f})"  # frame_cause: why


def _describe_image(image: np.ndarray) -> str:
    if image.size == 0:
        return f"shape {image.shape}, empty"
    return (
        f"shape {image.shape}, mean {np.nanmean(image):.3f}, "
        f"min {np.nanmin(image):.3f}, max {np.nanmax(image):.3f}"
    )


def summarise_observations(expected: np.ndarray, got: Any) -> list[str]:
    """A short summary of two observations, in place of 42 x 42 numbers cut off mid-line: each
    one's shape, mean and range, then where they differ most (row and column of the picture)."""
    try:
        got_a = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError):  # not numbers: the verdict says what came back
        return [f"  got: a {type(got).__name__}"]
    lines = [f"  expected: {_describe_image(expected)}", f"  got:      {_describe_image(got_a)}"]
    diff = np.abs(got_a - expected) if got_a.shape == expected.shape else None
    if diff is None or np.isnan(diff).all():
        return lines
    _, row, column = np.unravel_index(np.nanargmax(diff), diff.shape)
    height, width = diff.shape[1:]
    where = (
        ("top", "middle", "bottom")[3 * row // height]
        + " "
        + ("left", "centre", "right")[3 * column // width]
    )
    n_off = int((diff > 1 / 255 + 1e-9).sum())
    lines.append(
        f"  largest difference: {diff[0, row, column]:.3f} at row {row}, column {column} "
        f"({where} of the {height} x {width} picture): got {got_a[0, row, column]:.3f}, expected "
        f"{expected[0, row, column]:.3f}; {n_off} of {diff.size} pixels differ by more than 1/255"
    )
    return lines


def check_preprocess_frame(preprocess_frame: Callable) -> bool:
    """Exercise 1.1: preprocess_frame(frame, rows, size=42) -> float32 array (1, size, size) in [0, 1].

    frame is an RGB screen (210, 160, 3) uint8; rows = (top, bottom) is the play area to keep.
    """
    breakout = _game_frames("ALE/Breakout-v5", 120)[-1]
    pong = _game_frames("ALE/Pong-v5", 90)[-1]
    noise = np.random.default_rng(11).integers(0, 256, (210, 160, 3), dtype=np.uint8)
    white = np.full((210, 160, 3), 255, np.uint8)
    black = np.zeros((210, 160, 3), np.uint8)
    breakout_rows, pong_rows = (32, 196), (34, 194)

    def case(description, frame, rows, size=42):
        expected = reference_preprocess_frame(frame, rows, size)
        described = f"{description} (rows={rows}, size={size})"
        return Case(described, (frame, rows), expected, {"size": size})

    cases = [
        case("a Breakout screen", breakout, breakout_rows),
        case("a Pong screen", pong, pong_rows),
        case("a screen of random colours", noise, breakout_rows),
        case("a Breakout screen at size 84", breakout, breakout_rows, 84),
        case("the whole random screen, no crop", noise, (0, 210)),
        case("an all-white screen (every value should be 1.0)", white, pong_rows),
        case("an all-black screen (every value should be 0.0)", black, pong_rows),
    ]
    return check_cases(
        "1.1",
        _copy_args(preprocess_frame, _name(preprocess_frame)),
        cases,
        _compare_observation,
        frame_cause,
        summarise_observations,
    )


# ----------------------------------------------------------------------------------------------
# 1.2 Frame skipping with max-pooling of the last two frames.


def check_skip_frames(skip_frames: Callable) -> bool:
    """Exercise 1.2: skip_frames(env, action, skip=4) -> (frame, total_reward, terminated, truncated, info)."""
    frames = blinking_frames(8, seed=13)

    def script(rewards, end_at=None, flag="terminated"):
        steps = []
        for t, reward in enumerate(rewards):
            ended = end_at is not None and t == end_at
            steps.append(
                (frames[t], reward, ended and flag == "terminated", ended and flag == "truncated")
            )
        return steps

    scripts = [
        ("4 frames, rewards 1, 0, 4, 0", script([1.0, 0.0, 4.0, 0.0]), 4),
        ("skip=2, a sprite on one frame only", script([0.0, 0.0]), 2),
        ("skip=1 (no pooling: the frame itself)", script([7.0]), 1),
        ("a game that ends on its 2nd frame", script([1.0, 1.0, 9.0, 9.0], end_at=1), 4),
        (
            "a time limit on the 1st frame",
            script([2.0, 9.0, 9.0, 9.0], end_at=0, flag="truncated"),
            4,
        ),
        ("a game that ends on its 4th frame", script([0.0, 0.0, 1.0, 1.0], end_at=3), 4),
        ("skip=3", script([0.0, 1.0, 1.0]), 3),
    ]
    cases = [Case(d, (s, k), reference_skip_frames(s, k)) for d, s, k in scripts]
    play = play_skip(_naming_one_frame_errors(skip_frames), _name(skip_frames))
    return check_cases("1.2", play, cases, compare_skip)


def _naming_one_frame_errors(skip_frames: Callable) -> Callable:
    """skip_frames, with an error it raises after the one frame a case allows (skip=1, or an
    episode over at its first frame), such as IndexError from `frames[-2]`, reported with its cause
    (NamedMistake) rather than as the case and the error alone."""

    def run(env, action, skip=4):
        try:
            return skip_frames(env, action, skip=skip)
        except (NotImplementedError, NamedMistake):
            raise
        except Exception as error:
            if env.calls != 1 or reference_skip_frames(env.script, skip)["steps"] != 1:
                raise
            raise NamedMistake(f"{type(error).__name__} ({error}): {ONE_FRAME}") from error

    run.__name__ = _name(skip_frames)
    return run


# ----------------------------------------------------------------------------------------------
# 1.3 The original course's running normaliser (NormalizedEnv), one per process.


def reference_running_normalise(
    frames: list[np.ndarray], alpha: float, eps: float, start: int = 0
) -> np.ndarray:
    """The formula, step by step (t = 1, 2, ...), with m_0 = s_0 = 0:

    m_t = alpha m_{t-1} + (1 - alpha) mean(x_t),   s_t = alpha s_{t-1} + (1 - alpha) std(x_t)
    y_t = (x_t - m_t / (1 - alpha^t)) / (s_t / (1 - alpha^t) + eps)
    """
    m = s = 0.0
    outputs = []
    for t, x in enumerate(frames, start=1):
        x64 = np.asarray(x, np.float64)
        m = alpha * m + (1 - alpha) * x64.mean()
        s = alpha * s + (1 - alpha) * x64.std()
        correction = 1 - alpha**t
        outputs.append((x64 - m / correction) / (s / correction + eps))
    return np.stack(outputs)


def _feed(normalizer_class: Callable, name: str) -> Callable:
    """Make one normaliser per stream and feed it that stream's frames in turn; stack the outputs."""

    def run(streams: list[list[np.ndarray]], alpha: float, eps: float = 1e-8):
        normalizers = [normalizer_class(alpha=alpha, eps=eps) for _ in streams]
        outputs: list[list[np.ndarray]] = [[] for _ in streams]
        for t in range(max(len(s) for s in streams)):
            for i, stream in enumerate(streams):  # interleaved, like two processes side by side
                if t < len(stream):
                    outputs[i].append(np.asarray(_call(normalizers[i], stream[t], t), np.float64))
        return np.stack([np.stack(o) for o in outputs])

    run.__name__ = name
    return run


def _call(normalizer: Callable, frame: np.ndarray, t: int) -> Any:
    try:
        return normalizer(frame.copy())
    except ZeroDivisionError as error:  # 1 - alpha**0 with Python floats: name why, not just where
        if t > 0:
            raise
        raise ZeroDivisionError(f"{error}; likely cause: {FIRST_FRAME_ZERO}") from error


def _compare_normalised(got: Any, expected: np.ndarray) -> str | None:
    """What differs, in numbers; normaliser_cause says why."""
    got_a = np.asarray(got, np.float64)
    if got_a.shape == expected.shape:
        if np.isnan(got_a).any() or np.isinf(got_a).any():
            return "some outputs are nan or inf"
        scale_got, scale_exp = np.abs(got_a).max(), np.abs(expected).max()
        if scale_exp > 0 and scale_got > 50 * scale_exp:
            return f"outputs up to {scale_got:.3g}, expected at most {scale_exp:.2f}"
    return close(got_a, expected, atol=1e-4, rtol=1e-4)


SHARED_STATE = (
    "your instances share their statistics: keep mean, std and t on self (set them in __init__), "
    "not on the class"
)


def _instances_share_state(normalizer_class: Callable) -> bool:
    """Whether feeding one instance changes what another returns: the same two frames go to a
    lone instance and to one whose sibling is fed other frames in between. Any error counts as
    no (the cases then report it, or NOT ATTEMPTED for a stub)."""
    x1 = np.linspace(0.0, 1.0, 42 * 42, dtype=np.float32).reshape(1, 42, 42)
    x2, other = x1 * 0.5, np.full((1, 42, 42), 0.9, np.float32) + x1 * 0.1
    try:
        alone = normalizer_class(alpha=0.5, eps=1e-8)
        alone(x1.copy())
        expected = np.asarray(alone(x2.copy()), np.float64)
        mine, sibling = normalizer_class(alpha=0.5, eps=1e-8), normalizer_class(alpha=0.5, eps=1e-8)
        mine(x1.copy())
        for _ in range(3):
            sibling(other.copy())
        got = np.asarray(mine(x2.copy()), np.float64)
        return got.shape == expected.shape and not np.allclose(got, expected, equal_nan=True)
    except Exception:
        return False


def check_running_normalizer(RunningNormalizer: Callable) -> bool:
    """Exercise 1.3: RunningNormalizer(alpha=0.9999, eps=1e-8); calling it on an observation
    updates its running mean and std and returns the normalised observation."""
    rng = np.random.default_rng(12)
    screens = _game_frames("ALE/Breakout-v5", 120)[40::4][:12]
    breakout = [reference_preprocess_frame(f, (32, 196), 42) for f in screens]  # observations
    drifting = [
        (rng.random((1, 42, 42)) * (0.2 + 0.06 * t) + 0.03 * t).astype(np.float32)
        for t in range(10)
    ]
    constant = [np.full((1, 42, 42), 0.5, np.float32)] * 3

    def case(description, streams, alpha, eps=1e-8):
        expected = np.stack([reference_running_normalise(s, alpha, eps) for s in streams])
        return Case(f"{description} (alpha={alpha})", (streams, alpha), expected, {"eps": eps})

    cases = [
        case(
            "the first frame only: after bias correction it is standardised by itself",
            [breakout[:1]],
            0.9999,
        ),
        case("12 Breakout frames in a row", [breakout], 0.9999),
        case("10 noise frames that grow brighter, with a short memory", [drifting], 0.5),
        case("three frames of one flat grey (std 0)", [constant], 0.5),
        case(
            "two normalisers used in turn, each with its own frames",
            [breakout[:6], drifting[:6]],
            0.9,
        ),
    ]
    name = _name(RunningNormalizer)
    if _instances_share_state(RunningNormalizer):
        return report("1.3", name, SHARED_STATE)
    return check_cases(
        "1.3", _feed(RunningNormalizer, name), cases, _compare_normalised, normaliser_cause
    )
