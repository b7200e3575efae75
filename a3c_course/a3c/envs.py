"""Environments: the ALE games with the course's preprocessing, and small vector tasks for tests.

The Atari pipeline, outermost wrapper last (each choice is explained in notebook 01):

    ALE/<Game>-v5, frameskip=1       the emulator, with sticky actions 0.25 by default (STICKY_ACTIONS)
    AtariPreprocessing               no-op starts, frame skip 4 with max-pooling of the last two frames, grey
    FireOnLifeStart                  presses FIRE (twice) at the start and after each lost life (Breakout)
    TimeLimit                        optional, in agent steps; ALE itself truncates after 108,000 frames
    RecordEpisodeStatistics          the raw game score and length, in info["episode"] at an episode's end
    ClipReward                       training rewards in [-1, 1]
    PlayAreaObservation              crop the play area, resize to 42x42, scale to [0, 1], add a channel axis

`terminated` (game over) and `truncated` (a time limit) stay distinct all the way through.
"""

from __future__ import annotations

import cv2
import gymnasium as gym
import numpy as np
from gymnasium.wrappers import AtariPreprocessing, ClipReward, RecordEpisodeStatistics, TimeLimit

GAMES = {"pong": "ALE/Pong-v5", "breakout": "ALE/Breakout-v5"}

# Rows of the 210x160 screen that hold the play area: the score bar above and the border below carry
# nothing the policy needs (the score is known from the rewards).
PLAY_AREA_ROWS = {"ALE/Pong-v5": (34, 194), "ALE/Breakout-v5": (32, 196)}
NATIVE_SCREEN = (210, 160)

# Sticky actions (Machado et al. 2018's recommendation; ALE v5's own default): each emulator frame (4 per agent
# step), with this probability the emulator repeats the previous action instead of the chosen one.
# Without it a greedy policy replays one fixed game from each no-op start; 0.0 gives that
# deterministic game (the original course's setting), for comparison only.
STICKY_ACTIONS = 0.25
# The side of the square frame the agent sees: pytorch-a3c's and the original course's 42 (DQN used
# 84). A network is built for one size; frame_options gives the environment that fits it.
FRAME_SIZE = 42


def register_ale() -> None:
    """Register the ALE games with Gymnasium and silence ALE's start-up banner (it breaks nbval)."""
    import ale_py

    ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)
    gym.register_envs(ale_py)


def resolve_env_id(game: str) -> str:
    """Map a course name ("pong", "breakout") or any registered Gymnasium id to a Gymnasium id."""
    register_ale()
    if not isinstance(game, str):
        raise TypeError(f"game must be a string, got {game!r}")
    env_id = GAMES.get(game.lower(), game)
    if env_id not in gym.registry:
        raise ValueError(
            f"Unknown game {game!r}. Known names: {', '.join(sorted(GAMES))}; or any registered "
            "Gymnasium id, e.g. an ALE id such as 'ALE/SpaceInvaders-v5' or 'CartPole-v1'."
        )
    return env_id


def is_atari(env_id: str) -> bool:
    entry_point = gym.registry[env_id].entry_point
    return isinstance(entry_point, str) and entry_point.startswith("ale_py")


class FireOnLifeStart(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Press FIRE after reset and after every lost life, twice.

    In Breakout the ball only appears after FIRE. A greedy policy that never picks FIRE would wait
    forever; pressing it for the agent removes an exploration problem that teaches nothing.
    Why twice: with sticky actions each of a press's 4 frames replays the previous action with
    probability 0.25, so one press in 4**4 = 256 never reaches the game, and a greedy agent then
    waits until the time limit. A second press leaves one serve in 65,536 unpressed.
    """

    def __init__(self, env: gym.Env, presses: int = 2):
        gym.utils.RecordConstructorArgs.__init__(self, presses=presses)
        gym.Wrapper.__init__(self, env)
        if presses < 1:
            raise ValueError(f"presses must be at least 1, got {presses}")
        self.fire_action = env.unwrapped.get_action_meanings().index("FIRE")
        self.presses = presses
        self.lives = 0

    def reset(self, **kwargs):
        self.env.reset(**kwargs)
        obs, _, terminated, truncated, info = self._serve()
        if terminated or truncated:  # practically unreachable; keep the contract anyway
            return self.env.reset(**kwargs)
        self.lives = info["lives"]
        return obs, info

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        if info["lives"] < self.lives and not (terminated or truncated):
            obs, fire_reward, terminated, truncated, info = self._serve()
            reward += fire_reward
        self.lives = info["lives"]
        return obs, reward, terminated, truncated, info

    def _serve(self):
        """Press FIRE `presses` times (fewer if the episode ends); the rewards are summed."""
        reward = 0.0
        for _ in range(self.presses):
            obs, step_reward, terminated, truncated, info = self.env.step(self.fire_action)
            reward += step_reward
            if terminated or truncated:
                break
        return obs, reward, terminated, truncated, info


class PlayAreaObservation(gym.ObservationWrapper, gym.utils.RecordConstructorArgs):
    """Crop rows [top, bottom) of a grey frame, resize to size x size, scale to [0, 1], add a channel axis."""

    def __init__(self, env: gym.Env, rows: tuple[int, int], size: int = FRAME_SIZE):
        gym.utils.RecordConstructorArgs.__init__(self, rows=rows, size=size)
        gym.ObservationWrapper.__init__(self, env)
        self.rows = rows
        self.size = size
        self.observation_space = gym.spaces.Box(0.0, 1.0, (1, size, size), np.float32)

    def observation(self, frame: np.ndarray) -> np.ndarray:
        top, bottom = self.rows
        small = cv2.resize(frame[top:bottom], (self.size, self.size), interpolation=cv2.INTER_AREA)
        return (small.astype(np.float32) / 255.0)[None]


def make_atari_env(
    env_id: str,
    *,
    size: int = FRAME_SIZE,
    frame_skip: int = 4,
    sticky_actions: float = STICKY_ACTIONS,
    noop_max: int = 30,
    fire_on_life_start: bool = True,
    clip_rewards: bool = True,
    max_episode_steps: int | None = None,
    render_mode: str | None = None,
) -> gym.Env:
    """The course's Atari pipeline (see the module docstring)."""
    env = gym.make(
        env_id,
        # AtariPreprocessing reads the grey screen from the emulator itself and ignores the
        # observation of each inner step: grey is the cheapest one to produce (5% faster per step).
        obs_type="grayscale",
        frameskip=1,
        repeat_action_probability=sticky_actions,
        full_action_space=False,
        render_mode=render_mode,
    )
    height, width = NATIVE_SCREEN
    env = AtariPreprocessing(
        env, noop_max=noop_max, frame_skip=frame_skip, screen_size=(width, height), scale_obs=False
    )
    if fire_on_life_start and "FIRE" in env.unwrapped.get_action_meanings():
        env = FireOnLifeStart(env)
    if max_episode_steps is not None:
        env = TimeLimit(env, max_episode_steps)
    env = RecordEpisodeStatistics(env)
    if clip_rewards:
        env = ClipReward(env, -1.0, 1.0)
    return PlayAreaObservation(env, PLAY_AREA_ROWS.get(env_id, (0, height)), size)


def frame_options(obs_shape: tuple[int, ...]) -> dict[str, int]:
    """make_env options that give a network the frames it was built for: {"size": S} for
    (C, S, S) frames, nothing for vector observations."""
    return {"size": int(obs_shape[-1])} if len(obs_shape) == 3 else {}


def make_vector_obs_env(
    env_id: str, *, max_episode_steps: int | None = None, render_mode: str | None = None
) -> gym.Env:
    """A task with vector observations (e.g. CartPole-v1), with episode statistics."""
    env = gym.make(env_id, max_episode_steps=max_episode_steps, render_mode=render_mode)
    return RecordEpisodeStatistics(env)


def make_env(game: str, *, seed: int | None = None, **options) -> gym.Env:
    """Make the environment the course trains on.

    game: "pong", "breakout", any ALE id ("ALE/SpaceInvaders-v5") or a Gymnasium id with vector
        observations ("CartPole-v1").
    seed: when given, the environment is reset once with it (and its action space seeded), so that
        the same seed gives the same observations from then on.
    options: passed to `make_atari_env` (Atari) or `make_vector_obs_env` (anything else).
    """
    env_id = resolve_env_id(game)
    env = (
        make_atari_env(env_id, **options)
        if is_atari(env_id)
        else make_vector_obs_env(env_id, **options)
    )
    if seed is not None:
        env.reset(seed=seed)
        env.action_space.seed(seed)
    return env
