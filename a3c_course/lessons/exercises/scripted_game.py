"""Exercise 1.2's test bench: a scripted stand-in for the emulator, and the reference frame skip.

The learner's skip_frames(env, action, skip) is played against a ScriptedGame (a script of frames,
rewards and episode ends, with sprites that blink on alternate frames as Atari's do); the expected
outcome comes from `reference_skip_frames`, written from the definition; `compare_skip` says what
differs in the learner's words (steps taken, actions, reward, flags, the max-pooled frame).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from a3c_course.lessons.exercises.core import close


class ScriptedGame:
    """A stand-in for the raw emulator: step() plays back a script of (frame, reward, terminated,
    truncated) and counts the calls. Frames are 6x6 grey images in which a 'sprite' blinks."""

    def __init__(self, script):
        self.script, self.calls, self.actions = list(script), 0, []

    def step(self, action):
        if self.calls >= len(self.script):
            raise RuntimeError("stepped past the end of the episode (after terminated/truncated)")
        frame, reward, terminated, truncated = self.script[self.calls]
        self.calls += 1
        self.actions.append(action)
        return frame.copy(), reward, terminated, truncated, {"frame_number": self.calls}


def blinking_frames(n: int, seed: int) -> list[np.ndarray]:
    """Frames where sprites are drawn on alternate frames only, as in real Atari games."""
    rng = np.random.default_rng(seed)
    frames = []
    for t in range(n):
        frame = np.full((6, 6), 20, np.uint8)
        frame[t % 2 :: 2, (t * 2) % 6] = rng.integers(60, 255)  # there every other frame
        frame[5, t % 6] = 200  # the 'paddle' moves one pixel a frame
        frames.append(frame)
    return frames


class SkipResult(dict):
    """What a skip_frames call did, printed compactly in a verdict."""

    def __repr__(self) -> str:
        frame = np.asarray(self["frame"])
        return (
            f"env.step called {self['steps']} times, reward {self['reward']}, terminated "
            f"{self['terminated']}, truncated {self['truncated']}, frame {frame.tolist()}"
        )


def reference_skip_frames(script, skip: int) -> SkipResult:
    """Repeat the action up to `skip` times, stop at the episode's end, sum the rewards and return the
    pixel-wise max of the last two frames seen (the one frame if only one was seen)."""
    seen, total = [], 0.0
    terminated = truncated = False
    for frame, reward, terminated, truncated in script[:skip]:
        seen.append(frame)
        total += reward
        if terminated or truncated:
            break
    return SkipResult(
        frame=np.maximum(seen[-2], seen[-1]) if len(seen) > 1 else seen[-1],
        reward=total,
        terminated=terminated,
        truncated=truncated,
        steps=len(seen),
        actions="the same action every step",
    )


def play_skip(skip_frames: Callable, name: str) -> Callable:
    def run(script, skip):
        game = ScriptedGame(script)
        result = skip_frames(game, 3, skip=skip)
        if not (isinstance(result, tuple) and len(result) == 5):
            raise TypeError(
                "return the five values (frame, total_reward, terminated, truncated, info), "
                f"got {type(result).__name__}"
            )
        frame, reward, terminated, truncated, _info = result
        return SkipResult(
            frame=frame,
            reward=reward,
            terminated=terminated,
            truncated=truncated,
            steps=game.calls,
            actions=(
                "the same action every step"
                if set(game.actions) == {3}
                else f"actions {game.actions}"
            ),
        )

    run.__name__ = name
    return run


def compare_skip(got: dict, expected: dict) -> str | None:
    if got["steps"] != expected["steps"]:
        why = (
            "stop as soon as terminated or truncated is True"
            if got["steps"] > expected["steps"]
            else "repeat the action `skip` times unless the episode ends"
        )
        return f"called env.step {got['steps']} times, expected {expected['steps']}: {why}"
    if got["actions"] != expected["actions"]:
        return f"the env got {got['actions']}; repeat the one action you were given"
    if not np.isclose(float(got["reward"]), expected["reward"]):
        return f"total reward {got['reward']}, expected {expected['reward']}: add up every frame's reward"
    for flag in ("terminated", "truncated"):
        if bool(got[flag]) != expected[flag]:
            return f"{flag} is {got[flag]}, expected {expected[flag]}: return the last step's flags"
    problem = close(got["frame"], expected["frame"], atol=0, rtol=0)
    if problem is not None:
        return (
            f"the frame: {problem}. Take np.maximum of the last two frames seen (only one frame: "
            "return it as it is)"
        )
    return None
