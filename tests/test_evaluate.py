"""Evaluation: raw scores, bounded episodes, checkpoints, early stop."""

import pytest
import torch
from gymnasium.wrappers import TimeLimit

from a3c_course.a3c.envs import frame_options
from a3c_course.a3c.model import ActorCritic
from a3c_course.lessons import pretrained
from a3c_course.training.checkpoint import CheckpointError, save_checkpoint
from a3c_course.training.config import TrainConfig
from a3c_course.training.evaluate import Evaluation, evaluate, evaluation_env


def cartpole_model(seed=0):
    torch.manual_seed(seed)
    return ActorCritic((4,), 2, hidden_size=16)


def test_scores_are_raw_episode_returns_and_repeat_with_the_seed():
    result = evaluate(cartpole_model(), "CartPole-v1", episodes=4, seed=3)
    assert len(result.scores) == 4 and result.scores == [float(n) for n in result.lengths]
    assert result.scores == evaluate(cartpole_model(), "CartPole-v1", episodes=4, seed=3).scores
    assert not any(result.capped)


def test_sampled_play_repeats_with_the_seed_whatever_the_global_generator():
    """A card's sampled evaluation (`--sample --seed S`) gives its scores again: the actions come
    from a generator seeded with S, not from torch's global one."""
    model = cartpole_model()
    torch.manual_seed(123)
    first = evaluate(model, "CartPole-v1", episodes=6, greedy=False, seed=5).scores
    torch.manual_seed(456)  # another global state
    assert evaluate(model, "CartPole-v1", episodes=6, greedy=False, seed=5).scores == first
    other = [evaluate(model, "CartPole-v1", episodes=6, greedy=False, seed=s).scores for s in (6, 7)]
    assert any(scores != first for scores in other)  # the seed does drive the draws


def test_summary_statistics():
    result = Evaluation(scores=[1.0, 3.0], lengths=[10, 20], capped=[False, True])
    assert (result.mean, result.std, result.min, result.max) == (2.0, 1.0, 1.0, 3.0)
    assert (
        result.summary()
        == "2 episodes: mean 2.00, std 1.00, min 1.00, max 3.00 (1 cut at the step cap)"
    )


def test_pong_scores_are_raw_and_episodes_are_cut_at_the_cap():
    model = ActorCritic((1, 42, 42), 6, hidden_size=32)
    result = evaluate(model, "pong", episodes=2, max_steps_per_episode=60)
    assert result.lengths == [60, 60] and result.capped == [True, True]
    assert all(score == int(score) and -21 <= score <= 0 for score in result.scores)


@pytest.mark.slow
def test_a_breakout_agent_that_never_fires_cannot_stall_evaluation():
    """The greedy policy always picks NOOP: FireOnLifeStart serves each ball, the agent loses its
    lives, and every game ends by game over, not at the cap. Game 101 (seed 101) is the one of
    seeds 0-299 whose single FIRE press at reset was lost to sticky actions: before the wrapper
    pressed twice, it waited at the cap with the ball never served."""
    model = ActorCritic((1, 42, 42), 4, hidden_size=32)
    with torch.no_grad():
        model.actor.bias.copy_(torch.tensor([100.0, 0.0, 0.0, 0.0]))  # NOOP, always
    result = evaluate(model, "breakout", episodes=2, seed=100, max_steps_per_episode=3000)
    assert result.capped == [False, False], result.lengths


def time_limit_of(env):
    while not isinstance(env, TimeLimit):
        env = env.env
    return env._max_episode_steps


def test_the_cap_is_a_time_limit_and_a_task_keeps_its_own_shorter_one():
    assert time_limit_of(evaluation_env("pong", 123)) == 123
    assert time_limit_of(evaluation_env("CartPole-v1", 10_000)) == 500  # CartPole-v1's own limit
    assert time_limit_of(evaluation_env("CartPole-v1", 50)) == 50


def test_evaluates_a_checkpoint_on_its_own_game_and_refuses_another(tmp_path):
    path = save_checkpoint(tmp_path / "m.pt", cartpole_model(), TrainConfig(game="CartPole-v1"))
    by_path = evaluate(path, episodes=2)
    assert by_path.scores == evaluate(cartpole_model(), "CartPole-v1", episodes=2).scores
    with pytest.raises(CheckpointError, match="was trained on CartPole-v1, not on ALE/Pong-v5"):
        evaluate(path, "pong", episodes=1)


def test_should_stop_ends_evaluation_early():
    result = evaluate(cartpole_model(), "CartPole-v1", episodes=50, should_stop=lambda: True)
    assert result.interrupted and result.scores == []


def test_bad_arguments():
    with pytest.raises(ValueError, match="episodes must be at least 1, got 0"):
        evaluate(cartpole_model(), "CartPole-v1", episodes=0)
    with pytest.raises(ValueError, match="parallel must be at least 1, got 0"):
        evaluate(cartpole_model(), "CartPole-v1", episodes=1, parallel=0)
    with pytest.raises(ValueError, match="needs game="):
        evaluate(cartpole_model(), episodes=1)


def one_at_a_time(model, game, episodes, seed, max_steps):
    """An independent reference: each episode alone, one observation per forward pass."""
    scores, lengths = [], []
    env = evaluation_env(game, max_steps, **frame_options(model.obs_shape))
    with torch.no_grad():
        for k in range(episodes):
            obs, _ = env.reset(seed=seed + k)
            state, done = None, False
            while not done:
                out = model(torch.from_numpy(obs)[None], state)
                state = out.state
                obs, _, terminated, truncated, info = env.step(int(out.logits.argmax()))
                done = terminated or truncated
            scores.append(float(info["episode"]["r"]))
            lengths.append(int(info["episode"]["l"]))
    return scores, lengths


@pytest.mark.parametrize("parallel", [1, 3, 10])
def test_batched_episodes_score_as_if_played_one_at_a_time(parallel):
    """7 episodes on a pool of `parallel` environments: each keeps its seed, the LSTM state of a
    slot starts again from zeros for its next episode, and results come back in episode order."""
    model = cartpole_model(seed=1)
    result = evaluate(model, "CartPole-v1", episodes=7, seed=5, parallel=parallel)
    assert (result.scores, result.lengths) == one_at_a_time(model, "CartPole-v1", 7, 5, 500)
    assert len(set(result.lengths)) > 1  # the episodes differ, so the order is really checked


@pytest.mark.slow
def test_batched_pong_episodes_match_one_at_a_time():
    """The shipped Pong agent (its frames and its play differ between episodes)."""
    model = pretrained.load("pong")
    result = evaluate(model, "pong", episodes=3, max_steps_per_episode=400, seed=2, parallel=2)
    assert (result.scores, result.lengths) == one_at_a_time(model, "pong", 3, 2, 400)
    assert len(set(result.scores)) > 1
