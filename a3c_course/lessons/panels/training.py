"""The training panel: Start and Stop, a live learning curve over the reference band, the result.

Training runs in a background thread of the kernel, so the notebook stays responsive and the Stop
button can be pressed. Stop does not kill anything: it makes the trainer's next progress callback
raise KeyboardInterrupt, and the trainer stops its workers, joins them and saves the checkpoint,
as on Ctrl-C. The live plot is a PNG in an Image widget: updating a widget's value is safe from a
background thread, printing into an Output widget is not. Once a run has ended, "Keep this run"
zips its folder for download (and Drive): a Colab session's files go with the session.
"""

from __future__ import annotations

import html
import io
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ipywidgets as widgets

from a3c_course.lessons.panels.base import LAYOUT, KeepRun, Panel, error_html
from a3c_course.lessons.panels.settings import HyperparameterPanel, describe_config
from a3c_course.training.config import TrainConfig

PLOT_INTERVAL_S = 2.0  # redraw the live learning curve at most this often


# -- training -------------------------------------------------------------------------------------


def progress_text(result) -> str:
    """ "12,340 steps (450/s), 1.2 min, recent score 21.3, last evaluation 30.0" for a TrainResult."""
    parts = [
        f"{result.steps:,} steps ({result.steps_per_s:.0f}/s)",
        f"{result.elapsed_s / 60:.1f} min",
        *_scores(result, "recent score {:.1f}", "last evaluation {mean:.1f}"),
    ]
    return ", ".join(parts)


def _scores(result, recent: str, last: str) -> list[str]:
    """The run's recent training score and its last evaluation (a record), each in its format,
    where the run has one."""
    score, evaluation = result.recent_score(), result.last_evaluation()
    return [
        *([recent.format(score)] if score is not None else []),
        *([last.format(**evaluation)] if evaluation is not None else []),
    ]


def result_html(result) -> str:
    """What a finished run did: why it stopped, steps, scores, where the checkpoint is."""
    lines = [
        f"Stopped ({result.stop_reason}) after {result.steps:,} steps in "
        f"{result.elapsed_s / 60:.1f} min.",
    ]
    lines += _scores(
        result,
        "Recent training score: {:.2f}.",
        "Last evaluation: {mean:.2f} (at {steps:,} steps).",
    )
    lines.append(f"Checkpoint: {result.checkpoint}")
    return "<br>".join(html.escape(line) for line in lines)


def learning_curve_png(
    history, window: int = 20, title: str | None = None, game: str | None = None
) -> bytes:
    """The learning curve (see reports.plot_learning_curve) as PNG bytes; beside it, when the
    course ships reference runs of `game`, the run's curve over their band ("is my run on track?")."""
    from matplotlib.figure import Figure

    from a3c_course.lessons.reference import plot_reference, reference_games
    from a3c_course.lessons.reports import plot_learning_curve

    with_reference = game is not None and game.lower() in reference_games()
    figure = Figure(figsize=(12.8 if with_reference else 6.4, 3.6), dpi=100)
    axes = figure.subplots(1, 2 if with_reference else 1, squeeze=False)[0]
    plot_learning_curve(history, window=window, title=title, ax=axes[0])
    if with_reference:
        plot_reference(history, game=game, window=window, ax=axes[1])
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=80)
    return buffer.getvalue()


class TrainingPanel(Panel):
    """Start and Stop buttons, a progress line, a live learning curve and the result.

    source: a HyperparameterPanel (its current config), a TrainConfig, or a callable returning a
        TrainConfig (or None when the settings are invalid).
    """

    def __init__(self, source: HyperparameterPanel | TrainConfig | Callable[[], Any]):
        self.source = source
        self.start_button = widgets.Button(description="Start", button_style="success", icon="play")
        self.stop_button = widgets.Button(
            description="Stop", button_style="danger", icon="stop", disabled=True
        )
        self.status = widgets.HTML("Ready.")
        self.progress = widgets.FloatProgress(value=0.0, min=0.0, max=1.0, layout=LAYOUT)
        self.plot = widgets.Image(format="png", layout=widgets.Layout(max_width="1024px"))
        self.outcome = widgets.HTML()
        self.keeper = KeepRun()
        self.keeper.button.disabled = True  # until a run has ended with its checkpoint saved
        self.start_button.on_click(lambda _button: self.start())
        self.stop_button.on_click(lambda _button: self.stop())
        self.keeper.button.on_click(lambda _button: self.keep())
        self.widget = widgets.VBox(
            [
                widgets.HTML("<b>Training</b>"),
                widgets.HBox([self.start_button, self.stop_button]),
                self.progress,
                self.status,
                self.plot,
                self.outcome,
                self.keeper.button,
                self.keeper.message,
                self.keeper.output,
            ]
        )
        self.run_folder: Path | None = None  # the last run's out_dir, what Keep zips
        self.result = None
        self.error: str | None = None
        self.thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._last_plot = 0.0

    @property
    def running(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def current_config(self) -> TrainConfig | None:
        if isinstance(self.source, HyperparameterPanel):
            config = self.source.read()
            if config is None:
                self.status.value = error_html(f"fix the settings first: {self.source.error}")
            return config
        if isinstance(self.source, TrainConfig):
            return self.source
        return self.source()

    def start(self) -> bool:
        """Start training in a background thread; False (with the reason shown) if it cannot."""
        if self.running:
            self.status.value = error_html("training is already running: Stop it first")
            return False
        config = self.current_config()
        if config is None:
            return False
        self._stop.clear()
        self.result, self.error, self.outcome.value = None, None, ""
        self.progress.value, self.progress.bar_style = 0.0, ""
        self.start_button.disabled, self.stop_button.disabled = True, False
        self.keeper.clear()
        self.keeper.button.disabled, self.run_folder = True, Path(config.out_dir)
        self.status.value = html.escape(f"Starting: {describe_config(config)}")
        self.thread = threading.Thread(
            target=self._run, args=(config,), name="a3c-training-panel", daemon=True
        )
        self.thread.start()
        return True

    def stop(self) -> None:
        """Ask training to stop: the next progress callback raises KeyboardInterrupt in the
        trainer, which stops and joins its processes and saves the checkpoint."""
        if self.running:
            self._stop.set()
            self.stop_button.disabled = True
            self.status.value = "Stopping: waiting for the workers to finish their rollouts..."

    def keep(self) -> bool:
        """Zip the last run's folder and offer it for download (KeepRun); False with the reason
        shown when there is none, or it still trains (its files change until it stops)."""
        if self.running:
            self.keeper.message.value = error_html("training is still running: Stop it first")
            return False
        if self.run_folder is None:
            self.keeper.message.value = error_html("no run to keep yet: Start one first")
            return False
        return self.keeper.keep(self.run_folder)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until training ends (True) or timeout seconds pass (False)."""
        if self.thread is not None:
            self.thread.join(timeout)
        return not self.running

    def on_metrics(self, result) -> None:
        """The trainer's callback: update progress and the plot; raise KeyboardInterrupt on Stop."""
        if self._stop.is_set() and result.stop_reason is None:
            raise KeyboardInterrupt
        self.status.value = html.escape(progress_text(result))
        self.progress.value = _fraction_done(result)
        now = time.monotonic()
        if result.stop_reason is not None or now - self._last_plot >= PLOT_INTERVAL_S:
            self._last_plot = now
            self.plot.value = learning_curve_png(
                result.history,
                result.config.score_window,
                result.config.env_id,
                game=result.config.game,
            )

    def _run(self, config: TrainConfig) -> None:
        from a3c_course.training.checkpoint import CHECKPOINT_NAME
        from a3c_course.training.files import StorageError
        from a3c_course.training.run_record import WorkerError
        from a3c_course.training.trainer import train

        try:
            self.result = train(config, on_metrics=self.on_metrics, progress=False)
            self.outcome.value = result_html(self.result)
            self.progress.bar_style = "success"
        except WorkerError as error:
            self.result, self.error = error.result, str(error)
            self.outcome.value = error_html(str(error).splitlines()[0]) + (
                f"<pre>{html.escape(str(error))}</pre>"
            )
            self.progress.bar_style = "danger"
        except StorageError as error:  # a full disk, a deleted folder: its one line says it all
            self.error = str(error)
            self.outcome.value = error_html(self.error)
            self.progress.bar_style = "danger"
        except Exception as error:  # shown in the panel: a thread's exception is otherwise lost
            self.error = f"{type(error).__name__}: {error}"
            self.outcome.value = error_html(self.error)
            self.progress.bar_style = "danger"
        finally:
            self.start_button.disabled, self.stop_button.disabled = False, True
            self.keeper.button.disabled = not (self.run_folder / CHECKPOINT_NAME).is_file()


def _fraction_done(result) -> float:
    """The largest fraction of any budget used (steps or minutes); 0 without a budget."""
    config = result.config
    fractions = [0.0]
    if config.max_steps:
        fractions.append(result.steps / config.max_steps)
    if config.max_minutes:
        fractions.append(result.elapsed_s / (60 * config.max_minutes))
    if result.stop_reason is not None:
        return 1.0
    return min(1.0, max(fractions))
