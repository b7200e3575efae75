"""How long each unit takes a newcomer, estimated from the notebooks themselves.

    python tools/course_length.py            # a table, one row per notebook

The reader the course is written for knows Python and a little PyTorch, and no RL. The estimate:
- prose read at 150 words a minute (a careful pace for technical text, with its figures);
- code read at 20 lines a minute;
- 10 minutes per exercise (attempt, check, a hint or two);
- the cells' own run time, from the execution timings nbclient records in each committed cell
  (the notebooks are executed as a learner runs them, not in the tests' fast mode), plus the
  minutes a learner waits on a panel after the cell has run (a training run started with a
  button): the cell's metadata says so, e.g. `"wait_minutes": 10`.
Optional sections (a heading that starts with "Optional") are counted apart: a unit must fit in
60 minutes without them. The limits for one cell: prose <= 200 words, code <= 25 lines.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import nbformat

WORDS_PER_MINUTE, CODE_LINES_PER_MINUTE, MINUTES_PER_EXERCISE = 150, 20, 10
MAX_PROSE_WORDS, MAX_CODE_LINES, MAX_UNIT_MINUTES = 200, 25, 60
HEADING = re.compile(r"^(#{1,3})\s+(.*)$", re.MULTILINE)


@dataclass
class Length:
    prose_words: int = 0
    code_lines: int = 0
    exercises: int = 0
    run_seconds: float = 0.0

    @property
    def minutes(self) -> float:
        return (
            self.prose_words / WORDS_PER_MINUTE
            + self.code_lines / CODE_LINES_PER_MINUTE
            + self.exercises * MINUTES_PER_EXERCISE
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
        if cell.cell_type == "markdown":
            current.prose_words += words(cell)
        elif cell.cell_type == "code":
            current.code_lines += code_lines(cell)
            current.exercises += is_exercise(cell)
            current.run_seconds += run_seconds(cell)
    return main, optional


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


def main(folder: str = "notebooks") -> int:
    print(f"{'notebook':<36} {'words':>6} {'code':>5} {'ex':>3} {'run s':>6} {'minutes':>8}  optional")
    for path in sorted(Path(folder).glob("*.ipynb")):
        core, extra = measure(path)
        print(
            f"{path.name:<36} {core.prose_words:>6} {core.code_lines:>5} {core.exercises:>3} "
            f"{core.run_seconds:>6.0f} {core.minutes:>8.1f}  {extra.minutes:.1f} min"
        )
        for problem in oversized_cells(path):
            print(f"    over the limit: {problem}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
