"""The student edition of every course notebook: stubs everywhere, and it still runs top to bottom.

The instructor notebooks' solutions are checked by nbval (their committed "PASSED" verdicts must
repeat). Here each notebook's student edition is executed headless: every exercise must report
"NOT ATTEMPTED", and the only errors allowed are the stubs' NotImplementedError.
"""

from pathlib import Path

import nbformat
import pytest

from a3c_course.exercises.core import NOT_ATTEMPTED
from a3c_course.exercises.grading import results_of, run_notebook
from a3c_course.exercises.student import BEGIN, count_solutions, student_notebook

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("[0-9]*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_unit_has_exercises_with_solutions_and_checks(path):
    notebook = nbformat.read(path, as_version=4)
    assert count_solutions(notebook) >= 2, f"{path.name}: fewer than two exercises"
    sources = [cell.source for cell in notebook.cells if cell.cell_type == "code"]
    for i, source in enumerate(sources):
        if BEGIN in source:  # the next code cell that calls a check grades it
            assert any("check_" in later for later in sources[i + 1 : i + 3]), (
                f"no check after:\n{source}"
            )


@pytest.mark.timeout(900)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_student_edition_runs_with_only_the_stubs_failing(path, tmp_path):
    student = tmp_path / path.name
    nbformat.write(student_notebook(nbformat.read(path, as_version=4)), student)
    executed = run_notebook(student, timeout=300)  # per cell: a hang names its cell
    errors = [
        output
        for cell in executed.cells
        for output in cell.get("outputs", [])
        if output.get("output_type") == "error"
    ]
    assert all(error["ename"] == "NotImplementedError" for error in errors), [
        f"{e['ename']}: {e['evalue']}" for e in errors
    ]
    results = results_of(executed)
    assert results and all(result.status == NOT_ATTEMPTED for result in results), results
