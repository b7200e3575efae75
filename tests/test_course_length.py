"""A four-hour course: each unit fits in an hour, and each cell holds one idea.

tools/course_length.py says how the estimate is made (prose at 150 words a minute, code at 20 lines
a minute, 10 minutes an exercise, plus the cells' recorded run time); optional sections are
counted apart.
"""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import course_length  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
UNITS = [path for path in NOTEBOOKS if path.name[0].isdigit()]


@pytest.mark.parametrize("path", UNITS, ids=lambda p: p.name)
def test_each_unit_fits_in_an_hour(path):
    core, _ = course_length.measure(path)
    assert core.minutes <= course_length.MAX_UNIT_MINUTES, (
        f"{path.name}: {core.minutes:.0f} minutes ({core.prose_words} words, {core.code_lines} "
        f"code lines, {core.exercises} exercises, {core.run_seconds:.0f} s of run time)"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_each_cell_holds_one_idea(path):
    assert course_length.oversized_cells(path) == []


def test_the_estimate_counts_what_it_says(tmp_path):
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

    cells = [
        new_markdown_cell("# Unit\n" + "word " * 299),
        new_code_cell("a = 1\n\nb = 2", metadata={"tags": ["exercise-2.1"]}),
        new_markdown_cell("## Optional: more\n" + "word " * 210),
        new_code_cell("c = 3"),
        new_code_cell("panel", metadata={"wait_minutes": 2}),
        new_markdown_cell("## Back on the path"),
    ]
    path = tmp_path / "unit.ipynb"
    nbformat.write(new_notebook(cells=cells), path)
    core, optional = course_length.measure(path)
    assert (core.prose_words, core.code_lines, core.exercises) == (300 + 4, 2, 1)
    assert (optional.prose_words, optional.code_lines) == (212, 2)
    assert core.minutes == pytest.approx(304 / 150 + 2 / 20 + 10)
    assert optional.run_seconds == 120
    assert [p.split(" ")[1] for p in course_length.oversized_cells(path)] == ["1", "3"]
