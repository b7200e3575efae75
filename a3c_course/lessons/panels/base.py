"""What the three panels share: their look, their games, and showing a panel as its widget."""

from __future__ import annotations

import html

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
