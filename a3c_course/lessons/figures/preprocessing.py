"""Unit 1's figures and harnesses: the goal, frames, resizing, flicker, a scripted player.

Each function draws or computes what one cell of notebooks/01_env_preprocessing.ipynb shows, so
the cell reads in a few lines. Figures are returned (matplotlib Figure), not shown: the notebook
displays the cell's last value.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import cv2
import matplotlib.pyplot as plt
import numpy as np

LUMA = np.array([0.299, 0.587, 0.114])  # ITU-R BT.601, as ALE's grey screen and OpenCV
# Breakout's screen below the bricks and above the paddle, inside the side walls: there the ball
# is the only thing drawn, so its pixels are the non-black ones.
BALL_ROWS, BALL_COLUMNS = slice(93, 189), slice(8, 152)


# -- the goal --------------------------------------------------------------------------------------


def watch_trained_agent(game: str = "breakout", max_steps: int = 360, seed: int = 3, width=240):
    """Print the shipped agent's record (mean score, agent steps) and return a video
    of it playing `max_steps` steps of `game`, for the notebook to show."""
    import tempfile
    from pathlib import Path

    from a3c_course.lessons import pretrained
    from a3c_course.lessons.play import play_episodes
    from a3c_course.lessons.video import captioned_frames, show_video, write_video
    from a3c_course.measure.throughput import one_thread

    print(pretrained.summary(game))  # the agent's record: its score on fresh games, its training
    with one_thread():  # one small network on one frame at a time: more threads only wait
        played = play_episodes(game, pretrained.load(game), seed=seed, max_steps=max_steps)
    folder = Path(tempfile.mkdtemp(prefix=f"a3c-{game}-"))
    return show_video(write_video(captioned_frames(played), folder / f"{game}.mp4"), width=width)


def plot_goal_curves(games: Sequence[str] | None = None, by: str = "steps"):
    """One panel per game with shipped reference runs: the band of the course's runs' training
    scores (min to max, median line) against agent steps (or wall-clock minutes, which depend on
    the machine and on what else it ran)."""
    from a3c_course.lessons.reference import plot_reference, reference_games, reference_runs

    games = list(games or reference_games())
    figure, axes = plt.subplots(1, len(games), figsize=(6.4 * len(games), 3.4), squeeze=False)
    for ax, game in zip(axes[0], games, strict=True):
        plot_reference(game=game, by=by, ax=ax)
        runs = len(reference_runs(game))
        ax.set_title(f"{game}: the training score of the course's {runs} runs")
    plt.close(figure)
    return figure


# -- frames ----------------------------------------------------------------------------------------


def plot_images(
    images: Sequence[np.ndarray],
    titles: Sequence[str],
    width: float = 2.4,
    rows: tuple[int, int] | None = None,
):
    """Images side by side, grey ones on a fixed scale (0-255 for bytes, 0-1 for floats); `rows`:
    dashed lines on the first image at the first and last row the course keeps of a raw screen."""
    figure, axes = plt.subplots(1, len(images), figsize=(width * len(images), 3.2), squeeze=False)
    for ax, image, title in zip(axes[0], images, titles, strict=True):
        image = np.squeeze(image)
        white = 255 if image.dtype == np.uint8 else 1.0
        ax.imshow(image, cmap=None if image.ndim == 3 else "gray", vmin=0, vmax=white)
        ax.set_title(title, fontsize=9)
        ax.axis("off")
    for row in rows or ():
        axes[0, 0].axhline(row - 0.5, color="white", linestyle="--", linewidth=1)
    plt.close(figure)
    return figure


def plot_stages(stages: dict[str, np.ndarray], rows: tuple[int, int]):
    """Section 3's journey: each stage's image, titled with its name and shape, left to right; the
    first is the raw screen, with dashed lines at the rows kept."""
    titles = [f"{name} {image.shape}" for name, image in stages.items()]
    return plot_images(list(stages.values()), titles, rows=rows)


# -- resizing: what becomes of the ball --------------------------------------------------------


def grey_of(frame: np.ndarray) -> np.ndarray:
    """The luminance of an RGB screen, rounded to bytes."""
    return np.round(frame @ LUMA).astype(np.uint8)


def ball_mask(grey: np.ndarray) -> np.ndarray:
    """Breakout: True on the ball's pixels while it flies between the bricks and the paddle."""
    mask = np.zeros(grey.shape, bool)
    mask[BALL_ROWS, BALL_COLUMNS] = grey[BALL_ROWS, BALL_COLUMNS] > 0
    return mask


def ball_trace(
    grey: np.ndarray, rows: tuple[int, int], interpolation: int, size: int = 42
) -> float | None:
    """How bright the ball comes out in the small picture (0 to 1; 0: lost), or None when it is
    not in flight. The trace is the largest change the ball makes: the picture with the ball
    minus the picture with the ball painted black."""
    mask = ball_mask(grey)
    if not mask.any():
        return None
    erased = np.where(mask, 0, grey).astype(np.uint8)
    top, bottom = rows
    small = [
        cv2.resize(g[top:bottom], (size, size), interpolation=interpolation).astype(int)
        for g in (grey, erased)
    ]
    return float((small[0] - small[1]).max()) / 255


def ball_losses(
    greys: Sequence[np.ndarray],
    rows: tuple[int, int],
    methods: Sequence[str] = ("INTER_AREA", "INTER_NEAREST"),
) -> str:
    """One line per OpenCV resizing method (named as in cv2): in what share of the frames with the
    ball in flight it loses the ball, and how bright the ball comes out where it is seen."""
    lines = []
    for name in methods:
        traces = [ball_trace(grey, rows, getattr(cv2, name)) for grey in greys]
        traces = np.array([t for t in traces if t is not None])  # the frames with the ball flying
        seen = traces[traces > 0]
        lines.append(
            f"{name:13s}: ball lost in {np.mean(traces == 0):4.0%} of {len(traces)} screens "
            f"(with the ball between bricks and paddle); where seen, brightness {seen.min():.2f} to "
            f"{seen.max():.2f}"
        )
    return "\n".join(lines)


def plot_resizing(
    greys: Sequence[np.ndarray],
    rows: tuple[int, int],
    first_step: int = 0,
    size: int = 42,
    half: int = 6,
):
    """Consecutive grey frames (the first is step `first_step`) resized two ways (top: INTER_AREA,
    bottom: INTER_NEAREST), each shown as the (2 half + 1)-pixel square of the small picture around
    the ball, with a circle on the ball: centred on the ball's trace in that small picture (the
    pixels the ball changes, weighted by how much), or, where the ball is lost, on where the ball
    would be (its screen position scaled down), left empty."""
    methods = {"INTER_AREA": cv2.INTER_AREA, "INTER_NEAREST": cv2.INTER_NEAREST}
    figure, axes = plt.subplots(
        2, len(greys), figsize=(1.3 * len(greys), 3.0), squeeze=False, layout="constrained"
    )
    top, bottom = rows
    for column, grey in enumerate(greys):
        mask = ball_mask(grey)
        ball_y, ball_x = np.argwhere(mask).mean(axis=0)
        y, x = (ball_y - top + 0.5) * size / (bottom - top), (ball_x + 0.5) * size / grey.shape[1]
        y0, x0 = int(y) - half, int(x) - half  # the square's corner, in small-picture pixels
        erased = np.where(mask, 0, grey).astype(np.uint8)  # the same frame without the ball
        for row, (name, method) in enumerate(methods.items()):
            small = cv2.resize(grey[top:bottom], (size, size), interpolation=method)
            without = cv2.resize(erased[top:bottom], (size, size), interpolation=method)
            trace = np.clip(small.astype(int) - without, 0, None)  # what the ball adds
            if trace.any():  # the circle's centre, in pixel indices of the small picture
                weights = trace[trace > 0, None] / trace.sum()
                centre_y, centre_x = (np.argwhere(trace) * weights).sum(axis=0)
            else:
                centre_y, centre_x = y - 0.5, x - 0.5
            padded = np.pad(small, half)  # black beyond the edges
            ax = axes[row, column]
            ax.imshow(padded[y0 + half : y0 + 3 * half + 1, x0 + half : x0 + 3 * half + 1],
                      cmap="gray", vmin=0, vmax=255)  # fmt: skip
            circle = plt.Circle((centre_x - x0, centre_y - y0), 1.8, fill=False, color="tab:red")
            ax.add_patch(circle)
            ax.set_xticks([]), ax.set_yticks([])
            ax.set_title(f"step {first_step + column}" if row == 0 else "", fontsize=8)
            if column == 0:
                ax.set_ylabel(name, fontsize=8)
    plt.close(figure)
    return figure


# -- flicker ---------------------------------------------------------------------------------------


def record_screens(env, steps: int, seed: int = 0, fire_every: int = 20) -> list[np.ndarray]:
    """The screen after reset and after each of `steps` seeded random actions, with FIRE (action 1)
    every `fire_every` steps so that shots fly: for an env made with frameskip=1, every frame."""
    screens = [env.reset(seed=seed)[0]]
    env.action_space.seed(seed)
    for t in range(steps):
        action = 1 if t % fire_every == 0 else env.action_space.sample()
        screens.append(env.step(action)[0])
    return screens


def plot_flicker(
    screens: Sequence[np.ndarray], times: Sequence[int], strip=(slice(140, 196), slice(30, 54))
):
    """Top row: the frames at `times`, one at a time; bottom row: the pixel-wise maximum of each
    frame and the one before it. `strip` is the (rows, columns) part of the screen to show: by
    default Space Invaders' 56 x 24 pixels around the player's cannon, its laser and one shield,
    zoomed so that a 1-pixel line stands out."""
    rows, columns = (
        len(range(*s.indices(n))) for s, n in zip(strip, screens[0].shape[:2], strict=True)
    )
    panel = 1.2  # inches per panel's width
    figure, axes = plt.subplots(
        2, len(times), figsize=(panel * len(times), 2 * panel * rows / columns + 0.6),
        squeeze=False, layout="constrained",
    )  # fmt: skip
    for i, t in enumerate(times):
        axes[0, i].imshow(screens[t][strip])
        axes[0, i].set_title(f"frame {t}", fontsize=9)
        axes[1, i].imshow(np.maximum(screens[t - 1], screens[t])[strip])
        axes[1, i].set_title(f"max({t - 1}, {t})", fontsize=9)
    for ax in axes.flat:
        ax.axis("off")
    plt.close(figure)
    return figure


# -- a scripted Breakout player and what it plays ----------------------------------------------


def follow_the_ball(env, offset: int = 8) -> Callable:
    """A Breakout player that cheats: it reads the ball's and the paddle's x from the console's
    RAM (bytes 99 and 72) and moves the paddle under the ball. It learns nothing; it plays well."""

    def policy(_observation):
        ram = env.unwrapped.ale.getRAM()
        target, paddle = int(ram[99]) - offset, int(ram[72])
        return 2 if paddle < target - 3 else 3 if paddle > target + 3 else 0  # RIGHT, LEFT, NOOP

    return policy


def play_game(env, policy: Callable, seed: int) -> dict:
    """One whole game: the actions taken, the lives and the (clipped) reward after each step, the
    final info (info["episode"]: the raw score r and the length l) and how it ended (terminated,
    truncated)."""
    obs, info = env.reset(seed=seed)
    game = {"actions": [], "lives": [info["lives"]], "rewards": []}
    terminated = truncated = False
    while not (terminated or truncated):
        action = policy(obs)
        obs, reward, terminated, truncated, info = env.step(action)
        game["actions"].append(action)
        game["lives"].append(info["lives"])
        game["rewards"].append(float(reward))
    game.update(info=info, terminated=terminated, truncated=truncated)
    return game


def blind_replay(actions: Sequence[int], seed: int, **options) -> float:
    """Replay a list of actions without looking at the screen on a fresh Breakout game
    (make_env options: sticky_actions, noop_max); return the raw score when the actions run out
    or the game ends."""
    from a3c_course.a3c.envs import make_env

    env = make_env("breakout", **options)
    env.reset(seed=seed)
    for action in actions:
        *_, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return float(info["episode"]["r"])
    return float(env.get_wrapper_attr("episode_returns"))


def plot_lives(lives: Sequence[int], rewards: Sequence[float]):
    """The lives left and the clipped rewards summed so far (divided by 10) through one game."""
    figure, ax = plt.subplots(figsize=(7, 2.6))
    ax.plot(lives, label="lives (info['lives'])")
    ax.plot(np.concatenate([[0.0], np.cumsum(rewards)]) / 10, label="clipped rewards so far / 10")
    ax.set_xlabel("step (4 frames each)")
    ax.legend()
    plt.close(figure)
    return figure


def observations_of(policy_name: str, steps: int = 300, seed: int = 1) -> list[np.ndarray]:
    """The course's observations of `steps` Breakout steps by the "scripted" or a "random" player
    (a new game after each game over): what one environment's running normaliser would be fed."""
    from a3c_course.a3c.envs import make_env

    env = make_env("breakout", seed=seed)
    policy = (
        follow_the_ball(env) if policy_name == "scripted" else lambda _: env.action_space.sample()
    )
    obs, _ = env.reset(seed=seed)
    seen = []
    for _ in range(steps):
        seen.append(obs)
        obs, _, terminated, truncated, _ = env.step(policy(obs))
        if terminated or truncated:
            obs, _ = env.reset()
    return seen


# -- scrubbing through a recorded episode ----------------------------------------------------------


def scrub(episode, start: int = 40):
    """A slider over a recorded episode (a3c_course.lessons.video.Episode): the screen on the left, the
    agent's 42x42 observation on the right. Needs a live kernel."""
    import ipywidgets as widgets

    slider = widgets.IntSlider(
        value=start, min=0, max=episode.length, description="step", layout={"width": "420px"}
    )

    def draw(step):
        figure = plot_images(
            [episode.frames[step], episode.observations[step]],
            [f"screen at step {step}", "what the agent sees (42x42)"],
            width=3.2,
        )
        from IPython.display import display

        display(figure)

    return widgets.VBox([slider, widgets.interactive_output(draw, {"step": slider})])


def compare_resizing(rows: tuple[int, int], steps: int = 300, shown: slice = slice(6, 14)):
    """The optional resizing section's experiment in one call: the scripted player
    (`follow_the_ball`) plays `steps` steps of Breakout; print how often each resizing loses the
    ball, and draw the `shown` steps both ways (`plot_resizing`)."""
    from a3c_course.a3c.envs import make_env
    from a3c_course.lessons.video import record_episode

    env = make_env("breakout", render_mode="rgb_array")
    episode = record_episode(env, follow_the_ball(env), seed=2, max_steps=steps)
    greys = [grey_of(screen) for screen in episode.frames]
    print(ball_losses(greys, rows))
    return plot_resizing(greys[shown], rows, first_step=shown.start)
