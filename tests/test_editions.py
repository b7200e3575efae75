"""The learners' notebooks hold stubs, the instructor edition holds solutions that pass.

The committed notebooks are what a learner opens (locally and in Colab): every exercise is a stub
generated from its solution, and its check says "NOT ATTEMPTED" (nbval proves the committed
verdicts repeat). Here: every solution passes its own check, and the instructor edition runs from
the top with every exercise PASSED and no error, through the last cell that uses a solution (the
cells after it are the learner's edition's, which nbval runs).
"""

import re
from pathlib import Path

import nbformat
import pytest

from a3c_course.lessons.exercises import unit1, unit2, unit3, unit4, unit5
from a3c_course.lessons.exercises.core import NOT_ATTEMPTED, PASSED
from a3c_course.lessons.exercises.editions import (
    exercise_cells,
    instructor_notebook,
    stubs_out_of_sync,
)
from a3c_course.lessons.exercises.grading import is_check_cell, results_of, run_notebook
from a3c_course.lessons.exercises.solutions import EXERCISES, solution_object

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("[0-9]*.ipynb"))
CHECKS = {
    "1.1": unit1.check_preprocess_frame,
    "1.2": unit1.check_skip_frames,
    "1.3": unit1.check_running_normalizer,
    "2.1": unit2.check_entropy_from_logits,
    "2.2": unit2.check_action_probabilities,
    "2.3": unit2.check_lstm_cell,
    "3.1": unit3.check_discounted_returns,
    "3.2": unit3.check_gae_one_env,
    "3.3": unit3.check_truncation_fix,
    "4.1": unit4.check_update,
    "4.2": unit4.check_fixed_update,
    "4.3": unit4.check_shared_adam_state,
    "5.1": unit5.check_parameter_server,
    "5.2": unit5.check_workers_one_server_feeds,
}


def test_every_exercise_has_a_check():
    assert set(CHECKS) == set(EXERCISES)


@pytest.mark.parametrize("exercise_id", sorted(EXERCISES))
def test_every_solution_passes_its_check(exercise_id, capsys):
    assert CHECKS[exercise_id](solution_object(exercise_id)), capsys.readouterr().out
    assert capsys.readouterr().out.startswith(f"{PASSED} [{exercise_id}]")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_the_learners_notebook_holds_stubs_in_sync_each_with_its_check(path):
    notebook = nbformat.read(path, as_version=4)
    cells = exercise_cells(notebook)
    assert len(cells) >= 2, f"{path.name}: fewer than two exercises"
    assert stubs_out_of_sync(notebook) == [], f"run `python tools/sync_stubs.py notebooks/{path.name}`"
    assert not any("### BEGIN SOLUTION" in cell.source for cell in notebook.cells)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    for exercise_id, cell in cells.items():
        following = code[code.index(cell) + 1 : code.index(cell) + 3]
        assert any(is_check_cell(later) for later in following), f"no check after {exercise_id}"
    verdicts = results_of(notebook)  # the committed outputs, which nbval shows to repeat
    assert verdicts and all(result.status == NOT_ATTEMPTED for result in verdicts), verdicts


def through_the_last_use_of_a_solution(notebook):
    """The notebook up to the last code cell that names what an exercise defines (its check is one;
    a name in a comment is not a use)."""
    names = {
        name
        for cell in exercise_cells(notebook).values()
        for name in re.findall(r"^(?:def|class) (\w+)", cell.source, flags=re.MULTILINE)
    }
    assert names, "the exercises define nothing"
    named = re.compile(rf"\b({'|'.join(names)})\b")
    uses = [
        i
        for i, c in enumerate(notebook.cells)
        if c.cell_type == "code" and named.search(re.sub(r"#.*", "", c.source))
    ]
    notebook.cells = notebook.cells[: uses[-1] + 1]
    return notebook


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_the_instructor_edition_runs_with_every_exercise_passed(path, tmp_path):
    instructor = tmp_path / path.name
    edition = instructor_notebook(nbformat.read(path, as_version=4))
    nbformat.write(through_the_last_use_of_a_solution(edition), instructor)
    executed = run_notebook(instructor, timeout=300)  # per cell: a hang names its cell
    errors = [
        f"{output['ename']}: {output['evalue']}"
        for cell in executed.cells
        for output in cell.get("outputs", [])
        if output.get("output_type") == "error"
    ]
    assert errors == []
    results = results_of(executed)
    assert len(results) == len(exercise_cells(executed)), "a check was cut off"
    assert all(result.status == PASSED for result in results), results
