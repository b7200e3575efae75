"""The two editions of the notebooks: the learner's (committed) and the instructor's (generated).

The notebooks in `notebooks/` are the learner's edition: each exercise cell, tagged
`exercise-<id>` (e.g. `exercise-2.1`), holds the stub of the solution kept in
`a3c_course.lessons.exercises.solutions`. The instructor edition is the same notebooks with every stub
replaced by its solution, outputs cleared: `a3c-course exercises instructor --out instructor`.
Solutions sit between nbgrader's markers (`### BEGIN SOLUTION` / `### END SOLUTION`), so
instructors can also grade with nbgrader.
"""

from __future__ import annotations

from pathlib import Path

import nbformat

from a3c_course.lessons.exercises.solutions import EXERCISES, solution_source, stub_source

TAG_PREFIX = "exercise-"


def exercise_id_of(cell) -> str | None:
    """The exercise a code cell holds (from its `exercise-<id>` tag), or None."""
    if cell.cell_type != "code":
        return None
    for tag in cell.get("metadata", {}).get("tags", []):
        if tag.startswith(TAG_PREFIX):
            exercise_id = tag[len(TAG_PREFIX) :]
            if exercise_id not in EXERCISES:
                raise ValueError(
                    f"cell tag {tag!r}: no such exercise (known: {', '.join(EXERCISES)})"
                )
            return exercise_id
    return None


def exercise_cells(notebook) -> dict[str, object]:
    """Exercise id -> its cell, in the notebook's order."""
    return {eid: cell for cell in notebook.cells if (eid := exercise_id_of(cell)) is not None}


def stubs_out_of_sync(notebook) -> list[str]:
    """The exercise ids whose cell is not exactly the stub of its solution (tests/test_editions.py
    checks the notebooks with it; the authors' tools/sync_stubs.py rewrites them)."""
    return [
        eid
        for eid, cell in exercise_cells(notebook).items()
        if cell.source != stub_source(eid).rstrip("\n")
    ]


def instructor_notebook(notebook):
    """A copy with each exercise's solution in place of its stub and every output cleared."""
    instructor = nbformat.from_dict(notebook)
    for cell in instructor.cells:
        if cell.cell_type == "code":
            eid = exercise_id_of(cell)
            if eid is not None:
                cell.source = solution_source(eid).rstrip("\n")
            cell.outputs, cell.execution_count = [], None
    return instructor


def write_instructor_edition(source_dir: Path, out_dir: Path) -> list[Path]:
    """Write the instructor edition of every notebook in source_dir into out_dir; return the paths."""
    source_dir, out_dir = Path(source_dir), Path(out_dir)
    notebooks = sorted(source_dir.glob("*.ipynb"))
    if not notebooks:
        raise FileNotFoundError(f"no notebooks in {source_dir}")
    if out_dir.resolve() == source_dir.resolve():
        raise ValueError(f"out_dir {out_dir} is the learners' folder; choose another")
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for path in notebooks:
        target = out_dir / path.name
        nbformat.write(instructor_notebook(nbformat.read(path, as_version=4)), target)
        written.append(target)
    return written
