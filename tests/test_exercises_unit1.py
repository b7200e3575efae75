"""Notebook 01's exercise checks: right answers pass, stubs are NOT ATTEMPTED, wrong answers are
caught with a message that points at the mistake."""

import re

import cv2
import gymnasium as gym
import numpy as np
import pytest

from a3c_course.a3c.envs import PLAY_AREA_ROWS, PlayAreaObservation, make_env, register_ale
from a3c_course.lessons.exercises import unit1

# ----------------------------------------------------------------------------------------------
# 1.1 preprocess_frame


def preprocess_frame(frame, rows, size=42):
    top, bottom = rows
    r, g, b = (frame[top:bottom, :, c].astype(np.float64) for c in range(3))
    grey = np.round(0.299 * r + 0.587 * g + 0.114 * b).astype(np.uint8)
    small = cv2.resize(grey, (size, size), interpolation=cv2.INTER_AREA)
    return (small / 255.0).astype(np.float32)[None]


def preprocess_frame_float_grey(frame, rows, size=42):
    """Also right: grey kept as float (no rounding) before the resize."""
    top, bottom = rows
    grey = frame[top:bottom].astype(np.float32) @ np.array([0.299, 0.587, 0.114], np.float32)
    return (cv2.resize(grey, (size, size), interpolation=cv2.INTER_AREA) / 255.0)[None]


def stub(*args, **kwargs):
    raise NotImplementedError


def test_reference_matches_the_course_pipeline_on_a_real_screen():
    """The check's reference (OpenCV) is independent of the package; make sure both agree."""
    register_ale()
    env = gym.make("ALE/Breakout-v5", frameskip=1, repeat_action_probability=0.0)
    env.reset(seed=5)
    for _ in range(60):
        rgb, *_ = env.step(env.action_space.sample())
    ale_grey = env.unwrapped.ale.getScreenGrayscale()
    rows = PLAY_AREA_ROWS["ALE/Breakout-v5"]
    wrapper = PlayAreaObservation(make_env("breakout"), rows, 42)
    np.testing.assert_array_equal(
        unit1.reference_preprocess_frame(rgb, rows, 42), wrapper.observation(ale_grey)
    )


@pytest.mark.parametrize("solution", [preprocess_frame, preprocess_frame_float_grey])
def test_1_1_right_answers_pass(solution, capsys):
    assert unit1.check_preprocess_frame(solution)
    assert capsys.readouterr().out.startswith(f"PASSED [1.1] {solution.__name__}: all 7 cases")


def test_1_1_stub_is_not_attempted(capsys):
    assert not unit1.check_preprocess_frame(stub)
    assert capsys.readouterr().out.startswith("NOT ATTEMPTED [1.1] stub")


@pytest.mark.parametrize(
    "wrong, message",
    [
        (
            lambda f, rows, size=42: preprocess_frame(f, rows, size)[0],
            "the channel axis is missing",
        ),
        (lambda f, rows, size=42: preprocess_frame(f, rows, size) * 255, "divide by 255"),
        (lambda f, rows, size=42: preprocess_frame(f, rows, size).astype(np.float64), "float32"),
        (
            lambda f, rows, size=42: (
                cv2.resize(
                    f[rows[0] : rows[1]].mean(-1).astype(np.float32),
                    (size, size),
                    interpolation=cv2.INTER_AREA,
                )
                / 255
            )[None],
            "you grey with the plain mean of R, G, B",
        ),
        (
            lambda f, rows, size=42: (
                cv2.resize(
                    cv2.cvtColor(f, cv2.COLOR_RGB2GRAY)[rows[0] : rows[1]], (size, size)
                ).astype(np.float32)
                / 255
            )[None],
            "INTER_AREA",
        ),
        (lambda f, rows, size=42: preprocess_frame(f, (0, 210), size), "resize the whole screen"),
        (lambda f, rows, size=42: preprocess_frame(f, rows), "size=84"),
    ],
    ids=["no-channel", "no-scaling", "float64", "mean-grey", "bilinear", "no-crop", "ignores-size"],
)
def test_1_1_wrong_answers_are_caught(wrong, message, capsys):
    assert not unit1.check_preprocess_frame(wrong)
    out = capsys.readouterr().out
    assert out.startswith("FAILED [1.1]")
    assert message in out


def preprocess_with(grey="luma", interpolation=cv2.INTER_AREA, top=0, bottom=0):
    """preprocess_frame as a learner writes it, with the chosen mistakes (interpolation None:
    cv2.resize called without it, so bilinear)."""

    def preprocess_frame(frame, rows, size=42):
        weights = np.full(3, 1 / 3) if grey == "mean" else np.array([0.299, 0.587, 0.114])
        image = np.round(frame[rows[0] + top : rows[1] + bottom] @ weights).astype(np.uint8)
        how = {} if interpolation is None else {"interpolation": interpolation}
        return (cv2.resize(image, (size, size), **how).astype(np.float32) / 255.0)[None]

    return preprocess_frame


CROP_FIX = "crop with frame[rows[0]:rows[1]]"


@pytest.mark.parametrize(
    "mistake, cause, fix",
    [
        ({"grey": "mean"}, "you grey with the plain mean of R, G, B", "0.299 R + 0.587 G + 0.114 B"),
        ({"interpolation": None}, "you resize with cv2.resize's default (bilinear)", "INTER_AREA"),
        ({"interpolation": cv2.INTER_NEAREST}, "you resize with nearest neighbour", "INTER_AREA"),
        ({"top": -1}, "your crop starts one row too early, at rows[0] - 1", CROP_FIX),
        ({"top": 1}, "your crop starts one row too late, at rows[0] + 1", CROP_FIX),
        ({"bottom": -1}, "your crop stops one row too early", CROP_FIX),
        ({"bottom": 1}, "your crop keeps one row too many at the bottom", CROP_FIX),
    ],
    ids=["mean-grey", "bilinear", "nearest", "top-1", "top+1", "bottom-1", "bottom+1"],
)  # fmt: skip
def test_1_1_each_known_mistake_is_named(mistake, cause, fix, capsys):
    assert not unit1.check_preprocess_frame(preprocess_with(**mistake))
    out = capsys.readouterr().out
    assert out.startswith("FAILED [1.1] preprocess_frame: on a Breakout screen")
    line = next(line for line in out.splitlines() if "likely cause:" in line)
    assert line.startswith(f"  likely cause: {cause}") and fix in line


@pytest.mark.parametrize(
    "mistake",
    [{"grey": "mean", "interpolation": None}, {"top": 1, "bottom": 1}],
    ids=["mean-and-bilinear", "crop-shifted-by-one"],
)
def test_1_1_two_mistakes_at_once_get_the_checklist(mistake, capsys):
    assert not unit1.check_preprocess_frame(preprocess_with(**mistake))
    out = capsys.readouterr().out
    assert "likely cause: not one of the usual single slips (two at once?); check each step" in out
    assert "not the plain mean of R, G, B" in out and "INTER_AREA" in out


def preprocess_whole_screen(frame, rows, size=42):
    """Forgets the crop: greys and resizes the whole 210 x 160 screen, score bar included."""
    return preprocess_frame(frame, (0, frame.shape[0]), size)


def test_1_1_resizing_the_whole_screen_is_named(capsys):
    """Not "two at once?" and the checklist: the missing crop is a mistake of its own."""
    assert not unit1.check_preprocess_frame(preprocess_whole_screen)
    out = capsys.readouterr().out
    assert out.startswith("FAILED [1.1] preprocess_whole_screen: on a Breakout screen")
    line = next(line for line in out.splitlines() if "likely cause:" in line)
    assert line == (
        "  likely cause: you resize the whole screen, score bar included; crop the play area "
        "first (frame[rows[0]:rows[1]]), then grey and resize that."
    )
    assert "two at once" not in out


def test_1_1_a_failure_prints_a_summary_not_42_x_42_numbers(capsys):
    """Each observation's shape, mean and range, then the pixel where they differ most (row and
    column of the picture, both values), under the cause; no arrays cut off mid-line."""
    nearest = preprocess_with(interpolation=cv2.INTER_NEAREST)
    assert not unit1.check_preprocess_frame(nearest)
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert len(lines) == 5 and "[[" not in out and "..." not in out
    assert lines[1].startswith("  likely cause: you resize with nearest neighbour")
    assert re.fullmatch(
        r"  expected: shape \(1, 42, 42\), mean [\d.]+, min [\d.]+, max [\d.]+", lines[2]
    )
    assert re.fullmatch(
        r"  got:      shape \(1, 42, 42\), mean [\d.]+, min [\d.]+, max [\d.]+", lines[3]
    )
    found = re.fullmatch(
        r"  largest difference: ([\d.]+) at row (\d+), column (\d+) \((top|middle|bottom) "
        r"(left|centre|right) of the 42 x 42 picture\): got ([\d.]+), expected ([\d.]+); "
        r"(\d+) of 1764 pixels differ by more than 1/255",
        lines[4],
    )
    assert found, lines[4]
    frame, rows = unit1._game_frames("ALE/Breakout-v5", 120)[-1], (32, 196)
    expected = unit1.reference_preprocess_frame(frame, rows, 42)[0].astype(np.float64)
    got = nearest(frame, rows)[0].astype(np.float64)
    gap, row, column = float(found[1]), int(found[2]), int(found[3])
    assert gap == pytest.approx(np.abs(got - expected).max(), abs=1e-3)
    assert abs(got[row, column] - expected[row, column]) == pytest.approx(gap, abs=1e-3)
    assert (float(found[6]), float(found[7])) == pytest.approx(
        (got[row, column], expected[row, column]), abs=1e-3
    )
    assert int(found[8]) == int((np.abs(got - expected) > 1 / 255 + 1e-9).sum())


def test_1_1_a_wrong_shape_is_summarised_without_a_difference(capsys):
    assert not unit1.check_preprocess_frame(lambda f, rows, size=42: preprocess_frame(f, rows)[0])
    lines = capsys.readouterr().out.splitlines()
    assert "the channel axis is missing" in lines[0] and len(lines) == 3
    assert lines[1].startswith("  expected: shape (1, 42, 42), mean")
    assert lines[2].startswith("  got:      shape (42, 42), mean")


def test_1_1_a_wrong_dtype_alone_names_no_value_cause(capsys):
    assert not unit1.check_preprocess_frame(
        lambda f, rows, size=42: preprocess_frame(f, rows, size).astype(np.float64)
    )
    assert "likely cause" not in capsys.readouterr().out


def test_1_1_reports_which_case_failed(capsys):
    def only_for_42(frame, rows, size=42):
        if size != 42:
            raise ValueError("size must be 42")
        return preprocess_frame(frame, rows, size)

    assert not unit1.check_preprocess_frame(only_for_42)
    out = capsys.readouterr().out
    assert "on a Breakout screen at size 84" in out and "ValueError: size must be 42" in out


def test_1_1_inputs_are_copies(capsys):
    def scribbles_on_input(frame, rows, size=42):
        result = preprocess_frame(frame, rows, size)
        frame[:] = 0
        return result

    assert unit1.check_preprocess_frame(scribbles_on_input)


# ----------------------------------------------------------------------------------------------
# 1.2 skip_frames


def step_frames(env, action, skip=4):
    """The loop every pooling variant below shares: (frames seen, summed reward, the last step's
    terminated, truncated, info), stopping at an episode's end."""
    total, frames = 0.0, []
    for _ in range(skip):
        frame, reward, terminated, truncated, info = env.step(action)
        frames.append(frame)
        total += reward
        if terminated or truncated:
            break
    return frames, total, terminated, truncated, info


def skip_frames(env, action, skip=4):
    frames, *rest = step_frames(env, action, skip)
    pooled = np.maximum(frames[-2], frames[-1]) if len(frames) > 1 else frames[-1]
    return pooled, *rest


def skip_frames_no_early_stop(env, action, skip=4):
    total, frames = 0.0, []
    for _ in range(skip):
        frame, reward, terminated, truncated, info = env.step(action)
        frames.append(frame)
        total += reward
    pooled = np.maximum(frames[-2], frames[-1]) if len(frames) > 1 else frames[-1]
    return pooled, total, terminated, truncated, info


def skip_frames_last_frame_only(env, action, skip=4):
    frame, total, terminated, truncated, info = skip_frames(env, action, skip)
    return env.script[env.calls - 1][0], total, terminated, truncated, info


def skip_frames_max_of_all(env, action, skip=4):
    frames, *rest = step_frames(env, action, skip)
    return np.max(frames, axis=0), *rest


def skip_frames_clips_reward(env, action, skip=4):
    frame, total, terminated, truncated, info = skip_frames(env, action, skip)
    return frame, min(total, 1.0), terminated, truncated, info


def skip_frames_random_actions(env, action, skip=4):
    total, frames = 0.0, []
    for k in range(skip):
        frame, reward, terminated, truncated, info = env.step(action if k == 0 else 0)
        frames.append(frame)
        total += reward
        if terminated or truncated:
            break
    pooled = np.maximum(frames[-2], frames[-1]) if len(frames) > 1 else frames[-1]
    return pooled, total, terminated, truncated, info


def test_1_2_right_answer_passes(capsys):
    assert unit1.check_skip_frames(skip_frames)
    assert capsys.readouterr().out.startswith("PASSED [1.2] skip_frames: all 7 cases")


def test_1_2_stub_is_not_attempted(capsys):
    assert not unit1.check_skip_frames(stub)
    assert capsys.readouterr().out.startswith("NOT ATTEMPTED [1.2]")


@pytest.mark.parametrize(
    "wrong, message",
    [
        (skip_frames_no_early_stop, "stop as soon as terminated or truncated is True"),
        (skip_frames_last_frame_only, "np.maximum of the last two frames"),
        (skip_frames_max_of_all, "np.maximum of the last two frames"),
        (skip_frames_clips_reward, "add up every frame's reward"),
        (skip_frames_random_actions, "repeat the one action you were given"),
        (lambda env, action, skip=4: skip_frames(env, action, skip)[:4], "return the five values"),
    ],
    ids=[
        "no-early-stop",
        "last-frame",
        "max-of-all",
        "clipped-reward",
        "other-actions",
        "four-values",
    ],
)
def test_1_2_wrong_answers_are_caught(wrong, message, capsys):
    assert not unit1.check_skip_frames(wrong)
    out = capsys.readouterr().out
    assert out.startswith("FAILED [1.2]")
    assert message in out


def skip_frames_always_pools_two(env, action, skip=4):
    frames, *rest = step_frames(env, action, skip)
    return np.maximum(frames[-2], frames[-1]), *rest


def test_1_2_one_frame_error_names_its_cause(capsys):
    """skip=1 leaves one frame: frames[-2] raises IndexError, and the verdict says why."""
    assert not unit1.check_skip_frames(skip_frames_always_pools_two)
    out = capsys.readouterr().out
    assert out.startswith("FAILED [1.2] skip_frames_always_pools_two: IndexError")
    assert "only one frame seen (skip=1" in out and "return that one frame as it is" in out


def test_1_2_scripted_frames_really_blink():
    """The check is only meaningful if pooling two frames differs from either frame."""
    frames = unit1.blinking_frames(4, seed=13)
    pooled = np.maximum(frames[2], frames[3])
    assert not np.array_equal(pooled, frames[3]) and not np.array_equal(pooled, frames[2])


# ----------------------------------------------------------------------------------------------
# 1.3 RunningNormalizer


class RunningNormalizer:
    def __init__(self, alpha=0.9999, eps=1e-8):
        self.alpha, self.eps = alpha, eps
        self.mean = self.std = 0.0
        self.steps = 0

    def __call__(self, obs):
        self.steps += 1
        self.mean = self.alpha * self.mean + (1 - self.alpha) * obs.mean()
        self.std = self.alpha * self.std + (1 - self.alpha) * obs.std()
        correction = 1 - self.alpha**self.steps
        return (obs - self.mean / correction) / (self.std / correction + self.eps)


class NoBiasCorrection(RunningNormalizer):
    def __call__(self, obs):
        self.steps += 1
        self.mean = self.alpha * self.mean + (1 - self.alpha) * obs.mean()
        self.std = self.alpha * self.std + (1 - self.alpha) * obs.std()
        return (obs - self.mean) / (self.std + self.eps)


class NoEps(RunningNormalizer):
    def __call__(self, obs):
        self.steps += 1
        self.mean = self.alpha * self.mean + (1 - self.alpha) * obs.mean()
        self.std = self.alpha * self.std + (1 - self.alpha) * obs.std()
        correction = 1 - self.alpha**self.steps
        with np.errstate(divide="ignore", invalid="ignore"):
            return (obs - self.mean / correction) / (self.std / correction)


class NormalisesBeforeUpdating(RunningNormalizer):
    def __call__(self, obs):
        if self.steps == 0:
            return super().__call__(obs)
        correction = 1 - self.alpha**self.steps
        out = (obs - self.mean / correction) / (self.std / correction + self.eps)
        super().__call__(obs)
        return out


class SharedStatistics(RunningNormalizer):
    """Keeps its statistics on the class: every 'process' shares them (a real bug)."""

    shared = {"mean": 0.0, "std": 0.0, "steps": 0}

    def __init__(self, alpha=0.9999, eps=1e-8):
        super().__init__(alpha, eps)
        type(self).shared.update(mean=0.0, std=0.0, steps=0)

    def __call__(self, obs):
        s = type(self).shared
        s["steps"] += 1
        s["mean"] = self.alpha * s["mean"] + (1 - self.alpha) * obs.mean()
        s["std"] = self.alpha * s["std"] + (1 - self.alpha) * obs.std()
        correction = 1 - self.alpha ** s["steps"]
        return (obs - s["mean"] / correction) / (s["std"] / correction + self.eps)


class ClassLevelStatistics:
    """The statistics as class attributes, shared by every instance, never reset by __init__."""

    mean = std = 0.0
    t = 0

    def __init__(self, alpha=0.9999, eps=1e-8):
        self.alpha, self.eps = alpha, eps

    def __call__(self, obs):
        cls = type(self)
        cls.t += 1
        cls.mean = self.alpha * cls.mean + (1 - self.alpha) * obs.mean()
        cls.std = self.alpha * cls.std + (1 - self.alpha) * obs.std()
        correction = 1 - self.alpha**cls.t
        return (obs - cls.mean / correction) / (cls.std / correction + self.eps)


class StubNormalizer:
    def __init__(self, alpha=0.9999, eps=1e-8):
        raise NotImplementedError


def test_1_3_right_answer_passes(capsys):
    assert unit1.check_running_normalizer(RunningNormalizer)
    assert capsys.readouterr().out.startswith("PASSED [1.3] RunningNormalizer: all 5 cases")


def test_1_3_stub_is_not_attempted(capsys):
    assert not unit1.check_running_normalizer(StubNormalizer)
    assert capsys.readouterr().out.startswith("NOT ATTEMPTED [1.3] StubNormalizer")


@pytest.mark.parametrize(
    "wrong, message",
    [
        (NoBiasCorrection, "likely cause: the running averages start at 0, so divide them by"),
        (NoEps, "likely cause: a frame whose pixels are all equal has std 0: divide by (std"),
        (NormalisesBeforeUpdating, "update the averages with this frame first"),
        (SharedStatistics, unit1.SHARED_STATE),
    ],
)
def test_1_3_wrong_answers_are_caught(wrong, message, capsys):
    assert not unit1.check_running_normalizer(wrong)
    out = capsys.readouterr().out
    assert out.startswith("FAILED [1.3]")
    assert message in out


def normaliser_with(name, t_first=True, update_first=True, spread="std"):
    """RunningNormalizer as a learner writes it: t counted before or after the bias correction
    is computed, the averages updated before or after normalising, std or var averaged."""

    def __call__(self, obs):
        def update():
            self.mean = self.alpha * self.mean + (1 - self.alpha) * obs.mean()
            self.std = self.alpha * self.std + (1 - self.alpha) * getattr(obs, spread)()

        self.steps += t_first
        if update_first:
            update()
        correction = 1 - self.alpha**self.steps  # Python floats: 0.0 / 0.0 raises
        with np.errstate(divide="ignore", invalid="ignore"):
            out = (obs - self.mean / correction) / (self.std / correction + self.eps)
        self.steps += not t_first
        if not update_first:
            update()
        return out

    return type(name, (RunningNormalizer,), {"__call__": __call__})


UPDATES_AFTER = normaliser_with("UpdatesAfterNormalising", update_first=False)
ORDER = "update the averages with this frame first, then normalise it"


@pytest.mark.parametrize(
    "wrong, cause",
    [
        (UPDATES_AFTER, "likely cause: you normalise each frame with the averages of the frames before it (so the first, against averages still 0, is divided by eps alone); " + ORDER),
        (NormalisesBeforeUpdating, f"likely cause: you normalise each frame with the averages (and t) of the frames before it; {ORDER}"),
        (
            normaliser_with("UpdatesAllAfterNormalising", t_first=False, update_first=False),
            "ZeroDivisionError: float division by zero; likely cause: your bias correction 1 - alpha**t is 0 at the first frame (t is still 0)",
        ),
        (normaliser_with("CountsTFromZero", t_first=False), "likely cause: your bias correction counts t from 0"),
        (normaliser_with("AveragesTheVariance", spread="var"), "likely cause: you average each frame's variance (obs.var())"),
    ],
    ids=lambda value: getattr(value, "__name__", ""),
)  # fmt: skip
def test_1_3_each_known_mistake_is_named(wrong, cause, capsys):
    assert not unit1.check_running_normalizer(wrong)
    out = capsys.readouterr().out
    assert out.startswith(f"FAILED [1.3] {wrong.__name__}")
    assert cause in out


def test_1_3_normalising_before_updating_is_not_taken_for_a_missing_bias_correction(capsys):
    """Its first output is the frame over eps alone, as large as a missing correction's."""
    assert not unit1.check_running_normalizer(UPDATES_AFTER)
    out = capsys.readouterr().out
    assert "on the first frame only" in out and "the running averages start at 0" not in out


def test_1_3_reference_is_the_formula():
    """Two hand-computed steps with alpha = 0.5 on 2-pixel frames."""
    frames = [np.array([0.0, 1.0]), np.array([1.0, 3.0])]
    # t=1: m=0.25, s=0.25, correction 0.5 -> mean 0.5, std 0.5
    # t=2: m=0.5*0.25+0.5*2=1.125, s=0.5*0.25+0.5*1=0.625, correction 0.75 -> 1.5, 0.8333
    expected = np.array([[-1.0, 1.0], [(1 - 1.5) / (0.625 / 0.75), (3 - 1.5) / (0.625 / 0.75)]])
    np.testing.assert_allclose(unit1.reference_running_normalise(frames, 0.5, 0.0), expected)


def test_1_3_statistics_on_the_class_are_named_as_the_cause(capsys):
    """A learner who writes `mean = 0.0` in the class body and updates type(self).mean: every
    instance shares one set of statistics. The verdict says so, whatever the cases would say."""
    for _ in range(2):  # the first run in a fresh kernel too, when the class state is still 0
        assert not unit1.check_running_normalizer(ClassLevelStatistics)
        out = capsys.readouterr().out
        assert out.startswith("FAILED [1.3] ClassLevelStatistics")
        assert "your instances share their statistics: keep mean, std and t on self" in out


def test_1_3_a_right_answer_is_not_taken_for_shared_state():
    assert not unit1._instances_share_state(RunningNormalizer)
    assert not unit1._instances_share_state(NormalisesBeforeUpdating)
    assert not unit1._instances_share_state(StubNormalizer)


# ----------------------------------------------------------------------------------------------
# Hints


@pytest.mark.parametrize("exercise_id", ["1.1", "1.2", "1.3"])
def test_each_exercise_has_three_hints_from_the_idea_to_a_sketch(exercise_id):
    hints = unit1.HINTS[exercise_id]
    assert len(hints) == 3 and all(isinstance(h, str) and h for h in hints)
    assert "sketch" in hints[2].lower()


def test_1_1_a_grey_cut_to_uint8_without_rounding_is_named(capsys):
    def preprocess_frame(frame, rows, size=42):
        grey = (frame[rows[0] : rows[1]] @ np.array([0.299, 0.587, 0.114])).astype(np.uint8)
        small = cv2.resize(grey, (size, size), interpolation=cv2.INTER_AREA)
        return (small.astype(np.float32) / 255.0)[None]

    assert not unit1.check_preprocess_frame(preprocess_frame)
    out = capsys.readouterr().out
    assert "likely cause: you turn the weighted sum into uint8 with .astype alone" in out
    assert "two at once" not in out
