"""The settings panel: sliders for the hyperparameters a learner explores, and a menu of the named
presets of config.py (e.g. "breakout").
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

import ipywidgets as widgets

from a3c_course.a3c.envs import is_atari
from a3c_course.a3c.model import COURSE_NETWORK
from a3c_course.lessons.panels.base import (
    GAMES,
    LAYOUT,
    STYLE,
    Panel,
    error_html,
    ok_html,
)
from a3c_course.training.config import BACKENDS, PRESETS, RAY_MISSING, TrainConfig, preset


def config_from_values(base: TrainConfig, values: dict[str, Any]) -> TrainConfig:
    """base with `values` changed, validated (ValueError names the field and what is allowed).

    Budgets: 0 or None for max_minutes / max_steps means no limit (stop with the Stop button).
    An out_dir left at its default (runs/<game>) follows a change of game.
    """
    values = dict(values)
    if "out_dir" not in values and base.out_dir == base.replace(out_dir=None).out_dir:
        values["out_dir"] = None
    for budget in ("max_minutes", "max_steps"):
        if budget in values and values[budget] in (0, None):
            values[budget] = None
    return base.replace(**values)


DEFAULTS = "course defaults"  # the settings menu's entry for `base` itself


class HyperparameterPanel(Panel):
    """Sliders for the settings a learner explores; `read()` gives the validated TrainConfig.

    Settings that are not on the panel (optimizer, seed, evaluation, out_dir, ...) come from `base`.
    The settings menu loads a named preset of config.py (e.g. "breakout") on top of `base` and
    moves every control to it. Any change re-validates: the summary line shows the config, or the
    error in place.
    """

    def __init__(self, base: TrainConfig | None = None, games: tuple[str, ...] = GAMES):
        base = base or TrainConfig()
        self.start, self.base = base, base
        games = games if base.game in games else (base.game, *games)
        common = dict(style=STYLE, layout=LAYOUT, continuous_update=False)
        self.preset = widgets.Dropdown(
            options=[DEFAULTS, *PRESETS], value=DEFAULTS, description="settings", style=STYLE,
            layout=LAYOUT,
        )  # fmt: skip
        self.controls: dict[str, widgets.ValueWidget] = {
            "game": widgets.Dropdown(
                options=list(games), value=base.game, description="game", style=STYLE,
                layout=LAYOUT,
            ),
            "lr": widgets.FloatLogSlider(
                value=base.lr, base=10, min=-5, max=-2, step=0.1, readout_format=".1e",
                description="learning rate", **common,
            ),
            "gamma": widgets.FloatSlider(
                value=base.gamma, min=0.9, max=1.0, step=0.001, readout_format=".3f",
                description="discount γ", **common,
            ),
            "gae_lambda": widgets.FloatSlider(
                value=base.gae_lambda, min=0.0, max=1.0, step=0.05, readout_format=".2f",
                description="GAE λ", **common,
            ),
            "entropy_coef": widgets.FloatSlider(
                value=base.entropy_coef, min=0.0, max=0.1, step=0.001, readout_format=".3f",
                description="entropy coefficient", **common,
            ),
            "workers": widgets.IntSlider(
                value=base.workers, min=1, max=max(os.cpu_count() or 1, base.workers, 8),
                description="workers", **common,
            ),
            "backend": widgets.Dropdown(
                options=list(BACKENDS), value=base.backend, style=STYLE, layout=LAYOUT,
                description="backend",
            ),
            "envs_per_worker": widgets.IntSlider(
                value=base.envs_per_worker, min=1, max=max(16, base.envs_per_worker),
                description="envs per worker", **common,
            ),
            "rollout_steps": widgets.IntSlider(
                value=base.rollout_steps, min=1, max=max(100, base.rollout_steps),
                description="rollout steps (n)", **common,
            ),
            "life_loss_terminal": widgets.Checkbox(
                value=base.life_loss_terminal, description="a lost life ends the episode",
                style=STYLE, layout=LAYOUT,
            ),
            "max_minutes": widgets.FloatText(
                value=base.max_minutes or 0.0, description="budget: minutes (0: none)",
                style=STYLE, layout=LAYOUT,
            ),
            "max_steps": widgets.IntText(
                value=base.max_steps or 0, description="budget: steps (0: none)", style=STYLE,
                layout=LAYOUT,
            ),
        }  # fmt: skip
        self.message = widgets.HTML()
        self.config: TrainConfig | None = None
        self.error: str | None = None
        for control in self.controls.values():
            control.observe(self._on_change, names="value")
        self.preset.observe(lambda change: self.use_preset(change["new"]), names="value")
        self.widget = widgets.VBox(
            [
                widgets.HTML("<b>Hyperparameters</b>"),
                self.preset,
                *self.controls.values(),
                self.message,
            ]
        )
        self.read()

    def use_preset(self, name: str) -> TrainConfig | None:
        """Load a preset (or DEFAULTS: the panel's starting settings) into base and every control."""
        if name != DEFAULTS and name not in PRESETS:
            raise ValueError(f"preset: {name!r} is not one of {DEFAULTS!r}, {', '.join(PRESETS)}")
        self.base = config_from_values(self.start, {} if name == DEFAULTS else preset(name))
        if self.preset.value != name:
            self.preset.value = name  # its observer calls back here once, with the same name
            return self.config
        for field, control in self.controls.items():
            value = getattr(self.base, field)
            control.value = 0 if value is None and field.startswith("max_") else value
        return self.read()

    def values(self) -> dict[str, Any]:
        return {name: control.value for name, control in self.controls.items()}

    def set(self, **values: Any) -> TrainConfig | None:
        """Set controls by field name (as a learner would), then read()."""
        for name, value in values.items():
            self.controls[name].value = value
        return self.read()

    def read(self) -> TrainConfig | None:
        """The validated config, or None with the error shown in place (and in self.error)."""
        try:
            self.config, self.error = config_from_values(self.base, self.values()), None
            if self.config.backend == "ray" and importlib.util.find_spec("ray") is None:
                raise ValueError(RAY_MISSING)
        except ValueError as error:
            self.config, self.error = None, str(error)
            self.message.value = error_html(self.error)
            return None
        self.message.value = ok_html(describe_config(self.config))
        return self.config

    def _on_change(self, _change) -> None:
        self.read()


def describe_config(config: TrainConfig) -> str:
    """One line: the game, the processes, the algorithm's settings and the budget."""
    sticky = f", sticky actions {config.sticky_actions:g}" if is_atari(config.env_id) else ""
    budgets = [
        f"{config.max_minutes:g} min" if config.max_minutes else "",
        f"{config.max_steps:,} steps" if config.max_steps else "",
    ]
    budget = " or ".join(b for b in budgets if b) or "until Stop"
    # Settings off the panel's sliders that a preset may change: say so when they differ.
    extras = [
        ", a lost life ends the episode" if config.life_loss_terminal else "",
        ", on Ray" if config.backend == "ray" else "",
        f", {config.activation}" if config.activation != COURSE_NETWORK["activation"] else "",
    ]
    return (
        f"{config.env_id}: {config.workers} workers x {config.envs_per_worker} envs, "
        f"lr {config.lr:.1e}, γ {config.gamma:g}, λ {config.gae_lambda:g}, "
        f"entropy {config.entropy_coef:g}, n {config.rollout_steps}{sticky}{''.join(extras)}; "
        f"{budget}"
    )
