"""How long each unit takes a newcomer, estimated from the notebooks, calibrated on newcomer reads.

    python tools/course_length.py            # a table, one row per notebook, beside the reads

The reader the course is written for knows Python and a little PyTorch, and no RL. The estimate
adds up, for the cells of a unit's core path:
- prose at WORDS_PER_MINUTE, plus MINUTES_PER_MATHS for each inline or display formula (new
  notation is read slowly: a maths-dense cell takes half again as long as plain prose);
- code at CODE_LINES_PER_MINUTE;
- MINUTES_PER_FIGURE for each figure or video in the outputs (look, find what the sentence names);
- MINUTES_PER_EXERCISE per exercise (attempt, check, a hint or two);
- MINUTES_PER_CELL for every cell (finding one's place, running it, glancing at what it printed);
- the cells' own run time, from the execution timings nbclient records in each committed cell,
  plus the minutes a learner waits on a panel after the cell has run (a training run started with
  a button): the cell's metadata says so, e.g. `"wait_minutes": 10`.
The rates are calibrated on newcomer reads (READS, in newcomer_reads.json beside this file: a
reader briefed only as the course's learner reads the rendered notebook and works every core
exercise, and times each section); tests/test_course_length.py keeps every unit's estimate within
20% of its read. Optional sections (a heading that starts with "Optional") are counted apart: a
unit's core must fit in 60 minutes without them. One cell's limits: prose <= 200 words, code <= 25
lines.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import nbformat

# Fitted to the newcomer reads of units 1-4 (2026-12-06; 26 reads, each unit read again after each
# revision): root mean square error 11% over all reads, the largest 23% (reads of one version
# differ by as much); each unit's final reads within 14%. tests/test_course_length.py keeps each
# unit's estimate within 20% of its final reads.
WORDS_PER_MINUTE, CODE_LINES_PER_MINUTE, MINUTES_PER_EXERCISE = 100, 15, 16
MINUTES_PER_FIGURE, MINUTES_PER_MATHS, MINUTES_PER_CELL = 0.5, 0.2, 0.1
READS = Path(__file__).with_name("newcomer_reads.json")
MATHS = re.compile(r"\$\$.+?\$\$|\$[^$\n]+\$", re.DOTALL)
MAX_PROSE_WORDS, MAX_CODE_LINES, MAX_UNIT_MINUTES = 200, 25, 60
HEADING = re.compile(r"^(#{1,3})\s+(.*)$", re.MULTILINE)


@dataclass
class Length:
    prose_words: int = 0
    code_lines: int = 0
    exercises: int = 0
    run_seconds: float = 0.0
    figures: int = 0
    formulas: int = 0
    cells: int = 0

    @property
    def minutes(self) -> float:
        return (
            self.prose_words / WORDS_PER_MINUTE
            + self.formulas * MINUTES_PER_MATHS
            + self.code_lines / CODE_LINES_PER_MINUTE
            + self.figures * MINUTES_PER_FIGURE
            + self.exercises * MINUTES_PER_EXERCISE
            + self.cells * MINUTES_PER_CELL
            + self.run_seconds / 60
        )


def words(cell) -> int:
    return len(re.sub(r"<[^>]+>|[#*`|]", " ", cell.source).split())


def code_lines(cell) -> int:
    return sum(1 for line in cell.source.splitlines() if line.strip())


def run_seconds(cell) -> float:
    waiting = 60.0 * cell.get("metadata", {}).get("wait_minutes", 0)
    timing = cell.get("metadata", {}).get("execution", {})
    start, end = timing.get("iopub.execute_input"), timing.get("shell.execute_reply")
    if not (start and end):
        return waiting
    parse = lambda stamp: datetime.fromisoformat(stamp.replace("Z", "+00:00"))  # noqa: E731
    return waiting + max(0.0, (parse(end) - parse(start)).total_seconds())


def figures(cell) -> int:
    """The pictures a cell's outputs show: images, and videos embedded as HTML."""
    count = 0
    for output in cell.get("outputs", []):
        data = output.get("data", {})
        html = data.get("text/html", "")
        count += "image/png" in data or "image/jpeg" in data or "<video" in "".join(html)
    return count


def is_exercise(cell) -> bool:
    return any(tag.startswith("exercise-") for tag in cell.get("metadata", {}).get("tags", []))


def measure(path: Path) -> tuple[Length, Length]:
    """(the main path, the optional sections) of one notebook."""
    main, optional = Length(), Length()
    current, optional_level = main, None
    for cell in nbformat.read(path, as_version=4).cells:
        for hashes, title in HEADING.findall(cell.source) if cell.cell_type == "markdown" else []:
            level = len(hashes)
            if title.strip().lower().startswith("optional"):
                current, optional_level = optional, level
            elif optional_level is not None and level <= optional_level:
                current, optional_level = main, None
        current.cells += cell.cell_type in ("markdown", "code")
        if cell.cell_type == "markdown":
            current.prose_words += words(cell)
            current.formulas += len(MATHS.findall(cell.source))
        elif cell.cell_type == "code":
            current.code_lines += code_lines(cell)
            current.figures += figures(cell)
            current.exercises += is_exercise(cell)
            current.run_seconds += run_seconds(cell)
    return main, optional


def headings_inside(path: Path) -> list[str]:
    """The markdown cells where a heading follows other text (outside code fences): the end of
    one section and the start of the next in one cell, named by number and heading."""
    found = []
    for number, cell in enumerate(nbformat.read(path, as_version=4).cells, start=1):
        if cell.cell_type != "markdown":
            continue
        fence, text_before = False, False
        for line in cell.source.splitlines():
            if line.lstrip().startswith("```"):
                fence = not fence
            if not fence and line.startswith("#") and text_before:
                found.append(f"cell {number}: {line[:60]}")
                break
            text_before = text_before or bool(line.strip())
    return found


def oversized_cells(path: Path) -> list[str]:
    """The cells over the one-idea-per-cell limits, named by number and first line."""
    found = []
    for number, cell in enumerate(nbformat.read(path, as_version=4).cells, start=1):
        first = cell.source.strip().splitlines()[0][:60] if cell.source.strip() else ""
        if cell.cell_type == "markdown" and words(cell) > MAX_PROSE_WORDS:
            found.append(f"cell {number} ({words(cell)} words): {first}")
        if cell.cell_type == "code" and code_lines(cell) > MAX_CODE_LINES:
            found.append(f"cell {number} ({code_lines(cell)} lines): {first}")
    return found


def reads() -> dict[str, dict]:
    """{notebook name: its newcomer read} (minutes of the core and of the optional part, and the
    commit of the notebook that was read)."""
    return json.loads(READS.read_text())["reads"]


def main(folder: str = "notebooks") -> int:
    measured = reads()
    print(
        f"{'notebook':<30} {'words':>6} {'maths':>5} {'code':>5} {'figs':>4} {'ex':>3} {'run s':>6}"
        f" {'minutes':>8} {'read':>5}  optional (read)"
    )
    for path in sorted(Path(folder).glob("*.ipynb")):
        core, extra = measure(path)
        read = measured.get(path.name, {})
        print(
            f"{path.name:<30} {core.prose_words:>6} {core.formulas:>5} {core.code_lines:>5} "
            f"{core.figures:>4} {core.exercises:>3} {core.run_seconds:>6.0f} {core.minutes:>8.1f} "
            f"{read.get('core_minutes', '-'):>5}  {extra.minutes:.1f} min "
            f"({read.get('optional_minutes', '-')})"
        )
        for problem in oversized_cells(path):
            print(f"    over the limit: {problem}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
