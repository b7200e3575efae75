"""The mistakes the checks of 1.1, 1.2 and 1.3 can name, and how each is recognised.

Each known mistake is remade from the case's own input (the grey, crop or resize done the wrong
way; the running statistics used in the wrong order), and the cause is named when the learner's
output matches that remake. The remakes are far apart (1.1's differ by at least 6 grey levels on
the check's screens), so a match is not a coincidence. When none matches (two mistakes at once,
or another one), the cause is a short checklist of the steps instead.
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np

from a3c_course.lessons.exercises.core import Case, close

# ----------------------------------------------------------------------------------------------
# 1.1 preprocess_frame(frame, rows, size): each mistake is (how the remake differs, the cause).

LUMA = np.array([0.299, 0.587, 0.114])  # ITU-R BT.601: the weighted grey the messages name
_CROP_FIX = "crop with frame[rows[0]:rows[1]] (a slice leaves out its end, so it keeps rows[1] - 1)"
FRAME_MISTAKES: dict[str, tuple[dict, str]] = {
    "mean grey": (
        {"grey": "mean"},
        "you grey with the plain mean of R, G, B; use the weighted sum 0.299 R + 0.587 G + "
        "0.114 B instead (`crop @ LUMA`, or cv2.cvtColor(crop, cv2.COLOR_RGB2GRAY))",
    ),
    "bilinear": (
        {"interpolation": cv2.INTER_LINEAR},
        "you resize with cv2.resize's default (bilinear), which reads only a few screen pixels "
        "per small pixel; pass interpolation=cv2.INTER_AREA, which averages all of them",
    ),
    "nearest": (
        {"interpolation": cv2.INTER_NEAREST},
        "you resize with nearest neighbour, which keeps one screen pixel in 15; pass "
        "interpolation=cv2.INTER_AREA, which averages all of them",
    ),
    "truncated grey": (
        {"grey": "truncated"},
        "you turn the weighted sum into uint8 with .astype alone, which cuts off the fraction "
        "(201.9 becomes 201); round it first: np.round(crop @ LUMA).astype(np.uint8)",
    ),
    "no crop": (
        {"crop": False},
        "you resize the whole screen, score bar included; crop the play area first "
        "(frame[rows[0]:rows[1]]), then grey and resize that",
    ),
    "top - 1": ({"top": -1}, f"your crop starts one row too early, at rows[0] - 1; {_CROP_FIX}"),
    "top + 1": ({"top": 1}, f"your crop starts one row too late, at rows[0] + 1; {_CROP_FIX}"),
    "bottom - 1": ({"bottom": -1}, f"your crop stops one row too early; {_CROP_FIX}"),
    "bottom + 1": ({"bottom": 1}, f"your crop keeps one row too many at the bottom; {_CROP_FIX}"),
}
FRAME_CHECKLIST = (
    "not one of the usual single slips (two at once?); check each step: grey is a weighted sum, "
    "0.299 R + 0.587 G + 0.114 B (not the plain mean of R, G, B); crop rows[0]:rows[1] before "
    "resizing; resize with interpolation=cv2.INTER_AREA; cv2.resize takes (width, height)"
)
# A learner may round the grey to uint8 or not, before and after the resize: up to 1 grey level.
FRAME_TOLERANCE = 1.5 / 255


def preprocess_with_mistake(
    frame: np.ndarray,
    rows: tuple[int, int],
    size: int,
    grey: str = "luma",
    interpolation: int = cv2.INTER_AREA,
    top: int = 0,
    bottom: int = 0,
    crop: bool = True,
) -> np.ndarray | None:
    """The observation made with one mistake (None when the shifted crop leaves the screen);
    crop=False: the whole screen, uncropped."""
    first, last = (rows[0] + top, rows[1] + bottom) if crop else (0, frame.shape[0])
    if first < 0 or last > frame.shape[0]:
        return None
    crop = np.ascontiguousarray(frame[first:last])
    if grey == "mean":
        image = crop.astype(np.float32).mean(axis=-1)
    elif grey == "truncated":
        image = (crop @ LUMA).astype(np.uint8)
    else:
        image = cv2.cvtColor(crop, cv2.COLOR_RGB2GRAY)
    small = cv2.resize(image, (size, size), interpolation=interpolation)
    return (small.astype(np.float64) / 255.0)[None]


def frame_cause(case: Case, got: Any) -> str | None:
    """Name the mistake whose remake the learner's observation matches; the checklist when none
    does; None when the values are not the problem (a shape, dtype or scale the check names)."""
    got_a = np.asarray(got, dtype=np.float64)
    expected = case.expected
    if got_a.shape != expected.shape or np.nanmax(got_a) > 1.5:
        return None
    if close(got_a, expected, atol=1.0 / 255, rtol=0.0) is None:
        return None  # right values (a wrong dtype, say)
    (frame, rows), size = case.args, case.kwargs.get("size", 42)
    causes = []
    for mistake, cause in FRAME_MISTAKES.values():
        made = preprocess_with_mistake(frame, rows, size, **mistake)
        if made is not None and close(got_a, made, atol=FRAME_TOLERANCE, rtol=0.0) is None:
            causes.append(cause)
    return "; or ".join(causes) or FRAME_CHECKLIST


# ----------------------------------------------------------------------------------------------
# 1.3 RunningNormalizer: the formula with the statistics used in another order or form.

NORMALISER_MISTAKES: dict[str, str] = {
    "before update": "you normalise each frame with the averages of the frames before it (so "
    "the first, against averages still 0, is divided by eps alone); update the averages with "
    "this frame first, then normalise it",
    "before update, old t": "you normalise each frame with the averages (and t) of the frames "
    "before it; update the averages with this frame first, then normalise it",
    "t from 0": "your bias correction counts t from 0 (1 - alpha**0 = 0 at the first frame): "
    "add 1 to t before using it, so that the first frame has t = 1",
    "no correction": "the running averages start at 0, so divide them by (1 - alpha**t), the "
    "bias correction, before using them",
    "variance": "you average each frame's variance (obs.var()); average its standard deviation, "
    "obs.std()",
}
# 1.2 skip_frames: an error raised where only one frame was seen (skip=1, or an episode over at its
# first frame), e.g. IndexError from frames[-2]: the cause, not just the case.
ONE_FRAME = (
    "with only one frame seen (skip=1, or an episode that ends at its first frame) there is no "
    "second-last frame to pool: return that one frame as it is (e.g. `frames[-1]` when "
    "len(frames) == 1)"
)
FIRST_FRAME_ZERO = (
    "your bias correction 1 - alpha**t is 0 at the first frame (t is still 0): add 1 to t, and "
    "update the averages with the frame, before you normalise it"
)
NORMALISER_CHECKLIST = (
    "check: update the averages with this frame first, then normalise it; count t from 1 at "
    "the first frame; average each frame's std (not its variance)"
)


def normalise_with_mistake(
    frames: list[np.ndarray], alpha: float, eps: float, mistake: str
) -> np.ndarray:
    """The normaliser's outputs on one stream of frames, made with one of NORMALISER_MISTAKES."""
    m = s = 0.0
    outputs = []
    for t, x in enumerate(frames, start=1):
        x64 = np.asarray(x, np.float64)
        old_m, old_s = m, s
        m = alpha * m + (1 - alpha) * x64.mean()
        s = alpha * s + (1 - alpha) * (x64.var() if mistake == "variance" else x64.std())
        mean, std, correction = m, s, 1 - alpha**t
        if mistake == "before update":
            mean, std = old_m, old_s
        elif mistake == "before update, old t" and t > 1:  # the first frame has no old t to use
            mean, std, correction = old_m, old_s, 1 - alpha ** (t - 1)
        elif mistake == "t from 0":
            correction = 1 - alpha ** (t - 1)
        elif mistake == "no correction":
            correction = 1.0
        with np.errstate(divide="ignore", invalid="ignore"):
            outputs.append((x64 - mean / correction) / (std / correction + eps))
    return np.stack(outputs)


def normaliser_cause(case: Case, got: Any) -> str | None:
    """Name the mistake whose outputs the learner's match; otherwise what nan, inf or huge
    outputs point to; otherwise the checklist."""
    got_a = np.asarray(got, np.float64)
    expected = case.expected
    if got_a.shape != expected.shape:
        return None
    (streams, alpha), eps = case.args, case.kwargs.get("eps", 1e-8)
    for mistake, cause in NORMALISER_MISTAKES.items():
        made = np.stack([normalise_with_mistake(s, alpha, eps, mistake) for s in streams])
        if np.allclose(got_a, made, atol=1e-4, rtol=1e-4, equal_nan=True):
            return cause
    broken = ~np.isfinite(got_a).reshape(*got_a.shape[:2], -1).all(axis=-1)  # (stream, t)
    if broken.any():
        flat = np.array([[np.std(x) == 0 for x in stream] for stream in streams])
        if (broken <= flat).all():  # only frames of one grey: std 0
            return "a frame whose pixels are all equal has std 0: divide by (std + eps), not by std"
        return FIRST_FRAME_ZERO if broken[:, 0].any() else NORMALISER_CHECKLIST
    if np.abs(expected).max() > 0 and np.abs(got_a).max() > 50 * np.abs(expected).max():
        return NORMALISER_MISTAKES["no correction"]
    return NORMALISER_CHECKLIST
