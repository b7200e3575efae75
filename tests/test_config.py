"""TrainConfig: the course's defaults, clear errors for invalid values, plain-data round trips."""

import json

import pytest

from a3c_course.training.config import (
    ORIGINAL_COURSE,
    ORIGINAL_WORKER,
    TrainConfig,
    default_start_method,
)


def test_defaults_keep_the_original_algorithm_and_batch_it():
    config = TrainConfig()
    assert (config.gamma, config.gae_lambda) == (0.99, 1.0)
    assert (config.entropy_coef, config.value_coef, config.max_grad_norm) == (0.01, 0.5, 40.0)
    assert (config.rollout_steps, config.envs_per_worker, config.lr) == (20, 8, 7e-4)
    assert config.optimizer == "adam" and config.eval_episodes == 10
    worker = TrainConfig(**ORIGINAL_WORKER)
    assert (worker.envs_per_worker, worker.rollout_steps, worker.lr) == (1, 20, 1e-4)
    original = TrainConfig(**ORIGINAL_COURSE)
    assert (original.envs_per_worker, original.rollout_steps, original.lr) == (1, 20, 1e-4)
    assert (original.activation, original.conv_filters, original.hidden_size) == ("elu", 32, 256)
    assert config.env_id == "ALE/Pong-v5"
    assert config.out_dir == "runs/pong"
    assert config.start_method == default_start_method()


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"lr": -1e-4}, "lr must be a positive number, e.g. 1e-4, got -0.0001"),
        ({"lr": 0}, "lr must be a positive number"),
        ({"lr": float("nan")}, "lr must be a positive number"),
        ({"lr": "fast"}, "lr must be a positive number, e.g. 1e-4, got 'fast'"),
        ({"gamma": 0.0}, r"gamma must be in \(0, 1\], got 0.0"),
        ({"gamma": 1.5}, r"gamma must be in \(0, 1\], got 1.5"),
        ({"gae_lambda": -0.1}, r"gae_lambda must be in \[0, 1\], got -0.1"),
        ({"workers": 0}, "workers must be an integer >= 1, got 0"),
        ({"workers": 2.5}, "workers must be an integer >= 1, got 2.5"),
        ({"workers": True}, "workers must be an integer >= 1, got True"),
        ({"envs_per_worker": 0}, "envs_per_worker must be an integer >= 1, got 0"),
        ({"rollout_steps": 0}, "rollout_steps must be an integer >= 1, got 0"),
        ({"optimizer": "sgd"}, "optimizer must be one of 'adam', 'rmsprop', got 'sgd'"),
        ({"game": "tetris"}, "game: Unknown game 'tetris'. Known names: breakout, pong"),
        ({"game": ""}, "game must be a non-empty string, got ''"),
        ({"entropy_coef": -0.01}, "entropy_coef must be a number >= 0, got -0.01"),
        ({"max_grad_norm": 0}, "max_grad_norm must be a positive number, got 0"),
        ({"max_steps": 0}, "max_steps must be an integer >= 1, or None, got 0"),
        ({"max_minutes": -5}, "max_minutes must be a positive number of minutes, or None, got -5"),
        ({"target_score": float("inf")}, "target_score must be a finite number, or None"),
        ({"eval_episodes": -1}, "eval_episodes must be an integer >= 0, got -1"),
        ({"sticky_actions": 1.5}, r"sticky_actions must be a probability in \[0, 1\], got 1.5"),
        ({"hidden_size": 0}, "hidden_size must be an integer >= 1, or None, got 0"),
        ({"start_method": "thread"}, "start_method must be one of 'fork', "),
        ({"eval_mode": "never"}, "eval_mode must be one of 'live', 'after', got 'never'"),
        ({"activation": "gelu"}, "activation must be one of 'relu', 'elu', 'leaky_relu', got 'gelu'"),
        ({"conv_filters": 0}, "conv_filters must be an integer >= 1, got 0"),
        ({"frame_size": 8}, "frame_size must be an integer >= 16, got 8"),
        ({"frame_size": 84.0}, "frame_size must be an integer >= 16, got 84.0"),
        ({"backend": "mpi"}, "backend must be one of 'hogwild', 'ray', got 'mpi'"),
        ({"backend": "ray", "ray_address": ""}, "ray_address must be a non-empty string, got ''"),
        (
            {"ray_address": "auto"},
            "ray_address must be None with backend 'hogwild', got 'auto': a cluster address needs",
        ),
        (
            {"eval_mode": "after", "target_score": 18},
            "target_score must be None with eval_mode 'after', got 18.0: its evaluations come only",
        ),
    ],
)
def test_invalid_values_name_the_field_the_value_and_what_is_allowed(changes, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig(**changes)


def test_replace_validates_and_leaves_the_original_alone():
    config = TrainConfig(game="breakout", max_minutes=None, max_steps=1000)
    changed = config.replace(lr=5e-4)
    assert changed.lr == 5e-4 and config.lr == 7e-4
    with pytest.raises(ValueError, match="gamma must be in"):
        config.replace(gamma=2)
    with pytest.raises(AttributeError):
        config.lr = 1.0  # frozen: change it with replace()


def test_numbers_are_normalised_to_floats():
    config = TrainConfig(lr=1, gamma=1, max_minutes=2)
    assert isinstance(config.lr, float) and isinstance(config.max_minutes, float)


def test_round_trip_through_plain_data_and_json():
    config = TrainConfig(game="CartPole-v1", workers=3, hidden_size=32, target_score=195)
    values = config.to_dict()
    assert json.loads(json.dumps(values)) == values
    assert all(isinstance(v, (str, int, float, type(None))) for v in values.values())
    assert TrainConfig.from_dict(values) == config


def test_from_dict_rejects_unknown_fields_and_tolerates_a_foreign_start_method():
    with pytest.raises(ValueError, match="unknown TrainConfig field"):
        TrainConfig.from_dict({"game": "pong", "learning_rate": 0.1})
    config = TrainConfig.from_dict({"game": "pong", "start_method": "a-method-from-elsewhere"})
    assert config.start_method == default_start_method()


@pytest.mark.parametrize(
    "saved, network",
    [
        ({"game": "pong"}, ("elu", 32, 256)),  # None meant 256 for frames then
        ({"game": "pong", "hidden_size": 64}, ("elu", 32, 64)),
        ({"game": "CartPole-v1"}, ("elu", 32, None)),  # None still means 64 for vectors
    ],
)
def test_a_config_saved_before_the_network_options_keeps_the_original_network(saved, network):
    config = TrainConfig.from_dict(saved)
    assert (config.activation, config.conv_filters, config.hidden_size) == network
    assert TrainConfig.from_dict(config.to_dict()) == config  # saved again, it stays the same


def test_the_default_network_is_the_course_network():
    assert TrainConfig().network_options == {
        "hidden_size": None,
        "activation": "relu",
        "conv_filters": 16,
    }


def test_every_field_has_help_text():
    help_text = TrainConfig.field_help()
    assert set(help_text) == set(TrainConfig().to_dict())
    assert all(len(text) > 10 for text in help_text.values())
