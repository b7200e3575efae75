"""The course's environments: observation contract, seeding, episode ends, errors."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from a3c_course.a3c.envs import GAMES, FireOnLifeStart, frame_options, make_env, resolve_env_id


def unwrap_to(env, wrapper_type):
    while not isinstance(env, wrapper_type):
        env = env.env
    return env


@pytest.mark.parametrize("game", ["pong", "breakout"])
def test_observation_shape_dtype_and_range(game):
    env = make_env(game, seed=0)
    obs, _ = env.reset(seed=0)
    assert env.observation_space.shape == (1, 42, 42)
    for _ in range(20):
        assert obs.shape == (1, 42, 42) and obs.dtype == np.float32
        assert 0.0 <= obs.min() and obs.max() <= 1.0
        assert env.observation_space.contains(obs)
        obs, *_ = env.step(env.action_space.sample())


def test_size_is_configurable():
    obs, _ = make_env("pong", size=84).reset(seed=0)
    assert obs.shape == (1, 84, 84)


def test_frame_options_give_the_frame_size_a_network_was_built_for():
    assert frame_options((1, 84, 84)) == {"size": 84}
    assert frame_options((4,)) == {}  # vector observations: no frames to size


@pytest.mark.parametrize("game", ["pong", "breakout"])
def test_same_seed_gives_same_observations(game):
    def trajectory(seed):
        env = make_env(game, seed=seed, sticky_actions=0.25)
        observations = [env.reset()[0]]
        for _ in range(50):
            observations.append(env.step(env.action_space.sample())[0])
        return np.stack(observations)

    np.testing.assert_array_equal(trajectory(1), trajectory(1))
    assert not np.array_equal(trajectory(1), trajectory(2))


@pytest.mark.filterwarnings("ignore:.*is different from the unwrapped version")
# CartPole's own observation space has infinite bounds (velocities); the checker warns of it.
@pytest.mark.filterwarnings("ignore:.*Box observation space (minimum|maximum) value is")
@pytest.mark.parametrize("game", ["pong", "breakout", "CartPole-v1"])
def test_passes_gymnasium_env_checker(game):
    check_env(make_env(game), skip_render_check=True)


def test_unknown_game_error_lists_known_names():
    with pytest.raises(ValueError, match="Unknown game 'tetris'") as info:
        make_env("tetris")
    for name in GAMES:
        assert name in str(info.value)


def test_game_names_and_ale_ids():
    assert resolve_env_id("Pong") == "ALE/Pong-v5"
    assert resolve_env_id("ALE/SpaceInvaders-v5") == "ALE/SpaceInvaders-v5"


def test_rewards_are_clipped_but_the_raw_score_is_reported():
    # Breakout's upper bricks are worth 4-7 points; clipped rewards see 1 each. A scripted agent
    # that follows the ball scores enough to hit them; random play is enough to see the contract.
    env = make_env("breakout", seed=3, max_episode_steps=400)
    env.reset(seed=3)
    clipped_total, terminated, truncated = 0.0, False, False
    while not (terminated or truncated):
        _, reward, terminated, truncated, info = env.step(env.action_space.sample())
        assert -1.0 <= reward <= 1.0
        clipped_total += reward
    assert info["episode"]["r"] >= clipped_total
    assert info["episode"]["l"] > 0


def test_time_limit_truncates_without_terminating():
    env = make_env("pong", seed=0, max_episode_steps=30)
    env.reset(seed=0)
    for _ in range(30):
        _, _, terminated, truncated, info = env.step(0)
        assert not terminated
    assert truncated and info["episode"]["l"] == 30


def test_game_over_terminates_without_truncating():
    env = make_env("breakout", seed=0)
    env.reset(seed=0)
    terminated = truncated = False
    while not (terminated or truncated):  # NOOP: FireOnLifeStart serves, the paddle never moves
        _, _, terminated, truncated, info = env.step(0)
    assert terminated and not truncated
    assert info["lives"] == 0


def test_fire_is_pressed_at_start_and_after_each_lost_life():
    env = make_env("breakout", seed=0)
    fire = unwrap_to(env, FireOnLifeStart)
    env.reset(seed=0)
    lives_seen = {fire.lives}
    terminated = False
    while not terminated:  # with NOOP only, every life is lost; without FIRE the ball never comes
        _, _, terminated, _, info = env.step(0)
        lives_seen.add(info["lives"])
    assert lives_seen == {5, 4, 3, 2, 1, 0}


def serves_the_ball(presses: int, seed: int) -> bool:
    """The course's pipeline (sticky actions 0.25) with `presses` FIRE presses per serve, played
    with NOOP only: a reward or a lost life within 300 steps means the ball was served."""
    env = make_env("breakout")
    unwrap_to(env, FireOnLifeStart).presses = presses
    _, info = env.reset(seed=seed)
    for _ in range(300):
        _, reward, terminated, _, after = env.step(0)
        if reward or terminated or after["lives"] < info["lives"]:
            return True
    return False


def test_a_fire_press_lost_to_sticky_actions_is_made_up_by_the_second():
    # Each of a press's 4 frames replays the previous action (a no-op at reset) with probability
    # 0.25: 1 press in 256 is lost. Of seeds 0-299, seed 101's single press was (measured).
    assert not serves_the_ball(presses=1, seed=101)
    assert serves_the_ball(presses=2, seed=101)
    assert all(serves_the_ball(presses=2, seed=seed) for seed in range(95, 105))


def test_fire_presses_must_be_at_least_one():
    with pytest.raises(ValueError, match="presses must be at least 1, got 0"):
        FireOnLifeStart(gym.make("ALE/Breakout-v5"), presses=0)


def test_fire_on_life_start_can_be_turned_off():
    env = make_env("breakout", seed=0, fire_on_life_start=False, max_episode_steps=300)
    env.reset(seed=0)
    truncated = terminated = False
    while not (terminated or truncated):  # no FIRE, no ball: the game waits until the time limit
        _, _, terminated, truncated, info = env.step(0)
    assert truncated and info["lives"] == 5


def test_vector_task_for_fast_end_to_end_tests():
    env = make_env("CartPole-v1", seed=0)
    obs, _ = env.reset()
    assert obs.shape == (4,) and obs.dtype == np.float32
