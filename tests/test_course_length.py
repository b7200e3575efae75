"""The stated times are newcomer reads, the estimate stays near them, and each cell holds one idea.

The times are measured by newcomer reads (tools/newcomer_read.md; the figures in
tools/newcomer_reads.json); tools/course_length.py's estimate is calibrated on them and must stay
within 20% of each unit's final reads: a notebook that grows after its read fails here until it is
read again; and each unit's core, by its reads, within the hour.
"""

import json
import math
import re
import statistics
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import course_length  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
UNITS = [path for path in NOTEBOOKS if path.name[0].isdigit()]
CORE_UNITS = [path for path in UNITS if path.name[:2] in {"01", "02", "03", "04"}]
READS = course_length.reads()
READ = [path for path in NOTEBOOKS if path.name in READS]  # Units 1-5 and the appendix
STATED = re.compile(r"\*\*Time:\*\* about (\d+) minutes")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_each_cell_holds_one_idea(path):
    assert course_length.oversized_cells(path) == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_a_heading_starts_its_cell(path):
    """One section's idea per cell: a new heading begins a new markdown cell."""
    assert course_length.headings_inside(path) == []


def test_a_heading_after_text_is_found_and_a_comment_in_a_listing_is_not(tmp_path):
    import nbformat
    from nbformat.v4 import new_markdown_cell, new_notebook

    cells = [
        new_markdown_cell("## One\n\ntext\n\n## Two\n\nmore"),
        new_markdown_cell("A listing:\n\n```python\n# a comment, not a heading\nx = 1\n```"),
    ]
    path = tmp_path / "unit.ipynb"
    nbformat.write(new_notebook(cells=cells), path)
    assert course_length.headings_inside(path) == ["cell 1: ## Two"]


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
    assert core.minutes == pytest.approx(
        304 / course_length.WORDS_PER_MINUTE
        + 2 / course_length.CODE_LINES_PER_MINUTE
        + course_length.MINUTES_PER_EXERCISE
        + 3 * course_length.MINUTES_PER_CELL  # the two cells above, and "Back on the path"
    )
    assert optional.run_seconds == 120
    assert [p.split(" ")[1] for p in course_length.oversized_cells(path)] == ["1", "3"]


@pytest.mark.parametrize("path", CORE_UNITS, ids=lambda p: p.name)
def test_the_estimate_lies_within_20_percent_of_the_newcomer_read(path):
    read = READS[path.name]["core_minutes"]
    core, _ = course_length.measure(path)
    assert abs(core.minutes - read) <= 0.2 * read, (
        f"{path.name}: estimated {core.minutes:.0f} minutes, read in {read} "
        f"(at {READS[path.name]['commit']}): read it again, or recalibrate"
    )


@pytest.mark.parametrize("path", READ, ids=lambda p: p.name)
def test_the_stated_times_are_the_reads(path):
    read = READS[path.name]["core_minutes"]
    stated = int(STATED.search(path.read_text()).group(1))
    nearest_five = 5 * math.floor(read / 5 + 0.5)
    assert stated == nearest_five, f"{path.name} states {stated} minutes, read in {read}"
    row = next(line for line in (ROOT / "README.md").read_text().splitlines()
               if line.startswith("| ") and f"| [{path.stem}](notebooks/" in line)  # fmt: skip
    assert f"| {stated} min" in row, row


def test_every_notebook_was_read():
    """No stated time is a formula's alone: every notebook has its newcomer reads."""
    assert READ == NOTEBOOKS


def test_the_reads_say_how_and_what_they_read():
    data = json.loads(course_length.READS.read_text())
    assert "tools/newcomer_read.md" in data["how"]
    assert set(data["reads"]) == {path.name for path in NOTEBOOKS}
    for name, read in data["reads"].items():
        assert re.fullmatch(r"[0-9a-f]{7,40}", read["commit"]), name
        assert read["core_minutes"] == statistics.median(read["reads"]), name
        assert read["optional_minutes"] >= 0 and read["date"].startswith("2026-")
    for read in data["history"]:
        assert (ROOT / "notebooks" / read["notebook"]).is_file()


@pytest.mark.parametrize("path", CORE_UNITS, ids=lambda p: p.name)
def test_each_units_core_reads_within_the_hour(path):
    """The course's promise to its learner: each unit's core in 60 minutes, by the median of two
    or more newcomer reads of its final version."""
    read = READS[path.name]
    assert len(read["reads"]) >= 2 and read["core_minutes"] <= 60, (path.name, read["reads"])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_a_learner_reads_no_test_tool_markers(path):
    """nbval's markers live in the cells' tags (nbval-ignore-output), not as a first line of code
    that a newcomer stops on and cannot place."""
    cells = json.loads(path.read_text())["cells"]
    marked = [i for i, cell in enumerate(cells) if "NBVAL_" in "".join(cell["source"])]
    assert marked == [], f"cells {marked}: use the cell tag nbval-ignore-output"
