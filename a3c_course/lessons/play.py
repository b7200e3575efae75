"""A trained network (or random play) playing recorded episodes of a game.

    model, game = load_player("runs/pong/checkpoint.pt")          # or load_player(None, "pong")
    episodes = play_episodes(game, model, episodes=2, greedy=True, max_steps=500)
    write_video(captioned_frames(episodes, max_frames=600), "pong.mp4")   # video.py

ModelPolicy turns a network into a policy `observation -> action` for video.record_episode,
carrying its LSTM state from step to step; CartPoleFrames draws CartPole without pygame.
"""

from __future__ import annotations

from typing import Any

import cv2
import gymnasium as gym
import numpy as np

from a3c_course.a3c.envs import STICKY_ACTIONS
from a3c_course.lessons.video import Episode, record_episode


class ModelPolicy:
    """A network as a policy `observation -> action`, carrying its LSTM state from step to step.

    greedy: the most probable action (True) or a sample from pi(.|s) (False), drawn with its own
        seeded generator so that a sampled recording repeats. Make one per episode (or call
        reset()): the LSTM state starts from zeros.
    """

    def __init__(self, model, *, greedy: bool = True, seed: int = 0):
        import torch

        from a3c_course.a3c.model import choose_action

        self.model, self.choose = model.eval(), choose_action
        self.greedy = greedy
        self.generator = torch.Generator().manual_seed(seed)
        self.reset()

    def reset(self) -> None:
        self.state = self.model.initial_state(1)

    def __call__(self, observation: Any) -> int:
        import torch

        with torch.no_grad():
            obs = torch.as_tensor(np.asarray(observation, np.float32)).unsqueeze(0)
            out = self.model(obs, self.state)
            self.state = out.state
            return int(self.choose(out.logits, self.greedy, self.generator)[0])


class CartPoleFrames(gym.Wrapper):
    """CartPole with `render()` drawn from its state with OpenCV (320x200 RGB): the cart, the
    pole and the track, without gymnasium's pygame renderer."""

    WIDTH, HEIGHT, X_RANGE = 320, 200, 2.4

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self._render_mode = "rgb_array"

    @property
    def render_mode(self) -> str:
        return self._render_mode

    def render(self) -> np.ndarray:
        x, _, theta, _ = (float(v) for v in self.env.unwrapped.state)
        frame = np.full((self.HEIGHT, self.WIDTH, 3), 255, np.uint8)
        scale = self.WIDTH / (2 * self.X_RANGE)
        track_y = int(self.HEIGHT * 0.75)
        cv2.line(frame, (0, track_y), (self.WIDTH, track_y), (0, 0, 0), 1)
        cart_x = int(round(self.WIDTH / 2 + x * scale))
        cv2.rectangle(frame, (cart_x - 25, track_y - 15), (cart_x + 25, track_y + 5), (0, 0, 0), -1)
        pole = 2 * 0.5 * scale  # the pole is 1.0 long (gymnasium's length is the half-length)
        tip = (
            int(round(cart_x + pole * np.sin(theta))),
            int(round(track_y - 15 - pole * np.cos(theta))),
        )
        cv2.line(frame, (cart_x, track_y - 15), tip, (202, 152, 101), 6, cv2.LINE_AA)
        cv2.circle(frame, (cart_x, track_y - 15), 3, (129, 132, 203), -1)
        return frame


def load_player(checkpoint=None, game: str | None = None):
    """(model or None, game) for play_episodes: a checkpoint's network (path or loaded Checkpoint)
    checked against `game`, or None for random play (then game is required)."""
    from a3c_course.training.checkpoint import Checkpoint, load_checkpoint, model_from_checkpoint

    if checkpoint is None:
        if game is None:
            raise ValueError("random play needs a game, e.g. game='pong'")
        return None, game
    if not isinstance(checkpoint, Checkpoint):
        checkpoint = load_checkpoint(checkpoint, expect_game=game)
    game = game or checkpoint.config.game
    return model_from_checkpoint(checkpoint, expect_game=game), game


def play_episodes(
    game: str,
    model=None,
    episodes: int = 1,
    *,
    greedy: bool = True,
    seed: int = 0,
    max_steps: int | None = 1000,
    sticky_actions: float = STICKY_ACTIONS,
) -> list[Episode]:
    """Record `episodes` episodes of `model` (an ActorCritic; None plays at random) on `game`.

    Episode k is reset with seed + k. max_steps cuts each recording (videos stay short); an
    episode cut this way has ended=False and its score is the raw score so far.
    """
    from a3c_course.a3c.envs import frame_options, is_atari, make_env, resolve_env_id

    if not isinstance(episodes, int) or episodes < 1:
        raise ValueError(f"episodes must be a positive integer, got {episodes!r}")
    env_id = resolve_env_id(game)
    if is_atari(env_id):
        fits = {} if model is None else frame_options(model.obs_shape)
        env = make_env(game, render_mode="rgb_array", sticky_actions=sticky_actions, **fits)
    elif env_id.startswith("CartPole"):
        env = CartPoleFrames(make_env(game))  # drawn here: gymnasium's renderer needs pygame
    else:
        env = make_env(game, render_mode="rgb_array")
    try:
        recorded = []
        for k in range(episodes):
            policy = None if model is None else ModelPolicy(model, greedy=greedy, seed=seed + k)
            recorded.append(record_episode(env, policy, seed=seed + k, max_steps=max_steps))
        return recorded
    finally:
        env.close()
