"""`a3c-course doctor` and `a3c-course exercises instructor|check` from the command line."""

from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from a3c_course.cli.main import main

ROOT = Path(__file__).resolve().parents[1]

SOLVED = '''def double(x):
    """Return 2 * x."""
    ### BEGIN SOLUTION
    return 2 * x
    ### END SOLUTION'''
CHECK = 'from a3c_course.lessons.exercises import Case, check_cases\ncheck_cases("9.1", double, [Case("x = 2", (2,), 4)])'


def test_doctor_exit_status_says_all_is_well(capsys):
    assert main(["doctor"]) == 0
    assert "All good" in capsys.readouterr().out


def test_exercises_instructor_writes_the_edition(tmp_path, capsys):
    out = tmp_path / "instructor"
    assert main(["exercises", "instructor", "--out", str(out)]) == 0
    written = sorted(out.glob("*.ipynb"))
    assert [p.name for p in written] == sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
    sources = [cell.source for p in written for cell in nbformat.read(p, as_version=4).cells]
    assert sum("### BEGIN SOLUTION" in source for source in sources) >= 12
    assert not any("YOUR CODE HERE" in source for source in sources)
    assert "wrote" in capsys.readouterr().out


def test_exercises_instructor_with_no_notebooks_is_a_usage_error(tmp_path, capsys):
    assert (
        main(["exercises", "instructor", "--notebooks", str(tmp_path), "--out", str(tmp_path / "s")])
        == 2
    )
    assert "no notebooks" in capsys.readouterr().err


@pytest.mark.slow
def test_exercises_check_reports_and_sets_the_exit_status(tmp_path, capsys):
    solved = tmp_path / "solved.ipynb"
    nbformat.write(new_notebook(cells=[new_code_cell(SOLVED), new_code_cell(CHECK)]), solved)
    assert main(["exercises", "check", str(solved)]) == 0
    assert "[9.1] PASSED" in capsys.readouterr().out

    blank = tmp_path / "blank.ipynb"
    stub = SOLVED.replace("return 2 * x", "raise NotImplementedError")
    nbformat.write(new_notebook(cells=[new_code_cell(stub), new_code_cell(CHECK)]), blank)
    assert main(["exercises", "check", str(blank)]) == 1
    assert "[9.1] NOT ATTEMPTED" in capsys.readouterr().out


def test_exercises_check_on_a_missing_notebook(tmp_path, capsys):
    assert main(["exercises", "check", str(tmp_path / "nope.ipynb")]) == 2
    assert "notebook not found" in capsys.readouterr().err
