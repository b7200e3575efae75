"""TrainConfig: the course's defaults, clear errors for invalid values, plain-data round trips."""

import dataclasses
import json

import pytest

from a3c_course.training.config import (
    ORIGINAL_COURSE,
    ORIGINAL_WORKER,
    Setting,
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


# The settings table: each field's Setting is what validation enforces.

SETTINGS = TrainConfig.settings()
FIELDS = {f.name: f for f in dataclasses.fields(TrainConfig)}


def test_every_field_has_a_complete_setting_that_matches_its_annotation():
    assert list(SETTINGS) == list(FIELDS)
    for name, setting in SETTINGS.items():
        assert isinstance(setting, Setting), name
        assert len(setting.help) > 10 and "\n" not in setting.help, name
        assert setting.kind in (int, float, str, bool), name
        annotation = setting.kind.__name__ + (" | None" if setting.optional else "")
        assert FIELDS[name].type == annotation, name  # None allowed exactly where annotated
        assert setting.metavar, name
        assert all(alias.startswith("--") for alias in setting.aliases), name
        if setting.kind not in (int, float):
            assert setting.low is None and setting.high is None and not setting.low_open, name
        if setting.kind is not str:
            assert not setting.choices, name
        if setting.kind is int:
            assert setting.low is not None, name  # every count has a floor
        if FIELDS[name].default is None:
            assert setting.optional, name  # a None default says what None means
    assert TrainConfig.field_help() == {name: s.help for name, s in SETTINGS.items()}


def outside(setting: Setting, bound: float, side: int) -> float:
    """A value just past a bound (side -1: below low, +1: above high)."""
    if side < 0 and setting.low_open:
        return setting.kind(bound)
    return bound + side * (1 if setting.kind is int else 1e-3)


def says_the_bound(text: str, setting: Setting, side: int) -> bool:
    """Whether an error's wording of what is allowed names the bound on this side."""
    if side > 0:
        return f", {setting.high:g}]" in text
    low = f"{setting.low}" if setting.kind is int else f"{setting.low:g}"
    if setting.low_open:
        return f"({low}," in text or f"> {low}" in text or (low == "0" and "positive" in text)
    return f"[{low}," in text or f">= {low}" in text


BOUNDS = [
    (name, side)
    for name, setting in SETTINGS.items()
    for side, bound in ((-1, setting.low), (1, setting.high))
    if bound is not None
]


@pytest.mark.parametrize("name, side", BOUNDS, ids=[f"{n}{'<>'[s > 0]}" for n, s in BOUNDS])
def test_each_bound_in_the_table_is_the_bound_validation_enforces(name, side):
    setting = SETTINGS[name]
    bound = setting.low if side < 0 else setting.high
    value = outside(setting, bound, side)
    with pytest.raises(ValueError) as error:
        TrainConfig(**{name: value})
    assert str(error.value) == f"{name} must be {setting.allowed()}, got {value!r}"
    assert says_the_bound(setting.allowed(), setting, side)
    # ...and the bound itself (or the smallest step inside an open one) is allowed.
    inside = bound if not (side < 0 and setting.low_open) else bound + 1e-3
    assert getattr(TrainConfig(**{name: setting.kind(inside)}), name) == inside


@pytest.mark.parametrize("name", [n for n, s in SETTINGS.items() if s.kind in (int, float)])
def test_numbers_reject_bools_infinities_and_text_and_floats_become_floats(name):
    setting = SETTINGS[name]
    for wrong in (True, float("inf"), float("nan"), "3", *([2.5] if setting.kind is int else [])):
        with pytest.raises(ValueError, match=f"^{name} must be "):
            TrainConfig(**{name: wrong})
    given = 1 if setting.kind is float else setting.low  # an int, for every number field
    assert type(getattr(TrainConfig(**{name: given}), name)) is setting.kind  # 1 becomes 1.0


@pytest.mark.parametrize("name", [n for n, s in SETTINGS.items() if s.choices])
def test_each_choice_in_the_table_is_accepted_and_nothing_else(name):
    setting = SETTINGS[name]
    for choice in setting.options():
        assert getattr(TrainConfig(**{name: choice}), name) == choice
    with pytest.raises(ValueError) as error:
        TrainConfig(**{name: "not-a-choice"})
    listed = ", ".join(map(repr, setting.options()))
    assert str(error.value).startswith(f"{name} must be one of {listed}")


@pytest.mark.parametrize("name", list(SETTINGS))
def test_none_is_allowed_exactly_where_the_table_says_what_it_means(name):
    if SETTINGS[name].optional:
        TrainConfig(**{name: None})
    else:
        with pytest.raises(ValueError, match=f"^{name} must be .*, got None$"):
            TrainConfig(**{name: None})
