"""Rewrite the notebooks' exercise cells as the stubs of their solutions (an author's tool).

    python tools/sync_stubs.py notebooks/02_actor_critic.ipynb ...   # the notebooks named
    python tools/sync_stubs.py                                       # every unit's notebook

Each exercise cell (tagged `exercise-<id>`) becomes the stub of its solution in
a3c_course.lessons.exercises.solutions: the solution with its body between the nbgrader markers
removed. Edit a solution there, then run this; tests/test_editions.py fails while a stub disagrees
(a3c_course.lessons.exercises.editions.stubs_out_of_sync). Outputs are kept: rerun the notebook
afterwards if an exercise's check prints something new.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

from a3c_course.lessons.exercises.editions import exercise_cells, stubs_out_of_sync
from a3c_course.lessons.exercises.solutions import stub_source

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def sync_stubs(path: Path) -> list[str]:
    """Rewrite the notebook's exercise cells as the stubs of their solutions; return the ids of the
    exercises whose cell changed (the file is written only if one did)."""
    notebook = nbformat.read(path, as_version=4)
    changed = stubs_out_of_sync(notebook)
    for eid, cell in exercise_cells(notebook).items():
        cell.source = stub_source(eid).rstrip("\n")
    if changed:
        nbformat.write(notebook, path)
    return changed


def main(*paths: str) -> int:
    notebooks = [Path(p) for p in paths] or sorted(NOTEBOOKS.glob("[0-9]*.ipynb"))
    for path in notebooks:
        changed = sync_stubs(path)
        print(f"{path}: {'rewrote ' + ', '.join(changed) if changed else 'in sync'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
