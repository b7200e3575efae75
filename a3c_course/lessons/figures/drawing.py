"""Boxes and arrows for the course's diagrams (Unit 4's workers, Unit 5's parameter server)."""

from __future__ import annotations

from matplotlib.patches import FancyArrowPatch, FancyBboxPatch


def box(ax, corner, size, text, colour, fontsize=9, **patch):
    """A rounded box at corner (x, y) of size (w, h), with text centred in it."""
    (x, y), (w, h) = corner, size
    style = {"boxstyle": "round,pad=0.06", "fc": colour, "ec": "0.3", **patch}
    ax.add_patch(FancyBboxPatch(corner, w, h, **style))
    ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=fontsize)


def arrow(ax, start, end, colour):
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=12, color=colour))
