"""The gameplay panel: pick a game and a checkpoint (or the shipped agent, or random play), watch it
play, score it on whole games beside the shipped agent's card, and keep the checkpoint's run (zip
its folder for download: a Colab session's files go with the session).
"""

from __future__ import annotations

import html
import os
import tempfile
from pathlib import Path

import ipywidgets as widgets

from a3c_course.a3c.envs import STICKY_ACTIONS
from a3c_course.lessons.panels.base import (
    GAMES,
    LAYOUT,
    PLAY_MAX_FRAMES,
    STYLE,
    KeepRun,
    Panel,
    error_html,
)
from a3c_course.training.run_record import SNAPSHOTS_NAME

PRETRAINED = "pretrained"  # in the checkpoint box: the course's shipped agent of the game
EVAL_GAMES = 10  # Evaluate plays this many whole games, as the shipped agents' cards do


def find_checkpoints(root: str | os.PathLike = "runs") -> list[str]:
    """Checkpoint files under root (runs/<game>/checkpoint.pt), newest first."""
    root = Path(root)
    if not root.is_dir():
        return []
    found = sorted(root.rglob("checkpoint.pt"), key=lambda p: p.stat().st_mtime, reverse=True)
    return [str(p) for p in found]


def comparison_html(who: str, evaluation, game: str, sticky: float) -> str:
    """The evaluation's scores, and beside them the shipped agent's, from its card (when the
    game has one), saying when the two were measured on different games (sticky actions)."""
    from a3c_course.lessons import pretrained

    lines = [
        f"{who}: mean {evaluation.mean:+.1f} (min {evaluation.min:+g}, max {evaluation.max:+g}) "
        f"over {len(evaluation.scores)} whole games, sticky actions {sticky:g}."
    ]
    if game.lower() in pretrained.available():
        card = pretrained.card(game)
        theirs, card_sticky = pretrained.held_out(card), pretrained.card_sticky_actions(card)
        lines.append(
            f"The course's shipped agent, from its card: mean {theirs['mean']:+.1f} over "
            f"{theirs['episodes']} held-out games (none used to train or choose it), sticky "
            f"actions {card_sticky:g}."
        )
        if card_sticky != sticky and who != PRETRAINED:
            lines.append(
                "Not the same game (sticky actions differ): to compare on yours, put "
                f"'{PRETRAINED}' in the checkpoint box and press Evaluate."
            )
    return "<br>".join(html.escape(line) for line in lines)


class GameplayPanel(Panel):
    """Pick a game and a checkpoint (empty: random play; 'pretrained': the course's agent),
    episodes, greedy or sampled, sticky actions; Play records the episodes with a score caption
    and embeds the video, with each episode's score; Evaluate plays EVAL_GAMES whole games
    without video and shows their mean beside the shipped agent's."""

    def __init__(
        self,
        game: str = "pong",
        checkpoint: str | os.PathLike | None = None,
        *,
        runs: str | os.PathLike = "runs",
        games: tuple[str, ...] = GAMES,
        max_steps: int = 1000,
        video_dir: str | os.PathLike | None = None,
        eval_games: int = EVAL_GAMES,
    ):
        from a3c_course.lessons import pretrained

        games = games if game in games else (game, *games)
        self.game = widgets.Dropdown(
            options=list(games), value=game, description="game", style=STYLE, layout=LAYOUT
        )
        shipped = [PRETRAINED] if game.lower() in pretrained.available() else []
        self.checkpoint = widgets.Combobox(
            value="" if checkpoint is None else str(checkpoint),
            options=[*find_checkpoints(runs), *shipped],
            placeholder=f"runs/pong/checkpoint.pt, or {PRETRAINED} (empty: random play)",
            description="checkpoint", ensure_option=False, style=STYLE, layout=LAYOUT,
        )  # fmt: skip
        self.episodes = widgets.IntSlider(
            value=1, min=1, max=5, description="episodes", style=STYLE, layout=LAYOUT
        )
        self.policy = widgets.ToggleButtons(
            options=["greedy", "sampled"], value="greedy", description="actions", style=STYLE
        )
        self.sticky = widgets.FloatSlider(
            value=STICKY_ACTIONS, min=0.0, max=0.5, step=0.05,
            description="sticky actions (Atari)", style=STYLE, layout=LAYOUT,
        )  # fmt: skip
        self.max_steps = widgets.IntSlider(
            value=max_steps, min=50, max=max(5000, max_steps), step=50,
            description="steps per episode (cap)", style=STYLE, layout=LAYOUT,
        )  # fmt: skip
        self.eval_games = eval_games
        self.play_button = widgets.Button(description="Play", button_style="primary", icon="play")
        self.evaluate_button = widgets.Button(
            description="Evaluate", icon="check", tooltip=f"play {eval_games} whole games, no video"
        )
        self.message, self.video, self.evaluation = widgets.HTML(), widgets.HTML(), widgets.HTML()
        self.keeper = KeepRun()
        self.play_button.on_click(lambda _button: self.play())
        self.evaluate_button.on_click(lambda _button: self.evaluate())
        self.keeper.button.on_click(lambda _button: self.keep())
        self.video_dir = (
            Path(video_dir) if video_dir else Path(tempfile.mkdtemp(prefix="a3c-play-"))
        )
        self.scores: list[float] = []
        self.path: Path | None = None
        self.result = None  # the last Evaluation
        self.widget = widgets.VBox(
            [
                widgets.HTML("<b>Watch it play</b>"),
                *(self.game, self.checkpoint, self.episodes, self.policy, self.sticky),
                self.max_steps,
                widgets.HBox([self.play_button, self.evaluate_button, self.keeper.button]),
                *(self.keeper.message, self.keeper.output),
                *(self.message, self.video, self.evaluation),
            ]
        )

    def _player(self):
        """(model or None for random play, game, who): the network the checkpoint box names."""
        from a3c_course.lessons import pretrained
        from a3c_course.lessons.play import load_player

        text = self.checkpoint.value.strip()
        source = pretrained.checkpoint(self.game.value) if text == PRETRAINED else text or None
        model, game = load_player(source, self.game.value)
        return model, game, text or "random play"

    def play(self) -> bool:
        """Record and show the video; False with the error in place when it cannot."""
        from a3c_course.lessons.play import play_episodes
        from a3c_course.lessons.video import captioned_frames, show_video, write_video
        from a3c_course.training.checkpoint import CheckpointError

        self.play_button.disabled = True
        self.message.value = "Playing..."
        try:
            model, game, who = self._player()
            recorded = play_episodes(
                game, model, self.episodes.value, greedy=self.policy.value == "greedy",
                max_steps=min(self.max_steps.value, PLAY_MAX_FRAMES),
                sticky_actions=self.sticky.value,
            )  # fmt: skip
            frames = captioned_frames(recorded, max_frames=PLAY_MAX_FRAMES)
            name = f"{Path(game).name.replace('/', '_')}-play.mp4"
            self.path = write_video(frames, self.video_dir / name)
        except (CheckpointError, ValueError, OSError) as error:
            self.scores, self.video.value = [], ""
            self.message.value = error_html(str(error))
            return False
        finally:
            self.play_button.disabled = False
        self.scores = [e.score for e in recorded]
        lines = [
            f"episode {k}: score {e.score:g} in {e.length} steps"
            + ("" if e.ended else " (cut at the cap)")
            for k, e in enumerate(recorded, 1)
        ]
        self.message.value = (
            f"{html.escape(who)} on {html.escape(game)}, {self.policy.value} actions:<br>"
            + "<br>".join(html.escape(line) for line in lines)
        )
        self.video.value = show_video(self.path, width=400)._repr_html_()
        return True

    def evaluate(self) -> bool:
        """Play eval_games whole games (no video), show their scores beside the shipped agent's;
        False with the error in place when it cannot."""
        from a3c_course.training.checkpoint import CheckpointError
        from a3c_course.training.evaluate import evaluate

        self.evaluate_button.disabled = True
        self.evaluation.value = f"Evaluating: {self.eval_games} whole games..."
        try:
            model, game, who = self._player()
            if model is None:
                raise ValueError("Evaluate needs a checkpoint (or 'pretrained'), not random play")
            self.result = evaluate(
                model, game, self.eval_games, greedy=self.policy.value == "greedy",
                sticky_actions=self.sticky.value,
            )  # fmt: skip
        except (CheckpointError, ValueError, OSError) as error:
            self.result, self.evaluation.value = None, error_html(str(error))
            return False
        finally:
            self.evaluate_button.disabled = False
        self.evaluation.value = comparison_html(who, self.result, game, self.sticky.value)
        return True

    def run_folder(self) -> Path | None:
        """The folder of the run whose checkpoint the box names (a snapshot's: its run's); None
        for random play and the shipped agent, which are no run of the learner's."""
        text = self.checkpoint.value.strip()
        if not text or text == PRETRAINED:
            return None
        path = Path(text)
        folder = path if path.is_dir() else path.parent
        return folder.parent if folder.name == SNAPSHOTS_NAME else folder

    def keep(self) -> bool:
        """Zip the checkpoint's run folder and offer it for download (KeepRun); False with the
        reason shown when it cannot."""
        folder = self.run_folder()
        if folder is None:
            self.keeper.clear()
            self.keeper.message.value = error_html(
                "Keep this run needs the checkpoint of a run of yours in the checkpoint box "
                "(e.g. runs/pong/checkpoint.pt)"
            )
            return False
        return self.keeper.keep(folder)
