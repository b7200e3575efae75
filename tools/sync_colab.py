"""Point every notebook's setup cells and Colab badge, and the README's badges, at the course's
repository and ref (an author's tool: the learner's package only runs the setup cell).

    python tools/sync_colab.py               # notebooks/ and README.md of this repository
    python tools/sync_colab.py NOTEBOOKS_DIR # that folder's notebooks and the README beside it

The repository and ref come from a3c_course/lessons/colab.py (COURSE_REPOSITORY, COURSE_REF): a fork
sets its address there, a release its tag, then runs this. It prints each file it rewrote (nothing
when all agree); tests/test_colab.py fails while any cell or badge disagrees.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat

from a3c_course.lessons import colab

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
BADGE_LINK = re.compile(r"colab\.research\.google\.com/github/[^/]+/[^/]+/blob/[^/]+/")
SETUP_MARKER = "# Setup: in Google Colab"  # how colab.SETUP_CELL starts, in any version


def badge_target() -> str:
    """Where the Colab badges point: the notebooks of COURSE_REF in the course's repository."""
    return f"colab.research.google.com/github/{colab.GITHUB_PATH}/blob/{colab.COURSE_REF}/"


def sync_notebook(notebook) -> None:
    """Point a notebook's Colab badge and setup cells at COURSE_REPOSITORY and COURSE_REF."""
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            cell.source = BADGE_LINK.sub(badge_target(), cell.source)
        elif cell.source.startswith(SETUP_MARKER):
            cell.source = colab.SETUP_CELL
        elif cell.source.startswith(colab.CLUSTER_MARKER):
            cell.source = colab.CLUSTER_CELL


def sync_setup_cells(notebook_dir: Path) -> list[Path]:
    """Resync every notebook in notebook_dir and the README's badges; return the files changed."""
    notebook_dir = Path(notebook_dir)
    changed = []
    readme = notebook_dir.parent / "README.md"
    if readme.is_file():
        text = readme.read_text()
        synced = BADGE_LINK.sub(badge_target(), text)
        if synced != text:
            readme.write_text(synced)
            changed.append(readme)
    for path in sorted(notebook_dir.glob("*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        before = nbformat.writes(notebook)
        sync_notebook(notebook)
        if nbformat.writes(notebook) != before:
            nbformat.write(notebook, path)
            changed.append(path)
    return changed


def main(folder: str | None = None) -> int:
    notebook_dir = Path(folder) if folder else NOTEBOOKS
    if not notebook_dir.is_dir():
        print(f"no such folder: {notebook_dir}", file=sys.stderr)
        return 2
    changed = sync_setup_cells(notebook_dir)
    for path in changed:
        print(f"updated {path}")
    if not changed:
        print(f"nothing to change: {notebook_dir} and its README already point at {badge_target()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
