"""Unit 1's figures and harnesses (a3c_course.lessons.figures.preprocessing) draw and compute what they say."""

import cv2
import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

from a3c_course.a3c.envs import PLAY_AREA_ROWS, make_env  # noqa: E402
from a3c_course.lessons.figures import preprocessing as figures  # noqa: E402
from a3c_course.lessons.video import record_episode  # noqa: E402

ROWS = PLAY_AREA_ROWS["ALE/Breakout-v5"]


@pytest.fixture(scope="module")
def scripted():
    """20 steps of the scripted player: the ball is in flight from the first frame on."""
    env = make_env("breakout", render_mode="rgb_array", sticky_actions=0.0)
    return record_episode(env, figures.follow_the_ball(env), seed=2, max_steps=20)


def synthetic_grey(ball_at=(120, 80)):
    """A black play area with grey side walls and a 2x4 ball (grey 110) at (row, column)."""
    grey = np.zeros((210, 160), np.uint8)
    grey[:, :8] = grey[:, 152:] = 142
    row, column = ball_at
    grey[row : row + 4, column : column + 2] = 110
    return grey


def test_watch_trained_agent_prints_its_record_and_returns_a_video(capsys):
    video = figures.watch_trained_agent("breakout", max_steps=5)
    assert capsys.readouterr().out.startswith("breakout: mean score ")
    assert "<video" in video._repr_html_() or "<img" in video._repr_html_()


def test_goal_curves_draw_one_panel_per_game_with_the_band_and_median():
    figure = figures.plot_goal_curves(["pong"])
    (ax,) = figure.axes
    assert ax.get_xlabel() == "agent steps" and "5 runs" in ax.get_title()
    assert len(ax.collections) == 1 and len(ax.lines) == 1  # the min-max band, the median line
    assert ax.lines[0].get_ydata().min() == pytest.approx(-21, abs=1)  # it starts losing 21-0


def test_plot_images_marks_the_kept_rows_on_the_raw_screen(scripted):
    raw, small = scripted.frames[0], np.zeros((42, 42), np.uint8)
    first, second = figures.plot_images([raw, small], ["raw", "small"], rows=ROWS).axes
    assert first.images[0].get_array().shape == (210, 160, 3)
    assert [line.get_ydata()[0] for line in first.lines] == [ROWS[0] - 0.5, ROWS[1] - 0.5]
    assert not second.lines  # the kept rows are marked on the raw screen only


def test_plot_images_scales_bytes_and_floats_alike():
    figure = figures.plot_images(
        [np.full((4, 4), 255, np.uint8), np.ones((1, 4, 4), np.float32)], ["bytes", "floats"]
    )
    assert [ax.get_title() for ax in figure.axes] == ["bytes", "floats"]
    assert [ax.images[0].get_clim() for ax in figure.axes] == [(0, 255), (0, 1.0)]


def test_ball_trace_tells_area_averaging_from_nearest_neighbour():
    grey = synthetic_grey()
    assert figures.ball_mask(grey).sum() == 8  # the walls are not the ball
    area = figures.ball_trace(grey, ROWS, cv2.INTER_AREA)
    assert 0 < area < 110 / 255  # always a trace, dimmer than the ball
    nearest = [
        figures.ball_trace(synthetic_grey((120, column)), ROWS, cv2.INTER_NEAREST)
        for column in range(60, 64)
    ]
    assert 0.0 in nearest and 110 / 255 in nearest  # lost at some columns, whole at others
    assert figures.ball_trace(np.zeros((210, 160), np.uint8), ROWS, cv2.INTER_AREA) is None


def test_ball_losses_count_the_frames_where_each_method_loses_the_ball():
    greys = [synthetic_grey((120, column)) for column in range(60, 64)]
    greys.append(np.zeros((210, 160), np.uint8))  # no ball in flight: not counted
    area, nearest = figures.ball_losses(greys, ROWS).splitlines()
    assert area.startswith("INTER_AREA") and "lost in   0% of 4 screens" in area
    assert nearest.startswith("INTER_NEAREST") and "of 4 screens" in nearest
    assert "lost in   0%" not in nearest and f"to {110 / 255:.2f}" in nearest


def test_plot_resizing_shows_both_methods_around_the_ball(scripted):
    greys = [figures.grey_of(frame) for frame in scripted.frames[6:10]]
    figure = figures.plot_resizing(greys, ROWS, first_step=6)
    assert len(figure.axes) == 8
    assert figure.axes[0].get_title() == "step 6" and figure.axes[0].get_ylabel() == "INTER_AREA"
    assert figure.axes[4].get_ylabel() == "INTER_NEAREST"
    assert all(ax.images[0].get_array().shape == (13, 13) for ax in figure.axes)
    assert all(len(ax.patches) == 1 for ax in figure.axes)  # the circle on the ball


def test_plot_resizing_centres_each_circle_on_the_ball_that_row_shows():
    greys = [synthetic_grey((120, column)) for column in range(60, 64)]
    figure = figures.plot_resizing(greys, ROWS)
    lost = 0
    for ax in figure.axes:
        image, (x, y) = ax.images[0].get_array(), ax.patches[0].center
        row, column = int(np.rint(y)), int(np.rint(x))
        if image[row, column] == 0:  # no ball under the circle: lost, its surroundings black too
            assert (
                ax in figure.axes[4:]
                and image[row - 2 : row + 3, column - 2 : column + 3].max() == 0
            )
            lost += 1
    assert 0 < lost < 4  # nearest neighbour loses the ball at some columns only


def test_plot_stages_titles_each_stage_with_its_shape_and_marks_the_raw_screen(scripted):
    stages = {"raw": scripted.frames[0], "scale": np.zeros((1, 42, 42), np.float32)}
    raw, scaled = figures.plot_stages(stages, ROWS).axes
    assert [raw.get_title(), scaled.get_title()] == ["raw (210, 160, 3)", "scale (1, 42, 42)"]
    assert len(raw.lines) == 2 and not scaled.lines


def test_record_screens_keeps_every_frame_and_repeats_with_the_seed():
    import gymnasium as gym

    def screens():
        env = gym.make("ALE/SpaceInvaders-v5", frameskip=1, repeat_action_probability=0.0)
        return figures.record_screens(env, steps=30, seed=0)

    first, again = screens(), screens()
    assert len(first) == 31 and first[0].shape == (210, 160, 3)  # the reset, then one per step
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))


def test_plot_flicker_pools_each_frame_with_the_one_before():
    screens = [np.full((210, 160, 3), t, np.uint8) for t in range(5)]
    screens[3][150, 50] = 255  # a sprite drawn on frame 3 only
    figure = figures.plot_flicker(screens, [3, 4])
    assert [ax.get_title() for ax in figure.axes] == [
        "frame 3",
        "frame 4",
        "max(2, 3)",
        "max(3, 4)",
    ]
    pooled = figure.axes[3].images[0].get_array()  # max(3, 4): the sprite survives
    assert pooled.shape == (56, 24, 3)  # zoomed on rows 140-195, columns 30-53
    assert pooled[10, 20].tolist() == [255, 255, 255]


def test_the_scripted_player_plays_a_whole_game_and_its_route_replays_exactly():
    env = make_env("breakout", sticky_actions=0.0, noop_max=0)
    game = figures.play_game(env, figures.follow_the_ball(env), seed=0)
    score = game["info"]["episode"]["r"]
    assert score > 20 and game["lives"][0] == 5 and game["lives"][-1] == 0
    assert game["terminated"] and not game["truncated"]
    assert len(game["lives"]) == len(game["actions"]) + 1 == len(game["rewards"]) + 1
    assert figures.blind_replay(game["actions"], seed=3, sticky_actions=0.0, noop_max=0) == score
    figure = figures.plot_lives(game["lives"], game["rewards"])
    lives, clipped = figure.axes[0].lines
    assert clipped.get_ydata()[-1] == pytest.approx(sum(game["rewards"]) / 10)
    assert clipped.get_label() == "clipped rewards so far / 10"  # a sum of rewards, not a return


def test_observations_of_returns_each_players_own_observations():
    random, scripted = (figures.observations_of(name, steps=30) for name in ("random", "scripted"))
    assert len(random) == 30 and all(obs.shape == (1, 42, 42) for obs in random)
    np.testing.assert_array_equal(random[0], scripted[0])  # the same seeded start
    assert any(not np.array_equal(a, b) for a, b in zip(random, scripted, strict=True))


def test_scrub_is_a_slider_over_the_episode(scripted):
    panel = figures.scrub(scripted, start=3)
    slider = panel.children[0]
    assert (slider.value, slider.max) == (3, scripted.length)
