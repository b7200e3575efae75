"""Record an agent playing and show the video in a notebook.

    episode = record_episode(make_env("breakout", render_mode="rgb_array"), policy, seed=0)
    path = write_video(episode.frames, "breakout.mp4")            # or agent_view_frames(episode)
    show_video(path)                                               # embedded: plays in Colab too

    write_video(captioned_frames(episodes, max_frames=600), "pong.mp4")   # with a score caption

A policy is any callable `observation -> action`; the default plays uniformly at random. A policy
with memory (an LSTM agent) keeps its state in a closure or an object, made fresh for each episode:
play.py makes one of a trained network (play.ModelPolicy) and plays whole episodes with it.

Frames come from `env.render()` (the RGB screen, 210x160x3 for Atari), one per agent step, so a
video at 30 frames per second of an agent that acts every 4 emulator frames runs at twice the
game's real speed. Keep embedded videos short (a few hundred frames): a notebook stays small.
"""

from __future__ import annotations

import base64
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
import gymnasium as gym
import numpy as np

VIDEO_FORMATS = (".mp4", ".gif")

Policy = Callable[[Any], Any]


@dataclass
class Episode:
    """What one recorded episode holds, step by step.

    frames[t] is the screen (env.render()) when observations[t] was seen; there is one more frame
    and observation than actions and rewards (the last ones follow the last action).
    rewards are the environment's rewards as the agent gets them (clipped, for the course's envs);
    score is the raw game score (info["episode"]["r"] when the episode ended, else the raw return
    so far), so a clipped training reward never hides what the game says; running_scores[t] is
    the raw score after action t (for a caption that counts up).
    """

    frames: list[np.ndarray] = field(default_factory=list)
    observations: list[np.ndarray] = field(default_factory=list)
    actions: list[Any] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    running_scores: list[float] = field(default_factory=list)
    score: float = 0.0
    terminated: bool = False
    truncated: bool = False

    @property
    def length(self) -> int:
        """The number of agent steps taken."""
        return len(self.actions)

    @property
    def ended(self) -> bool:
        """Whether the episode reached its end (rather than the recording's step budget)."""
        return self.terminated or self.truncated


def _episode_statistics(env: gym.Env) -> gym.wrappers.RecordEpisodeStatistics | None:
    while isinstance(env, gym.Wrapper):
        if isinstance(env, gym.wrappers.RecordEpisodeStatistics):
            return env
        env = env.env
    return None


def record_episode(
    env: gym.Env,
    policy: Policy | None = None,
    *,
    seed: int | None = None,
    max_steps: int | None = None,
) -> Episode:
    """Play one episode with `policy` (random when None) and keep its frames and observations.

    env: made with render_mode="rgb_array" (e.g. make_env("pong", render_mode="rgb_array")).
    seed: passed to env.reset (and seeds the random policy's action space), so a seeded recording
        repeats exactly.
    max_steps: stop after this many agent steps even if the episode goes on (keeps videos short);
        None plays to the episode's end.
    """
    if env.render_mode != "rgb_array":
        raise ValueError(
            f"record_episode needs an env made with render_mode='rgb_array', got "
            f"render_mode={env.render_mode!r}; e.g. make_env('pong', render_mode='rgb_array')."
        )
    if max_steps is not None and (not isinstance(max_steps, int) or max_steps < 1):
        raise ValueError(f"max_steps must be a positive integer or None, got {max_steps!r}")
    if policy is None:
        if seed is not None:
            env.action_space.seed(seed)

        def policy(_observation):
            return env.action_space.sample()

    elif not callable(policy):
        raise TypeError(f"policy must be a callable observation -> action, got {policy!r}")

    statistics = _episode_statistics(env)
    observation, _ = env.reset(seed=seed)
    episode = Episode(frames=[env.render()], observations=[observation])
    raw_return = 0.0
    while max_steps is None or episode.length < max_steps:
        action = policy(observation)
        observation, reward, terminated, truncated, info = env.step(action)
        episode.actions.append(action)
        episode.rewards.append(float(reward))
        episode.frames.append(env.render())
        episode.observations.append(observation)
        raw_return = float(statistics.episode_returns) if statistics else raw_return + reward
        if terminated or truncated:
            episode.terminated, episode.truncated = bool(terminated), bool(truncated)
            if "episode" in info:
                raw_return = float(np.asarray(info["episode"]["r"]).item())
            episode.running_scores.append(raw_return)
            break
        episode.running_scores.append(raw_return)
    episode.score = raw_return
    return episode


def agent_view(observation: np.ndarray, height: int) -> np.ndarray:
    """The agent's input (e.g. float (1, 42, 42) in [0, 1]) as an RGB image about `height` pixels high.

    Each input pixel becomes a block of whole pixels (nearest neighbour), so the picture shows
    exactly what the network sees, blocky as it is.
    """
    image = np.asarray(observation)
    if image.ndim == 3 and image.shape[0] in (1, 3):  # channels first, as the network takes it
        image = np.moveaxis(image, 0, -1)
    if image.ndim == 3 and image.shape[-1] == 1:
        image = image[..., 0]
    if image.ndim not in (2, 3):
        raise ValueError(
            f"observation must be an image (H, W), (1, H, W) or (H, W, 1); got shape {np.shape(observation)}"
        )
    if image.dtype != np.uint8:
        image = (np.clip(image, 0.0, 1.0) * 255).round().astype(np.uint8)
    scale = max(1, height // image.shape[0])
    image = np.repeat(np.repeat(image, scale, axis=0), scale, axis=1)
    return cv2.cvtColor(image, cv2.COLOR_GRAY2RGB) if image.ndim == 2 else image


def side_by_side(frame: np.ndarray, observation: np.ndarray, gap: int = 4) -> np.ndarray:
    """The game frame with the agent's view beside it (scaled up, centred vertically, on black)."""
    frame = _as_rgb_uint8(frame, "frame")
    view = agent_view(observation, frame.shape[0])
    height = max(frame.shape[0], view.shape[0])
    canvas = np.zeros((height, frame.shape[1] + gap + view.shape[1], 3), np.uint8)
    canvas[: frame.shape[0], : frame.shape[1]] = frame
    top = (height - view.shape[0]) // 2
    canvas[top : top + view.shape[0], frame.shape[1] + gap :] = view
    return canvas


def agent_view_frames(episode: Episode) -> list[np.ndarray]:
    """Every frame of an episode with the agent's view beside it (for write_video)."""
    return [side_by_side(f, o) for f, o in zip(episode.frames, episode.observations, strict=True)]


def _as_rgb_uint8(frame: Any, name: str = "frame") -> np.ndarray:
    array = np.asarray(frame)
    if array.ndim == 2:
        array = array[..., None].repeat(3, axis=-1)
    if array.ndim != 3 or array.shape[-1] not in (1, 3):
        raise ValueError(f"{name} must be an image (H, W) or (H, W, 3); got shape {array.shape}")
    if array.shape[-1] == 1:
        array = array.repeat(3, axis=-1)
    if array.dtype == np.uint8:
        return array
    if (
        np.issubdtype(array.dtype, np.floating)
        and array.size
        and 0.0 <= array.min() <= array.max() <= 1.0
    ):
        return (array * 255).round().astype(np.uint8)
    raise ValueError(
        f"{name} must be uint8 (0-255) or float in [0, 1]; got dtype {array.dtype}"
        + (f" with values in [{array.min()}, {array.max()}]" if array.size else "")
    )


def _even(frame: np.ndarray) -> np.ndarray:
    """Pad to even height and width with black (H.264 in yuv420p needs even sizes)."""
    pad_h, pad_w = frame.shape[0] % 2, frame.shape[1] % 2
    return np.pad(frame, ((0, pad_h), (0, pad_w), (0, 0))) if pad_h or pad_w else frame


# imageio-ffmpeg starts ffmpeg with preexec_fn=os.setpgrp (so Ctrl-C in a terminal spares it). A
# preexec_fn forks the whole process and runs Python before exec, which can deadlock a process with
# other threads (Python's subprocess docs; imageio-ffmpeg issue #58). A Jupyter kernel with torch
# loaded has many: one such hang froze a CI run's notebook for 15 minutes. This opts out.
os.environ.setdefault("IMAGEIO_FFMPEG_NO_PREVENT_SIGINT", "1")


def _ffmpeg_available() -> bool:
    try:
        import imageio_ffmpeg

        imageio_ffmpeg.get_ffmpeg_exe()
    except (ImportError, RuntimeError):
        return False
    return True


def write_video(frames: Sequence[np.ndarray], path: str | Path, fps: int = 30) -> Path:
    """Write frames (RGB uint8 (H, W, 3), grey (H, W), or float in [0, 1]) to an MP4 or GIF file.

    MP4 goes through imageio-ffmpeg (H.264, small and widely playable). When ffmpeg is missing,
    an .mp4 request writes a GIF beside it instead, with a warning. Returns the path written.
    Odd sizes are padded with black to even ones (H.264 needs them). A GIF stores identical
    consecutive frames once, with their durations added up, so it can read back fewer frames.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in VIDEO_FORMATS:
        raise ValueError(
            f"Unknown video extension {path.suffix!r} in {str(path)!r}; use one of {', '.join(VIDEO_FORMATS)}."
        )
    if isinstance(frames, np.ndarray) and frames.ndim in (3, 4):
        frames = list(frames)
    if len(frames) == 0:
        raise ValueError("frames is empty: there is nothing to write (record an episode first).")
    if not (isinstance(fps, int | float) and fps > 0):
        raise ValueError(f"fps must be a positive number, got {fps!r}")
    images = [_even(_as_rgb_uint8(f, f"frames[{i}]")) for i, f in enumerate(frames)]
    shapes = {image.shape for image in images}
    if len(shapes) > 1:
        raise ValueError(f"all frames must have the same size; got sizes {sorted(shapes)}")

    import imageio.v2 as imageio

    path.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".mp4" and not _ffmpeg_available():
        warnings.warn(
            "imageio-ffmpeg is not available: writing a GIF instead of an MP4 "
            "(pip install imageio-ffmpeg for MP4).",
            stacklevel=2,
        )
        path, suffix = path.with_suffix(".gif"), ".gif"
    if suffix == ".mp4":
        # macro_block_size=1: keep the true frame size (210x160 is not a multiple of 16).
        with imageio.get_writer(
            path, fps=fps, codec="libx264", macro_block_size=1, ffmpeg_log_level="error"
        ) as writer:
            for image in images:
                writer.append_data(image)
    else:
        imageio.mimsave(path, images, duration=1000 / fps, loop=0)
    return path


def show_video(path: str | Path, width: int = 320):
    """A display object that embeds the video in the notebook (plays in JupyterLab and Colab).

    Embedding puts the file's bytes in the notebook, so the video plays wherever the notebook is
    opened; Colab cannot play a video from a file path.
    """
    from IPython.display import HTML, Video

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"No video at {str(path)!r}; write one with write_video first.")
    suffix = path.suffix.lower()
    if suffix == ".mp4":
        return Video(
            str(path), embed=True, width=width, mimetype="video/mp4",
            html_attributes="controls loop muted",
        )  # fmt: skip
    if suffix == ".gif":
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        return HTML(f'<img src="data:image/gif;base64,{data}" width="{width}"/>')
    raise ValueError(
        f"Unknown video extension {path.suffix!r} in {str(path)!r}; use one of {', '.join(VIDEO_FORMATS)}."
    )


def caption(frame: np.ndarray, text: str, height: int = 14) -> np.ndarray:
    """The frame with a black band above it holding `text` in white (a score overlay that never
    hides the game)."""
    frame = _as_rgb_uint8(frame)
    band = np.zeros((height, frame.shape[1], 3), np.uint8)
    scale = (height - 4) / 22  # cv2's simplex font is about 22 pixels high at scale 1
    width = cv2.getTextSize(text, cv2.FONT_HERSHEY_SIMPLEX, scale, 1)[0][0]
    scale *= min(1.0, (frame.shape[1] - 4) / max(width, 1))  # a 160-pixel Atari screen is narrow
    cv2.putText(
        band, text, (2, height - 3), cv2.FONT_HERSHEY_SIMPLEX, scale, (255, 255, 255), 1,
        cv2.LINE_AA,
    )  # fmt: skip
    return np.concatenate([band, frame], axis=0)


def captioned_frames(
    episodes: Sequence[Episode], *, agent_view: bool = False, max_frames: int | None = None
) -> list[np.ndarray]:
    """The frames of one or more episodes, one after the other, each under a caption with the
    episode's number (when there are several), its raw score so far and the step ("episode 2/3
    score 4  step 120"), shrunk to fit the frame's width.

    agent_view: put the agent's 42x42 input beside the game. max_frames: keep at most this many
        frames in all (spread over the episodes in order), so a video stays short.
    """
    frames = []
    for number, episode in enumerate(episodes, 1):
        for t, frame in enumerate(episode.frames):
            if max_frames is not None and len(frames) >= max_frames:
                return frames
            score = episode.running_scores[t - 1] if t > 0 else 0.0
            picture = side_by_side(frame, episode.observations[t]) if agent_view else frame
            episode_of = f"episode {number}/{len(episodes)}  " if len(episodes) > 1 else ""
            frames.append(caption(picture, f"{episode_of}score {score:g}  step {t}"))
    return frames
