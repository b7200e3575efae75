"""benchmarks/settings_table.py: the table of what differs between compared settings is built
from the settings that ran, and benchmarks/README.md quotes it as printed."""

import inspect
from pathlib import Path

import benchmark_scripts  # tests/ is on sys.path
import pytest

from a3c_course.training.config import ORIGINAL_COURSE, TrainConfig

README = Path(__file__).resolve().parents[1] / "benchmarks" / "README.md"


@pytest.fixture(scope="module")
def script():
    return benchmark_scripts.load("settings_table")


def rows(table: str) -> dict[str, list[str]]:
    lines = table.strip().splitlines()
    cells = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]
    return {row[0]: row[1:] for row in [cells[0], *cells[2:]]}


def test_each_column_reads_its_own_settings(script):
    table = rows(script.settings_table("pong"))
    assert table["setting"] == [
        "course defaults", "`--preset original-course`", "SB3's A2C, RL Zoo's Atari settings",
    ]  # fmt: skip
    defaults, original = TrainConfig(), TrainConfig(**ORIGINAL_COURSE)
    assert table["samples per update"] == [
        str(defaults.envs_per_worker * defaults.rollout_steps),  # 8 x 20
        str(original.envs_per_worker * original.rollout_steps),  # 1 x 20
        "80",  # 16 environments x 5 steps
    ]
    assert table["optimizer"][:2] == ["Adam, shared, lr 7e-4", "Adam, shared, lr 1e-4"]
    assert table["gradient clip (global norm)"] == ["40", "40", "0.5"]
    assert table["value-loss weight"] == ["0.5", "0.5", "0.25"]
    assert table["network"][1].startswith("4 convs of 32") and "LSTM 256" in table["network"][1]


def test_breakout_adds_its_preset(script):
    table = rows(script.settings_table("breakout"))
    assert table["setting"][1] == "`--preset breakout`"
    assert table["a lost life ends the episode"][:2] == [
        "no",
        "yes (returns and LSTM state; the game plays on)",
    ]
    assert table["optimizer"][1] == "Adam, shared, lr 5e-4"


@pytest.mark.parametrize("game", ["pong"])
def test_benchmarks_readme_quotes_the_table_as_printed(script, game):
    assert script.settings_table(game) in README.read_text()


def test_the_zoo_keeps_a2cs_own_defaults():
    sb3 = pytest.importorskip(
        "stable_baselines3", reason="the optional bench extra is not installed"
    )
    defaults = inspect.signature(sb3.A2C).parameters
    script = benchmark_scripts.load("sb3_time_to_score")
    for name, value in script.A2C_DEFAULTS.items():
        assert defaults[name].default == value, name
