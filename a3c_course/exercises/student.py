"""The student edition: every solution replaced by `raise NotImplementedError`, outputs cleared.

Solutions sit between `### BEGIN SOLUTION` and `### END SOLUTION` (nbgrader's markers, so instructors
can also use nbgrader). The edition is generated from the instructor notebooks on demand, so the two
can never drift apart.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
SOLUTION_BLOCK = re.compile(
    rf"^(?P<indent>[ \t]*){re.escape(BEGIN)}[^\n]*\n.*?^[ \t]*{re.escape(END)}[^\n]*$",
    re.MULTILINE | re.DOTALL,
)
STUB = "{indent}# YOUR CODE HERE\n{indent}raise NotImplementedError"


def strip_solutions(source: str) -> str:
    """Replace each solution block by a stub at the block's indentation."""
    if source.count(BEGIN) != source.count(END):
        raise ValueError(f"unbalanced solution markers in cell:\n{source}")
    return SOLUTION_BLOCK.sub(lambda match: STUB.format(indent=match["indent"]), source)


def count_solutions(notebook) -> int:
    return sum(cell.source.count(BEGIN) for cell in notebook.cells if cell.cell_type == "code")


def student_notebook(notebook):
    """A copy of an instructor notebook with solutions stubbed and every output cleared."""
    student = nbformat.from_dict(notebook)
    for cell in student.cells:
        if cell.cell_type == "code":
            cell.source = strip_solutions(cell.source)
            cell.outputs, cell.execution_count = [], None
    return student


def write_student_edition(source_dir: Path, out_dir: Path) -> list[Path]:
    """Write the student edition of every notebook in source_dir into out_dir; return the paths."""
    source_dir, out_dir = Path(source_dir), Path(out_dir)
    notebooks = sorted(source_dir.glob("*.ipynb"))
    if not notebooks:
        raise FileNotFoundError(f"no notebooks in {source_dir}")
    if out_dir.resolve() == source_dir.resolve():
        raise ValueError(f"out_dir {out_dir} is the instructor folder; choose another")
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for path in notebooks:
        target = out_dir / path.name
        nbformat.write(student_notebook(nbformat.read(path, as_version=4)), target)
        written.append(target)
    return written
