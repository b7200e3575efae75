"""The exercise tooling: stubs, solutions, the instructor edition and the headless report."""

import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from a3c_course.lessons.exercises import solutions
from a3c_course.lessons.exercises.editions import (
    instructor_notebook,
    stubs_out_of_sync,
    write_instructor_edition,
)
from a3c_course.lessons.exercises.grading import format_report, grade
from a3c_course.lessons.exercises.solutions import (
    solution,
    solution_source,
    strip_solutions,
    stub_source,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from sync_stubs import sync_stubs  # noqa: E402  (tools/sync_stubs.py, the authors' tool)

SOLUTION = '''def double(x):
    """Return 2 * x."""
    ### BEGIN SOLUTION
    return {body}
    ### END SOLUTION'''

CHECK = """from a3c_course.lessons.exercises import Case, check_cases
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


def test_solution_shows_the_code_without_markers(capsys):
    solution("2.1")
    out = capsys.readouterr().out
    assert "One solution to exercise 2.1" in out and "log_softmax" in out
    assert "BEGIN SOLUTION" not in out and "NotImplementedError" not in out


def test_an_unknown_exercise_is_named_with_the_known_ones():
    with pytest.raises(ValueError, match=r"exercise_id: no exercise '9\.9'.*2\.1"):
        solution("9.9")


def test_stub_is_the_solution_with_its_body_removed():
    stub = stub_source("2.1")
    assert stub.startswith("def entropy_from_logits(logits):") and '"""H(pi)' in stub
    assert stub.rstrip().endswith("raise NotImplementedError") and "log_softmax" not in stub
    assert "### BEGIN SOLUTION" in solution_source("2.1")


def tagged_notebook(source: str):
    cell = new_code_cell(source, metadata={"tags": ["exercise-2.1"]})
    cell.outputs = [nbformat.v4.new_output("stream", text="NOT ATTEMPTED")]
    return new_notebook(cells=[new_markdown_cell("# Unit 2"), cell, new_code_cell("x = 1")])


def test_instructor_notebook_fills_in_the_solution_and_clears_outputs():
    learner = tagged_notebook(stub_source("2.1").rstrip("\n"))
    instructor = instructor_notebook(learner)
    assert instructor.cells[1].source == solution_source("2.1").rstrip("\n")
    assert all(cell.outputs == [] for cell in instructor.cells if cell.cell_type == "code")
    assert learner.cells[1].source.endswith("raise NotImplementedError")  # the copy is untouched


def test_stubs_out_of_sync_are_found_and_synced(tmp_path):
    path = tmp_path / "unit2.ipynb"
    nbformat.write(tagged_notebook("def entropy_from_logits(logits):\n    return 0"), path)
    assert stubs_out_of_sync(nbformat.read(path, as_version=4)) == ["2.1"]
    assert sync_stubs(path) == ["2.1"]
    assert stubs_out_of_sync(nbformat.read(path, as_version=4)) == []


def test_a_tag_naming_no_exercise_is_an_error():
    notebook = new_notebook(cells=[new_code_cell("x = 1", metadata={"tags": ["exercise-7.7"]})])
    with pytest.raises(ValueError, match="exercise-7.7"):
        stubs_out_of_sync(notebook)


def write(notebook, path):
    nbformat.write(notebook, path)
    return path


@pytest.mark.slow
def test_report_on_solved_blank_and_wrong_notebooks(tmp_path):
    solved = grade(write(make_notebook(), tmp_path / "solved.ipynb"))
    assert [(r.exercise_id, r.status) for r in solved] == [("9.1", "PASSED")]

    blank_notebook = make_notebook()
    blank_notebook.cells[1].source = strip_solutions(blank_notebook.cells[1].source)
    blank = grade(write(blank_notebook, tmp_path / "blank.ipynb"))
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


def test_write_instructor_edition(tmp_path):
    source = tmp_path / "learners"
    source.mkdir()
    write(tagged_notebook(stub_source("2.1").rstrip("\n")), source / "a.ipynb")
    [written] = write_instructor_edition(source, tmp_path / "instructor")
    assert "log_softmax" in nbformat.read(written, as_version=4).cells[1].source
    with pytest.raises(ValueError, match="learners' folder"):
        write_instructor_edition(source, source)
    assert solutions.EXERCISES["2.1"] == ("unit2", "entropy_from_logits")
