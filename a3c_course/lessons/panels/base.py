"""What the three panels share: their look, their games, showing a panel as its widget, and the
"Keep this run" button of the training and gameplay panels."""

from __future__ import annotations

import html
import os
from pathlib import Path
from urllib.parse import quote

import ipywidgets as widgets

GAMES = ("pong", "breakout", "CartPole-v1")
PLAY_MAX_FRAMES = 1800  # the gameplay panel's video shows at most 60 s (the scores count it all)
STYLE = {"description_width": "190px"}
LAYOUT = widgets.Layout(width="520px")


def error_html(message: str) -> str:
    return f'<span style="color:#b00020"><b>Error:</b> {html.escape(message)}</span>'


def ok_html(message: str) -> str:
    return f'<span style="color:#1b5e20">{html.escape(message)}</span>'


class Panel:
    widget: widgets.Widget

    def _ipython_display_(self):
        """A panel shows as its widget. display() works for ipywidgets 7 (Colab's), which has no
        _repr_mimebundle_, and for 8 alike."""
        from IPython.display import display

        display(self.widget)


class KeepRun:
    """The "Keep this run" button: zip the run folder (keep_run.py), copy it to Drive when
    mounted, offer it for download: in Colab through google.colab.files, elsewhere as a link. Only
    Button, HTML and Output, which ipywidgets 7 (Colab's) and 8 share. The download goes into the
    Output widget: Colab's download is JavaScript that display() shows, and JupyterLab resolves a
    link's relative path there (in an HTML widget it would not be)."""

    def __init__(self):
        from a3c_course.lessons.colab import DRIVE_ROOT

        self.drive_root = DRIVE_ROOT  # where Drive is mounted (a test's folder in the tests)
        self.button = widgets.Button(
            description="Keep this run", icon="download",
            tooltip="zip the run's folder and download it: Colab deletes its files with the session",
        )  # fmt: skip
        self.message, self.output = widgets.HTML(), widgets.Output()
        self.kept = None  # the last keep_run.Kept

    def clear(self) -> None:
        self.message.value, self.output.outputs, self.kept = "", (), None

    def keep(self, run_folder: str | os.PathLike) -> bool:
        """Keep the run in run_folder; False with the one-line error shown when it cannot."""
        from a3c_course.lessons.colab import download, in_colab
        from a3c_course.lessons.keep_run import RunFolderError, keep_run
        from a3c_course.training.files import StorageError
        from a3c_course.training.runlock import RunFolderInUse

        self.clear()
        self.button.disabled = True
        self.message.value = html.escape(f"Zipping {run_folder}...")
        try:
            self.kept = keep_run(run_folder, self.drive_root)
        except (RunFolderError, RunFolderInUse, StorageError) as error:
            self.message.value = error_html(str(error))
            return False
        finally:
            self.button.disabled = False
        lines = self.kept.lines(in_colab())
        if in_colab():
            failed = None
            with self.output:  # the download's JavaScript must land in a displayed output
                try:  # inside: in a kernel, Output swallows an exception and shows its traceback
                    download(self.kept.zip)
                except Exception as error:  # said in a line: the zip is kept all the same
                    failed = error
            lines.append(
                "Your browser downloads it now." if failed is None else
                f"The download did not start ({failed}): the zip is in Colab's Files pane."
            )  # fmt: skip
        else:
            self.output.append_display_data(_file_link(self.kept.zip))
        self.message.value = ok_html(lines[0]) + "".join(
            "<br>" + html.escape(line) for line in lines[1:]
        )
        return True


def _file_link(path: Path):
    """A download link to path, relative to the kernel's folder (the notebook's), as Jupyter
    serves it; IPython's FileLink opens the file instead of downloading it."""
    from IPython.display import HTML

    relative = Path(os.path.relpath(path.resolve(), Path.cwd().resolve())).as_posix()
    return HTML(
        f'<a href="{html.escape(quote(relative))}" download="{html.escape(path.name)}" '
        f'target="_blank">Download {html.escape(path.name)}</a>'
    )
