"""`a3c-course exercises check NOTEBOOK`: run a learner's notebook headless, report each exercise.

Every check prints one verdict line (see core.py): "PASSED [1.2] ...", "FAILED [1.2] ...",
"NOT ATTEMPTED [1.2] ...". The report lists each exercise once; an exercise whose check cell never
printed no verdict (it raised, e.g. after an earlier error) counts as not attempted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from a3c_course.lessons.exercises.core import FAILED, NOT_ATTEMPTED, PASSED

VERDICT = re.compile(rf"^({PASSED}|{FAILED}|{NOT_ATTEMPTED}) \[(?P<id>[^\]]+)\] (?P<message>.*)$")
CHECK_CALL = re.compile(r"check_\w+\(")


@dataclass
class ExerciseResult:
    exercise_id: str
    status: str  # PASSED, FAILED or NOT_ATTEMPTED
    message: str


def _stream_text(cell) -> str:
    return "".join(
        output.get("text", "")
        for output in cell.get("outputs", [])
        if output.get("output_type") == "stream"
    )


def _error(cell) -> str | None:
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            return f"{output['ename']}: {output['evalue']}"
    return None


def is_check_cell(cell) -> bool:
    return (
        cell.cell_type == "code"
        and bool(CHECK_CALL.search(cell.source))
        and "def check_" not in cell.source
    )


def results_of(notebook) -> list[ExerciseResult]:
    """One result per verdict line of the executed notebook's check cells, in order.

    A check cell that printed no verdict (it raised, e.g. because an earlier cell failed) is
    reported as not attempted, with the error.
    """
    results = []
    for number, cell in enumerate(notebook.cells, start=1):
        if not is_check_cell(cell):
            continue
        lines = _stream_text(cell).splitlines()
        found = False
        for i, line in enumerate(lines):
            match = VERDICT.match(line)
            if match:
                found = True
                detail = [
                    match["message"],
                    *[rest for rest in lines[i + 1 :] if rest.startswith("  ")],
                ]
                results.append(ExerciseResult(match["id"], match[1], "\n".join(detail)))
        if not found:
            reason = _error(cell) or "it printed no verdict"
            results.append(
                ExerciseResult(
                    f"cell {number}", NOT_ATTEMPTED, f"the check cell did not run: {reason}"
                )
            )
    return results


def run_notebook(path: Path, timeout: int = 1200):
    """Execute a notebook top to bottom, errors allowed, in the notebook's folder."""
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=timeout,
        allow_errors=True,
        resources={"metadata": {"path": str(Path(path).parent)}},
    )
    client.execute()
    return notebook


def grade(path: Path, timeout: int = 1200) -> list[ExerciseResult]:
    """Run the notebook headless and return one result per exercise, in the notebook's order."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"notebook not found: {path}")
    return results_of(run_notebook(path, timeout))


def format_report(path: Path, results: list[ExerciseResult]) -> str:
    lines = [f"Exercises in {Path(path).name}:"]
    for result in results:
        lines.append(
            f"  [{result.exercise_id}] {result.status:<13} {result.message.splitlines()[0]}"
        )
    passed = sum(result.status == PASSED for result in results)
    lines.append(f"{passed} of {len(results)} exercises passed.")
    return "\n".join(lines)
