"""What the course's site adds to Sphinx and MyST-NB (docs/conf.py loads it as an extension).

- read_notebook, MyST-NB's reader for the notebooks: a widget needs a running kernel, and even its
  saved view needs ipywidgets' JavaScript from a CDN, so each widget output becomes a short note
  followed by the figures its Output widgets held when the notebook was saved (a slider's first
  frame); and a note on running the unit (Colab, or locally) goes under its title and badge.
- The Colab badge is served from docs/_static/, so that every image of the site loads offline.
- A link to a repository file that is not a page (`../benchmarks/README.md#...`) goes to the file
  on GitHub, in the repository and branch that the Colab badges use.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

import nbformat
from docutils import nodes
from sphinx import addnodes

from a3c_course.lessons.colab import COURSE_REF, COURSE_REPOSITORY

ROOT = Path(__file__).resolve().parents[2]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
COLAB_BADGE = "https://colab.research.google.com/assets/colab-badge.svg"
BADGE_LINK = re.compile(r"\]\((https://colab\.research\.google\.com/[^)]*/(notebooks/[^/)]+))\)")

WIDGET_NOTE = "*An interactive widget here: it works when the notebook runs (Colab, JupyterLab).*"
SAVED_NOTE = "*An interactive widget here: it works when the notebook runs; as it was saved:*"
RUN_NOTE = """\
```{{admonition}} Run this unit
:class: tip
This page shows the notebook with its saved outputs: nothing runs here, and its widgets (hints,
sliders, panels) are inert. To run it, [open it in Colab]({colab}) (nothing to install), or on your
machine: in a clone of the repository, `make lab` opens JupyterLab; open `{path}` there (the
README's [Quick start](../index.md#quick-start)).{exercises}
```"""
EXERCISES_NOTE = """ Each exercise is a stub for you to write
(`raise NotImplementedError`), and the cell after it checks your answer."""


def read_notebook(text: str) -> nbformat.NotebookNode:
    """The notebook as the site shows it: widgets replaced by notes, a run note under the title."""
    notebook = nbformat.reads(text, as_version=4)
    models = notebook.metadata.pop("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs = [shown for out in cell.outputs for shown in static_outputs(out, models)]
    if badge := BADGE_LINK.search(notebook.cells[0].source):
        tags = {tag for cell in notebook.cells for tag in cell.metadata.get("tags", [])}
        exercises = EXERCISES_NOTE if any(t.startswith("exercise-") for t in tags) else ""
        note = RUN_NOTE.format(colab=badge[1], path=badge[2], exercises=exercises)
        notebook.cells.insert(1, nbformat.v4.new_markdown_cell(note))
    return notebook


def static_outputs(output, models: dict) -> list:
    view = output.get("data", {}).get(WIDGET_VIEW)
    if view is None:
        return [output]
    saved = saved_outputs(view["model_id"], models)
    note = {"text/markdown": SAVED_NOTE if saved else WIDGET_NOTE}
    return [nbformat.v4.new_output("display_data", data=note), *saved]


def saved_outputs(model_id: str, models: dict) -> list:
    """What the Output widgets in the widget's tree held when saved, in the tree's order."""
    state = models.get(model_id, {}).get("state", {})
    found = [nbformat.from_dict(output) for output in state.get("outputs", [])]
    for child in state.get("children", []):
        found += saved_outputs(child.removeprefix("IPY_MODEL_"), models)
    return found


def local_badges(app, doctree) -> None:
    """Serve the Colab badge from docs/_static/ (before Sphinx collects the page's images)."""
    for image in doctree.findall(nodes.image):
        if image["uri"] == COLAB_BADGE:
            image["uri"] = "/docs/_static/colab-badge.svg"  # srcdir-relative


def link_repository_files(app, doctree) -> None:
    """Point a link to a repository file that is not a page at the file on GitHub."""
    for ref in list(doctree.findall(addnodes.pending_xref)):
        if ref.get("reftype") != "myst" or ref.get("refdomain"):  # "doc": a page of the site
            continue
        target, _, anchor = ref["reftarget"].partition("#")
        path = posixpath.normpath(posixpath.join(posixpath.dirname(ref["refdoc"]), target))
        if path.startswith("..") or not (ROOT / path).is_file():
            continue
        url = f"{COURSE_REPOSITORY}/blob/{COURSE_REF}/{path}" + (f"#{anchor}" if anchor else "")
        ref.replace_self(nodes.reference("", "", *ref.children, refuri=url))


def setup(app):
    app.connect("doctree-read", local_badges, priority=400)  # Sphinx's image collector: 500
    app.connect("doctree-read", link_repository_files)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
