"""Recording episodes, writing videos that read back right, showing them embedded."""

import base64

import imageio.v2 as imageio
import numpy as np
import pytest

from a3c_course.a3c.envs import make_env
from a3c_course.lessons import video
from a3c_course.lessons.video import (
    agent_view,
    agent_view_frames,
    record_episode,
    show_video,
    side_by_side,
    write_video,
)


@pytest.fixture(scope="module")
def breakout_episode():
    return record_episode(make_env("breakout", render_mode="rgb_array"), seed=0, max_steps=60)


def test_record_episode_keeps_frames_observations_and_rewards(breakout_episode):
    ep = breakout_episode
    assert ep.length == len(ep.actions) == len(ep.rewards) == 60
    assert len(ep.frames) == len(ep.observations) == 61
    assert ep.frames[0].shape == (210, 160, 3) and ep.frames[0].dtype == np.uint8
    assert ep.observations[0].shape == (1, 42, 42)
    assert not ep.ended  # stopped by max_steps, not by the game


def test_a_seeded_recording_repeats():
    def record():
        return record_episode(make_env("pong", render_mode="rgb_array"), seed=3, max_steps=40)

    a, b = record(), record()
    assert a.actions == b.actions
    np.testing.assert_array_equal(np.stack(a.frames), np.stack(b.frames))


def test_policy_is_used_and_the_raw_score_is_reported():
    """A whole Breakout game with the clipped rewards the agent trains on and the raw score."""
    seen = []

    def policy(observation):
        seen.append(observation.shape)
        return 3  # LEFT: FireOnLifeStart serves; the paddle stays left and misses most balls

    ep = record_episode(make_env("breakout", render_mode="rgb_array"), policy, seed=1)
    assert ep.terminated and not ep.truncated
    assert set(ep.actions) == {3} and seen == [(1, 42, 42)] * ep.length
    assert all(-1.0 <= r <= 1.0 for r in ep.rewards)
    assert ep.score >= sum(ep.rewards)


def follow_the_ball(env, offset=12):
    """A scripted Breakout player that reads the ball's and the paddle's x from the console's RAM."""

    def policy(_observation):
        ram = env.unwrapped.ale.getRAM()
        target = int(ram[99]) - offset
        paddle = int(ram[72])
        return 2 if paddle < target - 3 else 3 if paddle > target + 3 else 0  # RIGHT, LEFT, NOOP

    return policy


def test_score_before_the_end_is_the_raw_return_so_far():
    episodes = {}
    for clip in (True, False):
        env = make_env("breakout", render_mode="rgb_array", clip_rewards=clip, sticky_actions=0.0)
        episodes[clip] = record_episode(env, follow_the_ball(env), seed=0, max_steps=700)
    clipped, raw = episodes[True], episodes[False]
    assert not clipped.ended and clipped.actions == raw.actions
    assert raw.score == sum(raw.rewards) == clipped.score
    assert clipped.score > sum(clipped.rewards) > 0  # upper bricks are worth 4 and 7 points


def test_record_episode_needs_rgb_rendering():
    with pytest.raises(ValueError, match="render_mode='rgb_array'"):
        record_episode(make_env("pong"))
    with pytest.raises(ValueError, match="max_steps"):
        record_episode(make_env("pong", render_mode="rgb_array"), max_steps=0)
    with pytest.raises(TypeError, match="policy must be a callable"):
        record_episode(make_env("pong", render_mode="rgb_array"), policy=3)


def test_mp4_round_trip(tmp_path, breakout_episode):
    path = write_video(breakout_episode.frames, tmp_path / "game.mp4")
    assert path == tmp_path / "game.mp4"
    frames = imageio.mimread(path, memtest=False)
    assert len(frames) == 61
    assert frames[0].shape == (210, 160, 3)
    # lossy, but the picture is the same picture
    assert np.abs(frames[30].astype(int) - breakout_episode.frames[30]).mean() < 8


def test_gif_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    frames = [rng.integers(0, 256, (30, 40, 3), dtype=np.uint8) for _ in range(7)]
    path = write_video(frames, tmp_path / "noise.gif", fps=10)
    back = imageio.mimread(path)
    assert len(back) == 7 and back[0].shape[:2] == (30, 40)


def test_odd_sizes_grey_and_float_frames_are_accepted(tmp_path):
    grey = [np.full((21, 15), v, np.uint8) for v in (0, 128, 255)]
    path = write_video(grey, tmp_path / "grey.mp4", fps=5)
    back = imageio.mimread(path, memtest=False)
    assert len(back) == 3 and back[0].shape == (22, 16, 3)  # padded to even sizes for H.264
    floats = [np.full((20, 20, 3), v, np.float32) for v in (0.0, 0.5, 1.0)]
    assert len(imageio.mimread(write_video(floats, tmp_path / "f.mp4"), memtest=False)) == 3


def test_side_by_side_shows_the_agent_view(tmp_path, breakout_episode):
    frame, obs = breakout_episode.frames[10], breakout_episode.observations[10]
    combined = side_by_side(frame, obs)
    assert combined.shape == (210, 160 + 4 + 210, 3)  # 42 x 5 = 210 rows fit beside the screen
    np.testing.assert_array_equal(combined[:, :160], frame)
    view = combined[:, 164:, 0]
    np.testing.assert_array_equal(view[::5, ::5], np.round(obs[0] * 255).astype(np.uint8))
    frames = agent_view_frames(breakout_episode)
    back = imageio.mimread(write_video(frames, tmp_path / "side.mp4"), memtest=False)
    assert len(back) == 61 and back[0].shape == combined.shape


def test_agent_view_accepts_the_usual_layouts():
    obs = np.linspace(0, 1, 42 * 42, dtype=np.float32).reshape(1, 42, 42)
    for layout in (obs, obs[0], np.moveaxis(obs, 0, -1)):
        image = agent_view(layout, height=84)
        assert image.shape == (84, 84, 3) and image.dtype == np.uint8
    with pytest.raises(ValueError, match="observation must be an image"):
        agent_view(np.zeros(5), height=84)


def test_clear_errors_for_bad_input(tmp_path):
    frame = np.zeros((10, 10, 3), np.uint8)
    with pytest.raises(ValueError, match="frames is empty"):
        write_video([], tmp_path / "x.mp4")
    with pytest.raises(ValueError, match=r"Unknown video extension '\.avi'.*\.mp4, \.gif"):
        write_video([frame], tmp_path / "x.avi")
    with pytest.raises(ValueError, match="same size"):
        write_video([frame, np.zeros((12, 10, 3), np.uint8)], tmp_path / "x.mp4")
    with pytest.raises(ValueError, match=r"frames\[0\] must be uint8"):
        write_video([frame.astype(np.int64) + 300], tmp_path / "x.mp4")
    with pytest.raises(ValueError, match="fps"):
        write_video([frame], tmp_path / "x.mp4", fps=0)
    with pytest.raises(FileNotFoundError, match="No video"):
        show_video(tmp_path / "missing.mp4")


def test_show_video_embeds_the_bytes(tmp_path, breakout_episode):
    path = write_video(breakout_episode.frames[:10], tmp_path / "clip.mp4")
    html = show_video(path, width=240)._repr_html_()
    assert base64.b64encode(path.read_bytes()).decode()[:100] in html
    assert 'width="240"' in html and "video/mp4" in html
    gif = write_video(breakout_episode.frames[:10], tmp_path / "clip.gif")
    html = show_video(gif).data
    assert html.startswith('<img src="data:image/gif;base64,')


def test_gif_fallback_without_ffmpeg(tmp_path, monkeypatch, breakout_episode):
    monkeypatch.setattr(video, "_ffmpeg_available", lambda: False)
    with pytest.warns(UserWarning, match="writing a GIF instead"):
        path = write_video(breakout_episode.frames[:5], tmp_path / "clip.mp4")
    assert path == tmp_path / "clip.gif" and path.is_file()


def test_a_caption_fits_a_160_pixel_screen():
    # A caption wider than the frame would lose its end (the step) off the right edge.
    from a3c_course.lessons.video import caption

    frame = np.zeros((210, 160, 3), np.uint8)
    banded = caption(frame, "episode 10/10  score 123  step 12345")
    lit = np.flatnonzero(banded[:14].max(axis=(0, 2)) > 0)
    assert lit.max() < 158  # the text's last column stays inside the frame
