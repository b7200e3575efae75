"""The one setup cell every notebook opens with.

In Google Colab it installs the course from its repository (keeping Colab's own torch, which the
package's loose ranges accept) and turns on Colab's widget manager, which ipywidgets 8 needs there.
Anywhere else it does nothing and prints nothing, so nbval and JupyterLab see no output.

A fork changes COURSE_REPOSITORY here and runs `python -m a3c_course.colab` to rewrite the cells
and the Colab badges (notebooks and README); tests/test_colab.py checks that they all match.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat

COURSE_REPOSITORY = "https://github.com/a3c-course/a3c-course"
INSTALL_SPEC = f"a3c-course @ git+{COURSE_REPOSITORY}"
GITHUB_PATH = COURSE_REPOSITORY.removeprefix("https://github.com/")
BADGE_LINK = re.compile(r"colab\.research\.google\.com/github/[^/]+/[^/]+/")
SETUP_MARKER = "# Setup: in Google Colab"

SETUP_CELL = f"""\
# Setup: in Google Colab this installs the course (about a minute); elsewhere it does nothing.
import sys

if "google.colab" in sys.modules:
    from google.colab import output

    output.enable_custom_widget_manager()  # ipywidgets 8 needs Colab's custom widget manager
    %pip install --quiet "{INSTALL_SPEC}\""""


def sync_notebook(notebook) -> None:
    """Point a notebook's Colab badge and setup cell at COURSE_REPOSITORY."""
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            cell.source = BADGE_LINK.sub(
                f"colab.research.google.com/github/{GITHUB_PATH}/", cell.source
            )
        elif cell.source.startswith(SETUP_MARKER):
            cell.source = SETUP_CELL


def sync_setup_cells(notebook_dir: Path) -> list[Path]:
    """Resync every notebook in notebook_dir and the README's badges; return the files changed."""
    changed = []
    readme = Path(notebook_dir).parent / "README.md"
    if readme.is_file():
        text = readme.read_text()
        synced = BADGE_LINK.sub(f"colab.research.google.com/github/{GITHUB_PATH}/", text)
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


if __name__ == "__main__":
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("notebooks")
    for path in sync_setup_cells(folder):
        print(f"updated {path}")
