"""The exercise tooling: student edition and the headless report, on a small notebook."""

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from a3c_course.exercises.grading import format_report, grade
from a3c_course.exercises.student import (
    count_solutions,
    strip_solutions,
    student_notebook,
    write_student_edition,
)

SOLUTION = '''def double(x):
    """Return 2 * x."""
    ### BEGIN SOLUTION
    return {body}
    ### END SOLUTION'''

CHECK = """from a3c_course.exercises import Case, check_cases
check_cases("9.1", double, [Case("x = 2", (2,), 4), Case("x = -1.5", (-1.5,), -3.0)])"""


def make_notebook(body="2 * x", extra_cells=()):
    return new_notebook(
        cells=[
            new_markdown_cell("# Tiny"),
            new_code_cell(SOLUTION.format(body=body)),
            new_code_cell(CHECK),
            *extra_cells,
        ]
    )


def test_strip_solutions_keeps_signature_and_indentation():
    stub = strip_solutions(SOLUTION.format(body="2 * x"))
    assert (
        stub
        == 'def double(x):\n    """Return 2 * x."""\n    # YOUR CODE HERE\n    raise NotImplementedError'
    )


def test_strip_solutions_rejects_unbalanced_markers():
    with pytest.raises(ValueError, match="unbalanced"):
        strip_solutions("### BEGIN SOLUTION\nx = 1\n")


def test_student_notebook_clears_outputs_and_keeps_the_instructor_copy():
    instructor = make_notebook()
    instructor.cells[1].outputs = [nbformat.v4.new_output("stream", text="hi")]
    student = student_notebook(instructor)
    assert all(cell.outputs == [] for cell in student.cells if cell.cell_type == "code")
    assert count_solutions(instructor) == 1 and count_solutions(student) == 0
    assert "### BEGIN SOLUTION" in instructor.cells[1].source


def write(notebook, path):
    nbformat.write(notebook, path)
    return path


def test_report_on_solved_blank_and_wrong_notebooks(tmp_path):
    solved = grade(write(make_notebook(), tmp_path / "solved.ipynb"))
    assert [(r.exercise_id, r.status) for r in solved] == [("9.1", "PASSED")]

    blank = grade(write(student_notebook(make_notebook()), tmp_path / "blank.ipynb"))
    assert [(r.exercise_id, r.status) for r in blank] == [("9.1", "NOT ATTEMPTED")]

    wrong = grade(write(make_notebook(body="x + 2"), tmp_path / "wrong.ipynb"))
    assert wrong[0].status == "FAILED" and "x = -1.5" in wrong[0].message
    report = format_report(tmp_path / "wrong.ipynb", wrong)
    assert "[9.1] FAILED" in report and report.endswith("0 of 1 exercises passed.")


def test_a_check_cell_that_cannot_run_is_reported(tmp_path):
    notebook = make_notebook()
    notebook.cells[1].source = "raise RuntimeError('boom')"  # double() never gets defined
    results = grade(write(notebook, tmp_path / "broken.ipynb"))
    assert results[0].status == "NOT ATTEMPTED" and "NameError" in results[0].message


def test_write_student_edition(tmp_path):
    source = tmp_path / "instructor"
    source.mkdir()
    write(make_notebook(), source / "a.ipynb")
    [written] = write_student_edition(source, tmp_path / "student")
    assert count_solutions(nbformat.read(written, as_version=4)) == 0
    with pytest.raises(ValueError, match="instructor folder"):
        write_student_edition(source, source)
